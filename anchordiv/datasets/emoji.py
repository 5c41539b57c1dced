"""The emoji world: every kept emoji in every style, with labels, rendered once and cached.

Rows are emoji-major: for each emoji (in ``data/emoji/index.csv`` order) come the two vendor
drawings, then each rendition made from each vendor's drawing (:data:`LAYOUT`).
"""
from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import overload

import numpy as np
import pandas as pd
import PIL
from PIL import Image

from ..cache import cache_dir, cached_array
from .shipped import CELL, DEFAULT_DATA_DIR, SPLITS, VENDORS, ShippedEmoji, read_shipped
from .styles import RENDERER_VERSION, RENDITIONS, STYLES, render, style_seed

CHOICES: tuple[str, ...] = ("all",) + SPLITS
LABEL_COLUMNS: tuple[str, ...] = ("emoji_id", "name", "subcategory", "category", "style", "source", "split")
# (style, source vendor) of each image of one emoji, in row order.
LAYOUT: tuple[tuple[str, str], ...] = tuple((vendor, vendor) for vendor in VENDORS) + tuple(
    (style, vendor) for style in RENDITIONS for vendor in VENDORS
)
# Below this many emoji, starting worker processes costs more than it saves.
_PARALLEL_MIN = 64


class EmojiImages(Sequence):
    """Read-only sequence of RGB PIL images over a uint8 (n, H, W, 3) array, made on access."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def __len__(self) -> int:
        return len(self._array)

    @overload
    def __getitem__(self, item: int) -> Image.Image: ...
    @overload
    def __getitem__(self, item: slice) -> list[Image.Image]: ...

    def __getitem__(self, item: int | slice) -> Image.Image | list[Image.Image]:
        if isinstance(item, slice):
            return [self[i] for i in range(*item.indices(len(self)))]
        return Image.fromarray(np.asarray(self._array[item]), "RGB")


@dataclass(frozen=True)
class EmojiWorld:
    """One split of the emoji world.

    ``array`` is uint8 (n, 64, 64, 3) RGB (a read-only memory map for ``split="all"``);
    ``labels`` has one row per image with :data:`LABEL_COLUMNS`, where ``source`` is the vendor
    whose drawing the image was made from; ``styles`` lists every style label in row order;
    ``digest`` is the sha256 of the shipped data's manifest, which pins every file.
    """

    array: np.ndarray
    labels: pd.DataFrame
    styles: tuple[str, ...]
    digest: str

    @property
    def images(self) -> EmojiImages:
        """The rows of ``array`` as RGB PIL images."""
        return EmojiImages(self.array)

    @property
    def names(self) -> list[str]:
        """Distinct emoji names in this split, in row order."""
        return self.labels["name"].drop_duplicates().tolist()

    @property
    def heldout_names(self) -> list[str]:
        """Names of the emoji held out of training (whatever this split is)."""
        return self.labels.loc[self.labels["split"] == "heldout", "name"].drop_duplicates().tolist()

    def __len__(self) -> int:
        return len(self.array)


def load_emoji_world(split: str = "all", data_dir: Path | str | None = None) -> EmojiWorld:
    """The emoji world for ``split`` ("all", "train" or "heldout"), rendering and caching it if needed.

    ``data_dir`` defaults to the repository's ``data/emoji``; its files are verified against
    their recorded hashes on every call. Renderings live in ``cache_dir() / "emoji_world"``
    and are rebuilt whenever the shipped data, the renderer version or numpy/Pillow change.
    """
    view = open_emoji_world(split, data_dir)
    shipped = view.shipped
    key = "|".join([shipped.digest, f"renderer={RENDERER_VERSION}", f"numpy={np.__version__}", f"pillow={PIL.__version__}"])
    # Named by the data's digest, so checkouts of different data versions do not evict each
    # other, while a renderer or library change rebuilds the file in place.
    path = cache_dir() / "emoji_world" / f"images-{shipped.digest[:16]}.npy"
    array = cached_array(path, key, lambda: render_world(shipped))
    return EmojiWorld(array=array if split == "all" else array[view.rows], labels=view.labels, styles=STYLES,
                      digest=shipped.digest)


class EmojiWorldView:
    """One split of the emoji world without rendering it: its labels, the data's ``digest``, and
    each image drawn when asked for (:meth:`image`). A first start shows 20 images of 19,728, and
    rendering them all takes half a minute on 2 cores.

    ``rows`` ``(n,)`` are the split's row numbers in the whole world ("all" order), for indexing
    arrays made for the whole world; ``shipped`` is the verified data it draws from.
    ``image(i)`` equals ``load_emoji_world(split).array[i]``.
    """

    def __init__(self, shipped: ShippedEmoji, split: str, cached_images: int = 4096):
        labels = world_labels(shipped.index)
        keep = np.ones(len(labels), bool) if split == "all" else (labels["split"] == split).to_numpy()
        self.rows: np.ndarray = np.flatnonzero(keep)
        self.labels: pd.DataFrame = labels[keep].reset_index(drop=True)
        self.shipped = shipped
        self._sprites: np.ndarray | None = None
        self._sprites_lock = threading.Lock()
        # Rendered images are kept (about 12 KB each), so a page drawn again costs nothing.
        self._render = lru_cache(maxsize=cached_images)(self._render_row)

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def digest(self) -> str:
        """The sha256 of the shipped data's manifest, which pins every file."""
        return self.shipped.digest

    def image(self, item: int) -> np.ndarray:
        """Image ``item`` of this split as uint8 ``(CELL, CELL, 3)`` RGB (read-only)."""
        if not 0 <= int(item) < len(self.rows):
            raise IndexError(f"image {item} is outside this split of {len(self.rows)} images")
        return self._render(int(self.rows[int(item)]))

    def _render_row(self, row: int) -> np.ndarray:
        emoji = row // len(LAYOUT)
        image = render_layout(self.shipped.index["emoji_id"].iat[emoji], self._all_sprites()[emoji], row % len(LAYOUT))
        image.flags.writeable = False
        return image

    def _all_sprites(self) -> np.ndarray:
        """Every vendor's sprites ``(n_emoji, vendors, CELL, CELL, 4)``, decoded once (about half a second)."""
        with self._sprites_lock:
            if self._sprites is None:
                self._sprites = np.stack([self.shipped.sprites(vendor) for vendor in VENDORS], axis=1)
            return self._sprites


def open_emoji_world(split: str = "all", data_dir: Path | str | None = None) -> EmojiWorldView:
    """The emoji world for ``split`` with images rendered on request (see :class:`EmojiWorldView`);
    the shipped files are verified as by :func:`load_emoji_world`, which renders (and caches) all."""
    if split not in CHOICES:
        raise ValueError(f"split={split!r} is not one of {list(CHOICES)}")
    return EmojiWorldView(read_shipped(Path(data_dir) if data_dir is not None else DEFAULT_DATA_DIR), split)


def world_labels(index: pd.DataFrame) -> pd.DataFrame:
    """One label row per image of the world built from ``index``, in row order (see :data:`LAYOUT`)."""
    rows = index.loc[index.index.repeat(len(LAYOUT))].reset_index(drop=True)
    rows["style"] = [style for style, _ in LAYOUT] * len(index)
    rows["source"] = [source for _, source in LAYOUT] * len(index)
    return rows.loc[:, list(LABEL_COLUMNS)]


def render_world(shipped: ShippedEmoji) -> np.ndarray:
    """Every emoji of ``shipped`` in every (style, source) of :data:`LAYOUT`: uint8 (n * len(LAYOUT), CELL, CELL, 3)."""
    sprites = np.stack([shipped.sprites(vendor) for vendor in VENDORS], axis=1)  # (n, vendors, CELL, CELL, 4)
    ids = shipped.index["emoji_id"].tolist()
    workers = min(os.cpu_count() or 1, 8)
    if len(ids) < _PARALLEL_MIN or workers == 1:
        return render_emoji(ids, sprites)
    chunks = np.array_split(np.arange(len(ids)), workers * 4)
    with ProcessPoolExecutor(workers) as pool:
        parts = pool.map(render_emoji, [[ids[i] for i in chunk] for chunk in chunks], [sprites[chunk] for chunk in chunks])
        return np.concatenate(list(parts))


def render_emoji(ids: list[str], sprites: np.ndarray) -> np.ndarray:
    """Render emoji ``ids`` with their sprites (len(ids), vendors, CELL, CELL, 4) in :data:`LAYOUT` order.

    Returns uint8 (len(ids) * len(LAYOUT), CELL, CELL, 3).
    """
    out = np.empty((len(ids), len(LAYOUT), CELL, CELL, 3), np.uint8)
    for i, emoji_id in enumerate(ids):
        for j in range(len(LAYOUT)):
            out[i, j] = render_layout(emoji_id, sprites[i], j)
    return out.reshape(-1, CELL, CELL, 3)


def render_layout(emoji_id: str, sprites: np.ndarray, position: int) -> np.ndarray:
    """Image ``position`` of :data:`LAYOUT` for one emoji, from its sprites ``(vendors, CELL, CELL, 4)``:
    uint8 ``(CELL, CELL, 3)``, the same whichever other images are rendered."""
    style, source = LAYOUT[position]
    return render(style, sprites[VENDORS.index(source)], style_seed(emoji_id, source, style))
