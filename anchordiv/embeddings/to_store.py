"""Embedding a folder of images into a :class:`~anchordiv.store.GalleryStore`: the plan every engine
builds the store from (:func:`plan_folder_store`), and the local engine (:func:`embed_folder_to_store`)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..cache import sha256_file
from ..device import image_batch_size
from ..encoders.base import Encoder
from ..images import display_name
from ..progress import ProgressCallback
from ..store import GalleryStore, StorePlan, build_store
from .encode import embed_files
from .labels import folder_labels
from .scan import content_fingerprint, open_image_folder
from .vector_cache import CACHE_FORMAT


@dataclass(frozen=True, eq=False)
class FolderStorePlan:
    """What embedding a folder into a store is fixed by, before any image is read.

    ``root`` is the image folder; ``plan`` the :class:`~anchordiv.store.StorePlan` (every file's
    relative path and content sha256 in sorted order, the encoder, the labels CSV's sha256,
    ``shard_rows``, ``dtype``, the entries refused while listing). Every engine builds its store
    from this one plan, so a store started by one engine is resumed by any other.
    """

    root: Path
    plan: StorePlan
    labels_table: pd.DataFrame | None
    labels_csv: Path | None

    def labels(self, paths: list[str]) -> pd.DataFrame:
        """The labels of the kept ``paths`` (one row each, in order), as :func:`embed_folder` gives them."""
        return folder_labels(paths, self.labels_table, self.labels_csv)[0]


def plan_folder_store(
    folder: str | os.PathLike,
    encoder_name: str,
    dim: int,
    labels_csv: str | os.PathLike | None = None,
    shard_rows: int = 4096,
    dtype: str = "float16",
) -> FolderStorePlan:
    """The :class:`FolderStorePlan` of embedding ``folder``; hashes every file but reads no image.

    Parameters
    ----------
    folder : str or path
        The image folder.
    encoder_name : str
        The encoder's name.
    dim : int
        The dimension ``d`` of its vectors.
    labels_csv : str or path, optional
        As in :func:`~anchordiv.embeddings.embed_folder`.
    shard_rows : int
        Files per shard.
    dtype : {"float16", "float32"}
        How the shards hold the rows.

    Returns
    -------
    FolderStorePlan

    Raises
    ------
    ValueError
        For a missing, system or empty folder and an unreadable labels CSV.
    """
    root, csv_path, table, files, unread = open_image_folder(folder, labels_csv)
    if not files:
        raise ValueError(f"image folder {display_name(folder)!r} holds no files to embed; put images in it")
    plan = StorePlan(
        items=tuple((rel, content_fingerprint(root / rel)) for rel in files), dim=dim, encoder=encoder_name,
        shard_rows=shard_rows, dtype=dtype, skipped=tuple(unread), source=str(root),
        # The format covers the loader's rules; the CSV's hash, the labels written at the end.
        settings={"format": CACHE_FORMAT, "labels_sha256": sha256_file(csv_path) if csv_path is not None else None},
    )
    return FolderStorePlan(root=root, plan=plan, labels_table=table, labels_csv=csv_path)


def embed_folder_to_store(
    folder: str | os.PathLike,
    encoder: Encoder,
    out: str | os.PathLike,
    labels_csv: str | os.PathLike | None = None,
    shard_rows: int = 4096,
    batch_size: int | None = None,
    dtype: str = "float16",
    progress: ProgressCallback | None = None,
    overwrite: bool = False,
) -> GalleryStore:
    """Embed every image under ``folder`` with ``encoder`` into a :class:`~anchordiv.store.GalleryStore`
    in the folder ``out``; resumable.

    Files, labels and skipped files are as in :func:`~anchordiv.embeddings.embed_folder`; a file
    that is not an acceptable image gets no row (rows keep ids ``0 .. G-1`` in sorted path order)
    and is listed with its reason in ``store.skipped``. The plan (every file's path and content
    sha256, the encoder, the labels CSV, ``shard_rows``, ``dtype``) is fixed first: a rerun after a
    kill keeps the finished shards (checked by sha256) and embeds only the rest; a damaged shard is
    named (in ``progress``, the log and ``store.build_report.rebuilt``) and embedded again. This is
    the local engine (shards in order, in this process);
    :func:`anchordiv.ray_embed.embed_folder_to_store_ray` builds the same store on Ray.

    Parameters
    ----------
    folder, encoder, labels_csv
        The image folder, what embeds it (``encoder.dim`` = ``d``) and the optional labels CSV, as
        in :func:`~anchordiv.embeddings.embed_folder`.
    out : str or path
        The store's folder.
    shard_rows : int
        Files per shard.
    batch_size : int, optional
        Images encoded at once; default sized to the encoder's device
        (:func:`~anchordiv.device.image_batch_size`: 64 on a CPU).
    dtype : {"float16", "float32"}
        How the shards hold the rows.
    progress : callable, optional
        ``progress(fraction, text)``, told after each shard.
    overwrite : bool
        A changed folder, encoder or setting is refused unless this is set (which embeds
        everything afresh).

    Returns
    -------
    GalleryStore
        ``(G, d)`` rows, one per acceptable image, with its ``build_report``.
    """
    planned = plan_folder_store(folder, encoder.name, encoder.dim, labels_csv, shard_rows, dtype)
    batch = image_batch_size(encoder.device) if batch_size is None else batch_size
    return build_store(
        out, planned.plan, lambda keys: embed_files(planned.root, keys, encoder, batch),
        labels=planned.labels, progress=progress, overwrite=overwrite)

