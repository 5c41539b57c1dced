"""Embedding a folder of images, with a cache that is reused only when it provably fits.

The cache for (encoder, folder) is ``<cache>/embeddings/<encoder>-<folder hash>.npy`` holding the
``(n, d)`` float32 vectors, plus ``<same>.npy.json`` written *after* it that records the cache key,
the shape, the sha256 of the ``.npy`` bytes and which file (by relative path and content sha256)
each row belongs to. The key covers the encoder name and every file's path and content hash, so
any edit, rename, addition or removal is noticed; vectors of unchanged content are then reused
and only new content is encoded. A ``.npy`` that its ``.json`` does not vouch for (killed run,
truncation, manual edits) is never read as vectors.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from anchordiv.cache import atomic_write, sha256_file
from anchordiv.cache import cache_dir as default_cache_dir
from anchordiv.encoders.base import Encoder
from anchordiv.images import MAX_BYTES, ImageLoadError, load_image

# Bump when the meaning of cached rows changes (e.g. the image loader's rules), to invalidate old caches.
CACHE_FORMAT = 1


@dataclass
class EmbeddedGallery:
    """Embeddings of the readable images in a folder, in sorted path order.

    ``embeddings`` is ``(n, d)`` float32, rows unit-norm; row ``i`` is ``paths[i]`` (relative to the
    folder, ``/``-separated) and ``labels.iloc[i]``. ``labels`` has at least ``path`` and ``label``.
    ``skipped`` lists ``(path, reason)`` for every file that is not in the gallery.
    ``reused`` counts rows taken from the cache rather than encoded in this call.
    """

    embeddings: torch.Tensor
    paths: list[str]
    labels: pd.DataFrame
    skipped: list[tuple[str, str]]
    encoder_name: str
    reused: int
    cache_path: Path


def embed_folder(
    folder: str | os.PathLike,
    encoder: Encoder,
    labels_csv: str | os.PathLike | None = None,
    batch_size: int = 64,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = True,
) -> EmbeddedGallery:
    """Embed every image under ``folder`` (recursively) with ``encoder``, reusing the cache where valid.

    Every non-hidden file is a candidate; files that are not acceptable images (see
    :mod:`anchordiv.images`) are reported in ``skipped``. Labels are the folder of each file
    relative to ``folder`` (``None`` for files at the top) unless ``labels_csv`` has a ``label``
    column; that CSV is joined on a ``path`` column (relative to ``folder``) or, failing that, on a
    ``filename`` column (base names, which must then be unique). ``cache_dir`` defaults to
    ``<anchordiv cache>/embeddings`` (``$ANCHORDIV_CACHE`` or ``~/.cache/anchordiv``).
    """
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise ValueError(f"image folder {str(folder)!r} does not exist or is not a folder")
    csv_path = Path(labels_csv).expanduser() if labels_csv is not None else None
    if csv_path is not None and not csv_path.is_file():
        raise ValueError(f"labels CSV {str(labels_csv)!r} does not exist")
    files = list_files(root, exclude=csv_path)
    fingerprints = {rel: _fingerprint(root / rel) for rel in tqdm(
        files, desc="hashing", unit="file", file=sys.stderr, disable=not progress, leave=False)}
    key = _cache_key(encoder.name, fingerprints)
    data_path = _cache_path(Path(cache_dir) if cache_dir is not None else default_cache_dir() / "embeddings",
                            encoder.name, root)

    cached = _read_cache(data_path, encoder)
    if cached is not None and cached[0]["key"] == key:
        meta, vectors = cached
        paths = [row[0] for row in meta["rows"]]
        skipped = [tuple(entry) for entry in meta["skipped"]]
        reused = len(paths)
    else:
        # A stale but intact cache still holds good vectors for every file whose content is unchanged.
        known = {fp: cached[1][i] for i, (_, fp) in enumerate(cached[0]["rows"])} if cached else {}
        paths, vectors, skipped, reused = _build(root, files, fingerprints, known, encoder, batch_size, progress)
        _write_cache(data_path, vectors, {
            "key": key, "encoder": encoder.name, "folder": str(root.resolve()),
            "rows": [[rel, fingerprints[rel]] for rel in paths], "skipped": [list(entry) for entry in skipped],
        })
    return EmbeddedGallery(
        embeddings=torch.from_numpy(np.array(vectors, dtype=np.float32)),
        paths=paths,
        labels=_labels(paths, csv_path),
        skipped=skipped,
        encoder_name=encoder.name,
        reused=reused,
        cache_path=data_path,
    )


def export_npz(gallery: EmbeddedGallery, path: str | os.PathLike) -> Path:
    """Write ``embeddings`` (n, d), ``paths`` (n,), ``labels`` (n,) as strings and ``encoder_name`` to ``path``."""
    target = Path(path).expanduser()
    labels = ["" if pd.isna(value) else str(value) for value in gallery.labels["label"]]
    atomic_write(target, lambda handle: np.savez(
        handle, embeddings=gallery.embeddings.numpy(), paths=np.array(gallery.paths, dtype=str),
        labels=np.array(labels, dtype=str), encoder_name=np.array(gallery.encoder_name)))
    return target


def list_files(root: Path, exclude: Path | None) -> list[str]:
    """Relative ``/``-paths of non-hidden files under ``root``, sorted; hidden folders are not entered."""
    excluded = exclude.resolve() if exclude is not None else None
    found = []
    for directory, subdirectories, names in os.walk(root):
        subdirectories[:] = [name for name in subdirectories if not name.startswith(".")]
        for name in names:
            path = Path(directory) / name
            if not name.startswith(".") and path.resolve() != excluded:
                found.append(path.relative_to(root).as_posix())
    return sorted(found)


def _fingerprint(path: Path) -> str:
    """Content sha256; files too large to be images are not read (their size stands in)."""
    try:
        size = path.stat().st_size
        return f"size:{size}" if size > MAX_BYTES else sha256_file(path)
    except OSError as error:
        return f"unreadable:{error.errno}"


def _cache_key(encoder_name: str, fingerprints: dict[str, str]) -> str:
    manifest = {"format": CACHE_FORMAT, "encoder": encoder_name, "files": sorted(fingerprints.items())}
    return hashlib.sha256(json.dumps(manifest).encode()).hexdigest()


def _cache_path(directory: Path, encoder_name: str, root: Path) -> Path:
    # Readable prefix for humans; the hash keeps distinct encoders and folders apart.
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", encoder_name)[:60]
    digest = hashlib.sha256(f"{encoder_name}\0{root.resolve()}".encode()).hexdigest()[:16]
    return directory / f"{slug}-{digest}.npy"


def _read_cache(data_path: Path, encoder: Encoder) -> tuple[dict, np.ndarray] | None:
    """``(meta, vectors (n, d))`` if the meta file vouches for the data file's exact bytes, else None."""
    meta_path = data_path.with_name(data_path.name + ".json")
    try:
        meta = json.loads(meta_path.read_text())
        if not {"key", "rows", "skipped"} <= meta.keys() or meta["encoder"] != encoder.name or sha256_file(data_path) != meta["sha256"]:
            return None
        vectors = np.load(data_path, allow_pickle=False)
        if list(vectors.shape) != meta["shape"] or vectors.shape != (len(meta["rows"]), encoder.dim):
            return None
        return meta, vectors
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_cache(data_path: Path, vectors: np.ndarray, meta: dict) -> None:
    """Data first, then the meta that vouches for it: a run killed in between leaves a cache never trusted."""
    atomic_write(data_path, lambda handle: np.save(handle, vectors, allow_pickle=False))
    meta = {**meta, "shape": list(vectors.shape), "dtype": vectors.dtype.str, "sha256": sha256_file(data_path)}
    meta_path = data_path.with_name(data_path.name + ".json")
    atomic_write(meta_path, lambda handle: handle.write(json.dumps(meta).encode()))


def _build(
    root: Path,
    files: list[str],
    fingerprints: dict[str, str],
    known: dict[str, np.ndarray],
    encoder: Encoder,
    batch_size: int,
    progress: bool,
) -> tuple[list[str], np.ndarray, list[tuple[str, str]], int]:
    """``(paths, vectors (n, d) float32, skipped, reused)``: known content reused, the rest loaded and encoded."""
    vectors: dict[str, np.ndarray] = {rel: known[fingerprints[rel]] for rel in files if fingerprints[rel] in known}
    skipped: list[tuple[str, str]] = []
    pending = [rel for rel in files if rel not in vectors]
    batch_paths, batch_images = [], []

    def flush() -> None:
        encoded = encoder.encode_images(batch_images, batch_size=batch_size).numpy()
        vectors.update(zip(batch_paths, encoded))
        batch_paths.clear()
        batch_images.clear()

    with tqdm(total=len(pending), desc="embedding", unit="img", file=sys.stderr, disable=not progress) as bar:
        for rel in pending:
            try:
                batch_images.append(load_image(root / rel, name=rel))
                batch_paths.append(rel)
            except ImageLoadError as error:
                skipped.append((rel, error.reason))
            if len(batch_images) == batch_size:
                flush()
            bar.update(1)
        if batch_images:
            flush()
    paths = [rel for rel in files if rel in vectors]
    array = np.stack([vectors[rel] for rel in paths]).astype(np.float32) if paths else np.zeros((0, encoder.dim), np.float32)
    return paths, array, skipped, len(files) - len(pending)


def _labels(paths: list[str], csv_path: Path | None) -> pd.DataFrame:
    """One row per path: ``path``, ``label`` (folder, or the CSV's), and the CSV's other columns."""
    frame = pd.DataFrame({
        "path": pd.Series(paths, dtype=object),
        "label": pd.Series([rel.rpartition("/")[0] or None for rel in paths], dtype=object),
    })
    if csv_path is None:
        return frame
    table = pd.read_csv(csv_path, dtype={"path": str, "filename": str})
    if "path" in table.columns:
        on, table = "path", table.assign(path=table["path"].map(_normalise_relative))
    elif "filename" in table.columns:
        names = frame["path"].map(lambda rel: rel.rpartition("/")[2])
        duplicated = names[names.duplicated()]
        if len(duplicated):
            raise ValueError(
                f"{csv_path}: joins on 'filename', but {duplicated.iloc[0]!r} occurs in several folders; "
                "give the CSV a 'path' column with paths relative to the image folder"
            )
        on, frame = "filename", frame.assign(filename=names)
    else:
        raise ValueError(
            f"{csv_path}: needs a 'path' column (relative to the image folder) or a 'filename' column; "
            f"found columns {list(table.columns)}"
        )
    repeated = table[on][table[on].duplicated()]
    if len(repeated):
        raise ValueError(f"{csv_path}: {on} {repeated.iloc[0]!r} appears in more than one row")
    if "label" in table.columns:
        frame = frame.drop(columns="label")
    joined = frame.merge(table, on=on, how="left", validate="one_to_one")
    columns = ["path", "label"] + [column for column in joined.columns if column not in ("path", "label")]
    return joined[columns]


def _normalise_relative(path: str) -> str:
    """CSV paths as written by people: ``./a\\b.png`` and ``a/b.png`` both mean ``a/b.png``."""
    return Path(str(path).replace("\\", "/")).as_posix()
