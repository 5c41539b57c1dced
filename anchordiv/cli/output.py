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


def write_json(path: str | None, result: object) -> None:
    """Write ``result`` as JSON when a ``--json`` path was given, and say so."""
    if path:
        target = Path(path)
        atomic_write(target, lambda handle: handle.write(json.dumps(result, indent=2, default=float).encode()))
        print(f"wrote {target}")
