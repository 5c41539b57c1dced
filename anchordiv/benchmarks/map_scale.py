"""The explorer's map at the user's size (issue 53): :func:`map_scale_figures` lays out a map of
``points`` synthetic rows as the page does (:func:`anchordiv.explorer.maps.geometry_projection` with
a disk cache key, under the anchor divergence of an :class:`~anchordiv.explorer.ExplorerGeometry`),
and measures in one run what its kNN graph costs against the bare matrix product it needs, what
its layout and UMAP's compile cost, the longest stretch in which its progress callback heard
nothing, its second (cached) request, and placing a query outside it. :func:`map_scale_lines`
words the figures. Each stage is logged at INFO as it is measured."""
from __future__ import annotations

import logging
import subprocess
import sys
import time
from typing import Any, Callable

import numpy as np
import torch

from .. import projection
from ..explorer.geometry import ExplorerGeometry, GeometrySpec
from ..explorer.maps import geometry_projection, map_placer, projection_index, projection_key
from ..search import query_terms
from .explorer import private_cache

logger = logging.getLogger(__name__)

# Rows of the bound's product per block: the whole (n, n) product at 50,000 points is 10 GB.
BOUND_BLOCK_ROWS = 2048

# A fresh Python compiling UMAP's kernels, as a server's first map does: its seconds printed.
_FRESH_COMPILE = "from anchordiv import projection; print(projection.warm_up())"


class _Rows:
    """A map's rows (:class:`anchordiv.explorer.maps.Rows`) over embeddings in memory."""

    def __init__(self, embeddings: torch.Tensor):
        self.embeddings = embeddings

    def __len__(self) -> int:
        return len(self.embeddings)

    def rows(self, ids: np.ndarray) -> torch.Tensor:
        return self.embeddings[torch.as_tensor(np.asarray(ids, dtype=np.int64))]


class _Clock:
    """Wall and CPU seconds of one stretch of work (``with _Clock() as clock``)."""

    def __enter__(self) -> "_Clock":
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall, self.cpu = time.perf_counter() - self._wall, time.process_time() - self._cpu


class _Heard:
    """A progress callback that keeps when it was called and what it said, passing each on."""

    def __init__(self, relay: Callable[[float, str], None] | None = None):
        self.relay, self.start, self.calls = relay, time.perf_counter(), []

    def __call__(self, fraction: float, text: str) -> None:
        self.calls.append((time.perf_counter(), float(fraction), text))
        if self.relay is not None:
            self.relay(fraction, text)

    def longest_silence(self, end: float) -> tuple[float, str]:
        """The longest stretch without a call between the start and ``end`` (``perf_counter``), and
        the text heard before it ("(start)" before the first)."""
        times = [self.start] + [when for when, _, _ in self.calls] + [end]
        texts = ["(start)"] + [text for _, _, text in self.calls]
        gaps = np.diff(times)
        worst = int(np.argmax(gaps))
        return float(gaps[worst]), texts[worst]


def clustered_rows(points: int, dim: int, generator: torch.Generator) -> torch.Tensor:
    """``points`` unit rows ``(points, dim)`` around 64 random centres, as :mod:`.explorer` makes its gallery."""
    centres = _unit(64, dim, generator)
    return torch.nn.functional.normalize(
        centres[torch.randint(0, 64, (points,), generator=generator)] + 0.7 * _unit(points, dim, generator), dim=1)


def _unit(n: int, dim: int, generator: torch.Generator) -> torch.Tensor:
    return torch.nn.functional.normalize(torch.randn(n, dim, generator=generator), dim=1)


def matmul_bound(queries: torch.Tensor, keys: torch.Tensor, block_rows: int = BOUND_BLOCK_ROWS) -> tuple[float, float]:
    """Wall and CPU seconds of the ``(n, d) @ (d, n)`` float32 product ``queries @ keys.T``, in blocks
    of ``block_rows`` query rows written into one buffer (the whole product may not fit in memory):
    the least a kNN graph that scores every pair can cost."""
    buffer = torch.empty((min(block_rows, len(queries)), len(keys)), dtype=keys.dtype, device=keys.device)
    with _Clock() as clock:
        for start in range(0, len(queries), block_rows):
            block = queries[start:start + block_rows]
            torch.mm(block, keys.T, out=buffer[:len(block)])
        if keys.device.type == "cuda":
            torch.cuda.synchronize(keys.device)
    return clock.wall, clock.cpu


def interleaved(index, rows: torch.Tensor, queries: torch.Tensor) -> dict[str, float]:
    """:func:`anchordiv.projection.knn_graph` of ``rows`` under ``index``, with the bound's product
    of each of its batches' rows (``queries`` ``(n, d)`` against every key) made right after that
    batch, in its progress callback: the two alternate batch by batch, so that a change in the
    machine's load weighs on both alike. ``paired_graph_s`` and ``paired_bound_s`` (and ``_cpu_s``)
    sum the batches; ``paired_over_bound`` and ``paired_over_bound_cpu`` are their ratios."""
    keys, n_items = index.gallery_eta, len(rows)
    buffer = torch.empty((projection.graph_batch(n_items), n_items), dtype=keys.dtype, device=keys.device)
    totals = {"graph": [0.0, 0.0], "bound": [0.0, 0.0]}
    last = {"wall": time.perf_counter(), "cpu": time.process_time(), "row": 0}

    def lap(part: str) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        totals[part][0] += wall - last["wall"]
        totals[part][1] += cpu - last["cpu"]
        last["wall"], last["cpu"] = wall, cpu

    def heard(fraction: float, text: str) -> None:
        lap("graph")
        stop = int(round(fraction * n_items))
        block = queries[last["row"]:stop]
        torch.mm(block, keys.T, out=buffer[:len(block)])
        last["row"] = stop
        lap("bound")

    projection.knn_graph(index, rows, progress=heard)
    lap("graph")
    (graph_wall, graph_cpu), (bound_wall, bound_cpu) = totals["graph"], totals["bound"]
    return {"paired_graph_s": graph_wall, "paired_graph_cpu_s": graph_cpu, "paired_bound_s": bound_wall,
            "paired_bound_cpu_s": bound_cpu, "paired_over_bound": graph_wall / bound_wall,
            "paired_over_bound_cpu": graph_cpu / bound_cpu}


def fresh_compile_seconds(timeout: float = 300.0) -> float | None:
    """Seconds :func:`anchordiv.projection.warm_up` takes in a fresh Python (umap-learn's import
    included), as in a server's first map; ``None`` when it could not run."""
    try:
        done = subprocess.run([sys.executable, "-c", _FRESH_COMPILE], capture_output=True, text=True,
                              timeout=timeout, check=True)
        return float(done.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, OSError, ValueError, IndexError):
        return None


def map_scale_figures(points: int = 50_000, dim: int = 256, n_anchors: int = 1644, seed: int = 0,
                      progress: Callable[[float, str], None] | None = None, fresh_compile: bool = True,
                      repeats: int = 2) -> dict:
    """Lay out a map of ``points`` rows as the Explore page does and measure it, in one run.

    The rows are unit vectors around 64 centres (``dim`` wide); the geometry is the softmax mixture
    of A = ``n_anchors`` and B = 7 random anchors at scale 10 (:class:`GeometrySpec`), at p = 0.5.
    Figures (seconds, wall unless named ``cpu``): ``bound_s``/``bound_cpu_s``, the ``(n, d) @ (d, n)``
    product of the graph's query vectors and keys (:func:`matmul_bound`), and ``graph_s``/``graph_cpu_s``,
    :func:`anchordiv.projection.knn_graph` alone, each the least of its runs (the graph ``repeats``
    times, the bound before and after each, in ``bounds_s`` and ``graphs_s``: a machine shared with
    other work slows some runs); ``graph_over_bound`` and ``graph_over_bound_cpu`` their ratios; the
    same ratios with each batch of the graph followed by its rows' share of the product
    (:func:`interleaved`: ``paired_over_bound``, ``paired_over_bound_cpu``), the steadiest; ``compiled_before`` (whether this process had
    compiled UMAP's kernels), ``fresh_compile_s`` (a fresh process's :func:`~anchordiv.projection.warm_up`,
    with ``fresh_compile``); ``map_s``, the first request for the map (graph, compile where needed,
    layout, written to a disk cache in a temporary folder), with ``map_compile_s``, ``map_graph_s``
    and ``layout_s``, its stretches as its progress reports mark them, ``longest_silence_s`` and
    ``silence_after`` (the longest stretch without a progress report and the report before it),
    ``reports``; ``cached_s``, the same request again; ``placer_s`` and ``place_s``, building the
    :class:`~anchordiv.explorer.maps.MapPlacer` and placing one query outside the map. Also
    ``points``, ``dim``, ``n_anchors``, ``threads`` (torch's), ``device``. ``progress(fraction,
    text)`` hears each stage."""
    say = progress or (lambda fraction, text: None)
    generator = torch.Generator().manual_seed(seed)
    figures: dict[str, Any] = {"points": points, "dim": dim, "n_anchors": n_anchors,
                               "threads": torch.get_num_threads()}
    say(0.0, f"Fitting the geometry over {points:,} rows")
    rows = clustered_rows(points, dim, generator)
    anchors = [_unit(n_anchors, dim, generator), _unit(7, dim, generator)]
    texts = [[f"object {i}" for i in range(n_anchors)], [f"style {i}" for i in range(7)]]
    with _Clock() as clock:
        geometry = ExplorerGeometry(rows, anchors, texts, GeometrySpec(scale=10.0))
    figures["geometry_s"], figures["device"] = clock.wall, str(geometry.device)
    logger.info(f"geometry over {points:,} rows (A = {n_anchors:,}, B = 7): {clock.wall:.1f} s")

    index = projection_index(rows, "anchor", geometry, 0.5)
    queries, _ = query_terms(index.model, rows, False, index.gallery_eta.device, index.gallery_eta.dtype)
    bounds, graphs = [matmul_bound(queries, index.gallery_eta)], []
    for attempt in range(repeats):  # alternated, so that a change of the machine's load shows in both
        say(0.05 + 0.25 * attempt / repeats, f"The kNN graph alone ({attempt + 1} of {repeats}) and the product's bound")
        with _Clock() as clock:
            projection.knn_graph(index, rows)
        graphs.append((clock.wall, clock.cpu))
        bounds.append(matmul_bound(queries, index.gallery_eta))
    say(0.3, "The kNN graph, batch by batch against the product's same rows")
    figures.update(interleaved(index, rows, queries))
    del queries
    figures["bounds_s"], figures["graphs_s"] = [wall for wall, _ in bounds], [wall for wall, _ in graphs]
    figures["bound_s"], figures["bound_cpu_s"] = min(bounds)[0], min(cpu for _, cpu in bounds)
    figures["graph_s"], figures["graph_cpu_s"] = min(graphs)[0], min(cpu for _, cpu in graphs)
    figures["graph_over_bound"] = figures["graph_s"] / figures["bound_s"]
    figures["graph_over_bound_cpu"] = figures["graph_cpu_s"] / figures["bound_cpu_s"]
    logger.info(f"kNN graph {figures['graph_s']:.1f} s ({figures['graph_cpu_s']:.1f} CPU s) against the product's "
                f"{figures['bound_s']:.1f} s ({figures['bound_cpu_s']:.1f} CPU s), the least of {len(graphs)} and "
                f"{len(bounds)}: {figures['graph_over_bound']:.2f}x ({figures['graph_over_bound_cpu']:.2f}x in CPU time)")
    logger.info(f"batch by batch: the graph {figures['paired_graph_s']:.1f} s against the product's "
                f"{figures['paired_bound_s']:.1f} s: {figures['paired_over_bound']:.2f}x "
                f"({figures['paired_over_bound_cpu']:.2f}x in CPU time)")

    figures["compiled_before"] = projection.is_compiled()
    if fresh_compile:
        say(0.3, "UMAP's compile in a fresh process")
        figures["fresh_compile_s"] = fresh_compile_seconds()
        logger.info(f"UMAP's compile in a fresh process: {figures['fresh_compile_s']} s")

    source = _Rows(rows)
    key = projection_key("map-scale", points, dim, n_anchors, seed)
    with private_cache():
        heard = _Heard(lambda fraction, text: say(0.4 + 0.5 * fraction, text))
        with _Clock() as clock:
            ids, xy = geometry_projection(source, "anchor", geometry, 0.5, max_points=points, cache_key=key,
                                          progress=heard)
        figures["map_s"], figures["map_cpu_s"] = clock.wall, clock.cpu
        figures.update(_stretches(heard, time.perf_counter()))
        say(0.9, "The same map again, from the cache")
        with _Clock() as clock:
            again = geometry_projection(source, "anchor", geometry, 0.5, max_points=points, cache_key=key)
        figures["cached_s"] = clock.wall
        figures["cached_same"] = bool(np.array_equal(np.asarray(again[1]), np.asarray(xy)))
        say(0.95, "Placing a query outside the map")
        with _Clock() as clock:
            placer = map_placer(source, ids, xy, "anchor", geometry, 0.5)
        figures["placer_s"] = clock.wall
        with _Clock() as clock:
            placed = placer.place(_unit(1, dim, generator))
        figures["place_s"], figures["placed_finite"] = clock.wall, bool(np.isfinite(placed).all())
    logger.info(f"map of {points:,} points: {figures['map_s']:.1f} s (longest silence "
                f"{figures['longest_silence_s']:.2f} s); cached {figures['cached_s']:.2f} s; "
                f"placer {figures['placer_s']:.2f} s, a query {figures['place_s']:.3f} s")
    say(1.0, "Done")
    return figures


def _stretches(heard: _Heard, end: float) -> dict[str, Any]:
    """The map's stretches, as its progress reports mark them: the graph (to step 2's first report),
    the compile (from the first report of compiling to the next report of step 2), the layout (from
    step 2's first report after any compile to the end)."""
    calls = heard.calls
    step_two = [when for when, _, text in calls if text.startswith("Step 2 of 2")]
    compiling = [when for when, _, text in calls if "Compiling UMAP's kernels" in text]
    after_compile = [when for when, _, text in calls
                     if text.startswith("Step 2 of 2") and "Compiling" not in text and when > (compiling or [0])[-1]]
    silence, before = heard.longest_silence(end)
    layout_start = (after_compile or step_two or [end])[0]
    return {"map_graph_s": (step_two[0] if step_two else end) - heard.start,
            "map_compile_s": layout_start - compiling[0] if compiling else 0.0,
            "layout_s": end - layout_start,
            "longest_silence_s": silence, "silence_after": before, "reports": len(calls)}


def _seconds(values: list[float]) -> str:
    return ", ".join(f"{value:.1f}" for value in values) + " s"


def map_scale_lines(figures: dict) -> list[str]:
    """:func:`map_scale_figures`' figures as printable lines."""
    f = figures
    fresh = f.get("fresh_compile_s")
    lines = [
        f"map of {f['points']:,} points, d = {f['dim']}, A = {f['n_anchors']:,} + B = 7 anchors, scale 10, "
        f"torch threads {f['threads']}, {f['device']}",
        f"  geometry (fit, gallery terms, calibration): {f['geometry_s']:.1f} s",
        f"  matmul bound ({f['points']:,} x {f['dim']}) @ ({f['dim']} x {f['points']:,}) float32: "
        f"{f['bound_s']:.1f} s ({f['bound_cpu_s']:.1f} CPU s; runs {_seconds(f['bounds_s'])})",
        f"  kNN graph under the divergence: {f['graph_s']:.1f} s ({f['graph_cpu_s']:.1f} CPU s; runs "
        f"{_seconds(f['graphs_s'])}): {f['graph_over_bound']:.2f}x the bound ({f['graph_over_bound_cpu']:.2f}x "
        "in CPU time; target 2x)",
        f"  batch by batch, each batch's product right after it: the graph {f['paired_graph_s']:.1f} s against "
        f"{f['paired_bound_s']:.1f} s: {f['paired_over_bound']:.2f}x ({f['paired_over_bound_cpu']:.2f}x in CPU time)",
        f"  UMAP's kernels: {'already compiled in this process' if f['compiled_before'] else 'compiled by the map'}"
        + ("" if fresh is None else f"; {fresh:.1f} s in a fresh process (umap-learn's import included)"),
        f"  first request: {f['map_s']:.1f} s (graph {f['map_graph_s']:.1f} s, compile {f['map_compile_s']:.1f} s, "
        f"layout {f['layout_s']:.1f} s), {f['reports']} progress reports",
        f"  longest stretch without a progress report: {f['longest_silence_s']:.2f} s (after "
        f"\"{f['silence_after']}\"; target at most 2 s)",
        f"  second request (disk cache): {f['cached_s']:.2f} s" + ("" if f["cached_same"] else " (a different map!)"),
        f"  the query placed on the map: placer {f['placer_s']:.2f} s (its graph read back), then "
        f"{f['place_s'] * 1000:.0f} ms a query" + ("" if f["placed_finite"] else " (not finite!)"),
    ]
    return lines
