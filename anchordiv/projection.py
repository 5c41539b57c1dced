"""2-D projections of a gallery under any geometry: UMAP on the geometry's own kNN graph.

The kNN graph comes from the index's exact search (anchor divergence, cosine or ITI), and
umap-learn lays it out through ``precomputed_knn`` under its ``"precomputed"`` metric, so UMAP never
computes a metric of its own. Divergences are not symmetric; UMAP symmetrises the fuzzy graph itself
(its fuzzy union). Projections can be cached on disk by a caller-supplied key
(:func:`cached_projection`). Points outside a layout are placed by UMAP's own ``transform`` from
their distances to the laid-out points under the same geometry (:func:`restored_reducer`,
:func:`transform_points`).
"""
from __future__ import annotations

import hashlib
import warnings
import time
from typing import TYPE_CHECKING, Callable

import numpy as np
import torch

from ._validation import check_positive_int
from .extras import require

if TYPE_CHECKING:
    from .progress import ProgressCallback
    from .search import Index

DEFAULT_NEIGHBOURS = 15
# UMAP's own default for graphs over 10,000 items. It uses 500 below that, which costs 2.5x as long
# for a projection that is not visibly better (docs/benchmarks.md).
DEFAULT_EPOCHS = 200
# What a layout costs on this project's 2-core reference machine, as measured in docs/benchmarks.md
# (per point at DEFAULT_EPOCHS, and once per process for compiling umap-learn's kernels). Only an
# estimate to tell the visitor; nothing waits on it.
LAYOUT_SECONDS_PER_POINT = 6.0 / 10_000
COMPILE_SECONDS = 10.0
MIN_DIST = 0.1
_compiled = False  # whether this process has laid out a graph (and so compiled the kernels)


def sample_ids(n_items: int, limit: int, seed: int = 0) -> np.ndarray:
    """Sorted ids of at most ``limit`` of ``n_items`` items, a fixed random subset when smaller."""
    n_items = check_positive_int(n_items, "n_items", minimum=0)
    limit = check_positive_int(limit, "limit")
    seed = check_positive_int(seed, "seed", minimum=0)
    if n_items <= limit:
        return np.arange(n_items)
    return np.sort(np.random.default_rng(seed).choice(n_items, size=limit, replace=False))


def distances_of(index: Index, values: torch.Tensor) -> torch.Tensor:
    """``index``'s search ``values`` as distances, smaller closer as UMAP expects: its divergences
    (clamped at 0 against round-off), or ``1 - similarity`` for similarity indexes."""
    return ((1.0 - values) if index.higher_is_closer else values).clamp_min(0)


def knn_graph(index: Index, embeddings: torch.Tensor, n_neighbors: int = DEFAULT_NEIGHBOURS,
              batch: int = 2048, progress: ProgressCallback | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each item's ``n_neighbors`` nearest items (itself first), from ``index`` built over
    ``embeddings`` ``(n, d)``: ``(indices (n, n_neighbors) int64, distances (n, n_neighbors) float32)``.

    Distances are :func:`distances_of` the index's values. ``progress(fraction, text)``
    hears after each ``batch`` of rows.
    """
    n_items = len(embeddings)
    if n_items < 3:
        raise ValueError(f"a projection needs at least 3 images; the gallery has {n_items}; add images")
    k = max(2, min(check_positive_int(n_neighbors, "n_neighbors"), n_items))
    batch = check_positive_int(batch, "batch")
    all_ids, all_dists = [], []
    for start in range(0, n_items, batch):
        block = embeddings[start:start + batch]
        values, ids = index.search(block, k - 1, exclude=torch.arange(start, start + len(block)))
        own = torch.arange(start, start + len(block), device=ids.device)  # results stay where the index computes
        distances = distances_of(index, values)
        all_ids.append(torch.cat([own[:, None], ids], dim=1))
        all_dists.append(torch.cat([torch.zeros_like(distances[:, :1]), distances], dim=1))
        if progress is not None:
            done = start + len(block)
            progress(done / n_items, f"{done:,} of {n_items:,} points")
    # One crossing to the CPU, for UMAP.
    return torch.cat(all_ids).cpu().numpy().astype(np.int64), torch.cat(all_dists).cpu().numpy().astype(np.float32)


def umap_from_knn(indices: np.ndarray, distances: np.ndarray, seed: int = 0, n_epochs: int = DEFAULT_EPOCHS,
                  min_dist: float = MIN_DIST) -> np.ndarray:
    """UMAP projection ``(n, 2)`` float32 of a precomputed kNN graph (``indices``/``distances`` ``(n, k)``,
    each row starting with the item itself)."""
    seed = check_positive_int(seed, "seed", minimum=0)
    n_epochs = check_positive_int(n_epochs, "n_epochs")
    n_items, k = indices.shape
    reducer = fitted_umap(indices, distances, seed, n_epochs, min_dist, "spectral" if n_items > k + 1 else "random")
    global _compiled
    _compiled = True
    return np.asarray(reducer.embedding_, dtype=np.float32)


def restored_reducer(indices: np.ndarray, distances: np.ndarray, layout: np.ndarray, seed: int = 0,
                     n_epochs: int = DEFAULT_EPOCHS, min_dist: float = MIN_DIST):
    """The fitted ``umap.UMAP`` of :func:`umap_from_knn` for a layout it made (``layout`` ``(n, 2)``,
    from the kNN graph ``indices``/``distances`` ``(n, k)`` with the same ``seed``, ``n_epochs`` and
    ``min_dist``), for :func:`transform_points`, without laying the graph out again.

    A layout cached on disk keeps its points, not umap-learn's reducer, and umap-learn has no way
    to make one from a layout. Its ``transform`` reads, of what a fit leaves, only the layout
    (``embedding_``) and the settings, never the training graph's layout steps; so the reducer
    is fitted for no epochs from ``layout`` and then given ``layout`` itself (a fit rescales its
    start) and the epochs the layout was made with, which ``transform`` takes a third of
    (tests/test_explorer.py checks that its positions equal those of the reducer that made the layout)."""
    layout = np.asarray(layout, dtype=np.float32)
    reducer = fitted_umap(indices, distances, check_positive_int(seed, "seed", minimum=0), 0, min_dist, layout)
    reducer.embedding_ = layout
    reducer.set_params(n_epochs=check_positive_int(n_epochs, "n_epochs"))
    return reducer


def transform_points(reducer, indices: np.ndarray, distances: np.ndarray) -> np.ndarray:
    """Positions ``(m, 2)`` float32 on ``reducer``'s layout (:func:`restored_reducer`) of ``m`` points
    outside it, by umap-learn's ``UMAP.transform``: each point's nearest laid-out items ``indices``
    ``(m, k)`` and its distances to them ``distances`` ``(m, k)`` under the layout's geometry
    (:func:`distances_of`), ``k`` at least the layout's ``n_neighbors``. Each point starts at the
    membership-weighted mean of its neighbours' positions and is then optimised against the fixed
    layout, as UMAP places a new point."""
    import scipy.sparse

    n_points, k = indices.shape
    if n_points == 0:
        return np.zeros((0, 2), dtype=np.float32)
    # Built from its parts, so a distance of 0 (a point equal to a laid-out one) stays an entry.
    rows = scipy.sparse.csr_matrix((np.asarray(distances, dtype=np.float32).ravel(),
                                    np.asarray(indices, dtype=np.int64).ravel(), np.arange(0, n_points * k + 1, k)),
                                   shape=(n_points, len(reducer.embedding_)))
    with warnings.catch_warnings():
        # umap warns that a precomputed matrix is taken as distances to the laid-out points: it is.
        warnings.simplefilter("ignore")
        return np.asarray(reducer.transform(rows), dtype=np.float32)


def fitted_umap(indices: np.ndarray, distances: np.ndarray, seed: int, n_epochs: int, min_dist: float, init):
    """umap-learn's reducer fitted to the kNN graph ``indices``/``distances`` ``(n, k)``: its
    ``"precomputed"`` metric takes the graph as it is, and lets ``transform`` take distances too."""
    require("umap", "explorer", "A UMAP projection")
    import scipy.sparse
    import umap  # imported here: it is slow to import and only the projection needs it

    n_items, k = indices.shape
    with warnings.catch_warnings():
        # umap warns that precomputed_knn without a search index cannot transform new points: with
        # the precomputed metric it can, from their distances (transform_points).
        warnings.simplefilter("ignore")
        reducer = umap.UMAP(n_neighbors=k, n_components=2, metric="precomputed", min_dist=min_dist,
                            random_state=seed, n_epochs=n_epochs, precomputed_knn=(indices, distances),
                            n_jobs=1, init=init)
        # The graph comes from precomputed_knn; the matrix only sizes the fit (an empty one is
        # symmetric with a zero diagonal, as umap checks).
        reducer.fit(scipy.sparse.csr_matrix((n_items, n_items), dtype=np.float32))
    return reducer


def layout_estimate(n_items: int, n_epochs: int = DEFAULT_EPOCHS) -> float:
    """Roughly how many seconds :func:`umap_from_knn` will take for ``n_items`` points on the reference
    machine, the kernels' compilation included when this process has not laid out a graph yet."""
    return n_items * LAYOUT_SECONDS_PER_POINT * n_epochs / DEFAULT_EPOCHS + (0.0 if _compiled else COMPILE_SECONDS)


# The share of a projection's progress bar its kNN graph fills; UMAP's layout, which reports nothing
# while it runs, fills the rest.
GRAPH_SHARE = 0.5


def project(index: Index, embeddings: torch.Tensor, n_neighbors: int = DEFAULT_NEIGHBOURS, seed: int = 0,
            n_epochs: int = DEFAULT_EPOCHS, progress: ProgressCallback | None = None) -> np.ndarray:
    """UMAP projection ``(n, 2)`` of ``embeddings`` ``(n, d)`` under the geometry of ``index`` (built
    over the same ``embeddings``). ``progress(fraction, text)`` names the step: the kNN graph as
    its batches finish, then the layout with an estimate of its time (:func:`layout_estimate`)."""
    n_items, k = len(embeddings), min(n_neighbors, len(embeddings))

    def graph_step(fraction: float, done: str) -> None:
        progress(GRAPH_SHARE * fraction, f"Step 1 of 2: each point's {k} nearest under this geometry ({done})")

    started = time.perf_counter()
    indices, distances = knn_graph(index, embeddings, n_neighbors, batch=512,
                                   progress=None if progress is None else graph_step)
    if progress is not None:
        progress(GRAPH_SHARE, f"Step 2 of 2: UMAP's layout of {n_items:,} points, about "
                              f"{layout_estimate(n_items, n_epochs):.0f} s (step 1 took "
                              f"{time.perf_counter() - started:.1f} s)")
    return umap_from_knn(indices, distances, seed=seed, n_epochs=n_epochs)


def warm_up() -> float:
    """Compile umap-learn's numba kernels with a tiny projection; returns the seconds it took.

    The first projection in a process spends :data:`COMPILE_SECONDS` or so compiling, whatever its
    size, and the kernels it compiles are the ones every later projection runs; this times that
    compile apart from a projection's own work. (The explorer does not call it at start-up:
    compiling holds Python's lock, and would stall every session's moves of p meanwhile.)"""
    start = time.perf_counter()
    rng = np.random.default_rng(0)
    n_items, k = 40, 5
    indices = np.column_stack([np.arange(n_items), rng.integers(0, n_items, (n_items, k - 1))]).astype(np.int64)
    distances = np.column_stack([np.zeros(n_items), rng.random((n_items, k - 1))]).astype(np.float32)
    umap_from_knn(indices, distances, n_epochs=2)
    return time.perf_counter() - start


def cached_projection(key: str, build: Callable[[], np.ndarray]) -> np.ndarray:
    """``build()``'s projection, stored under the anchordiv cache by ``key`` (which must name everything
    the projection depends on: data, encoder, anchors, model, weights, sample, seed) and reused."""
    from .cache import cache_dir, cached_array

    name = hashlib.sha256(key.encode()).hexdigest()[:24]
    return np.asarray(cached_array(cache_dir() / "projections" / f"{name}.npy", key, build))
