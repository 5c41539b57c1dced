"""``anchordiv demo``: the Streamlit explorer, started from the installed package (headless: it
prints the URL to open). What follows ``--`` goes to the explorer itself, e.g.
``anchordiv demo -- --data-root DIR``."""
from __future__ import annotations

import argparse
import os
import subprocess
from pathlib import Path

from ..app.server_settings import EXPLORER_SCRIPT, streamlit_argv
from .options import COUNT


def add_parser(commands) -> argparse.ArgumentParser:
    demo = commands.add_parser("demo", help="start the explorer (Streamlit) on the built-in world; "
                                            "the explorer's own options after --, e.g. -- --data-root DIR")
    demo.add_argument("--port", type=COUNT, help="the server's port (default: Streamlit's, 8501)")
    demo.add_argument("app_args", nargs="*", metavar="APP_ARG",
                      help="after --: the explorer's options, --data-root DIR (repeatable) and --allow-any-path")
    demo.set_defaults(handler=run)
    return demo


def run(args: argparse.Namespace) -> int:
    from ..explorer.paths import DataRoots

    DataRoots.from_launch(args.app_args, os.environ)  # a mistyped --data-root is refused before the server starts
    return subprocess.call(streamlit_argv(app_script(), args.app_args, port=args.port))


def app_script() -> Path:
    """The explorer's entry script in the installed package."""
    from ..resources import app_dir

    script = app_dir() / EXPLORER_SCRIPT
    if not script.is_file():
        raise ValueError(f"the explorer's {EXPLORER_SCRIPT} is missing from {script.parent}; reinstall anchordiv")
    return script

