"""One writer at a time: the exclusive lock a writer holds on a store folder for its life."""
from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from .manifest import LOCK_FILE

try:  # POSIX only; without it two writers on one folder are not kept apart
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None


class WriterLock:
    """An exclusive lock on a store folder (created if absent) for one writer's life: ``flock`` on its
    ``writer.lock``, never waited for. A second writer is refused at once, before it changes anything,
    with the holder's pid and host (written into the file by the holder). Released by :meth:`release`
    (or as a context manager), and by the system when the process ends, however it ends.

    Parameters
    ----------
    directory : Path
        The store's folder.

    Raises
    ------
    ValueError
        When ``directory`` is a file, cannot be written, or is held by another writer (named).
    """

    def __init__(self, directory: Path):
        if directory.exists() and not directory.is_dir():
            raise ValueError(f"{directory} is a file, not a folder; choose a folder for the store.")
        path = directory / LOCK_FILE
        try:
            directory.mkdir(parents=True, exist_ok=True)
            # Never through a link: the holder writes its pid into this file.
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except OSError as error:
            raise ValueError(f"cannot lock {path} for writing the store ({error.strerror or error}); choose a folder "
                             "you can write to, or remove the link if it is one.") from error
        self._handle = os.fdopen(descriptor, "r+", errors="replace")
        if fcntl is not None:
            self._lock(directory)

    def _lock(self, directory: Path) -> None:
        try:
            fcntl.flock(self._handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = " ".join(self._handle.read(200).split()) or "its pid not yet written"
            self.release()
            raise ValueError(f"{directory} is being written by another writer ({holder}), which holds the store; "
                             "wait for it to finish (or stop it) and run again, or write to another folder.") from None
        self._handle.truncate(0)
        self._handle.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
        self._handle.flush()

    def release(self) -> None:
        self._handle.close()

    def __enter__(self) -> "WriterLock":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()
