"""When a page of the explorer in a browser is idle, read from Streamlit's websocket as it reaches
Playwright (sync or async: the handlers are plain functions): the browser tests and the rehearsal
(:mod:`anchordiv.benchmarks.rehearsal`) wait with it.

A page asks the server for a run by a message on its websocket, and the run's elements come back
the same way; every message a page sends has an answer, and while a page is idle nothing passes
(Streamlit sends no messages of its own to keep the connection alive). So a run the last action
asked for has come and gone once every message sent has had its answer, no request of the page is
under way, nothing has passed for :data:`QUIET_S`, and the page says it has taken in the run's end
with no p player about to report p (:data:`PAGE_IDLE_JS`).

:meth:`PageTraffic.wait_idle` (Playwright's sync API) and :meth:`PageTraffic.wait_idle_async` (its
asyncio API) wait for that; they are the one "wait until idle" of the browser tests, the rehearsal
and the crowd test.
"""
from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit

from anchordiv.benchmarks.browser import PAGE_AT_REST, REPORTING

# Room for an action's message to reach Playwright's events after the action has returned; the p
# player's own wait before it reports p is read from the page instead (PAGE_IDLE_JS).
QUIET_S = 0.25
# The page has taken in its last run's end and no p player waits to report p (and ask for a run).
PAGE_IDLE_JS = f"() => ({PAGE_AT_REST})() && !document.querySelector('{REPORTING}')"
# How often a wait looks again: in between, Playwright hands over the page's events (the sync API only
# then), so this is the pace of the polling, not a pause anything waits out.
POLL_S = 0.05


class PageTraffic:
    """The websocket messages of ``page`` (every socket it opens, reloads included): when the last
    one passed (``time.monotonic()``), whether the last one sent has had an answer, and ``runs``,
    the script runs whose end reached the page (Streamlit's ``script_finished`` messages); the
    page's requests under way and when the last one ended (``loaded``); and ``off_machine``, the
    URLs of the requests it made to any host but this machine (none may be: nothing of a page is
    fetched from elsewhere)."""

    def __init__(self, page, quiet_s: float = QUIET_S):
        self.page = page
        self.quiet_s = quiet_s
        self.last = self.sent = self.received = self.loaded = time.monotonic()
        self.runs = 0
        self.loading: set = set()
        self.off_machine: list[str] = []
        page.on("websocket", self._socket)
        page.on("request", self._request)
        page.on("requestfinished", self._request_over)
        page.on("requestfailed", self._request_over)

    def _request(self, request) -> None:
        if urlsplit(request.url).hostname not in (None, "", "127.0.0.1", "localhost"):
            self.off_machine.append(request.url)
        self.loading.add(request)

    def _request_over(self, request) -> None:
        self.loading.discard(request)
        self.loaded = time.monotonic()

    def quiet_since(self, since: float) -> bool:
        """Whether the last message sent has had its answer, no request is under way and nothing has
        passed for ``quiet_s`` (:data:`QUIET_S` unless given), counted from ``since`` at the earliest
        (when the waiting began: a message the last action sent may not have reached Playwright yet)."""
        return (self.received >= self.sent and not self.loading
                and time.monotonic() - max(self.last, since) >= self.quiet_s)

    def pending(self) -> str:
        """What :meth:`quiet_since` waits for, in words (for a timeout's message)."""
        return (f"{'an unanswered message, ' if self.received < self.sent else ''}"
                f"{len(self.loading)} request(s) under way: {[request.url for request in self.loading][:5]}")

    def _condition(self, also: str | None) -> str:
        return PAGE_IDLE_JS if also is None else f"() => ({PAGE_IDLE_JS})() && ({also})()"

    def _ran(self, after_runs: int | None, start: float, run_grace_s: float | None) -> bool:
        """Whether the run waited for has come: any run (``after_runs`` ``None``), a run past the
        ``after_runs`` counted before the action, or none within ``run_grace_s`` of ``start``."""
        return (after_runs is None or self.runs > after_runs
                or (run_grace_s is not None and time.monotonic() - start > run_grace_s))

    def _overdue(self, start: float, seconds: float) -> None:
        if time.monotonic() - start > seconds:
            raise TimeoutError(f"the page was not at rest within {seconds:.0f} s ({self.pending()})")

    def wait_idle(self, seconds: float, *, since: float | None = None, after_runs: int | None = None,
                  run_grace_s: float | None = None, also: str | None = None) -> bool:
        """Wait (Playwright's sync API) until the page is idle: every message answered, no request under
        way, nothing passed for ``quiet_s`` since ``since`` (default: now), :data:`PAGE_IDLE_JS` and the
        page function ``also`` (when given) hold, and with ``after_runs`` (:attr:`runs` read before the
        action) a run has come since, or none within ``run_grace_s``. The quiet is checked again once
        the page has answered, so that a message the page sent meanwhile counts. Whether a run came
        (with ``after_runs``); :class:`TimeoutError` after ``seconds``."""
        start = time.monotonic() if since is None else since
        condition = self._condition(also)
        while not (self.quiet_since(start) and self._ran(after_runs, start, run_grace_s)
                   and self.page.evaluate(condition) and self.quiet_since(start)):
            self._overdue(start, seconds)
            self.page.wait_for_timeout(POLL_S * 1000)
        return after_runs is None or self.runs > after_runs

    async def wait_idle_async(self, seconds: float, *, since: float | None = None, after_runs: int | None = None,
                              run_grace_s: float | None = None, also: str | None = None) -> bool:
        """:meth:`wait_idle` for Playwright's asyncio API."""
        start = time.monotonic() if since is None else since
        condition = self._condition(also)
        while not (self.quiet_since(start) and self._ran(after_runs, start, run_grace_s)
                   and await self.page.evaluate(condition) and self.quiet_since(start)):
            self._overdue(start, seconds)
            await asyncio.sleep(POLL_S)
        return after_runs is None or self.runs > after_runs

    def _socket(self, socket) -> None:
        socket.on("framesent", self._sent)
        socket.on("framereceived", self._received)

    def _sent(self, payload) -> None:
        self.last = self.sent = time.monotonic()

    def _received(self, payload) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self.last = self.received = time.monotonic()
        if isinstance(payload, bytes) and len(payload) <= 256:
            if ForwardMsg.FromString(payload).WhichOneof("type") == "script_finished":
                self.runs += 1
