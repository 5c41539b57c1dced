"""The anchor-model contract shared by every model (docs/design.md §1-3).

An anchor model ``P`` is a distribution over text-anchor embeddings. Its cumulant generating
function (CGF) is

    kappa(eta) = log E_{gamma ~ P}[ exp(eta . gamma) ],     eta = scale * x,

with ``x`` a unit-norm image embedding of dimension ``d`` and ``scale`` the contrastive model's
logit scale. Tilting ``P`` by an image gives ``p(gamma | eta) ∝ P(gamma) exp(eta . gamma)``,
whose mean is ``grad kappa(eta)``. The anchor divergence of ``y`` from ``x`` is

    D(x -> y) = KL(p(.|eta_x) || p(.|eta_y))
              = kappa(eta_y) - kappa(eta_x) - grad kappa(eta_x) . (eta_y - eta_x).

Subclasses implement ``_fit``, ``_cgf_eta`` and ``_cgf_grad_eta`` on ``eta`` tensors; this class
turns them into the public, validated, block-wise ``cgf``, ``grad_cgf`` and ``divergence``.
Models are scikit-learn estimators: ``get_params``, ``set_params`` (so ``sklearn.base.clone``) and
the repr come from :class:`~anchordiv.models.estimator.Estimator`, scikit-learn's protocol without
importing scikit-learn, so ``__init__`` only stores its parameters and every check of them happens
in ``fit``. Parameters are keyword-only (``EmpiricalAnchors(scale=10)``), so that one number
cannot mean the scale in one model and another parameter in the next.
"""
from __future__ import annotations

from typing import Any, Callable, Hashable

import torch
from .._validation import (ArrayLike, as_matrix, check_dimension, check_finite_output, check_params, check_scale,
                           scale_parameter, unit_rows)
from .estimator import Estimator, not_fitted_error

# Intermediate arrays are kept below this many elements (about 128 MB at float32).
BLOCK_ELEMENTS = 2**25


def like_input(result: torch.Tensor, original: ArrayLike) -> Any:
    """Hand back a tensor for tensor input and a numpy array for anything else."""
    return result if isinstance(original, torch.Tensor) else result.detach().cpu().numpy()


def row_blocks(n_rows: int, elements_per_row: int) -> list[slice]:
    """Row slices such that one block's intermediate stays under ``BLOCK_ELEMENTS``."""
    rows = max(1, BLOCK_ELEMENTS // max(1, elements_per_row))
    return [slice(start, min(start + rows, n_rows)) for start in range(0, n_rows, rows)]


def is_single_point(anchors: torch.Tensor) -> bool:
    """Whether every row of ``anchors`` ``(N, d)`` is the same (always so for one row): such a set
    has no spread, so a covariance or principal direction fitted to it is zero."""
    return bool((anchors == anchors[0]).all())


def count_distinct_rows(anchors: torch.Tensor) -> int:
    """The number of distinct rows of ``anchors`` ``(N, d)`` (exact duplicates count once)."""
    return int(torch.unique(anchors, dim=0).shape[0])


class AnchorModel(Estimator):
    """Base class: parameters in ``__init__``, ``fit(anchors, y=None)`` returns ``self`` (the
    anchors are scikit-learn's ``X``, ``y`` is ignored), fitted attributes end in ``_``; using a
    model before ``fit`` raises :class:`NotFittedError` (both a ``ValueError`` and an ``AttributeError``).

    Inputs (anchors and image embeddings) may be numpy arrays or torch tensors of shape
    ``(n, d)``; rows are L2-normalised inside, so raw embeddings are fine. float64 input is
    computed in float64, anything else in float32, on the input's device. Outputs are torch
    tensors for tensor input and numpy arrays otherwise.
    """

    #: Each parameter's check (``check(value, name)`` returns the value to use or raises ``ValueError``),
    #: run by :meth:`check_params` before anything is fitted; subclasses extend it (scikit-learn's
    #: ``_parameter_constraints``, public here: each model module extends its parent's).
    parameter_constraints: dict[str, Callable[[Any, str], Any]] = {"scale": scale_parameter}

    def __init__(self, *, scale: float = 100.0):
        self.scale = scale

    def check_params(self) -> dict[str, Any]:
        """The declared parameters, checked (:data:`parameter_constraints`), by name."""
        return check_params(self, self.parameter_constraints)

    # -- subclass hooks ------------------------------------------------------------------
    def _fit(self, anchors: torch.Tensor) -> None:
        """Set the fitted attributes from unit-norm anchors ``(N, d)``."""
        raise NotImplementedError

    def _cgf_eta(self, eta: torch.Tensor) -> torch.Tensor:
        """``kappa(eta)`` for a block ``eta`` of shape ``(n, d)``: shape ``(n,)``."""
        return self._cgf_grad_eta(eta)[0]

    def _cgf_grad_eta(self, eta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(kappa(eta), grad kappa(eta))`` of shapes ``(n,)`` and ``(n, d)``."""
        raise NotImplementedError

    def _elements_per_row(self) -> int:
        """Size of the per-row intermediate, used to choose block sizes."""
        return self.n_features_in_

    # -- fitting -------------------------------------------------------------------------
    def fit(self, anchors: ArrayLike, y: None = None) -> "AnchorModel":
        """Fit the model to an anchor set.

        Parameters
        ----------
        anchors : array-like of shape (N, d)
            The anchors' embeddings, one row per anchor (scikit-learn's ``X``: samples are anchors,
            features the ``d`` embedding dimensions); rows are normalised inside.
        y : None
            Ignored: there is no target. It is there so that the model is fitted as any
            scikit-learn estimator is, ``fit(X, y)`` (a pipeline passes ``y`` on).

        Returns
        -------
        AnchorModel
            ``self``, fitted.
        """
        self.check_params()
        unit = unit_rows(as_matrix(anchors, "anchors"), "anchors")
        self._fit(unit)
        self._mark_fitted(unit.shape[1])
        return self

    def _mark_fitted(self, n_features: int) -> None:
        self.n_features_in_ = n_features
        self._param_cache: dict[tuple, dict[str, torch.Tensor]] = {}
        self._fit_id = object()

    def fit_token(self) -> Hashable:
        """Changes on every fit, so an index can tell that its stored gallery terms are stale."""
        self.check_fitted()
        return self._fit_id

    def mixing_weights(self) -> tuple[float, ...]:
        """The weights an index mixes this model's stored gallery terms with (``()``: one model, nothing
        mixed), so that an index can tell that weights changed in place since it was built."""
        return ()

    def __sklearn_is_fitted__(self) -> bool:
        return "n_features_in_" in vars(self)

    def check_fitted(self) -> None:
        """Raise :class:`NotFittedError` unless ``fit`` has run."""
        if not self.__sklearn_is_fitted__():
            raise not_fitted_error(
                f"This {type(self).__name__} is not fitted yet; call fit(anchors) with an (N, d) "
                "anchor set first."
            )

    def _param_tensors(self) -> dict[str, torch.Tensor]:
        """The fitted tensors the evaluation needs, in any dtype and device."""
        raise NotImplementedError

    def _params(self, like: torch.Tensor) -> dict[str, torch.Tensor]:
        """Fitted tensors cast to ``like``'s dtype and device.

        A memo per (dtype, device), so a model fitted on the CPU does not copy its anchors to the
        GPU on every search. Filling it is the only write an evaluation makes; ``setdefault`` is
        atomic, so threads racing to fill it get one and the same set of tensors.
        """
        key = (like.dtype, like.device)
        cached = self._param_cache.get(key)
        if cached is None:
            cached = self._param_cache.setdefault(key, {
                name: value.to(device=like.device, dtype=like.dtype)
                for name, value in self._param_tensors().items()
            })
        return cached

    # -- evaluation on eta (internal, used by the search) -------------------------------
    def natural_parameters(self, x: ArrayLike, name: str = "x") -> torch.Tensor:
        """``eta = scale * x / ||x||`` as a tensor ``(n, d)``, after validating ``x``."""
        self.check_fitted()
        return self._natural_parameters(x, name)

    def _natural_parameters(self, x: ArrayLike, name: str) -> torch.Tensor:
        """:meth:`natural_parameters` without the fitted check, for a model that measures a
        reference set while it is being fitted (a balanced or calibrated mixture)."""
        matrix = as_matrix(x, name)
        check_dimension(matrix, self.n_features_in_, name, estimator=type(self).__name__)
        return unit_rows(matrix, name, check_scale(self.scale))

    def cgf_eta(self, eta: torch.Tensor) -> torch.Tensor:
        """``kappa(eta)`` for validated ``eta`` ``(n, d)``, computed in memory-bounded blocks."""
        return self._blockwise(self._cgf_eta, eta, outputs=1)[0]

    def cgf_grad_eta(self, eta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(kappa(eta), grad kappa(eta))`` for validated ``eta`` ``(n, d)``, block-wise."""
        return self._blockwise(self._cgf_grad_eta, eta, outputs=2)

    def _blockwise(self, function: Callable, eta: torch.Tensor, outputs: int) -> tuple:
        blocks = row_blocks(eta.shape[0], self._elements_per_row())
        if len(blocks) == 1:
            return self._finite(function(eta), outputs)
        parts = [self._finite(function(eta[block]), outputs) for block in blocks]
        return tuple(torch.cat([part[i] for part in parts]) for i in range(outputs))

    def _finite(self, result: Any, outputs: int) -> tuple:
        """One block's ``kappa`` (and ``grad kappa``) as a tuple, refused when any entry is NaN or
        infinite: at a large scale the CGF overflows, and a ranking by it would be arbitrary."""
        parts = (result,) if outputs == 1 else result
        names = ("the anchor model's CGF kappa", "the anchor model's gradient grad kappa")
        for part, name in zip(parts, names):
            check_finite_output(part, name, self.scale)
        return parts

    # -- hooks for AnchorIndex: what a sibling at other weights can share, and what it cannot --
    def gallery_state(self, eta: torch.Tensor, with_grad: bool) -> tuple:
        """Per-item quantities an index stores; mixtures keep per-component values here, so an
        index serves a sibling mixture at other weights (``with_weights``) without a new pass."""
        return self.cgf_grad_eta(eta) if with_grad else (self.cgf_eta(eta), None)

    def combine_state(self, state: tuple) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(kappa, grad or None)`` from a ``gallery_state`` under this model's weights."""
        return state

    # -- public API ----------------------------------------------------------------------
    def cgf(self, x: ArrayLike) -> Any:
        """``kappa(scale * x)`` for image embeddings ``x`` ``(n, d)``; returns shape ``(n,)``."""
        return like_input(self.cgf_eta(self.natural_parameters(x)), x)

    def grad_cgf(self, x: ArrayLike) -> Any:
        """``grad kappa(scale * x)``, the tilted anchor mean, for ``x`` ``(n, d)``; shape ``(n, d)``."""
        return like_input(self.cgf_grad_eta(self.natural_parameters(x))[1], x)

    def divergence(self, x: ArrayLike, y: ArrayLike, reverse: bool = False) -> Any:
        """Anchor divergence matrix ``D`` of shape ``(len(x), len(y))``.

        ``D[i, j] = KL(p(.|eta_x_i) || p(.|eta_y_j))
                  = kappa(eta_y_j) - kappa(eta_x_i) - grad kappa(eta_x_i) . (eta_y_j - eta_x_i)``,
        with ``eta = scale * x / ||x||``. ``reverse=True`` gives ``KL(p(.|eta_y_j) || p(.|eta_x_i))``.
        Exact up to round-off, which can leave values a hair below 0 (not clamped). Where the
        scale is so large that ``kappa``, its gradient or ``D`` overflow, a ``ValueError`` names the
        scale (use a smaller one, or float64 input) rather than returning NaN or infinity.
        """
        eta_x = self.natural_parameters(x, "x")
        eta_y = self.natural_parameters(y, "y")
        if eta_x.device != eta_y.device:
            raise ValueError(f"x is on {eta_x.device} and y on {eta_y.device}; move both to one device.")
        eta_x, eta_y = _common_dtype(eta_x, eta_y)
        if reverse:
            eta_x, eta_y = eta_y, eta_x
        kappa_x, grad_x = self.cgf_grad_eta(eta_x)
        kappa_y = self.cgf_eta(eta_y)
        conjugate_x = (grad_x * eta_x).sum(dim=1) - kappa_x
        result = (kappa_y[None, :] - grad_x @ eta_y.T + conjugate_x[:, None])
        check_finite_output(result, "the anchor divergence", self.scale)
        return like_input(result.T if reverse else result, x)


def _common_dtype(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    dtype = torch.promote_types(a.dtype, b.dtype)
    return a.to(dtype), b.to(dtype)
