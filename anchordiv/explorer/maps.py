"""2-D maps of a gallery: a UMAP of a fixed sample of its rows under a geometry
(:func:`geometry_projection`), the cache key of one (:func:`projection_key`), and the roles its
points play in a plot (:func:`point_roles`, :func:`outside_sample`). UMAP itself is imported (by
:mod:`anchordiv.projection`) only when used."""
from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Protocol, Sequence

import numpy as np
import torch

from .. import projection
from ..search import AnchorIndex
from .geometry import baseline_index

if TYPE_CHECKING:
    from .geometry import ExplorerGeometry


class Rows(Protocol):
    """What a map is drawn from: ``len(rows)`` items, and ``rows.rows(ids)`` their embeddings
    ``(n, d)`` float32 (a :class:`~anchordiv.gallery.Gallery` or any
    :class:`~anchordiv.explorer.source.GallerySource`)."""

    def __len__(self) -> int: ...

    def rows(self, ids: np.ndarray) -> torch.Tensor: ...


def projection_key(*parts: object) -> str:
    """A stable text key from the parts a projection depends on (anchor lists are hashed)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(repr(part).encode())
        digest.update(b"\0")
    return digest.hexdigest()


def geometry_projection(gallery: Rows, method: str, geometry: ExplorerGeometry | None = None, p: float = 0.5,
                        weighting: str = "calibrated", iti_anchors: torch.Tensor | None = None, max_points: int = 10_000,
                        seed: int = 0, n_neighbors: int = 15, cache_key: str | None = None
                        ) -> tuple[np.ndarray, np.ndarray]:
    """UMAP projection of a fixed seeded sample of at most ``max_points`` rows of ``gallery`` under
    ``method`` ("anchor" with ``geometry`` at ``p``, "cosine" or "iti"): ``(ids (n,), xy (n, 2))``,
    as :func:`project_rows` lays out their embeddings. Only the sample's rows are read."""
    ids = projection.sample_ids(len(gallery), max_points, seed)
    return ids, project_rows(gallery.rows(ids), method, geometry, p, weighting, iti_anchors, seed, n_neighbors,
                             cache_key)


def project_rows(embeddings: torch.Tensor, method: str, geometry: ExplorerGeometry | None = None, p: float = 0.5,
                 weighting: str = "calibrated", iti_anchors: torch.Tensor | None = None, seed: int = 0,
                 n_neighbors: int = 15, cache_key: str | None = None) -> np.ndarray:
    """UMAP layout ``xy`` ``(n, 2)`` of ``embeddings`` ``(n, d)`` under ``method`` ("anchor" with
    ``geometry`` at ``p``, "cosine" or "iti").

    The kNN graph is the geometry's exact top-``n_neighbors`` among these rows; with ``cache_key``
    (naming the rows and the geometry) the layout is stored on disk (see
    :func:`anchordiv.projection.cached_projection`)."""
    if method == "anchor":
        if geometry is None:
            raise ValueError("an anchor projection needs a geometry")
        index = AnchorIndex(geometry.model_at(p, weighting), embeddings, reverse=geometry.spec.reverse,
                            device=geometry.device)
    else:
        index = baseline_index(method, embeddings, iti_anchors, device=None if geometry is None else geometry.device)

    def build() -> np.ndarray:
        return projection.project(index, embeddings, n_neighbors=n_neighbors, seed=seed)

    if cache_key is None:
        return build()
    return projection.cached_projection(
        f"{cache_key}|{method}|{len(embeddings)}|{seed}|{n_neighbors}|{projection.DEFAULT_EPOCHS}", build)


def point_roles(ids: np.ndarray, query_id: int | None, neighbour_ids: Sequence[int]) -> np.ndarray:
    """``(n,)`` the role of each projected id: "query", "neighbour" or "gallery"."""
    ids = np.asarray(ids)
    return np.where(ids == query_id, "query",
                    np.where(np.isin(ids, np.asarray(list(neighbour_ids), dtype=np.int64)), "neighbour", "gallery"))


def outside_sample(ids: np.ndarray, query_id: int | None, neighbour_ids: Sequence[int]) -> int:
    """How many of the query and its neighbours are not among the projected ``ids``."""
    shown = set(np.asarray(ids).tolist())
    wanted = ({query_id} if query_id is not None else set()) | set(neighbour_ids)
    return len(wanted - shown)
