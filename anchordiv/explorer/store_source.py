"""The explorer on a gallery store (docs/design.md §7, §11): a :class:`~anchordiv.store.GalleryStore` of
10^5 - 10^6 items, opened for a page that must stay fast on every run.

* :class:`StoreGallery` opens a store for a chosen encoder (its name and dimension must match) and
  carries what the page asks per item: a name (:meth:`~StoreGallery.caption`), a label, a vector.
* :class:`NameIndex` finds items by name: built once (sorted names for prefix matches by bisection,
  one joined text for substring matches by ``str.find``), so a search never loops in Python over
  every name.
* :class:`StoreGeometry`: anchor sets A and B fitted as :class:`~anchordiv.explorer.ExplorerGeometry`
  does, balanced and calibrated on a fixed sample of the store (the whole store at float32 would be
  2 GB at 10^6 x 512), with one :class:`~anchordiv.ShardedAnchorIndex` over the whole store and the
  certified ``p`` slider (docs/design.md §10).
* :func:`cosine_top_k`: the cosine baseline over the store, block by block.
* :func:`store_thumbnails`: images read from the store's source folder for the shown items only;
  a placeholder naming the item where there is none.
* :func:`store_projection` and :func:`store_projection_frame`: UMAP of a fixed sample.
"""
from __future__ import annotations

import bisect
import hashlib
import os
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import torch
from PIL import Image, ImageDraw

from .._validation import as_matrix, unit_rows
from ..images import load_image
from ..projection import sample_ids
from ..search import check_top_k, exclusion_matrix, merge_top_k, top_k_inner_product
from ..sharded import SCAN_BLOCK_ELEMENTS, ShardedAnchorIndex
from ..slider import MixtureSlider
from ..store import MANIFEST, GalleryStore
from .anchors import MAX_ANCHORS, anchor_presets
from .geometry import ExplorerGeometry, GeometrySpec
from .paths import DataRoots
from .projection import point_roles, project_rows

# Rows the mixture is balanced and calibrated on (as the store benchmark does, docs/design.md §11).
CALIBRATION_ROWS = 20_000
# Rows of the fixed UMAP sample: a layout of 3,000 points takes a few seconds on 2 cores.
PROJECTION_ROWS = 3_000
# Matches a name search returns: a menu longer than this is not read by anyone.
SEARCH_LIMIT = 200
THUMBNAIL_SIZE = 96


# -- names ------------------------------------------------------------------------------------
class NameIndex:
    """Case-insensitive search over ``G`` item names, built once.

    The lower-cased names are kept sorted (a prefix is a range found by bisection, ``O(log G)``)
    and joined, one per line, into one text: a substring is found by ``str.find`` (a scan in C)
    and mapped to its item by a binary search over the line starts, stopping after ``limit`` hits.
    So a search costs ``O(log G + limit)`` Python steps, never a loop over every name.
    """

    def __init__(self, names: Sequence[str]):
        # A line break in a name would split its line; no search text holds one (see _needle).
        lowered = [str(name).lower().replace("\n", " ") for name in names]
        self.names = [str(name) for name in names]
        order = sorted(range(len(lowered)), key=lowered.__getitem__)
        self._sorted = [lowered[item] for item in order]
        self._sorted_items = np.asarray(order, dtype=np.int64)
        self._text = "\n".join(lowered) + "\n"
        self._starts = np.cumsum([0] + [len(name) + 1 for name in lowered], dtype=np.int64)

    def __len__(self) -> int:
        return len(self.names)

    def find(self, text: str, limit: int = SEARCH_LIMIT) -> list[int]:
        """Items whose name starts with ``text`` (in name order), then those containing it (in item
        order), at most ``limit``, case-insensitive; empty for a blank ``text``."""
        needle = _needle(text)
        if not needle:
            return []
        first = bisect.bisect_left(self._sorted, needle)
        found: dict[int, None] = {}
        for position in range(first, min(first + limit, len(self._sorted))):
            if not self._sorted[position].startswith(needle):
                break
            found[int(self._sorted_items[position])] = None
        at = 0
        while len(found) < limit:
            at = self._text.find(needle, at)
            if at < 0:
                break
            item = int(np.searchsorted(self._starts, at, side="right")) - 1
            found.setdefault(item, None)
            at = int(self._starts[item + 1])  # on to the next name: one hit per item
        return list(found)


def _needle(text: str) -> str:
    return " ".join(str(text).split()).lower()


def store_names(store: GalleryStore) -> tuple[list[str], str | None]:
    """``(names (G,), label column or None)``: each row's name (its file ``path``, else the labels'
    first column, else ``#id``) and the column whose equality means "same object" (``label``)."""
    labels = store.labels
    if labels is None or labels.empty or len(labels.columns) == 0:
        return [f"#{item}" for item in store.ids.tolist()], None
    column = "path" if "path" in labels.columns else labels.columns[0]
    label = "label" if "label" in labels.columns else None
    return labels[column].astype(str).tolist(), label


# -- the store as the explorer sees it ------------------------------------------------------------
def store_stamp(folder: str | Path) -> tuple[tuple[str, int, int, int], ...]:
    """``(name, size, modification ns, inode)`` of each file in the store folder: a cache of opened
    stores keyed by it opens the store afresh once any of its files is rewritten or edited in place
    (the index then checks the shards' sha256 again, and names any that changed), instead of
    refusing every search with the index built on the old files."""
    try:
        with os.scandir(folder) as entries:
            return tuple(sorted((entry.name, info.st_size, info.st_mtime_ns, info.st_ino)
                                for entry in entries if entry.is_file() for info in [entry.stat()]))
    except OSError:
        return ()


@dataclass(frozen=True)
class StoreGallery:
    """A store opened for one encoder, with its name index: what the explorer's store page uses.

    ``key`` identifies the content (the manifest's sha256, which covers every file's sha256 and the
    encoder, and the files as they were when opened: :func:`store_stamp`), for cache keys and
    links, so that nothing cached over a store is used once one of its files has changed;
    ``label_column`` the labels' column of "same object", or ``None``.
    """

    store: GalleryStore
    key: str
    names: NameIndex
    label_column: str | None

    @classmethod
    def open(cls, folder: str | Path, encoder_name: str, dim: int) -> "StoreGallery":
        """The store in ``folder`` (manifest and file headers checked), for an encoder called
        ``encoder_name`` of dimension ``dim``; ``ValueError`` naming the fix when it cannot be read
        or was embedded by another model. Builds the name index (once per store: cache the result)."""
        try:
            store = GalleryStore.open(folder)
            digest = hashlib.sha256((store.directory / MANIFEST).read_bytes()).hexdigest()[:20]
        except OSError as error:  # unreadable (permissions, a vanished disk): GalleryStore.open checks content only
            raise ValueError(f"the store {Path(folder).name!r} cannot be read ({error.strerror or error}); check that "
                             "this server may read its files") from error
        if store.encoder is not None and store.encoder != encoder_name:
            raise ValueError(f"the store {Path(folder).name!r} was embedded with {store.encoder!r} but the chosen "
                             f"model is {encoder_name!r}; choose that model in the sidebar, or embed the images "
                             "again with this one")
        if store.dim != dim:
            raise ValueError(f"the store {Path(folder).name!r} holds vectors of dimension {store.dim} but the chosen "
                             f"model gives {dim}; choose the model the store was embedded with")
        names, label = store_names(store)
        files = hashlib.sha256(repr(store_stamp(store.directory)).encode()).hexdigest()[:12]
        return cls(store, f"store|{store.encoder}|{len(store)}|{digest}|{files}", NameIndex(names), label)

    def __len__(self) -> int:
        return len(self.store)

    @property
    def description(self) -> str:
        return f"gallery store {self.store.directory.name!r} ({len(self):,} items, {self.store.dtype})"

    def caption(self, item: int) -> str:
        return self.names.names[int(item)]

    def find(self, text: str, limit: int = SEARCH_LIMIT) -> list[int]:
        return self.names.find(text, limit)

    def label(self, item: int | None) -> str | None:
        """The label of ``item`` (``None`` without a label column or an item)."""
        if item is None or self.label_column is None:
            return None
        return str(self.store.labels[self.label_column].iat[int(item)])

    def vector(self, item: int) -> np.ndarray:
        """Row ``item`` as a float32 ``(d,)`` vector (reads that row only)."""
        return self.store.rows([int(item)])[0].numpy()


def store_presets(gallery: StoreGallery) -> dict[str, tuple[str, ...]]:
    """The preset anchor lists for a store: its labels as "Gallery object names" (the first
    :data:`~anchordiv.explorer.MAX_ANCHORS` distinct ones; the generic objects when it has none),
    then the generic and paper lists of :func:`~anchordiv.explorer.anchor_presets`."""
    generic = anchor_presets(None)
    if gallery.label_column is None:
        names = generic["Animals"] + generic["Food"] + generic["Vehicles"]
    else:
        names = tuple(gallery.store.labels[gallery.label_column].dropna().astype(str).unique()[:MAX_ANCHORS])
    return {"Gallery object names": names, **generic}


# -- ranking ----------------------------------------------------------------------------------------
class StoreGeometry:
    """Anchor sets A and B over a store under one :class:`GeometrySpec`.

    The models are fitted as :class:`ExplorerGeometry` fits them, with a fixed sample of
    ``sample_rows`` store rows standing in for the gallery where the mixture is balanced and
    calibrated (``geometry``); ``index`` is one :class:`ShardedAnchorIndex` over the whole store
    (one pass at build, ``G K`` floats kept). Shared and never changed after ``__init__``.
    """

    def __init__(self, store: GalleryStore, anchor_sets: Sequence[torch.Tensor], anchor_texts: Sequence[Sequence[str]],
                 spec: GeometrySpec, prior: torch.Tensor | None = None, prior_texts: Sequence[str] = (),
                 sample_rows: int = CALIBRATION_ROWS, seed: int = 0):
        sample = store.rows(sample_ids(len(store), sample_rows, seed))
        self.geometry = ExplorerGeometry(sample, anchor_sets, anchor_texts, spec, prior=prior, prior_texts=prior_texts)
        self.index = ShardedAnchorIndex(self.geometry.model, store, reverse=spec.reverse, device="cpu")

    @property
    def is_mixture(self) -> bool:
        return self.geometry.is_mixture

    @property
    def notes(self) -> list[str]:
        """What the fit adjusted, for the user (as :attr:`ExplorerGeometry.notes`)."""
        return self.geometry.notes

    def slider(self, query: np.ndarray, k: int, exclude: int | None, weighting: str) -> MixtureSlider | None:
        """The certified slider of ``query`` ``(d,)`` under ``weighting`` (``slider.at(p)`` gives
        ``geometry.model_at(p, weighting)``'s top-``k``); ``None`` where it does not apply: one
        anchor set (``p`` has no effect) or the reverse direction (docs/design.md §10)."""
        if not self.is_mixture or self.geometry.spec.reverse:
            return None
        index = self.index.with_model(self.geometry.weighted_model(weighting))
        return index.slider(query, k=k, exclude=exclude)

    def search(self, query: np.ndarray, k: int, p: float, weighting: str, exclude: int | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """The exact top-``k`` of ``query`` ``(d,)`` at ``p``: ``(divergences (k,), positions (k,))``, ascending."""
        model = self.geometry.model_at(p, weighting)
        index = self.index.with_model(model) if self.is_mixture else self.index
        values, ids = index.search(np.asarray(query, dtype=np.float32)[None, :], k,
                                   exclude=None if exclude is None else np.array([exclude]))
        return values[0], ids[0]


def neighbours_at(geometry: StoreGeometry, slider: MixtureSlider | None, query: np.ndarray, k: int, p: float,
                  weighting: str, exclude: int | None = None) -> tuple[np.ndarray, np.ndarray, bool | None]:
    """``(divergences (k,), positions (k,), certified)`` at ``p``: from ``slider`` when there is one
    (``certified`` as it says), else by the exact search (``certified`` ``None``: no slider)."""
    if slider is not None:
        values, ids, certified = slider.at(p)
        return np.asarray(values), np.asarray(ids), bool(certified)
    return (*geometry.search(query, k, p, weighting, exclude), None)


def cosine_top_k(store: GalleryStore, query: np.ndarray, k: int, exclude: int | None = None,
                 block_rows: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` store rows most cosine-similar to ``query`` ``(d,)``: ``(similarities (k,),
    positions (k,))``, descending, what :class:`~anchordiv.CosineIndex` over every row gives. Reads
    the store one float32 block of ``block_rows`` at a time (default: the sharded search's block),
    never a float32 copy of the store."""
    vector = unit_rows(as_matrix(np.asarray(query).reshape(1, -1), "query"), "query").to(torch.float32)
    if vector.shape[1] != store.dim:
        raise ValueError(f"the query has dimension {vector.shape[1]} but the store {store.dim}; embed it with "
                         "the store's model")
    excluded = exclusion_matrix(None if exclude is None else [int(exclude)], 1, len(store), torch.device("cpu"))
    k = check_top_k(k, len(store), excluded)
    best: tuple[torch.Tensor, torch.Tensor] | None = None
    for start, block in store.iter_blocks(block_rows or max(1, SCAN_BLOCK_ELEMENTS // store.dim)):
        local = None if excluded is None else excluded - start
        scores, ids = top_k_inner_product(vector, block, None, min(k, block.shape[0]), local)
        ids = ids + start
        if best is not None:  # fold as we go: at most 2k candidates are held
            scores, ids = merge_top_k([best[0], scores], [best[1], ids], k)
        best = (scores, ids)
    return best[0][0].numpy(), best[1][0].numpy()


def store_neighbour_table(values: np.ndarray, ids: np.ndarray, gallery: StoreGallery, query_label: str | None,
                          value_name: str) -> pd.DataFrame:
    """One row per neighbour, as :func:`~anchordiv.explorer.neighbour_table` gives for a gallery:
    ``rank``, ``gallery_id`` (store position), ``name``, ``label`` (when the store has labels),
    ``value_name``, ``same_object`` (same label as the query; NA when unknown) and ``same_style``
    (NA: a store has no style labels)."""
    ids = np.asarray(ids).astype(int)
    table = pd.DataFrame({"rank": np.arange(1, len(ids) + 1), "gallery_id": ids,
                          "name": [gallery.caption(item) for item in ids]})
    labels = [gallery.label(item) for item in ids] if gallery.label_column else None
    if labels is not None:
        table["label"] = labels
    table[value_name] = np.asarray(values, dtype=np.float64)
    known = labels is not None and query_label is not None
    table["same_object"] = pd.array([label == query_label for label in labels] if known else [pd.NA] * len(ids),
                                    dtype="boolean")
    table["same_style"] = pd.array([pd.NA] * len(ids), dtype="boolean")
    return table


# -- thumbnails -----------------------------------------------------------------------------------
def thumbnail_path(gallery: StoreGallery, item: int, roots: DataRoots) -> Path | None:
    """The image file of ``item``: the store's source folder joined with its labels' ``path``,
    resolved and inside both that folder and the data roots; ``None`` when there is none (no
    source, no ``path`` column, a missing file, or a path that leads out)."""
    store = gallery.store
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


def store_thumbnails(gallery: StoreGallery, items: Sequence[int], roots: DataRoots,
                     size: int = THUMBNAIL_SIZE) -> list[Image.Image]:
    """One image per item of ``items``, read from disk for these items only; a placeholder naming
    the item where the store has no image for it or the file cannot be read."""
    images = []
    for item in items:
        path = thumbnail_path(gallery, item, roots)
        try:
            image = read_thumbnail(path, size) if path is not None else None
        except ValueError:  # ImageLoadError: removed, replaced or damaged since the store was built
            image = None
        images.append(image or placeholder(f"#{int(item)} {gallery.caption(item)}", size))
    return images


# -- projection -------------------------------------------------------------------------------------
def store_projection(gallery: StoreGallery, geometry: StoreGeometry, p: float, weighting: str,
                     max_points: int = PROJECTION_ROWS, seed: int = 0, n_neighbors: int = 15,
                     cache_key: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """UMAP of a fixed seeded sample of at most ``max_points`` store rows under the anchor
    divergence at ``p``: ``(positions (n,), xy (n, 2))``. Only the sample's rows are read."""
    ids = sample_ids(len(gallery), max_points, seed)
    xy = project_rows(gallery.store.rows(ids), "anchor", geometry.geometry, p, weighting, seed=seed,
                      n_neighbors=n_neighbors, cache_key=cache_key)
    return ids, xy


def store_projection_frame(gallery: StoreGallery, ids: np.ndarray, xy: np.ndarray, query_id: int | None,
                           neighbour_ids: Sequence[int]) -> pd.DataFrame:
    """One row per projected item: ``name``, ``label`` (text; ``"—"`` without labels), ``x``, ``y``,
    ``gallery_id`` and ``role`` ("query", "neighbour" or "gallery")."""
    labels = ([gallery.label(item) for item in ids] if gallery.label_column else ["—"] * len(ids))
    return pd.DataFrame({"name": [gallery.caption(item) for item in ids], "label": labels, "x": xy[:, 0],
                         "y": xy[:, 1], "gallery_id": np.asarray(ids, dtype=int),
                         "role": point_roles(ids, query_id, neighbour_ids)})
