"""Command line: ``python -m anchordiv <command>`` (also installed as ``anchordiv``).

One module per command, each with ``add_parser(commands)`` and the handler it sets; the options
several commands share are defined once in :mod:`.options`, the checks made before any work in
:mod:`.checks`. Results (tables, ``wrote <path>``) go to stdout; progress goes to stderr through
:mod:`logging` and tqdm (:mod:`.logs`)."""
from __future__ import annotations

import argparse
import sys

from . import (bench, demo, embed, embed_builtin_world, evaluate_builtin, explorer_bench, fetch_model, figure,
               reproduce, suggest, sweep, train_builtin)
from .logs import configure_logging
from .options import Parser, UsageError, add_logging_options
from .words import in_command_words

COMMANDS = (bench, embed, train_builtin, embed_builtin_world, evaluate_builtin, explorer_bench, reproduce, figure,
            sweep, demo, fetch_model, suggest)
# How each command needs less memory: a figure's is its dpi and its size, not its number of queries alone.
MEMORY_FIX = {None: "use smaller sizes (fewer queries, gallery images or anchors)",
              "figure": "draw a smaller figure (a lower --dpi, or PDF or SVG; fewer --queries or --geometries; a "
                        "lower -k) or lower the --max-* limits you raised"}


def build_parser() -> argparse.ArgumentParser:
    """The ``anchordiv`` parser: a subcommand from each module of :data:`COMMANDS`, each with
    ``--quiet`` and ``--verbose``."""
    parser = Parser(prog="anchordiv", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        add_logging_options(command.add_parser(commands))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run a command; every failure is one line on stderr, ``anchordiv <command>: <message>`` in the
    command's words (:mod:`.words`), and exit status 2 (130 when interrupted), never a traceback."""
    prog, command = "anchordiv", None
    try:
        args = build_parser().parse_args(argv)
        prog, command = f"anchordiv {args.command}", args.command
        configure_logging(args.verbosity)
        return args.handler(args)
    except UsageError as error:
        return _fail(error.prog, str(error))
    except ValueError as error:
        return _fail(prog, in_command_words(error, command))
    except OSError as error:  # the checks before the work catch the usual ones; this is the rest (a full disk, ...)
        where = f" ({error.filename})" if error.filename else ""
        return _fail(prog, f"{error.strerror or error}{where}; check that the path exists and is readable or "
                           "writable as needed, and that its disk has space")
    except MemoryError:
        return _fail(prog, f"ran out of memory; {MEMORY_FIX.get(command, MEMORY_FIX[None])}")
    except KeyboardInterrupt:
        _fail(prog, "interrupted")
        return 130


def _fail(prog: str, message: str) -> int:
    print(f"{prog}: {message}", file=sys.stderr)
    return 2
