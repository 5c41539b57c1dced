"""Where a script run's CPU goes, by stage, for ``explorer-bench --browser`` (off unless the server
was started with ``ANCHORDIV_STEP_LOG`` naming a file).

A run wrapped in :func:`timed_run` appends one JSON line to that file when it ends::

    {"app": "explorer", "session": "...", "cpu_s": 0.041, "wall_s": 0.06, "started_at": 1796000000.5,
     "stages": {"captions and tables": 0.004, ...}}

``cpu_s`` is the script thread's CPU time over the run (``time.thread_time``), ``wall_s`` its
wall-clock time and ``started_at`` its start (``time.time``: where a run falls among many
sessions' steps), ``stages`` the parts of it spent inside :func:`stage` blocks. The benchmark sets
the log, reads the lines each step adds and puts them beside the server's whole CPU time (the
process's CPU clock): the difference is Streamlit's own work outside the script thread (serialising
and sending the messages, answering media requests).
With the log unset, both helpers do nothing but check one global.
"""
from __future__ import annotations

import json
import os
import threading
import time
from collections import defaultdict
from contextlib import contextmanager
from typing import Iterator

LOG_PATH = os.environ.get("ANCHORDIV_STEP_LOG") or None
# The stages the benchmark reports, in its order; a run may use any subset.
STAGES = ("captions and tables", "image encoding")

_local = threading.local()  # each session's script runs in a thread of its own
_write = threading.Lock()   # one line at a time; taken only when the log is on


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Count the script thread's CPU inside the block towards stage ``name`` of the current run."""
    stages = getattr(_local, "stages", None) if LOG_PATH else None
    if stages is None:
        yield
        return
    start = time.thread_time()
    try:
        yield
    finally:
        stages[name] += time.thread_time() - start


@contextmanager
def timed_run(app: str) -> Iterator[None]:
    """One script run (a full run or a fragment's) of ``app``; its line is written when it ends."""
    if not LOG_PATH or getattr(_local, "stages", None) is not None:  # off, or nested in a timed run
        yield
        return
    _local.stages = defaultdict(float)
    start, started_at = time.thread_time(), time.time()
    try:
        yield
    finally:
        line = {"app": app, "session": _session_id(), "cpu_s": time.thread_time() - start,
                "wall_s": time.time() - started_at, "started_at": started_at, "stages": dict(_local.stages)}
        _local.stages = None
        with _write, open(LOG_PATH, "a", encoding="utf-8") as log:
            log.write(json.dumps(line) + "\n")


def _session_id() -> str | None:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    context = get_script_run_ctx()
    return None if context is None else context.session_id
