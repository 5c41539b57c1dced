"""A pass over a large gallery split among the host's cores, in one pool shared by the process.

A server runs torch with one thread per operation (``ANCHORDIV_APP_THREADS``): its sessions share
the cores, and an operation split across threads waits at a barrier for a core another session
holds (a new query's pass over 10^6 rows took 2.2 s at one thread and 10.7 s at two on a busy
2-core machine). A pass over many rows is instead cut into parts, each a whole sequence of small
operations, run side by side in a pool with one thread per core, each with one torch thread: one
user's new query uses every core, and the parts of sixteen users' queries queue, each core taking
the next part as it is done, with nothing waiting at a barrier. Math core only: no I/O.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence, TypeVar

import torch

# Rows below which a part's own fixed costs (its top-k, the merge, a thread's wake-up) outweigh
# what a second core saves.
MIN_PART_ROWS = 2**17
MAX_WORKERS = 8
_THREAD_PREFIX = "anchordiv-pass"

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()

Part = TypeVar("Part")
Result = TypeVar("Result")


def host_cores() -> int:
    """The cores this process may run on (its CPU affinity), at most :data:`MAX_WORKERS`."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(MAX_WORKERS, cores))


def row_parts(n_rows: int, device: torch.device) -> list[tuple[int, int]]:
    """``[(start, stop)]`` ranges covering ``n_rows`` rows, one per core that a pass of this size
    can keep busy (:data:`MIN_PART_ROWS` each at least); one range on a GPU, which has its own
    parallelism."""
    parts = 1 if device.type != "cpu" else max(1, min(host_cores(), n_rows // MIN_PART_ROWS))
    bounds = [round(n_rows * part / parts) for part in range(parts + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def run_parts(function: Callable[[Part], Result], parts: Sequence[Part]) -> list[Result]:
    """``[function(part) for part in parts]``, the parts run in the shared pool when there are
    several (inline when there is one, or when called from the pool itself)."""
    if len(parts) <= 1 or threading.current_thread().name.startswith(_THREAD_PREFIX):
        return [function(part) for part in parts]
    return list(_shared_pool().map(function, parts))


def _one_torch_thread() -> None:
    torch.set_num_threads(1)  # per thread: the caller's own setting is left alone


def _shared_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=host_cores(), thread_name_prefix=_THREAD_PREFIX,
                                       initializer=_one_torch_thread)
        return _pool
