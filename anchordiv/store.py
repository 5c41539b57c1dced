"""A gallery of embeddings on disk: memory-mapped ``.npy`` shards plus a manifest.

Layout of a store folder::

    manifest.json          format version, dim, dtype, rows, encoder, per-file sha256 (written last)
    shard-00000.npy ...    (rows_s, d) float16 (default) or float32, unit-norm rows
    ids.npy                (G,) int64 external ids of the rows (default 0 .. G-1)
    labels.csv             optional, G rows (a pandas DataFrame written with to_csv)

Rows are unit-normalised when written, so a reader never has to normalise them again (an anchor
model renormalises anyway, which also absorbs float16 rounding of the norm). Every file is
written through a temporary file and a rename, and the manifest goes last: a write killed midway
leaves no manifest, so no valid-looking store. ``open`` checks what is cheap (the manifest, each
file's presence, each shard's ``.npy`` header); ``verify`` hashes every byte. Reading never loads
the whole store: ``shards`` are read-only memory maps, ``iter_blocks`` converts one block at a
time to float32.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pandas as pd
import torch

from ._validation import ArrayLike, as_matrix, as_numeric_tensor, check_positive_int, unit_rows
from .cache import atomic_write, sha256_file

FORMAT = "anchordiv-gallery-store"
VERSION = 1
MANIFEST = "manifest.json"
IDS_FILE = "ids.npy"
LABELS_FILE = "labels.csv"
DTYPES = ("float16", "float32")
# The files a store writes (temporary ones included): only these may be cleared by a rewrite.
_OWN_FILE = re.compile(r"^(shard-\d+\.npy|ids\.npy|labels\.csv|manifest\.json|\..+\.tmp)$")


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
        """Use :meth:`open`; this only checks the manifest against the files' headers."""
        self.directory = directory
        self._manifest = manifest
        self.dim = int(manifest["dim"])
        self.dtype = str(manifest["dtype"])
        self.encoder = manifest["encoder"]
        self.shard_starts = [int(entry["start"]) for entry in manifest["shards"]]
        self.shards = [self._open_shard(entry) for entry in manifest["shards"]]
        self.ids = self._open_ids()
        self._labels: pd.DataFrame | None = None

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
        unfinished write is refused unless ``overwrite=True``.
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
        _prepare_folder(directory, overwrite)
        shards = []
        for number, (start, stop) in enumerate(bounds):
            rows = _unit_shard(tensor, start, stop).numpy().astype(dtype)
            path = directory / _shard_name(number)
            atomic_write(path, lambda handle, rows=rows: np.save(handle, rows))
            shards.append({"file": path.name, "rows": stop - start, "start": start, "sha256": sha256_file(path)})
        atomic_write(directory / IDS_FILE, lambda handle: np.save(handle, id_array))
        manifest: dict[str, Any] = {
            "format": FORMAT, "version": VERSION, "dim": int(tensor.shape[1]), "dtype": dtype, "rows": n_rows,
            "normalised": True, "encoder": encoder, "shards": shards,
            "ids": {"file": IDS_FILE, "sha256": sha256_file(directory / IDS_FILE)}, "labels": None,
        }
        if labels is not None:
            atomic_write(directory / LABELS_FILE, lambda handle: handle.write(labels.to_csv(index=False).encode()))
            manifest["labels"] = {"file": LABELS_FILE, "sha256": sha256_file(directory / LABELS_FILE)}
        atomic_write(directory / MANIFEST, lambda handle: handle.write(json.dumps(manifest, indent=1).encode()))
        return cls.open(directory)

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
                                 "(damaged or changed); rebuild the store with GalleryStore.from_array.")
        return store

    def verify(self) -> list[str]:
        """The names of the store's files whose sha256 differs from the manifest's (empty: all good)."""
        entries = list(self._manifest["shards"]) + [self._manifest["ids"]]
        if self._manifest["labels"] is not None:
            entries.append(self._manifest["labels"])
        return [entry["file"] for entry in entries if sha256_file(self.directory / entry["file"]) != entry["sha256"]]

    def __len__(self) -> int:
        return int(self._manifest["rows"])

    @property
    def labels(self) -> pd.DataFrame | None:
        """The labels DataFrame (``G`` rows), read on first use; ``None`` when none were stored."""
        if self._labels is None and self._manifest["labels"] is not None:
            path = self.directory / self._manifest["labels"]["file"]
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
        for offset in range(0, shard.shape[0], rows):
            # A copy: the memory map is read-only, and torch wants a writable array.
            block = np.array(shard[offset:offset + rows], dtype=np.float32)
            yield shard_start + offset, torch.from_numpy(block)

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
            picked = shard_of == number
            result[picked] = self.shards[number][wanted[picked] - self.shard_starts[number]]
        return torch.from_numpy(result)

    def _open_shard(self, entry: dict[str, Any]) -> np.ndarray:
        path = self.directory / entry["file"]
        array = _load_header_checked(path, "rebuild the store with GalleryStore.from_array")
        if array.shape != (entry["rows"], self.dim) or array.dtype != np.dtype(self.dtype):
            raise ValueError(f"{path} holds {array.dtype} {array.shape} but {MANIFEST} records {self.dtype} "
                             f"({entry['rows']}, {self.dim}); rebuild the store with GalleryStore.from_array.")
        return array

    def _open_ids(self) -> np.ndarray:
        path = self.directory / self._manifest["ids"]["file"]
        ids = _load_header_checked(path, "rebuild the store with GalleryStore.from_array")
        if ids.shape != (len(self),) or ids.dtype != np.int64:
            raise ValueError(f"{path} holds {ids.dtype} {ids.shape}, not int64 ({len(self)},); rebuild the store.")
        return ids


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
    path = directory / MANIFEST
    fix = "rebuild the store with GalleryStore.from_array"
    if not path.is_file():
        raise ValueError(f"{directory} is not a gallery store: {MANIFEST} is missing (a write that did not "
                         f"finish leaves none); {fix}.")
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
    expected_start = 0
    for entry in manifest["shards"]:
        if (int(entry["start"]) != expected_start or int(entry["rows"]) < 1 or not _OWN_FILE.match(entry["file"])
                or not isinstance(entry["sha256"], str)):
            raise ValueError(f"shard entry {entry!r} is malformed or does not continue at row {expected_start}")
        expected_start += int(entry["rows"])
    if expected_start != manifest["rows"] or expected_start == 0:
        raise ValueError(f"the shards hold {expected_start} rows but rows is {manifest['rows']!r}")
    for key in ("ids", "labels"):
        entry = manifest[key]
        if entry is not None and (not _OWN_FILE.match(entry["file"]) or not isinstance(entry["sha256"], str)):
            raise ValueError(f"{key} entry {entry!r} is malformed")
    if manifest["ids"] is None:
        raise ValueError("ids entry is missing")


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
    manifest vouching for a mix of old and new shards."""
    if directory.exists() and not directory.is_dir():
        raise ValueError(f"{directory} is a file, not a folder; choose a folder for the store.")
    present = list(directory.iterdir()) if directory.is_dir() else []
    foreign = [path.name for path in present if not _OWN_FILE.match(path.name) or path.is_dir()]
    if not overwrite and ((directory / MANIFEST).exists() or foreign):
        what = "a gallery store" if (directory / MANIFEST).exists() else f"other files ({', '.join(sorted(foreign)[:3])})"
        raise ValueError(f"{directory} already holds {what}; pass overwrite=True to replace it, or choose an "
                         "empty folder.")
    (directory / MANIFEST).unlink(missing_ok=True)
    for path in present:
        if path.name != MANIFEST and _OWN_FILE.match(path.name) and path.is_file():
            path.unlink()
    directory.mkdir(parents=True, exist_ok=True)
