"""Where rendered data is cached, and how cache files are written so that they can be trusted."""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np


CACHE_VARIABLE = "ANCHORDIV_CACHE"


def cache_dir(writable: bool = False) -> Path:
    """``$ANCHORDIV_CACHE`` when set (and non-empty), else ``~/.cache/anchordiv``; not created here.

    Raises ``ValueError`` naming the variable when the path is a file (or lies under one), and
    with ``writable=True`` also when this process could not create or write it. Without it, a
    read-only cache filled in advance stays usable.
    """
    configured = os.environ.get(CACHE_VARIABLE)
    path = Path(configured).expanduser() if configured else Path.home() / ".cache" / "anchordiv"
    what = f"{CACHE_VARIABLE}={configured}" if configured else f"the anchordiv cache {path} ({CACHE_VARIABLE} unset)"
    check_folder(path, what, f"set {CACHE_VARIABLE} to a folder you can write to", writable=writable)
    return path


def check_folder(path: str | os.PathLike, what: str, fix: str, writable: bool = True) -> Path:
    """``path`` if it is a folder, or one that can be created: its nearest existing ancestor is a
    folder (and, with ``writable``, one this process may write to). Otherwise ``ValueError``
    naming ``what`` (e.g. "--out 'reports'"), the path in the way and ``fix``. Nothing is created."""
    path = Path(path).expanduser()
    problem = _folder_problem(path, writable, named=True)
    if problem:
        raise ValueError(f"{what} {problem}; {fix}")
    return path


def check_file_target(path: str | os.PathLike, what: str, fix: str) -> Path:
    """``path`` if a file can be written there: not a folder, in a folder that exists or can be
    created (see :func:`check_folder`). Checked before the work, as writing would fail after it."""
    path = Path(path).expanduser()
    problem = "is a folder, not a file" if path.is_dir() else _folder_problem(path.parent, True, named=False)
    if problem:
        raise ValueError(f"{what} {problem}; {fix}")
    return path


def _folder_problem(path: Path, writable: bool, named: bool) -> str | None:
    """What keeps ``path`` from being a (writable) folder, in words; ``None`` when nothing does.
    ``named``: the caller's message names ``path`` itself (else a file inside it)."""
    existing = path
    while not _exists(existing) and existing != existing.parent:
        existing = existing.parent
    here = named and existing == path
    if not existing.is_dir():
        return "is a file, not a folder" if here else f"cannot be created: {existing} is a file, not a folder"
    if writable and not os.access(existing, os.W_OK | os.X_OK):
        return "is not writable by this user" if here else f"cannot be created: {existing} is not writable by this user"
    return None


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # e.g. a folder above it that this user may not list
        return False


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB chunks so large files need no extra memory."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verified_sha256(path: Path, expected: str | None, record: str, hint: str,
                    error: type[Exception] = ValueError) -> str:
    """The sha256 of ``path`` after checking that it exists and equals ``expected`` (what
    ``record`` says it should be); otherwise ``error`` naming the file, both hashes and ``hint``."""
    if not path.is_file():
        raise error(f"{path} is missing; {hint}")
    actual = sha256_file(path)
    if actual != expected:
        raise error(f"{path} has sha256 {actual} but {record} records {expected} (damaged or changed); {hint}")
    return actual


def atomic_write(path: Path, write: Callable[[object], None]) -> None:
    """Call ``write(binary_file)`` on a temporary file next to ``path``, then rename it over ``path``.

    The rename is atomic on POSIX and Windows, so a reader sees either the old file or the
    complete new one; a run killed mid-write leaves only a stray ``*.tmp`` that nothing reads.
    An operating-system fault (no permission, no space, a file where a folder should be) is
    raised as ``ValueError`` naming ``path``.
    """
    try:
        _write_and_replace(path, write)
    except OSError as error:
        reason = error.strerror or str(error)
        raise ValueError(f"cannot write {path}: {reason}; free some space or choose a folder you can write to "
                         f"(for the cache: set {CACHE_VARIABLE})") from error


def _write_and_replace(path: Path, write: Callable[[object], None]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False)
    try:
        with handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        # NamedTemporaryFile creates 0600 files; cache and data files are meant to be shared.
        os.chmod(handle.name, 0o644)
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


def cached_array(path: Path, key: str, build: Callable[[], np.ndarray]) -> np.ndarray:
    """The array stored at ``path`` (memory-mapped, read-only) if it was built for ``key``, else ``build()``'s.

    Beside ``path`` lives ``<path>.json`` recording the key, shape, dtype and sha256 of the
    ``.npy`` file. It is written after the array, so it vouches only for a complete file; any
    mismatch (other key, truncated or altered bytes, missing file) rebuilds and rewrites both.
    """
    meta_path = path.with_name(path.name + ".json")
    if _is_valid(path, meta_path, key):
        return np.load(path, mmap_mode="r")
    array = np.ascontiguousarray(build())
    atomic_write(path, lambda handle: np.save(handle, array))
    meta = {"key": key, "shape": list(array.shape), "dtype": array.dtype.str, "sha256": sha256_file(path)}
    atomic_write(meta_path, lambda handle: handle.write(json.dumps(meta, indent=1).encode()))
    return np.load(path, mmap_mode="r")


def _is_valid(path: Path, meta_path: Path, key: str) -> bool:
    """Whether ``meta_path`` vouches for ``path`` under ``key`` and the file's bytes agree with it."""
    try:
        meta = json.loads(meta_path.read_text())
        if meta.get("key") != key or sha256_file(path) != meta.get("sha256"):
            return False
        # The hash already proves the bytes; the header check guards against a meta file
        # that was copied next to a different array by hand.
        header = np.load(path, mmap_mode="r")
        return list(header.shape) == meta["shape"] and header.dtype.str == meta["dtype"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
