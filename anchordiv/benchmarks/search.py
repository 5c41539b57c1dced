"""Runtime benchmark in the shape of the paper's Table 4 (docs/design.md §5).

Each method's time covers fit + gallery preprocessing + retrieval of the top ``k`` for every
query, timed after ``warmup`` runs as the best (or, with ``statistic="median"``, the median; the
paper-size run's choice) of ``repeats`` runs. Beside the seconds it reports the
ratio to cosine and to the method's FLOP-bound time: the FLOPs of its dominant products divided
by the machine's matmul throughput, measured in the same run with torch on the same device
(float32 for retrieval, float64 for the GMM's EM, which fits in float64). Progress goes to this
module's logger at INFO; the result table is :func:`result_lines` and :func:`summary` of the result.
"""
from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
import torch

from .._validation import check_positive_int, check_scale
from ..device import resolve_device
from ..models.base import BLOCK_ELEMENTS
from ..models.em import SCATTER_BLOCK_ELEMENTS
from ..models.registry import anchor_model_kind
from ..search import AnchorIndex, CosineIndex
from .memory import available_memory, gib

logger = logging.getLogger(__name__)

METHODS = ("cosine", "softmax", "gaussian", "gmm", "naive")
STATISTICS: dict[str, Callable[[list[float]], float]] = {"best": min, "median": lambda times: float(np.median(times))}
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
    statistic: str = "best"  # of the repeats: "best" or "median"

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
        if self.statistic not in STATISTICS:
            raise ValueError(f"{label('statistic')}={self.statistic!r}; choose one of {list(STATISTICS)}.")
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
            detail = ", ".join(f"{name} {gib(size)}" for name, size in parts.items())
            sizes = ", ".join(label(name) for name in ("queries", "gallery", "dim", "anchors"))
            raise ValueError(
                f"this benchmark needs about {gib(sum(parts.values()))} of memory ({detail}) but {device} has "
                f"{gib(available)} available; lower {sizes}, or {label('naive_max_anchors')} / "
                f"{label('gmm_max_anchors')} to skip the naive method and the GMM at large N.")

    @classmethod
    def paper(cls) -> "BenchConfig":
        """Table 4's size: 10,000 queries, 50,000 gallery, N = 2^10 ... 2^17 (meant for a GPU)."""
        return cls(queries=10000, gallery=50000, anchors=(2**10, 2**12, 2**14, 2**16, 2**17),
                   repeats=10, warmup=3, naive_queries=200, gmm_max_anchors=2**14, statistic="median")


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


def time_on(device: torch.device, function: Callable[[], object], repeats: int, warmup: int = 1,
            statistic: str = "best") -> float:
    """Seconds of ``function`` on ``device`` (synchronised), after ``warmup`` runs: the ``statistic``
    (a key of :data:`STATISTICS`) of ``repeats`` runs."""
    for _ in range(warmup):
        _synchronised(device, function)
    return STATISTICS[statistic]([_seconds(lambda: _synchronised(device, function)) for _ in range(repeats)])


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


def run_benchmark(config: BenchConfig) -> dict:
    """Run every method at every anchor count; returns ``{"config", "machine", "rows"}`` (each row a
    :class:`BenchRow` as a dict). Logs each figure at INFO as it is measured."""
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
    logger.info(throughput_line(machine, config))

    def timed(function: Callable[[], object]) -> float:
        return time_on(device, function, config.repeats, config.warmup, config.statistic)

    em_rates: dict[int, float] = {}

    def em_shape_rate(n_anchors: int) -> float:
        """float64 FLOP/s of the EM's E-step product, (N, d) @ (d, M d), measured once per N."""
        if n_anchors not in em_rates:
            shape = (n_anchors, config.dim, config.gmm_components * config.dim)
            em_rates[n_anchors] = matmul_throughput(device, torch.float64, shape=shape)
            machine[f"gflops_float64_em_N{n_anchors}"] = em_rates[n_anchors] / 1e9
            logger.info(em_rate_line(n_anchors, em_rates[n_anchors] / 1e9))
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
            logger.info(format_row(row))
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


def throughput_line(machine: dict, config: BenchConfig | dict) -> str:
    """The machine's measured matmul rates (``result["machine"]``), as the table's first line."""
    config = config if isinstance(config, dict) else asdict(config)
    return (f"matmul throughput on {machine['device']}: {machine['gflops_float32']:.1f} GFLOP/s float32 (2048^3, "
            f"the peak), {machine['gflops_float32_inner_d']:.1f} GFLOP/s float32 at ({config['queries']} x "
            f"{config['dim']}) @ ({config['dim']} x {config['gallery']}), {machine['gflops_float64']:.1f} GFLOP/s "
            "float64 (EM)")


def em_rate_line(n_anchors: int, gflops: float) -> str:
    return f"  float64 matmul at the EM's shape for N={n_anchors}: {gflops:.1f} GFLOP/s"


def result_lines(result: dict) -> list[str]:
    """What :func:`run_benchmark` measured, as printed lines: the matmul rates, then one
    :func:`format_row` per method and anchor count (the EM's rate before the GMM's row at each N)."""
    machine, lines = result["machine"], [throughput_line(result["machine"], result["config"])]
    for row in result["rows"]:
        if row["method"] == "gmm":
            lines.append(em_rate_line(row["anchors"], machine[f"gflops_float64_em_N{row['anchors']}"]))
        lines.append(format_row(BenchRow(**row)))
    return lines


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
