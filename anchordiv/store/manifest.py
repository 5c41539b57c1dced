"""A store's manifest and the rule that every file it names lies inside the store's folder.

The manifest (``manifest.json``, written last) records the format version, ``dim``, ``dtype``,
``rows``, the encoder, and every file of the store with its sha256: the shards (each with its
first row), the ids and the labels when there are any. It names files by plain names only: a path
(absolute, with ``..`` or a folder) is refused, and so is a name that resolves, once symlinks are
followed, outside the folder, so a hostile folder cannot make a store serve another file's bytes.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = "anchordiv-gallery-store"
VERSION = 1
MANIFEST = "manifest.json"
IDS_FILE = "ids.npy"
LABELS_FILE = "labels.csv"
DTYPES = ("float16", "float32")
LOCK_FILE = "writer.lock"
# The fix named when a store that was not built from a plan cannot be read.
REBUILD = "rebuild the store with GalleryStore.from_array"
# The fix named when a folder holds something a write would replace.
OVERWRITE = "pass overwrite=True (--overwrite on the command line)"
# The files a manifest may name.
_STORE_FILE = re.compile(r"^(shard-\d+\.npy|ids\.npy|labels\.csv)$")


def shard_name(number: int) -> str:
    """The file name of shard ``number`` (``shard-00000.npy`` ...)."""
    return f"shard-{number:05d}.npy"


def record_name(number: int) -> str:
    """The file name of the record of finished shard ``number`` in a build (``shard-00000.json`` ...)."""
    return f"shard-{number:05d}.json"


def file_entries(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """Every file entry of a manifest: the shards, the ids and the labels when there are any."""
    return [*manifest["shards"], manifest["ids"], *([manifest["labels"]] if manifest["labels"] is not None else [])]


def confined(directory: Path, name: str) -> Path:
    """``directory / name`` with symlinks followed; ``ValueError`` when that lies outside ``directory``
    (itself resolved): a link out of a store would make it serve another file's bytes as its own."""
    try:
        root, target = directory.resolve(), (directory / name).resolve()
    except (OSError, RuntimeError) as error:  # RuntimeError: a symlink loop
        raise ValueError(f"store {directory}: {name} cannot be resolved ({error}); replace it by the file itself, "
                         "or rebuild the store.") from error
    if not target.is_relative_to(root):
        raise ValueError(f"store {directory}: every file of a store must lie inside its folder; {name} resolves to "
                         f"{target}. Put the file itself in the store instead of a link, or rebuild the store.")
    return target


def load_header_checked(path: Path, fix: str) -> np.ndarray:
    """``path`` memory-mapped read-only; a missing or truncated file is a ``ValueError`` naming it."""
    if not path.is_file():
        raise ValueError(f"{path} is missing from the store; {fix}.")
    try:
        return np.load(path, mmap_mode="r")
    except (OSError, ValueError) as error:  # numpy refuses a file shorter than its header says
        raise ValueError(f"{path} is damaged or truncated ({error}); {fix}.") from error


def read_manifest(directory: Path) -> dict[str, Any]:
    """The manifest of the store in ``directory``, checked for the fields a reader relies on."""
    if not (directory / MANIFEST).is_file():
        raise ValueError(f"{directory} is not a gallery store: {MANIFEST} is missing (a write that did not "
                         f"finish leaves none); {REBUILD}.")
    path = confined(directory, MANIFEST)
    try:
        manifest = json.loads(path.read_text())
        _check_manifest(manifest)
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path} is not a valid store manifest ({error}); {REBUILD}.") from error
    return manifest


def _check_manifest(manifest: Any) -> None:
    """Raise ``ValueError``/``KeyError``/``TypeError`` unless ``manifest`` is a consistent version-1 manifest."""
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ValueError(f"format is not {FORMAT!r}")
    if manifest["version"] != VERSION:
        raise ValueError(f"version {manifest['version']!r} is not {VERSION} (written by another anchordiv)")
    if manifest["dtype"] not in DTYPES or int(manifest["dim"]) < 1:
        raise ValueError(f"dtype {manifest['dtype']!r} / dim {manifest['dim']!r} out of range")
    if manifest["ids"] is None:
        raise ValueError("ids entry is missing")
    for entry in file_entries(manifest):
        _check_file_name(entry["file"])
    expected_start = 0
    for entry in manifest["shards"]:
        if (int(entry["start"]) != expected_start or int(entry["rows"]) < 1 or not _STORE_FILE.match(entry["file"])
                or not isinstance(entry["sha256"], str)):
            raise ValueError(f"shard entry {entry!r} is malformed or does not continue at row {expected_start}")
        expected_start += int(entry["rows"])
    if expected_start != manifest["rows"] or expected_start == 0:
        raise ValueError(f"the shards hold {expected_start} rows but rows is {manifest['rows']!r}")
    for key in ("ids", "labels"):
        entry = manifest[key]
        if entry is not None and (not _STORE_FILE.match(entry["file"]) or not isinstance(entry["sha256"], str)):
            raise ValueError(f"{key} entry {entry!r} is malformed")


def _check_file_name(name: Any) -> None:
    """A manifest names its files by plain names in the store's folder: a path is refused by name
    (other malformed names are caught by the file-name pattern)."""
    if isinstance(name, str) and (os.path.isabs(name) or ".." in Path(name).parts or Path(name).name != name):
        raise ValueError(f"file name {name!r} is a path (absolute, with .. or a folder), not a plain name, but every "
                         "file of a store must lie inside its folder")
