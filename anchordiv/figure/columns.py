"""A figure's geometry columns as text: :class:`GeometryColumn` (``cosine``, ``iti``, ``A``, ``B``,
``mix p=0.3 model=gaussian s=20 weighting=literal``, ``cosine encoder=open_clip:ViT-B-32
pretrained=laion2b_s34b_b79k``) and :func:`parse_geometry_column`; ``str()`` of a column parses
back to an equal one. ``model=`` names the anchor model and ``encoder=`` the encoder; a column
written before ``encoder=`` named its encoder with ``model=SPEC``, which is still read."""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Mapping, Sequence

from ..encoders.specs import BUILTIN, OPEN_CLIP_PREFIX, parse_model_spec
from ..explorer.geometry import WEIGHTING_HELP, GeometrySpec
from ..models import anchor_model_kind, list_anchor_models
from .limits import SCALE_HIGH, SCALE_LOW


BASELINES = ("cosine", "iti")


# Which options each column word takes (by attribute): a baseline ignores anchor models; weighting only
# moves a mixture (at p = 1 or 0 every weighting gives A or B exactly, docs/design.md §3); any column
# may rank by another encoder's embeddings.
_ENCODER_OPTIONS = ("encoder", "pretrained")
_COLUMN_OPTIONS = {"cosine": _ENCODER_OPTIONS, "iti": _ENCODER_OPTIONS, "A": ("model", "s", *_ENCODER_OPTIONS),
                   "B": ("model", "s", *_ENCODER_OPTIONS), "mix": ("p", "model", "s", "weighting", *_ENCODER_OPTIONS)}
# How the text form writes each option (by attribute).
_TEXT_NAMES = {"p": "p", "model": "model", "s": "s", "weighting": "weighting", "encoder": "encoder",
               "pretrained": "pretrained"}
ENCODER_EXAMPLE = "encoder=builtin, encoder=open_clip:ARCH pretrained=TAG or encoder=open_clip:hf-hub:ORG/REPO"
# Each number a column takes: its bounds (both allowed) and what it means, for a refusal.
_NUMBERS = {"p": (0.0, 1.0, "p is the weight of A, from 0 (B only) to 1 (A only)"),
            "s": (SCALE_LOW, SCALE_HIGH, "s is the logit scale, e.g. s=10 (CLIP's is 100; below 0.1 float32 ranks "
                                         "by rounding error)")}


COLUMN_EXAMPLE = ("e.g. 'cosine', 'iti', 'A', 'B', 'mix p=0.3 model=gaussian s=20 weighting=literal' or "
                  "'cosine encoder=open_clip:ViT-B-32 pretrained=laion2b_s34b_b79k'")


@dataclass(frozen=True)
class GeometryColumn:
    """One column of the figure: a baseline (``"cosine"``, ``"iti"`` over the anchors of A and B) or
    an anchor geometry (``"A"`` only, ``"B"`` only, or their ``"mix"`` at weight ``p`` of A).

    ``model`` (the anchor model), ``scale`` and ``weighting`` override the figure's defaults for
    this column (``None``: the default). ``encoder`` (a model spec such as ``"builtin"`` or
    ``"open_clip:ViT-B-32"``, with its ``pretrained`` tag or checkpoint where it needs one) makes
    the column rank the same images embedded by that encoder, with the anchors encoded by it
    (``None``: the figure's encoder). Text form: :func:`parse_geometry_column`; ``str()`` gives it back.
    """

    kind: str
    p: float | None = None
    model: str | None = None
    scale: float | None = None
    weighting: str | None = None
    encoder: str | None = None
    pretrained: str | None = None

    def __post_init__(self) -> None:
        _check_column(self)

    def __str__(self) -> str:
        return " ".join([self.kind] + [f"{_TEXT_NAMES[name]}={value_text(value)}"
                                       for name, value in self.options().items() if value is not None])

    def options(self) -> dict[str, float | str | None]:
        """The options (``None``: not given), by attribute (``s`` for the scale), in text order."""
        return {"p": self.p, "model": self.model, "s": self.scale, "weighting": self.weighting,
                "encoder": self.encoder, "pretrained": self.pretrained}

    @property
    def label(self) -> str:
        """The column's header: what it ranks by, then any setting that differs from the defaults
        on a second line (e.g. ``"mix p = 0.3\\nGaussian · s = 20"``)."""
        title = {"cosine": "cosine", "iti": "ITI", "A": "A only", "B": "B only"}.get(self.kind)
        title = title or f"mix p = {value_text(self.p)}"
        overrides = [anchor_model_kind(self.model).short if self.model else None,
                     f"s = {value_text(self.scale)}" if self.scale is not None else None, self.weighting]
        shown = [text for text in overrides if text]
        return title + ("\n" + " · ".join(shown) if shown else "") + (f"\n{self.encoder_label}" if self.encoder else "")

    @property
    def encoder_key(self) -> tuple[str, str | None] | None:
        """``(encoder spec, pretrained)`` of a column that names its encoder, else ``None``."""
        return None if self.encoder is None else (self.encoder, self.pretrained)

    @property
    def encoder_label(self) -> str:
        """The encoder a column names, shortly (:attr:`~anchordiv.encoders.specs.ModelSpec.label`:
        ``"ViT-B-32 · laion2b_s34b_b79k"``, ``"built-in model"``); empty for the figure's encoder."""
        return "" if self.encoder is None else parse_model_spec(self.encoder, self.pretrained).label

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


def is_encoder_spec(value: str) -> bool:
    """Whether ``value`` is an encoder spec (``builtin``, ``open_clip:...``) rather than an anchor model."""
    return value == BUILTIN or value.startswith(OPEN_CLIP_PREFIX)


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
            takes = ", ".join(f"{_TEXT_NAMES[option]}=" for option in _COLUMN_OPTIONS[column.kind]
                              if option not in _ENCODER_OPTIONS)
            encoders = f"{ENCODER_EXAMPLE} for another encoder"
            raise ValueError(f"{_TEXT_NAMES[name]}= does not apply to {column.kind} columns (they "
                             f"take {takes + ' and ' if takes else ''}{encoders}); drop it ({COLUMN_EXAMPLE})")
    if column.kind == "mix" and column.p is None:
        raise ValueError("a mix column needs the weight of A, e.g. 'mix p=0.5' (p = 1: A only, p = 0: B only)")
    for name, value in (("p", column.p), ("s", column.scale)):
        low, high, meaning = _NUMBERS[name]
        if value is not None and not low <= value <= high:  # NaN is neither
            raise ValueError(f"{name}={value_text(value)} is outside {_range(name)}; {meaning}")
    if column.model is not None and column.model not in list_anchor_models():
        raise ValueError(f"unknown anchor model {column.model!r}; use one of {', '.join(list_anchor_models())}")
    if column.weighting is not None and column.weighting not in WEIGHTING_HELP:
        raise ValueError(f"unknown weighting {column.weighting!r}; use one of {', '.join(WEIGHTING_HELP)}")
    if column.encoder is not None:
        if not is_encoder_spec(column.encoder):
            raise ValueError(f"encoder={column.encoder} is not an encoder; use {ENCODER_EXAMPLE}")
        parse_model_spec(column.encoder, column.pretrained)
    elif column.pretrained is not None:
        raise ValueError(f"pretrained={column.pretrained} goes with the encoder it loads: add "
                         f"encoder=open_clip:ARCH (e.g. encoder=open_clip:ViT-B-32 pretrained={column.pretrained})")


def parse_geometry_column(text: str) -> GeometryColumn:
    """A :class:`GeometryColumn` from its text: a word (``cosine``, ``iti``, ``A``, ``B``, ``mix``;
    any case) and ``key=value`` options (``p=``, ``model=``, ``s=``, ``weighting=``, ``encoder=``,
    ``pretrained=``), separated by spaces, each at most once. ``model=`` takes an anchor model
    (``gaussian``) and ``encoder=`` an encoder spec (``builtin``, ``open_clip:ViT-B-32``); an encoder
    spec in ``model=`` (how columns named their encoder before) is read as ``encoder=``. Raises
    ``ValueError`` naming the bad part and the fix."""
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
        if name not in _TEXT_NAMES:
            raise ValueError(f"unknown option {name}= in {text!r}; the options are p=, model=, s=, weighting=, "
                             "encoder= and pretrained=")
        key = _option_key(name, value)
        if key in options:
            what = {"model": "an anchor model", "encoder": "an encoder"}.get(key, "")
            raise ValueError(f"{name}= is given twice in {text!r}{' (as ' + what + ')' if what else ''}; keep one")
        options[key] = value
    return GeometryColumn(kind, p=_number_option(options, "p", text), model=options.get("model"),
                          scale=_number_option(options, "s", text), weighting=options.get("weighting"),
                          encoder=options.get("encoder"), pretrained=options.get("pretrained"))


def _option_key(name: str, value: str) -> str:
    """The attribute an option sets (its name), but for ``model=`` with an encoder spec, the old
    spelling of ``encoder=``, which sets the encoder."""
    if name == "model" and value not in list_anchor_models():
        if not is_encoder_spec(value):
            raise ValueError(f"unknown anchor model {value!r}; use one of {', '.join(list_anchor_models())} (another "
                             f"encoder is {ENCODER_EXAMPLE})")
        return "encoder"
    return name


def _number_option(options: Mapping[str, str], name: str, text: str) -> float | None:
    """Option ``name`` (``p`` or ``s``) of column ``text`` as a number within its bounds
    (:data:`_NUMBERS`), compared exactly (``1e400`` is out of range, not infinite), and refused
    quoting it as typed; ``None`` when not given."""
    if name not in options:
        return None
    typed = options[name]
    low, high, meaning = _NUMBERS[name]
    try:
        exact = Decimal(typed)
    except InvalidOperation:
        raise ValueError(f"{name}={typed} in {text!r} is not a number; write e.g. {name}=0.5") from None
    if exact.is_nan():
        raise ValueError(f"{name}={typed} in {text!r} is not a number; {meaning}")
    if not exact.is_finite() or not Decimal(str(low)) <= exact <= Decimal(str(high)):
        raise ValueError(f"{name}={typed} is outside {_range(name)}; {meaning}")
    return float(exact)


def _range(name: str) -> str:
    """The bounds of number option ``name`` as written: ``[0, 1]``, ``[0.1, 1000]``."""
    low, high, _ = _NUMBERS[name]
    return f"[{value_text(float(low))}, {value_text(float(high))}]"


def fitted_geometries(columns: Sequence[GeometryColumn], default_spec: GeometrySpec) -> int:
    """How many anchor geometries ``columns`` need: the distinct (encoder, model, scale) of their A, B
    and mix columns, each unset one being ``default_spec``'s (or the figure's encoder)."""
    return len({(column.encoder_key, *column.geometry_key(default_spec)) for column in columns
                if not column.is_baseline})



def named_encoders(columns: Sequence[GeometryColumn]) -> int:
    """How many encoders ``columns`` name with ``model=SPEC``: their distinct (spec, pretrained)."""
    return len({column.encoder_key for column in columns if column.encoder_key is not None})
