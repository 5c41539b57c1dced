"""Exact anchor-divergence retrieval over a :class:`~anchordiv.store.GalleryStore` (docs/design.md §4, §11).

:class:`ShardedAnchorIndex` returns what :class:`~anchordiv.AnchorIndex` returns on the store's
float32 rows (up to ties within float32 rounding, docs/design.md §9), but never holds the gallery
in memory at float32: each shard's ``eta_y`` is read from disk one block at a time during a
search, and the only per-item arrays kept are the per-component ``kappa_k(eta_y)`` ``(rows, K)``.
A search is a map (each :class:`ShardScanner`'s
top-``k`` of ``query . key + bias`` over its shards) followed by a reduce (:func:`~anchordiv.topk.merge_top_k`).
The engine (a :class:`ScanEngine`) decides where the scanners run: ``"local"``, one scanner in this
process; ``"ray"``, one Ray task per share of the shards, reading the store's files itself (so every
node must see the store's folder at the same path) and returning only its top-``k``. What a scanner
is to do travels as a :data:`ScanJob`, a picklable function of the scanner (e.g.
``functools.partial(ShardScanner.top_k, queries=..., k=..., exclude=...)``), never a method name.

Reverse direction (``KL(p_y || p_x)``): the keys ``grad kappa(eta_y)`` are ``(G, d)``, as large as
the gallery itself at float32 (2 GB for 10^6 x 512) and too costly to keep; float16 copies on disk
would round the keys and break exactness. So they are recomputed from ``eta_y`` block by block at
each search: exact, and memory stays bounded, but every search costs one ``grad kappa`` per
gallery item (``O(G N d)`` for an empirical model with ``N`` anchors). Search many queries per call:
they share that pass.

A store changed on disk after an index was built would be scanned with the old rows' ``kappa_k``:
wrong divergences, and no error. So the index records each shard's
:class:`~anchordiv.store.ShardFingerprint` before it reads the shard (``os.stat`` and the ``.npy``
header: cheap), and every read of a shard (a scan, in this process or a Ray task, the slider's
candidate rows, each slider move) first checks it: a changed shard is a ``ValueError`` naming it.
"""
from __future__ import annotations

import copy
import threading
import weakref
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol, Sequence

import numpy as np
import torch

from ._validation import ArrayLike, check_finite_output, check_positive_int
from .device import available_memory, resolve_device
from .models.base import AnchorModel, like_input
from .pass_pool import row_parts, run_parts
from .search import check_fit, check_reweighting, query_terms, top_k_inner_product
from .slider import GridPass, MixtureSlider
from .store.fingerprint import ShardFingerprint
from .store.reader import GalleryStore
from .topk import RunningTopK, check_top_k, exclusion_matrix, merge_top_k

ENGINES = ("local", "ray")
# Rows scored at a time: 16 MB of float32 at d = 512. Larger blocks are no faster here (the scan
# is bound by reading the store), and each block's float32 copies count in resident memory.
SCAN_BLOCK_ELEMENTS = 2**22
# A store whose rows take at most this share of a GPU's free memory is read from its files once and
# kept on the GPU in the store's own dtype: later passes (a new query's slider, a fallback search)
# then read GPU memory rather than disk and the host-to-device link. The rest stays free for the
# passes' own blocks and for other work.
RESIDENT_SHARE = 0.5
# On a CPU, a local index keeps a store's rows at float32 (with each row's norm) when they take at
# most this share of the host's available memory: a pass then reads 4 bytes a value from memory at
# its bandwidth, where a float16 shard must be converted first (about 1 GB/s of float16 with fresh
# arrays, 9 GB/s into a kept buffer; a float32 (n, d) @ (d, 2) runs at about 21 GB/s, measured on
# the 2-core CPU of docs/benchmarks.md). A larger store is read from its files, into kept buffers.
HOST_RESIDENT_SHARE = 0.25
# Rows of kept float32 rows a pass takes at a time (views, nothing copied): 128 MB at d = 512. Fewer,
# larger blocks spend less on each block's small operations (0.178 s against 0.160 s for a new
# query's pass over 10^6 x 512 with blocks of 8,192 and of 65,536 rows, measured on that CPU).
HOST_BLOCK_ELEMENTS = 2**25


class _HostRows:
    """A store's shards at float32 and each row's norm, read once in this process and shared by every
    scanner that keeps rows over the same :class:`GalleryStore` object (the explorer opens a store
    once and builds a geometry over it per pair of anchor sets). A shard is read again when the
    fingerprint asked for is not the one it was read under."""

    def __init__(self, store: GalleryStore):
        self.store = store
        self._shards: dict[int, tuple[ShardFingerprint, torch.Tensor, torch.Tensor]] = {}
        self._lock = threading.Lock()

    def shard(self, number: int, fingerprint: ShardFingerprint) -> tuple[torch.Tensor, torch.Tensor]:
        """Shard ``number``'s rows ``(n, d)`` float32 and their norms ``(n,)``, as read under ``fingerprint``."""
        with self._lock:
            kept = self._shards.get(number)
            if kept is None or kept[0] != fingerprint:
                shard = self.store.shards[number]
                rows = torch.empty(tuple(shard.shape), dtype=torch.float32)
                start = self.store.shard_starts[number]
                for first, block in self.store.scan_blocks(number, max(1, SCAN_BLOCK_ELEMENTS // self.store.dim)):
                    rows[first - start:first - start + block.shape[0]] = block
                kept = self._shards[number] = (fingerprint, rows, torch.linalg.vector_norm(rows, dim=1))
            return kept[1], kept[2]


_HOST_ROWS: "weakref.WeakKeyDictionary[GalleryStore, _HostRows]" = weakref.WeakKeyDictionary()
_HOST_ROWS_LOCK = threading.Lock()


def _host_rows(store: GalleryStore) -> _HostRows:
    with _HOST_ROWS_LOCK:
        if store not in _HOST_ROWS:
            _HOST_ROWS[store] = _HostRows(store)
        return _HOST_ROWS[store]


def kept_row_blocks(store: GalleryStore) -> Iterator[tuple[int, torch.Tensor]] | None:
    """``(start, rows (n, d))`` float32 blocks of ``store``'s rows as an index over this store object
    keeps them in host memory (views, nothing copied; each shard's fingerprint checked after its
    read), or ``None`` where no index keeps them: a scan of the whole store (the cosine baseline)
    then reads memory, not the files at float16."""
    with _HOST_ROWS_LOCK:
        host = _HOST_ROWS.get(store)
    if host is None:
        return None
    fingerprints = store.shard_fingerprints(range(len(store.shards)))
    step = max(1, HOST_BLOCK_ELEMENTS // store.dim)

    def blocks() -> Iterator[tuple[int, torch.Tensor]]:
        for number, start in enumerate(store.shard_starts[:len(store.shards)]):
            rows, _ = host.shard(number, fingerprints[number])
            store.check_unchanged({number: fingerprints[number]})
            for offset in range(0, rows.shape[0], step):
                yield int(start) + offset, rows[offset:offset + step]
    return blocks()


class ShardScanner:
    """The map side of a sharded search: some shards of a store, their per-item ``kappa_k(eta_y)``,
    and exact scans over them. :class:`ShardedAnchorIndex` holds one (``engine="local"``), or runs
    one in each Ray task (``engine="ray"``); every method takes and returns small, picklable values.

    Parameters
    ----------
    model : the fitted anchor model (:meth:`with_model` gives the scanner for other weights).
    store : a :class:`GalleryStore`, or its folder (a Ray task opens the store itself).
    shards : the shard numbers this scanner serves (``None``: all). reverse, device, block_rows:
        as :class:`ShardedAnchorIndex`. kappa_state : an earlier scanner's :meth:`kappa_state` for
        these shards; without it the shards' sha256 are checked (``ValueError`` naming a damaged
        one) and ``kappa_k`` computed, one pass over them. fingerprints : the shards'
        :meth:`~anchordiv.store.GalleryStore.shard_fingerprints` taken before their terms were
        computed (needed with ``kappa_state``; without either, taken here); every read of a shard
        checks them first (``ValueError`` naming a shard changed since). keep_rows : on a CPU, keep
        the shards' rows at float32 in this process when they fit (:data:`HOST_RESIDENT_SHARE`),
        shared with every scanner over the same store object: a local index's scanner does, a Ray
        task's (which ends with its scan) does not.
    """

    def __init__(self, model: AnchorModel, store: GalleryStore | str | Path, shards: Sequence[int] | None = None,
                 reverse: bool = False, device: str | torch.device | None = None, block_rows: int | None = None,
                 kappa_state: dict[int, torch.Tensor] | None = None,
                 fingerprints: dict[int, ShardFingerprint] | None = None, keep_rows: bool = False):
        self.store = store if isinstance(store, GalleryStore) else GalleryStore.open(store)
        self.model, self.reverse, self.device = model, bool(reverse), resolve_device(device)
        self.block_rows = (max(1, SCAN_BLOCK_ELEMENTS // self.store.dim) if block_rows is None
                           else check_positive_int(block_rows, "block_rows"))
        self.shards = list(range(len(self.store.shards))) if shards is None else [int(n) for n in shards]
        if kappa_state is not None and fingerprints is None:
            raise ValueError("kappa_state needs the fingerprints of the shards it was computed from: pass the "
                             "earlier scanner's fingerprints= too.")
        # Shard number -> its blocks on the GPU, filled as they are first read (None: read every pass).
        self._resident: dict[int, list[tuple[int, torch.Tensor]]] | None = None
        self._resident_dtype = self._device_dtype()
        if self._resident_dtype is not None:
            self._resident = {}
        # The store's rows at float32 on this host (None: read from the files every pass).
        self._host_rows = _host_rows(self.store) if keep_rows and self._fits_on_host() else None
        # Taken before the shards are read, so that a change during the pass below shows at the next read.
        self.fingerprints = (self.store.shard_fingerprints(self.shards) if fingerprints is None
                             else {number: fingerprints[number] for number in self.shards})
        # What gallery_state gives without gradients: (rows,) for a plain model, (rows, K) for a mixture;
        # computed once (one pass over the shards) unless an earlier scanner's are handed over. That
        # pass reads every shard anyway, so their sha256 are checked first: a damaged shard is named.
        if kappa_state is None:
            self.store.check_shards(self.shards)
            kappa_state = {number: torch.cat([model.gallery_state(eta, with_grad=False)[0]
                                              for _, eta in self.eta_blocks(number)]) for number in self.shards}
        self._kappa_state = {number: torch.as_tensor(kappa_state[number]).to(self.device) for number in self.shards}
        self._bias: dict[int, torch.Tensor] | None = None  # -kappa(eta_y) under model's weights, once needed

    def _device_dtype(self) -> torch.dtype | None:
        """The dtype this scanner's shards stay in on its GPU: float32 when that fits
        (:data:`RESIDENT_SHARE` of the free memory; a pass then reads them as they are, where float16
        rows would be converted at every pass), else the store's own dtype when that fits, else
        ``None`` (read from the files every pass). Always ``None`` on a CPU, whose page cache keeps
        the files already (:data:`HOST_RESIDENT_SHARE` decides there)."""
        if self.device.type != "cuda":
            return None
        values = sum(self.store.shards[number].shape[0] for number in self.shards) * self.store.dim
        free, _ = torch.cuda.mem_get_info(self.device)
        for dtype in (torch.float32, getattr(torch, self.store.dtype)):
            if values * torch.empty((), dtype=dtype).element_size() <= RESIDENT_SHARE * free:
                return dtype
        return None

    def _fits_on_host(self) -> bool:
        """Whether this scanner's shards can stay in host memory at float32 (:data:`HOST_RESIDENT_SHARE`),
        or are kept there already for this store object (another geometry over it holds them: the
        memory they take is no longer available, but keeping them costs nothing more)."""
        if self.device.type != "cpu":
            return False
        with _HOST_ROWS_LOCK:
            if self.store in _HOST_ROWS:
                return True
        rows = sum(self.store.shards[number].shape[0] for number in self.shards)
        return rows * self.store.dim * 4 <= HOST_RESIDENT_SHARE * available_memory(self.device)

    @property
    def keeps_rows(self) -> str:
        """Where the rows a pass reads are: ``"gpu"`` (kept there in the store's dtype), ``"host"``
        (kept in this process at float32) or ``"files"`` (read and converted every pass)."""
        return "gpu" if self._resident is not None else "host" if self._host_rows is not None else "files"

    def kept_rows(self, positions: np.ndarray) -> torch.Tensor | None:
        """The store's float32 rows at global ``positions`` ``(n,)`` from the rows kept in memory or on
        the GPU (``None`` where this scanner keeps none of a shard asked for, or does not serve it): a
        slider's candidates then cost a gather, not a file read per row."""
        shard_of = np.searchsorted(self.store.shard_starts, positions, side="right") - 1
        numbers = [int(number) for number in np.unique(shard_of)]
        if not set(numbers) <= set(self.shards):
            return None
        if self._host_rows is not None:
            kept = {number: self._host_rows.shard(number, self.fingerprints[number])[0] for number in numbers}
        elif self._resident is not None and all(number in self._resident for number in numbers):
            kept = {number: self._resident[number][0][1] for number in numbers}
        else:
            return None
        device = next(iter(kept.values())).device
        result = torch.empty((positions.size, self.store.dim), dtype=torch.float32, device=device)
        for number, rows in kept.items():
            picked = torch.as_tensor(np.flatnonzero(shard_of == number), device=device)
            local = torch.as_tensor(positions[picked.cpu().numpy()] - self.store.shard_starts[number], device=device)
            result[picked] = rows[local].float()
        return result

    def kappa_state(self) -> dict[int, torch.Tensor]:
        """Shard number -> what ``model.gallery_state`` gives without gradients, on the CPU: hand it to
        another scanner of the same shards (``kappa_state=``) to spare it the pass over them."""
        return {number: state.cpu() for number, state in self._kappa_state.items()}

    def component_kappa(self) -> dict[int, torch.Tensor]:
        """Shard number -> ``kappa_k(eta_y)`` ``(rows, K)`` (``K = 1`` for a plain model), on ``device``."""
        return {number: state if state.ndim == 2 else state[:, None] for number, state in self._kappa_state.items()}

    def eta_blocks(self, number: int) -> Iterator[tuple[int, torch.Tensor]]:
        """``(start, eta)`` for shard ``number``: rows read from the file and turned into float32
        ``eta = scale * y / ||y||`` ``(n, d)`` on ``device``, ``block_rows`` at a time; ``start`` global."""
        for _, start, _, block, _ in self._blocks([number]):
            yield start, self._eta(block)

    def _blocks(self, numbers: Sequence[int]) -> Iterator[tuple[int, int, int, torch.Tensor, torch.Tensor | None]]:
        """``(shard, start, offset, rows, norms)`` for each block of shards ``numbers``: the store's
        float32 rows ``(n, d)`` from global row ``start``, ``offset`` rows into the shard (where its
        ``kappa_k`` are), and their norms ``(n,)`` where kept with them (else ``None``); on the GPU
        where the shards stay there, else on the CPU (kept there, or read from the files into buffers
        reused from block to block: use a block before asking for the next). Each shard's fingerprint
        is checked before and after its blocks are read (and before each pass over kept blocks), so a
        shard changed before or during the read is refused, never mixed with the terms of the old one."""
        for number in numbers:
            self.store.check_unchanged({number: self.fingerprints[number]})
            shard_start = self.store.shard_starts[number]
            if self._host_rows is not None:
                rows, norms = self._host_rows.shard(number, self.fingerprints[number])
                self.store.check_unchanged({number: self.fingerprints[number]})  # a first read is checked after too
                step = max(self.block_rows, HOST_BLOCK_ELEMENTS // self.store.dim)
                for offset in range(0, rows.shape[0], step):
                    end = offset + step
                    yield number, shard_start + offset, offset, rows[offset:end], norms[offset:end]
                continue
            blocks = (self.store.scan_blocks(number, self.block_rows) if self._resident is None
                      else self._resident.get(number) or self._read_to_device(number))
            for start, block in blocks:
                yield number, start, start - shard_start, block.float(), None
            self.store.check_unchanged({number: self.fingerprints[number]})
            if self._resident is not None:  # kept once the shard is known unchanged through the read
                self._resident[number] = blocks

    def _read_to_device(self, number: int) -> list[tuple[int, torch.Tensor]]:
        """Shard ``number`` as one tensor on the device in :meth:`_device_dtype`, ``[(start, rows)]``: on
        a GPU a pass is then a few large products, not many small launches."""
        rows = [block.to(self.device, self._resident_dtype)
                for _, block in self.store.shard_blocks(number, self.block_rows)]
        return [(self.store.shard_starts[number], torch.cat(rows))]

    def _eta(self, block: torch.Tensor) -> torch.Tensor:
        """``eta`` of a block, computed where the block is (on the CPU as AnchorIndex computes it,
        or on the GPU for kept shards), then on ``device``."""
        return self.model.natural_parameters(block, "gallery").to(self.device)

    def iter_gallery_terms(self, shards: Sequence[int] | None = None
                           ) -> Iterator[tuple[int, torch.Tensor, torch.Tensor, torch.Tensor]]:
        """``(start, rows (n, d), factors (n,), kappa (n, K))`` over ``shards`` (default: this
        scanner's), one block at a time: the store's float32 rows, ``eta_y = factors[:, None] * rows``
        up to float32 rounding (``factors = scale / ||row||``), and the block's ``kappa_k``. The
        slider's one pass takes ``eta_y . g`` as ``factor * (row . g)``, so no scaled ``(n, d)`` copy
        is made. Rows read from the files are a buffer the next block refills: use each block
        before asking for the next."""
        kappa, scale = self.component_kappa(), float(self.model.scale)
        for number, start, offset, block, norms in self._blocks(self.shards if shards is None else shards):
            rows = block.to(self.device)
            factors = scale / (torch.linalg.vector_norm(rows, dim=1) if norms is None else norms)
            yield start, rows, factors, kappa[number][offset:offset + rows.shape[0]]

    def with_model(self, model: AnchorModel) -> "ShardScanner":
        """This scanner for ``model``, the same fitted components at other weights: shares the shards and
        ``kappa_k`` (nothing is recomputed but the ``O(G K)`` mix at the next scan)."""
        if model is self.model:
            return self
        scanner = copy.copy(self)
        scanner.model, scanner._bias = model, None
        return scanner

    def top_k(self, queries: torch.Tensor, k: int, exclude: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """The best ``min(k, rows)`` scores ``query . key + bias`` ``(Q, .)`` over this scanner's shards and
        their global ids, on the CPU; ``exclude`` ``(Q, m)`` global ids or ``None``."""
        queries = queries.to(self.device)
        exclude = None if exclude is None else exclude.to(self.device)
        bias = None if self.reverse else self._mixed_bias()
        best = RunningTopK(k)
        for number, start, offset, block, _ in self._blocks(self.shards):
            eta = self._eta(block)
            if self.reverse:
                keys, block_bias = self._reverse_terms(self.model, eta)
            else:
                keys, block_bias = eta, bias[number][offset:offset + eta.shape[0]]
            shifted = None if exclude is None else exclude - start
            scores, ids = top_k_inner_product(queries, keys, block_bias, min(k, eta.shape[0]), shifted)
            best.add(scores, ids + start)
        scores, ids = best.result()
        return scores.cpu(), ids.cpu()

    def grid_top_k(self, job: GridPass) -> tuple[torch.Tensor, torch.Tensor]:
        """The certified slider's one pass over this scanner's shards (results on the CPU): its shards
        dealt among the host's cores when they are many rows (:mod:`anchordiv.pass_pool`)."""
        rows = sum(self.store.shards[number].shape[0] for number in self.shards)
        count = min(len(row_parts(rows, self.device)), len(self.shards))
        groups = [self.shards[first::count] for first in range(count)]
        parts = run_parts(lambda group: job.run(self.iter_gallery_terms(group)), groups)
        scores, ids = parts[0] if len(parts) == 1 else job.merge(parts)
        return scores.cpu(), ids.cpu()

    def _mixed_bias(self) -> dict[int, torch.Tensor]:
        """Shard number -> ``-kappa(eta_y)`` ``(rows,)`` under the model's weights, mixed at the first scan."""
        if self._bias is None:
            self._bias = {number: -self.model.combine_state((state, None))[0]
                          for number, state in self._kappa_state.items()}
        return self._bias

    @staticmethod
    def _reverse_terms(model: AnchorModel, eta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys ``grad kappa(eta_y)`` ``(n, d)`` and bias ``kappa - grad . eta`` ``(n,)`` of one block."""
        kappa, grad = model.combine_state(model.gallery_state(eta, with_grad=True))
        bias = kappa - (grad * eta).sum(dim=1)
        return grad, check_finite_output(bias, "the gallery's conjugate terms", model.scale)


ScanJob = Callable[[ShardScanner], Any]
"""What a scanner is to do: a function of one :class:`ShardScanner` whose result is small (a top-``k``,
per-shard terms). It must pickle (a module-level function, or a ``functools.partial`` of one or of a
:class:`ShardScanner` method, with picklable arguments), since the Ray engine sends it to its tasks."""


class ScanEngine(Protocol):
    """Where a sharded index's scanners run; every engine offers this one interface.

    * ``workers``: how many scanners share a scan.
    * ``put(value)``: a handle for ``value`` that :meth:`run` accepts in its place (the value itself
      locally; an object reference in Ray's store, sent once rather than with every task).
    * ``run(model, job)``: ``job(scanner)`` for each scanner, the scanner serving ``model`` (or its
      handle): the results, one per worker. A scanner's ``ValueError`` is raised here as itself.
    """

    workers: int

    def put(self, value: Any) -> Any: ...

    def run(self, model: Any, job: ScanJob) -> list[Any]: ...


class _LocalEngine:
    """One scanner over every shard, in this process (a :class:`ScanEngine`)."""

    workers = 1

    def __init__(self, scanner: ShardScanner):
        self.scanner = scanner

    def put(self, value: Any) -> Any:
        return value

    def run(self, model: AnchorModel, job: ScanJob) -> list[Any]:
        """``[job(scanner)]`` with the scanner for ``model``'s weights."""
        return [job(self.scanner.with_model(model))]


class _RayEngine:
    """Ray tasks over the store's files, each over every ``workers``-th shard (a :class:`ScanEngine`).
    Tasks, not actors: a task holds a CPU only while it scans, so several indexes (and a user's other
    Ray work) share a small cluster without waiting for each other. What a task would recompute, the
    per-item ``kappa_k``, is computed once by the first tasks and kept in Ray's object store."""

    def __init__(self, model: AnchorModel, store: GalleryStore, fingerprints: dict[int, ShardFingerprint],
                 reverse: bool, device: torch.device | None, block_rows: int | None, address: str | None,
                 workers: int | None):
        from .ray_runtime import connect

        self._ray = connect(address)
        n_shards = len(store.shards)
        resources = self._ray.cluster_resources()
        count = min(n_shards, max(1, int(resources.get("CPU", 1))) if workers is None
                    else check_positive_int(workers, "workers"))
        gpus = 1 if resources.get("GPU", 0) >= count else 0
        self._scan = self._ray.remote(num_cpus=1, num_gpus=gpus)(_scan_shards)
        self._groups = [list(range(first, n_shards, count)) for first in range(count)]
        # The driver's fingerprints, not the tasks' own: a task on any node refuses a shard that is not
        # the file the driver recorded before the first tasks read it.
        self._fingerprints = [{number: fingerprints[number] for number in group} for group in self._groups]
        # Every node must see the store at this path (a shared file system).
        self._settings = (str(Path(store.directory).resolve()), reverse, None if device is None else str(device),
                          block_rows)
        self._kappa: list[Any] = [None] * count
        self._kappa = [self.put(state) for state in self.run(self.put(model), ShardScanner.kappa_state)]

    @property
    def workers(self) -> int:
        return len(self._groups)

    def put(self, value: Any) -> Any:
        return self._ray.put(value)

    def run(self, model: Any, job: ScanJob) -> list[Any]:
        """``job(scanner)`` in one task per shard group, for ``model`` (or its object ref). A task's
        ``ValueError`` (a damaged or changed shard, named) is raised here as its one line, without the
        worker's traceback that Ray's error carries."""
        try:
            return self._ray.get([self._scan.remote(job, model, group, kappa, prints, self._settings)
                                  for group, kappa, prints in zip(self._groups, self._kappa, self._fingerprints)])
        except self._ray.exceptions.RayTaskError as error:
            if isinstance(error.cause, ValueError):
                raise ValueError(str(error.cause)) from error
            raise


def _scan_shards(job: ScanJob, model: AnchorModel, shards: list[int], kappa_state: dict[int, torch.Tensor] | None,
                 fingerprints: dict[int, ShardFingerprint], settings: tuple) -> Any:
    """One Ray task: a :class:`ShardScanner` over ``shards`` (given their ``kappa_state`` when known, and
    the driver's ``fingerprints`` of them) runs ``job``."""
    folder, reverse, device, block_rows = settings
    scanner = ShardScanner(model, folder, shards, reverse, device, block_rows, kappa_state=kappa_state,
                           fingerprints=fingerprints)
    return job(scanner)


class _StoreSlider(MixtureSlider):
    """A slider over a :class:`ShardedAnchorIndex`: a certified move reads nothing from the store, only
    the candidates' terms kept from it, so each move first checks that the store is still the one
    those terms came from."""

    def __init__(self, index: "ShardedAnchorIndex", query: ArrayLike, **options: Any):
        self._check_store = index.check_unchanged
        super().__init__(index, query, **options)

    def at(self, p: float) -> tuple[Any, Any, bool]:
        self._check_store()
        return super().at(p)


class ShardedAnchorIndex:
    """Exact anchor-divergence retrieval over a gallery store: ranks it by ``D(x -> y)`` ascending
    (``reverse=True``: ``KL(p_y || p_x)``), with the :class:`~anchordiv.search.Index` contract and
    the results of ``AnchorIndex(model, store.rows(all), reverse)``; ``ids`` are global gallery
    positions (``store.ids[position]`` gives a row's external id).

    Parameters
    ----------
    model : a fitted anchor model of the store's dimension. store : a :class:`GalleryStore`.
    reverse : rank by ``KL(p_y || p_x)`` instead (keys recomputed per search; see the module doc).
    engine : ``"local"`` (scan in this process) or ``"ray"`` (scan in Ray tasks, each over a share
        of the shards; the merge is a reduce here). device : where blocks are scored (``None``: CUDA
        when available, else CPU; a Ray actor decides for itself). block_rows : gallery rows read and
        scored at a time (default: 16 MB of float32 per block). address : the Ray cluster to join
        (``None``: a local instance, or ``RAY_ADDRESS``; see :func:`anchordiv.ray_runtime.connect`).
        workers : Ray tasks per scan (default: one per CPU of the cluster, at most one per shard).

    Building reads every shard once (for ``kappa_k``) and checks its sha256 against the manifest
    first: a damaged or changed shard is a ``ValueError`` naming it, never searched. So is a shard
    changed on disk after the index was built (:meth:`check_unchanged`, before every read). Memory: one
    block per scanner, ``component_kappa`` (``G K`` floats, here and in the scanners) and the
    candidates of a search. For a :class:`~anchordiv.MixtureAnchors`, :meth:`with_model` re-mixes
    the stored per-component ``kappa_k`` at other weights in ``O(G K)``.
    """

    higher_is_closer = False

    def __init__(self, model: AnchorModel, store: GalleryStore, reverse: bool = False, engine: str = "local",
                 device: str | torch.device | None = None, block_rows: int | None = None,
                 address: str | None = None, workers: int | None = None):
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}; got {engine!r}.")
        if not isinstance(store, GalleryStore):
            raise ValueError(f"store must be a GalleryStore (GalleryStore.open(folder)); got {type(store).__name__}.")
        if engine == "local" and (address is not None or workers is not None):
            raise ValueError("address and workers are for engine='ray'; drop them or pass engine='ray'.")
        self.device = resolve_device(device)
        model.check_fitted()
        if store.dim != model.n_features_in_:
            raise ValueError(f"the store has dimension {store.dim} but the anchors have dimension "
                             f"{model.n_features_in_}; embed images and anchor texts with the same model.")
        self.model, self.store, self.reverse, self.engine = model, store, bool(reverse), engine
        self._fingerprints = store.shard_fingerprints(range(len(store.shards)))
        if engine == "local":
            self._engine: ScanEngine = _LocalEngine(
                ShardScanner(model, store, None, reverse, self.device, block_rows, fingerprints=self._fingerprints,
                             keep_rows=True))
        else:
            self._engine = _RayEngine(model, store, self._fingerprints, reverse,
                                      None if device is None else self.device, block_rows, address, workers)
        self._n_gallery = len(store)
        self._fit_token = model.fit_token()
        self._weights = model.mixing_weights()
        self._model_handle = self._engine.put(model)
        per_shard: dict[int, torch.Tensor] = {}
        for part in self.map_scanners(ShardScanner.component_kappa):
            per_shard.update(part)
        self._kappa = [per_shard[number].to(self.device) for number in range(len(store.shards))]

    def __len__(self) -> int:
        return self._n_gallery

    # -- what a p-slider needs ----------------------------------------------------------------
    @property
    def fit_token(self):
        """The fit of the model the stored terms belong to (compare with ``model.fit_token()``)."""
        return self._fit_token

    @property
    def component_kappa(self) -> list[torch.Tensor]:
        """Per shard, ``kappa_k(eta_y)`` ``(rows, K)`` (``K = 1`` for a plain model), on ``device``."""
        return self._kappa

    def grid_top_k(self, job: GridPass) -> tuple[torch.Tensor, torch.Tensor]:
        """The certified slider's one pass (:class:`~anchordiv.slider.GridPass`): each scanner runs it
        over its shards, and the parts are merged here."""
        return job.merge(self.map_scanners(partial(ShardScanner.grid_top_k, job=job)))

    def check_unchanged(self) -> None:
        """``ValueError`` naming a shard of the store that changed on disk since this index was built
        (its terms would no longer match its rows), with the fix. Cheap: one ``fstat`` and a header
        read per shard."""
        self.store.check_unchanged(self._fingerprints)

    def gallery_rows(self, ids: ArrayLike) -> tuple[torch.Tensor, torch.Tensor]:
        """``(eta (n, d), kappa (n, K))`` at global positions ``ids`` ``(n,)``, on ``device``: reads
        only those rows of the store (the slider's candidates), between two :meth:`check_unchanged`."""
        positions = torch.as_tensor(np.asarray(ids, dtype=np.int64).reshape(-1))
        self.check_unchanged()
        kept = self._engine.scanner.kept_rows(positions.numpy()) if self.engine == "local" else None
        rows = self.store.rows(positions) if kept is None else kept
        self.check_unchanged()
        eta = self.model.natural_parameters(rows, "gallery").to(self.device)
        wanted = positions.numpy()
        shard_of = np.searchsorted(self.store.shard_starts, wanted, side="right") - 1
        result = torch.empty(wanted.size, self._kappa[0].shape[1], dtype=self._kappa[0].dtype, device=self.device)
        for number in np.unique(shard_of):
            picked = np.flatnonzero(shard_of == number)
            local = torch.as_tensor(wanted[picked] - self.store.shard_starts[number], device=self.device)
            result[torch.as_tensor(picked, device=self.device)] = self._kappa[number][local]
        return eta, result

    def slider(self, query: ArrayLike, k: int = 10, exclude: Any = None, grid: Any = None,
               candidates: int | None = None) -> MixtureSlider:
        """A certified ``p`` slider for one ``query`` ``(d,)`` over this index's two-component
        :class:`~anchordiv.MixtureAnchors`, as :meth:`anchordiv.AnchorIndex.slider` (same arguments,
        same results up to ties; docs/design.md §9-§10): its one pass is a map over the scanners (never a float32
        copy of the gallery); ``slider.at(p)`` gives ``(values, ids, certified)``, and an uncertified
        move falls back to ``with_model(m).search`` (one pass over the store). Every move first checks
        that the store is unchanged (:meth:`check_unchanged`): its candidates' terms came from the store."""
        return _StoreSlider(self, query, k=k, exclude=exclude, grid=grid, candidates=candidates)

    @property
    def workers(self) -> int:
        """How many scanners share a scan: 1 locally, the Ray tasks per scan with ``engine="ray"``."""
        return self._engine.workers

    def map_scanners(self, job: ScanJob) -> list[Any]:
        """``job(scanner)`` for each scanner of this index (for its model), where the engine runs them:
        the results, one per worker (:attr:`workers`). ``job`` must pickle (see :data:`ScanJob`); e.g.
        a benchmark sends a probe of the worker process's memory."""
        return self._engine.run(self._model_handle, job)

    # -- re-weighting ------------------------------------------------------------------------
    def with_model(self, model: AnchorModel) -> "ShardedAnchorIndex":
        """A new index over the same store and scanners for ``model``, a model with this index's fitted
        components at other weights (e.g. ``index.model.with_weights([p, 1 - p])``): the stored
        ``kappa_k`` are re-mixed in ``O(G K)`` at the next search, nothing is read from disk. This
        index is unchanged."""
        check_reweighting(model, self._fit_token, "ShardedAnchorIndex(model, store)")
        index = copy.copy(self)
        index.model = model
        index._weights = model.mixing_weights()
        index._model_handle = self._engine.put(model)
        return index

    # -- search ------------------------------------------------------------------------------
    def search(self, queries: ArrayLike, k: int, exclude: ArrayLike | None = None) -> tuple[Any, Any]:
        """The ``k`` gallery items of least divergence for each query ``(Q, d)``: ``(values, ids)``,
        both ``(Q, k)``, ascending; ``ids`` global positions. ``exclude`` ``(Q,)`` or ``(Q, m)``
        global positions to skip, ``-1`` for none. numpy in, numpy out; tensors in, tensors out."""
        check_fit(self.model, self._fit_token, self._weights, "ShardedAnchorIndex",
                  "ShardedAnchorIndex(model, store)")
        # float32, like the blocks read from the store.
        query_vectors, offset = query_terms(self.model, queries, self.reverse, self.device, torch.float32)
        excluded = exclusion_matrix(exclude, query_vectors.shape[0], self._n_gallery, self.device)
        k = check_top_k(k, self._n_gallery, excluded)
        parts = self.map_scanners(partial(ShardScanner.top_k, queries=query_vectors, k=k, exclude=excluded))
        scores, ids = merge_top_k([part[0] for part in parts], [part[1] for part in parts], k)
        scores, ids = scores.to(self.device), ids.to(self.device)
        values = check_finite_output(offset[:, None] - scores, "the anchor divergences of the search", self.model.scale)
        return like_input(values, queries), like_input(ids, queries)
