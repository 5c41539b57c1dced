"""Writing a store's folder: clearing it for a new store, each file atomically, the manifest last,
and a whole store from one array (what ``GalleryStore.from_array`` does).

Every file is written through a temporary file and a rename, and the manifest goes last: a write
killed midway leaves no manifest, so no valid-looking store. Rows are unit-normalised when
written, so a reader never has to normalise them again.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from .._validation import ArrayLike, as_matrix, as_numeric_tensor, check_positive_int, unit_rows
from ..cache import atomic_write, sha256_file
from .lock import WriterLock
from .manifest import DTYPES, FORMAT, IDS_FILE, LABELS_FILE, LOCK_FILE, MANIFEST, OVERWRITE, VERSION, shard_name

# The files a store or its resumable build writes (temporary ones included): only these may be
# cleared by a rewrite (all but the lock file, which keeps writers apart). ``shard-NNNNN.json``
# records a finished shard of a build (see StoreWriter).
_OWN_FILE = re.compile(r"^(shard-\d+\.npy|shard-\d+\.json|plan\.json|ids\.npy|labels\.csv|manifest\.json"
                       r"|writer\.lock|\..+\.tmp)$")
_TEMPORARY = re.compile(r"^\..+\.tmp$")


def write_array_store(embeddings: ArrayLike, directory: Path, shard_rows: int, ids: ArrayLike | None,
                      labels: pd.DataFrame | None, encoder: str | None, dtype: str, overwrite: bool) -> None:
    """Write ``embeddings`` as a store in ``directory``, under the folder's :class:`WriterLock`.

    Parameters
    ----------
    embeddings : array-like, shape (G, d)
        Numpy or torch; rows are unit-normalised here.
    directory : Path
        The store's folder (created if absent).
    shard_rows : int
        Rows per shard (the last one shorter).
    ids : array-like of int, shape (G,), optional
        Distinct external ids (default ``0 .. G-1``).
    labels : DataFrame of G rows, optional
        Kept as CSV.
    encoder : str, optional
        The name of the model that made the embeddings.
    dtype : {"float16", "float32"}
        How the shards hold the rows.
    overwrite : bool
        Whether a folder holding anything but the leftovers of an unfinished write may be cleared.

    Raises
    ------
    ValueError
        For bad input (before anything is written), a folder that is not free, or one another
        writer holds.
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
        unit_shard(tensor, start, stop)
    with WriterLock(directory):
        prepare_folder(directory, overwrite)
        shards = []
        for number, (start, stop) in enumerate(bounds):
            path = directory / shard_name(number)
            digest = save_array(path, unit_shard(tensor, start, stop).numpy().astype(dtype))
            shards.append({"file": path.name, "rows": stop - start, "start": start, "sha256": digest})
        write_closing_files(directory, id_array, labels, dim=int(tensor.shape[1]), dtype=dtype, encoder=encoder,
                            shards=shards)


def unit_shard(tensor: torch.Tensor, start: int, stop: int) -> torch.Tensor:
    """Rows ``start:stop`` of ``tensor`` ``(G, d)`` validated (finite, non-zero) and unit-normalised,
    as a float32/64 CPU tensor ``(stop - start, d)``; ``ValueError`` naming the rows."""
    name = f"embeddings rows {start}..{stop - 1}"
    return unit_rows(as_matrix(tensor[start:stop], name), name).cpu()


def save_array(path: Path, array: np.ndarray) -> str:
    """Write ``array`` to ``path`` as ``.npy`` (atomically); its sha256."""
    atomic_write(path, lambda handle: np.save(handle, array))
    return sha256_file(path)


def write_closing_files(directory: Path, ids: np.ndarray, labels: pd.DataFrame | None, *, dim: int, dtype: str,
                        encoder: str | None, shards: list[dict[str, Any]], **extra: Any) -> None:
    """Write what closes a store once its shards are written: the ids, the labels (when given) and,
    last, the manifest.

    Parameters
    ----------
    directory : Path
        The store's folder.
    ids : ndarray of int64, shape (G,)
        The rows' external ids.
    labels : DataFrame of G rows, optional
        Kept as CSV.
    dim, dtype, encoder
        The rows' dimension, the shards' dtype and the encoder's name (or ``None``).
    shards : list of dict
        The manifest's shard entries (``file``, ``rows``, ``start``, ``sha256``), in order.
    **extra
        Further manifest fields (a built store's ``plan``, ``skipped`` and ``source``).
    """
    manifest: dict[str, Any] = {
        "format": FORMAT, "version": VERSION, "dim": dim, "dtype": dtype, "rows": len(ids), "normalised": True,
        "encoder": encoder, "shards": shards, "ids": {"file": IDS_FILE, "sha256": save_array(directory / IDS_FILE, ids)},
        "labels": None, **extra,
    }
    if labels is not None:
        atomic_write(directory / LABELS_FILE, lambda handle: handle.write(labels.to_csv(index=False).encode()))
        manifest["labels"] = {"file": LABELS_FILE, "sha256": sha256_file(directory / LABELS_FILE)}
    atomic_write(directory / MANIFEST, lambda handle: handle.write(json.dumps(manifest, indent=1).encode()))


def prepare_folder(directory: Path, overwrite: bool) -> None:
    """Make ``directory`` ready for a new store: created if absent; leftovers of a write that did not
    finish (store files, no manifest) are cleared; anything else is refused unless ``overwrite``.

    The old manifest is removed first, so a rewrite that fails midway never leaves the old
    manifest vouching for a mix of old and new shards. The caller holds the folder's
    :class:`~anchordiv.store.lock.WriterLock`, whose file is kept."""
    present = list(directory.iterdir())
    foreign = [path.name for path in present if not _OWN_FILE.match(path.name) or path.is_dir()]
    if not overwrite and ((directory / MANIFEST).exists() or foreign):
        what = "a gallery store" if (directory / MANIFEST).exists() else f"other files ({', '.join(sorted(foreign)[:3])})"
        raise ValueError(f"{directory} already holds {what}; {OVERWRITE} to replace it, or choose an empty folder.")
    (directory / MANIFEST).unlink(missing_ok=True)
    for path in present:
        if path.name not in (MANIFEST, LOCK_FILE) and _OWN_FILE.match(path.name) and path.is_file():
            path.unlink()


def remove_temporaries(directory: Path) -> None:
    """Delete the temporary files a killed write left in ``directory`` (nothing reads them)."""
    for path in directory.iterdir():
        if _TEMPORARY.match(path.name) and path.is_file():
            path.unlink(missing_ok=True)


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
