"""What the Explore page shows a gallery through: the :class:`GallerySource` protocol, and
:class:`MemorySource`, a :class:`~anchordiv.gallery.Gallery` held in memory (the built-in world or
an image folder). The other source is :class:`~anchordiv.explorer.store_source.StoreSource`, a
gallery store on disk (10^5 - 10^6 items).

One page draws either: it asks the source for names, labels, thumbnails, presets, its geometry
(whose certified slider moves ``p``) and its cosine baseline, and draws the sections its
:class:`Capabilities` name; over any source, :func:`neighbour_grid_png` draws a neighbour grid and
:func:`p_sweep` the agreement as ``p`` moves. Nothing here imports Streamlit.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Sequence

import numpy as np
import pandas as pd
import torch

from ..cache import cache_dir
from ..gallery import label_text
from ..grids import grid_png, ranked_captions
from ..search import Index
from .anchors import anchor_presets, preset_sources
from .calibration_cache import CalibrationCache
from .colours import label_colour
from .geometry import ExplorerGeometry, GeometrySpec, baseline_index
from .maps import point_roles
from .neighbours import agreement, neighbour_table, search_one
from .query import default_query_id
from .thumbnails import THUMBNAIL_SIZE

if TYPE_CHECKING:
    from PIL import Image

    from ..gallery import Gallery

# Rows of the fixed UMAP sample a page offers first: in memory a layout of 4,000 points takes
# seconds (docs/benchmarks.md); a store's rows are read from disk, so fewer.
MEMORY_PROJECTION_ROWS = 4_000
NO_LABEL = "(no label)"  # the map's colour for images without the colouring label


@dataclass(frozen=True)
class Capabilities:
    """The parts of the Explore page a source can feed beyond the common ones (query, anchors, the
    ``p`` slider's neighbours beside cosine, the neighbour table, UMAP of the geometry).

    ``p_sweep``: agreement with the query's object and style across ``p`` (needs both labels), and
    below it the calibration curve behind calibrated ``p``; ``explain``: "why this neighbour?" (the
    two tilted anchor distributions); ``iti``: the ITI baseline beside cosine; ``cosine_projection``: a cosine UMAP beside the geometry's; ``grid_png``: the neighbour grid as a
    PNG download; ``certificate``: says whether the slider certified each move; ``row_numbers``: a
    query picked by its row number.
    """

    p_sweep: bool = False
    explain: bool = False
    iti: bool = False
    cosine_projection: bool = False
    grid_png: bool = False
    certificate: bool = False
    row_numbers: bool = False


class GallerySource(Protocol):
    """A gallery as the Explore page shows it: ``len(source)`` items (rows ``0 .. G - 1``).

    ``key`` names the content (for caches and links); ``description`` says what it is;
    ``legend`` explains the grids' marks; ``name_column`` / ``colour_columns`` are the columns of
    :meth:`projection_frame` that name and may colour a point (``default_colour`` first);
    ``projection_rows`` is the sample size a UMAP starts at; ``notes`` are warnings for the user.
    """

    key: str
    capabilities: Capabilities

    def __len__(self) -> int: ...

    @property
    def description(self) -> str: ...

    @property
    def legend(self) -> str: ...

    @property
    def notes(self) -> list[str]: ...

    @property
    def name_column(self) -> str: ...

    @property
    def colour_columns(self) -> list[str]: ...

    @property
    def default_colour(self) -> str: ...

    @property
    def projection_rows(self) -> int: ...

    def caption(self, item: int) -> str:
        """Item ``item``'s name, as menus and grids show it."""

    def find(self, text: str, limit: int = 200) -> list[int]:
        """Items whose name contains ``text`` (case-insensitive), best first (an exact name, then a
        prefix, a word start, any match; ties by the shorter name, then the smaller id:
        :func:`~anchordiv.name_match.rank_matches`), at most ``limit``."""

    def default_query(self) -> int:
        """The item a page opens on."""

    def vector(self, item: int) -> np.ndarray:
        """Row ``item`` as the query vector ``(d,)`` float32."""

    def rows(self, ids: np.ndarray) -> torch.Tensor:
        """The embeddings ``(n, d)`` float32 of rows ``ids`` ``(n,)`` (reads those rows only)."""

    def labels_of(self, item: int | None) -> Any:
        """What :meth:`neighbour_table` compares neighbours with (``None`` for no item)."""

    def thumbnails(self, ids: Sequence[int], size: int = THUMBNAIL_SIZE) -> list[Image.Image]:
        """One image per item of ``ids``, for these items only."""

    def presets(self) -> dict[str, tuple[str, ...]]:
        """The named anchor lists of the preset menus."""

    def preset_sources(self) -> dict[str, str]:
        """For the presets read from the gallery's labels, which column each reads (for the menu's help)."""

    def neighbour_table(self, values: np.ndarray, ids: np.ndarray, query_labels: Any, value_name: str) -> pd.DataFrame:
        """One row per neighbour: ``rank``, ``gallery_id``, its labels, ``value_name`` and
        ``same_object`` / ``same_style`` against ``query_labels`` (NA where unknown)."""

    def fit_geometry(self, anchor_sets: Sequence[torch.Tensor], anchor_texts: Sequence[Sequence[str]],
                     spec: GeometrySpec, prior: torch.Tensor | None = None,
                     prior_texts: Sequence[str] = (),
                     anchor_weights: Sequence[Sequence[float] | None] = ()) -> ExplorerGeometry:
        """Anchor sets A and B fitted under ``spec`` (a weighted set, one with its ``anchor_weights``
        ``(N,)`` rather than ``None``, as the empirical model with those weights), with this gallery
        indexed once: its :meth:`~ExplorerGeometry.slider` moves ``p`` for a query."""

    def cosine_top_k(self, query: np.ndarray, k: int, exclude: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` items most cosine-similar to ``query`` ``(d,)``: ``(similarities (k,), ids (k,))``."""

    def projection_frame(self, ids: np.ndarray, xy: np.ndarray, query_id: int | None,
                         neighbour_ids: Sequence[int], colour: str) -> pd.DataFrame:
        """One row per projected item: :attr:`name_column`, the colour columns (as text), ``x``,
        ``y``, ``gallery_id`` and ``role`` ("query", "neighbour" or "gallery")."""


@dataclass(frozen=True)
class MemorySource:
    """A :class:`~anchordiv.gallery.Gallery` in memory as a :class:`GallerySource`: every part of
    the page (its labels give the p sweep; its embeddings ITI, "why this neighbour?" and a cosine map).

    Its cosine index (:attr:`cosine_index`) is built on first use and kept with the source, so one
    source per gallery is meant to be shared (the app caches one per gallery). ``device`` is where
    its geometries and indexes compute (``None``: CUDA when available, else CPU).
    """

    gallery: Gallery
    device: str | None = None
    capabilities: ClassVar[Capabilities] = Capabilities(p_sweep=True, explain=True, iti=True, cosine_projection=True,
                                                        grid_png=True)

    @property
    def key(self) -> str:
        return self.gallery.key

    def __len__(self) -> int:
        return len(self.gallery)

    @property
    def description(self) -> str:
        return self.gallery.description

    @property
    def legend(self) -> str:
        return ("✓obj: same object as the query · ✓sty: same style · d = anchor divergence (lower is closer), "
                "s = similarity (higher is closer)")

    @property
    def notes(self) -> list[str]:
        return []

    @property
    def name_column(self) -> str:
        return self.gallery.name_column

    @property
    def colour_columns(self) -> list[str]:
        """Label columns of fewer than 200 values (else the names)."""
        labels = self.gallery.labels
        return [column for column in labels.columns if labels[column].nunique() < 200] or [self.name_column]

    @property
    def default_colour(self) -> str:
        """A label column: the style, else the object, else the name, else another that groups the
        images (never a path: :func:`~anchordiv.explorer.colours.label_colour`)."""
        gallery = self.gallery
        return label_colour(gallery.labels, self.colour_columns,
                            (gallery.style_column, gallery.object_column, gallery.name_column))

    @property
    def projection_rows(self) -> int:
        return min(len(self), MEMORY_PROJECTION_ROWS)

    def caption(self, item: int) -> str:
        return self.gallery.caption(item)

    def find(self, text: str, limit: int = 200) -> list[int]:
        return self.gallery.find(text, limit)

    def default_query(self) -> int:
        return default_query_id(self.gallery)

    def vector(self, item: int) -> np.ndarray:
        return self.gallery.embeddings[int(item)].numpy()

    def rows(self, ids: np.ndarray) -> torch.Tensor:
        return self.gallery.rows(ids)

    def labels_of(self, item: int | None) -> pd.Series | None:
        return None if item is None else self.gallery.labels.iloc[int(item)]

    def thumbnails(self, ids: Sequence[int], size: int = THUMBNAIL_SIZE) -> list[Image.Image]:
        """The gallery's own images (the page draws them at its width)."""
        return [self.gallery.image(item) for item in ids]

    def presets(self) -> dict[str, tuple[str, ...]]:
        return anchor_presets(self.gallery)

    def preset_sources(self) -> dict[str, str]:
        return preset_sources(self.gallery)

    def neighbour_table(self, values: np.ndarray, ids: np.ndarray, query_labels: pd.Series | None,
                        value_name: str) -> pd.DataFrame:
        return neighbour_table(values, np.asarray(ids), self.gallery, query_labels, value_name)

    def fit_geometry(self, anchor_sets: Sequence[torch.Tensor], anchor_texts: Sequence[Sequence[str]],
                     spec: GeometrySpec, prior: torch.Tensor | None = None,
                     prior_texts: Sequence[str] = (),
                     anchor_weights: Sequence[Sequence[float] | None] = ()) -> ExplorerGeometry:
        return ExplorerGeometry(self.gallery.embeddings, anchor_sets, anchor_texts, spec, prior=prior,
                                prior_texts=prior_texts, anchor_weights=anchor_weights,
                                calibration_cache=self.calibration_cache, device=self.device)

    @property
    def calibration_cache(self) -> CalibrationCache | None:
        """Where this gallery's calibrations are kept between starts (``None`` when the anchordiv
        cache folder cannot be used: each fit then measures its own)."""
        try:
            return CalibrationCache(cache_dir(writable=True) / "calibration", self.gallery.key)
        except ValueError:
            return None

    @cached_property
    def cosine_index(self) -> Index:
        """The cosine baseline over the whole gallery, built once (one pass) and then shared."""
        return baseline_index("cosine", self.gallery.embeddings, device=self.device)

    def cosine_top_k(self, query: np.ndarray, k: int, exclude: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        return search_one(self.cosine_index, query, k, exclude=exclude)

    def projection_frame(self, ids: np.ndarray, xy: np.ndarray, query_id: int | None,
                         neighbour_ids: Sequence[int], colour: str) -> pd.DataFrame:
        frame = self.gallery.labels.iloc[ids].reset_index(drop=True).assign(x=xy[:, 0], y=xy[:, 1], gallery_id=ids)
        frame["role"] = point_roles(ids, query_id, neighbour_ids)
        # A missing label is a colour of its own: a map that dropped it would hide those images.
        frame[colour] = [label_text(value) or NO_LABEL for value in frame[colour]]
        return frame


def neighbour_grid_png(table: pd.DataFrame, source: GallerySource, title: str) -> bytes:
    """The anchor-divergence neighbours of a neighbour table of ``source`` as a captioned PNG grid."""
    ids = table["gallery_id"].tolist()
    captions = ranked_captions([source.caption(item) for item in ids], table["divergence"].tolist(), "d")
    return grid_png(source.thumbnails(ids), captions, title=title)


def p_sweep(geometry: ExplorerGeometry, query: torch.Tensor, k: int, source: GallerySource, query_labels: Any,
            exclude: int | None = None, weighting: str = "calibrated", steps: int = 11) -> pd.DataFrame:
    """Object and style agreement of the top-``k`` of ``source`` as ``p`` goes from 0 to 1 (paper
    Fig. 3, left), against ``query_labels`` (:meth:`GallerySource.labels_of`). Columns ``p``,
    ``object``, ``style`` (fractions; NaN where labels are unknown)."""
    rows = []
    for p in np.linspace(0.0, 1.0, steps):
        values, ids = search_one(geometry.index_at(float(p), weighting), query, k, exclude)
        score = agreement(source.neighbour_table(values, ids, query_labels, "divergence"))
        rows.append({"p": float(p), **{name: (np.nan if value is None else value[0] / value[1])
                                       for name, value in score.items()}})
    return pd.DataFrame(rows)
