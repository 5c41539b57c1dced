"""What an image folder holds: the files to embed (only regular files are read: pipes, sockets,
devices, link loops and broken links are listed with the reason, and /proc, /sys and /dev are
refused as folders), and each file's content fingerprint."""
from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from ..images import MAX_BYTES, FileRefused, display_name, file_problem, read_regular_file, system_folder
from .labels import read_labels_table


class ImageFolder(NamedTuple):
    """An image folder to embed, listed: ``root``, the labels CSV's path and its table (``None``
    without one), ``files`` (relative ``/``-paths, sorted) and ``unread`` (``(display path,
    reason)`` for the entries that are not read)."""

    root: Path
    labels_csv: Path | None
    labels_table: pd.DataFrame | None
    files: list[str]
    unread: list[tuple[str, str]]


def open_image_folder(folder: str | os.PathLike, labels_csv: str | os.PathLike | None) -> ImageFolder:
    """The :class:`ImageFolder` of ``folder`` (and its labels CSV); a missing folder or a bad labels
    CSV fails here (``ValueError``), before any image is encoded."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise ValueError(f"image folder {display_name(folder)!r} does not exist or is not a folder")
    csv_path = Path(labels_csv).expanduser() if labels_csv is not None else None
    table = read_labels_table(csv_path) if csv_path is not None else None
    files, unread = scan_folder(root, exclude=csv_path)
    return ImageFolder(root, csv_path, table, files, unread)


def scan_folder(root: Path, exclude: Path | None = None) -> tuple[list[str], list[tuple[str, str]]]:
    """``(files, skipped)`` under ``root``: relative ``/``-paths of the non-hidden regular files
    (``exclude`` left out), sorted, and ``(display path, reason)`` for every other entry that is not
    read: pipes, sockets, devices, link loops, broken links, links to folders (not followed, as they
    can loop) and folders that cannot be listed. Hidden files and folders are left out silently.
    Nothing is opened. Raises ``ValueError`` if ``root`` is or resolves into /proc, /sys or /dev.
    """
    system = system_folder(root)
    if system is not None:
        raise ValueError(f"image folder {display_name(root)!r} is (or links into) {system}, a system folder, not a "
                         "folder of images; pass a folder that holds image files")
    excluded = _identity(exclude) if exclude is not None else None
    found: list[str] = []
    skipped: list[tuple[str, str]] = []

    def relative(path: str | os.PathLike) -> str:
        return display_name(Path(path).relative_to(root).as_posix())

    def unlistable(error: OSError) -> None:
        skipped.append((relative(error.filename), f"a folder that cannot be listed ({error.strerror}); "
                                                  "check its permissions"))

    for directory, subdirectories, names in os.walk(root, onerror=unlistable):
        base = Path(directory)
        followed = []
        for name in subdirectories:
            if name.startswith("."):
                continue
            if os.path.islink(base / name):
                skipped.append((relative(base / name), "a link to a folder; links to folders are not followed "
                                                       "(they can loop): move or copy the images in"))
            else:
                followed.append(name)
        subdirectories[:] = followed
        for name in names:
            path = base / name
            if name.startswith("."):
                continue
            problem = None if _is_plain_file(path) else file_problem(path)
            if problem is not None:
                skipped.append((relative(path), problem))
            elif excluded is None or _identity(path) != excluded:
                found.append(path.relative_to(root).as_posix())
    return sorted(found), sorted(skipped)


def list_files(root: Path, exclude: Path | None) -> list[str]:
    """Relative ``/``-paths of the non-hidden regular files under ``root``, sorted (see :func:`scan_folder`)."""
    return scan_folder(root, exclude)[0]


def _is_plain_file(path: Path) -> bool:
    """A regular file that is not a link: the common case, decided by one lstat and safe to read."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of what ``path`` leads to, so a link to the labels CSV is recognised as it."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def content_fingerprint(path: Path) -> str:
    """The sha256 of the file at ``path``, what a cache or a store plan keys it by; a file too large
    to be an image is not read (its size stands in), one that cannot be read is named by why."""
    try:
        size = os.stat(path).st_size
    except OSError as error:
        return f"unreadable:{error.errno}"
    if size > MAX_BYTES:
        return f"size:{size}"
    try:
        return hashlib.sha256(read_regular_file(path, str(path), MAX_BYTES, "")).hexdigest()
    except FileRefused as refused:  # load_image will refuse it too, and say why
        return f"unreadable:{refused.reason}"

