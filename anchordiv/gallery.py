"""Galleries: image embeddings with labels and a way to show each image, from the built-in emoji
world (:func:`world_gallery`) or a folder of images (:func:`folder_gallery`). Used by the explorer,
the reproduction and the command line."""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import torch
from PIL import Image

from .name_match import rank_matches, search_key
from .progress import ProgressCallback


@dataclass
class Gallery:
    """Image embeddings with labels and a way to show each image.

    ``embeddings`` ``(G, d)`` float32 CPU tensor, unit rows; ``labels`` has ``G`` rows.
    ``object_column`` / ``style_column`` say which label columns define "same object" and
    "same style" (``style_column`` may be ``None``); ``name_column`` is shown to people.
    ``key`` identifies the content (encoder and data), for cache keys. ``skipped`` lists
    ``(path, reason)`` for files that could not be read; ``unlabelled`` the images a labels CSV has
    no row for (they keep their folder label).
    """

    embeddings: torch.Tensor
    labels: pd.DataFrame
    load: Callable[[int], Image.Image]
    object_column: str
    name_column: str
    style_column: str | None
    key: str
    description: str
    skipped: list[tuple[str, str]] = field(default_factory=list)
    unlabelled: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.embeddings.shape[0])

    def rows(self, ids: np.ndarray) -> torch.Tensor:
        """The embeddings ``(n, d)`` of images ``ids`` ``(n,)``."""
        return self.embeddings[torch.as_tensor(np.asarray(ids, dtype=np.int64))]

    def image(self, item: int) -> Image.Image:
        """Gallery image ``item`` as RGB PIL."""
        return self.load(int(item))

    def caption(self, item: int) -> str:
        """``"name · style"`` (style when known) for image ``item``."""
        return self.captions[int(item)]

    @cached_property
    def captions(self) -> np.ndarray:
        """Every image's caption (:meth:`caption`), built once: an object array ``(G,)`` of ``str``.
        A missing label (an image a labels CSV has no row for keeps its folder, but has no style)
        is left out, never written as "nan"."""
        names = self.labels[self.name_column].map(label_text)
        if self.style_column:
            styles = self.labels[self.style_column].map(label_text)
            names = pd.Series([f"{name} · {style}" if style else name for name, style in zip(names, styles)])
        return names.to_numpy(dtype=object)

    @cached_property
    def label_arrays(self) -> dict[str, np.ndarray]:
        """Each label column as a NumPy array ``(G,)``, made once: a page's few rows are read from
        them without building pandas rows on every move of p."""
        return {column: self.labels[column].to_numpy() for column in self.labels.columns}

    @cached_property
    def search_keys(self) -> tuple[np.ndarray, pd.Series]:
        """Every image's name and caption as a search compares them
        (:func:`~anchordiv.name_match.search_key`), made once: ``(names (G,), captions (G,))``."""
        names = self.labels[self.name_column].map(label_text)
        return (np.array([search_key(name) for name in names], dtype=object),
                pd.Series([search_key(caption) for caption in self.captions], dtype=object))

    def find(self, text: str, limit: int = 200) -> list[int]:
        """Gallery ids whose caption contains ``text`` (case-insensitive), best first (an exact name,
        then a caption starting with ``text``, then one with a word starting with it, then the rest;
        ties by the shorter name, then the smaller id: :mod:`anchordiv.name_match`), at most ``limit``."""
        needle = search_key(text)
        if not needle:
            return []
        names, captions = self.search_keys
        hits = np.flatnonzero(captions.str.contains(needle, regex=False).to_numpy(dtype=bool))
        return rank_matches(needle, hits, names[hits], captions.iloc[hits].tolist(), limit)


def _encode_in_chunks(encoder, images: Callable[[int], Image.Image], count: int,
                      progress: ProgressCallback | None, chunk: int = 512) -> np.ndarray:
    """``(count, d)`` float32 embeddings of ``images(i)``, reporting progress per chunk."""
    parts = []
    for start in range(0, count, chunk):
        stop = min(start + chunk, count)
        parts.append(encoder.encode_images([images(i) for i in range(start, stop)]).numpy())
        if progress is not None:
            progress(stop / count, f"Embedding the gallery: {stop:,} / {count:,} images")
    return np.concatenate(parts) if parts else np.zeros((0, encoder.dim), np.float32)


# Below one image in this many of a split, drawing the images one by one beats rendering the whole world.
FEW_IMAGES_SHARE = 8


def embed_world(encoder, split: str = "all", limit: int | None = None,
                progress: ProgressCallback | None = None) -> np.ndarray:
    """The first ``limit`` images of the emoji world's ``split`` embedded with ``encoder``: float16
    ``(n, d)``, the precision the world's embeddings are kept in, shipped or cached. For most of the
    split it renders (and caches) the whole world first, which is faster than drawing images one by
    one; for a few it draws just those (the same pixels)."""
    from .datasets.world_embeddings import DTYPE
    from .datasets import load_emoji_world, open_emoji_world

    view = open_emoji_world(split)
    count = len(view) if limit is None else max(1, min(int(limit), len(view)))
    if count * FEW_IMAGES_SHARE < len(view):
        if progress is not None:
            progress(0.0, f"Rendering {count:,} images of the emoji world")
        draw = view.image
    else:
        if progress is not None:
            progress(0.0, "Rendering the emoji world (once per machine)")
        array = load_emoji_world(split).array

        def draw(item: int) -> np.ndarray:
            return np.asarray(array[item])

    return _encode_in_chunks(encoder, lambda item: Image.fromarray(draw(item), "RGB"), count, progress).astype(DTYPE)


def world_gallery(encoder, split: str = "all", limit: int | None = None,
                  progress: ProgressCallback | None = None) -> Gallery:
    """The built-in emoji world (``split`` "all", "train" or "heldout"), first ``limit`` images,
    embedded with ``encoder``. The built-in model's embeddings of the world ship with it
    (:mod:`anchordiv.datasets.world_embeddings`); other encoders' are made by :func:`embed_world`
    and cached on disk by encoder name and data digest, so only a first start encodes images.
    Images are rendered when shown (:class:`~anchordiv.datasets.EmojiWorldView`)."""
    from .datasets.world_embeddings import shipped_world_embeddings
    from .cache import cache_dir, cached_array
    from .datasets import open_emoji_world
    from .datasets.styles import RENDERER_VERSION

    world = open_emoji_world(split)
    count = len(world) if limit is None else max(1, min(int(limit), len(world)))
    labels = world.labels.iloc[:count].reset_index(drop=True)
    key = f"world|{encoder.name}|{world.digest}|renderer={RENDERER_VERSION}|{split}|{count}|float16"
    shipped = shipped_world_embeddings(getattr(encoder, "weights_sha256", None), world.digest)
    if shipped is not None:
        vectors = shipped[world.rows[:count]]
    else:
        path = cache_dir() / "explorer" / f"world-{hashlib.sha256(key.encode()).hexdigest()[:20]}.npy"
        vectors = cached_array(path, key, lambda: embed_world(encoder, split, count, progress))

    def load(item: int) -> Image.Image:
        return Image.fromarray(world.image(item), "RGB")

    return Gallery(
        embeddings=torch.from_numpy(np.array(vectors, dtype=np.float32)), labels=labels, load=load,
        object_column="emoji_id", name_column="name", style_column="style", key=key,
        description=f"Emoji world ({split}, {count:,} images)",
    )


def label_columns(labels_csv: str | os.PathLike | None = None, name: str = "labels CSV") -> list[str]:
    """The label columns :func:`folder_gallery` gives a folder with this labels CSV: ``path``,
    ``label`` and the CSV's own columns (its header only is parsed, so this is quick).
    Raises ``ValueError`` naming the CSV (as ``name`` calls it) when it cannot be read."""
    from .embeddings import read_csv_file

    columns = ["path", "label"]
    if labels_csv is None:
        return columns
    header = read_csv_file(Path(labels_csv).expanduser(), f"{name} {str(labels_csv)!r}", nrows=0).columns
    return columns + [str(column) for column in header if column not in columns]


def folder_gallery(folder: str | os.PathLike, encoder, labels_csv: str | os.PathLike | None = None) -> Gallery:
    """A folder of images (subfolders are object labels; a CSV may add columns, e.g. ``style``),
    embedded with ``encoder`` through :func:`anchordiv.embeddings.embed_folder` and its cache.
    Raises ``ValueError`` for a missing folder or one with no readable image."""
    from .embeddings import embed_folder
    from .images import display_name, load_image

    root = Path(folder).expanduser()
    embedded = embed_folder(root, encoder, labels_csv=labels_csv, progress=False)
    if len(embedded.paths) == 0:
        # The kinds of problem, not the files: a visitor must not get a listing of the folder.
        reasons = sorted({reason for _, reason in embedded.skipped})
        detail = f" ({len(embedded.skipped)} file(s) skipped: {'; '.join(reasons[:3])})" if reasons else ""
        raise ValueError(f"no readable image in {display_name(folder)!r}{detail}; add PNG, JPEG, WebP, GIF or "
                         "BMP images to it")
    labels = embedded.labels.copy()
    labels["label"] = labels["label"].fillna("(top folder)")
    paths, shown = list(embedded.paths), embedded.display_paths
    style = "style" if "style" in labels.columns else None
    # os.fsencode keeps file names that are not UTF-8 (surrogate escapes) hashable as their bytes. The
    # labels are part of the content: the same images with another CSV are another gallery.
    key = f"folder|{embedded.encoder_name}|{embedded.cache_path.name}|{len(paths)}|" + hashlib.sha256(
        b"\n".join(os.fsencode(path) for path in paths)).hexdigest()[:16] + "|labels=" + hashlib.sha256(
        labels.to_csv(index=False).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return Gallery(
        embeddings=embedded.embeddings, labels=labels, load=lambda item: load_image(root / paths[item], name=shown[item]),
        object_column="label", name_column="label", style_column=style, key=key,
        description=f"{display_name(root)} ({len(paths):,} images)", skipped=list(embedded.skipped),
        unlabelled=list(embedded.unlabelled),
    )


def label_text(value: Any) -> str:
    """A label as text: ``""`` where it is missing (NaN, None, ``pd.NA``: an image a labels CSV has
    no row for has no style)."""
    return "" if pd.isna(value) else str(value)
