"""What the commands check before the work (which can take minutes): that inputs exist and read,
that outputs can be written, that the device exists. Each refusal is a ``ValueError`` naming the
option, the path and the fix."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..cache import check_file_target, check_folder
from .output import warn


def check_output_file(path: str | None, option: str) -> None:
    """A file can be written at ``path`` (when given)."""
    if path:
        check_file_target(path, f"{option} {path!r}", f"give {option} a file path in a folder you can write to")


def check_output_folder(path: str, option: str) -> None:
    """``path`` is a folder, or can be made one, that this user can write to."""
    check_folder(path, f"{option} {path!r}", f"give {option} a folder you can write to")


def check_input(path: str | None, option: str, what: str, folder: bool = False) -> None:
    """``path`` (when given) is an existing file (or folder); ``what`` says what to give instead."""
    if path is not None and not (Path(path).is_dir() if folder else Path(path).is_file()):
        kind = "folder" if folder else "file"
        raise ValueError(f"{option} {path!r} does not exist or is not a {kind}; give {what}")


def check_labels(args: argparse.Namespace) -> None:
    """The ``--labels`` CSV (when given) exists and reads strictly, as the embedding will read it (a
    damaged file is named with its line, never half-read)."""
    from ..embeddings import read_labels_table

    check_input(args.labels, "--labels", "a CSV file with a path (or filename) column")
    if args.labels is not None:
        read_labels_table(Path(args.labels).expanduser(), f"--labels {args.labels!r}")


def check_weights(args: argparse.Namespace) -> None:
    """The ``--weights`` folder (:func:`~anchordiv.cli.options.add_weights_option`) exists."""
    check_input(args.weights, "--weights", "the folder with the built-in weights and manifest", folder=True)


def check_device(args: argparse.Namespace) -> None:
    """The ``--device`` asked for exists here."""
    from ..device import resolve_device

    resolve_device(args.device, "--device")


def anchor_file(args: argparse.Namespace, option: str) -> tuple[str, ...] | None:
    """The anchors of the file given with ``option`` (``None`` when none is given), parsed as the app
    parses its text areas: one a line, blank lines and repeats dropped, at most
    :data:`~anchordiv.explorer.MAX_ANCHORS`. A file without anchors is refused (rather than
    silently replaced by a default set), and so is a weighted set (its weights would be lost); anchors
    past the cap are named in a warning."""
    from ..explorer import MAX_ANCHORS, parse_anchor_text

    path = getattr(args, option.removeprefix("--").replace("-", "_"))
    if path is None:
        return None
    check_input(path, option, "a text file with one anchor per line")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeError) as error:
        raise ValueError(f"{option} {path!r} cannot be read ({error}); give a UTF-8 text file with one anchor "
                         "per line") from error
    try:
        parsed = parse_anchor_text(text)
    except ValueError as error:  # a bad weight's message names lines, not the file they are in
        raise ValueError(f"{option} {path!r}: {error}") from None
    if not parsed.anchors:
        raise ValueError(f"{option} {path!r} has no anchors (every line is blank); give one anchor per line")
    if parsed.weights is not None:
        raise ValueError(f"{option} {path!r} is a weighted set (term<TAB>weight lines, as the explorer saves "
                         "them); the command line takes unweighted anchors only: keep the terms, one per line")
    if parsed.truncated:
        total = len(parsed.anchors) + parsed.truncated
        warn(args, f"{option} {path!r} has {total:,} distinct anchors; only the first {MAX_ANCHORS:,} are used "
                   "(the most a set takes). Split the file or drop anchors")
    return parsed.anchors
