"""A gallery of embeddings on disk: memory-mapped ``.npy`` shards plus a manifest.

Layout of a store folder::

    manifest.json          format version, dim, dtype, rows, encoder, per-file sha256 (written last)
    shard-00000.npy ...    (rows_s, d) float16 (default) or float32, unit-norm rows
    ids.npy                (G,) int64 external ids of the rows (default 0 .. G-1)
    labels.csv             optional, G rows (a pandas DataFrame written with to_csv)
    plan.json              only in a store made by ``build``: the fixed list of items and settings
    shard-00000.json ...   only in a store made by ``build``: the record of a finished shard (its sha256,
                           the items it skipped and why), written after the shard

A store made by :meth:`GalleryStore.build` (e.g. a folder of images embedded by
:func:`anchordiv.embeddings.embed_folder_to_store`) is resumable: see :class:`StoreWriter`.

Rows are unit-normalised when written, so a reader never has to normalise them again (an anchor
model renormalises anyway, which also absorbs float16 rounding of the norm). Every file is
written through a temporary file and a rename, and the manifest goes last: a write killed midway
leaves no manifest, so no valid-looking store. ``open`` checks what is cheap (the manifest, each
file's presence, each shard's ``.npy`` header); ``verify`` hashes every byte. Reading never loads
the whole store: ``shards`` are read-only memory maps, ``iter_blocks`` converts one block at a
time to float32.

Three rules keep a store honest when its folder is not trusted or not quiet:

* every file a store uses lies inside its folder once symlinks are followed (``open`` refuses a
  link out, and a manifest naming ``..`` or an absolute path), so a hostile folder cannot make a
  store serve another file's bytes;
* one writer at a time: a writer holds an exclusive lock on ``writer.lock`` in the folder for its
  life, and a second one is refused before it touches anything;
* what keeps per-row terms of a store (an index) records each shard's :class:`ShardFingerprint`
  and calls :meth:`GalleryStore.check_unchanged` before it reads the shard again, so a shard
  changed on disk is refused by name instead of being scanned with stale terms.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple, Sequence

import numpy as np
import pandas as pd
import torch

from ._validation import ArrayLike, as_matrix, as_numeric_tensor, check_positive_int, unit_rows
from .cache import atomic_write, sha256_file
from .images import display_name

try:  # POSIX only; without it two writers on one folder are not kept apart
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

FORMAT = "anchordiv-gallery-store"
VERSION = 1
MANIFEST = "manifest.json"
IDS_FILE = "ids.npy"
LABELS_FILE = "labels.csv"
DTYPES = ("float16", "float32")
PLAN_FILE = "plan.json"
PLAN_FORMAT = "anchordiv-store-plan"
LOCK_FILE = "writer.lock"
# The files a manifest may name.
_STORE_FILE = re.compile(r"^(shard-\d+\.npy|ids\.npy|labels\.csv)$")
# The files a store or its resumable build writes (temporary ones included): only these may be
# cleared by a rewrite (all but the lock file, which keeps writers apart). ``shard-NNNNN.json``
# records a finished shard of a build (see StoreWriter).
_OWN_FILE = re.compile(r"^(shard-\d+\.npy|shard-\d+\.json|plan\.json|ids\.npy|labels\.csv|manifest\.json"
                       r"|writer\.lock|\..+\.tmp)$")
_TEMPORARY = re.compile(r"^\..+\.tmp$")
# A file's times come from a clock that advances once per kernel tick (1 to 10 ms on Linux), so a
# write within the tick of the previous one leaves them unchanged. Fingerprints are taken only once
# a shard's last change is older than this, so that every later write shows in them.
_FILE_CLOCK_TICK_NS = 20_000_000
_OVERWRITE = "pass overwrite=True (--overwrite on the command line)"


def _shard_name(number: int) -> str:
    return f"shard-{number:05d}.npy"


class GalleryStore:
    """A read-only gallery of ``G`` unit-norm embeddings of dimension ``d`` in memory-mapped shards.

    Build one with :meth:`from_array`, read one with :meth:`open`. ``len(store)`` is ``G``;
    ``dim``, ``dtype`` (``"float16"`` or ``"float32"``), ``encoder`` (a name or ``None``),
    ``shards`` (read-only ``np.memmap`` ``(rows_s, d)`` each), ``shard_starts`` (the first row of
    each), ``ids`` ``(G,)`` int64, ``labels`` (a DataFrame of ``G`` rows, or ``None``).
    """

    def __init__(self, directory: Path, manifest: dict[str, Any]):
        """Use :meth:`open`; this only checks the manifest against the files' headers, and that every
        file it names lies inside ``directory`` once symlinks are followed."""
        self.directory = directory
        self._manifest = manifest
        # Resolved once: every read goes to these paths, so a link swapped in later is never followed.
        self._paths = {entry["file"]: _confined(directory, entry["file"]) for entry in _entries(manifest)}
        self.dim = int(manifest["dim"])
        self.dtype = str(manifest["dtype"])
        self.encoder = manifest["encoder"]
        self.shard_starts = [int(entry["start"]) for entry in manifest["shards"]]
        self.shards = [self._open_shard(entry) for entry in manifest["shards"]]
        self.ids = self._open_ids()
        self._labels: pd.DataFrame | None = None
        # Set by build: what this run embedded, reused and rebuilt; None for a store opened as it is.
        self.build_report: BuildReport | None = None

    # -- writing -----------------------------------------------------------------------------
    @classmethod
    def from_array(cls, embeddings: ArrayLike, directory: str | Path, shard_rows: int = 65536,
                   ids: ArrayLike | None = None, labels: pd.DataFrame | None = None,
                   encoder: str | None = None, dtype: str = "float16", overwrite: bool = False) -> "GalleryStore":
        """Write ``embeddings`` ``(G, d)`` (numpy or torch; rows unit-normalised here) as a store in
        ``directory``, ``shard_rows`` rows per shard (the last one shorter), and open it.

        ``ids`` ``(G,)`` distinct integers (default ``0 .. G-1``); ``labels`` a DataFrame of ``G``
        rows, kept as CSV (so column dtypes come back as pandas infers them); ``encoder`` the name
        of the model that made the embeddings. A folder that holds anything but the leftovers of an
        unfinished write is refused unless ``overwrite=True``, and so is one another writer holds
        (see :class:`StoreWriter`).
        """
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}; got {dtype!r}.")
        shard_rows = check_positive_int(shard_rows, "shard_rows")
        tensor = as_numeric_tensor(embeddings, "embeddings")
        if tensor.ndim != 2 or tensor.shape[0] == 0 or tensor.shape[1] == 0:
            raise ValueError(f"embeddings must be a non-empty 2-D array of shape (G, d); got shape "
                             f"{tuple(tensor.shape)}.")
        n_rows = tensor.shape[0]
        id_array = _checked_ids(ids, n_rows)
        if labels is not None and (not isinstance(labels, pd.DataFrame) or len(labels) != n_rows):
            raise ValueError(f"labels must be a pandas DataFrame with one row per embedding ({n_rows}); got "
                             f"{type(labels).__name__}{f' of {len(labels)} rows' if hasattr(labels, '__len__') else ''}.")
        if encoder is not None and not isinstance(encoder, str):
            raise ValueError(f"encoder must be the encoder's name (a string) or None; got {encoder!r}.")
        bounds = [(start, min(start + shard_rows, n_rows)) for start in range(0, n_rows, shard_rows)]
        # Validate every row before writing anything, so bad input leaves the folder untouched.
        for start, stop in bounds:
            _unit_shard(tensor, start, stop)
        directory = Path(directory).expanduser()
        with _WriterLock(directory):
            cls._write_array(tensor, directory, bounds, id_array, labels, encoder, dtype, overwrite)
        return cls.open(directory)

    @staticmethod
    def _write_array(tensor: torch.Tensor, directory: Path, bounds: list[tuple[int, int]], id_array: np.ndarray,
                     labels: pd.DataFrame | None, encoder: str | None, dtype: str, overwrite: bool) -> None:
        """:meth:`from_array`'s writes, under its lock: the shards, ids and labels, the manifest last."""
        _prepare_folder(directory, overwrite)
        shards = []
        for number, (start, stop) in enumerate(bounds):
            rows = _unit_shard(tensor, start, stop).numpy().astype(dtype)
            path = directory / _shard_name(number)
            atomic_write(path, lambda handle, rows=rows: np.save(handle, rows))
            shards.append({"file": path.name, "rows": stop - start, "start": start, "sha256": sha256_file(path)})
        atomic_write(directory / IDS_FILE, lambda handle: np.save(handle, id_array))
        manifest: dict[str, Any] = {
            "format": FORMAT, "version": VERSION, "dim": int(tensor.shape[1]), "dtype": dtype, "rows": len(id_array),
            "normalised": True, "encoder": encoder, "shards": shards,
            "ids": {"file": IDS_FILE, "sha256": sha256_file(directory / IDS_FILE)}, "labels": None,
        }
        if labels is not None:
            atomic_write(directory / LABELS_FILE, lambda handle: handle.write(labels.to_csv(index=False).encode()))
            manifest["labels"] = {"file": LABELS_FILE, "sha256": sha256_file(directory / LABELS_FILE)}
        atomic_write(directory / MANIFEST, lambda handle: handle.write(json.dumps(manifest, indent=1).encode()))

    @classmethod
    def build(cls, directory: str | Path, plan: "StorePlan",
              embed_shard: Callable[[list[str]], tuple[ArrayLike, list[tuple[int, str]]]],
              labels: Callable[[list[str]], pd.DataFrame] | None = None,
              progress: Callable[[float, str], None] | None = None, overwrite: bool = False) -> "GalleryStore":
        """Build (or resume building) the store of ``plan`` in ``directory``, one shard at a time, and open it.

        ``embed_shard(keys)`` embeds the items of one shard and returns ``(vectors, skipped)``:
        ``vectors`` ``(n, d)`` for the items it kept, in order, and ``skipped`` ``(index in keys,
        reason)`` for the others. ``labels(kept keys)`` gives the labels DataFrame (one row per
        kept item), or ``None`` for no labels. ``progress(fraction, text)`` is told after each shard.

        This is the local engine: shards are embedded in order in this process. Finished shards of
        an earlier run of the same plan are verified (sha256) and kept; damaged ones are named in
        ``progress`` and ``store.build_report.rebuilt`` and embedded again. See :class:`StoreWriter`.
        """
        with StoreWriter(directory, plan, overwrite=overwrite, progress=progress) as writer:
            for number in writer.pending_shards():
                writer.write_shard(number, *embed_shard(plan.shard_keys(number)))
            return writer.finish(labels)

    @property
    def source(self) -> str | None:
        """Where a built store's items came from (its image folder, as given to the build), or ``None``."""
        return self._manifest.get("source")

    @property
    def skipped(self) -> list[tuple[str, str]]:
        """``(item, reason)`` for every item of a built store's plan that is not in it (empty otherwise)."""
        return [(str(item), str(reason)) for item, reason in self._manifest.get("skipped", [])]

    # -- reading -----------------------------------------------------------------------------
    @classmethod
    def open(cls, directory: str | Path, verify: bool = False) -> "GalleryStore":
        """The store in ``directory``, after checking its manifest and every file's presence and
        header (cheap); ``verify=True`` also checks every file's sha256 (reads all bytes)."""
        directory = Path(directory).expanduser()
        store = cls(directory, _read_manifest(directory))
        if verify:
            bad = store.verify()
            if bad:
                raise ValueError(f"store {directory}: {', '.join(bad)} do(es) not match the sha256 in {MANIFEST} "
                                 f"(damaged or changed); {store._fix()}.")
        return store

    def _fix(self) -> str:
        # A built store keeps its plan, so running the same build again re-embeds only what is damaged.
        return ("run the same build again (GalleryStore.build / embed_folder_to_store): it re-embeds the damaged "
                "shards" if "plan" in self._manifest else "rebuild the store with GalleryStore.from_array")

    def verify(self) -> list[str]:
        """The names of the store's files whose sha256 differs from the manifest's (empty: all good)."""
        return self._damaged(_entries(self._manifest))

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

    def shard_fingerprints(self, numbers: Sequence[int]) -> dict[int, "ShardFingerprint"]:
        """Shard number -> its :class:`ShardFingerprint` now, for :meth:`check_unchanged` to compare with
        later (what an index records when it computes its per-row terms). Waits, at most a tick of the
        file clock, until the shards' last change is older than that tick, so every later write shows."""
        _settle([self.shards[number].filename for number in numbers])
        fingerprints = {}
        for number in numbers:
            try:
                fingerprints[number] = self._fingerprint(number)
            except OSError as error:
                raise ValueError(f"store {self.directory}: {self._manifest['shards'][number]['file']} cannot be "
                                 f"read ({error.strerror or error}); reopen the store (GalleryStore.open).") from error
        return fingerprints

    def check_unchanged(self, fingerprints: dict[int, "ShardFingerprint"]) -> None:
        """``ValueError`` naming the first shard whose file is no longer the one ``fingerprints``
        (:meth:`shard_fingerprints`) describe, and the fix. Cheap: one ``fstat`` and a header read per shard."""
        for number, recorded in fingerprints.items():
            try:
                change = _change(recorded, self._fingerprint(number))
            except OSError as error:
                change = f"it cannot be read now: {error.strerror or error}"
            if change:
                raise ValueError(f"store {self.directory}: {self._manifest['shards'][number]['file']} changed on "
                                 f"disk since the index over it was built ({change}), so its terms no longer match "
                                 "its rows and it is not searched; reopen the store (GalleryStore.open) and build "
                                 "the index again.")

    def _fingerprint(self, number: int) -> "ShardFingerprint":
        shard = self.shards[number]
        # The header and the times of one open file; plain descriptors, since a slider move checks every shard.
        descriptor = os.open(shard.filename, os.O_RDONLY)
        try:
            info = os.fstat(descriptor)
            return ShardFingerprint(info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns,
                                    os.read(descriptor, shard.offset))
        finally:
            os.close(descriptor)

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
        array = _load_header_checked(path, "rebuild the store with GalleryStore.from_array")
        if array.shape != (entry["rows"], self.dim) or array.dtype != np.dtype(self.dtype):
            raise ValueError(f"{path} holds {array.dtype} {array.shape} but {MANIFEST} records {self.dtype} "
                             f"({entry['rows']}, {self.dim}); rebuild the store with GalleryStore.from_array.")
        return array

    def _open_ids(self) -> np.ndarray:
        path = self._paths[self._manifest["ids"]["file"]]
        ids = _load_header_checked(path, "rebuild the store with GalleryStore.from_array")
        if ids.shape != (len(self),) or ids.dtype != np.int64:
            raise ValueError(f"{path} holds {ids.dtype} {ids.shape}, not int64 ({len(self)},); rebuild the store.")
        return ids


class ShardFingerprint(NamedTuple):
    """What a shard file is, cheaply: ``os.stat``'s inode, size, modification and change times (ns;
    the change time also moves when the modification time is set back by hand) and the ``.npy``
    header's bytes. Equal fingerprints mean the same file, unwritten since (see :func:`_settle`)."""

    inode: int
    size: int
    modified_ns: int
    changed_ns: int
    header: bytes


def _change(old: ShardFingerprint, new: ShardFingerprint) -> str:
    """What differs between two fingerprints of one shard, in words; ``""`` when nothing does."""
    if new.inode != old.inode:
        return "it was replaced by another file"
    if new.size != old.size:
        return f"its size went from {old.size} to {new.size} bytes"
    if new.header != old.header:
        return "its .npy header changed"
    if (new.modified_ns, new.changed_ns) != (old.modified_ns, old.changed_ns):
        return "it was written to or touched"
    return ""


def _settle(paths: Sequence[str]) -> None:
    """Return once the last change of every file in ``paths`` is a file-clock tick old (sleeping at
    most one tick), so that a write after a fingerprint is taken changes the fingerprint."""
    try:
        newest = max((max(info.st_mtime_ns, info.st_ctime_ns) for info in map(os.stat, paths)), default=0)
    except OSError:  # a missing file is named by the fingerprint that follows
        return
    wait = newest + _FILE_CLOCK_TICK_NS - time.time_ns()
    if wait > 0:
        time.sleep(min(wait, _FILE_CLOCK_TICK_NS) / 1e9)


def _entries(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """Every file entry of a manifest: the shards, the ids and the labels when there are any."""
    return [*manifest["shards"], manifest["ids"], *([manifest["labels"]] if manifest["labels"] is not None else [])]


def _confined(directory: Path, name: str) -> Path:
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


def _load_header_checked(path: Path, fix: str) -> np.ndarray:
    """``path`` memory-mapped read-only; a missing or truncated file is a ``ValueError`` naming it."""
    if not path.is_file():
        raise ValueError(f"{path} is missing from the store; {fix}.")
    try:
        return np.load(path, mmap_mode="r")
    except (OSError, ValueError) as error:  # numpy refuses a file shorter than its header says
        raise ValueError(f"{path} is damaged or truncated ({error}); {fix}.") from error


def _read_manifest(directory: Path) -> dict[str, Any]:
    """The manifest of the store in ``directory``, checked for the fields a reader relies on."""
    fix = "rebuild the store with GalleryStore.from_array"
    if not (directory / MANIFEST).is_file():
        raise ValueError(f"{directory} is not a gallery store: {MANIFEST} is missing (a write that did not "
                         f"finish leaves none); {fix}.")
    path = _confined(directory, MANIFEST)
    try:
        manifest = json.loads(path.read_text())
        _check_manifest(manifest)
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path} is not a valid store manifest ({error}); {fix}.") from error
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
    for entry in _entries(manifest):
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


def _unit_shard(tensor: torch.Tensor, start: int, stop: int) -> torch.Tensor:
    """Rows ``start:stop`` of ``tensor`` validated (finite, non-zero) and unit-normalised, float32/64 CPU."""
    name = f"embeddings rows {start}..{stop - 1}"
    return unit_rows(as_matrix(tensor[start:stop], name), name).cpu()


def _checked_ids(ids: ArrayLike | None, n_rows: int) -> np.ndarray:
    """``ids`` as distinct int64 ``(n_rows,)``; ``0 .. n_rows-1`` when ``None``."""
    if ids is None:
        return np.arange(n_rows, dtype=np.int64)
    array = as_numeric_tensor(ids, "ids", embeddings=False).cpu().numpy()
    if array.dtype.kind not in "iu" or array.shape != (n_rows,):
        raise ValueError(f"ids must be {n_rows} integers, one per embedding; got {array.dtype} of shape {array.shape}.")
    if len(np.unique(array)) != n_rows:
        raise ValueError("ids must be distinct; drop or renumber the repeated ones.")
    return array.astype(np.int64)


def _prepare_folder(directory: Path, overwrite: bool) -> None:
    """Make ``directory`` ready for a new store: created if absent; leftovers of a write that did not
    finish (store files, no manifest) are cleared; anything else is refused unless ``overwrite``.

    The old manifest is removed first, so a rewrite that fails midway never leaves the old
    manifest vouching for a mix of old and new shards. The caller holds the folder's
    :class:`_WriterLock`, whose file is kept."""
    present = list(directory.iterdir())
    foreign = [path.name for path in present if not _OWN_FILE.match(path.name) or path.is_dir()]
    if not overwrite and ((directory / MANIFEST).exists() or foreign):
        what = "a gallery store" if (directory / MANIFEST).exists() else f"other files ({', '.join(sorted(foreign)[:3])})"
        raise ValueError(f"{directory} already holds {what}; {_OVERWRITE} to replace it, or choose an empty folder.")
    (directory / MANIFEST).unlink(missing_ok=True)
    for path in present:
        if path.name not in (MANIFEST, LOCK_FILE) and _OWN_FILE.match(path.name) and path.is_file():
            path.unlink()


class _WriterLock:
    """An exclusive lock on a store folder (created if absent) for one writer's life: ``flock`` on its
    ``writer.lock``, never waited for. A second writer is refused at once, before it changes anything,
    with the holder's pid and host (written into the file by the holder). Released by :meth:`release`
    (or as a context manager), and by the system when the process ends, however it ends."""

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

    def __enter__(self) -> "_WriterLock":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


# -- resumable building ------------------------------------------------------------------------
@dataclass(frozen=True)
class StorePlan:
    """What a store built by :class:`StoreWriter` holds, fixed before any shard is embedded.

    ``items`` are ``(key, fingerprint)`` pairs in store order (e.g. a file's relative path and the
    sha256 of its content); shard ``s`` covers items ``s * shard_rows`` up to the next shard, so
    every run of the same plan agrees on which items go to which shard. An item that cannot be
    embedded is skipped with its reason; the kept rows get ids ``0 .. G-1`` in item order.
    ``skipped`` lists ``(name, reason)`` refused before planning (e.g. sockets in a folder);
    ``settings`` anything else the rows or labels depend on (JSON), e.g. the labels file's sha256.
    ``source`` where the items can be read again (an image folder, for thumbnails): recorded in the
    manifest but not part of :attr:`key`, so a moved folder does not void a build.
    """

    items: tuple[tuple[str, str], ...]
    dim: int
    encoder: str | None
    shard_rows: int = 4096
    dtype: str = "float16"
    skipped: tuple[tuple[str, str], ...] = ()
    settings: dict[str, Any] = field(default_factory=dict)
    source: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}; got {self.dtype!r}.")
        check_positive_int(self.shard_rows, "shard_rows")
        check_positive_int(self.dim, "dim")
        if not self.items:
            raise ValueError("the plan has no items, so the store would be empty; give at least one item "
                             "(for a folder: at least one image file).")
        keys = [key for key, _ in self.items]
        if len(set(keys)) != len(keys):
            raise ValueError("the plan's item keys must be distinct; drop the repeated ones.")

    @property
    def n_shards(self) -> int:
        return -(-len(self.items) // self.shard_rows)

    def shard_keys(self, number: int) -> list[str]:
        """The keys of the items of shard ``number``, in order."""
        return [key for key, _ in self.items[number * self.shard_rows:(number + 1) * self.shard_rows]]

    def to_json(self) -> dict[str, Any]:
        return {"format": PLAN_FORMAT, "version": VERSION, "dim": self.dim, "encoder": self.encoder,
                "shard_rows": self.shard_rows, "dtype": self.dtype, "settings": self.settings,
                "skipped": [list(entry) for entry in self.skipped], "items": [list(item) for item in self.items]}

    @property
    def key(self) -> str:
        """sha256 of everything in the plan: two runs may share a folder only when their keys are equal."""
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()

    def difference(self, other: "StorePlan") -> str:
        """The first thing that differs from ``other``, in words (for refusal messages)."""
        for name in ("encoder", "dim", "dtype", "shard_rows", "settings", "skipped"):
            if getattr(self, name) != getattr(other, name):
                return f"{name} {getattr(other, name)!r} there, {getattr(self, name)!r} now"
        mine, theirs = dict(self.items), dict(other.items)
        kinds = {"new": [key for key in mine if key not in theirs], "gone": [key for key in theirs if key not in mine],
                 "changed": [key for key in mine if key in theirs and mine[key] != theirs[key]]}
        words = [f"{len(keys)} item(s) {kind} (first: {display_name(keys[0])!r})"
                 for kind, keys in kinds.items() if keys]
        return ", ".join(words) or "the items are in another order"


@dataclass
class BuildReport:
    """What one :meth:`GalleryStore.build` call did: shard numbers it embedded, how many finished
    shards of an earlier run it reused, and the files of the damaged ones it embedded again."""

    embedded: list[int]
    reused: int
    rebuilt: list[str]


class StoreWriter:
    """Writes the store of a :class:`StorePlan` shard by shard, so that a killed build loses nothing.

    Order of writes: ``plan.json`` first; then for each shard its ``.npy`` and, after it, its
    record ``shard-NNNNN.json`` (the plan's key, the rows, the sha256, the skipped items); the
    ids, labels and manifest last, once every shard has a record. Each write is atomic, so a kill
    leaves finished shards (with records) and at most one shard without a record, which is redone.
    A new writer on the same folder and plan verifies every recorded shard (sha256): good ones are
    kept, damaged or missing ones are listed in ``damaged`` and pending again (a finished store's
    manifest is removed first, so it never vouches for a shard being rebuilt). A folder holding
    another plan's store or build, or anything else, is refused unless ``overwrite=True``.

    Shards are independent files, so several workers may call :meth:`write_shard` for different
    shards at once (a distributed engine); :meth:`finish` runs once, after all of them. Whatever
    the engine, ``progress(fraction, text)`` hears of each damaged shard found and each shard this
    writer writes, and the store :meth:`finish` opens carries the :class:`BuildReport`.

    A writer holds the folder's lock (``writer.lock``) from its creation until :meth:`finish` or
    :meth:`close` (use it as a context manager): a second writer on the folder, in this process or
    another, is refused at once with the holder's pid and changes nothing.
    """

    def __init__(self, directory: str | Path, plan: StorePlan, overwrite: bool = False,
                 progress: Callable[[float, str], None] | None = None):
        self.directory = Path(directory).expanduser()
        self.plan = plan
        self.damaged: list[str] = []
        self._key = plan.key
        self._say = progress or (lambda fraction, text: None)
        self._pending: list[int] | None = None  # what pending_shards found: the build's report
        self._done = 0
        self._lock = _WriterLock(self.directory)
        try:
            self._start(overwrite)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Let the folder's lock go (the store stays as it is: finished, or resumable by a later writer)."""
        self._lock.release()

    def __enter__(self) -> "StoreWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _start(self, overwrite: bool) -> None:
        """Resume this plan's build, or clear the folder (as allowed) and write the plan."""
        try:
            existing = _read_plan(self.directory)
        except ValueError:
            if not overwrite:
                raise
            existing = None  # a damaged plan is replaced like any other
        if existing is not None and existing.key == self._key:
            _remove_temporaries(self.directory)  # a killed run's half-written files; nothing reads them
            return
        if existing is not None and not overwrite:
            raise ValueError(f"{self.directory} holds the store (or an unfinished build) of another plan "
                             f"({self.plan.difference(existing)}); {_OVERWRITE} to replace it, or choose "
                             "another folder.")
        _prepare_folder(self.directory, overwrite)
        atomic_write(self.directory / PLAN_FILE,
                     lambda handle: handle.write(json.dumps(self.plan.to_json()).encode()))

    def pending_shards(self) -> list[int]:
        """The shards without a good record, in order; damaged ones are added to ``damaged``."""
        pending = []
        for number in range(self.plan.n_shards):
            problem = self._record_problem(number)
            if problem is not None:
                pending.append(number)
                if problem:
                    self.damaged.append(problem)
        if pending:
            (self.directory / MANIFEST).unlink(missing_ok=True)
        for name in self.damaged:
            self._say(0.0, f"{name} is damaged or does not match its record; embedding it again")
        self._pending, self._done = pending, self.plan.n_shards - len(pending)
        return pending

    def write_shard(self, number: int, vectors: ArrayLike, skipped: Sequence[tuple[int, str]]) -> None:
        """Write shard ``number``: ``vectors`` ``(n, d)`` for its kept items in order (rows are
        unit-normalised here) and ``skipped`` ``(index in the shard, reason)`` for the others."""
        size = len(self.plan.shard_keys(number))
        skipped = sorted((int(index), str(reason)) for index, reason in skipped)
        indices = [index for index, _ in skipped]
        if len(set(indices)) != len(indices) or any(not 0 <= index < size for index in indices):
            raise ValueError(f"{_shard_name(number)}: skipped indices must be distinct and in 0..{size - 1}; "
                             f"got {indices}.")
        rows = size - len(skipped)
        path = self.directory / _shard_name(number)
        if rows:
            array = self._checked_rows(number, vectors, rows)
            atomic_write(path, lambda handle: np.save(handle, array))
            digest = sha256_file(path)
        else:  # every item was skipped: no shard file, and the manifest leaves the shard out
            path.unlink(missing_ok=True)
            digest = None
        record = {"plan": self._key, "shard": number, "rows": rows, "sha256": digest,
                  "skipped": [list(entry) for entry in skipped]}
        atomic_write(_record_path(self.directory, number), lambda handle: handle.write(json.dumps(record).encode()))
        self._done += 1
        self._say(self._done / self.plan.n_shards,
                  f"shard {number + 1} of {self.plan.n_shards} written ({_shard_name(number)})")

    def finish(self, labels: Callable[[list[str]], pd.DataFrame] | None = None) -> GalleryStore:
        """Write the ids, labels and manifest once every shard has a good record, let the folder's lock
        go, and open the store (with its ``build_report`` when :meth:`pending_shards` ran)."""
        records = [_read_json(_record_path(self.directory, number)) for number in range(self.plan.n_shards)]
        missing = [_shard_name(number) for number, record in enumerate(records)
                   if record is None or record.get("plan") != self._key]
        if missing:
            raise ValueError(f"{self.directory}: {', '.join(missing[:3])} not finished yet; write every shard "
                             "before finish (or rerun the build to finish it).")
        shards, kept, skipped, start = [], [], list(self.plan.skipped), 0
        for number, record in enumerate(records):
            keys = self.plan.shard_keys(number)
            reasons = {index: reason for index, reason in record["skipped"]}
            skipped += [(display_name(keys[index]), reason) for index, reason in sorted(reasons.items())]
            kept += [key for index, key in enumerate(keys) if index not in reasons]
            if record["rows"]:
                shards.append({"file": _shard_name(number), "rows": record["rows"], "start": start,
                               "sha256": record["sha256"]})
                start += record["rows"]
        if not kept:
            raise ValueError(f"none of the plan's {len(self.plan.items)} items could be embedded (first: "
                             f"{skipped[0][0]!r}: {skipped[0][1]}); the store would be empty.")
        ids = np.arange(len(kept), dtype=np.int64)
        atomic_write(self.directory / IDS_FILE, lambda handle: np.save(handle, ids))
        manifest: dict[str, Any] = {
            "format": FORMAT, "version": VERSION, "dim": self.plan.dim, "dtype": self.plan.dtype, "rows": len(kept),
            "normalised": True, "encoder": self.plan.encoder, "shards": shards,
            "ids": {"file": IDS_FILE, "sha256": sha256_file(self.directory / IDS_FILE)}, "labels": None,
            "plan": self._key, "skipped": [list(entry) for entry in sorted(skipped)], "source": self.plan.source,
        }
        frame = labels(kept) if labels is not None else None
        if frame is not None:
            if not isinstance(frame, pd.DataFrame) or len(frame) != len(kept):
                raise ValueError(f"labels must give a DataFrame of {len(kept)} rows (one per kept item); got "
                                 f"{type(frame).__name__}.")
            atomic_write(self.directory / LABELS_FILE, lambda handle: handle.write(frame.to_csv(index=False).encode()))
            manifest["labels"] = {"file": LABELS_FILE, "sha256": sha256_file(self.directory / LABELS_FILE)}
        atomic_write(self.directory / MANIFEST, lambda handle: handle.write(json.dumps(manifest, indent=1).encode()))
        self.close()
        store = GalleryStore.open(self.directory)
        if self._pending is not None:
            store.build_report = BuildReport(embedded=list(self._pending),
                                             reused=self.plan.n_shards - len(self._pending), rebuilt=list(self.damaged))
        return store

    def _record_problem(self, number: int) -> str | None:
        """``None`` when shard ``number`` is finished and intact; ``""`` when it was never finished;
        otherwise the name of the file that is damaged or missing (the shard is redone either way)."""
        record_path = _record_path(self.directory, number)
        if not record_path.exists():
            return ""
        record = _read_json(record_path)
        if record is None or record.get("plan") != self._key or record.get("shard") != number:
            return record_path.name
        path = self.directory / _shard_name(number)
        if record.get("rows") == 0:
            return None
        if path.is_symlink() or not path.is_file() or sha256_file(path) != record.get("sha256"):
            return path.name  # a link is redone too: the store's own file replaces it
        return None

    def _checked_rows(self, number: int, vectors: ArrayLike, rows: int) -> np.ndarray:
        """``vectors`` as ``(rows, dim)`` unit rows in the plan's dtype; ``ValueError`` naming the shard."""
        tensor = as_numeric_tensor(vectors, f"{_shard_name(number)} vectors")
        if tuple(tensor.shape) != (rows, self.plan.dim):
            raise ValueError(f"{_shard_name(number)}: got vectors of shape {tuple(tensor.shape)} for {rows} kept "
                             f"items of dimension {self.plan.dim}; return one row per item not skipped.")
        return _unit_shard(tensor, 0, rows).numpy().astype(self.plan.dtype)


def _record_path(directory: Path, number: int) -> Path:
    return directory / f"shard-{number:05d}.json"


def _read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``; ``None`` when it is missing or not a JSON object."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _read_plan(directory: Path) -> StorePlan | None:
    """The plan of the build in ``directory``; ``None`` when there is none. A plan file that cannot
    be read is a ``ValueError`` naming it (it is written atomically, so it was changed by hand)."""
    path = directory / PLAN_FILE
    if not path.exists():
        return None
    data = _read_json(path)
    try:
        if data is None or data.get("format") != PLAN_FORMAT or data.get("version") != VERSION:
            raise ValueError("not a version-1 store plan")
        return StorePlan(items=tuple((str(key), str(print_)) for key, print_ in data["items"]), dim=data["dim"],
                         encoder=data["encoder"], shard_rows=data["shard_rows"], dtype=data["dtype"],
                         skipped=tuple((str(name), str(reason)) for name, reason in data["skipped"]),
                         settings=data["settings"])
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path} is damaged ({error}); {_OVERWRITE} to build the store afresh, or "
                         "choose another folder.") from error


def _remove_temporaries(directory: Path) -> None:
    for path in directory.iterdir():
        if _TEMPORARY.match(path.name) and path.is_file():
            path.unlink(missing_ok=True)
