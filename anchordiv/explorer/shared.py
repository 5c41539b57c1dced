"""One slow build per key for every visitor of a server, with its progress shown to all who wait;
and jobs that outlive the visit that started them (:class:`BackgroundJobs`).

The first start of the explorer embeds the built-in world (about a minute on 2 cores). Visitors
who arrive meanwhile must not each embed it again, nor stare at a bare spinner: they wait for the
same build and see its progress bar move (:class:`SharedBuilds`).
"""
from __future__ import annotations

import threading
from typing import Callable, Generic, Hashable, TypeVar

from ..progress import ProgressCallback

T = TypeVar("T")
WAITING_NOTE = "being prepared for another visitor"


class SharedBuilds(Generic[T]):
    """``get(key, build, progress)``: the result of ``build`` for ``key``, built once.

    The first caller for a key runs ``build(report)``; every caller's ``progress(fraction, text)``
    sees the reports, those who wait with :data:`WAITING_NOTE` added. If the build raises, the
    error goes to its caller and the next caller (or a waiter) builds again.
    """

    def __init__(self, poll_seconds: float = 0.25):
        self._poll_seconds = poll_seconds
        self._lock = threading.Lock()
        self._results: dict[Hashable, T] = {}
        self._running: dict[Hashable, threading.Event] = {}
        self._progress: dict[Hashable, tuple[float, str]] = {}

    def get(self, key: Hashable, build: Callable[[ProgressCallback], T], progress: ProgressCallback | None = None) -> T:
        with self._lock:
            if key in self._results:
                return self._results[key]
            running = self._running.get(key)
            if running is None:
                running = self._running[key] = threading.Event()
                owner = True
            else:
                owner = False
        if not owner:
            while not running.wait(self._poll_seconds):
                if progress is not None:
                    fraction, text = self._progress.get(key, (0.0, "Starting"))
                    progress(fraction, f"{text} ({WAITING_NOTE})")
            return self.get(key, build, progress)  # built by now, or failed: then build it here
        try:
            result = build(self._reporter(key, progress))
            with self._lock:
                self._results[key] = result
            return result
        finally:
            with self._lock:
                self._running.pop(key).set()
                self._progress.pop(key, None)

    def _reporter(self, key: Hashable, progress: ProgressCallback | None) -> ProgressCallback:
        def report(fraction: float, text: str) -> None:
            self._progress[key] = (fraction, text)
            if progress is not None:
                progress(fraction, text)
        return report


class BackgroundJob:
    """One job running in a thread of its own: its latest ``progress`` ``(fraction, text)``,
    ``done`` once it ended, and :meth:`result` (its value, or the error it raised)."""

    def __init__(self, work: Callable[[ProgressCallback], T]):
        self.progress: tuple[float, str] = (0.0, "Starting")
        self.done = threading.Event()
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(work,), daemon=True, name="background-job")
        self._thread.start()

    def _run(self, work: Callable[[ProgressCallback], T]) -> None:
        try:
            self._value = work(self._report)
        except Exception as error:  # kept for whoever asks for the result, as the caller would have seen it
            self._error = error
        finally:
            self.done.set()

    def _report(self, fraction: float, text: str) -> None:
        self.progress = (fraction, text)

    def result(self) -> T:
        """The job's value once :attr:`done`; raises the job's error if it failed."""
        if self._error is not None:
            raise self._error
        return self._value


class BackgroundJobs:
    """One :class:`BackgroundJob` per key for every visitor of a server (a model's download):
    it runs in its own thread, so a visitor who moves on does not stop it, and every visitor who
    asks for the same key meanwhile watches the same job's progress."""

    def __init__(self):
        self._lock = threading.Lock()
        self._jobs: dict[Hashable, BackgroundJob] = {}

    def start(self, key: Hashable, work: Callable[[ProgressCallback], T]) -> BackgroundJob:
        """The job for ``key``: the one running or finished, else ``work`` started now."""
        with self._lock:
            if key not in self._jobs:
                self._jobs[key] = BackgroundJob(work)
            return self._jobs[key]

    def get(self, key: Hashable) -> BackgroundJob | None:
        """The job for ``key``, running or finished, or ``None``."""
        with self._lock:
            return self._jobs.get(key)

    def forget(self, key: Hashable, job: BackgroundJob) -> None:
        """Drop ``job`` (once finished): the next :meth:`start` for ``key`` runs afresh (a download
        whose files were removed since, or one that failed)."""
        with self._lock:
            if self._jobs.get(key) is job:
                del self._jobs[key]
