"""Memory probes for the benchmarks: what a device has free (:func:`available_memory`), what this
process holds (:func:`resident_memory`, :class:`PeakResidentMemory`), and what each scanner process
of a sharded index holds (:func:`scanner_memory`, a job sent through
:meth:`anchordiv.sharded.ShardedAnchorIndex.map_scanners`). Outside the search core: the core never
measures itself, the benchmarks ask it to run a probe.
"""
from __future__ import annotations

import threading
from typing import Any

import torch

from ..device import available_memory  # noqa: F401  (the benchmarks' probe of free memory is the core's)

RSS_SAMPLE_SECONDS = 0.005


def gib(size: int) -> str:
    """``size`` bytes as ``"1.5 GiB"``, for the benchmarks' messages."""
    return f"{size / 2**30:,.1f} GiB"


def resident_memory(pid: int | None = None) -> dict[str, int]:
    """The resident memory in bytes of process ``pid`` (default: this one) from
    ``/proc/PID/status``: ``total`` (VmRSS), ``anonymous`` (RssAnon: its own arrays) and ``file``
    (RssFile: mapped files, here the store's pages in the page cache); for this process, the peak
    RSS from ``resource`` where ``/proc`` is missing."""
    fields = {"VmRSS:": "total", "RssAnon:": "anonymous", "RssFile:": "file"}
    found: dict[str, int] = {}
    try:
        with open(f"/proc/{'self' if pid is None else pid}/status") as handle:
            for line in handle:
                key = line.split(maxsplit=1)[0] if line.strip() else ""
                if key in fields:
                    found[fields[key]] = int(line.split()[1]) * 1024
    except OSError:
        if pid is not None:
            raise
        import resource

        found["total"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return found


def scanner_memory(scanner: Any) -> dict[str, int]:
    """:func:`resident_memory` of the process a scanner runs in (a Ray worker's own figure): a job for
    :meth:`~anchordiv.sharded.ShardedAnchorIndex.map_scanners`, which sends it to each worker. The
    scanner itself is not read."""
    return resident_memory()


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
