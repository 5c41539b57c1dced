"""Query images: an upload (:func:`query_image_from_upload`), the first query the explorer
opens on (:func:`default_query_id`), a random draw of another (:func:`another_item`), and the names
a menu of gallery items shows, each telling its item apart (:func:`distinct_captions`)."""
from __future__ import annotations

import io
from collections import defaultdict
from typing import Any, Protocol, Sequence

import numpy as np
import pandas as pd
from PIL import Image

from ..gallery import Gallery
from .literal import shown
from .widget_values import is_whole_in


class Labelled(Protocol):
    """What names and labels a gallery's items: a :class:`~anchordiv.explorer.source.GallerySource`."""

    def caption(self, item: int) -> str: ...

    def labels_of(self, item: int | None) -> Any: ...


def query_image_from_upload(data: bytes, name: str = "upload") -> Image.Image:
    """An uploaded query image (PNG, JPEG or WebP) as RGB PIL; ``ImageLoadError`` (a ``ValueError``)
    with a message for the user for anything else, corrupt or truncated files included."""
    from ..images import ImageLoadError, load_image

    image = load_image(data, name=name)  # refuses non-images, damaged data, oversized files
    with Image.open(io.BytesIO(data)) as header:
        if header.format not in ("PNG", "JPEG", "WEBP"):
            raise ImageLoadError(name, f"{header.format} images are not accepted as queries; upload a PNG, JPEG or WebP")
    return image


def default_query_id(gallery: Gallery, name: str = "dog", style: str = "watercolor painting") -> int:
    """A sensible first query: the first image whose name contains ``name`` in ``style`` (then any
    style, then any image), so the app opens on something recognisable."""
    names = gallery.labels[gallery.name_column].astype(str).str.lower()
    matches = names.str.contains(name, regex=False).to_numpy()
    if gallery.style_column is not None:
        styled = matches & (gallery.labels[gallery.style_column].astype(str) == style).to_numpy()
        if styled.any():
            return int(np.flatnonzero(styled)[0])
    return int(np.flatnonzero(matches)[0]) if matches.any() else 0


def another_item(n_items: int, current: int | None, rng: np.random.Generator) -> int:
    """A gallery id drawn uniformly from the ``n_items`` other than ``current`` (the query shown;
    ``None`` or an id out of range: from all of them). A draw of the query itself would leave the
    page as it was, a click of "Random image" that seems to do nothing (one in 96 on the held-out
    world). A gallery of one item has only that item to give."""
    if n_items < 1:
        raise ValueError(f"n_items={n_items!r}: a gallery has at least one item")
    shown_id = current if is_whole_in(current, 0, n_items) else None
    if shown_id is None or n_items == 1:
        return int(rng.integers(n_items))
    drawn = int(rng.integers(n_items - 1))
    return drawn + int(drawn >= shown_id)


def distinct_captions(source: Labelled, items: Sequence[int]) -> list[str]:
    """The captions of ``items`` for one menu, no two reading the same.

    An item whose caption (as :func:`~anchordiv.explorer.literal.shown` draws it) no other item of
    the menu shares keeps it as is. Items sharing one get, before it, the labels that differ among
    them (column and value, e.g. the emoji world's ``source``) and their gallery id, e.g.
    ``"source twitter, #6711: dog face · pencil sketch"``: the id alone would tell them apart, the
    labels tell a reader how. They come first because a narrow menu cuts a long option's end, and
    what it cut was all that told two options apart.

    Parameters
    ----------
    source : Labelled
        A :class:`~anchordiv.explorer.source.GallerySource`: what names the items (``caption``)
        and labels them (``labels_of``).
    items : sequence of int
        Gallery ids, in menu order.

    Returns
    -------
    list of str
        One caption per item, in the order of ``items``; plain (outside) text, to be drawn literally.
    """
    items = [int(item) for item in items]
    captions = [source.caption(item) for item in items]
    sharing: dict[str, list[int]] = defaultdict(list)
    for item, caption in zip(items, captions):
        sharing[shown(caption)].append(item)
    told_apart: dict[int, str] = {}
    for group in sharing.values():
        if len(group) > 1:
            told_apart |= _tell_apart(source, group)
    return [f"{told_apart[item]}: {caption}" if item in told_apart else caption
            for item, caption in zip(items, captions)]


def _tell_apart(source: Labelled, group: list[int]) -> dict[int, str]:
    """For items whose captions read the same: each item's labels that differ within ``group`` and
    its gallery id, e.g. ``{6710: "source google, #6710", 6711: "source twitter, #6711"}``."""
    labels = {item: _label_values(source.labels_of(item)) for item in group}
    columns = [column for column in labels[group[0]]
               if len({labels[item].get(column) for item in group}) > 1]
    return {item: ", ".join([*(f"{column} {labels[item][column]}" for column in columns), f"#{item}"])
            for item in group}


def _label_values(labels: Any) -> dict[str, str]:
    """An item's labels (:meth:`GallerySource.labels_of`: a row, a store's one label, or ``None``)
    as ``{column: value}`` text."""
    if labels is None:
        return {}
    if isinstance(labels, pd.Series):
        return {str(column): str(value) for column, value in labels.items()}
    return {"label": str(labels)}
