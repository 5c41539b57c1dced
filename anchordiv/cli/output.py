"""What the commands say: results on stdout (tables, ``wrote <path>``), warnings through logging
(stderr, ``anchordiv <command>: warning: <message>``)."""
from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from ..cache import atomic_write

logger = logging.getLogger(__name__)


def warn(args: argparse.Namespace, message: str) -> None:
    """One line on stderr, ``anchordiv <command>: warning: <message>``: the run goes on."""
    logger.warning(f"anchordiv {args.command}: warning: {message}")


def warn_unlabelled(args: argparse.Namespace, unlabelled: list[str], shown: int = 3) -> None:
    """Name the images the ``--labels`` CSV has no row for (they keep their folder as label)."""
    if unlabelled:
        names = ", ".join(repr(path) for path in unlabelled[:shown]) + (", …" if len(unlabelled) > shown else "")
        warn(args, f"--labels {args.labels!r} has no row for {len(unlabelled):,} image(s) ({names}); they keep "
                   "their folder as label. Add a row for each to the CSV to label them")


def name_skipped(skipped: list[tuple[str, str]], shown: int = 3) -> str:
    """Files left out, for a message: the first ``shown``, each reason said once, then how many more.

    Parameters
    ----------
    skipped : list of (str, str)
        ``(display path, reason)`` of each file, as :func:`~anchordiv.embeddings.embed_folder` gives them.
    shown : int
        How many to name; a folder of thousands of bad files must not become a message of thousands.

    Returns
    -------
    str
        ``"'a.png', 'b.png': <reason>; 'c.txt': <reason>; and 5 more"``.
    """
    by_reason: dict[str, list[str]] = {}
    for path, reason in skipped[:shown]:
        by_reason.setdefault(reason, []).append(repr(path))
    named = "; ".join(f"{', '.join(paths)}: {reason}" for reason, paths in by_reason.items())
    more = len(skipped) - shown
    return named + (f"; and {more:,} more" if more > 0 else "")


def write_json(path: str | None, result: object) -> None:
    """Write ``result`` as JSON when a ``--json`` path was given, and say so."""
    if path:
        target = Path(path)
        atomic_write(target, lambda handle: handle.write(json.dumps(result, indent=2, default=float).encode()))
        print(f"wrote {target}")
