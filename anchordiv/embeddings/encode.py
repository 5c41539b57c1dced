"""Encoding a folder's images in batches, each batch checked: NaN, infinite or zero vectors are
refused before anything keeps them."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

import numpy as np
from tqdm import tqdm

from ..encoders.base import Encoder
from ..images import ImageLoadError, display_name, load_image


def encode_pending(
    root: Path,
    files: list[str],
    fingerprints: dict[str, str],
    known: dict[str, np.ndarray],
    encoder: Encoder,
    batch_size: int,
    progress: bool,
    finished: Callable[[list[str], np.ndarray], None] | None = None,
) -> tuple[list[str], np.ndarray, list[tuple[str, str]], int]:
    """The vectors of ``files`` under ``root``: those whose content is ``known`` reused, the rest
    loaded and encoded ``batch_size`` at a time (with a progress bar on stderr when ``progress``).

    Parameters
    ----------
    root : Path
        The image folder.
    files : list of str
        Relative ``/``-paths, in order.
    fingerprints : dict
        Each file's content fingerprint.
    known : dict
        Content fingerprint -> vector ``(d,)`` already at hand.
    encoder : Encoder
        What encodes the others.
    batch_size : int
        Images encoded at once.
    progress : bool
        Whether to show the progress bar.
    finished : callable, optional
        ``finished(fingerprints, vectors (b, d))``, called with each encoded batch, to keep it if
        the run is killed.

    Returns
    -------
    paths : list of str
        The files that have a vector, in order.
    vectors : ndarray, shape (n, d)
        float32, one row per path.
    skipped : list of (str, str)
        ``(display path, reason)`` of each file that is not an acceptable image.
    reused : int
        How many files were ``known``.

    Raises
    ------
    ValueError
        When ``encoder`` returns NaN, infinite or zero vectors.
    """
    vectors: dict[str, np.ndarray] = {rel: known[fingerprints[rel]] for rel in files if fingerprints[rel] in known}
    skipped: list[tuple[str, str]] = []
    pending = [rel for rel in files if rel not in vectors]
    batch_paths, batch_images = [], []

    def flush() -> None:
        encoded = encoder.encode_images(batch_images, batch_size=batch_size).numpy()
        _check_vectors(encoded, batch_paths, encoder)
        if finished is not None:
            finished([fingerprints[rel] for rel in batch_paths], encoded)
        vectors.update(zip(batch_paths, encoded))
        batch_paths.clear()
        batch_images.clear()

    with tqdm(total=len(pending), desc="embedding", unit="img", file=sys.stderr, disable=not progress) as bar:
        for rel in pending:
            try:
                batch_images.append(load_image(root / rel, name=display_name(rel)))
                batch_paths.append(rel)
            except ImageLoadError as error:
                skipped.append((display_name(rel), error.reason))
            if len(batch_images) == batch_size:
                flush()
            bar.update(1)
        if batch_images:
            flush()
    paths = [rel for rel in files if rel in vectors]
    array = np.stack([vectors[rel] for rel in paths]).astype(np.float32) if paths else np.zeros((0, encoder.dim), np.float32)
    return paths, array, skipped, len(files) - len(pending)


def embed_files(root: Path, paths: list[str], encoder: Encoder, batch_size: int
                ) -> tuple[np.ndarray, list[tuple[int, str]]]:
    """``(vectors (kept, d), skipped)`` for ``paths`` under ``root``: images loaded ``batch_size``
    at a time (a shard's images are never all in memory), ``skipped`` ``(index, reason)``.

    What every engine runs on its share of a store's files. Raises ``ValueError`` when ``encoder``
    returns NaN, infinite or zero vectors.
    """
    chunks: list[np.ndarray] = []
    skipped: list[tuple[int, str]] = []
    for start in range(0, len(paths), batch_size):
        images, kept = [], []
        for index in range(start, min(start + batch_size, len(paths))):
            try:
                images.append(load_image(root / paths[index], name=display_name(paths[index])))
                kept.append(paths[index])
            except ImageLoadError as error:
                skipped.append((index, error.reason))
        if images:
            encoded = encoder.encode_images(images, batch_size=batch_size).numpy()
            _check_vectors(encoded, kept, encoder)
            chunks.append(encoded)
    vectors = np.concatenate(chunks) if chunks else np.zeros((0, encoder.dim), np.float32)
    return vectors, skipped


def _check_vectors(encoded: np.ndarray, paths: list[str], encoder: Encoder) -> None:
    """Refuse NaN, infinite or all-zero rows: cached, they would silently poison every later search."""
    bad = ~np.isfinite(encoded).all(axis=1) | ~(np.linalg.norm(encoded, axis=1) > 0.5)
    if bad.any():
        first = display_name(paths[int(np.flatnonzero(bad)[0])])
        raise ValueError(
            f"encoder {encoder.name!r} returned NaN, infinite or zero vectors for {int(bad.sum())} of {len(paths)} "
            f"images (first: {first!r}); its weights or its arithmetic are broken (check the checkpoint, or try "
            "another device or float32). Nothing was cached for them"
        )

