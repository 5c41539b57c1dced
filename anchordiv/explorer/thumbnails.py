"""A store's images, read from its source folder for the items a page shows, and only those
(:func:`store_thumbnails`); a placeholder naming the item where there is none."""
from __future__ import annotations

import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from PIL import Image, ImageDraw

from ..images import load_image
from .paths import DataRoots

if TYPE_CHECKING:
    from ..store import GalleryStore

THUMBNAIL_SIZE = 96


def thumbnail_path(store: GalleryStore, item: int, roots: DataRoots) -> Path | None:
    """The image file of ``item``: the store's source folder joined with its labels' ``path``,
    resolved and inside both that folder and the data roots; ``None`` when there is none (no
    source, no ``path`` column, a missing file, or a path that leads out)."""
    if store.source is None or store.labels is None or "path" not in store.labels.columns:
        return None
    try:
        source = roots.confine(store.source, "the store's image folder")
        path = roots.confine(source / str(store.labels["path"].iat[int(item)]), "thumbnail")
    except ValueError:
        return None
    return path if path.is_relative_to(source) else None


def read_thumbnail(path: Path, size: int = THUMBNAIL_SIZE) -> Image.Image:
    """The image at ``path`` shrunk to fit ``size`` pixels; ``ImageLoadError`` (a ``ValueError``)
    when it cannot be read."""
    image = load_image(path)
    image.thumbnail((size, size))
    return image


def placeholder(text: str, size: int = THUMBNAIL_SIZE) -> Image.Image:
    """A grey tile with ``text`` on it (up to three short lines): an item without an image."""
    image = Image.new("RGB", (size, size), (225, 225, 225))
    lines = textwrap.wrap(text, width=max(4, size // 7))[:3]
    ImageDraw.Draw(image).multiline_text((4, 4), "\n".join(lines), fill=(60, 60, 60))
    return image


def store_thumbnails(store: GalleryStore, items: Sequence[int], roots: DataRoots, caption: Callable[[int], str],
                     size: int = THUMBNAIL_SIZE) -> list[Image.Image]:
    """One image per item of ``items``, read from disk for these items only; a placeholder naming
    the item (``#id`` and ``caption(item)``) where the store has no image for it or the file cannot be read."""
    images = []
    for item in items:
        path = thumbnail_path(store, item, roots)
        try:
            image = read_thumbnail(path, size) if path is not None else None
        except ValueError:  # ImageLoadError: removed, replaced or damaged since the store was built
            image = None
        images.append(image or placeholder(f"#{int(item)} {caption(item)}", size))
    return images
