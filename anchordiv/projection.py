"""2-D projections of a gallery under any geometry: UMAP on the geometry's own kNN graph.

The kNN graph is exact under the index's geometry (anchor divergence, cosine or ITI; a map's
anchor index ranked here from its own inner products, any other by its search: :func:`knn_graph`),
and umap-learn lays it out through ``precomputed_knn`` under its ``"precomputed"`` metric, so UMAP
never computes a metric of its own. With a progress callback, nothing is silent for long: the
graph reports each batch, and the layout its compile (once per process), start and epochs
(:func:`umap_from_knn`). Divergences are not symmetric; UMAP symmetrises the fuzzy graph itself
(its fuzzy union). Projections can be cached on disk by a caller-supplied key
(:func:`cached_projection`). Points outside a layout are placed by UMAP's own ``transform`` from
their distances to the laid-out points under the same geometry (:func:`restored_reducer`,
:func:`transform_points`).
"""
from __future__ import annotations

import hashlib
import re
import threading
import time
import warnings
from typing import TYPE_CHECKING, Callable

import numpy as np
import torch

from ._validation import check_finite_output, check_positive_int
from .extras import require
from .progress import run_reporting
from .search import AnchorIndex, query_terms

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
# The compile, with umap-learn's import when nothing imported it yet (3 to 6 s) and its transform's
# kernels (2.4 s): 10 to 16 s on the reference machine.
COMPILE_SECONDS = 15.0
# Of a layout's time, the share before its first epoch (the fuzzy graph and the spectral start):
# 3.7 s of 30 s at 50,000 points.
START_SHARE = 0.12
# The kNN graph's cost per pair of points at one torch thread (50,000 points: 40 s), an estimate too.
GRAPH_SECONDS_PER_PAIR = 1.6e-8
MIN_DIST = 0.1
# How often umap-learn's epoch count reaches the progress callback during a layout.
EPOCH_REPORT_SECONDS = 0.2
_compiled = False  # whether this process has compiled umap-learn's kernels (a layout, or warm_up)


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


# The scores a batch of knn_graph's queries makes against every item: 2**26 float32 (256 MB, one
# buffer reused by every batch). Large products, each ranked by one top-k, and a progress report
# every second or so even at 50,000 items on the 2-core reference machine.
GRAPH_BLOCK_SCORES = 2**26


def graph_batch(n_items: int) -> int:
    """Queries per block of :func:`knn_graph` over ``n_items`` items: as many as make
    :data:`GRAPH_BLOCK_SCORES` scores, at least 64 and at most ``n_items``."""
    return max(1, min(n_items, max(64, GRAPH_BLOCK_SCORES // max(1, n_items))))


def knn_graph(index: Index, embeddings: torch.Tensor, n_neighbors: int = DEFAULT_NEIGHBOURS,
              batch: int | None = None, progress: ProgressCallback | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each item's ``n_neighbors`` nearest items (itself first), from ``index`` built over
    ``embeddings`` ``(n, d)``: ``(indices (n, n_neighbors) int64, distances (n, n_neighbors) float32)``.

    Distances are :func:`distances_of` the index's values, ``batch`` queries at a time (default
    :func:`graph_batch`). A query-first :class:`~anchordiv.search.AnchorIndex` over these rows (a
    map's own index) is ranked here, as its search ranks (the same inner products, each batch's
    scores written into one reused buffer and ranked by one top-``k``): within 1.5x or so of the
    bare ``(n, d) @ (d, n)`` product at 50,000 points, where the search's fresh score matrices and
    smaller blocks cost twice it (``anchordiv.benchmarks.map_scale``). Any other index is asked
    through its search. Exact either way: the same neighbours as the search, up to ties and round-off.
    ``progress(fraction, text)`` hears after each batch.
    """
    n_items = len(embeddings)
    if n_items < 3:
        raise ValueError(f"a projection needs at least 3 images; the gallery has {n_items}; add images")
    k = max(2, min(check_positive_int(n_neighbors, "n_neighbors"), n_items))
    batch = graph_batch(n_items) if batch is None else check_positive_int(batch, "batch")
    terms = _own_terms(index, embeddings)
    search = _searched(index, embeddings, k) if terms is None else _scored(index, embeddings, terms, k, batch)
    all_ids, all_dists = [], []
    for start in range(0, n_items, batch):
        stop = min(start + batch, n_items)
        values, ids = search(start, stop)
        own = torch.arange(start, stop, device=ids.device)  # results stay where the index computes
        distances = distances_of(index, values)
        all_ids.append(torch.cat([own[:, None], ids], dim=1))
        all_dists.append(torch.cat([torch.zeros_like(distances[:, :1]), distances], dim=1))
        if progress is not None:
            progress(stop / n_items, f"{stop:,} of {n_items:,} points")
    # One crossing to the CPU, for UMAP.
    return torch.cat(all_ids).cpu().numpy().astype(np.int64), torch.cat(all_dists).cpu().numpy().astype(np.float32)


def _searched(index: Index, embeddings: torch.Tensor, k: int):
    """``search(start, stop)``: rows ``start:stop``'s ``k - 1`` nearest others by ``index.search``."""
    def search(start: int, stop: int):
        return index.search(embeddings[start:stop], k - 1, exclude=torch.arange(start, stop))
    return search


def _own_terms(index: Index, embeddings: torch.Tensor):
    """``(keys (n, d), bias (n,))`` of §4's inner product when ``index`` is a query-first
    :class:`~anchordiv.search.AnchorIndex` over the ``n`` rows of ``embeddings``; else ``None`` (its
    search ranks). Raises what any search of the index would (its model refitted, or its weights
    changed in place since)."""
    if type(index) is not AnchorIndex or index.reverse or len(index) != len(embeddings):
        return None
    return index.inner_product_terms()


def _scored(index, embeddings: torch.Tensor, terms, k: int, batch: int):
    """``search(start, stop)`` for :func:`_own_terms`' ``terms``: ``(divergences, ids)`` of rows
    ``start:stop``'s ``k - 1`` nearest others, each row's own column left out: the rows' query
    terms (``grad kappa``, their offsets), one product with every key into a reused buffer, one
    top-k (:func:`top_k_by_chunks`)."""
    keys, bias = terms
    buffer = torch.empty((min(batch, len(keys)), len(keys)), dtype=keys.dtype, device=keys.device)

    def search(start: int, stop: int):
        vectors, offsets = query_terms(index.model, embeddings[start:stop], False, keys.device, keys.dtype)
        scores = torch.addmm(bias, vectors, keys.T, out=buffer[:stop - start])
        scores[:, start:stop].diagonal().fill_(float("-inf"))  # each row's own item
        best, ids = top_k_by_chunks(scores, k - 1)
        return check_finite_output(offsets[:, None] - best, "the anchor divergences of the search",
                                   index.model.scale), ids
    return search


# Columns per chunk of top_k_by_chunks.
CHUNK_COLUMNS = 64


def top_k_by_chunks(scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.topk(scores, k, dim=1)`` of a wide ``(r, m)`` block, up to ties at the ``k``-th place,
    in two thirds of its time on the CPU: each row's columns are cut into chunks of
    :data:`CHUNK_COLUMNS`, and only the ``k`` chunks with the largest maxima are ranked. (The
    ``k``-th largest chunk maximum is at most the row's ``k``-th largest score, so every score
    above it lies in one of those chunks; one equal to it may be left for another equal one, a tie
    at the ``k``-th place.) A NaN's chunk has a NaN maximum, which ranks first, so the NaN reaches
    the result as with ``torch.topk``. Narrow blocks and other devices take ``torch.topk``."""
    rows, width = scores.shape
    chunks = width // CHUNK_COLUMNS
    if scores.device.type != "cpu" or chunks < 8 * k or not scores.is_contiguous():
        return torch.topk(scores, k, dim=1)
    maxima = scores[:, :chunks * CHUNK_COLUMNS].view(rows, chunks, CHUNK_COLUMNS).amax(dim=2)
    kept = torch.topk(maxima, k, dim=1, sorted=False).indices
    columns = (kept[:, :, None] * CHUNK_COLUMNS + torch.arange(CHUNK_COLUMNS)).reshape(rows, -1)
    if chunks * CHUNK_COLUMNS < width:  # the last, partial chunk: always ranked
        columns = torch.cat([columns, torch.arange(chunks * CHUNK_COLUMNS, width).expand(rows, -1)], dim=1)
    best, order = torch.topk(torch.gather(scores, 1, columns), k, dim=1)
    return best, torch.gather(columns, 1, order)


def umap_from_knn(indices: np.ndarray, distances: np.ndarray, seed: int = 0, n_epochs: int = DEFAULT_EPOCHS,
                  min_dist: float = MIN_DIST, progress: ProgressCallback | None = None) -> np.ndarray:
    """UMAP projection ``(n, 2)`` float32 of a precomputed kNN graph (``indices``/``distances`` ``(n, k)``,
    each row starting with the item itself).

    With ``progress(fraction, text)`` it is never silent for more than half a second or so
    (:func:`anchordiv.progress.run_reporting`): the first layout in a process first compiles
    umap-learn's kernels (:func:`warm_up`, its seconds counted), then the fuzzy graph and spectral
    start are counted in seconds, then each epoch as umap-learn's loop passes it. The layout is
    the one made without ``progress``, bit for bit."""
    seed = check_positive_int(seed, "seed", minimum=0)
    n_epochs = check_positive_int(n_epochs, "n_epochs")
    n_items, k = indices.shape
    init = "spectral" if n_items > k + 1 else "random"
    if progress is None:
        reducer = fitted_umap(indices, distances, seed, n_epochs, min_dist, init)
    else:
        watch = LayoutWatch(n_items, n_epochs, compiling=not _compiled)

        def work(stop: threading.Event):
            if watch.compiling:
                warm_up()
            watch.begin("start")
            return fitted_umap(indices, distances, seed, n_epochs, min_dist, init,
                               tqdm_kwds=epoch_reports(lambda done, total: watch.epoch(done, total, stop)))

        reducer = run_reporting(work, progress, watch.status, watch.news)
    _mark_compiled()
    return np.asarray(reducer.embedding_, dtype=np.float32)


def _mark_compiled() -> None:
    global _compiled
    _compiled = True


class LayoutStopped(Exception):
    """Raised inside umap-learn's epoch loop once the caller of a reported layout stopped listening
    (a page rerun): the layout's remaining epochs are not run."""


class LayoutWatch:
    """What a reported layout of ``n_items`` points over ``n_epochs`` has reached, set by the thread
    that lays it out and read, through :meth:`status`, by the one that reports: its phase
    (``"compile"``, ``"start"``, ``"epochs"``), when the phase began, the epochs done. Fractions
    are shared among the phases by their estimated seconds (:func:`layout_estimate`), and grow
    within the compile and the start by their seconds so far, up to 95 % of that phase's share."""

    def __init__(self, n_items: int, n_epochs: int, compiling: bool):
        self.n_items, self.n_epochs, self.compiling = n_items, n_epochs, compiling
        self.news = threading.Event()  # set at each epoch reported, so it is passed on at once
        layout = layout_estimate(n_items, n_epochs, compiled=True)
        self.seconds = {"compile": COMPILE_SECONDS if compiling else 0.0, "start": START_SHARE * layout,
                        "epochs": (1 - START_SHARE) * layout}
        self.phase, self.since, self.done, self.stopped = "", 0.0, 0, False
        self.begin("compile" if compiling else "start")

    def begin(self, phase: str) -> None:
        self.phase, self.since = phase, time.perf_counter()

    def epoch(self, done: int, total: int, stop: threading.Event) -> None:
        """umap-learn's loop has passed ``done`` of ``total`` epochs; :class:`LayoutStopped` once
        ``stop`` is set (raised once: a closing progress bar's last write passes)."""
        if stop.is_set() and not self.stopped:
            self.stopped = True
            raise LayoutStopped("the layout's progress is no longer heard")
        if self.phase != "epochs":
            self.begin("epochs")
        self.done, self.n_epochs = done, max(1, total)
        self.news.set()

    def status(self) -> tuple[float, str]:
        """``(fraction, text)`` of the layout now."""
        total = sum(self.seconds.values())
        before = {"compile": 0.0, "start": self.seconds["compile"],
                  "epochs": self.seconds["compile"] + self.seconds["start"]}[self.phase]
        elapsed = time.perf_counter() - self.since
        if self.phase == "epochs":
            share = self.done / self.n_epochs
            left = elapsed / self.done * (self.n_epochs - self.done) if self.done else self.seconds["epochs"]
            text = f"UMAP's layout of {self.n_items:,} points: epoch {self.done} of {self.n_epochs}, about {left:.0f} s left"
        else:
            share = min(0.95, elapsed / max(self.seconds[self.phase], 1e-9))
            text = (compiling_text(elapsed) if self.phase == "compile" else
                    f"UMAP's fuzzy graph and spectral start of {self.n_items:,} points, {elapsed:.0f} s")
        return (before + share * self.seconds[self.phase]) / total, text


class _EpochFile:
    """Where umap-learn's epoch bar is written (tqdm's ``file``, through umap's ``tqdm_kwds``): it
    reports its epochs only through tqdm, whose bar is drawn here as ``"{n}/{total}"`` and read
    back as ``on_epoch(n, total)``."""

    def __init__(self, on_epoch: Callable[[int, int], None]):
        self.on_epoch = on_epoch

    def write(self, text: str) -> int:
        counts = re.findall(r"(\d+)/(\d+)", text)
        if counts:
            self.on_epoch(int(counts[-1][0]), int(counts[-1][1]))
        return len(text)

    def flush(self) -> None:
        pass


def epoch_reports(on_epoch: Callable[[int, int], None]) -> dict:
    """umap-learn's ``tqdm_kwds`` for a layout that calls ``on_epoch(done, total)`` as its epochs pass,
    every :data:`EPOCH_REPORT_SECONDS` at most, at its start (0 done) and at its end (all done)."""
    return {"disable": False, "file": _EpochFile(on_epoch), "bar_format": "{n}/{total}", "ascii": True,
            "mininterval": EPOCH_REPORT_SECONDS, "miniters": 1, "leave": True}


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


def fitted_umap(indices: np.ndarray, distances: np.ndarray, seed: int, n_epochs: int, min_dist: float, init,
                tqdm_kwds: dict | None = None):
    """umap-learn's reducer fitted to the kNN graph ``indices``/``distances`` ``(n, k)``: its
    ``"precomputed"`` metric takes the graph as it is, and lets ``transform`` take distances too.
    ``tqdm_kwds`` go to its epochs' progress bar (:func:`epoch_reports`); it is given none after
    the fit, so that a ``transform`` draws none."""
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
                            n_jobs=1, init=init, tqdm_kwds=tqdm_kwds)
        # The graph comes from precomputed_knn; the matrix only sizes the fit (an empty one is
        # symmetric with a zero diagonal, as umap checks).
        reducer.fit(scipy.sparse.csr_matrix((n_items, n_items), dtype=np.float32))
    if tqdm_kwds is not None:
        reducer.set_params(tqdm_kwds=None)
    return reducer


def layout_estimate(n_items: int, n_epochs: int = DEFAULT_EPOCHS, compiled: bool | None = None) -> float:
    """Roughly how many seconds :func:`umap_from_knn` will take for ``n_items`` points on the reference
    machine, the kernels' compilation included when this process has not compiled them yet (or,
    given, unless ``compiled``)."""
    compiled = _compiled if compiled is None else compiled
    return n_items * LAYOUT_SECONDS_PER_POINT * n_epochs / DEFAULT_EPOCHS + (0.0 if compiled else COMPILE_SECONDS)


def graph_estimate(n_items: int) -> float:
    """Roughly how many seconds :func:`knn_graph` takes for ``n_items`` points under an anchor
    geometry on the reference machine, at this process's torch threads."""
    return n_items * n_items * GRAPH_SECONDS_PER_PAIR / max(1, torch.get_num_threads())


def projection_estimate(n_items: int, n_epochs: int = DEFAULT_EPOCHS) -> float:
    """Roughly how many seconds :func:`project` takes for ``n_items`` points: its kNN graph and its
    layout (with the compile, when this process has not compiled UMAP's kernels yet)."""
    return graph_estimate(n_items) + layout_estimate(n_items, n_epochs)


def is_compiled() -> bool:
    """Whether this process has compiled umap-learn's kernels (a layout, or :func:`warm_up`)."""
    return _compiled


def project(index: Index, embeddings: torch.Tensor, n_neighbors: int = DEFAULT_NEIGHBOURS, seed: int = 0,
            n_epochs: int = DEFAULT_EPOCHS, progress: ProgressCallback | None = None) -> np.ndarray:
    """UMAP projection ``(n, 2)`` of ``embeddings`` ``(n, d)`` under the geometry of ``index`` (built
    over the same ``embeddings``). ``progress(fraction, text)`` names the step: the kNN graph as
    its batches finish, then the layout with an estimate of its time (:func:`layout_estimate`)
    and, as :func:`umap_from_knn` reports it, its compile, start and epochs."""
    started = time.perf_counter()
    graph = project_graph(index, embeddings, n_neighbors, progress)
    return project_layout(graph, seed, n_epochs, progress, graph_seconds=time.perf_counter() - started)


def project_graph(index: Index, embeddings: torch.Tensor, n_neighbors: int = DEFAULT_NEIGHBOURS,
                  progress: ProgressCallback | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`project`'s first step, :func:`knn_graph`, reported as its step 1 of 2 (the share of
    the bar its estimate has of the whole projection's)."""
    n_items, k = len(embeddings), min(n_neighbors, len(embeddings))
    share = graph_share(n_items)

    def graph_step(fraction: float, done: str) -> None:
        progress(share * fraction, f"Step 1 of 2: each point's {k} nearest under this geometry ({done})")

    return knn_graph(index, embeddings, n_neighbors, progress=None if progress is None else graph_step)


def graph_share(n_items: int, n_epochs: int = DEFAULT_EPOCHS) -> float:
    """The share of :func:`project`'s progress bar its kNN graph fills: its estimated seconds'."""
    return graph_estimate(n_items) / max(projection_estimate(n_items, n_epochs), 1e-9)


def project_layout(graph: tuple[np.ndarray, np.ndarray], seed: int = 0, n_epochs: int = DEFAULT_EPOCHS,
                   progress: ProgressCallback | None = None, graph_seconds: float | None = None) -> np.ndarray:
    """:func:`project`'s second step, :func:`umap_from_knn` of its kNN ``graph``, reported as its step 2 of 2."""
    indices, distances = graph
    n_items = len(indices)
    if progress is None:
        return umap_from_knn(indices, distances, seed=seed, n_epochs=n_epochs)
    share = graph_share(n_items, n_epochs)
    took = "" if graph_seconds is None else f" (step 1 took {graph_seconds:.1f} s)"
    progress(share, f"Step 2 of 2: UMAP's layout of {n_items:,} points, about "
                    f"{layout_estimate(n_items, n_epochs):.0f} s{took}")
    return umap_from_knn(indices, distances, seed=seed, n_epochs=n_epochs, progress=lambda fraction, text: progress(
        share + (1 - share) * fraction, f"Step 2 of 2: {text}"))


def compiling_text(elapsed: float) -> str:
    """What a progress report says while umap-learn's kernels compile, ``elapsed`` seconds in."""
    return (f"Compiling UMAP's kernels (once per server process): {elapsed:.0f} s, "
            f"it takes about {COMPILE_SECONDS:.0f} s")


def warm_up(progress: ProgressCallback | None = None) -> float:
    """Compile umap-learn's numba kernels with a tiny projection, and a point placed on it by
    :func:`transform_points`; returns the seconds it took.

    The first projection in a process spends :data:`COMPILE_SECONDS` or so compiling, whatever its
    size, and the kernels it compiles are the ones every later projection runs; this times that
    compile apart from a projection's own work. A layout reported (:func:`umap_from_knn` with
    ``progress``) calls it first when nothing has compiled the kernels yet; ``progress`` hears its
    seconds every half second. (The explorer does not call it at start-up: compiling holds
    Python's lock, and would stall every session's moves of p meanwhile.)"""
    start = time.perf_counter()

    def compile_kernels(stop: threading.Event | None = None) -> None:
        rng = np.random.default_rng(0)
        n_items, k = 40, 5
        indices = np.column_stack([np.arange(n_items), rng.integers(0, n_items, (n_items, k - 1))]).astype(np.int64)
        distances = np.column_stack([np.zeros(n_items), rng.random((n_items, k - 1))]).astype(np.float32)
        layout = umap_from_knn(indices, distances, n_epochs=2)
        transform_points(restored_reducer(indices, distances, layout), indices[:2], distances[:2])

    def status() -> tuple[float, str]:
        elapsed = time.perf_counter() - start
        return min(0.95, elapsed / COMPILE_SECONDS), compiling_text(elapsed)

    if progress is None:
        compile_kernels()
    else:
        run_reporting(compile_kernels, progress, status)
    return time.perf_counter() - start


def cached_projection(key: str, build: Callable[[], np.ndarray]) -> np.ndarray:
    """``build()``'s projection, stored under the anchordiv cache by ``key`` (which must name everything
    the projection depends on: data, encoder, anchors, model, weights, sample, seed) and reused."""
    from .cache import cached_array

    return np.asarray(cached_array(_cache_path(key), key, build))


def is_cached_projection(key: str) -> bool:
    """Whether :func:`cached_projection` holds a projection for ``key`` (its record names ``key``; the
    file's bytes are checked only when it is read, and a damaged one is made again then)."""
    import json

    try:
        return json.loads(_cache_path(key, ".npy.json").read_text()).get("key") == key
    except (OSError, ValueError, AttributeError):
        return False


def cached_graph(key: str, build: Callable[[], tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """``build()``'s kNN graph ``(indices, distances)`` (:func:`knn_graph`), stored as
    :func:`cached_projection` stores a layout, by ``key`` (everything the graph depends on), and
    reused: a map's points placed after a restart need its graph, not a new one."""
    from .cache import cached_array

    built: list[tuple[np.ndarray, np.ndarray]] = []

    def part(which: int) -> np.ndarray:
        if not built:
            built.append(build())
        return built[0][which]

    # Copies, writable: umap-learn marks disconnected neighbours in the arrays it is given.
    return (np.array(cached_array(_cache_path(key, "-graph-ids.npy"), key, lambda: part(0))),
            np.array(cached_array(_cache_path(key, "-graph-distances.npy"), key, lambda: part(1))))


def _cache_path(key: str, suffix: str = ".npy"):
    from .cache import cache_dir

    return cache_dir() / "projections" / (hashlib.sha256(key.encode()).hexdigest()[:24] + suffix)
