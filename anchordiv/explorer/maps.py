"""2-D maps of a gallery: a UMAP of a fixed sample of its rows under a geometry
(:func:`geometry_projection`), the cache key of one (:func:`projection_key`), and the roles its
points play in a plot (:func:`point_roles`), with the query and its neighbours always on it
(:func:`with_query_and_neighbours`), those outside the sample placed by UMAP's own ``transform``
(:func:`map_placer`). UMAP itself is imported (by :mod:`anchordiv.projection`) only when used."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence

import numpy as np
import torch

from .. import projection
from ..search import AnchorIndex
from .geometry import baseline_index

if TYPE_CHECKING:
    from ..progress import ProgressCallback
    from .geometry import ExplorerGeometry


class Rows(Protocol):
    """What a map is drawn from: ``len(rows)`` items, and ``rows.rows(ids)`` their embeddings
    ``(n, d)`` float32 (a :class:`~anchordiv.gallery.Gallery` or any
    :class:`~anchordiv.explorer.source.GallerySource`)."""

    def __len__(self) -> int: ...

    def rows(self, ids: np.ndarray) -> torch.Tensor: ...


def projection_key(*parts: object) -> str:
    """A stable text key from the parts a projection depends on (anchor lists are hashed)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(repr(part).encode())
        digest.update(b"\0")
    return digest.hexdigest()


def geometry_projection(gallery: Rows, method: str, geometry: ExplorerGeometry | None = None, p: float = 0.5,
                        weighting: str = "calibrated", iti_anchors: torch.Tensor | None = None, max_points: int = 10_000,
                        seed: int = 0, n_neighbors: int = 15, cache_key: str | None = None,
                        progress: ProgressCallback | None = None) -> tuple[np.ndarray, np.ndarray]:
    """UMAP projection of a fixed seeded sample of at most ``max_points`` rows of ``gallery`` under
    ``method`` ("anchor" with ``geometry`` at ``p``, "cosine" or "iti"): ``(ids (n,), xy (n, 2))``,
    as :func:`project_rows` lays out their embeddings. Only the sample's rows are read, and only
    when the layout is not already cached under ``cache_key``; ``progress`` hears only then."""
    ids = projection.sample_ids(len(gallery), max_points, seed)
    return ids, _layout(lambda: gallery.rows(ids), len(ids), method, geometry, p, weighting, iti_anchors, seed,
                        n_neighbors, cache_key, progress)


def project_rows(embeddings: torch.Tensor, method: str, geometry: ExplorerGeometry | None = None, p: float = 0.5,
                 weighting: str = "calibrated", iti_anchors: torch.Tensor | None = None, seed: int = 0,
                 n_neighbors: int = 15, cache_key: str | None = None,
                 progress: ProgressCallback | None = None) -> np.ndarray:
    """UMAP layout ``xy`` ``(n, 2)`` of ``embeddings`` ``(n, d)`` under ``method`` ("anchor" with
    ``geometry`` at ``p``, "cosine" or "iti").

    The kNN graph is the geometry's exact top-``n_neighbors`` among these rows; with ``cache_key``
    (naming the rows and the geometry) the layout is stored on disk (see
    :func:`anchordiv.projection.cached_projection`). ``progress(fraction, text)`` names each step
    as :func:`anchordiv.projection.project` does."""
    return _layout(lambda: embeddings, len(embeddings), method, geometry, p, weighting, iti_anchors, seed,
                   n_neighbors, cache_key, progress)


def _layout(read_rows, n_rows: int, method: str, geometry, p: float, weighting: str, iti_anchors, seed: int,
            n_neighbors: int, cache_key: str | None, progress: ProgressCallback | None) -> np.ndarray:
    def build() -> np.ndarray:
        embeddings = read_rows()
        index = projection_index(embeddings, method, geometry, p, weighting, iti_anchors)
        return projection.project(index, embeddings, n_neighbors=n_neighbors, seed=seed, progress=progress)

    if cache_key is None:
        return build()
    return projection.cached_projection(
        f"{cache_key}|{method}|{n_rows}|{seed}|{n_neighbors}|{projection.DEFAULT_EPOCHS}", build)


def projection_index(embeddings: torch.Tensor, method: str, geometry: ExplorerGeometry | None = None,
                     p: float = 0.5, weighting: str = "calibrated", iti_anchors: torch.Tensor | None = None):
    """The index a map of ``embeddings`` ``(n, d)`` is laid out by ("anchor": ``geometry`` at ``p``;
    "cosine" or "iti"), on the geometry's device."""
    if method == "anchor":
        if geometry is None:
            raise ValueError("an anchor projection needs a geometry")
        return AnchorIndex(geometry.model_at(p, weighting), embeddings, reverse=geometry.spec.reverse,
                           device=geometry.device)
    return baseline_index(method, embeddings, iti_anchors, device=None if geometry is None else geometry.device)


@dataclass(frozen=True)
class MapPlacer:
    """What places points outside a map's sample (the query, its neighbours) on the map: ``index``
    over the sampled rows under the map's geometry, and ``reducer``, UMAP's reducer of the map's
    layout (:func:`anchordiv.projection.restored_reducer`). The layout stays as it is."""

    index: Any
    reducer: Any

    def place(self, rows: torch.Tensor) -> np.ndarray:
        """Positions ``(m, 2)`` of ``rows`` ``(m, d)`` by UMAP's ``transform``, from their nearest
        sampled items under the map's geometry (as many as the layout's graph has per point)."""
        if len(rows) == 0:
            return np.zeros((0, 2), dtype=np.float32)
        values, nearest = self.index.search(torch.as_tensor(rows, dtype=torch.float32), self.reducer.n_neighbors)
        return projection.transform_points(self.reducer, nearest.cpu().numpy(),
                                           projection.distances_of(self.index, values).cpu().numpy())


def map_placer(gallery: Rows, ids: np.ndarray, xy: np.ndarray, method: str, geometry: ExplorerGeometry | None = None,
               p: float = 0.5, weighting: str = "calibrated", iti_anchors: torch.Tensor | None = None, seed: int = 0,
               n_neighbors: int = projection.DEFAULT_NEIGHBOURS) -> MapPlacer:
    """The :class:`MapPlacer` of the map :func:`geometry_projection` laid out (the sampled ``ids``
    ``(n,)`` at ``xy`` ``(n, 2)``, with the same ``method``, geometry, ``seed`` and ``n_neighbors``):
    the sample's kNN graph again, and UMAP's reducer restored from it and the layout, which is not
    laid out again."""
    embeddings = gallery.rows(np.asarray(ids))
    index = projection_index(embeddings, method, geometry, p, weighting, iti_anchors)
    indices, distances = projection.knn_graph(index, embeddings, n_neighbors)
    return MapPlacer(index, projection.restored_reducer(indices, distances, xy, seed=seed))


def point_roles(ids: np.ndarray, query_id: int | None, neighbour_ids: Sequence[int]) -> np.ndarray:
    """``(n,)`` the role of each projected id: "query", "neighbour" or "gallery"."""
    ids = np.asarray(ids)
    return np.where(ids == query_id, "query",
                    np.where(np.isin(ids, np.asarray(list(neighbour_ids), dtype=np.int64)), "neighbour", "gallery"))


def with_query_and_neighbours(gallery: Rows, ids: np.ndarray, xy: np.ndarray, query_id: int | None,
                              neighbour_ids: Sequence[int], query_row: torch.Tensor | None,
                              place: Callable[[torch.Tensor], np.ndarray]
                              ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int]:
    """A map of the sampled ``ids`` ``(n,)`` at ``xy`` ``(n, 2)`` with the query and its neighbours
    always on it: those of the query (``query_id``) and ``neighbour_ids`` outside the sample are
    placed by ``place(rows (m, d)) -> (m, 2)`` (:meth:`MapPlacer.place`; called only when there is
    something to place) and appended. A query that is not a gallery item (``query_id`` ``None``;
    ``query_row`` its embedding ``(d,)``) is placed too, as the returned ``query_xy`` ``(2,)`` (else
    ``None``). Returns ``(ids, xy, query_xy, placed)``, ``placed`` counting the points placed."""
    shown = set(np.asarray(ids).tolist())
    wanted = ([query_id] if query_id is not None else []) + [int(item) for item in neighbour_ids]
    missing = np.asarray([item for item in dict.fromkeys(wanted) if item not in shown], dtype=np.int64)
    rows = [gallery.rows(missing)] if len(missing) else []
    alone = query_id is None and query_row is not None
    if alone:
        rows.append(torch.as_tensor(query_row, dtype=torch.float32).reshape(1, -1))
    placed = np.asarray(place(torch.cat(rows)), dtype=np.float32) if rows else np.zeros((0, 2), dtype=np.float32)
    ids = np.concatenate([np.asarray(ids), missing])
    xy = np.concatenate([np.asarray(xy), placed[:len(missing)]])
    return ids, xy, (placed[-1] if alone else None), len(placed)
