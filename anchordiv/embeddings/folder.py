"""Embedding a folder of images in memory: :func:`embed_folder` and its result,
:class:`FolderEmbeddings` (reusing the folder's embedding cache where it fits)."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from ..cache import atomic_write
from ..device import image_batch_size
from ..encoders.base import Encoder
from ..images import display_name
from .labels import folder_labels
from .scan import content_fingerprint, open_image_folder
from .vector_cache import cache_path, cached_embeddings


@dataclass
class FolderEmbeddings:
    """Embeddings of the readable images in a folder, in sorted path order.

    ``embeddings`` is ``(n, d)`` float32, rows unit-norm; row ``i`` is ``paths[i]`` (relative to the
    folder, ``/``-separated) and ``labels.iloc[i]``. ``labels`` has at least ``path`` and ``label``.
    ``paths`` open the files (names that are not UTF-8 keep Python's surrogate escapes); show
    ``display_paths`` instead. ``skipped`` lists ``(display path, reason)`` for every file that is
    not in the gallery. ``reused`` counts rows taken from the cache (or from the finished batches of
    a killed run) rather than encoded in this call. ``unlabelled`` lists the paths that a labels
    CSV has no row for; they keep their folder as ``label``.
    """

    embeddings: torch.Tensor
    paths: list[str]
    labels: pd.DataFrame
    skipped: list[tuple[str, str]]
    encoder_name: str
    reused: int
    cache_path: Path
    unlabelled: list[str] = field(default_factory=list)

    @property
    def display_paths(self) -> list[str]:
        """``paths`` fit to show: bytes that are not UTF-8 become U+FFFD."""
        return [display_name(path) for path in self.paths]


def embed_folder(
    folder: str | os.PathLike,
    encoder: Encoder,
    labels_csv: str | os.PathLike | None = None,
    batch_size: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = True,
) -> FolderEmbeddings:
    """Embed every image under ``folder`` (recursively) with ``encoder``, reusing the cache where valid.

    Every non-hidden regular file is a candidate; files that are not acceptable images (see
    :mod:`anchordiv.images`) and entries that are not regular files are reported in ``skipped``.

    Parameters
    ----------
    folder : str or path
        The image folder.
    encoder : Encoder
        What embeds the images (``encoder.dim`` = ``d``).
    labels_csv : str or path, optional
        Labels are the folder of each file relative to ``folder`` (``None`` for files at the top)
        unless this CSV has a ``label`` column; it is joined on a ``path`` column (relative to
        ``folder``) or, failing that, on a ``filename`` column (base names, which must then be unique).
    batch_size : int, optional
        Images encoded at once; default sized to the encoder's device
        (:func:`~anchordiv.device.image_batch_size`: 64 on a CPU).
    cache_dir : str or path, optional
        Where the cache lives; default ``<anchordiv cache>/embeddings`` (``$ANCHORDIV_CACHE`` or
        ``~/.cache/anchordiv``).
    progress : bool
        Whether to show progress bars (on stderr).

    Returns
    -------
    FolderEmbeddings
        ``embeddings`` ``(n, d)``, one row per readable image.

    Raises
    ------
    ValueError
        For a missing or system folder, an unreadable labels CSV (before any image is encoded)
        and an encoder that returns NaN or zero vectors.
    """
    listed = open_image_folder(folder, labels_csv)
    root = listed.root
    fingerprints = {rel: content_fingerprint(root / rel) for rel in tqdm(
        listed.files, desc="hashing", unit="file", file=sys.stderr, disable=not progress, leave=False)}
    data_path = cache_path(cache_dir, encoder.name, root)
    batch_size = image_batch_size(encoder.device) if batch_size is None else batch_size
    meta, vectors, reused = cached_embeddings(root, listed.files, fingerprints, encoder, data_path, batch_size,
                                              progress)
    paths = [row[0] for row in meta["rows"]]
    labels, unlabelled = folder_labels(paths, listed.labels_table, listed.labels_csv)
    return FolderEmbeddings(
        embeddings=torch.from_numpy(np.array(vectors, dtype=np.float32)),
        paths=paths,
        labels=labels,
        skipped=sorted(listed.unread + [tuple(entry) for entry in meta["skipped"]]),
        encoder_name=encoder.name,
        reused=reused,
        cache_path=data_path,
        unlabelled=unlabelled,
    )


def export_npz(gallery: FolderEmbeddings, path: str | os.PathLike) -> Path:
    """Write ``gallery`` to ``path`` as ``.npz``: ``embeddings`` ``(n, d)``, ``paths`` ``(n,)``,
    ``labels`` ``(n,)`` as strings and ``encoder_name``; the path written."""
    target = Path(path).expanduser()
    labels = ["" if pd.isna(value) else str(value) for value in gallery.labels["label"]]
    atomic_write(target, lambda handle: np.savez(
        handle, embeddings=gallery.embeddings.numpy(), paths=np.array(gallery.paths, dtype=str),
        labels=np.array(labels, dtype=str), encoder_name=np.array(gallery.encoder_name)))
    return target
