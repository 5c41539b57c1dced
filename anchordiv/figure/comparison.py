"""The neighbours of every (query row, geometry column): :func:`compare` resolves the rows, fits each
distinct (encoder, anchor model, scale) once through :class:`~anchordiv.explorer.geometry.ExplorerGeometry`
and ranks the gallery for every cell, giving a :class:`CompareResult`."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from ..explorer.anchors import anchor_count
from ..explorer.geometry import WEIGHTING_HELP, ExplorerGeometry, GeometrySpec, baseline_index
from ..explorer.neighbours import neighbour_table, search_one
from ..models import anchor_model_kind
from ..prompts import AS_TYPED, AUTO, TemplateChoice, default_choice, encode_anchors
from .columns import (COLUMN_EXAMPLE, GeometryColumn, fitted_geometries, named_encoders, parse_geometry_column,
                      value_text)
from .limits import DEFAULT_LIMITS, FigureLimits, check_figure_request
from .rows import (ROW_EXAMPLE, ImageEmbedder, Query, QueryRow, TextEmbedder, image_name, parse_query_row,
                   resolve_queries)
from .text import clip

if TYPE_CHECKING:
    from ..gallery import Gallery
    from ..search import Index


GeometryFactory = Callable[[str, float], ExplorerGeometry]


BaselineFactory = Callable[[str], "Index"]


@dataclass(frozen=True)
class ColumnModel:
    """What a column that names its encoder (``cosine encoder=SPEC``) ranks: that ``encoder`` and the
    figure's images embedded by it (``gallery``: the same images in the same order, so ids and
    labels are the figure's). ``geometry_for``, ``baseline_for`` and ``embed_image`` are as
    :func:`compare` takes them, for this encoder (``None``: fitted or encoded in :func:`compare`)."""

    encoder: Any
    gallery: Gallery
    geometry_for: GeometryFactory | None = None
    baseline_for: BaselineFactory | None = None
    embed_image: ImageEmbedder | None = None


ModelFactory = Callable[[str, "str | None"], ColumnModel]


@dataclass(frozen=True)
class CompareSettings:
    """What the figure was made with, written under it: ``k``, the default ``weighting`` and
    geometry ``spec`` (each column may override kind, scale and weighting), the anchor sets, the
    prior set (posterior models), the gallery's description, the encoder's name, and the prompt
    templates sets A and B (``templates``) and the prior set were encoded through by it. The
    encoders that columns name (``column_encoders``, by name) encoded them through
    ``column_templates`` (A, B and prior, one triple per encoder): "auto" is each encoder's own
    :func:`~anchordiv.prompts.default_choice`. ``weights`` holds, for A and B, a weighted set's
    weights ``(N,)`` or ``None``: a weighted set is always the empirical model with its weights,
    whatever the kind (:class:`~anchordiv.explorer.ExplorerGeometry`). ``columns`` are the
    figure's: :meth:`lines` names only the settings they use."""

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
    column_encoders: tuple[str, ...] = ()
    column_templates: tuple[tuple[TemplateChoice, TemplateChoice, TemplateChoice], ...] = ()
    weights: tuple[tuple[float, ...] | None, tuple[float, ...] | None] = (None, None)
    columns: tuple[GeometryColumn, ...] = ()

    def lines(self) -> list[str]:
        """The settings as a few lines of plain text, each naming only what the figure's
        :attr:`columns` use: the anchor sets and their templates where a column ranks by anchors
        (every column but cosine), the prior set where a column's model needs it, the anchor
        model's defaults where a column keeps them, ITI where there is an ITI column."""
        lines = []
        if any(column.kind != "cosine" for column in self.columns):
            lines.extend(f"Anchors {name}: {_anchor_summary(texts, weights is not None)}"
                         for name, texts, weights in zip("AB", (self.texts_a, self.texts_b), self.weights))
            if self.prior_texts and any(anchor_model_kind(kind).needs_prior for kind in self._anchor_models()):
                lines.append(f"Prior anchors: {_anchor_summary(self.prior_texts)}")
            lines.extend(self.templates_lines())
        lines.append(self.ranking_line())
        others = f" (columns that name a model: {', '.join(self.column_encoders)})" if self.column_encoders else ""
        lines.append(f"Gallery: {self.gallery} · encoder {self.encoder}{others} · made with anchordiv")
        return lines

    def ranking_line(self) -> str:
        """How the cells rank: the anchor model's defaults that some anchor column keeps (a column's
        own are in its header), the divergence's direction, ``k``, and what ITI is over."""
        anchored = [column for column in self.columns if not column.is_baseline]
        parts = []
        if anchored:
            model = (f"Anchor model {self.model_text()}" if any(column.model is None for column in anchored)
                     else "Anchor models as in the column headers" + self._weighted_note(anchored))
            scale = ([f"s = {value_text(float(self.spec.scale))}"] if any(column.scale is None for column in anchored)
                     else [])
            weighting = ([f"{self.weighting} weights of A and B"]
                         if any(column.kind == "mix" and column.weighting is None for column in anchored) else [])
            direction = "KL(p_neighbour ‖ p_query)" if self.spec.reverse else "KL(p_query ‖ p_neighbour)"
            parts.append(", ".join([model, *scale, *weighting, direction]))
        parts.append(f"top-{self.k}")
        if any(column.kind == "iti" for column in self.columns):
            sets = [name for name, texts in zip("AB", (self.texts_a, self.texts_b)) if texts]
            parts.append(f"ITI over the anchors of {' and '.join(sets)}")
        return "; ".join(parts)

    def _weighted_note(self, anchored: list[GeometryColumn]) -> str:
        """Where a column's header names a model for a weighted set, which keeps the empirical
        model with its weights whatever the header says: ``" (set B: empirical with its weights)"``."""
        sets_of = {"A": "A", "B": "B", "mix": "AB"}
        shown = [name for name, weights in zip("AB", self.weights)
                 if weights is not None and any(name in sets_of[column.kind] for column in anchored)]
        return f" ({'; '.join(f'set {name}: empirical with its weights' for name in shown)})" if shown else ""

    def _anchor_models(self) -> set[str]:
        """The anchor models the anchor columns rank by (their own, else the default's)."""
        return {column.model or self.spec.kind for column in self.columns if not column.is_baseline}

    def model_text(self) -> str:
        """The default anchor model of the sets: the spec's kind and parameters (``"Gaussian"``),
        but a weighted set is always the empirical model with its weights; where A and B differ,
        each set's (``"A: empirical with its weights; B: Gaussian"``)."""
        kind = anchor_model_kind(self.spec.kind)
        own = kind.short + "".join(f", {name} = {value}" for name, value in self.spec.parameters().items()
                                   if name != "alpha" or kind.needs_prior)
        weighted = {name: weights is not None
                    for name, texts, weights in zip("AB", (self.texts_a, self.texts_b), self.weights) if texts}
        if not any(weighted.values()):
            return own
        if all(weighted.values()):
            return "empirical with each set's weights" if len(weighted) > 1 else "empirical with its weights"
        return "; ".join(f"{name}: {'empirical with its weights' if is_weighted else own}"
                         for name, is_weighted in weighted.items())

    def templates_lines(self) -> list[str]:
        """What the anchor texts were encoded as: ``["Anchor texts encoded as 'a photo of a {}.'"]``,
        or one line per encoder (``"... by open_clip:ViT-B-32@…"``) where the encoders' differ."""
        by_encoder = {self.encoder: (*self.templates, self.prior_templates),
                      **dict(zip(self.column_encoders, self.column_templates))}
        sentences = {name: self._encoded_as(*choices) for name, choices in by_encoder.items()}
        if len(set(sentences.values())) == 1:
            return [sentences[self.encoder]]
        return [f"{sentence} by {name}" for name, sentence in sentences.items()]

    def _encoded_as(self, choice_a: TemplateChoice, choice_b: TemplateChoice, prior: TemplateChoice) -> str:
        choices = {choice_a, choice_b} | ({prior} if self.prior_texts else set())
        if len(choices) == 1:
            return f"Anchor texts encoded as {choice_a.label}"
        line = f"Anchors A encoded as {choice_a.label}; B as {choice_b.label}"
        return line + (f"; prior anchors as {prior.label}" if self.prior_texts else "")


def _anchor_summary(texts: Sequence[str], weighted: bool = False, shown: int = 6) -> str:
    """``"8 (smiling face, kissing face, …)"``; for a weighted set ``"8 weighted anchors, the
    empirical model with those weights (smiling face, …)"``."""
    if not texts:
        return "none"
    listed = ", ".join(clip(text, 30) for text in texts[:shown])
    count = (f"{anchor_count(len(texts), True)}, the empirical model with those weights" if weighted
             else f"{len(texts):,}")
    return f"{count} ({listed}{', …' if len(texts) > shown else ''})"


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

    def column(self, index: int) -> CompareResult:
        """The figure of column ``index`` alone, its settings still the whole figure's (a page too
        narrow for every column shows them one under another)."""
        return replace(self, columns=[self.columns[index]], tables=[[row[index]] for row in self.tables])

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
            templates: Sequence[TemplateChoice | str] | None = None, model_for: ModelFactory | None = None,
            anchor_weights: Sequence[Sequence[float] | None] = ()) -> CompareResult:
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
        A key of :data:`~anchordiv.explorer.geometry.WEIGHTING_HELP`, for every anchor column that
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
        Bounds the rows, columns, ``k``, geometries and the encoders columns name
        (:func:`check_figure_request`, before anything is computed or loaded).
    templates : pair of TemplateChoice or "auto", optional
        The prompt templates of sets A and B (default ``("auto", "auto")``). ``"auto"``
        (:data:`~anchordiv.prompts.AUTO`) is each encoder's own
        :func:`~anchordiv.prompts.default_choice`, resolved for the figure's encoder and for each
        encoder a column names (the prior set always gets it); written under the figure.
    model_for : callable, optional
        ``model_for(spec, pretrained)``: the :class:`ColumnModel` of an encoder a column names
        (``cosine encoder=open_clip:ViT-B-32``), called once per encoder; needed only by such
        columns. Their queries are the rows' images embedded by that encoder (a gallery row's
        image, an image or upload row), their anchors the same texts through the same templates;
        text rows cannot be ranked there.
    anchor_weights : pair of sequences of float or None, optional
        For sets A and B (missing: ``None``), a weighted set's weights ``(N,)``, row-aligned with
        its texts: that set is the empirical model with those weights whatever the kind
        (:class:`~anchordiv.explorer.ExplorerGeometry`), as fitted here and written under the
        figure; ``geometry_for`` must fit them so too (the app's does).

    Returns
    -------
    CompareResult
        ``tables[r][c]``, ``k`` rows each, for ``len(rows)`` x ``len(columns)`` cells.

    Raises
    ------
    ValueError
        With the fix, for bad specs, a figure past ``limits``, empty anchor sets a column needs,
        a ``k`` larger than the gallery allows, or ``anchor_weights`` that do not match their sets.
    """
    rows = [row if isinstance(row, QueryRow) else parse_query_row(row) for row in rows]
    columns = [column if isinstance(column, GeometryColumn) else parse_geometry_column(column) for column in columns]
    if not rows:
        raise ValueError(f"no query rows; add at least one ({ROW_EXAMPLE})")
    if not columns:
        raise ValueError(f"no geometry columns; add at least one ({COLUMN_EXAMPLE})")
    k = check_figure_request(len(rows), len(columns), k, limits, n_geometries=fitted_geometries(columns, default_spec),
                             n_encoders=named_encoders(columns))
    if weighting not in WEIGHTING_HELP:
        raise ValueError(f"unknown weighting {weighting!r}; use one of {', '.join(WEIGHTING_HELP)}")
    texts_a, texts_b, prior_texts = tuple(texts_a), tuple(texts_b), tuple(prior_texts)
    choices = _template_choices(templates)
    settings = _encoded_by(CompareSettings(k, weighting, default_spec, texts_a, texts_b, prior_texts,
                                           gallery.description, encoder.name,
                                           weights=_set_weights(anchor_weights, (texts_a, texts_b))), encoder, choices)
    geometry_for = _once(geometry_for or _fitting_geometries(gallery, encoder, settings))
    baseline_for = _once(baseline_for or _fitting_baselines(gallery, encoder, settings))
    queries = resolve_queries(rows, gallery, encoder, images, embed_text, embed_image)
    figure = _Ranking(encoder, gallery, geometry_for, baseline_for, queries, settings)
    rankings = {None: figure}
    for column in columns:
        if column.encoder_key not in rankings:
            rankings[column.encoder_key] = _column_ranking(column, model_for, figure, choices, images or {})
    others = {ranking.encoder.name: ranking.settings for ranking in rankings.values() if ranking is not figure}
    settings = replace(settings, column_encoders=tuple(others), column_templates=tuple(
        (*other.templates, other.prior_templates) for other in others.values()), columns=tuple(columns))
    tables = []
    for row in range(len(queries)):
        tables.append([_cell(row, column, rankings[column.encoder_key], settings) for column in columns])
    return CompareResult(gallery, queries, columns, tables, settings)


def _set_weights(anchor_weights: Sequence[Sequence[float] | None],
                 texts: Sequence[Sequence[str]]) -> tuple[tuple[float, ...] | None, tuple[float, ...] | None]:
    """``anchor_weights`` checked: at most one entry for set A and one for B, each ``None`` or one
    weight per anchor text; as a pair of tuples (``None`` for a missing entry)."""
    if len(anchor_weights) > 2:
        raise ValueError(f"anchor_weights: at most one entry for set A and one for B, not {len(anchor_weights)}")
    weights = [None if entry is None else tuple(float(weight) for weight in entry) for entry in anchor_weights]
    weights += [None] * (2 - len(weights))
    for name, entry, set_texts in zip("AB", weights, texts):
        if entry is not None and len(entry) != len(set_texts):
            raise ValueError(f"anchor_weights: set {name} has {len(set_texts)} anchors but {len(entry)} weights; "
                             "give one weight per anchor")
    return weights[0], weights[1]


def _template_choices(templates: Sequence[TemplateChoice | str] | None) -> tuple[TemplateChoice | str, ...]:
    """``templates`` checked: one :class:`TemplateChoice` or :data:`AUTO` for set A and one for B."""
    choices = (AUTO, AUTO) if templates is None else tuple(templates)
    if len(choices) != 2:
        raise ValueError(f"templates: one choice for set A and one for B, not {len(choices)}")
    for choice in choices:
        if not (isinstance(choice, TemplateChoice) or choice == AUTO):
            raise ValueError(f"templates: {choice!r} is neither a TemplateChoice nor {AUTO!r}")
    return choices


def _encoded_by(settings: CompareSettings, encoder, choices: Sequence[TemplateChoice | str]) -> CompareSettings:
    """``settings`` with the templates ``encoder`` encodes the anchors through: ``choices`` with
    :data:`AUTO` as its :func:`~anchordiv.prompts.default_choice`, which the prior set gets too."""
    own = default_choice(encoder)
    return replace(settings, templates=tuple(own if choice == AUTO else choice for choice in choices),
                   prior_templates=own)


@dataclass(frozen=True)
class _Ranking:
    """One encoder's part of a figure: the gallery it embedded, its geometries and baselines (each
    made once), the rows' queries embedded by it, and the settings with its templates."""

    encoder: Any
    gallery: Gallery
    geometry_for: GeometryFactory
    baseline_for: BaselineFactory
    queries: list[Query]
    settings: CompareSettings


def _column_ranking(column: GeometryColumn, model_for: ModelFactory | None, figure: _Ranking,
                    choices: Sequence[TemplateChoice | str], images: Mapping[str, bytes]) -> _Ranking:
    """The :class:`_Ranking` of the encoder ``column`` names (the figure's own when it is the same model)."""
    if model_for is None:
        raise ValueError(f"column '{column}' names the encoder {column.encoder_label}, and this figure has no way "
                         "to load another encoder; drop encoder= from the column")
    model = model_for(*column.encoder_key)
    if model.encoder.name == figure.encoder.name:
        return figure
    if len(model.gallery) != len(figure.gallery) or not model.gallery.labels.equals(figure.gallery.labels):
        raise ValueError(f"column '{column}': {column.encoder_label} embedded {model.gallery.description}, not the "
                         f"figure's {figure.gallery.description}; a column's encoder must embed the same images")
    queries = [_query_under(query, column, model, images) for query in figure.queries]
    settings = _encoded_by(figure.settings, model.encoder, choices)
    return _Ranking(model.encoder, model.gallery,
                    _once(model.geometry_for or _fitting_geometries(model.gallery, model.encoder, settings)),
                    _once(model.baseline_for or _fitting_baselines(model.gallery, model.encoder, settings)), queries,
                    settings)


def _query_under(query: Query, column: GeometryColumn, model: ColumnModel, images: Mapping[str, bytes]) -> Query:
    """``query`` with its image embedded by ``model``'s encoder: a gallery row's own row of
    ``model.gallery``, an image or upload row's bytes encoded again."""
    if query.gallery_id is not None:
        return replace(query, vector=model.gallery.embeddings[query.gallery_id].numpy())
    if query.image is None:
        raise ValueError(f"row '{query.row}' is a text, and column '{column}' ranks the images embedded by another "
                         f"encoder ({column.encoder_label}) for the same query image: use a gallery image, an image "
                         "or an upload as the row, or drop encoder= from the column")
    data, name = images[query.row.value], image_name(query.row)
    if model.embed_image is not None:
        return replace(query, vector=np.asarray(model.embed_image(data, name)))
    return replace(query, vector=model.encoder.encode_images([query.image])[0].numpy())


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
                                prior_texts=settings.prior_texts, anchor_weights=settings.weights,
                                device=encoder.device)
    return fit


def _fitting_baselines(gallery: Gallery, encoder, settings: CompareSettings) -> BaselineFactory:
    def fit(kind: str) -> Index:
        anchors = torch.cat(_set_embeddings(encoder, settings)) if kind == "iti" else None
        return baseline_index(kind, gallery.embeddings, anchors, device=encoder.device)
    return fit


def _set_embeddings(encoder, settings: CompareSettings) -> list[torch.Tensor]:
    """The embeddings of sets A and B, each through its templates."""
    return [encode_anchors(encoder, texts, choice)
            for texts, choice in zip((settings.texts_a, settings.texts_b), settings.templates)]


def _cell(row: int, column: GeometryColumn, ranking: _Ranking, settings: CompareSettings) -> pd.DataFrame:
    """The neighbour table of query ``row`` under ``column``, in the encoder's ``ranking``."""
    query = ranking.queries[row]
    if column.is_baseline:
        index, value_name = ranking.baseline_for(column.kind), "similarity"
    else:
        geometry = ranking.geometry_for(*column.geometry_key(settings.spec))
        _check_sets(column, geometry)
        index, value_name = geometry.index_at(column.weight(), column.weighting or settings.weighting), "divergence"
    values, ids = search_one(index, torch.as_tensor(query.vector), settings.k, exclude=query.gallery_id)
    return neighbour_table(values, ids, ranking.gallery, query.labels, value_name)


def _check_sets(column: GeometryColumn, geometry: ExplorerGeometry) -> None:
    """A column uses only sets that have anchors (a geometry of one set ignores ``p``, so without
    this check "B only" would silently show A)."""
    needed = {"A": ["A"], "B": ["B"], "mix": ["A", "B"]}[column.kind]
    missing = [name for name in needed if name not in geometry.component_names]
    if missing:
        raise ValueError(f"column '{column}' needs anchors in set {' and '.join(missing)}, which is empty; "
                         "add anchors there or drop the column")

