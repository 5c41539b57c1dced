"""The embedding cache of an image folder, reused only when it provably fits.

The cache for (encoder, folder) is ``<cache>/embeddings/<encoder>-<folder hash>.npy`` holding the
``(n, d)`` float32 vectors, plus ``<same>.npy.json`` written *after* it that records the cache key,
the shape, the sha256 of the ``.npy`` bytes and which file (by relative path and content sha256)
each row belongs to. The key covers the encoder name and every file's path and content hash, so
any edit, rename, addition or removal is noticed; vectors of unchanged content are then reused
and only new content is encoded. A ``.npy`` that its ``.json`` does not vouch for (killed run,
truncation, manual edits) is never read as vectors, nor is one holding NaN or infinite values.

A run that is killed keeps its work: each finished batch is written at once (atomically) to
``<same>.npy.partial/batch-*.npz`` as content hashes and vectors, and the next run reuses those
rows exactly like a stale cache's. The partial folder is removed once the full cache is written.
Runs that build the same cache take turns (a lock file in the partial folder), so the run holding
the lock may delete temporary files that a killed run left behind.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import zipfile
from contextlib import contextmanager
from glob import escape as glob_escape
from pathlib import Path
from typing import Iterator

import numpy as np

from ..cache import atomic_write, sha256_file
from ..cache import cache_dir as default_cache_dir
from ..encoders.base import Encoder
from ..images import display_name
from .encode import encode_pending

try:  # POSIX only; without it concurrent runs on one cache are not serialised (and stray temp files stay)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

logger = logging.getLogger(__name__)
# Bump when the meaning of cached rows changes (e.g. the image loader's rules), to invalidate old caches.
# 2: 16-bit grayscale is scaled instead of clipped; caches record their format and are refused otherwise.
CACHE_FORMAT = 2
_BATCH_GLOB = "batch-*.npz"


def cached_embeddings(root: Path, files: list[str], fingerprints: dict[str, str], encoder: Encoder,
                      data_path: Path, batch_size: int, progress: bool) -> tuple[dict, np.ndarray, int]:
    """The vectors of ``files`` under ``root``, from the cache at ``data_path`` when it fits them,
    else encoded (reusing what the stale cache and a killed run's batches hold) and cached.

    Parameters
    ----------
    root : Path
        The image folder.
    files : list of str
        Its files, relative ``/``-paths in sorted order.
    fingerprints : dict
        Each file's content fingerprint (:func:`~anchordiv.embeddings.scan.content_fingerprint`).
    encoder : Encoder
        What encodes the images.
    data_path : Path
        The cache file (:func:`cache_path`).
    batch_size : int
        Images encoded at once.
    progress : bool
        Whether to show a progress bar (on stderr).

    Returns
    -------
    meta : dict
        The cache's record: ``rows`` (``[path, fingerprint]`` of each row) and ``skipped``
        (``[display path, reason]`` of each file that is not an acceptable image), among others.
    vectors : ndarray, shape (n, d)
        float32, one row per entry of ``meta["rows"]``.
    reused : int
        How many rows were not encoded in this call.
    """
    key = _cache_key(encoder.name, fingerprints)
    cached, reused = _read_cache(data_path, encoder), None
    if not _fits(cached, key):
        with _build_lock(data_path) as partial:
            cached = _read_cache(data_path, encoder)  # another run may have written it while we waited
            if not _fits(cached, key):
                _remove_stray_temporaries(data_path, partial)
                cached, reused = _rebuild(root, files, fingerprints, key, cached, partial, data_path,
                                          encoder, batch_size, progress)
                logger.info("encoded %d of %d files now (%d reused from an earlier run, %d skipped: not readable "
                            "images); cached in %s", len(cached[0]["rows"]) - reused, len(files), reused,
                            len(cached[0]["skipped"]), display_name(data_path))
            _discard_partial(partial)
    meta, vectors = cached
    if reused is None:  # every row came from the cache
        reused = len(meta["rows"])
    return meta, vectors, reused


def _cache_key(encoder_name: str, fingerprints: dict[str, str]) -> str:
    manifest = {"format": CACHE_FORMAT, "encoder": encoder_name, "files": sorted(fingerprints.items())}
    return hashlib.sha256(json.dumps(manifest).encode()).hexdigest()


def cache_path(cache_dir: str | os.PathLike | None, encoder_name: str, root: Path) -> Path:
    """The cache file of ``root``'s images under the encoder named ``encoder_name``, in ``cache_dir``
    (default ``<anchordiv cache>/embeddings``)."""
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir() / "embeddings"
    # Readable prefix for humans; the hash keeps distinct encoders and folders apart.
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", encoder_name)[:60]
    digest = hashlib.sha256(os.fsencode(encoder_name) + b"\0" + os.fsencode(root.resolve())).hexdigest()[:16]
    return directory / f"{slug}-{digest}.npy"


def _fits(cached: tuple[dict, np.ndarray] | None, key: str) -> bool:
    return cached is not None and cached[0]["key"] == key


def _read_cache(data_path: Path, encoder: Encoder) -> tuple[dict, np.ndarray] | None:
    """``(meta, vectors (n, d))`` if the meta file vouches for the data file's exact bytes, else None.

    Vectors that are not finite are refused even with a matching hash: they were written by an
    older version that did not check, or by hand, and would make every score NaN.
    """
    meta_path = data_path.with_name(data_path.name + ".json")
    try:
        meta = json.loads(meta_path.read_text())
        if (not {"key", "rows", "skipped"} <= meta.keys() or meta.get("format") != CACHE_FORMAT
                or meta["encoder"] != encoder.name or sha256_file(data_path) != meta["sha256"]):
            return None
        vectors = np.load(data_path, allow_pickle=False)
        if list(vectors.shape) != meta["shape"] or vectors.shape != (len(meta["rows"]), encoder.dim):
            return None
        return (meta, vectors) if np.isfinite(vectors).all() else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_cache(data_path: Path, vectors: np.ndarray, meta: dict) -> dict:
    """Data first, then the meta that vouches for it: a run killed in between leaves a cache never trusted."""
    atomic_write(data_path, lambda handle: np.save(handle, vectors, allow_pickle=False))
    meta = {**meta, "format": CACHE_FORMAT, "shape": list(vectors.shape), "dtype": vectors.dtype.str,
            "sha256": sha256_file(data_path)}
    meta_path = data_path.with_name(data_path.name + ".json")
    atomic_write(meta_path, lambda handle: handle.write(json.dumps(meta).encode()))
    return meta


@contextmanager
def _build_lock(data_path: Path) -> Iterator[Path]:
    """Hold the lock of ``data_path``'s partial folder (created if needed) and yield that folder.

    A run that finishes removes the folder and its lock file; a run that was waiting on the old
    lock file then finds it gone and locks a fresh one, so two runs never build at once.
    """
    partial = data_path.with_name(data_path.name + ".partial")
    lock_path = partial / "lock"
    while True:
        partial.mkdir(parents=True, exist_ok=True)
        try:
            descriptor = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except FileNotFoundError:  # the folder was removed between mkdir and open
            continue
        try:
            if fcntl is not None:
                fcntl.flock(descriptor, fcntl.LOCK_EX)
            try:
                current = os.path.samestat(os.fstat(descriptor), os.stat(lock_path))
            except FileNotFoundError:
                current = False
            if current:
                yield partial
                return
        finally:
            os.close(descriptor)


def _remove_stray_temporaries(data_path: Path, partial: Path) -> None:
    """Delete the temporary files a killed run's atomic writes left; only the lock holder writes them."""
    strays = [*data_path.parent.glob(f".{glob_escape(data_path.name)}.*.tmp"), *partial.glob(".*.tmp")]
    for stray in strays:
        stray.unlink(missing_ok=True)


def _save_batch(partial: Path, encoder: Encoder, fingerprints: list[str], vectors: np.ndarray) -> None:
    """One finished batch, by content hash, so that a killed run's work is reused by the next run."""
    name = hashlib.sha256("\n".join(fingerprints).encode()).hexdigest()[:24]
    atomic_write(partial / f"batch-{name}.npz", lambda handle: np.savez(
        handle, fingerprints=np.array(fingerprints, dtype=str), vectors=vectors.astype(np.float32),
        encoder=np.array(encoder.name), format=np.array(CACHE_FORMAT)))


def _read_partial(partial: Path, encoder: Encoder) -> dict[str, np.ndarray]:
    """``content hash -> vector`` from the batches in ``partial``; damaged or foreign batches are deleted."""
    known: dict[str, np.ndarray] = {}
    for batch in sorted(partial.glob(_BATCH_GLOB)):
        try:
            with np.load(batch, allow_pickle=False) as stored:
                fingerprints, vectors = stored["fingerprints"].tolist(), stored["vectors"]
                fits = (str(stored["encoder"]) == encoder.name and int(stored["format"]) == CACHE_FORMAT
                        and vectors.shape == (len(fingerprints), encoder.dim) and np.isfinite(vectors).all())
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
            fits = False
        if fits:
            known.update(zip(fingerprints, vectors))
        else:
            batch.unlink(missing_ok=True)
    return known


def _discard_partial(partial: Path) -> None:
    """Remove the partial folder once the full cache holds everything (the lock file last)."""
    for entry in partial.iterdir():
        if entry.name != "lock":
            entry.unlink(missing_ok=True)
    (partial / "lock").unlink(missing_ok=True)
    try:
        partial.rmdir()
    except OSError:  # a waiting run has just created its own lock file here; it removes the folder when done
        pass


def _rebuild(root: Path, files: list[str], fingerprints: dict[str, str], key: str,
             cached: tuple[dict, np.ndarray] | None, partial: Path, data_path: Path, encoder: Encoder,
             batch_size: int, progress: bool) -> tuple[tuple[dict, np.ndarray], int]:
    """Encode what neither the stale cache nor a killed run's batches hold, and write the full cache."""
    # A stale but intact cache still holds good vectors for every file whose content is unchanged.
    known = {fp: cached[1][i] for i, (_, fp) in enumerate(cached[0]["rows"])} if cached else {}
    known.update(_read_partial(partial, encoder))
    paths, vectors, skipped, reused = encode_pending(root, files, fingerprints, known, encoder, batch_size, progress,
                                             lambda batch, encoded: _save_batch(partial, encoder, batch, encoded))
    meta = _write_cache(data_path, vectors, {
        "key": key, "encoder": encoder.name, "folder": display_name(root.resolve()),
        "rows": [[rel, fingerprints[rel]] for rel in paths], "skipped": [list(entry) for entry in skipped],
    })
    return (meta, vectors), reused

