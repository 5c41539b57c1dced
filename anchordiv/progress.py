"""How long work reports its progress: one type, shared by every part of the library that reports;
:func:`run_reporting`, which keeps a step that cannot report by itself from sitting silent; and
:class:`Job`, work on its own thread that several callers may wait for, each hearing its progress."""
from __future__ import annotations

import threading
import time
from typing import Callable, TypeVar

# Called with the fraction done, in [0, 1], and a line saying what is being done ("embedding 3/40").
ProgressCallback = Callable[[float, str], None]

# The longest a step run by run_reporting, or a Job's waiter, goes without a report.
HEARTBEAT_SECONDS = 0.5

Result = TypeVar("Result")


def run_reporting(work: Callable[[threading.Event], Result], progress: ProgressCallback,
                  status: Callable[[], tuple[float, str]], news: threading.Event | None = None,
                  every: float | None = None) -> Result:
    """``work(stop)`` on a worker thread while this thread calls ``progress(*status())`` every
    ``every`` seconds (default :data:`HEARTBEAT_SECONDS`), and at once whenever the work sets
    ``news``; returns what ``work`` returns.

    For a step that cannot call back itself (a compile, another library's loop, an import): it
    keeps its own state, which ``status()`` reads, and is never silent meanwhile. ``progress`` runs
    on the caller's thread, where a Streamlit page can draw (its elements cannot be drawn from
    another thread). ``work``'s exception is raised here. When ``progress`` raises (a page stopped
    or rerun), that is raised at once and ``stop`` is set, for the work to give up at its next check
    of it; the worker is a daemon thread and never blocks the process's exit. The work's last
    status is reported once it has ended."""
    every = HEARTBEAT_SECONDS if every is None else every
    stop, done, news = threading.Event(), threading.Event(), news or threading.Event()
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["result"] = work(stop)
        except BaseException as error:  # handed to the waiting thread, which raises it
            outcome["error"] = error
        finally:
            done.set()
            news.set()

    worker = threading.Thread(target=run, name="anchordiv-progress", daemon=True)
    worker.start()
    try:
        while not done.is_set():
            news.wait(every)
            news.clear()
            if not done.is_set():
                progress(*status())
    except BaseException:
        stop.set()
        raise
    worker.join()
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    progress(*status())  # where it ended
    return outcome["result"]  # type: ignore[return-value]


def run_timed(work: Callable[[], Result], progress: ProgressCallback | None, text: str,
              fraction: float = 0.0) -> Result:
    """``work()``, ``progress(fraction, "<text>, <seconds so far> s")`` hearing it every
    :data:`HEARTBEAT_SECONDS` meanwhile (:func:`run_reporting`): for one call that may take seconds
    and says nothing itself. Without ``progress``, just ``work()``."""
    if progress is None:
        return work()
    start = time.perf_counter()
    return run_reporting(lambda stop: work(), progress,
                         lambda: (fraction, f"{text}, {time.perf_counter() - start:.0f} s"))


class Job:
    """``work(report)`` started at once on a daemon thread, ``report(fraction, text)`` its progress,
    kept for those who :meth:`wait` for it: work that outlives the caller that started it (a page that
    reruns stops waiting, and the work still ends as it would have, a cache written included), and
    that several callers may wait for at once, each hearing its progress."""

    def __init__(self, work: Callable[[ProgressCallback], Result], name: str = "anchordiv-job"):
        self._state = threading.Condition()
        self._reports: list[tuple[float, str]] = []
        self._done = False
        self._outcome: dict[str, object] = {}
        self._work = work
        threading.Thread(target=self._run, name=name, daemon=True).start()

    def report(self, fraction: float, text: str) -> None:
        """The work's progress callback: heard by every waiter, in order."""
        with self._state:
            self._reports.append((fraction, text))
            self._state.notify_all()

    @property
    def done(self) -> bool:
        return self._done

    def _run(self) -> None:
        try:
            self._outcome["result"] = self._work(self.report)
        except BaseException as error:  # handed to the waiters, who raise it
            self._outcome["error"] = error
        finally:
            with self._state:
                self._done = True
                self._state.notify_all()

    def wait(self, progress: ProgressCallback | None = None, every: float | None = None,
             from_start: bool = True) -> Result:
        """The work's result (its exception raised here), ``progress`` hearing each of its reports
        as it comes (from its first, or with ``from_start=False`` from its latest), and the latest
        again every ``every`` seconds (default :data:`HEARTBEAT_SECONDS`) without one. An exception of ``progress`` is raised at once;
        the work goes on."""
        every = HEARTBEAT_SECONDS if every is None else every
        with self._state:
            seen = 0 if from_start else max(0, len(self._reports) - 1)
        while True:
            with self._state:
                self._state.wait_for(lambda: self._done or len(self._reports) > seen, timeout=every)
                done = self._done
                fresh = self._reports[seen:] or ([] if done else self._reports[-1:])
                seen = len(self._reports)
            for fraction, text in fresh if progress is not None else ():
                progress(fraction, text)
            if done:
                break
        if "error" in self._outcome:
            raise self._outcome["error"]  # type: ignore[misc]
        return self._outcome["result"]  # type: ignore[return-value]
