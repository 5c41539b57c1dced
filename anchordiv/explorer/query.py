"""Query images: an upload (:func:`query_image_from_upload`) and the first query the explorer
opens on (:func:`default_query_id`)."""
from __future__ import annotations

import io

import numpy as np
from PIL import Image

from ..gallery import Gallery


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
