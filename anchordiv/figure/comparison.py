"""The neighbours of every (query row, geometry column): :func:`compare` resolves the rows, fits each
distinct (anchor model, scale) once through :class:`~anchordiv.explorer.geometry.ExplorerGeometry`
and ranks the gallery for every cell, giving a :class:`CompareResult`."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import pandas as pd
import torch

from ..explorer.geometry import WEIGHTINGS, ExplorerGeometry, GeometrySpec, baseline_index
from ..explorer.neighbours import neighbour_table, search_one
from ..models import anchor_model_kind
from ..prompts import AS_TYPED, TemplateChoice, default_choice, encode_anchors
from .columns import COLUMN_EXAMPLE, GeometryColumn, fitted_geometries, parse_geometry_column, value_text
from .limits import DEFAULT_LIMITS, FigureLimits, check_figure_request
from .rows import ROW_EXAMPLE, ImageEmbedder, Query, QueryRow, TextEmbedder, parse_query_row, resolve_queries
from .text import clip

if TYPE_CHECKING:
    from ..gallery import Gallery
    from ..search import Index


GeometryFactory = Callable[[str, float], ExplorerGeometry]


BaselineFactory = Callable[[str], "Index"]


@dataclass(frozen=True)
class CompareSettings:
    """What the figure was made with, written under it: ``k``, the default ``weighting`` and
    geometry ``spec`` (each column may override kind, scale and weighting), the anchor sets, the
    prior set (posterior models), the gallery's description, the encoder's name, and the prompt
    templates sets A and B (``templates``) and the prior set were encoded through."""

    k: int
    weighting: str
    spec: GeometrySpec
    texts_a: tuple[str, ...]
    texts_b: tuple[str, ...]
    prior_texts: tuple[str, ...]
    gallery: str
    encoder: str
    templates: tuple[TemplateChoice, TemplateChoice] = (AS_TYPED, AS_TYPED)
    prior_templates: TemplateChoice = AS_TYPED

    def lines(self) -> list[str]:
        """The settings as a few lines of plain text."""
        spec, kind = self.spec, anchor_model_kind(self.spec.kind)
        parameters = "".join(f", {name} = {value}" for name, value in spec.parameters().items()
                             if name != "alpha" or kind.needs_prior)
        direction = "KL(p_neighbour ‖ p_query)" if spec.reverse else "KL(p_query ‖ p_neighbour)"
        lines = [f"Anchors A: {_anchor_summary(self.texts_a)}", f"Anchors B: {_anchor_summary(self.texts_b)}"]
        if self.prior_texts:  # used by the posterior models, the default's or a column's
            lines.append(f"Prior anchors: {_anchor_summary(self.prior_texts)}")
        lines.append(self.templates_line())
        lines.append(f"Anchor model {kind.short}{parameters}, s = {value_text(float(spec.scale))}, "
                     f"{self.weighting} weights, {direction}; top-{self.k}; ITI over A and B")
        lines.append(f"Gallery: {self.gallery} · encoder {self.encoder} · made with anchordiv")
        return lines

    def templates_line(self) -> str:
        """What the anchor texts were encoded as: ``"Anchor texts encoded as 'a photo of a {}.'"``."""
        choices = {self.templates[0], self.templates[1]} | ({self.prior_templates} if self.prior_texts else set())
        if len(choices) == 1:
            return f"Anchor texts encoded as {self.templates[0].label}"
        line = f"Anchors A encoded as {self.templates[0].label}; B as {self.templates[1].label}"
        return line + (f"; prior anchors as {self.prior_templates.label}" if self.prior_texts else "")


def _anchor_summary(texts: Sequence[str], shown: int = 6) -> str:
    """``"8 (smiling face, kissing face, …)"``."""
    if not texts:
        return "none"
    listed = ", ".join(clip(text, 30) for text in texts[:shown])
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
            embed_image: ImageEmbedder | None = None, limits: FigureLimits = DEFAULT_LIMITS,
            templates: Sequence[TemplateChoice] | None = None) -> CompareResult:
    """The top-``k`` of each row under each column (rows and columns as objects or their text).

    A only and B only are the A/B mixture at ``p = 1`` and ``p = 0``, which is A's (B's) geometry
    exactly under every weighting. Gallery queries are left out of their own rankings.

    Parameters
    ----------
    gallery : Gallery
        ``G`` images with embeddings ``(G, d)`` and labels.
    encoder : Encoder
        What embeds the anchor texts and the text and image rows (``d``-dimensional).
    rows : sequence of QueryRow or str
        The query rows.
    columns : sequence of GeometryColumn or str
        The geometry columns.
    texts_a, texts_b : sequence of str
        The anchor texts of sets A and B.
    k : int
        Neighbours per cell.
    default_spec : GeometrySpec
        The anchor geometry of every anchor column that does not set its own model or scale.
    weighting : str
        A key of :data:`~anchordiv.explorer.geometry.WEIGHTINGS`, for every anchor column that
        does not set its own.
    prior_texts : sequence of str
        The prior set of the posterior models.
    geometry_for : callable, optional
        ``geometry_for(kind, scale)``: the fitted :class:`ExplorerGeometry` of both anchor sets
        under ``default_spec`` with that kind and scale. Called once per distinct argument; by
        default it fits here (anchors encoded through ``templates`` and the on-disk text cache,
        :func:`~anchordiv.prompts.encode_anchors`); the app passes its cached one.
    baseline_for : callable, optional
        ``baseline_for(kind)``: the ``"cosine"`` or ``"iti"`` (over A and B, through their
        templates) index, likewise.
    images, embed_text, embed_image
        See :func:`~anchordiv.figure.rows.resolve_queries`.
    limits : FigureLimits
        Bounds the rows, columns and ``k`` (:func:`check_figure_request`, before anything is computed).
    templates : pair of TemplateChoice, optional
        The prompt templates of sets A and B (default: the encoder's,
        :func:`~anchordiv.prompts.default_choice`, which the prior set always gets); written under
        the figure.

    Returns
    -------
    CompareResult
        ``tables[r][c]``, ``k`` rows each, for ``len(rows)`` x ``len(columns)`` cells.

    Raises
    ------
    ValueError
        With the fix, for bad specs, a figure past ``limits``, empty anchor sets a column needs,
        or a ``k`` larger than the gallery allows.
    """
    rows = [row if isinstance(row, QueryRow) else parse_query_row(row) for row in rows]
    columns = [column if isinstance(column, GeometryColumn) else parse_geometry_column(column) for column in columns]
    if not rows:
        raise ValueError(f"no query rows; add at least one ({ROW_EXAMPLE})")
    if not columns:
        raise ValueError(f"no geometry columns; add at least one ({COLUMN_EXAMPLE})")
    k = check_figure_request(len(rows), len(columns), k, limits, n_geometries=fitted_geometries(columns, default_spec))
    if weighting not in WEIGHTINGS:
        raise ValueError(f"unknown weighting {weighting!r}; use one of {', '.join(WEIGHTINGS)}")
    texts_a, texts_b, prior_texts = tuple(texts_a), tuple(texts_b), tuple(prior_texts)
    prior_templates = default_choice(encoder)
    templates = tuple(templates) if templates is not None else (prior_templates, prior_templates)
    if len(templates) != 2:
        raise ValueError(f"templates: one choice for set A and one for B, not {len(templates)}")
    settings = CompareSettings(k, weighting, default_spec, texts_a, texts_b, prior_texts,
                               gallery.description, encoder.name, templates, prior_templates)
    geometry_for = _once(geometry_for or _fitting_geometries(gallery, encoder, settings))
    baseline_for = _once(baseline_for or _fitting_baselines(gallery, encoder, settings))
    queries = resolve_queries(rows, gallery, encoder, images, embed_text, embed_image)
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


def _fitting_geometries(gallery: Gallery, encoder, settings: CompareSettings) -> GeometryFactory:
    def fit(kind: str, scale: float) -> ExplorerGeometry:
        anchors = _set_embeddings(encoder, settings)
        prior = (encode_anchors(encoder, settings.prior_texts, settings.prior_templates)
                 if anchor_model_kind(kind).needs_prior else None)
        return ExplorerGeometry(gallery.embeddings, anchors, [settings.texts_a, settings.texts_b],
                                replace(settings.spec, kind=kind, scale=scale), prior=prior,
                                prior_texts=settings.prior_texts)
    return fit


def _fitting_baselines(gallery: Gallery, encoder, settings: CompareSettings) -> BaselineFactory:
    def fit(kind: str) -> Index:
        anchors = torch.cat(_set_embeddings(encoder, settings)) if kind == "iti" else None
        return baseline_index(kind, gallery.embeddings, anchors)
    return fit


def _set_embeddings(encoder, settings: CompareSettings) -> list[torch.Tensor]:
    """The embeddings of sets A and B, each through its templates."""
    return [encode_anchors(encoder, texts, choice)
            for texts, choice in zip((settings.texts_a, settings.texts_b), settings.templates)]


def _cell(query: Query, column: GeometryColumn, gallery: Gallery, settings: CompareSettings,
          geometry_for: GeometryFactory, baseline_for: BaselineFactory) -> pd.DataFrame:
    """The neighbour table of ``query`` under ``column``."""
    if column.is_baseline:
        index, value_name = baseline_for(column.kind), "similarity"
    else:
        geometry = geometry_for(*column.geometry_key(settings.spec))
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

