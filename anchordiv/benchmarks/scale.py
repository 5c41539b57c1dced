"""The store-scale benchmark (issue 15, ``anchordiv bench --synthetic``): a synthetic gallery on disk,
a sharded search over it and the certified ``p`` slider, with build times, memory and move times.

:func:`run_scale_benchmark` logs each figure at INFO as it is measured and returns them as a dict;
:func:`figure_lines` gives the same figures as the printed ``"name: value"`` lines.
"""
from __future__ import annotations

import logging
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import torch

from .._validation import check_positive_int
from ..models.base import BLOCK_ELEMENTS
from ..models.empirical import EmpiricalAnchors
from ..models.mixture import MixtureAnchors
from ..sharded import ENGINES, SCAN_BLOCK_ELEMENTS, ShardedAnchorIndex
from ..store.reader import GalleryStore
from .memory import PeakResidentMemory, available_memory, gib, resident_memory, scanner_memory
from .search import clustered_unit_vectors

logger = logging.getLogger(__name__)

SYNTHETIC_MODEL_SCALE = 100.0   # CLIP's logit scale, as the Table-4 benchmark uses
OBJECT_ANCHORS, STYLE_ANCHORS = 512, 8
CALIBRATION_ROWS = 20_000       # calibrating on a sample: the whole store at float32 would be 2 GB at 10^6 x 512
MIN_SYNTHETIC_ROWS = 1000       # calibration ranks a few hundred gallery queries against the rest
DEFAULT_GRID_POINTS = 33        # the slider's default grid: 31 interior points plus r = 0 and r = 1
def _gib_2(size: int) -> str:
    return f"{size / 2**30:.2f} GiB"


def _tasks(group: dict) -> str:
    return f", {group['workers']} Ray tasks" if "workers" in group else ""


# Each figure's name in the printed "name: value" lines (the JSON keeps the keys) and how its value
# reads, from the value, the run's settings and its group's other figures.
FIGURES: dict[str, tuple[str, Callable[[Any, dict, dict], str]]] = {
    "rss_at_start_bytes": ("resident memory at start (python, torch)", lambda value, config, group: _gib_2(value)),
    "store_build_seconds": ("store build", lambda value, config, group: (
        f"{value:.2f} s (generate {config['gallery']:,} x {config['dim']} rows + write float16 shards of "
        f"{config['shard_rows']:,})")),
    "store_bytes_on_disk": ("store size on disk", lambda value, config, group: f"{value / 2**20:,.1f} MiB"),
    "calibration_seconds": ("mixture calibration", lambda value, config, group: (
        f"{value:.2f} s (the mixture calibrated on {min(CALIBRATION_ROWS, config['gallery']):,} rows)")),
    "ray_start_seconds": ("ray start", lambda value, config, group: f"{value:.2f} s"),
    "index_build_seconds": ("index build", lambda value, config, group: (
        f"{value:.2f} s (kappa_k for every row{_tasks(group)})")),
    "rss_after_index_bytes": ("resident memory after building the index",
                              lambda value, config, group: _gib_2(value)),
    "reference_pass_seconds": ("exact mat-vec pass", lambda value, config, group: (
        f"{value:.3f} s (one exact float16 -> float32 mat-vec pass over the store, "
        f"median of {config['queries']})")),
    "new_query_pass_seconds": ("new-query pass", lambda value, config, group: (
        f"{value:.3f} s (slider construction, median of {config['queries']} queries)")),
    "new_query_vs_reference": ("new-query pass / mat-vec pass", lambda value, config, group: f"{value:.2f}x"),
    "slider_move_p50_ms": ("slider move p50", lambda value, config, group: f"{value:.3f} ms"),
    "slider_move_p95_ms": ("slider move p95", lambda value, config, group: (
        f"{value:.3f} ms (over {config['queries'] * config['moves']:,} moves, random p)")),
    "certified_rate": ("certified rate", lambda value, config, group: f"{value:.4f}"),
    "exact_search_seconds": ("exact search", lambda value, config, group: f"{value:.3f} s (one query, p = 0.5)"),
    "peak_rss_total_bytes_searching": ("peak resident memory searching",
                                       lambda value, config, group: _gib_2(value)),
    "peak_rss_anonymous_bytes_searching": ("  of which anonymous (arrays)",
                                           lambda value, config, group: _gib_2(value)),
    "peak_rss_file_bytes_searching": ("  of which file-backed (the store's mapped pages and shared libraries)",
                                      lambda value, config, group: _gib_2(value)),
    "actor_rss_total_bytes_after_search": ("Ray workers' resident memory after searching", lambda value, config, group: (
        " + ".join(f"{size / 2**30:.2f}" for size in value) + " GiB (each Ray worker process: python, torch, its "
        "shards' kappa)")),
}


@dataclass
class ScaleConfig:
    """The store-scale benchmark's settings: ``gallery`` synthetic rows of dimension ``dim`` in a
    float16 store of ``shard_rows`` rows per shard (in ``store_dir``, else a temporary folder),
    ``moves`` random ``p`` per slider, ``k`` results, ``queries`` new queries timed."""
    gallery: int
    dim: int = 512
    shard_rows: int = 65536
    moves: int = 1000
    k: int = 10
    queries: int = 3
    store_dir: str | None = None
    seed: int = 0
    engines: tuple[str, ...] = ("local", "ray")
    address: str | None = None
    workers: int | None = None

    def validate(self, label: Callable[[str], str] = str) -> "ScaleConfig":
        """Refuse sizes the run cannot honour, and ones that would not fit in memory or on disk."""
        for name in ("gallery", "dim", "shard_rows", "moves", "k", "queries"):
            setattr(self, name, check_positive_int(getattr(self, name), label(name)))
        self.engines = tuple(dict.fromkeys(self.engines))
        if not self.engines or not set(self.engines) <= set(ENGINES):
            raise ValueError(f"{label('engines')} must name engines from {ENGINES}; got {self.engines!r}.")
        if self.workers is not None:
            self.workers = check_positive_int(self.workers, label("workers"))
        if self.gallery < max(self.k + 1, MIN_SYNTHETIC_ROWS):
            raise ValueError(f"{label('gallery')}={self.gallery} is too small: give at least "
                             f"{max(self.k + 1, MIN_SYNTHETIC_ROWS)} rows.")
        self._check_room(label)
        return self

    def memory_estimate(self) -> dict[str, int]:
        """Bytes the run holds at its peak, by part: one generated block (float32 and its float16
        copy), one float32 shard being written, the index's per-item terms, one search block
        (float16 read, float32 rows and eta, float64 grid scores), and the calibration sample."""
        g, d, rows = self.gallery, self.dim, min(self.shard_rows, self.gallery)
        block = min(SCAN_BLOCK_ELEMENTS // d, g)
        return {
            "generation block": block * d * (4 * 3 + 2),
            "store writing": 3 * rows * d * 4,
            "index terms": g * 3 * 4,
            "search block": block * d * (2 + 4 * 3) + 4 * block * (DEFAULT_GRID_POINTS * 8),
            "calibration sample": 3 * min(CALIBRATION_ROWS, g) * d * 4,
            "torch and the interpreter": 400 * 2**20,
        }

    def disk_estimate(self) -> int:
        """Bytes written: the generated float16 rows and the float16 store (both at once, briefly)."""
        return 2 * self.gallery * self.dim * 2

    def _check_room(self, label: Callable[[str], str]) -> None:
        parts = self.memory_estimate()
        available = available_memory(torch.device("cpu"))
        if sum(parts.values()) > available:
            detail = ", ".join(f"{name} {gib(size)}" for name, size in parts.items())
            raise ValueError(f"this benchmark needs about {gib(sum(parts.values()))} of memory ({detail}) but the "
                             f"host has {gib(available)} available; lower {label('gallery')} or {label('dim')}.")
        folder = Path(self.store_dir).expanduser() if self.store_dir else Path(tempfile.gettempdir())
        while not folder.exists():
            folder = folder.parent
        free = shutil.disk_usage(folder).free
        if self.disk_estimate() > free:
            raise ValueError(f"this benchmark writes about {gib(self.disk_estimate())} to {folder} but only "
                             f"{gib(free)} is free there; lower {label('gallery')} or give {label('store_dir')} "
                             "on a larger disk.")


def synthetic_blocks(config: ScaleConfig, centres: torch.Tensor,
                     generator: torch.Generator) -> Iterator[np.ndarray]:
    """The gallery's float16 unit rows, ``(n, d)`` at a time (about 128 MB of float32 per block),
    so the generator never holds the gallery."""
    block = max(1, BLOCK_ELEMENTS // config.dim)
    for start in range(0, config.gallery, block):
        rows = min(block, config.gallery - start)
        vectors = clustered_unit_vectors(rows, config.dim, centres, 0.6, generator, torch.device("cpu"))
        yield vectors.numpy().astype(np.float16)


def build_synthetic_store(config: ScaleConfig, folder: Path, centres: torch.Tensor,
                          generator: torch.Generator) -> GalleryStore:
    """Generated rows go to a float16 ``.npy`` memory map on disk, block by block, and the store is
    written from that map shard by shard; the map is deleted afterwards."""
    source_path = folder / "generated.npy"
    source = np.lib.format.open_memmap(source_path, mode="w+", dtype=np.float16, shape=(config.gallery, config.dim))
    start = 0
    for rows in synthetic_blocks(config, centres, generator):
        source[start:start + rows.shape[0]] = rows
        start += rows.shape[0]
    source.flush()
    store = GalleryStore.from_array(source, folder / "store", shard_rows=config.shard_rows, dtype="float16")
    del source
    source_path.unlink()
    return store


def synthetic_mixture(config: ScaleConfig, store: GalleryStore, centres: torch.Tensor,
                      generator: torch.Generator) -> MixtureAnchors:
    """Two anchor sets of different tightness, 512 "object" anchors spread over every centre and 8
    "style" anchors tight around two, as a calibrated :class:`MixtureAnchors` (calibrated on
    ``CALIBRATION_ROWS`` rows of the store, so ``p`` means the same share of the top-``k`` at any
    scale)."""
    objects = clustered_unit_vectors(OBJECT_ANCHORS, config.dim, centres, 1.0, generator, torch.device("cpu"))
    styles = clustered_unit_vectors(STYLE_ANCHORS, config.dim, centres[:2], 0.2, generator, torch.device("cpu"))
    mixture = MixtureAnchors([EmpiricalAnchors(scale=SYNTHETIC_MODEL_SCALE).fit(objects),
                              EmpiricalAnchors(scale=SYNTHETIC_MODEL_SCALE).fit(styles)], [0.5, 0.5])
    picks = np.random.default_rng(config.seed).choice(len(store), min(CALIBRATION_ROWS, len(store)), replace=False)
    return mixture.with_calibration(store.rows(np.sort(picks)))


def reference_pass(store: GalleryStore, vector: torch.Tensor, rows: int) -> float:
    """Seconds for one exact matrix-vector pass over the store: every block float16 -> float32 and
    one ``(n, d) @ (d,)``. The yardstick of the slider's new-query pass."""
    start = time.perf_counter()
    for _, block in store.iter_blocks(rows):
        block @ vector
    return time.perf_counter() - start


def run_scale_benchmark(config: ScaleConfig) -> dict:
    """Build a synthetic float16 store, a :class:`ShardedAnchorIndex` over a calibrated two-set
    mixture, and time the reference pass, the slider's new-query pass, its moves and one exact
    search, for each engine of ``config``; returns the figures as a dict (``figures[engine]`` for
    each engine's), each also logged at INFO as it is measured (:func:`figure_lines` prints them)."""
    config.validate()
    if config.store_dir:
        folder = Path(config.store_dir).expanduser()
        folder.mkdir(parents=True, exist_ok=True)
        return _run_scale(config, folder)
    with tempfile.TemporaryDirectory(prefix="anchordiv-bench-") as folder:
        return _run_scale(config, Path(folder))


def figure_lines(figures: dict) -> list[str]:
    """The figures of :func:`run_scale_benchmark` as ``"name: value (what)"`` lines, in the order they
    were measured; an engine's lines start ``[engine]``."""
    config = figures["config"]
    lines = [figure_line(name, value, config, figures) for name, value in figures.items() if name in FIGURES]
    for engine in config["engines"]:
        lines += [figure_line(name, value, config, figures[engine], engine)
                  for name, value in figures[engine].items() if name in FIGURES]
    return lines


def figure_line(name: str, value: Any, config: dict, group: dict, engine: str | None = None) -> str:
    """One figure's line: ``config`` the run's settings (as a dict), ``group`` the figures beside it."""
    label, text = FIGURES[name]
    return f"{'' if engine is None else f'[{engine}] '}{label}: {text(value, config, group)}"


class _Figures:
    """Where the run's figures go: into ``group`` (the run's dict or an engine's), and to the log."""

    def __init__(self, config: dict, group: dict, engine: str | None = None):
        self.config, self.group, self.engine = config, group, engine

    def __call__(self, name: str, value: Any) -> None:
        self.group[name] = value
        logger.info(figure_line(name, value, self.config, self.group, self.engine))


def _run_scale(config: ScaleConfig, folder: Path) -> dict:
    generator = torch.Generator().manual_seed(config.seed)
    centres = torch.randn(64, config.dim, generator=generator)
    figures: dict = {"config": asdict(config), "device": "cpu", "threads": torch.get_num_threads(),
                     "parametrisation": "calibrated"}
    report = _Figures(figures["config"], figures)
    report("rss_at_start_bytes", resident_memory()["total"])
    started = time.perf_counter()
    store = build_synthetic_store(config, folder, centres, generator)
    report("store_build_seconds", time.perf_counter() - started)
    report("store_bytes_on_disk", sum(path.stat().st_size for path in (folder / "store").iterdir()))
    started = time.perf_counter()
    mixture = synthetic_mixture(config, store, centres, generator)
    report("calibration_seconds", time.perf_counter() - started)
    for engine in config.engines:
        figures[engine] = {}
        _bench_engine(config, store, mixture, engine, _Figures(figures["config"], figures[engine], engine))
    return figures


def _bench_engine(config: ScaleConfig, store: GalleryStore, mixture: MixtureAnchors, engine: str,
                  report: _Figures) -> None:
    """Index, slider and search figures for one engine (the Ray instance started first, and timed)."""
    if engine == "ray":
        from ..ray_runtime import connect

        started = time.perf_counter()
        connect(config.address)
        report("ray_start_seconds", time.perf_counter() - started)
    started = time.perf_counter()
    options = {"address": config.address, "workers": config.workers} if engine == "ray" else {}
    index = ShardedAnchorIndex(mixture, store, device="cpu", engine=engine, **options)
    seconds = time.perf_counter() - started
    if engine == "ray":
        report.group["workers"] = index.workers
    report("index_build_seconds", seconds)
    report("rss_after_index_bytes", resident_memory()["total"])
    _time_search(config, store, index, report)
    if engine == "ray":
        report("actor_rss_total_bytes_after_search", [memory["total"] for memory in index.map_scanners(scanner_memory)])


def _time_search(config: ScaleConfig, store: GalleryStore, index: ShardedAnchorIndex, report: _Figures) -> None:
    rng = np.random.default_rng(config.seed + 1)
    query_ids = rng.choice(len(store), config.queries, replace=False)
    vector = torch.nn.functional.normalize(torch.randn(config.dim), dim=0)
    rows = SCAN_BLOCK_ELEMENTS // config.dim
    reference_pass(store, vector, rows)  # warm the page cache, as a store in use would be
    with PeakResidentMemory() as memory:
        reference = float(np.median([reference_pass(store, vector, rows) for _ in query_ids]))
        passes, move_seconds, certified = [], [], []
        for query_id in query_ids:
            query = store.rows([int(query_id)])[0].numpy()
            started = time.perf_counter()
            slider = index.slider(query, k=config.k, exclude=int(query_id))
            passes.append(time.perf_counter() - started)
            for p in rng.uniform(0.0, 1.0, config.moves):
                started = time.perf_counter()
                certified.append(slider.at(float(p))[2])
                move_seconds.append(time.perf_counter() - started)
        at_half = index.with_model(index.model.with_weights([0.5, 0.5]))
        started = time.perf_counter()
        at_half.search(query[None, :], config.k, exclude=[int(query_id)])
        search_seconds = time.perf_counter() - started
    new_query = float(np.median(passes))
    report("reference_pass_seconds", reference)
    report("new_query_pass_seconds", new_query)
    report("new_query_vs_reference", new_query / reference)
    p50, p95 = np.percentile(move_seconds, [50, 95]) * 1e3
    report("slider_move_p50_ms", float(p50))
    report("slider_move_p95_ms", float(p95))
    report("certified_rate", float(np.mean(certified)))
    report("exact_search_seconds", search_seconds)
    for key in ("total", "anonymous", "file"):
        if key in memory.peak:
            report(f"peak_rss_{key}_bytes_searching", memory.peak[key])
