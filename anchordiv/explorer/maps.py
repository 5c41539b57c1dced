"""2-D maps of a gallery: a UMAP of a fixed sample of its rows under a geometry
(:func:`geometry_projection`), the cache key of one (:func:`projection_key`), and the roles its
points play in a plot (:func:`point_roles`), with the query and its neighbours always on it
(:func:`with_query_and_neighbours`), those outside the sample placed by UMAP's own ``transform``
(:func:`map_placer`). A map with a cache key is laid out once, by a job that outlives a page's
rerun and that later requests wait for (:func:`map_status` says which), and kept on disk with its
kNN graph, which placing points on it reads back. UMAP itself is imported (by
:mod:`anchordiv.projection`) only when used."""
from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence

import numpy as np
import torch

from .. import projection
from ..progress import Job, run_timed
from ..search import AnchorIndex
from .geometry import baseline_index

if TYPE_CHECKING:
    from ..progress import ProgressCallback
    from .geometry import ExplorerGeometry

# The most points a map lays out: 50,000 take about a minute and a half on the 2-core reference
# machine at one torch thread (the kNN graph 40 s, the layout 30 s, the first in a process 15 s
# more for compiling UMAP's kernels), then come from the disk cache in a fraction of a second.
MAX_MAP_POINTS = 50_000
# A new map estimated to take longer than this (seconds) is laid out only when asked for, its
# estimate shown first: a map of 50,000 points takes a minute or more.
ASK_FIRST_SECONDS = 30.0


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
    return ids, _layout(lambda: gallery.rows(ids), ids, method, geometry, p, weighting, iti_anchors, seed,
                        n_neighbors, cache_key, progress)


def map_status(n_items: int, method: str, max_points: int = 10_000, seed: int = 0, n_neighbors: int = 15,
               cache_key: str | None = None) -> str:
    """What :func:`geometry_projection` of a gallery of ``n_items`` with these settings would do:
    ``"cached"`` (read its layout from the disk cache), ``"in progress"`` (wait for the layout this
    process is making for the cache, asked for earlier) or ``"new"`` (lay it out)."""
    if cache_key is None:
        return "new"
    key = _layout_key(cache_key, method, min(n_items, max_points), seed, n_neighbors)
    if projection.is_cached_projection(key):
        return "cached"
    with _jobs_lock:
        job = _JOBS.get(key)
    return "in progress" if job is not None and not job.done else "new"


def project_rows(embeddings: torch.Tensor, method: str, geometry: ExplorerGeometry | None = None, p: float = 0.5,
                 weighting: str = "calibrated", iti_anchors: torch.Tensor | None = None, seed: int = 0,
                 n_neighbors: int = 15, cache_key: str | None = None,
                 progress: ProgressCallback | None = None) -> np.ndarray:
    """UMAP layout ``xy`` ``(n, 2)`` of ``embeddings`` ``(n, d)`` under ``method`` ("anchor" with
    ``geometry`` at ``p``, "cosine" or "iti").

    The kNN graph is the geometry's exact top-``n_neighbors`` among these rows; with ``cache_key``
    (naming the rows and the geometry) the layout and its graph are stored on disk (see
    :func:`anchordiv.projection.cached_projection`). ``progress(fraction, text)`` names each step
    as :func:`anchordiv.projection.project` does."""
    return _layout(lambda: embeddings, np.arange(len(embeddings)), method, geometry, p, weighting, iti_anchors, seed,
                   n_neighbors, cache_key, progress)


def _layout_key(cache_key: str, method: str, n_rows: int, seed: int, n_neighbors: int) -> str:
    return f"{cache_key}|{method}|{n_rows}|{seed}|{n_neighbors}|{projection.DEFAULT_EPOCHS}"


def _layout(read_rows, ids: np.ndarray, method: str, geometry, p: float, weighting: str, iti_anchors, seed: int,
            n_neighbors: int, cache_key: str | None, progress: ProgressCallback | None) -> np.ndarray:
    """The layout of the rows ``read_rows()`` (gallery ``ids``), and with ``cache_key`` its kNN graph
    too, on disk; the graph is remembered for :func:`map_placer` by the map it made.

    A layout to be cached is made by a :class:`~anchordiv.progress.Job` shared by every caller
    asking for it meanwhile: a page that reruns stops waiting for it, the layout is still made and
    written to the cache, and the next request for it waits for that one rather than starting
    another."""
    def build(report: ProgressCallback | None) -> np.ndarray:
        started = time.perf_counter()

        def graph() -> tuple[np.ndarray, np.ndarray]:
            def indexed():
                embeddings = read_rows()
                return embeddings, projection_index(embeddings, method, geometry, p, weighting, iti_anchors)

            embeddings, index = run_timed(indexed, report, f"Step 1 of 2: reading {len(ids):,} rows and their "
                                                           "terms under this geometry")
            return projection.project_graph(index, embeddings, n_neighbors=n_neighbors, progress=report)

        made = graph() if graph_key is None else projection.cached_graph(graph_key, graph)
        return projection.project_layout(made, seed=seed, progress=report, graph_seconds=time.perf_counter() - started)

    key = None if cache_key is None else _layout_key(cache_key, method, len(ids), seed, n_neighbors)
    graph_key = None if key is None else f"{key}|graph"
    if key is None:
        return build(progress)
    if projection.is_cached_projection(key):  # read back (and made again here if its file was damaged)
        xy = projection.cached_projection(key, lambda: build(progress))
    else:
        with _jobs_lock:
            job = _JOBS.get(key)
            joined = job is not None and not job.done  # asked for earlier: heard from where it is now
            if not joined:
                job = _JOBS[key] = Job(lambda report: projection.cached_projection(key, lambda: build(report)),
                                       name="anchordiv-map")
            for finished in [name for name, other in _JOBS.items() if other.done]:
                del _JOBS[finished]
        xy = job.wait(progress, from_start=not joined)
    _remember_graph(ids, xy, method, seed, n_neighbors, graph_key)
    return xy


# The layouts being made for the disk cache, by key (_layout).
_JOBS: dict[str, Job] = {}
_jobs_lock = threading.Lock()


# The disk cache's key of the kNN graph of each map laid out lately, by the map (its ids and points,
# method, seed and neighbours): what lets map_placer, handed a map, read its graph back.
_GRAPH_KEYS: dict[str, str] = {}
_GRAPH_KEYS_KEPT = 64
_graph_keys_lock = threading.Lock()


def _map_fingerprint(ids: np.ndarray, xy: np.ndarray, method: str, seed: int, n_neighbors: int) -> str:
    digest = hashlib.sha256(np.ascontiguousarray(ids, dtype=np.int64).tobytes())
    digest.update(np.ascontiguousarray(xy, dtype=np.float32).tobytes())
    digest.update(repr((method, seed, n_neighbors)).encode())
    return digest.hexdigest()


def _remember_graph(ids: np.ndarray, xy: np.ndarray, method: str, seed: int, n_neighbors: int, graph_key: str) -> None:
    fingerprint = _map_fingerprint(ids, xy, method, seed, n_neighbors)
    with _graph_keys_lock:
        _GRAPH_KEYS.pop(fingerprint, None)
        _GRAPH_KEYS[fingerprint] = graph_key
        while len(_GRAPH_KEYS) > _GRAPH_KEYS_KEPT:
            _GRAPH_KEYS.pop(next(iter(_GRAPH_KEYS)))


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
               n_neighbors: int = projection.DEFAULT_NEIGHBOURS,
               progress: ProgressCallback | None = None) -> MapPlacer:
    """The :class:`MapPlacer` of the map :func:`geometry_projection` laid out (the sampled ``ids``
    ``(n,)`` at ``xy`` ``(n, 2)``, with the same ``method``, geometry, ``seed`` and ``n_neighbors``):
    the sample's kNN graph, and UMAP's reducer restored from it and the layout, which is not
    laid out again. The graph is read back from the disk cache when this process laid out (or
    read) the map with a ``cache_key``; else it is made again, ``progress(fraction, text)`` hearing
    its batches. UMAP's kernels are compiled first where nothing compiled them yet, reported too."""
    embeddings = gallery.rows(np.asarray(ids))
    index = projection_index(embeddings, method, geometry, p, weighting, iti_anchors)
    if progress is not None and not projection.is_compiled():
        projection.warm_up(progress)

    def graph() -> tuple[np.ndarray, np.ndarray]:
        return projection.knn_graph(index, embeddings, n_neighbors, progress=None if progress is None else (
            lambda fraction, done: progress(fraction, f"The map's nearest neighbours again ({done})")))

    with _graph_keys_lock:
        graph_key = _GRAPH_KEYS.get(_map_fingerprint(np.asarray(ids), np.asarray(xy), method, seed, n_neighbors))
    indices, distances = graph() if graph_key is None else projection.cached_graph(graph_key, graph)
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
