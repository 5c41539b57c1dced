"""The judge of the hostile corpus (tests/test_hostile_surfaces.py): what one hostile input did where
it entered, and what is wrong with that.

It is written apart from the code it judges and shares nothing with it: markup is judged by
:mod:`markup` (a CommonMark parser and the renderers' text rules), connections are seen at the socket,
files opened are seen by a Python audit hook, time by the clock. A case passes when nothing it did
breaks a rule of the issue: no traceback; a refusal is a message that names the input and says what
to do; no live markup; no hang; no connection the case does not allow; no read of a file outside
the data roots.
"""
from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from markup import active_markup, plain

#: Words of an instruction: a refusal says what to do with (at least) one of them.
FIXES = ("choose", "give", "write", "save", "use ", "start", "copy", "fetch", "try", "mark", "downscale",
         "upload", "keep", "split", "check", "drop", "remove", "press", "type", "restart", "divide",
         "log in", "put", "are left out", "counts once", "crop", "delete")
#: Seconds a case may take, unless it says otherwise: every request is bounded.
DEADLINE = 30.0


@dataclass
class Outcome:
    """What one input did: ``said`` (the plain text of every message a person sees: error, warning
    and info boxes, a call's refusal), ``markdown`` (``(where, body)`` of everything rendered as
    Markdown), ``crash`` (a traceback or an exception no one turned into a message), the call's
    ``result``, its ``seconds``, and what :func:`watching` saw (``connects``, ``opened``)."""

    said: list[str] = field(default_factory=list)
    markdown: list[tuple[str, str]] = field(default_factory=list)
    crash: str | None = None
    result: Any = None
    seconds: float = 0.0
    connects: list[tuple[str, int]] = field(default_factory=list)
    opened: list[str] = field(default_factory=list)


def judge(outcome: Outcome, *, refused: bool, names: tuple[str, ...] = (), hosts: frozenset = frozenset(),
          deadline: float = DEADLINE) -> list[str]:
    """Every rule ``outcome`` breaks. ``refused``: the input must be refused with a message naming
    one of ``names`` (as plain text) and saying what to do; else no error may be shown.
    ``hosts``: the ``(host, port)`` pairs it may connect to."""
    problems = [f"crash: {outcome.crash}"] if outcome.crash else []
    if outcome.seconds > deadline:
        problems.append(f"took {outcome.seconds:.1f} s, over its bound of {deadline:g} s")
    for where, body in outcome.markdown:
        problems += [f"live markup in {where}: {found}" for found in active_markup(body)]
    if refused:
        if not outcome.said:
            problems.append("refused (or ignored) without a word")
        elif names and not any(name in text for text in outcome.said for name in names):
            problems.append(f"no message names the input ({names[0][:40]!r}): {outcome.said}")
        elif not any(fix in text.lower() for text in outcome.said for fix in FIXES):
            problems.append(f"no message says what to do: {outcome.said}")
    problems += [f"connected to {host}:{port}, which this case does not allow"
                 for host, port in outcome.connects if (host, port) not in hosts]
    problems += [f"read {path}, outside the data roots" for path in outcome.opened]
    return problems


# -- watching a call ----------------------------------------------------------------------------------
_FORBIDDEN: list[tuple[str, list[str]]] = []  # (path prefix, where opens of it are recorded)
_HOOKED = False


def _audit(event: str, args: tuple) -> None:
    if event == "open" and _FORBIDDEN and isinstance(args[0], (str, bytes, Path)):
        path = str(args[0], "utf-8", "replace") if isinstance(args[0], bytes) else str(args[0])
        for prefix, sink in _FORBIDDEN:
            if path.startswith(prefix):
                sink.append(path)


@contextlib.contextmanager
def watching(outcome: Outcome, forbidden: tuple[Path, ...] = ()) -> Iterator[Outcome]:
    """While inside: every socket connection (any thread) is recorded in ``outcome.connects``, every
    open of a path under ``forbidden`` in ``outcome.opened``; the time taken in ``outcome.seconds``."""
    global _HOOKED
    if not _HOOKED:  # an audit hook cannot be removed: one for the process, idle while nothing is forbidden
        sys.addaudithook(_audit)
        _HOOKED = True
    real_connect = socket.socket.connect

    def connect(sock, address):
        if isinstance(address, tuple):
            outcome.connects.append((str(address[0]), int(address[1])))
        return real_connect(sock, address)

    entries = [(str(path.resolve()), outcome.opened) for path in forbidden]
    entries += [(str(path), outcome.opened) for path in forbidden if str(path) != str(path.resolve())]
    _FORBIDDEN.extend(entries)
    socket.socket.connect = connect
    start = time.monotonic()
    try:
        yield outcome
    finally:
        outcome.seconds = time.monotonic() - start
        socket.socket.connect = real_connect
        for entry in entries:
            _FORBIDDEN.remove(entry)


def call(action: Callable[[], Any], refusals: tuple[type[BaseException], ...] = (ValueError, OSError),
         forbidden: tuple[Path, ...] = (), deadline: float = DEADLINE) -> Outcome:
    """``action()`` as a command or callback runs it, in a thread given up after ``deadline`` (a hang
    is a crash): an exception of ``refusals`` is its message (what the caller shows), any other a crash."""
    outcome, box = Outcome(), {}

    def target():
        try:
            box["result"] = action()
        except refusals as error:
            box["said"] = str(error)
        except BaseException as error:  # anything else reaches a person as a traceback
            box["crash"] = f"{type(error).__name__}: {error}"

    with watching(outcome, forbidden):
        worker = threading.Thread(target=target, daemon=True)
        worker.start()
        worker.join(deadline + 5)
    if worker.is_alive():
        outcome.crash = f"still running after {deadline + 5:g} s"
    outcome.result, outcome.crash = box.get("result"), outcome.crash or box.get("crash")
    outcome.said = [box["said"]] if "said" in box else []
    return outcome


# -- what a page showed (streamlit.testing's AppTest) --------------------------------------------------
MESSAGE_KINDS = ("error", "warning", "info")


def page_said(app) -> list[str]:
    """The plain text of every error, warning and info box of ``app``'s last run."""
    return [plain(str(element.value)) for kind in MESSAGE_KINDS for element in getattr(app, kind)]


def markdown_bodies(app) -> list[tuple[str, str]]:
    """``(where, Markdown text)`` of every element Streamlit renders as Markdown in ``app``'s last run."""
    bodies = []
    for kind in ("warning", "error", "info", "success", "caption", "markdown", "title", "header", "subheader"):
        bodies += [(kind, str(element.value)) for element in getattr(app, kind)]
    for element in app.get("imgs"):
        bodies += [("image caption", image.caption) for image in element.proto.imgs]
    for element in app.get("arrow_table"):
        frame = element.value
        bodies += [("table", str(value)) for value in [*frame.index, *frame.to_numpy().ravel()] if isinstance(value, str)]
    bodies += [("expander", element.label) for element in app.expander]
    bodies += [("tab", element.label) for element in app.tabs]
    return bodies


def page_outcome(run: Callable[[], Any], forbidden: tuple[Path, ...] = ()) -> tuple[Outcome, Any]:
    """``run()`` (which returns the AppTest after its last run) watched, and what its page showed."""
    outcome = Outcome()
    with watching(outcome, forbidden):
        app = run()
    outcome.said, outcome.markdown = page_said(app), markdown_bodies(app)
    outcome.crash = "; ".join(exception.message for exception in app.exception) or None
    return outcome, app
