"""Reading a store: :class:`GalleryStore`, a read-only gallery of embeddings in ``.npy`` shards.

``open`` checks what is cheap (the manifest, each file's presence, each shard's ``.npy`` header);
``verify`` hashes every byte. Reading never loads the whole store: ``shards`` are read-only
memory maps used for their shapes and headers, and the rows are read with plain file reads
(``iter_blocks`` converts one block at a time to float32), which leave the pages in the page
cache instead of the process's resident memory.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import pandas as pd
import torch

from .._validation import ArrayLike, as_numeric_tensor, check_positive_int
from ..cache import sha256_file
from .fingerprint import ShardFingerprint, settle
from .folder import write_array_store
from .manifest import MANIFEST, REBUILD, confined, file_entries, load_header_checked, read_manifest
from .plan import BuildReport


class GalleryStore:
    """A read-only gallery of ``G`` unit-norm embeddings of dimension ``d`` in ``.npy`` shards
    (read with file reads; memory maps only give their shapes).

    Build one with :meth:`from_array` (or :func:`~anchordiv.store.build_store`), read one with
    :meth:`open`. ``len(store)`` is ``G``; ``dim``, ``dtype`` (``"float16"`` or ``"float32"``),
    ``encoder`` (a name or ``None``), ``shards`` (read-only ``np.memmap`` ``(rows_s, d)`` each),
    ``shard_starts`` (the first row of each), ``ids`` ``(G,)`` int64, ``labels`` (a DataFrame of
    ``G`` rows, or ``None``).
    """

    def __init__(self, directory: Path, manifest: dict[str, Any]):
        """Use :meth:`open`; this only checks the manifest against the files' headers, and that every
        file it names lies inside ``directory`` once symlinks are followed."""
        self.directory = directory
        self._manifest = manifest
        # Resolved once: every read goes to these paths, so a link swapped in later is never followed.
        self._paths = {entry["file"]: confined(directory, entry["file"]) for entry in file_entries(manifest)}
        self.dim = int(manifest["dim"])
        self.dtype = str(manifest["dtype"])
        self.encoder = manifest["encoder"]
        self.shard_starts = [int(entry["start"]) for entry in manifest["shards"]]
        self.shards = [self._open_shard(entry) for entry in manifest["shards"]]
        self.ids = self._open_ids()
        self._labels: pd.DataFrame | None = None
        # Set by a build: what this run embedded, reused and rebuilt; None for a store opened as it is.
        self.build_report: BuildReport | None = None

    @classmethod
    def from_array(cls, embeddings: ArrayLike, directory: str | Path, shard_rows: int = 65536,
                   ids: ArrayLike | None = None, labels: pd.DataFrame | None = None,
                   encoder: str | None = None, dtype: str = "float16", overwrite: bool = False) -> "GalleryStore":
        """Write ``embeddings`` as a store in ``directory`` and open it.

        Parameters
        ----------
        embeddings : array-like, shape (G, d)
            Numpy or torch; rows are unit-normalised here.
        directory : str or Path
            The store's folder.
        shard_rows : int
            Rows per shard (the last one shorter).
        ids : array-like of int, shape (G,), optional
            Distinct external ids (default ``0 .. G-1``).
        labels : DataFrame of G rows, optional
            Kept as CSV (so column dtypes come back as pandas infers them).
        encoder : str, optional
            The name of the model that made the embeddings.
        dtype : {"float16", "float32"}
            How the shards hold the rows.
        overwrite : bool
            A folder that holds anything but the leftovers of an unfinished write is refused
            unless this is set, and so is one another writer holds (see
            :class:`~anchordiv.store.StoreWriter`).

        Returns
        -------
        GalleryStore
        """
        directory = Path(directory).expanduser()
        write_array_store(embeddings, directory, shard_rows, ids, labels, encoder, dtype, overwrite)
        return cls.open(directory)

    @property
    def source(self) -> str | None:
        """Where a built store's items came from (its image folder, as given to the build), or ``None``."""
        return self._manifest.get("source")

    @property
    def skipped(self) -> list[tuple[str, str]]:
        """``(item, reason)`` for every item of a built store's plan that is not in it (empty otherwise)."""
        return [(str(item), str(reason)) for item, reason in self._manifest.get("skipped", [])]

    @classmethod
    def open(cls, directory: str | Path, verify: bool = False) -> "GalleryStore":
        """The store in ``directory``, after checking its manifest and every file's presence and
        header (cheap); ``verify=True`` also checks every file's sha256 (reads all bytes)."""
        directory = Path(directory).expanduser()
        store = cls(directory, read_manifest(directory))
        if verify:
            bad = store.verify()
            if bad:
                raise ValueError(f"store {directory}: {', '.join(bad)} do(es) not match the sha256 in {MANIFEST} "
                                 f"(damaged or changed); {store._fix()}.")
        return store

    def _fix(self) -> str:
        # A built store keeps its plan, so running the same build again re-embeds only what is damaged.
        return ("run the same build again (build_store / embed_folder_to_store): it re-embeds the damaged shards"
                if "plan" in self._manifest else REBUILD)

    def verify(self) -> list[str]:
        """The names of the store's files whose sha256 differs from the manifest's (empty: all good)."""
        return self._damaged(file_entries(self._manifest))

    def check_shards(self, numbers: Sequence[int]) -> None:
        """Recompute the sha256 of shards ``numbers`` (what a scan is about to read); ``ValueError``
        naming the damaged ones and the fix, so that a changed shard is never searched silently."""
        bad = self._damaged([self._manifest["shards"][number] for number in numbers])
        if bad:
            raise ValueError(f"store {self.directory}: {', '.join(bad)} do(es) not match the sha256 in {MANIFEST} "
                             f"(damaged or changed since the store was written); {self._fix()}.")

    def _damaged(self, entries: list[dict[str, Any]]) -> list[str]:
        """The files of manifest ``entries`` whose sha256 is not the recorded one."""
        return [entry["file"] for entry in entries if sha256_file(self._paths[entry["file"]]) != entry["sha256"]]

    def shard_fingerprints(self, numbers: Sequence[int]) -> dict[int, ShardFingerprint]:
        """Shard number -> its :class:`~anchordiv.store.ShardFingerprint` now, for :meth:`check_unchanged`
        to compare with later (what an index records when it computes its per-row terms). Waits, at
        most a tick of the file clock, until the shards' last change is older than that tick, so
        every later write shows."""
        settle([self.shards[number].filename for number in numbers])
        fingerprints = {}
        for number in numbers:
            try:
                fingerprints[number] = self._fingerprint(number)
            except OSError as error:
                raise ValueError(f"store {self.directory}: {self._manifest['shards'][number]['file']} cannot be "
                                 f"read ({error.strerror or error}); reopen the store (GalleryStore.open).") from error
        return fingerprints

    def check_unchanged(self, fingerprints: dict[int, ShardFingerprint]) -> None:
        """``ValueError`` naming the first shard whose file is no longer the one ``fingerprints``
        (:meth:`shard_fingerprints`) describe, and the fix. Cheap: one ``fstat`` and a header read per shard."""
        for number, recorded in fingerprints.items():
            try:
                change = recorded.change_to(self._fingerprint(number))
            except OSError as error:
                change = f"it cannot be read now: {error.strerror or error}"
            if change:
                raise ValueError(f"store {self.directory}: {self._manifest['shards'][number]['file']} changed on "
                                 f"disk since the index over it was built ({change}), so its terms no longer match "
                                 "its rows and it is not searched; reopen the store (GalleryStore.open) and build "
                                 "the index again.")

    def _fingerprint(self, number: int) -> ShardFingerprint:
        shard = self.shards[number]
        return ShardFingerprint.of(shard.filename, shard.offset)

    def __len__(self) -> int:
        return int(self._manifest["rows"])

    @property
    def labels(self) -> pd.DataFrame | None:
        """The labels DataFrame (``G`` rows), read on first use; ``None`` when none were stored."""
        if self._labels is None and self._manifest["labels"] is not None:
            path = self._paths[self._manifest["labels"]["file"]]
            labels = pd.read_csv(path)
            if len(labels) != len(self):
                raise ValueError(f"{path} has {len(labels)} rows but the store has {len(self)}; rebuild the store.")
            self._labels = labels
        return self._labels

    def iter_blocks(self, rows: int = 65536) -> Iterator[tuple[int, torch.Tensor]]:
        """``(start, block)`` pairs covering the store in order: ``block`` a float32 CPU tensor
        ``(n, d)`` of at most ``rows`` rows starting at global row ``start``. Blocks never span two
        shards, so only one block is converted at a time."""
        for number in range(len(self.shards)):
            yield from self.shard_blocks(number, rows)

    def shard_blocks(self, number: int, rows: int = 65536) -> Iterator[tuple[int, torch.Tensor]]:
        """As :meth:`iter_blocks`, for shard ``number`` only (the unit of work of a sharded search)."""
        rows = check_positive_int(rows, "rows")
        shard, shard_start = self.shards[number], self.shard_starts[number]
        width = shard.shape[1]
        # Read from the file, not through the memory map: pages read through a map count in the
        # process's resident memory until the kernel reclaims them, so a scan of a 1 GB store
        # would hold about 1 GB; a read leaves them in the page cache only.
        with open(shard.filename, "rb") as handle:
            for offset in range(0, shard.shape[0], rows):
                count = min(rows, shard.shape[0] - offset)
                handle.seek(shard.offset + offset * width * shard.dtype.itemsize)
                block = np.fromfile(handle, dtype=shard.dtype, count=count * width).reshape(count, width)
                yield shard_start + offset, torch.from_numpy(block.astype(np.float32))

    def scan_blocks(self, number: int, rows: int = 65536) -> Iterator[tuple[int, torch.Tensor]]:
        """As :meth:`shard_blocks`, for a scan that is done with each block before it asks for the
        next: every block is a view of one float32 buffer, refilled in place for the next, and the
        file is read into one buffer of the store's dtype. A fresh array per block costs the
        kernel's page faults, several times the float16 -> float32 conversion itself (1.1 GB/s of
        float16 read against 8.9 GB/s into a kept buffer, measured on the 2-core CPU of
        docs/benchmarks.md)."""
        rows = check_positive_int(rows, "rows")
        shard, shard_start = self.shards[number], self.shard_starts[number]
        count, width = min(rows, shard.shape[0]), shard.shape[1]
        raw = np.empty((count, width), dtype=shard.dtype)
        converted = torch.empty((count, width), dtype=torch.float32)
        with open(shard.filename, "rb") as handle:
            handle.seek(shard.offset)
            for offset in range(0, shard.shape[0], rows):
                read = raw[:min(rows, shard.shape[0] - offset)]
                if handle.readinto(memoryview(read).cast("B")) != read.nbytes:
                    raise ValueError(f"{shard.filename} ends before its {shard.shape[0]:,} rows; {REBUILD}.")
                block = converted[:read.shape[0]]
                block.copy_(torch.from_numpy(read))
                yield shard_start + offset, block

    def rows(self, positions: ArrayLike) -> torch.Tensor:
        """The rows at gallery ``positions`` ``(n,)`` (0 .. G-1, what an index returns) as a float32
        tensor ``(n, d)``; reads only those rows."""
        wanted = as_numeric_tensor(positions, "positions", embeddings=False).reshape(-1)
        if wanted.is_floating_point():
            raise ValueError(f"positions must be integers from 0 to {len(self) - 1}; got dtype {wanted.dtype}.")
        wanted = wanted.long().numpy()
        if wanted.size and (wanted.min() < 0 or wanted.max() >= len(self)):
            raise ValueError(f"positions must lie in 0..{len(self) - 1}; got min {wanted.min()}, max {wanted.max()}.")
        shard_of = np.searchsorted(self.shard_starts, wanted, side="right") - 1
        result = np.empty((wanted.size, self.dim), dtype=np.float32)
        for number in np.unique(shard_of):
            picked = np.flatnonzero(shard_of == number)
            result[picked] = self._read_rows(number, wanted[picked] - self.shard_starts[number])
        return torch.from_numpy(result)

    def _read_rows(self, number: int, local: np.ndarray) -> np.ndarray:
        """Rows ``local`` ``(n,)`` of shard ``number``, read one by one from the file: indexing the
        memory map instead faults in each row's page and the kernel's read-ahead around it, so a
        sample of 20,000 rows left most of a 1 GB store resident."""
        shard = self.shards[number]
        row_bytes = shard.shape[1] * shard.dtype.itemsize
        out = np.empty((local.size, shard.shape[1]), dtype=shard.dtype)
        with open(shard.filename, "rb") as handle:
            for index, row in enumerate(local):
                handle.seek(shard.offset + int(row) * row_bytes)
                out[index] = np.frombuffer(handle.read(row_bytes), dtype=shard.dtype)
        return out

    def _open_shard(self, entry: dict[str, Any]) -> np.ndarray:
        path = self._paths[entry["file"]]
        array = load_header_checked(path, REBUILD)
        if array.shape != (entry["rows"], self.dim) or array.dtype != np.dtype(self.dtype):
            raise ValueError(f"{path} holds {array.dtype} {array.shape} but {MANIFEST} records {self.dtype} "
                             f"({entry['rows']}, {self.dim}); {REBUILD}.")
        return array

    def _open_ids(self) -> np.ndarray:
        path = self._paths[self._manifest["ids"]["file"]]
        ids = load_header_checked(path, REBUILD)
        if ids.shape != (len(self),) or ids.dtype != np.int64:
            raise ValueError(f"{path} holds {ids.dtype} {ids.shape}, not int64 ({len(self)},); rebuild the store.")
        return ids
