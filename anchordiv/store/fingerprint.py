"""What a shard file is, cheaply, so that an index over a store notices a shard changed on disk.

An index keeps per-row terms of a store's shards; it records each shard's
:class:`ShardFingerprint` when it computes them and compares (``GalleryStore.check_unchanged``)
before it reads the shard again, so a changed shard is refused by name instead of being scanned
with stale terms.
"""
from __future__ import annotations

import os
import time
from typing import NamedTuple, Sequence

# A file's times come from a clock that advances once per kernel tick (1 to 10 ms on Linux), so a
# write within the tick of the previous one leaves them unchanged. Fingerprints are taken only once
# a shard's last change is older than this, so that every later write shows in them.
FILE_CLOCK_TICK_NS = 20_000_000


class ShardFingerprint(NamedTuple):
    """What a shard file is, cheaply: ``os.stat``'s inode, size, modification and change times (ns;
    the change time also moves when the modification time is set back by hand) and the ``.npy``
    header's bytes. Equal fingerprints mean the same file, unwritten since (see :func:`settle`)."""

    inode: int
    size: int
    modified_ns: int
    changed_ns: int
    header: bytes

    @classmethod
    def of(cls, path: str, header_bytes: int) -> "ShardFingerprint":
        """The fingerprint of the file at ``path`` now, its header being its first ``header_bytes``
        bytes; ``OSError`` when it cannot be read. The header and the times come from one open file,
        through plain descriptors, since a slider move checks every shard."""
        descriptor = os.open(path, os.O_RDONLY)
        try:
            info = os.fstat(descriptor)
            return cls(info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, os.read(descriptor, header_bytes))
        finally:
            os.close(descriptor)

    def change_to(self, new: "ShardFingerprint") -> str:
        """What differs in ``new``, a later fingerprint of the same shard, in words; ``""`` when nothing does."""
        if new.inode != self.inode:
            return "it was replaced by another file"
        if new.size != self.size:
            return f"its size went from {self.size} to {new.size} bytes"
        if new.header != self.header:
            return "its .npy header changed"
        if (new.modified_ns, new.changed_ns) != (self.modified_ns, self.changed_ns):
            return "it was written to or touched"
        return ""


def settle(paths: Sequence[str]) -> None:
    """Return once the last change of every file in ``paths`` is a file-clock tick old (sleeping at
    most one tick), so that a write after a fingerprint is taken changes the fingerprint.

    Parameters
    ----------
    paths : sequence of str
        The files about to be fingerprinted.
    """
    try:
        newest = max((max(info.st_mtime_ns, info.st_ctime_ns) for info in map(os.stat, paths)), default=0)
    except OSError:  # a missing file is named by the fingerprint that follows
        return
    wait = newest + FILE_CLOCK_TICK_NS - time.time_ns()
    if wait > 0:
        time.sleep(min(wait, FILE_CLOCK_TICK_NS) / 1e9)
