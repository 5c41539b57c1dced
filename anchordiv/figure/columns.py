"""A figure's geometry columns as text: :class:`GeometryColumn` (``cosine``, ``iti``, ``A``, ``B``,
``mix p=0.3 model=gaussian s=20 weighting=literal``) and :func:`parse_geometry_column`; ``str()``
of a column parses back to an equal one."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from ..explorer.geometry import WEIGHTINGS, GeometrySpec
from ..models import anchor_model_kind, list_anchor_models


BASELINES = ("cosine", "iti")


# Which options each column word takes: a baseline ignores anchor models; weighting only moves a mixture
# (at p = 1 or 0 every weighting gives A or B exactly, docs/design.md §3).
_COLUMN_OPTIONS = {"cosine": (), "iti": (), "A": ("model", "s"), "B": ("model", "s"),
                   "mix": ("p", "model", "s", "weighting")}


COLUMN_EXAMPLE = "e.g. 'cosine', 'iti', 'A', 'B' or 'mix p=0.3 model=gaussian s=20 weighting=literal'"


@dataclass(frozen=True)
class GeometryColumn:
    """One column of the figure: a baseline (``"cosine"``, ``"iti"`` over the anchors of A and B) or
    an anchor geometry (``"A"`` only, ``"B"`` only, or their ``"mix"`` at weight ``p`` of A).

    ``model``, ``scale`` and ``weighting`` override the figure's defaults for this column
    (``None``: the default). Text form: :func:`parse_geometry_column`; ``str()`` gives it back.
    """

    kind: str
    p: float | None = None
    model: str | None = None
    scale: float | None = None
    weighting: str | None = None

    def __post_init__(self) -> None:
        _check_column(self)

    def __str__(self) -> str:
        return " ".join([self.kind] + [f"{name}={value_text(value)}" for name, value in self.options().items()
                                       if value is not None])

    def options(self) -> dict[str, float | str | None]:
        """The options by their names in the text form (``None``: not given)."""
        return {"p": self.p, "model": self.model, "s": self.scale, "weighting": self.weighting}

    @property
    def label(self) -> str:
        """The column's header: what it ranks by, then any setting that differs from the defaults
        on a second line (e.g. ``"mix p = 0.3\\nGaussian · s = 20"``)."""
        title = {"cosine": "cosine", "iti": "ITI", "A": "A only", "B": "B only"}.get(self.kind)
        title = title or f"mix p = {value_text(self.p)}"
        overrides = [anchor_model_kind(self.model).short if self.model else None,
                     f"s = {value_text(self.scale)}" if self.scale is not None else None, self.weighting]
        shown = [text for text in overrides if text]
        return title + ("\n" + " · ".join(shown) if shown else "")

    @property
    def is_baseline(self) -> bool:
        return self.kind in BASELINES

    def weight(self) -> float:
        """The weight ``p`` of set A for an anchor column (1 for A only, 0 for B only)."""
        return {"A": 1.0, "B": 0.0}.get(self.kind, self.p)

    def geometry_key(self, default_spec: GeometrySpec) -> tuple[str, float]:
        """The (anchor model, scale) of the geometry an anchor column ranks by, each unset one being
        ``default_spec``'s."""
        return self.model or default_spec.kind, float(default_spec.scale if self.scale is None else self.scale)


def value_text(value: object) -> str:
    """A number as short as it can be written without losing it (``20.0`` -> ``"20"``)."""
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    return str(value)


def _check_column(column: GeometryColumn) -> None:
    if column.kind not in _COLUMN_OPTIONS:
        raise ValueError(f"unknown geometry {column.kind!r}; start a column with cosine, iti, A, B or mix "
                         f"({COLUMN_EXAMPLE})")
    for name, value in column.options().items():
        if value is not None and name not in _COLUMN_OPTIONS[column.kind]:
            takes = ", ".join(_COLUMN_OPTIONS[column.kind]) or "no options"
            raise ValueError(f"{name}= does not apply to {column.kind} columns (they take {takes}); "
                             f"drop it ({COLUMN_EXAMPLE})")
    if column.kind == "mix" and column.p is None:
        raise ValueError("a mix column needs the weight of A, e.g. 'mix p=0.5' (p = 1: A only, p = 0: B only)")
    if column.p is not None and not 0.0 <= column.p <= 1.0:
        raise ValueError(f"p={value_text(column.p)} is outside [0, 1]; p is the weight of A, from 0 (B only) to 1 "
                         "(A only)")
    if column.model is not None and column.model not in list_anchor_models():
        raise ValueError(f"unknown anchor model {column.model!r}; use one of {', '.join(list_anchor_models())}")
    if column.scale is not None and not (math.isfinite(column.scale) and column.scale > 0):
        raise ValueError(f"s={value_text(column.scale)} must be a finite number > 0 (the logit scale, e.g. s=10)")
    if column.weighting is not None and column.weighting not in WEIGHTINGS:
        raise ValueError(f"unknown weighting {column.weighting!r}; use one of {', '.join(WEIGHTINGS)}")


def parse_geometry_column(text: str) -> GeometryColumn:
    """A :class:`GeometryColumn` from its text: a word (``cosine``, ``iti``, ``A``, ``B``, ``mix``;
    any case) and ``key=value`` options (``p=``, ``model=``, ``s=``, ``weighting=``), separated by
    spaces. Raises ``ValueError`` naming the bad part and the fix."""
    words = str(text).split()
    if not words:
        raise ValueError(f"empty geometry column; write one, {COLUMN_EXAMPLE}")
    kind = {word.lower(): word for word in _COLUMN_OPTIONS}.get(words[0].lower(), words[0])
    options: dict[str, str] = {}
    for word in words[1:]:
        name, equals, value = word.partition("=")
        if not equals or not name or not value:
            raise ValueError(f"{word!r} in {text!r} is not an option; write options as key=value without spaces, "
                             "e.g. p=0.3")
        if name not in _COLUMN_OPTIONS["mix"]:  # a mix column takes every option
            raise ValueError(f"unknown option {name}= in {text!r}; the options are p=, model=, s= and weighting=")
        if name in options:
            raise ValueError(f"{name}= is given twice in {text!r}; keep one")
        options[name] = value
    return GeometryColumn(kind, p=_number_option(options, "p", text), model=options.get("model"),
                          scale=_number_option(options, "s", text), weighting=options.get("weighting"))


def _number_option(options: Mapping[str, str], name: str, text: str) -> float | None:
    if name not in options:
        return None
    try:
        return float(options[name])
    except ValueError:
        raise ValueError(f"{name}={options[name]} in {text!r} is not a number; write e.g. {name}=0.5") from None


def fitted_geometries(columns: Sequence[GeometryColumn], default_spec: GeometrySpec) -> int:
    """How many anchor geometries ``columns`` need: the distinct (model, scale) of their A, B and mix
    columns, each unset one being ``default_spec``'s."""
    return len({column.geometry_key(default_spec) for column in columns if not column.is_baseline})

