"""scikit-learn's estimator protocol without importing scikit-learn: :class:`Estimator` gives the
anchor models ``get_params``, ``set_params`` and a repr of every parameter, which is all that
``sklearn.base.clone``, ``check_is_fitted`` and pipelines ask of an estimator.

Importing scikit-learn takes seconds (it loads SciPy's statistics and pandas; docs/benchmarks.md),
which every start of the explorer would pay before its first page although nothing there needs it. So
scikit-learn is imported only where it is used: :func:`not_fitted_error` builds its
``NotFittedError`` (``anchordiv.NotFittedError`` is that class, looked up on first use), and
``__sklearn_tags__`` answers scikit-learn, which is then loaded already.
"""
from __future__ import annotations

import inspect
from typing import Any

REPR_CHARS = 700  # past this a repr keeps its start and end around "..." (as scikit-learn's does)


class Estimator:
    """Parameters are the arguments of ``__init__``, stored under their own names by it."""

    @classmethod
    def _get_param_names(cls) -> list[str]:
        """The names of ``__init__``'s parameters, sorted (scikit-learn's order)."""
        init = cls.__init__
        if init is object.__init__:
            return []
        parameters = [p for p in inspect.signature(init).parameters.values() if p.name != "self"]
        if any(p.kind == p.VAR_POSITIONAL for p in parameters):
            raise RuntimeError(f"{cls.__name__} takes *args in __init__; an estimator names every parameter")
        return sorted(p.name for p in parameters if p.kind != p.VAR_KEYWORD)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The parameters by name; with ``deep``, those of parameters that are estimators too, as
        ``name__parameter``."""
        params = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                params.update((f"{name}__{key}", inner) for key, inner in value.get_params().items())
            params[name] = value
        return params

    def set_params(self, **params: Any) -> "Estimator":
        """Set parameters by name (``name__parameter`` for a parameter's own); returns ``self``.
        ``ValueError`` naming the valid parameters for an unknown name."""
        valid = self.get_params(deep=True)
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            name, delimiter, inner = key.partition("__")
            if name not in valid:
                raise ValueError(f"Invalid parameter {name!r} for estimator {self}. Valid parameters are: "
                                 f"{self._get_param_names()!r}.")
            if delimiter:
                nested.setdefault(name, {})[inner] = value
            else:
                setattr(self, name, value)
                valid[name] = value
        for name, inner_params in nested.items():
            valid[name].set_params(**inner_params)
        return self

    def __repr__(self, N_CHAR_MAX: int = REPR_CHARS) -> str:  # noqa: N803 - scikit-learn's signature
        """Every parameter, defaults included (the scale in use matters to anyone reading a result)."""
        text = f"{type(self).__name__}(" + ", ".join(f"{name}={value!r}" for name, value in
                                                    self.get_params(deep=False).items()) + ")"
        if len(text) <= N_CHAR_MAX:
            return text
        half = N_CHAR_MAX // 2
        return text[:half] + "..." + text[-half:]

    def __sklearn_tags__(self):
        """scikit-learn's default tags (asked only by scikit-learn, which is loaded by then)."""
        from sklearn.utils import Tags, TargetTags

        return Tags(estimator_type=None, target_tags=TargetTags(required=False))


def not_fitted_error(message: str) -> Exception:
    """scikit-learn's ``NotFittedError`` (a ``ValueError`` and an ``AttributeError``) with ``message``."""
    from sklearn.exceptions import NotFittedError

    return NotFittedError(message)


def not_fitted_error_class() -> type:
    """``sklearn.exceptions.NotFittedError``, for the packages' lazy ``NotFittedError`` attribute."""
    from sklearn.exceptions import NotFittedError

    return NotFittedError
