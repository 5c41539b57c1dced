"""When a page in the browser tests is idle, read from Streamlit's websocket as it reaches Playwright.

A page asks the server for a run by a message on its websocket, and the run's elements come back
the same way; while a page is idle nothing passes (Streamlit sends no messages of its own to keep
the connection alive). So a run the last action asked for has come and gone once nothing has
passed for :data:`QUIET_S` and the page's script state says it has taken in the run's end
(``anchordiv.benchmarks.browser.PAGE_AT_REST``).
"""
from __future__ import annotations

import time
from urllib.parse import urlsplit

# Longer than the p player waits for keys to rest (300 ms) before it reports p and asks for a run.
QUIET_S = 0.5


class PageTraffic:
    """The websocket messages of ``page`` (every socket it opens, reloads included): when the last
    one passed (``time.monotonic()``), and ``runs``, the script runs whose end reached the page
    (Streamlit's ``script_finished`` messages); and ``off_machine``, the URLs of the requests it
    made to any host but this machine (none may be: nothing of a page is fetched from elsewhere)."""

    def __init__(self, page):
        self.last = time.monotonic()
        self.runs = 0
        self.off_machine: list[str] = []
        page.on("websocket", self._socket)
        page.on("request", self._request)

    def _request(self, request) -> None:
        if urlsplit(request.url).hostname not in (None, "", "127.0.0.1", "localhost"):
            self.off_machine.append(request.url)

    def quiet_since(self, since: float) -> bool:
        """Whether nothing has passed for :data:`QUIET_S`, counted from ``since`` at the earliest
        (when the waiting began: a run asked for by the last action may not have been asked yet)."""
        return time.monotonic() - max(self.last, since) >= QUIET_S

    def _socket(self, socket) -> None:
        socket.on("framesent", self._sent)
        socket.on("framereceived", self._received)

    def _sent(self, payload) -> None:
        self.last = time.monotonic()

    def _received(self, payload) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self.last = time.monotonic()
        if isinstance(payload, bytes) and len(payload) <= 256:
            if ForwardMsg.FromString(payload).WhichOneof("type") == "script_finished":
                self.runs += 1
