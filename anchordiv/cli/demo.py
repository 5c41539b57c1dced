"""``anchordiv demo``: the Streamlit explorer, started from the installed package (headless: it
prints the URL to open). What follows ``--`` goes to the explorer itself, e.g.
``anchordiv demo -- --data-root DIR``."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from .options import COUNT

APP_SCRIPT = "streamlit_app.py"


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

    script = app_dir() / APP_SCRIPT
    if not script.is_file():
        raise ValueError(f"the explorer's {APP_SCRIPT} is missing from {script.parent}; reinstall anchordiv")
    return script


def streamlit_argv(script: Path, app_args: list[str], port: int | None = None) -> list[str]:
    """The command line that serves ``script`` with this Python's Streamlit and the explorer's server
    settings (:mod:`anchordiv.app.server_settings`: headless, no error details for visitors, the
    upload cap), on ``port`` (``None``: Streamlit's default), passing ``app_args`` to the script."""
    from ..app.server_settings import streamlit_flags

    server = [f"--server.port={port}"] if port is not None else []
    passed = ["--", *app_args] if app_args else []
    return [sys.executable, "-m", "streamlit", "run", str(script), *streamlit_flags(), *server, *passed]
