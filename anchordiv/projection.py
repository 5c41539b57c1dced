"""2-D projections of a gallery under any geometry: UMAP on the geometry's own kNN graph.

The kNN graph comes from the index's exact search (anchor divergence, cosine or ITI), and
umap-learn lays it out through ``precomputed_knn``, so UMAP never computes a metric of its own.
Divergences are not symmetric; UMAP symmetrises the fuzzy graph itself (its fuzzy union).
Projections can be cached on disk by a caller-supplied key (:func:`cached_projection`).
"""
from __future__ import annotations

import hashlib
import warnings
from typing import TYPE_CHECKING, Callable

import numpy as np
import torch

from ._validation import check_positive_int

if TYPE_CHECKING:
    from .search import Index

DEFAULT_NEIGHBOURS = 15
# UMAP's own default for graphs over 10,000 items. It uses 500 below that, which costs 2.5x as long
# at 10,000 points (14 s against 6 s on 2 cores) for a projection that is not visibly better.
DEFAULT_EPOCHS = 200


def sample_ids(n_items: int, limit: int, seed: int = 0) -> np.ndarray:
    """Sorted ids of at most ``limit`` of ``n_items`` items, a fixed random subset when smaller."""
    n_items = check_positive_int(n_items, "n_items", minimum=0)
    limit = check_positive_int(limit, "limit")
    seed = check_positive_int(seed, "seed", minimum=0)
    if n_items <= limit:
        return np.arange(n_items)
    return np.sort(np.random.default_rng(seed).choice(n_items, size=limit, replace=False))


def knn_graph(index: Index, embeddings: torch.Tensor, n_neighbors: int = DEFAULT_NEIGHBOURS,
              batch: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    """Each item's ``n_neighbors`` nearest items (itself first), from ``index`` built over
    ``embeddings`` ``(n, d)``: ``(indices (n, n_neighbors) int64, distances (n, n_neighbors) float32)``.

    Distances are the index's divergences (clamped at 0 against round-off) or ``1 - similarity``
    for similarity indexes, so that smaller is closer, as UMAP expects.
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
        distances = (1.0 - values) if index.higher_is_closer else values
        all_ids.append(torch.cat([own[:, None], ids], dim=1))
        all_dists.append(torch.cat([torch.zeros_like(distances[:, :1]), distances.clamp_min(0)], dim=1))
    # One crossing to the CPU, for UMAP.
    return torch.cat(all_ids).cpu().numpy().astype(np.int64), torch.cat(all_dists).cpu().numpy().astype(np.float32)


def umap_from_knn(indices: np.ndarray, distances: np.ndarray, seed: int = 0, n_epochs: int = DEFAULT_EPOCHS,
                  min_dist: float = 0.1) -> np.ndarray:
    """UMAP projection ``(n, 2)`` float32 of a precomputed kNN graph (``indices``/``distances`` ``(n, k)``,
    each row starting with the item itself)."""
    import umap  # imported here: it is slow to import and only the projection needs it

    seed = check_positive_int(seed, "seed", minimum=0)
    n_epochs = check_positive_int(n_epochs, "n_epochs")
    n_items, k = indices.shape
    with warnings.catch_warnings():
        # umap warns that precomputed_knn without a search index cannot transform new points; we never do.
        warnings.simplefilter("ignore")
        reducer = umap.UMAP(n_neighbors=k, n_components=2, metric="euclidean", min_dist=min_dist,
                            random_state=seed, n_epochs=n_epochs, precomputed_knn=(indices, distances, None),
                            n_jobs=1, init="spectral" if n_items > k + 1 else "random")
        points = reducer.fit_transform(np.zeros((n_items, 1), dtype=np.float32))
    return np.asarray(points, dtype=np.float32)


def project(index: Index, embeddings: torch.Tensor, n_neighbors: int = DEFAULT_NEIGHBOURS, seed: int = 0,
           n_epochs: int = DEFAULT_EPOCHS) -> np.ndarray:
    """UMAP projection ``(n, 2)`` of ``embeddings`` ``(n, d)`` under the geometry of ``index`` (built
    over the same ``embeddings``)."""
    indices, distances = knn_graph(index, embeddings, n_neighbors)
    return umap_from_knn(indices, distances, seed=seed, n_epochs=n_epochs)


def warm_up() -> float:
    """Compile umap-learn's numba kernels with a tiny projection; returns the seconds it took.

    The first projection in a process spends about 10 s compiling (2 cores), whatever its size, and the
    kernels it compiles are the ones every later projection runs: run this once in the background at
    start-up so that the first real projection costs only its own work."""
    import time

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
