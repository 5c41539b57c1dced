"""A new query at the sizes users bring (``anchordiv explorer-bench --scale``): the p path the player
needs before it can play, timed with the page's own call (:meth:`ExplorerGeometry.p_path
<anchordiv.explorer.geometry.ExplorerGeometry.p_path>`, its defaults: 101 steps, k = 10, the
calibrated weighting) over galleries in memory and over a float16 store, against one mat-vec pass
over the gallery as it is held and against reading its bytes at the memory bandwidth measured in the
same run.

How it differs from the page: the rows are seeded clustered unit vectors, and A and B are random
unit anchors (by default as many as the built-in world's 1,644 object names and 7 styles), not text
embeddings; the softmax model at scale 10 is the page's default. Torch runs one thread per
operation, as the explorer's server does (``ANCHORDIV_APP_THREADS``); a large pass is split among
the cores by :mod:`anchordiv.pass_pool`, as on the page.
"""
from __future__ import annotations

import logging
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import torch

from ..explorer.geometry import ExplorerGeometry, GeometrySpec
from ..pass_pool import host_cores, row_parts, run_parts
from ..store.reader import GalleryStore
from .scale import ScaleConfig, build_synthetic_store, reference_pass
from .search import clustered_unit_vectors

logger = logging.getLogger(__name__)

MEMORY_SIZES = (20_000, 100_000, 500_000)
STORE_ROWS = 1_000_000
STYLE_ANCHORS = 7
OBJECT_ANCHORS = 1_644
CENTRES = 64


@dataclass(frozen=True)
class NewQueryConfig:
    """``sizes`` galleries in memory and a float16 store of ``store_rows`` rows (0: none), all of
    dimension ``dim``; ``anchors`` in A (B has :data:`STYLE_ANCHORS`); ``queries`` new queries timed
    per gallery, and ``users`` more at once over the largest gallery in memory and over the store
    (0: none); the store built in ``store_dir`` (kept, and reused when it is already there) or a
    temporary folder."""
    sizes: tuple[int, ...] = MEMORY_SIZES
    store_rows: int = STORE_ROWS
    dim: int = 256
    anchors: int = OBJECT_ANCHORS
    queries: int = 5
    store_dir: str | None = None
    seed: int = 0
    users: int = 16


def memory_bandwidth(n_bytes: int, repeats: int = 5) -> tuple[float, str]:
    """Bytes per second at which this process reads ``n_bytes`` held in memory (a float32 sum, the
    best of ``repeats``), with one core and with every core (:func:`~anchordiv.pass_pool.run_parts`),
    whichever is faster, and which it was."""
    values = torch.ones(max(1, n_bytes // 4), dtype=torch.float32)
    parts = [(start, stop) for start, stop in _parts(values.shape[0], host_cores())]
    timings = {"one core": lambda: values.sum(),
               f"{len(parts)} cores": lambda: run_parts(lambda bounds: values[bounds[0]:bounds[1]].sum(), parts)}
    best = {name: _best_seconds(read, repeats) for name, read in timings.items()}
    name = min(best, key=best.get)
    return values.numel() * 4 / best[name], name


def _parts(n: int, count: int) -> list[tuple[int, int]]:
    bounds = [round(n * part / count) for part in range(count + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def _best_seconds(function: Callable[[], object], repeats: int) -> float:
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        timings.append(time.perf_counter() - start)
    return min(timings)


def _anchor_sets(config: NewQueryConfig, centres: torch.Tensor, generator: torch.Generator) -> list[torch.Tensor]:
    cpu = torch.device("cpu")
    return [clustered_unit_vectors(config.anchors, config.dim, centres, 1.0, generator, cpu),
            clustered_unit_vectors(STYLE_ANCHORS, config.dim, centres[:2], 0.3, generator, cpu)]


def _texts(anchor_sets: list[torch.Tensor]) -> list[list[str]]:
    return [[f"{name} {i}" for i in range(len(anchors))] for name, anchors in zip("AB", anchor_sets)]


def _time_paths(geometry: ExplorerGeometry, rows: Callable[[list[int]], torch.Tensor], n_rows: int,
                config: NewQueryConfig) -> dict:
    """The page's p path for ``config.queries`` new queries (gallery rows, each excluded from its own
    path), after one untimed: median and best seconds, and the share of steps the certificate covered."""
    picks = np.random.default_rng(config.seed + 1).choice(n_rows, config.queries + 1, replace=False).tolist()
    seconds, certified = [], []
    for number, item in enumerate(picks):
        query = rows([item])[0].numpy()
        start = time.perf_counter()
        path = geometry.p_path(query, 10, item, "calibrated")
        if number:
            seconds.append(time.perf_counter() - start)
            certified.append(float(path.certified.mean()))
    return {"path_s": statistics.median(seconds), "path_best_s": min(seconds),
            "certified": float(np.mean(certified))}


def _time_crowd(geometry: ExplorerGeometry, rows: Callable[[list[int]], torch.Tensor], n_rows: int,
                config: NewQueryConfig) -> dict:
    """``config.users`` people asking for a new query's path at the same moment (one thread each, as
    Streamlit runs each session's script): the wall time until the last path is done, and that
    against the same paths asked for one after another."""
    picks = np.random.default_rng(config.seed + 2).choice(n_rows, config.users, replace=False).tolist()
    queries = [(rows([item])[0].numpy(), item) for item in picks]
    start = time.perf_counter()
    for query, item in queries:
        geometry.p_path(query, 10, item, "calibrated")
    one_by_one = time.perf_counter() - start
    with ThreadPoolExecutor(max_workers=len(queries)) as sessions:
        start = time.perf_counter()
        list(sessions.map(lambda pair: geometry.p_path(pair[0], 10, pair[1], "calibrated"), queries))
        together = time.perf_counter() - start
    return {"users": len(queries), "crowd_s": together, "one_by_one_s": one_by_one}


def in_memory_figures(gallery: torch.Tensor, config: NewQueryConfig, anchor_sets: list[torch.Tensor]) -> dict:
    """The p path over ``gallery`` ``(G, d)`` held in memory, against one float32 mat-vec pass over the
    geometry's stored rows and against reading them at the memory bandwidth."""
    start = time.perf_counter()
    geometry = ExplorerGeometry(gallery, anchor_sets, _texts(anchor_sets), GeometrySpec(scale=10.0), device="cpu")
    figures = {"rows": len(gallery), "build_s": time.perf_counter() - start}
    held = geometry.index.gallery_eta
    vector = torch.nn.functional.normalize(torch.randn(config.dim), dim=0)
    figures["pass_s"] = _best_seconds(lambda: held @ vector, 5)
    figures["held_bytes"] = held.numel() * held.element_size()
    figures.update(_time_paths(geometry, lambda ids: gallery[ids], len(gallery), config))
    if config.users and len(gallery) == max(config.sizes):
        figures.update(_time_crowd(geometry, lambda ids: gallery[ids], len(gallery), config))
    figures["bandwidth"], figures["bandwidth_by"] = memory_bandwidth(figures["held_bytes"])
    figures["parts"] = len(row_parts(len(gallery), torch.device("cpu")))
    return figures


def store_figures(store: GalleryStore, config: NewQueryConfig, anchor_sets: list[torch.Tensor]) -> dict:
    """The p path over ``store``, against the store's float16 -> float32 mat-vec pass (the store
    benchmark's yardstick) and against reading the store's bytes at the memory bandwidth."""
    start = time.perf_counter()
    geometry = ExplorerGeometry.over_store(store, anchor_sets, _texts(anchor_sets), GeometrySpec(scale=10.0),
                                           device="cpu")
    figures = {"rows": len(store), "build_s": time.perf_counter() - start}
    scanner = geometry.index._engine.scanner
    figures["keeps_rows"] = scanner.keeps_rows
    figures["store_bytes"] = len(store) * store.dim * np.dtype(store.dtype).itemsize
    vector = torch.nn.functional.normalize(torch.randn(config.dim), dim=0)
    reference_pass(store, vector, scanner.block_rows)  # the files in the page cache, as a store in use
    figures["pass_s"] = min(reference_pass(store, vector, scanner.block_rows) for _ in range(2))
    figures.update(_time_paths(geometry, store.rows, len(store), config))
    if config.users:
        figures.update(_time_crowd(geometry, store.rows, len(store), config))
    figures["bandwidth"], figures["bandwidth_by"] = memory_bandwidth(figures["store_bytes"])
    figures["parts"] = min(len(row_parts(len(store), torch.device("cpu"))), len(store.shards))
    return figures


@contextmanager
def _store_folder(config: NewQueryConfig) -> Iterator[Path]:
    if config.store_dir:
        folder = Path(config.store_dir).expanduser()
        folder.mkdir(parents=True, exist_ok=True)
        yield folder
        return
    with tempfile.TemporaryDirectory(prefix="anchordiv-new-query-") as folder:
        yield Path(folder)


def _open_or_build_store(folder: Path, config: NewQueryConfig, centres: torch.Tensor,
                         generator: torch.Generator) -> GalleryStore:
    existing = folder / "store"
    if (existing / "manifest.json").is_file():
        store = GalleryStore.open(existing)
        if len(store) == config.store_rows and store.dim == config.dim:
            return store
        raise ValueError(f"{existing} holds {len(store):,} x {store.dim}, not {config.store_rows:,} x {config.dim}; "
                         "give another --store-dir")
    scale = ScaleConfig(gallery=config.store_rows, dim=config.dim, seed=config.seed)
    return build_synthetic_store(scale.validate(), folder, centres, generator)


def new_query_benchmark(config: NewQueryConfig) -> dict:
    """Every figure of the run: ``{"config", "threads", "cores", "memory": [per size], "store"}``,
    each figure logged at INFO as it is measured (:func:`figure_lines` gives the printed lines)."""
    torch.set_num_threads(1)  # as the explorer's server runs it
    generator = torch.Generator().manual_seed(config.seed)
    centres = torch.randn(CENTRES, config.dim, generator=generator)
    anchor_sets = _anchor_sets(config, centres, generator)
    figures: dict = {"config": config.__dict__.copy(), "threads": torch.get_num_threads(), "cores": host_cores(),
                     "memory": []}
    largest = max(config.sizes, default=0)
    rows = clustered_unit_vectors(largest, config.dim, centres, 0.7, generator, torch.device("cpu")) if largest else None
    for size in config.sizes:
        figures["memory"].append(in_memory_figures(rows[:size].clone(), config, anchor_sets))
        logger.info(memory_line(figures["memory"][-1], config.dim))
    del rows
    if config.store_rows:
        with _store_folder(config) as folder:
            store = _open_or_build_store(folder, config, centres, generator)
            figures["store"] = store_figures(store, config, anchor_sets)
            logger.info(store_line(figures["store"], config.dim))
    return figures


def _held(size: int) -> str:
    return f"{size / 2**30:.2f} GiB" if size >= 2**30 else f"{size / 2**20:.1f} MiB"


def _bandwidth(figures: dict, size: int) -> str:
    return (f"reading those {_held(size)} at {figures['bandwidth'] / 1e9:.1f} GB/s ({figures['bandwidth_by']}): "
            f"{size / figures['bandwidth'] * 1e3:.1f} ms")


def memory_line(figures: dict, dim: int) -> str:
    """One gallery in memory's figures as a printed line."""
    reference = figures["held_bytes"] / figures["bandwidth"]
    return (f"in memory, G = {figures['rows']:,} x {dim} float32: p path {figures['path_s'] * 1e3:.1f} ms (best "
            f"{figures['path_best_s'] * 1e3:.1f} ms, {figures['parts']} part(s), {figures['certified']:.0%} of steps "
            f"certified) = {figures['path_s'] / figures['pass_s']:.2f} x one mat-vec pass over the rows as held "
            f"({figures['pass_s'] * 1e3:.2f} ms, one core) = {figures['path_s'] / reference:.2f} x "
            f"{_bandwidth(figures, figures['held_bytes'])}")


def store_line(figures: dict, dim: int) -> str:
    """The store's figures as a printed line."""
    reference = figures["store_bytes"] / figures["bandwidth"]
    return (f"store, {figures['rows']:,} x {dim} float16 (rows {figures['keeps_rows']}): p path "
            f"{figures['path_s']:.3f} s (best {figures['path_best_s']:.3f} s, {figures['parts']} part(s), "
            f"{figures['certified']:.0%} of steps certified) = {figures['path_s'] / reference:.2f} x "
            f"{_bandwidth(figures, figures['store_bytes'])}; = {figures['path_s'] / figures['pass_s']:.2f} x one "
            f"float16 -> float32 mat-vec pass over the store's files ({figures['pass_s']:.3f} s)")


def crowd_line(figures: dict, where: str) -> str:
    """The crowd's figures over one gallery as a printed line."""
    return (f"{where}: {figures['users']} new queries at once, done in {figures['crowd_s']:.3f} s; one after another "
            f"{figures['one_by_one_s']:.3f} s ({figures['crowd_s'] / figures['one_by_one_s']:.2f} x)")


def figure_lines(figures: dict) -> list[str]:
    """The run's figures as the printed lines, one per gallery, and one per crowd."""
    dim = figures["config"]["dim"]
    lines = []
    for entry in figures["memory"]:
        lines.append(memory_line(entry, dim))
        if "crowd_s" in entry:
            lines.append(crowd_line(entry, f"in memory, G = {entry['rows']:,}"))
    if "store" in figures:
        lines.append(store_line(figures["store"], dim))
        if "crowd_s" in figures["store"]:
            lines.append(crowd_line(figures["store"], f"store, {figures['store']['rows']:,} rows"))
    return lines
