"""2-D layouts: a UMAP of the gallery under a geometry (:func:`geometry_layout`) and the cache key
of one (:func:`layout_key`). UMAP is imported (through :mod:`anchordiv.projection`) only when used."""
from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import numpy as np
import torch

from ..search import AnchorIndex
from .geometry import baseline_index

if TYPE_CHECKING:
    from .gallery import Gallery
    from .geometry import ExplorerGeometry


def layout_key(*parts: object) -> str:
    """A stable text key from the parts a layout depends on (anchor lists are hashed)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(repr(part).encode())
        digest.update(b"\0")
    return digest.hexdigest()


def geometry_layout(gallery: Gallery, method: str, geometry: ExplorerGeometry | None = None, p: float = 0.5,
                    balanced: bool = True, iti_anchors: torch.Tensor | None = None, max_points: int = 10_000,
                    seed: int = 0, n_neighbors: int = 15, cache_key: str | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """UMAP layout of (a fixed sample of at most ``max_points``) gallery images under ``method``
    ("anchor" with ``geometry`` at ``p``, "cosine" or "iti"): ``(ids (n,), xy (n, 2))``.

    The kNN graph is the geometry's exact top-``n_neighbors``; with ``cache_key`` the layout is
    stored on disk (see :func:`anchordiv.projection.cached_layout`)."""
    from .. import projection

    ids = projection.sample_ids(len(gallery), max_points, seed)
    embeddings = gallery.embeddings[torch.as_tensor(ids)]
    if method == "anchor":
        if geometry is None:
            raise ValueError("an anchor layout needs a geometry")
        index = AnchorIndex(geometry.model_at(p, balanced), embeddings, reverse=geometry.spec.reverse, device="cpu")
    else:
        index = baseline_index(method, embeddings, iti_anchors)

    def build() -> np.ndarray:
        return projection.layout(index, embeddings, n_neighbors=n_neighbors, seed=seed)

    if cache_key is None:
        return ids, build()
    return ids, projection.cached_layout(
        f"{cache_key}|{method}|{max_points}|{seed}|{n_neighbors}|{projection.DEFAULT_EPOCHS}", build)
