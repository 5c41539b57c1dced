"""Runtime benchmark in the shape of the paper's Table 4 (docs/design.md §5).

Each method's time covers fit + gallery preprocessing + retrieval of the top ``k`` for every
query, timed after warm-up runs as the best of ``repeats`` runs. Beside the seconds it reports the
ratio to cosine and to the method's FLOP-bound time: the FLOPs of its dominant products divided
by the machine's matmul throughput, measured in the same run with torch on the same device
(float32 for retrieval, float64 for the GMM's EM, which fits in float64).
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import torch

from ._validation import check_positive_int, check_scale
from .device import resolve_device
from .models import EmpiricalAnchors, MixtureAnchors, anchor_model_kind
from .models.base import BLOCK_ELEMENTS
from .models.em import SCATTER_BLOCK_ELEMENTS
from .search import AnchorIndex, CosineIndex
from .sharded import ENGINES, SCAN_BLOCK_ELEMENTS, ShardedAnchorIndex
from .store import GalleryStore

METHODS = ("cosine", "softmax", "gaussian", "gmm", "naive")
# BenchConfig's integer fields and their smallest allowed values.
INTEGER_FIELDS = {"queries": 1, "gallery": 1, "dim": 1, "k": 1, "repeats": 1, "gmm_components": 1, "naive_queries": 1,
                  "warmup": 0, "naive_max_anchors": 0, "gmm_max_anchors": 0, "seed": 0}


@dataclass
class BenchConfig:
    queries: int = 2000
    gallery: int = 10000
    dim: int = 512
    anchors: tuple[int, ...] = (1024, 4096, 16384)
    k: int = 10
    scale: float = 100.0
    gmm_components: int = 4
    repeats: int = 3
    warmup: int = 1
    methods: tuple[str, ...] = METHODS
    naive_max_anchors: int = 4096
    naive_queries: int = 100
    gmm_max_anchors: int = 16384
    device: str | None = None
    seed: int = 0

    def validate(self, label: Callable[[str], str] = str) -> "BenchConfig":
        """Refuse settings the run cannot honour, and sizes that would not fit in memory (see
        :meth:`memory_estimate`), before anything is allocated or timed. ``label`` turns a field
        name into what the caller calls it in messages (the command line passes ``--queries``
        for ``queries``). Integer fields given as numpy integers are stored as Python ints."""
        for name, minimum in INTEGER_FIELDS.items():
            setattr(self, name, check_positive_int(getattr(self, name), label(name), minimum=minimum))
        self.anchors = self._anchor_counts(label)
        if self.k > self.gallery:
            raise ValueError(f"{label('k')}={self.k} must be an integer from 1 to {self.gallery} (the gallery size, "
                             f"{label('gallery')}); lower {label('k')}.")
        methods = (self.methods,) if isinstance(self.methods, str) else tuple(self.methods)
        unknown = set(methods) - set(METHODS)
        if unknown or not methods:
            raise ValueError(f"{label('methods')} has unknown or no methods {sorted(unknown)}; "
                             f"choose from {list(METHODS)}.")
        self.methods = methods
        try:
            check_scale(self.scale)
        except ValueError as error:
            raise ValueError(f"{label('scale')}: {error}") from error
        self._check_memory(label)
        return self

    def _anchor_counts(self, label: Callable[[str], str]) -> tuple[int, ...]:
        counts = (self.anchors,) if isinstance(self.anchors, (int, np.integer)) else tuple(self.anchors)
        if not counts:
            raise ValueError(f"{label('anchors')} must list at least one anchor count N >= 2; got none.")
        return tuple(check_positive_int(n, f"each of {label('anchors')}", minimum=2) for n in counts)

    def memory_estimate(self) -> dict[str, int]:
        """Bytes the run needs at its peak, by part: the data (with its generation's copies), the
        matmul probes, the gallery terms, the blocked score matrices, and the GMM's EM and the
        naive method's ``(G, N)`` arrays at the largest anchor count each runs at."""
        q, g, d, m = self.queries, self.gallery, self.dim, self.gmm_components
        largest = max(self.anchors)
        parts = {
            "queries and gallery": 3 * (q + g) * d * 4,
            "anchors": 3 * largest * d * 4,
            "gallery terms": 3 * g * d * 4,
            "matmul probes": (q * d + d * g + q * g) * 4 + 3 * 2048 * 2048 * 8,
            "blocked score matrices": 4 * BLOCK_ELEMENTS * 8,
        }
        gmm = [n for n in self.anchors if n <= self.gmm_max_anchors]
        if "gmm" in self.methods and gmm:
            n = max(gmm)  # EM's responsibilities and X @ prec_chol, its covariances, and its matmul probe
            parts["GMM EM"] = (4 * n * m * d + 4 * m * d * d + n * d + SCATTER_BLOCK_ELEMENTS) * 8
        naive = [n for n in self.anchors if n <= self.naive_max_anchors]
        if "naive" in self.methods and naive:
            n, rows = max(naive), min(q, self.naive_queries)
            parts["naive arrays"] = (3 * g * n + 2 * rows * n + 3 * max(BLOCK_ELEMENTS, g * n)) * 4
        return parts

    def _check_memory(self, label: Callable[[str], str]) -> None:
        parts = self.memory_estimate()
        device = resolve_device(self.device, label("device"))
        available = available_memory(device)
        if sum(parts.values()) > available:
            detail = ", ".join(f"{name} {_gib(size)}" for name, size in parts.items())
            sizes = ", ".join(label(name) for name in ("queries", "gallery", "dim", "anchors"))
            raise ValueError(
                f"this benchmark needs about {_gib(sum(parts.values()))} of memory ({detail}) but {device} has "
                f"{_gib(available)} available; lower {sizes}, or {label('naive_max_anchors')} / "
                f"{label('gmm_max_anchors')} to skip the naive method and the GMM at large N.")

    @classmethod
    def paper(cls) -> "BenchConfig":
        """Table 4's size: 10,000 queries, 50,000 gallery, N = 2^10 ... 2^17 (meant for a GPU)."""
        return cls(queries=10000, gallery=50000, anchors=(2**10, 2**12, 2**14, 2**16, 2**17),
                   repeats=10, warmup=3, naive_queries=200, gmm_max_anchors=2**14)


def available_memory(device: torch.device) -> int:
    """Bytes free for tensors on ``device``: the GPU's free memory, else the host's available
    memory (``MemAvailable`` from ``/proc/meminfo``, or free pages from ``os.sysconf``)."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


def _gib(size: int) -> str:
    return f"{size / 2**30:,.1f} GiB"


@dataclass
class BenchRow:
    method: str
    anchors: int
    seconds: float
    vs_cosine: float
    gflop: float
    vs_flop_bound: float  # against the square-matmul peak
    vs_shape_bound: float  # against matmuls of the method's own shapes (search: inner d; EM: (N, d) @ (d, M d))
    note: str = ""


def matmul_throughput(device: torch.device, dtype: torch.dtype = torch.float32,
                      shape: tuple[int, int, int] = (2048, 2048, 2048), repeats: int = 5) -> float:
    """Best observed FLOP/s of an ``(m, k) @ (k, n)`` torch matmul on ``device``."""
    m, k, n = shape
    a = torch.randn(m, k, device=device, dtype=dtype)
    b = torch.randn(k, n, device=device, dtype=dtype)
    run = lambda: _synchronised(device, lambda: a @ b)  # noqa: E731
    run()
    best = min(_seconds(run) for _ in range(repeats))
    return 2.0 * m * k * n / best


def _synchronised(device: torch.device, function: Callable[[], object]) -> object:
    result = function()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return result


def _seconds(function: Callable[[], object]) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def clustered_unit_vectors(n: int, dim: int, centres: torch.Tensor, spread: float,
                           generator: torch.Generator, device: torch.device) -> torch.Tensor:
    """``n`` unit vectors scattered around random centres: CLIP-like clumps for EM to find."""
    picks = torch.randint(0, centres.shape[0], (n,), generator=generator)
    points = centres[picks] + spread * torch.randn(n, dim, generator=generator)
    return torch.nn.functional.normalize(points, dim=1).to(device)


def naive_softmax_search(anchors: torch.Tensor, gallery: torch.Tensor, queries: torch.Tensor,
                         scale: float, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The reference the reduction replaces: explicit tilted probabilities and, per query block,
    the ``(Q_b, G, N)`` array ``p_x (log p_x - log p_y)`` summed over the anchors."""
    log_p_gallery = torch.log_softmax(scale * gallery @ anchors.T, dim=1)
    log_p_queries = torch.log_softmax(scale * queries @ anchors.T, dim=1)
    rows = max(1, 2**25 // (gallery.shape[0] * anchors.shape[0]))
    values, ids = [], []
    for start in range(0, queries.shape[0], rows):
        log_p_x = log_p_queries[start:start + rows, None, :]
        kl = (log_p_x.exp() * (log_p_x - log_p_gallery[None])).sum(dim=2)
        top = torch.topk(kl, k, dim=1, largest=False)
        values.append(top.values)
        ids.append(top.indices)
    return torch.cat(values), torch.cat(ids)


def method_flops(method: str, q: int, g: int, n: int, d: int, m: int, em_iterations: int) -> tuple[float, float]:
    """(float32 FLOPs, float64 FLOPs) of a method's dominant products."""
    search = 2.0 * q * g * d
    if method == "cosine":
        return search, 0.0
    if method == "softmax":
        return 2.0 * g * n * d + 4.0 * q * n * d + search, 0.0
    if method == "gaussian":
        return 2.0 * n * d * d + 2.0 * (g + q) * d * d + search, 0.0
    if method == "gmm":
        # Per component: each E-step is X @ prec_chol (2 N d^2) plus a Cholesky factor and its
        # triangular inverse (4/3 d^3); each M-step a weighted scatter (2 N d^2). The k-means
        # start adds one M-step.
        em = m * (2.0 * n * d * d * (2 * em_iterations + 1) + em_iterations * 4.0 * d**3 / 3)
        return 2.0 * (g + q) * m * d * d + search, em
    raise ValueError(method)


def run_benchmark(config: BenchConfig, log: Callable[[str], None] = lambda _: None) -> dict:
    """Run every method at every anchor count; returns ``{"config", "machine", "rows"}``."""
    config.validate()
    device = resolve_device(config.device)
    generator = torch.Generator().manual_seed(config.seed)
    centres = torch.randn(64, config.dim, generator=generator)
    queries = clustered_unit_vectors(config.queries, config.dim, centres, 0.6, generator, device)
    gallery = clustered_unit_vectors(config.gallery, config.dim, centres, 0.6, generator, device)
    rate32 = matmul_throughput(device)
    rate64 = matmul_throughput(device, torch.float64)
    # The products here all have inner dimension d; on a CPU that shape runs below the square peak.
    rate_shape = matmul_throughput(device, shape=(config.queries, config.dim, config.gallery))
    machine = {"device": str(device), "threads": torch.get_num_threads(), "gflops_float32": rate32 / 1e9,
               "gflops_float64": rate64 / 1e9, "gflops_float32_inner_d": rate_shape / 1e9}
    log(f"matmul throughput on {device}: {rate32 / 1e9:.1f} GFLOP/s float32 (2048^3, the peak), "
        f"{rate_shape / 1e9:.1f} GFLOP/s float32 at ({config.queries} x {config.dim}) @ ({config.dim} x "
        f"{config.gallery}), {rate64 / 1e9:.1f} GFLOP/s float64 (EM)")

    def timed(function: Callable[[], object]) -> float:
        for _ in range(config.warmup):
            _synchronised(device, function)
        return min(_seconds(lambda: _synchronised(device, function)) for _ in range(config.repeats))

    em_rates: dict[int, float] = {}

    def em_shape_rate(n_anchors: int) -> float:
        """float64 FLOP/s of the EM's E-step product, (N, d) @ (d, M d), measured once per N."""
        if n_anchors not in em_rates:
            shape = (n_anchors, config.dim, config.gmm_components * config.dim)
            em_rates[n_anchors] = matmul_throughput(device, torch.float64, shape=shape)
            machine[f"gflops_float64_em_N{n_anchors}"] = em_rates[n_anchors] / 1e9
            log(f"  float64 matmul at the EM's shape for N={n_anchors}: {em_rates[n_anchors] / 1e9:.1f} GFLOP/s")
        return em_rates[n_anchors]

    rows: list[BenchRow] = []
    cosine_seconds = timed(lambda: CosineIndex(gallery, device=device).search(queries, config.k))
    for n_anchors in config.anchors:
        anchors = clustered_unit_vectors(n_anchors, config.dim, centres, 1.0, generator, device)
        q, g, d, m = config.queries, config.gallery, config.dim, config.gmm_components
        em_iterations = []

        def anchor_search(kind: str, **params: object) -> Callable[[], object]:
            def run() -> object:
                model, _ = anchor_model_kind(kind).fit(anchors, config.scale, **params)
                em_iterations.append(getattr(model, "n_iter_", 0))
                return AnchorIndex(model, gallery, device=device).search(queries, config.k)
            return run

        pipelines = {
            "cosine": None,
            "softmax": anchor_search("softmax"),
            "gaussian": anchor_search("gaussian"),
            "gmm": anchor_search("gmm", n_components=config.gmm_components),
        }
        for method in config.methods:
            note = ""
            if method == "cosine":
                seconds = cosine_seconds
            elif method == "naive":
                if n_anchors > config.naive_max_anchors:
                    continue
                seconds, note = _time_naive(config, anchors, gallery, queries, timed)
            elif method == "gmm" and n_anchors > config.gmm_max_anchors:
                continue
            else:
                em_iterations.clear()
                seconds = timed(pipelines[method])
                if method == "gmm":
                    note = f"EM iterations {min(em_iterations)}-{max(em_iterations)}"
            iters = max(em_iterations) if method == "gmm" and em_iterations else 0
            flops32, flops64 = method_flops(method if method != "naive" else "softmax", q, g, n_anchors, d, m, iters)
            if method == "naive":
                flops32 += 2.0 * q * g * n_anchors  # the cross term, as a product it would be
            bound = flops32 / rate32 + flops64 / rate64
            shape_bound = flops32 / rate_shape + (flops64 / em_shape_rate(n_anchors) if flops64 else 0.0)
            row = BenchRow(method, n_anchors, seconds, seconds / cosine_seconds,
                           (flops32 + flops64) / 1e9, seconds / bound, seconds / shape_bound, note)
            rows.append(row)
            log(format_row(row))
    return {"config": asdict(config), "machine": machine, "rows": [asdict(row) for row in rows]}


def _time_naive(config: BenchConfig, anchors: torch.Tensor, gallery: torch.Tensor, queries: torch.Tensor,
                timed: Callable) -> tuple[float, str]:
    """Naive time for all queries: measured on a query subset and scaled, with its gallery-side
    part (the gallery log-probabilities) timed separately so that it is counted once."""
    subset = queries[: min(config.naive_queries, config.queries)]
    total = timed(lambda: naive_softmax_search(anchors, gallery, subset, config.scale, config.k))
    gallery_part = timed(lambda: torch.log_softmax(config.scale * gallery @ anchors.T, dim=1))
    per_query = max(total - gallery_part, 0.0) / subset.shape[0]
    seconds = gallery_part + per_query * config.queries
    return seconds, f"measured on {subset.shape[0]} queries, scaled to {config.queries}"


def format_row(row: BenchRow) -> str:
    return (f"{row.method:<9} N={row.anchors:<7} {row.seconds:9.3f} s  x{row.vs_cosine:7.2f} cosine  "
            f"{row.gflop:9.1f} GFLOP  x{row.vs_flop_bound:5.2f} FLOP-bound (x{row.vs_shape_bound:4.2f} at its shapes)  {row.note}")


def summary(result: dict) -> list[str]:
    """The issue's three checks, as measured: each a printed line, none asserted."""
    rows = result["rows"]
    lines = []
    big = [r for r in rows if r["anchors"] >= 4096 and r["method"] != "naive"]
    if big:
        for key, what in (("vs_flop_bound", "the square-matmul peak"), ("vs_shape_bound", "matmuls of each method's own shapes")):
            worst = max(big, key=lambda r: r[key])
            lines.append(f"worst x FLOP-bound at N >= 4096 against {what}: {worst[key]:.2f} "
                         f"({worst['method']}, N={worst['anchors']})")
    gauss = [r for r in rows if r["method"] == "gaussian" and r["anchors"] <= 2**14]
    if gauss:
        lines.append(f"gaussian / cosine at N <= 2^14: max {max(r['vs_cosine'] for r in gauss):.2f}")
    for n in sorted({r["anchors"] for r in rows if r["method"] == "naive"}):
        soft = [r for r in rows if r["method"] == "softmax" and r["anchors"] == n]
        naive = [r for r in rows if r["method"] == "naive" and r["anchors"] == n]
        if soft and naive:
            lines.append(f"softmax speed-up over naive at N={n}: {naive[0]['seconds'] / soft[0]['seconds']:.1f}x")
    return lines


# -- the store-scale benchmark (issue 15): a synthetic gallery on disk, sharded search, the p slider ----------
SYNTHETIC_MODEL_SCALE = 100.0   # CLIP's logit scale, as the Table-4 benchmark uses
OBJECT_ANCHORS, STYLE_ANCHORS = 512, 8
CALIBRATION_ROWS = 20_000       # calibrating on a sample: the whole store at float32 would be 2 GB at 10^6 x 512
RSS_SAMPLE_SECONDS = 0.005
MIN_SYNTHETIC_ROWS = 1000       # calibration ranks a few hundred gallery queries against the rest
DEFAULT_GRID_POINTS = 33        # the slider's default grid: 31 interior points plus r = 0 and r = 1
# What each figure is called in the printed "name: value" lines (the JSON keeps the keys).
SCALE_LABELS = {
    "store_build_seconds": "store build", "store_bytes_on_disk": "store size on disk",
    "index_build_seconds": "index build", "rss_after_index_bytes": "resident memory after building the index",
    "reference_pass_seconds": "exact mat-vec pass", "new_query_pass_seconds": "new-query pass",
    "new_query_vs_reference": "new-query pass / mat-vec pass", "slider_move_p50_ms": "slider move p50",
    "slider_move_p95_ms": "slider move p95", "certified_rate": "certified rate",
    "exact_search_seconds": "exact search", "peak_rss_total_bytes_searching": "peak resident memory searching",
    "peak_rss_anonymous_bytes_searching": "  of which anonymous (arrays)",
    "peak_rss_file_bytes_searching": "  of which file-backed (the store's mapped pages and shared libraries)",
    "rss_at_start_bytes": "resident memory at start (python, torch)",
    "calibration_seconds": "mixture calibration", "ray_start_seconds": "ray start", "actor_rss_total_bytes_after_search": "Ray workers' resident memory after searching",
}
ENGINE_FIGURES = ("index_build_seconds", "reference_pass_seconds", "rss_after_index_bytes", "new_query_pass_seconds", "new_query_vs_reference",
                  "slider_move_p50_ms", "slider_move_p95_ms", "certified_rate", "exact_search_seconds",
                  "peak_rss_total_bytes_searching", "peak_rss_anonymous_bytes_searching", "peak_rss_file_bytes_searching",
                  "ray_start_seconds", "actor_rss_total_bytes_after_search")


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
            detail = ", ".join(f"{name} {_gib(size)}" for name, size in parts.items())
            raise ValueError(f"this benchmark needs about {_gib(sum(parts.values()))} of memory ({detail}) but the "
                             f"host has {_gib(available)} available; lower {label('gallery')} or {label('dim')}.")
        folder = Path(self.store_dir).expanduser() if self.store_dir else Path(tempfile.gettempdir())
        while not folder.exists():
            folder = folder.parent
        free = shutil.disk_usage(folder).free
        if self.disk_estimate() > free:
            raise ValueError(f"this benchmark writes about {_gib(self.disk_estimate())} to {folder} but only "
                             f"{_gib(free)} is free there; lower {label('gallery')} or give {label('store_dir')} "
                             "on a larger disk.")


def resident_memory() -> dict[str, int]:
    """This process's resident memory in bytes from ``/proc/self/status``: ``total`` (VmRSS),
    ``anonymous`` (RssAnon: its own arrays) and ``file`` (RssFile: mapped files, here the store's
    pages in the page cache); the peak RSS from ``resource`` where ``/proc`` is missing."""
    fields = {"VmRSS:": "total", "RssAnon:": "anonymous", "RssFile:": "file"}
    found: dict[str, int] = {}
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                key = line.split(maxsplit=1)[0] if line.strip() else ""
                if key in fields:
                    found[fields[key]] = int(line.split()[1]) * 1024
    except OSError:
        import resource

        found["total"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return found


class PeakResidentMemory:
    """The largest :func:`resident_memory` seen while the ``with`` block runs, sampled every 5 ms
    by a thread (the search's peak, not the build's, which ``VmHWM`` would also count)."""

    def __init__(self):
        self.peak: dict[str, int] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> "PeakResidentMemory":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join()

    def _sample(self) -> None:
        while True:
            for key, value in resident_memory().items():
                self.peak[key] = max(self.peak.get(key, 0), value)
            if self._done.wait(RSS_SAMPLE_SECONDS):
                return


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


def run_scale_benchmark(config: ScaleConfig, log: Callable[[str], None] = lambda _: None) -> dict:
    """Build a synthetic float16 store, a :class:`ShardedAnchorIndex` over a calibrated two-set
    mixture, and time the reference pass, the slider's new-query pass, its moves and one exact
    search; returns the figures as a dict (what ``bench --synthetic`` prints)."""
    config.validate()
    if config.store_dir:
        folder = Path(config.store_dir).expanduser()
        folder.mkdir(parents=True, exist_ok=True)
        return _run_scale(config, folder, log)
    with tempfile.TemporaryDirectory(prefix="anchordiv-bench-") as folder:
        return _run_scale(config, Path(folder), log)


def _run_scale(config: ScaleConfig, folder: Path, log: Callable[[str], None]) -> dict:
    generator = torch.Generator().manual_seed(config.seed)
    centres = torch.randn(64, config.dim, generator=generator)
    figures: dict = {"config": asdict(config), "device": "cpu", "threads": torch.get_num_threads(),
                     "parametrisation": "calibrated"}

    def report(name: str, value: object, text: str) -> None:
        figures[name] = value
        log(f"{SCALE_LABELS[name]}: {text}")

    resident = resident_memory()["total"]
    report("rss_at_start_bytes", resident, f"{resident / 2**30:.2f} GiB")
    started = time.perf_counter()
    store = build_synthetic_store(config, folder, centres, generator)
    report("store_build_seconds", time.perf_counter() - started, f"{time.perf_counter() - started:.2f} s "
           f"(generate {config.gallery:,} x {config.dim} rows + write float16 shards of {config.shard_rows:,})")
    size = sum(path.stat().st_size for path in (folder / "store").iterdir())
    report("store_bytes_on_disk", size, f"{size / 2**20:,.1f} MiB")
    started = time.perf_counter()
    mixture = synthetic_mixture(config, store, centres, generator)
    report("calibration_seconds", time.perf_counter() - started,
           f"{time.perf_counter() - started:.2f} s (the mixture calibrated on {min(CALIBRATION_ROWS, len(store)):,} rows)")
    for engine in config.engines:
        figures[engine] = {}
        _bench_engine(config, store, mixture, engine, lambda name, value, text, engine=engine:
                      _report_engine(figures[engine], log, engine, name, value, text))
    return figures


def _report_engine(figures: dict, log: Callable[[str], None], engine: str, name: str, value: object, text: str) -> None:
    figures[name] = value
    log(f"[{engine}] {SCALE_LABELS[name]}: {text}")


def _bench_engine(config: ScaleConfig, store: GalleryStore, mixture: MixtureAnchors, engine: str,
                  report: Callable[[str, object, str], None]) -> None:
    """Index, slider and search figures for one engine (the Ray instance started first, and timed)."""
    if engine == "ray":
        from .ray_runtime import connect

        started = time.perf_counter()
        connect(config.address)
        report("ray_start_seconds", time.perf_counter() - started, f"{time.perf_counter() - started:.2f} s")
    started = time.perf_counter()
    options = {"address": config.address, "workers": config.workers} if engine == "ray" else {}
    index = ShardedAnchorIndex(mixture, store, device="cpu", engine=engine, **options)
    workers = f", {index.workers} Ray tasks" if engine == "ray" else ""
    report("index_build_seconds", time.perf_counter() - started,
           f"{time.perf_counter() - started:.2f} s (kappa_k for every row{workers})")
    resident = resident_memory()["total"]
    report("rss_after_index_bytes", resident, f"{resident / 2**30:.2f} GiB")
    _time_search(config, store, index, report)
    if engine == "ray":
        actors = [memory["total"] for memory in index.resident_memory()]
        report("actor_rss_total_bytes_after_search", actors,
               " + ".join(f"{size / 2**30:.2f}" for size in actors) + " GiB (each Ray worker process: python, torch, "
               "its shards' kappa)")


def _time_search(config: ScaleConfig, store: GalleryStore, index: ShardedAnchorIndex,
                 report: Callable[[str, object, str], None]) -> None:
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
    report("reference_pass_seconds", reference, f"{reference:.3f} s (one exact float16 -> float32 mat-vec pass "
           f"over the store, median of {config.queries})")
    report("new_query_pass_seconds", new_query, f"{new_query:.3f} s (slider construction, median of "
           f"{config.queries} queries)")
    report("new_query_vs_reference", new_query / reference, f"{new_query / reference:.2f}x")
    p50, p95 = np.percentile(move_seconds, [50, 95]) * 1e3
    report("slider_move_p50_ms", float(p50), f"{p50:.3f} ms")
    report("slider_move_p95_ms", float(p95), f"{p95:.3f} ms (over {len(move_seconds):,} moves, random p)")
    report("certified_rate", float(np.mean(certified)), f"{np.mean(certified):.4f}")
    report("exact_search_seconds", search_seconds, f"{search_seconds:.3f} s (one query, p = 0.5)")
    for key in ("total", "anonymous", "file"):
        if key in memory.peak:
            report(f"peak_rss_{key}_bytes_searching", memory.peak[key], f"{memory.peak[key] / 2**30:.2f} GiB")
