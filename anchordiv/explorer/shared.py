"""One slow build per key for every visitor of a server, with its progress shown to all who wait.

The first start of the explorer embeds the built-in world (about a minute on 2 cores). Visitors
who arrive meanwhile must not each embed it again, nor stare at a bare spinner: they wait for the
same build and see its progress bar move (:class:`SharedBuilds`).
"""
from __future__ import annotations

import threading
from typing import Callable, Generic, Hashable, TypeVar

from ..gallery import ProgressCallback

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

    def running(self, key: Hashable) -> bool:
        """Whether a build for ``key`` is under way (a caller of :meth:`get` would wait for it)."""
        with self._lock:
            return key in self._running

    def forget(self, key: Hashable) -> None:
        """Drop the result kept for ``key``: the next :meth:`get` builds again (for builds whose
        result lives elsewhere, such as files a download wrote, which may be removed)."""
        with self._lock:
            self._results.pop(key, None)

    def _reporter(self, key: Hashable, progress: ProgressCallback | None) -> ProgressCallback:
        def report(fraction: float, text: str) -> None:
            self._progress[key] = (fraction, text)
            if progress is not None:
                progress(fraction, text)
        return report
