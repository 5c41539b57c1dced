"""Where the commands' progress goes: the ``anchordiv`` loggers' INFO messages and tqdm bars, both
on stderr, so that stdout holds only the results."""
from __future__ import annotations

import logging
import sys
from contextlib import contextmanager
from typing import Iterator

from tqdm import tqdm

from ..progress import ProgressCallback

PACKAGE_LOGGER = "anchordiv"
LEVELS = {-1: logging.WARNING, 0: logging.INFO, 1: logging.DEBUG}


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a message comes (a redirect, a test's capture),
    not to the stream there was when the handler was made."""

    def __init__(self):
        super().__init__()
        self.setFormatter(logging.Formatter("%(message)s"))

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        """Ignored: the stream is always the current ``sys.stderr``."""


def configure_logging(verbosity: int = 0) -> None:
    """One stderr handler on the ``anchordiv`` loggers, bare messages, at INFO (``verbosity`` -1:
    WARNING, 1: DEBUG). Called once per command; a second call only sets the level."""
    logger = logging.getLogger(PACKAGE_LOGGER)
    logger.setLevel(LEVELS[verbosity])
    if not any(isinstance(handler, _StderrHandler) for handler in logger.handlers):
        logger.addHandler(_StderrHandler())
    root = logging.getLogger()
    if not root.handlers:
        # A library's module-level logging.warning() (open_clip's) would otherwise install
        # basicConfig's handler on the root, and every anchordiv message would be printed twice.
        root.addHandler(logging.NullHandler())


def progress_shown() -> bool:
    """Whether the commands show progress (bars, INFO messages): not under ``--quiet``."""
    return logging.getLogger(PACKAGE_LOGGER).isEnabledFor(logging.INFO)


@contextmanager
def progress_bar(what: str) -> Iterator[ProgressCallback]:
    """A ``progress(fraction, text)`` callback (as the embedding and store builders take) that
    draws a tqdm bar named ``what`` on stderr, with the latest ``text`` beside it, closed on
    leaving. The bar appears with the first report, so a run refused before any progress says only
    its one error line; ``--quiet`` hides it."""
    quiet = not progress_shown()
    bar = None

    def report(fraction: float, text: str) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=1.0, desc=what, file=sys.stderr, disable=quiet,
                       bar_format="{desc}: {percentage:3.0f}%|{bar:20}| {elapsed} {postfix}")
        bar.update(fraction - bar.n)
        bar.set_postfix_str(text)

    try:
        yield report
    finally:
        if bar is not None:
            bar.close()
