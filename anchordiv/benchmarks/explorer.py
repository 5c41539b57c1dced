"""Speed: :func:`benchmark` times the explorer's interactive steps
(``python -m anchordiv explorer-bench``), each figure logged at INFO as it is measured."""
from __future__ import annotations

import logging
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd
import torch
from PIL import Image

from .. import projection
from ..explorer.geometry import ExplorerGeometry, GeometrySpec
from ..explorer.neighbours import search_one
from ..explorer.maps import geometry_projection, projection_key
from ..gallery import Gallery
from ..slider import DEFAULT_PATH_STEPS

logger = logging.getLogger(__name__)


@contextmanager
def private_cache() -> Iterator[Path]:
    """An empty cache folder (``ANCHORDIV_CACHE``) for the time of a measurement, so that a first
    layout is a first layout and the user's cache stays untouched; the setting restored after."""
    saved = os.environ.get("ANCHORDIV_CACHE")
    with tempfile.TemporaryDirectory() as folder:
        os.environ["ANCHORDIV_CACHE"] = folder
        try:
            yield Path(folder)
        finally:
            if saved is None:
                os.environ.pop("ANCHORDIV_CACHE", None)
            else:
                os.environ["ANCHORDIV_CACHE"] = saved


def benchmark(gallery_size: int = 20_000, n_anchors: int = 4_000, dim: int = 256, k: int = 10,
              umap_points: int = 10_000, repeats: int = 20, seed: int = 0) -> dict[str, float]:
    """Time the explorer's interactive steps on synthetic unit vectors (CPU, one process).

    ``gallery_size`` G images, A = ``n_anchors`` object anchors and B = 7 style anchors, softmax
    mixture. Reports seconds to index the gallery, the median milliseconds to re-rank after moving
    ``p`` and for a new query, the median milliseconds of a new query's p path (every slider
    position) against one search pass, seconds for UMAP's one-off numba compile, and seconds for a
    ``umap_points`` UMAP projection after that compile and when cached on disk.
    """
    import statistics
    import time

    generator = torch.Generator().manual_seed(seed)

    def unit(n: int) -> torch.Tensor:
        return torch.nn.functional.normalize(torch.randn(n, dim, generator=generator), dim=1)

    centres = unit(64)
    gallery = torch.nn.functional.normalize(
        centres[torch.randint(0, 64, (gallery_size,), generator=generator)] + 0.7 * unit(gallery_size), dim=1)
    texts_a, texts_b = [f"object {i}" for i in range(n_anchors)], [f"style {i}" for i in range(7)]
    labels = pd.DataFrame({"name": [f"item {i % 500}" for i in range(gallery_size)]})
    view = Gallery(embeddings=gallery, labels=labels, load=lambda i: Image.new("RGB", (8, 8)), object_column="name",
                   name_column="name", style_column=None, key=f"bench-{seed}", description="synthetic")
    results: dict[str, float] = {}

    start = time.perf_counter()
    geometry = ExplorerGeometry(gallery, [unit(n_anchors), unit(7)], [texts_a, texts_b], GeometrySpec(scale=10.0))
    results["index_s"] = time.perf_counter() - start
    logger.info(f"index the gallery (fit A and B, kappa_k of G = {gallery_size:,} items, N = {n_anchors:,} + 7 anchors): "
        f"{results['index_s']:.2f} s")

    query = gallery[0]
    timings = []
    for p in np.linspace(0.02, 0.98, repeats):
        start = time.perf_counter()
        search_one(geometry.index_at(float(p)), query, k, exclude=0)
        timings.append(time.perf_counter() - start)
    results["move_p_ms"] = 1000 * statistics.median(timings)
    logger.info(f"move p and re-rank (with_model: re-mix, top-{k}): median {results['move_p_ms']:.1f} ms "
        f"(max {1000 * max(timings):.1f} ms) over {repeats}")

    index = geometry.index_at(0.5)
    search_one(index, query, k)
    timings = []
    for item in torch.randint(0, gallery_size, (repeats,), generator=generator).tolist():
        start = time.perf_counter()
        search_one(index, gallery[item], k, exclude=item)
        timings.append(time.perf_counter() - start)
    results["new_query_ms"] = 1000 * statistics.median(timings)
    logger.info(f"new query (grad kappa over N anchors + one pass over G): median {results['new_query_ms']:.1f} ms "
        f"(max {1000 * max(timings):.1f} ms) over {repeats}")

    # The p path (every slider position at once, for a new query) against one search pass at one p.
    path_timings, search_timings = [], []
    for item in torch.randint(0, gallery_size, (repeats,), generator=generator).tolist():
        start = time.perf_counter()
        geometry.p_path(gallery[item].numpy(), k, item, "calibrated")
        path_timings.append(time.perf_counter() - start)
        start = time.perf_counter()
        search_one(geometry.index_at(0.5), gallery[item], k, exclude=item)
        search_timings.append(time.perf_counter() - start)
    results["p_path_ms"] = 1000 * statistics.median(path_timings)
    results["search_pass_ms"] = 1000 * statistics.median(search_timings)
    results["p_path_over_search"] = results["p_path_ms"] / results["search_pass_ms"]
    logger.info(f"p path of a new query ({DEFAULT_PATH_STEPS} slider positions, exact): median "
        f"{results['p_path_ms']:.1f} ms; one search pass at one p: {results['search_pass_ms']:.1f} ms; "
        f"path / search {results['p_path_over_search']:.2f} over {repeats} queries")

    results["umap_compile_s"] = projection.warm_up()
    logger.info(f"UMAP's numba compile (once per process, in the first projection a person asks for): "
        f"{results['umap_compile_s']:.1f} s")
    with private_cache():
        key = projection_key("bench", seed, gallery_size, n_anchors, dim)
        start = time.perf_counter()
        geometry_projection(view, "anchor", geometry, 0.5, max_points=umap_points, cache_key=key)
        results["umap_s"] = time.perf_counter() - start
        start = time.perf_counter()
        geometry_projection(view, "anchor", geometry, 0.5, max_points=umap_points, cache_key=key)
        results["umap_cached_s"] = time.perf_counter() - start
    logger.info(f"UMAP of {min(umap_points, gallery_size):,} points (kNN graph + {projection.DEFAULT_EPOCHS} epochs): "
        f"{results['umap_s']:.1f} s after the compile ({results['umap_s'] + results['umap_compile_s']:.1f} s "
        f"when nothing compiled it beforehand); "
        f"cached on disk: {results['umap_cached_s']:.2f} s (in the app's memory cache: instant)")
    return results
