"""When a page of the explorer in a browser is idle, read from Streamlit's websocket as it reaches
Playwright (sync or async: the handlers are plain functions): the browser tests and the rehearsal
(:mod:`anchordiv.benchmarks.rehearsal`) wait with it.

A page asks the server for a run by a message on its websocket, and the run's elements come back
the same way; every message a page sends has an answer, and while a page is idle nothing passes
(Streamlit sends no messages of its own to keep the connection alive). So a run the last action
asked for has come and gone once every message sent has had its answer, no request of the page is
under way, nothing has passed for :data:`QUIET_S`, and the page says it has taken in the run's end
with no p player about to report p (:data:`PAGE_IDLE_JS`).
"""
from __future__ import annotations

import time
from urllib.parse import urlsplit

from anchordiv.benchmarks.browser import PAGE_AT_REST

# Room for an action's message to reach Playwright's events after the action has returned; the p
# player's own wait before it reports p is read from the page instead (PAGE_IDLE_JS).
QUIET_S = 0.25
# The page has taken in its last run's end and no p player waits to report p (and ask for a run).
PAGE_IDLE_JS = f"() => ({PAGE_AT_REST})() && !document.querySelector('[data-anchordiv-reporting]')"


class PageTraffic:
    """The websocket messages of ``page`` (every socket it opens, reloads included): when the last
    one passed (``time.monotonic()``), whether the last one sent has had an answer, and ``runs``,
    the script runs whose end reached the page (Streamlit's ``script_finished`` messages); the
    page's requests under way and when the last one ended (``loaded``); and ``off_machine``, the
    URLs of the requests it made to any host but this machine (none may be: nothing of a page is
    fetched from elsewhere)."""

    def __init__(self, page, quiet_s: float = QUIET_S):
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
