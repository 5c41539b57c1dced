"""A store's images, read from its source folder for the items a page shows, and only those
(:func:`store_thumbnails`); a placeholder naming the item where there is none. And any source's
thumbnails encoded once for every later page (:class:`EncodedThumbnails`)."""
from __future__ import annotations

import io
import textwrap
import threading
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


class EncodedThumbnails:
    """Thumbnails as PNG bytes, each item encoded once and kept for every later page and visitor.

    ``render(ids, size)`` gives the images of items ``ids`` (a source's ``thumbnails``); each is
    shrunk to fit ``size`` pixels and encoded on its first request only, so a page that shows it
    again sends the kept bytes (Streamlit serves bytes as they are, where it encodes an image on
    every run). At most ``max_bytes`` are kept in memory: past that the oldest go first. With a
    ``folder`` (for a gallery whose key names its content), each encoding is also written there and
    read back by a later server, which then draws its first page without rendering any image; a
    file that is not a readable PNG is rendered again and replaced. Safe to share across threads:
    lookups take no lock; a lock guards only the insertion of newly encoded items.
    """

    def __init__(self, render: Callable[[Sequence[int], int], list[Image.Image]], max_bytes: int = 64 * 2**20,
                 folder: Path | None = None):
        self._render = render
        self._max_bytes = max_bytes
        self._folder = folder
        self._kept: dict[tuple[int, int], bytes] = {}
        self._size = 0
        self._insert = threading.Lock()

    def __call__(self, ids: Sequence[int], size: int = THUMBNAIL_SIZE) -> list[bytes]:
        """The PNG bytes of each item of ``ids``, in order."""
        keys = [(int(item), int(size)) for item in ids]
        found = [self._kept.get(key) for key in keys]
        missing = list(dict.fromkeys(key for key, data in zip(keys, found) if data is None))
        if not missing:
            return found
        fresh = {key: data for key in missing if (data := self._read(key)) is not None}
        rendered = [key for key in missing if key not in fresh]
        if rendered:
            images = self._render([item for item, _ in rendered], size)
            for key, image in zip(rendered, images):
                fresh[key] = png_bytes(image, size)
                self._write(key, fresh[key])
        self._keep(fresh)
        return [data if data is not None else fresh[key] for key, data in zip(keys, found)]

    def _keep(self, fresh: dict[tuple[int, int], bytes]) -> None:
        with self._insert:
            for key, data in fresh.items():
                if key not in self._kept:
                    self._kept[key] = data
                    self._size += len(data)
            while self._size > self._max_bytes and len(self._kept) > len(fresh):
                self._size -= len(self._kept.pop(next(iter(self._kept))))

    def _path(self, key: tuple[int, int]) -> Path:
        return self._folder / f"{key[0]}-{key[1]}.png"

    def _read(self, key: tuple[int, int]) -> bytes | None:
        """The kept file of ``key`` when it is a readable PNG, else ``None``."""
        if self._folder is None:
            return None
        try:
            data = self._path(key).read_bytes()
            with Image.open(io.BytesIO(data)) as image:
                image.verify()
                return data if image.format == "PNG" else None
        except (OSError, SyntaxError, ValueError):  # missing, unreadable, truncated or not an image
            return None

    def _write(self, key: tuple[int, int], data: bytes) -> None:
        """Keep ``data`` in the folder (written whole, then renamed into place); a folder that cannot
        be written only means a later server renders the image again."""
        if self._folder is None:
            return
        try:
            self._folder.mkdir(parents=True, exist_ok=True)
            partial = self._folder / f".{key[0]}-{key[1]}.{threading.get_ident()}.part"
            partial.write_bytes(data)
            partial.replace(self._path(key))
        except OSError:
            pass


def png_bytes(image: Image.Image, size: int = THUMBNAIL_SIZE) -> bytes:
    """``image`` shrunk to fit ``size`` pixels (never enlarged), as PNG bytes."""
    image = image.copy()
    image.thumbnail((size, size))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
