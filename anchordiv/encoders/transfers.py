"""Running one transfer: each caller's progress fed from one :class:`Meter`, one transfer per file
however many callers ask at once (:class:`SharedTransfers`), and the bounds every transfer keeps
(:data:`CONNECT_TIMEOUT`, :data:`MAX_DOWNLOAD_BYTES`, :func:`bounded`).

Within a process, callers asking for the same file at once share one transfer, and each of their
``progress`` callbacks receives the same :class:`~anchordiv.encoders.downloads.DownloadStatus` reports.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Hashable, TypeVar

from .downloads import DownloadProgress, DownloadStatus, format_bytes

T = TypeVar("T")

#: Seconds to wait for a server's first answer; without network the refusal comes within this bound.
CONNECT_TIMEOUT = 8.0
#: Largest file anchordiv downloads (the biggest open_clip checkpoints are about 10 GB).
MAX_DOWNLOAD_BYTES = 32 * 1024**3
#: A transfer is given up when, over the last this many seconds, it moved fewer than
#: :data:`SLOWEST_RATE` bytes a second: one deadline for the whole fetch, retries included, so a
#: server that stalls or sends a byte now and then cannot hold a caller (or a visitor's page).
STALL_WINDOW = 60.0
SLOWEST_RATE = 16_000
_REPORT_EVERY = 0.1  # seconds between progress reports


class OversizedTransfer(ValueError):
    """A server sent more bytes than it announced for a file."""


class Meter:
    """Counts one transfer's bytes and turns them into :class:`DownloadStatus` reports, a few a second.

    ``limit`` is the size the server announced (``None``: not said; a hub's HEAD, before the
    transfer, whatever later responses announce; a plain URL's answer): a transfer that moves past it
    is stopped with :class:`OversizedTransfer` at that byte, so a lying server cannot fill the disk.
    """

    def __init__(self, filename: str, url: str, model: str, report: DownloadProgress, limit: int | None = None):
        self.filename, self.url, self.model, self._report, self.limit = filename, url, model, report, limit
        self.done, self.total = 0, None
        self._start_time, self._start_bytes, self._last = time.monotonic(), 0, 0.0
        self._window = (time.monotonic(), 0)  # (since, bytes moved since then) for :meth:`stalled`

    def begin(self, done: int, total: int | None) -> None:
        """A (re)started transfer: ``done`` bytes already on disk, ``total`` announced."""
        self.done, self.total = done, total
        self._start_time, self._start_bytes = time.monotonic(), done
        self.emit(force=True)

    def add(self, count: int) -> None:
        self.done += count
        if self.limit is not None and self.done > self.limit:
            raise OversizedTransfer(f"{self.url} sent more than the {format_bytes(self.limit)} it announced for "
                                    f"{self.filename}; the transfer was stopped there. Try again later, or fetch "
                                    "the file by hand from a source you trust")
        since, moved = self._window
        self._window = (since, moved + max(count, 0))
        self.emit()

    def watch_from_now(self) -> None:
        """Start :meth:`stalled`'s window now."""
        self._window = (time.monotonic(), 0)

    def stalled(self) -> bool:
        """Whether the last :data:`STALL_WINDOW` seconds moved fewer than :data:`SLOWEST_RATE` bytes a
        second (checked once per window: a new window starts each time one passes)."""
        since, moved = self._window
        elapsed = time.monotonic() - since
        if elapsed < STALL_WINDOW:
            return False
        if moved < SLOWEST_RATE * elapsed:
            return True
        self._window = (time.monotonic(), 0)
        return False

    def emit(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < _REPORT_EVERY:
            return
        self._last = now
        elapsed, moved = now - self._start_time, self.done - self._start_bytes
        rate = moved / elapsed if elapsed > 0.5 and moved > 0 else None
        left = (self.total - self.done) / rate if rate and self.total else None
        self._report(DownloadStatus(self.filename, self.url, self.done, self.total, rate, left, self.model))


class _Transfer:
    """One running transfer: its waiters' callbacks, its last report, its outcome."""

    def __init__(self):
        self.finished = threading.Event()
        self.listeners: list[DownloadProgress] = []
        self.last: DownloadStatus | None = None
        self.result = None
        self.error: BaseException | None = None

    def report(self, status: DownloadStatus) -> None:
        self.last = status
        for listener in list(self.listeners):
            try:
                listener(status)
            except Exception:  # one visitor's broken page must not stop everyone's download
                self.listeners.remove(listener)


class SharedTransfers:
    """``run(key, work, progress)``: ``work(report)`` once per key however many threads ask at once.

    Callers who arrive while it runs receive its last report at once, every later one, and its result;
    if it fails with an ``Exception`` they receive the same error. (Interrupted by a
    ``BaseException`` such as ``KeyboardInterrupt``, the next caller starts again.)
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._running: dict[Hashable, _Transfer] = {}

    def run(self, key: Hashable, work: Callable[[DownloadProgress], T], progress: DownloadProgress | None = None) -> T:
        with self._lock:
            transfer = self._running.get(key)
            owner = transfer is None
            if owner:
                transfer = self._running[key] = _Transfer()
            if progress is not None:
                transfer.listeners.append(progress)
            last = transfer.last
        if not owner:
            if last is not None and progress is not None:
                progress(last)
            transfer.finished.wait()
            if transfer.error is None:
                return transfer.result
            if isinstance(transfer.error, Exception):
                raise transfer.error
            return self.run(key, work, progress)
        try:
            transfer.result = work(transfer.report)
            return transfer.result
        except BaseException as error:
            transfer.error = error
            raise
        finally:
            with self._lock:
                self._running.pop(key)
            transfer.finished.set()


SHARED = SharedTransfers()


def bounded(seconds: float, call: Callable[[], T]) -> T:
    """``call()`` in a helper thread, given up after ``seconds`` (:class:`TimeoutError`): a name lookup
    without network can block longer than any socket timeout."""
    def wait(worker: threading.Thread) -> None:
        worker.join(seconds)
        if worker.is_alive():
            raise TimeoutError(f"no answer within {seconds:g} s")

    return _in_helper_thread(call, "anchordiv-connect", wait)


def watched(meter: Meter, call: Callable[[], T]) -> T:
    """``call()`` (a transfer feeding ``meter``) in a helper thread, given up with :class:`TimeoutError`
    as soon as ``meter`` has :meth:`~Meter.stalled`, however the transfer retries inside."""
    meter.watch_from_now()

    def wait(worker: threading.Thread) -> None:
        while worker.is_alive():
            worker.join(min(1.0, STALL_WINDOW / 4))
            if worker.is_alive() and meter.stalled():
                raise TimeoutError(f"fewer than {format_bytes(SLOWEST_RATE)}/s over {STALL_WINDOW:g} s")

    return _in_helper_thread(call, "anchordiv-transfer", wait)


def _in_helper_thread(call: Callable[[], T], name: str, wait: Callable[[threading.Thread], None]) -> T:
    """``call()`` in a daemon thread named ``name``: ``wait(thread)`` returns once it has ended or
    raises to give it up (the thread is left to finish on its own); its error is raised here."""
    outcome: dict[str, object] = {}

    def target():
        try:
            outcome["value"] = call()
        except BaseException as error:  # handed to the caller's thread
            outcome["error"] = error

    worker = threading.Thread(target=target, daemon=True, name=name)
    worker.start()
    wait(worker)
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]


def check_size(size: int | None, url: str) -> None:
    """``ValueError`` unless ``url`` announced a size from 0 to :data:`MAX_DOWNLOAD_BYTES`: a transfer is
    stopped at the size its server announced (:class:`Meter`), so one that announces none would have
    no bound but the disk."""
    if size is None:
        raise ValueError(f"{url} did not say how large the file is, so its transfer could not be bounded; anchordiv "
                         "downloads only files whose size is announced. Fetch it by hand if you trust the source")
    if size < 0 or size > MAX_DOWNLOAD_BYTES:
        shown = (format_bytes(size) if 0 <= size < 10**15 else f"{size:,} bytes" if abs(size) < 10**15
                 else f"a number of {len(str(abs(size))):,} digits")
        raise ValueError(f"{url} announces {shown}, not a size between 0 and {format_bytes(MAX_DOWNLOAD_BYTES)} "
                         "(the most anchordiv downloads); fetch it by hand if it is what you want")
