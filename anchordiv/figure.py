"""The comparison figure (the paper's Figs. 1 and 8, made to order): rows are queries, columns are
geometries, each cell the query's top-``k`` under that geometry, with the neighbours that share the
query's object or style marked.

Three steps, each usable on its own:

* **Specs as text**, so a figure can be written on a command line or put in a URL:
  :func:`parse_query_row` / :class:`QueryRow` (``#12``, ``cat``, ``text:a dog in watercolor``,
  ``random:7``, ``image:PATH``, ``upload:NAME``) and :func:`parse_geometry_column` /
  :class:`GeometryColumn` (``cosine``, ``iti``, ``A``, ``B``, ``mix p=0.3 model=gaussian s=20
  weighting=literal``). ``str()`` of either parses back to an equal object.
* **The neighbours**: :func:`compare` resolves the rows, fits each distinct (anchor model, scale)
  once through :class:`~anchordiv.explorer.ExplorerGeometry` and ranks the gallery for every
  (row, column): a :class:`CompareResult` of :func:`~anchordiv.explorer.neighbour_table` tables.
* **The figure**: :func:`render_figure` draws it with matplotlib as PNG, or as vector PDF or SVG
  (text kept as text, thumbnails embedded as images) with the settings written under it.

Every figure is bounded by one :class:`FigureLimits` (:data:`DEFAULT_LIMITS` unless the caller
raises it): query rows, geometry columns and neighbours per cell are checked by
:func:`check_figure_request` before anything is computed, a PNG's dpi and pixels before anything
is drawn. The drawing time grows with the thumbnails (rows x columns x k), so the default limits
are set by the time the heaviest figure takes to draw.

Every text is drawn as it is written: mathtext and TeX are off (a ``$`` in a query or a label is a
dollar sign), control characters become spaces, and each caption is cut to the room it has.

Nothing here reads or writes files: image rows get their bytes from the caller (the command line
reads ``image:PATH``, the app passes uploads), and the figure comes back as bytes.
"""
from __future__ import annotations

import functools
import io
import itertools
import math
import textwrap
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from ._validation import check_positive_int
from .explorer import (
    WEIGHTINGS,
    ExplorerGeometry,
    GeometrySpec,
    agreement_text,
    baseline_index,
    neighbour_table,
    query_image_from_upload,
    search_one,
)
from .explorer.literal import DRAWABLE
from .models import anchor_model_kind, list_anchor_models

if TYPE_CHECKING:
    from PIL import Image

    from .gallery import Gallery
    from .search import Index

FORMATS = ("png", "pdf", "svg")

# -- geometry columns -----------------------------------------------------------------------------
BASELINES = ("cosine", "iti")
# Which options each column word takes: a baseline ignores anchor models; weighting only moves a mixture
# (at p = 1 or 0 every weighting gives A or B exactly, docs/design.md §3).
_COLUMN_OPTIONS = {"cosine": (), "iti": (), "A": ("model", "s"), "B": ("model", "s"),
                   "mix": ("p", "model", "s", "weighting")}
_COLUMN_EXAMPLE = "e.g. 'cosine', 'iti', 'A', 'B' or 'mix p=0.3 model=gaussian s=20 weighting=literal'"


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
        return " ".join([self.kind] + [f"{name}={_value_text(value)}" for name, value in self.options().items()
                                       if value is not None])

    def options(self) -> dict[str, float | str | None]:
        """The options by their names in the text form (``None``: not given)."""
        return {"p": self.p, "model": self.model, "s": self.scale, "weighting": self.weighting}

    @property
    def label(self) -> str:
        """The column's header: what it ranks by, then any setting that differs from the defaults
        on a second line (e.g. ``"mix p = 0.3\\nGaussian · s = 20"``)."""
        title = {"cosine": "cosine", "iti": "ITI", "A": "A only", "B": "B only"}.get(self.kind)
        title = title or f"mix p = {_value_text(self.p)}"
        overrides = [anchor_model_kind(self.model).short if self.model else None,
                     f"s = {_value_text(self.scale)}" if self.scale is not None else None, self.weighting]
        shown = [text for text in overrides if text]
        return title + ("\n" + " · ".join(shown) if shown else "")

    @property
    def is_baseline(self) -> bool:
        return self.kind in BASELINES

    def weight(self) -> float:
        """The weight ``p`` of set A for an anchor column (1 for A only, 0 for B only)."""
        return {"A": 1.0, "B": 0.0}.get(self.kind, self.p)


def _value_text(value: object) -> str:
    """A number as short as it can be written without losing it (``20.0`` -> ``"20"``)."""
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    return str(value)


def _check_column(column: GeometryColumn) -> None:
    if column.kind not in _COLUMN_OPTIONS:
        raise ValueError(f"unknown geometry {column.kind!r}; start a column with cosine, iti, A, B or mix "
                         f"({_COLUMN_EXAMPLE})")
    for name, value in column.options().items():
        if value is not None and name not in _COLUMN_OPTIONS[column.kind]:
            takes = ", ".join(_COLUMN_OPTIONS[column.kind]) or "no options"
            raise ValueError(f"{name}= does not apply to {column.kind} columns (they take {takes}); "
                             f"drop it ({_COLUMN_EXAMPLE})")
    if column.kind == "mix" and column.p is None:
        raise ValueError("a mix column needs the weight of A, e.g. 'mix p=0.5' (p = 1: A only, p = 0: B only)")
    if column.p is not None and not 0.0 <= column.p <= 1.0:
        raise ValueError(f"p={_value_text(column.p)} is outside [0, 1]; p is the weight of A, from 0 (B only) to 1 "
                         "(A only)")
    if column.model is not None and column.model not in list_anchor_models():
        raise ValueError(f"unknown anchor model {column.model!r}; use one of {', '.join(list_anchor_models())}")
    if column.scale is not None and not (math.isfinite(column.scale) and column.scale > 0):
        raise ValueError(f"s={_value_text(column.scale)} must be a finite number > 0 (the logit scale, e.g. s=10)")
    if column.weighting is not None and column.weighting not in WEIGHTINGS:
        raise ValueError(f"unknown weighting {column.weighting!r}; use one of {', '.join(WEIGHTINGS)}")


def parse_geometry_column(text: str) -> GeometryColumn:
    """A :class:`GeometryColumn` from its text: a word (``cosine``, ``iti``, ``A``, ``B``, ``mix``;
    any case) and ``key=value`` options (``p=``, ``model=``, ``s=``, ``weighting=``), separated by
    spaces. Raises ``ValueError`` naming the bad part and the fix."""
    words = str(text).split()
    if not words:
        raise ValueError(f"empty geometry column; write one, {_COLUMN_EXAMPLE}")
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


# -- limits ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FigureLimits:
    """The largest figure :func:`compare` and :func:`render_figure` make.

    Parameters
    ----------
    rows : int
        The most query rows.
    columns : int
        The most geometry columns.
    k : int
        The most neighbours per cell (the Compare page offers 1 to 20).
    neighbours : int
        The most neighbours in all, rows x columns x k: what drawing costs.
    geometries : int
        The most anchor geometries fitted for one figure: the distinct (model, scale) of its A, B
        and mix columns, the figure's own included. Each is a fit over the gallery (3-10 s of CPU
        on the built-in world); once fitted, the app keeps it for every later figure.
    dpi : int
        The highest resolution of a PNG (vector PDF and SVG do not depend on it).
    pixels : int
        The most pixels of a PNG, width x height at its dpi.

    Drawing takes 12-16 ms of one CPU core per thumbnail as PNG (rows x columns x k of them; PDF
    about 11, SVG 7), two thirds of it for the captions, so the defaults (:data:`DEFAULT_LIMITS`)
    allow 500 in all, in any shape up to 12 rows and 8 columns (the Compare page offers seven
    common columns: cosine, ITI, A, B and three mixes): the heaviest figure, 5 rows x 5 columns x top-20 of the built-in world's 19,728
    images, is built in about 3 s and drawn as PNG in about 8 s (SVG 3.6 s) on two CPU cores.
    Each field has a command-line option (``--max-rows`` ...) to raise it.
    """

    rows: int = 12
    columns: int = 8
    k: int = 20
    neighbours: int = 500
    geometries: int = 4
    dpi: int = 600
    pixels: int = 40_000_000

    def __post_init__(self) -> None:
        for field in fields(self):
            check_positive_int(getattr(self, field.name), f"FigureLimits.{field.name}")


DEFAULT_LIMITS = FigureLimits()
PNG_SIDE = 65_535  # matplotlib's Agg draws at most this many pixels on a side


def _raise_the_limit(name: str) -> str:
    return f"raise the limit (--max-{name} on the command line)"


def check_figure_request(n_rows: int, n_columns: int, k: int, limits: FigureLimits = DEFAULT_LIMITS, *,
                         dpi: int | None = None, n_geometries: int = 1) -> None:
    """Refuse a figure larger than ``limits`` before anything is computed.

    Parameters
    ----------
    n_rows, n_columns : int
        The figure's query rows and geometry columns.
    k : int
        Its neighbours per cell.
    n_geometries : int
        The anchor geometries it fits (:func:`fitted_geometries`).
    limits : FigureLimits
        The bounds; :data:`DEFAULT_LIMITS` unless raised.
    dpi : int, optional
        A PNG's resolution: also checked against ``limits.dpi``, and the figure's pixels (at least
        its width by the height of its rows) against ``limits.pixels``. :func:`render_figure`
        checks the exact pixels again before drawing.

    Raises
    ------
    ValueError
        Naming the limit, this figure's count and the fix, e.g. "a figure has at most 12 query
        rows (this one has 300); remove rows, or raise the limit (--max-rows on the command line)".
    """
    k = check_positive_int(k, "top-k")
    if n_rows > limits.rows:
        raise ValueError(f"a figure has at most {limits.rows:,} query rows (this one has {n_rows:,}); remove rows, "
                         f"or {_raise_the_limit('rows')}")
    if n_columns > limits.columns:
        raise ValueError(f"a figure has at most {limits.columns:,} geometry columns (this one has {n_columns:,}); "
                         f"remove columns, or {_raise_the_limit('columns')}")
    if k > limits.k:
        raise ValueError(f"a figure shows at most {limits.k:,} neighbours per cell (this one asks for top-{k:,}); "
                         f"lower k, or {_raise_the_limit('k')}")
    if n_rows * n_columns * k > limits.neighbours:
        raise ValueError(f"a figure shows at most {limits.neighbours:,} neighbours in all (this one asks for "
                         f"{n_rows} rows x {n_columns} columns x top-{k} = {n_rows * n_columns * k:,}); lower k, or "
                         f"remove rows or columns, or {_raise_the_limit('neighbours')}")
    if n_geometries > limits.geometries:
        raise ValueError(f"a figure fits at most {limits.geometries} anchor geometries (this one asks for "
                         f"{n_geometries} different models or scales); give fewer columns their own model= or s=, "
                         f"or {_raise_the_limit('geometries')}")
    if dpi is not None:
        _check_png(_least_size(n_rows, n_columns, k, FigureLayout()), dpi, limits)


def fitted_geometries(columns: Sequence[GeometryColumn], default_spec: GeometrySpec) -> int:
    """How many anchor geometries ``columns`` need: the distinct (model, scale) of their A, B and mix
    columns, each unset one being ``default_spec``'s."""
    return len({(column.model or default_spec.kind, float(default_spec.scale if column.scale is None else column.scale))
                for column in columns if column.kind not in ("cosine", "iti")})


def _check_png(size: tuple[float, float], dpi: int, limits: FigureLimits) -> None:
    """Refuse a PNG of ``size`` inches at ``dpi`` past the dpi or pixel limit, or past :data:`PNG_SIDE`;
    the fix names the highest dpi that fits."""
    dpi = check_positive_int(dpi, "dpi")
    if dpi > limits.dpi:
        raise ValueError(f"a PNG figure is drawn at most at {limits.dpi:,} dpi (this one asks for {dpi:,} dpi); "
                         f"lower the dpi, or {_raise_the_limit('dpi')}")
    if _png_fits(size, dpi, limits):
        return
    fits = min(dpi, int(math.sqrt(limits.pixels / (size[0] * size[1]))) + 1, int(PNG_SIDE / max(size)) + 1)
    while fits > 0 and not _png_fits(size, fits, limits):  # a step or two: each side is rounded to whole pixels
        fits -= 1
    lower = f"lower the dpi to {fits:,} or less" if fits else "make it smaller (fewer rows, columns or neighbours)"
    width, height = _png_pixels(size, dpi)
    if max(width, height) > PNG_SIDE:
        raise ValueError(f"at {dpi:,} dpi this figure is {width:,} x {height:,} pixels, and a PNG has at most "
                         f"{PNG_SIDE:,} on a side; {lower}, or draw it as PDF or SVG")
    raise ValueError(f"at {dpi:,} dpi this figure is {width:,} x {height:,} = {width * height:,} pixels, more than "
                     f"the limit of {limits.pixels:,}; {lower}, or {_raise_the_limit('pixels')}")


def _png_fits(size: tuple[float, float], dpi: int, limits: FigureLimits) -> bool:
    width, height = _png_pixels(size, dpi)
    return max(width, height) <= PNG_SIDE and width * height <= limits.pixels


def _png_pixels(size: tuple[float, float], dpi: int) -> tuple[int, int]:
    """A PNG's width and height in pixels, as matplotlib rounds them."""
    return round(size[0] * dpi), round(size[1] * dpi)

# -- query rows -----------------------------------------------------------------------------------
QUERY_KINDS = ("id", "name", "text", "random", "image", "upload")
_PREFIXED = ("name", "text", "image", "upload")
_ROW_EXAMPLE = "e.g. '#12', 'cat', 'name:cat', 'text:a dog in watercolor', 'random' or 'random:7'"


@dataclass(frozen=True)
class QueryRow:
    """One row of the figure, as text: a gallery image by id (``"id"``, ``value`` the id) or by name
    (``"name"``: the first image whose caption contains it), a text query (``"text"``), a random
    gallery image (``"random"``, ``value`` the seed or ``None``), or an image whose bytes the caller
    holds (``"image"``: a file the command line reads; ``"upload"``: a file uploaded to the app).

    Text form: :func:`parse_query_row`; ``str()`` gives it back.
    """

    kind: str
    value: str | int | None = None

    def __post_init__(self) -> None:
        if self.kind not in QUERY_KINDS:
            raise ValueError(f"unknown query kind {self.kind!r}; use one of {', '.join(QUERY_KINDS)}")
        if self.kind in ("id", "random") and self.value is not None and (
                isinstance(self.value, bool) or not isinstance(self.value, int) or self.value < 0):
            raise ValueError(f"a {self.kind} query needs a whole number >= 0, got {self.value!r} ({_ROW_EXAMPLE})")
        if self.kind == "id" and self.value is None:
            raise ValueError(f"a gallery id query needs the id, e.g. '#12' ({_ROW_EXAMPLE})")
        if self.kind in _PREFIXED and not (isinstance(self.value, str) and self.value.strip()):
            raise ValueError(f"an empty {self.kind} query; write something after '{self.kind}:' ({_ROW_EXAMPLE})")
        if self.kind in _PREFIXED:  # as the text form reads back: words single-spaced, a path only stripped
            kept = self.value.strip() if self.kind in ("image", "upload") else " ".join(self.value.split())
            object.__setattr__(self, "value", kept)

    def __str__(self) -> str:
        if self.kind == "id":
            return f"#{self.value}"
        if self.kind == "random":
            return "random" if self.value is None else f"random:{self.value}"
        return f"{self.kind}:{self.value}"


def parse_query_row(text: str) -> QueryRow:
    """A :class:`QueryRow` from its text: ``#ID``, ``name:NAME`` (or just ``NAME``), ``text:TEXT``,
    ``random`` or ``random:SEED``, ``image:PATH``, ``upload:NAME``. In names and texts a run of
    whitespace counts as one space. Raises ``ValueError`` naming the bad part and the fix."""
    spec = str(text).strip()
    if not spec:
        raise ValueError(f"empty query; write one, {_ROW_EXAMPLE}")
    if spec.startswith("#"):
        if not spec[1:].isdecimal():
            raise ValueError(f"query {text!r}: after '#' comes a gallery id (a whole number), e.g. '#12'")
        return QueryRow("id", int(spec[1:]))
    if spec.lower() == "random":
        return QueryRow("random")
    prefix, colon, rest = spec.partition(":")
    if colon and prefix.lower() == "random":
        if not rest.strip().isdecimal():
            raise ValueError(f"query {text!r}: after 'random:' comes a seed (a whole number), e.g. 'random:7'")
        return QueryRow("random", int(rest))
    if colon and prefix.lower() in _PREFIXED:
        return QueryRow(prefix.lower(), rest)
    return QueryRow("name", spec)  # emoji names hold colons too ("flag: Japan"), so any other text is a name


@dataclass
class Query:
    """A resolved row: ``vector`` ``(d,)`` its embedding, ``gallery_id`` (``None`` for text and
    image rows, which are ranked against the whole gallery), ``labels`` (its gallery labels, or
    ``None``: no neighbour can then be marked), ``image`` (``None`` for a text query) and
    ``caption``, e.g. ``"#12 kissing face · google"``."""

    row: QueryRow
    vector: np.ndarray
    gallery_id: int | None
    labels: pd.Series | None
    image: Image.Image | None
    caption: str


TextEmbedder = Callable[[str], np.ndarray]
ImageEmbedder = Callable[[bytes, str], np.ndarray]


def resolve_queries(rows: Sequence[QueryRow], gallery: Gallery, encoder, images: Mapping[str, bytes] | None = None,
                    embed_text: TextEmbedder | None = None, embed_image: ImageEmbedder | None = None) -> list[Query]:
    """Each row as a :class:`Query`. ``images`` maps the value of each ``image:`` / ``upload:`` row
    to its file's bytes. ``embed_text(text) -> (d,)`` and ``embed_image(bytes, name) -> (d,)``
    default to ``encoder`` (the app passes cached ones). Rows ``random`` without a seed take
    distinct images, in order, from one generator seeded with 0, so a figure is reproducible."""
    embed_text = embed_text or (lambda text: encoder.encode_texts([text])[0].numpy())
    embed_image = embed_image or (
        lambda data, name: encoder.encode_images([query_image_from_upload(data, name)])[0].numpy())
    unseeded = itertools.cycle(np.random.default_rng(0).permutation(len(gallery)).tolist())
    queries = []
    for row in rows:
        if row.kind in ("text", "image", "upload"):
            queries.append(_outside_query(row, images or {}, embed_text, embed_image))
        else:
            queries.append(_gallery_query(row, _gallery_id(row, gallery, unseeded), gallery))
    return queries


def _gallery_id(row: QueryRow, gallery: Gallery, unseeded: Iterator[int]) -> int:
    """The gallery image an id, name or random row names; ``unseeded`` deals the unseeded random ones."""
    if row.kind == "random":
        return next(unseeded) if row.value is None else int(np.random.default_rng(row.value).integers(len(gallery)))
    if row.kind == "id":
        if row.value >= len(gallery):
            raise ValueError(f"query '{row}': the gallery has {len(gallery):,} images (ids 0 to {len(gallery) - 1}); "
                             "pick an id in that range")
        return int(row.value)
    hits = gallery.find(row.value, limit=1)
    if not hits:
        example = str(gallery.labels[gallery.name_column].iloc[0])
        raise ValueError(f"query '{row}': no gallery image's caption contains {row.value!r}; search for another "
                         f"name (e.g. {example!r})")
    return hits[0]


def _gallery_query(row: QueryRow, item: int, gallery: Gallery) -> Query:
    return Query(row, gallery.embeddings[item].numpy(), item, gallery.labels.iloc[item], gallery.image(item),
                 f"#{item} {gallery.caption(item)}")


def _outside_query(row: QueryRow, images: Mapping[str, bytes], embed_text: TextEmbedder,
                   embed_image: ImageEmbedder) -> Query:
    if row.kind == "text":
        return Query(row, np.asarray(embed_text(row.value)), None, None, None, f"text “{row.value}”")
    if row.value not in images:
        fix = "upload it again" if row.kind == "upload" else "give the path of an image file"
        raise ValueError(f"query '{row}': no image data for {row.value!r}; {fix}")
    data, name = images[row.value], str(row.value).replace("\\", "/").rsplit("/", 1)[-1]
    image = query_image_from_upload(data, name)
    return Query(row, np.asarray(embed_image(data, name)), None, None, image, f"{row.kind} {name}")


# -- the neighbours of every (row, column) ----------------------------------------------------------
GeometryFactory = Callable[[str, float], ExplorerGeometry]
BaselineFactory = Callable[[str], "Index"]


@dataclass(frozen=True)
class CompareSettings:
    """What the figure was made with, written under it: ``k``, the default ``weighting`` and
    geometry ``spec`` (each column may override kind, scale and weighting), the anchor sets, the
    prior set (posterior models), the gallery's description and the encoder's name."""

    k: int
    weighting: str
    spec: GeometrySpec
    texts_a: tuple[str, ...]
    texts_b: tuple[str, ...]
    prior_texts: tuple[str, ...]
    gallery: str
    encoder: str

    def lines(self) -> list[str]:
        """The settings as a few lines of plain text."""
        spec, kind = self.spec, anchor_model_kind(self.spec.kind)
        parameters = "".join(f", {name} = {value}" for name, value in spec.parameters().items()
                             if name != "alpha" or kind.needs_prior)
        direction = "KL(p_neighbour ‖ p_query)" if spec.reverse else "KL(p_query ‖ p_neighbour)"
        lines = [f"Anchors A: {_anchor_summary(self.texts_a)}", f"Anchors B: {_anchor_summary(self.texts_b)}"]
        if self.prior_texts:  # used by the posterior models, the default's or a column's
            lines.append(f"Prior anchors: {_anchor_summary(self.prior_texts)}")
        lines.append(f"Anchor model {kind.short}{parameters}, s = {_value_text(float(spec.scale))}, "
                     f"{self.weighting} weights, {direction}; top-{self.k}; ITI over A and B")
        lines.append(f"Gallery: {self.gallery} · encoder {self.encoder} · made with anchordiv")
        return lines


def _anchor_summary(texts: Sequence[str], shown: int = 6) -> str:
    """``"8 (smiling face, kissing face, …)"``."""
    if not texts:
        return "none"
    listed = ", ".join(_clip(text, 30) for text in texts[:shown])
    return f"{len(texts):,} ({listed}{', …' if len(texts) > shown else ''})"


@dataclass
class CompareResult:
    """The neighbours of every (query, geometry): ``tables[r][c]`` is the
    :func:`~anchordiv.explorer.neighbour_table` of ``queries[r]`` under ``columns[c]`` (``k`` rows;
    its value column is ``"divergence"`` for anchor columns, ``"similarity"`` for baselines).
    ``gallery`` draws the neighbours."""

    gallery: Gallery
    queries: list[Query]
    columns: list[GeometryColumn]
    tables: list[list[pd.DataFrame]]
    settings: CompareSettings

    def frame(self) -> pd.DataFrame:
        """Every table in one, with ``query`` and ``geometry`` columns (their text specs): the CSV download."""
        return pd.concat([table.assign(query=str(query.row), geometry=str(column))
                          for query, row in zip(self.queries, self.tables)
                          for column, table in zip(self.columns, row)], ignore_index=True)


def compare(gallery: Gallery, encoder, rows: Sequence[QueryRow | str], columns: Sequence[GeometryColumn | str],
            texts_a: Sequence[str], texts_b: Sequence[str], k: int = 5, default_spec: GeometrySpec = GeometrySpec(),
            weighting: str = "calibrated", *, prior_texts: Sequence[str] = (),
            geometry_for: GeometryFactory | None = None, baseline_for: BaselineFactory | None = None,
            images: Mapping[str, bytes] | None = None, embed_text: TextEmbedder | None = None,
            embed_image: ImageEmbedder | None = None, limits: FigureLimits = DEFAULT_LIMITS) -> CompareResult:
    """The top-``k`` of each row under each column (rows and columns as objects or their text).

    ``default_spec`` and ``weighting`` (a key of :data:`~anchordiv.explorer.WEIGHTINGS`) hold for
    every anchor column that does not set its own model, scale or weighting. A only and B only are
    the A/B mixture at ``p = 1`` and ``p = 0``, which is A's (B's) geometry exactly under every
    weighting. Gallery queries are left out of their own rankings.

    ``geometry_for(kind, scale)`` returns the fitted :class:`ExplorerGeometry` of both anchor sets
    under ``default_spec`` with that kind and scale, and ``baseline_for(kind)`` the ``"cosine"`` or
    ``"iti"`` (over A and B) index; each is called once per distinct argument. By default they fit
    and encode here (anchors through the on-disk text cache); the app passes its cached ones.
    ``images``, ``embed_text``, ``embed_image``: see :func:`resolve_queries`. ``limits`` bounds the
    rows, columns and ``k`` (:func:`check_figure_request`, before anything is computed).
    Raises ``ValueError`` with the fix for bad specs, a figure past ``limits``, empty anchor sets a
    column needs, or a ``k`` larger than the gallery allows.
    """
    rows = [row if isinstance(row, QueryRow) else parse_query_row(row) for row in rows]
    columns = [column if isinstance(column, GeometryColumn) else parse_geometry_column(column) for column in columns]
    if not rows:
        raise ValueError(f"no query rows; add at least one ({_ROW_EXAMPLE})")
    if not columns:
        raise ValueError(f"no geometry columns; add at least one ({_COLUMN_EXAMPLE})")
    check_figure_request(len(rows), len(columns), k, limits, n_geometries=fitted_geometries(columns, default_spec))
    if weighting not in WEIGHTINGS:
        raise ValueError(f"unknown weighting {weighting!r}; use one of {', '.join(WEIGHTINGS)}")
    texts_a, texts_b, prior_texts = tuple(texts_a), tuple(texts_b), tuple(prior_texts)
    geometry_for = _once(geometry_for or _fitting_geometries(gallery, encoder, texts_a, texts_b, default_spec,
                                                             prior_texts))
    baseline_for = _once(baseline_for or _fitting_baselines(gallery, encoder, texts_a + texts_b))
    queries = resolve_queries(rows, gallery, encoder, images, embed_text, embed_image)
    settings = CompareSettings(check_positive_int(k, "top-k"), weighting, default_spec, texts_a, texts_b, prior_texts,
                               gallery.description, encoder.name)
    tables = []
    for query in queries:
        tables.append([_cell(query, column, gallery, settings, geometry_for, baseline_for) for column in columns])
    return CompareResult(gallery, queries, columns, tables, settings)


def _once(factory: Callable) -> Callable:
    """``factory`` called once per distinct argument within one :func:`compare`."""
    made: dict = {}

    def get(*key):
        if key not in made:
            made[key] = factory(*key)
        return made[key]
    return get


def _fitting_geometries(gallery: Gallery, encoder, texts_a: tuple[str, ...], texts_b: tuple[str, ...],
                        spec: GeometrySpec, prior_texts: tuple[str, ...]) -> GeometryFactory:
    from .text_cache import encode_texts_cached

    def fit(kind: str, scale: float) -> ExplorerGeometry:
        anchors = [encode_texts_cached(encoder, texts) for texts in (texts_a, texts_b)]
        prior = encode_texts_cached(encoder, prior_texts) if anchor_model_kind(kind).needs_prior else None
        return ExplorerGeometry(gallery.embeddings, anchors, [texts_a, texts_b], replace(spec, kind=kind, scale=scale),
                                prior=prior, prior_texts=prior_texts)
    return fit


def _fitting_baselines(gallery: Gallery, encoder, iti_texts: tuple[str, ...]) -> BaselineFactory:
    from .text_cache import encode_texts_cached

    def fit(kind: str) -> Index:
        anchors = encode_texts_cached(encoder, iti_texts) if kind == "iti" else None
        return baseline_index(kind, gallery.embeddings, anchors)
    return fit


def _cell(query: Query, column: GeometryColumn, gallery: Gallery, settings: CompareSettings,
          geometry_for: GeometryFactory, baseline_for: BaselineFactory) -> pd.DataFrame:
    """The neighbour table of ``query`` under ``column``."""
    if column.is_baseline:
        index, value_name = baseline_for(column.kind), "similarity"
    else:
        geometry = geometry_for(column.model or settings.spec.kind,
                                float(column.scale if column.scale is not None else settings.spec.scale))
        _check_sets(column, geometry)
        index, value_name = geometry.index_at(column.weight(), column.weighting or settings.weighting), "divergence"
    values, ids = search_one(index, torch.as_tensor(query.vector), settings.k, exclude=query.gallery_id)
    return neighbour_table(values, ids, gallery, query.labels, value_name)


def _check_sets(column: GeometryColumn, geometry: ExplorerGeometry) -> None:
    """A column uses only sets that have anchors (a geometry of one set ignores ``p``, so without
    this check "B only" would silently show A)."""
    needed = {"A": ["A"], "B": ["B"], "mix": ["A", "B"]}[column.kind]
    missing = [name for name in needed if name not in geometry.component_names]
    if missing:
        raise ValueError(f"column '{column}' needs anchors in set {' and '.join(missing)}, which is empty; "
                         "add anchors there or drop the column")


# -- the figure -----------------------------------------------------------------------------------
OBJECT_COLOUR, STYLE_COLOUR = "#1b9e77", "#d95f02"  # colour-blind-safe pair (ColorBrewer Dark2)
FRAME_COLOUR = "#bbbbbb"  # every image's thin outline, under the marks
THUMB_PIXELS = 128  # thumbnails are embedded at most this size, so a PDF of large photos stays small


@dataclass(frozen=True)
class FigureLayout:
    """Sizes in inches: ``thumb`` a neighbour's side, ``query`` the query image's side; the rest
    are gaps and text bands. The defaults fit a two-column paper at 3 geometries of 5 neighbours."""

    thumb: float = 0.55
    query: float = 0.7
    gap: float = 0.04
    column_gap: float = 0.16
    margin: float = 0.12
    header: float = 0.34  # two lines of column label
    caption: float = 0.24
    agreement: float = 0.12
    row_gap: float = 0.1
    legend: float = 0.22
    settings_line: float = 0.13
    font: float = 6.0
    min_cell: float = 1.3

    def cell_width(self, k: int) -> float:
        """A column's width: its ``k`` thumbnails, or room for the header and counts when ``k`` is small."""
        return max(k * self.thumb + (k - 1) * self.gap, self.min_cell)

    def row_height(self) -> float:
        return max(self.thumb + self.caption + self.agreement, self.query + self.caption) + self.row_gap


def figure_size(result: CompareResult, layout: FigureLayout = FigureLayout()) -> tuple[float, float]:
    """``(width, height)`` of :func:`render_figure`'s figure in inches (PNG pixels: times ``dpi``)."""
    return _size(len(result.queries), len(result.columns), result.settings.k, _header_height(result, layout),
                 len(_settings_lines(result, layout)), layout)


# CompareSettings.lines has at least these: anchors A, anchors B, the anchor model, the gallery.
_FEWEST_SETTINGS_LINES = 4


def _least_size(n_rows: int, n_columns: int, k: int, layout: FigureLayout) -> tuple[float, float]:
    """The smallest figure of that many rows, columns and neighbours: one-line headers and settings
    lines (their text is known only once the gallery is)."""
    return _size(n_rows, n_columns, k, layout.header, _FEWEST_SETTINGS_LINES, layout)


def _size(n_rows: int, n_columns: int, k: int, header: float, settings_lines: int,
          layout: FigureLayout) -> tuple[float, float]:
    height = (2 * layout.margin + header + n_rows * layout.row_height() + layout.legend
              + settings_lines * layout.settings_line)
    return _width(n_columns, k, layout), height


def _width(n_columns: int, k: int, layout: FigureLayout) -> float:
    return 2 * layout.margin + layout.query + n_columns * (layout.column_gap + layout.cell_width(k))


def _settings_lines(result: CompareResult, layout: FigureLayout) -> list[str]:
    """The settings, wrapped to the figure's width (about half an em per character), each setting in
    at most three lines (a gallery's folder name can be as long as a path)."""
    width = _width(len(result.columns), result.settings.k, layout)
    fits = int((width - 2 * layout.margin) * 72 / (0.5 * (layout.font - 0.5)))
    return [wrapped for line in result.settings.lines() for wrapped in _clip(line, fits, 3).split("\n")]


def _headers(result: CompareResult, layout: FigureLayout) -> list[str]:
    """Each column's label, wrapped to its cell's width (about half an em per character)."""
    fits = max(8, int(layout.cell_width(result.settings.k) * 72 / (0.55 * (layout.font + 1))))
    return ["\n".join(textwrap.fill(line, fits) for line in column.label.split("\n")) for column in result.columns]


def _header_height(result: CompareResult, layout: FigureLayout) -> float:
    """Room for the tallest header (``layout.header`` holds two lines)."""
    lines = max(header.count("\n") + 1 for header in _headers(result, layout))
    return layout.header * max(2, lines) / 2


def render_figure(result: CompareResult, format: str = "png", dpi: int = 200,
                  layout: FigureLayout = FigureLayout(), limits: FigureLimits = DEFAULT_LIMITS) -> bytes:
    """The figure of ``result`` as ``format`` bytes: ``"png"`` (at ``dpi``), ``"pdf"`` or ``"svg"``
    (vector: text as text, each thumbnail an embedded image; no timestamps, so the same result
    gives the same bytes). Rows are the queries (image and caption at the left), columns the
    geometries (header: the column's label); a neighbour sharing the query's object has a green
    frame and "obj", one sharing its style an orange frame inside that and "sty"; under each cell
    its agreement counts, under the grid a legend and the settings (:meth:`CompareSettings.lines`).

    Raises ``ValueError`` before drawing for an unknown format and a PNG past ``limits.dpi`` or
    ``limits.pixels`` (the message names the highest dpi that fits)."""
    if format not in FORMATS:
        raise ValueError(f"unknown figure format {format!r}; use one of {', '.join(FORMATS)}")
    size = figure_size(result, layout)
    if format == "png":
        _check_png(size, dpi, limits)
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    # Text stays text (TrueType in PDF, <text> in SVG) and is drawn as written: no mathtext, no TeX,
    # for every Text made here (each keeps the setting it was made with, through savefig); each
    # thumbnail stays its own image (matplotlib would merge the images of one axes); fixed SVG ids,
    # so equal figures give equal bytes.
    rc = {"pdf.fonttype": 42, "svg.fonttype": "none", "svg.hashsalt": "anchordiv", "image.composite_image": False,
          "font.size": layout.font, "font.family": "DejaVu Sans", "text.parse_math": False, "text.usetex": False}
    with matplotlib.rc_context(rc):
        figure = Figure(figsize=size)
        FigureCanvasAgg(figure)
        page = _Page(figure)
        _draw(page, result, layout)
        page.add_frames()
        buffer = io.BytesIO()
        # zlib's fastest level: half the encoding time of a large PNG, for a sixth more bytes.
        options = {"png": {"metadata": {"Software": None}, "pil_kwargs": {"compress_level": 1}},
                   "pdf": {"metadata": {"CreationDate": None, "Producer": None}},
                   "svg": {"metadata": {"Date": None}}}[format]
        figure.savefig(buffer, format=format, dpi=dpi, facecolor="white", **options)
    return buffer.getvalue()


class _Page:
    """The whole figure as one axes whose data coordinates are inches from the top-left corner
    (one axes, not one per thumbnail: creating axes was most of the drawing time)."""

    def __init__(self, figure):
        self.figure = figure
        self.width, self.height = figure.get_size_inches()
        self.axes = figure.add_axes((0, 0, 1, 1))
        self.axes.set_axis_off()
        self.axes.set_xlim(0, self.width)
        self.axes.set_ylim(self.height, 0)
        self.axes.set_autoscale_on(False)
        self.frames: dict[tuple[str, float], list[tuple[float, float, float]]] = {}

    def image(self, array: np.ndarray, left: float, top: float, side: float) -> None:
        self.axes.imshow(array, extent=(left, left + side, top + side, top), interpolation="none", aspect="auto")

    def frame(self, left: float, top: float, side: float, colour: str, width: float) -> None:
        """A square outline, drawn by :meth:`add_frames` (over every image, in the order of the first
        frame of each colour)."""
        self.frames.setdefault((colour, width), []).append((left, top, side))

    def add_frames(self) -> None:
        """The frames, one collection per colour and width (one patch per frame was a third of the
        drawing time of a large figure)."""
        from matplotlib.collections import PolyCollection

        for (colour, width), squares in self.frames.items():
            corners = [[(left, top), (left + side, top), (left + side, top + side), (left, top + side)]
                       for left, top, side in squares]
            self.axes.add_collection(PolyCollection(corners, facecolors="none", edgecolors=colour, linewidths=width),
                                     autolim=False)

    def text(self, left: float, top: float, text: str, **style) -> None:
        self.axes.text(left, top, text, **{"va": "top", **style})


def _draw(page: _Page, result: CompareResult, layout: FigureLayout) -> None:
    k = result.settings.k
    # A neighbour often recurs across the columns of its row; each is loaded and shrunk once.
    thumbnail = functools.cache(lambda item: _thumbnail(result.gallery.image(item)))
    left0 = layout.margin + layout.query + layout.column_gap
    column_left = [left0 + c * (layout.cell_width(k) + layout.column_gap) for c in range(len(result.columns))]
    page.text(layout.margin, layout.margin, "Query", fontweight="bold", fontsize=layout.font + 1)
    for left, header in zip(column_left, _headers(result, layout)):
        page.text(left + layout.cell_width(k) / 2, layout.margin, header, ha="center", fontweight="bold",
                  fontsize=layout.font + 1)
    top = layout.margin + _header_height(result, layout)
    for query, tables in zip(result.queries, result.tables):
        _draw_query(page, query, layout.margin, top, layout)
        for left, table in zip(column_left, tables):
            _draw_cell(page, table, result.gallery.name_column, thumbnail, left, top, layout)
        top += layout.row_height()
    _draw_legend(page, top, layout)
    for line in _settings_lines(result, layout):
        top += layout.settings_line
        page.text(layout.margin, top, line, fontsize=layout.font - 0.5, color="#333333")


def _draw_query(page: _Page, query: Query, left: float, top: float, layout: FigureLayout) -> None:
    if query.image is not None:
        page.image(_thumbnail(query.image), left, top, layout.query)
    else:  # a text query: its words stand where an image would
        page.text(left + layout.query / 2, top + layout.query / 2, _clip(query.row.value, 14, 6),
                  ha="center", va="center", style="italic")
    page.frame(left, top, layout.query, FRAME_COLOUR, 0.5)
    page.text(left, top + layout.query + 0.03, _clip(query.caption, 20, 2), fontsize=layout.font - 1)


def _draw_cell(page: _Page, table: pd.DataFrame, name_column: str, thumbnail: Callable[[int], np.ndarray],
               left: float, top: float, layout: FigureLayout) -> None:
    small = layout.font - 1.5
    # About half an em per character: the longest caption that fits under a thumbnail.
    fits = max(6, int(layout.thumb * 72 / (0.5 * small)) - len(f"{len(table)}. "))
    inset = 0.035  # the style frame sits inside the object frame, so both show when both are shared
    for position, row in enumerate(table.itertuples(index=False)):
        x = left + position * (layout.thumb + layout.gap)
        page.image(thumbnail(row.gallery_id), x, top, layout.thumb)
        page.frame(x, top, layout.thumb, FRAME_COLOUR, 0.5)
        if row.same_object is True:
            page.frame(x, top, layout.thumb, OBJECT_COLOUR, 1.8)
            page.text(x, top + layout.thumb + 0.11, "obj", fontsize=small, color=OBJECT_COLOUR, fontweight="bold")
        if row.same_style is True:
            page.frame(x + inset, top + inset, layout.thumb - 2 * inset, STYLE_COLOUR, 1.8)
            page.text(x + layout.thumb / 3, top + layout.thumb + 0.11, "sty", fontsize=small, color=STYLE_COLOUR,
                      fontweight="bold")
        page.text(x, top + layout.thumb + 0.025, f"{row.rank}. {_clip(getattr(row, name_column), fits)}",
                  fontsize=small)
    page.text(left, top + layout.thumb + layout.caption, agreement_text(table), fontsize=small, color="#333333")


def _draw_legend(page: _Page, top: float, layout: FigureLayout) -> None:
    from matplotlib.patches import Patch

    handles = [Patch(fill=False, edgecolor=OBJECT_COLOUR, linewidth=1.8, label="obj: same object as the query"),
               Patch(fill=False, edgecolor=STYLE_COLOUR, linewidth=1.8, label="sty: same style as the query")]
    page.figure.legend(handles=handles, loc="upper left", ncols=2, frameon=False, fontsize=layout.font - 0.5,
                       bbox_to_anchor=(layout.margin / page.width, 1 - (top + 0.02) / page.height), borderaxespad=0,
                       borderpad=0, handlelength=1.2)


def _clip(text: object, width: int, lines: int = 1) -> str:
    """``text`` as at most ``lines`` lines of at most ``width`` characters (long words broken),
    ending in "…" where it was cut, with nothing a renderer refuses
    (:data:`~anchordiv.explorer.literal.DRAWABLE`)."""
    value = str(text).translate(DRAWABLE)
    head = value[:2 * width * lines]  # more than the lines can show: wrapping a whole 10,000-character text is slow
    wrapped = textwrap.wrap(head, width) or [""]
    kept = wrapped[:lines]
    if len(wrapped) > lines or value[len(head):].strip():
        kept[-1] = kept[-1][:width - 1].rstrip() + "…"
    return "\n".join(kept)


def _thumbnail(image: Image.Image) -> np.ndarray:
    """``image`` as an RGB array at most :data:`THUMB_PIXELS` on a side."""
    small = image.convert("RGB")
    small.thumbnail((THUMB_PIXELS, THUMB_PIXELS))
    return np.asarray(small)
