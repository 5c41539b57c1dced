"""``anchordiv fetch-model``: download a model's files (verified), for this machine or, with ``--to``,
for copying to one without network."""
from __future__ import annotations

import argparse
from contextlib import contextmanager
from typing import Iterator

from .logs import progress_bar


def add_parser(commands) -> argparse.ArgumentParser:
    fetch = commands.add_parser(
        "fetch-model", help="download an open_clip model's files (verified) into the caches, or into --to DIR "
                            "for copying to a machine without network")
    fetch.add_argument("spec", help="open_clip:<arch> (with --pretrained TAG) or open_clip:hf-hub:ORG/REPO")
    fetch.add_argument("--pretrained", help="the open_clip pretrained tag, e.g. laion2b_s34b_b79k")
    fetch.add_argument("--to", help="also copy the files into this folder, laid out like anchordiv's checkpoint "
                                    "folder: copy its contents into <anchordiv cache>/checkpoints/ elsewhere")
    fetch.set_defaults(handler=run)
    return fetch


def run(args: argparse.Namespace) -> int:
    from ..cache import check_folder
    from ..encoders import fetch_model, parse_model_spec
    from ..encoders.folders import checkpoints_root

    spec = parse_model_spec(args.spec, args.pretrained)
    if args.to is not None:
        check_folder(args.to, f"--to {args.to!r}", "give a folder you can write to")
    with download_progress() as progress:
        paths = fetch_model(spec, to=args.to, progress=progress)
    for path in paths:
        print(f"fetched {path}")
    if args.to is not None:
        print(f"copy the contents of {args.to} into {checkpoints_root()} on the machine without network "
              f"(or into $ANCHORDIV_CACHE/checkpoints there); {spec.model} then loads offline")
    return 0


@contextmanager
def download_progress() -> Iterator:
    """A ``progress(DownloadStatus)`` callback drawing a bar on stderr (bytes, speed, time left)."""
    with progress_bar("download") as report:
        yield lambda status: report(status.fraction, status.text())


def load_with_progress(spec: str, pretrained: str | None = None, device: str | None = None,
                       allow_download: bool = False):
    """:func:`~anchordiv.encoders.load_encoder` for a command (``spec``: its ``--encoder``), a
    download (with ``--allow-download``) drawing its bar on stderr."""
    from ..encoders import load_encoder

    with download_progress() as progress:
        return load_encoder(spec, pretrained=pretrained, device=device, allow_download=allow_download,
                            progress=progress)
