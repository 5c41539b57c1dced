"""``anchordiv demo``: the Streamlit explorer, started from the installed package (headless: it
prints the URL to open), on the built-in world or, with ``--folder``, on a folder of images.

``--encoder``, ``--pretrained``, ``--folder``, ``--labels``, ``--device`` and ``--allow-download``
choose what the explorer opens on and where it computes: the encoder is loaded (and, with ``--allow-download``, fetched) and the folder
embedded into the content-hash cache, with a progress bar, before the server starts, so a bad encoder
or folder is refused here and the explorer reads the folder's embeddings from the cache. They are
passed on as the explorer's launch options (:mod:`anchordiv.explorer.launch`), with a
``--data-root`` for a folder outside every data root given (the labels CSV opens as that one
file). What follows ``--`` goes to the explorer itself, e.g. ``anchordiv demo -- --data-root DIR``."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import NoReturn

from ..app.server_settings import EXPLORER_SCRIPT, server_address, streamlit_argv
from ..extras import require
from .checks import check_input, check_labels
from .options import add_encoder_option, integer
from .output import name_skipped, warn

# The demo's options that are the explorer's launch options too (the option, its args attribute).
LAUNCH_OPTIONS = (("--encoder", "encoder"), ("--pretrained", "pretrained"), ("--folder", "folder"), ("--labels", "labels"),
                  ("--device", "device"))


def add_parser(commands) -> argparse.ArgumentParser:
    demo = commands.add_parser("demo", help="start the explorer (Streamlit) on the built-in world, or with --folder "
                                            "on your images; the explorer's own options after --, e.g. -- --data-root DIR")
    demo.add_argument("--port", type=integer(1, 65535),
                      help="the server's TCP port, 1 to 65535 (default: Streamlit's, 8501)")
    demo.add_argument("--address", type=listen_address,
                      help="the one address the server listens on, e.g. 127.0.0.1 for this machine only (Streamlit's "
                           "server.address; default: every address of the machine)")
    add_encoder_option(demo, help="the encoder the explorer opens with: builtin (its default), open_clip:ARCH or "
                                  "open_clip:hf-hub:ORG/REPO")
    demo.add_argument("--pretrained", help="with an open_clip:ARCH encoder: its pretrained tag or checkpoint file")
    demo.add_argument("--folder", help="a folder of images (subfolders are labels) to open on, embedded with the "
                                       "encoder (with progress) before the server starts; it becomes a data root")
    demo.add_argument("--labels", help="with --folder: a CSV with a path (or filename) column and label columns "
                                       "(e.g. style); its folder becomes a data root too")
    demo.add_argument("--device", help="where the explorer encodes, fits, ranks and lays out maps: cpu, cuda or "
                                       "cuda:N (default: CUDA when available, else the CPU)")
    demo.add_argument("--allow-download", action="store_true", dest="allow_download",
                      help="let this command and the explorer fetch model weights from their hub (make demo gives it)")
    demo.add_argument("app_args", nargs="*", metavar="APP_ARG",
                      help="after --: the explorer's options, --data-root DIR (repeatable) and --allow-any-path")
    demo.set_defaults(handler=run)
    return demo


def run(args: argparse.Namespace) -> int:
    from ..explorer.launch import LaunchOptions

    require("streamlit", "explorer", "anchordiv demo (the explorer)")
    _check_choices(args)
    app_args = explorer_args(args, LaunchOptions.from_launch(args.app_args, os.environ).roots)
    LaunchOptions.from_launch(app_args, os.environ)  # a mistyped --data-root or encoder is refused before the server starts
    if args.encoder is not None or args.folder is not None:
        _prepare(args)
    return serve(streamlit_argv(app_script(), app_args, port=args.port, address=args.address))


def serve(argv: list[str]) -> NoReturn:
    """Run the explorer's server ``argv`` in this process's place: nothing this command loaded to
    prepare it (an encoder, a folder's embeddings: a third of a GB or more) stays resident beside
    the server, and a signal to this process reaches the server itself."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(argv[0], argv)


def listen_address(text: str) -> str:
    """An argparse type: :func:`~anchordiv.app.server_settings.server_address`, its refusal as a usage error."""
    try:
        return server_address(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _check_choices(args: argparse.Namespace) -> None:
    """What can be checked without loading an encoder: the options that need another, the folder and
    the labels CSV (read strictly, as the embedding reads it)."""
    if args.pretrained is not None and args.encoder is None:
        raise ValueError(f"--pretrained {args.pretrained!r} needs --encoder, e.g. --encoder open_clip:ViT-B-32")
    if args.labels is not None and args.folder is None:
        raise ValueError(f"--labels {args.labels!r} labels the images of --folder; give --folder too")
    check_input(args.folder, "--folder", "a folder of images (subfolders are labels)", folder=True)
    check_labels(args)


def explorer_args(args: argparse.Namespace, roots) -> list[str]:
    """The explorer's launch options: those after ``--``, the demo's own (paths made absolute), and
    a ``--data-root`` for the folder unless ``roots`` (the :class:`~anchordiv.explorer.paths.DataRoots`
    given after ``--``) already let the server open it. The labels CSV needs none: the server opens
    the one file its ``--labels`` names, not the folder it is in."""
    from ..explorer.paths import DataRoots

    passed = list(args.app_args)
    for option, name in LAUNCH_OPTIONS:
        value = getattr(args, name)
        if value is not None:
            passed += [option, str(Path(value).expanduser().resolve()) if name in ("folder", "labels") else value]
    if args.allow_download and "--allow-download" not in passed:
        passed.append("--allow-download")
    needed = [Path(args.folder)] if args.folder else []
    for folder in dict.fromkeys(path.expanduser().resolve() for path in needed):
        try:
            roots.confine(folder)
        except ValueError:
            passed += ["--data-root", str(folder)]
            roots = DataRoots((*roots.roots, folder), roots.allow_any_path)
    return passed


def _prepare(args: argparse.Namespace) -> None:
    """The encoder loaded (a bad one refused here, a download made here with its progress) and, with
    ``--folder``, the folder embedded into the cache the explorer reads it from: refused when fewer
    of its images can be read than the explorer needs to show anything (calibration's
    :data:`~anchordiv.models.calibration.MIN_REFERENCE`), its unreadable files named in a warning
    when enough can."""
    from ..cache import cache_dir
    from ..models.calibration import MIN_REFERENCE
    from .fetch_model import load_with_progress
    from .embed import embed_to_cache

    encoder = load_with_progress(args.encoder or "builtin", args.pretrained, args.device,
                                 allow_download=args.allow_download)
    if args.folder is None:
        return
    cache_dir(writable=True)
    print(f"anchordiv demo: embedding {args.folder} with {encoder.name} (cached for the explorer)", flush=True)
    options = argparse.Namespace(**vars(args), batch_size=None, out=None)  # batch_size None: sized to the device
    skipped = embed_to_cache(options, encoder, "--folder", fewest=MIN_REFERENCE,
                             needed_for="the explorer shows a query's neighbours, and calibrates p between anchor "
                                        f"sets A and B on the gallery: a query, a neighbour and one more, "
                                        f"{MIN_REFERENCE} in all")
    if skipped:
        warn(args, f"--folder {args.folder!r}: {len(skipped):,} file{'s' * (len(skipped) != 1)} left out of the "
                   f"explorer ({name_skipped(skipped)}); fix or remove them to include them, or go on: the "
                   "explorer opens on the other images")


def app_script() -> Path:
    """The explorer's entry script in the installed package."""
    from ..resources import app_dir

    script = app_dir() / EXPLORER_SCRIPT
    if not script.is_file():
        raise ValueError(f"the explorer's {EXPLORER_SCRIPT} is missing from {script.parent}; reinstall anchordiv")
    return script
