"""The explorer on a gallery store (docs/design.md §7, §11): a :class:`~anchordiv.store.GalleryStore` of
10^5 - 10^6 items as a :class:`~anchordiv.explorer.source.GallerySource`, for a page that must stay
fast on every run.

* :class:`StoreSource` opens a store for a chosen encoder (its name and dimension must match) and
  carries what the page asks per item: a name (:meth:`~StoreSource.caption`), a label, a vector,
  a thumbnail read from disk (:mod:`.thumbnails`).
* :class:`NameIndex` finds items by name, best first (:mod:`anchordiv.name_match`): built once
  (sorted names for prefix matches by bisection, one joined text for word starts and substrings,
  scanned in C), so a search never loops in Python over every name.
* :func:`cosine_top_k`: the cosine baseline over the store, block by block.

Its geometry is :meth:`ExplorerGeometry.over_store <anchordiv.explorer.ExplorerGeometry.over_store>`:
one sharded index over the whole store and the certified ``p`` slider (docs/design.md §10).
"""
from __future__ import annotations

import bisect
import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ClassVar, Sequence

import numpy as np
import pandas as pd
import torch

from .._validation import as_matrix, unit_rows
from ..name_match import rank_matches, search_key, word_start
from ..sharded import SCAN_BLOCK_ELEMENTS, kept_row_blocks
from ..store import MANIFEST, GalleryStore
from ..topk import RunningTopK, check_top_k, exclusion_matrix, mask_excluded
from . import thumbnails
from .anchors import GALLERY_NAMES, MAX_ANCHORS, anchor_presets
from .geometry import ExplorerGeometry, GeometrySpec
from .maps import point_roles
from .paths import DataRoots
from .source import Capabilities

if TYPE_CHECKING:
    from PIL import Image

# Rows of the fixed UMAP sample: a layout of 3,000 points takes a few seconds on 2 cores.
PROJECTION_ROWS = 3_000
# Matches a name search returns: a menu longer than this is not read by anyone.
SEARCH_LIMIT = 200
# Items of each kind of match (prefix, word start, anywhere) a store's name search ranks: a few
# milliseconds of scanning, on every run of a page that shows a search.
SEARCH_CANDIDATES = 1_000


# -- names ------------------------------------------------------------------------------------
class NameIndex:
    """Case-insensitive search over ``G`` item names, built once, ranked as every gallery ranks
    matches (:func:`~anchordiv.name_match.rank_matches`: an exact name, then a prefix, then a word
    start, then any match; ties by the shorter name, then the smaller id).

    The names (as :func:`~anchordiv.name_match.search_key` reads them) are kept sorted, so the
    names starting with a text are a range found by bisection (``O(log G)``), and joined, one per
    line, into one text, where the names holding the text at a word start (a regular expression)
    or anywhere (``str.find``) are found by a scan in C and mapped to their item by a binary search
    over the line starts. Each kind stops after :data:`SEARCH_CANDIDATES` items (or ``limit``, when
    more), which are ranked: a search costs ``O(log G + candidates)`` Python steps, never a loop
    over every name. So over a store of more matches than that, a rank's ties are ordered among the
    first candidates found of that kind (prefixes in name order, the others in item order).
    """

    def __init__(self, names: Sequence[str]):
        # search_key leaves no line break in a name, so each name is one line of the joined text.
        keys = [search_key(name) for name in names]
        self.names = [str(name) for name in names]
        self._keys = keys
        order = sorted(range(len(keys)), key=keys.__getitem__)
        self._sorted = [keys[item] for item in order]
        self._sorted_items = np.asarray(order, dtype=np.int64)
        self._text = "\n".join(keys) + "\n"
        self._starts = np.cumsum([0] + [len(key) + 1 for key in keys], dtype=np.int64)
        self._longest = max(map(len, keys), default=0)

    def __len__(self) -> int:
        return len(self.names)

    def find(self, text: str, limit: int = SEARCH_LIMIT) -> list[int]:
        """Items whose name contains ``text`` (case-insensitive), best first, at most ``limit``;
        empty for a blank ``text``."""
        needle = search_key(text)
        if not needle or limit < 1 or len(needle) > self._longest:  # a pasted page matches no name, at no cost
            return []
        most = max(int(limit), SEARCH_CANDIDATES)
        first = bisect.bisect_left(self._sorted, needle)
        # The names starting with the needle sort before it followed by the last code point (a
        # noncharacter, which no name is expected to hold).
        end = min(bisect.bisect_left(self._sorted, needle + chr(sys.maxunicode), first), first + most)
        words, joined = word_start(needle), self._text
        candidates = dict.fromkeys(self._sorted_items[first:end].tolist())
        candidates |= self._lines(lambda at: hit.start() if (hit := words.search(joined, at)) else -1, most)
        candidates |= self._lines(lambda at: joined.find(needle, at), most)
        items = list(candidates)
        keys = [self._keys[item] for item in items]
        return rank_matches(needle, items, keys, keys, limit)

    def _lines(self, search: Callable[[int], int], most: int) -> dict[int, None]:
        """The first ``most`` items (in item order) whose line of the joined text ``search(position)``
        finds (where, or -1 for nowhere after ``position``): one hit per item, then on to the next line."""
        found: dict[int, None] = {}
        at = 0
        while len(found) < most:
            hit = search(at)
            if hit < 0:
                break
            item = int(np.searchsorted(self._starts, hit, side="right")) - 1
            found[item] = None
            at = int(self._starts[item + 1])
        return found


def store_names(store: GalleryStore) -> tuple[list[str], str | None]:
    """``(names (G,), label column or None)``: each row's name (its file ``path``, else the labels'
    first column, else ``#id``) and the column whose equality means "same object" (``label``)."""
    labels = store.labels
    if labels is None or labels.empty or len(labels.columns) == 0:
        return [f"#{item}" for item in store.ids.tolist()], None
    column = "path" if "path" in labels.columns else labels.columns[0]
    label = "label" if "label" in labels.columns else None
    return labels[column].astype(str).tolist(), label


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
class StoreSource:
    """A store opened for one encoder, with its name index: a
    :class:`~anchordiv.explorer.source.GallerySource` whose items are the store's rows.

    ``key`` identifies the content (the manifest's sha256, which covers every file's sha256 and the
    encoder, and the files as they were when opened: :func:`store_stamp`), for cache keys and
    links, so that nothing cached over a store is used once one of its files has changed;
    ``label_column`` the labels' column of "same object", or ``None``; ``roots`` the data roots its
    thumbnails may be read under; ``device`` where its geometries score the store's blocks
    (``None``: CUDA when available, else CPU; its cosine scan, bound by reading the store, stays on
    the CPU). A store shows no p sweep (it has no style labels) and says whether the slider
    certified each move.
    """

    store: GalleryStore
    key: str
    names: NameIndex
    label_column: str | None
    roots: DataRoots = DataRoots()
    device: str | None = None
    capabilities: ClassVar[Capabilities] = Capabilities(certificate=True, row_numbers=True)

    @classmethod
    def open(cls, folder: str | Path, encoder_name: str, dim: int, roots: DataRoots = DataRoots(),
             stamp: tuple[tuple[str, int, int, int], ...] | None = None,
             device: str | None = None) -> "StoreSource":
        """The store in ``folder`` (manifest and file headers checked), for an encoder called
        ``encoder_name`` of dimension ``dim``; ``ValueError`` naming the fix when it cannot be read
        or was embedded by another model. Builds the name index (once per store: cache the result).
        ``stamp`` is :func:`store_stamp` of ``folder`` where the caller has just taken it (for its
        cache key); ``None`` takes it here. ``device``: see the class."""
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
        stamp = store_stamp(store.directory) if stamp is None else stamp
        files = hashlib.sha256(repr(stamp).encode()).hexdigest()[:12]
        return cls(store, f"store|{store.encoder}|{len(store)}|{digest}|{files}", NameIndex(names), label, roots,
                   device)

    def __len__(self) -> int:
        return len(self.store)

    @property
    def description(self) -> str:
        return f"gallery store {self.store.directory.name!r} ({len(self):,} items, {self.store.dtype})"

    @property
    def legend(self) -> str:
        return ("✓obj: same label as the query · d = anchor divergence (lower is closer), s = similarity "
                "(higher is closer) · images are read from the store's image folder when shown")

    @property
    def notes(self) -> list[str]:
        if self.store.encoder is not None:
            return []
        return ["This store does not record the model that embedded it; its neighbours mean something only if that "
                "was the model chosen here."]

    @property
    def name_column(self) -> str:
        return "name"

    @property
    def colour_columns(self) -> list[str]:
        return ["label"]

    @property
    def default_colour(self) -> str:
        return "label"

    @property
    def projection_rows(self) -> int:
        return min(len(self), PROJECTION_ROWS)

    def caption(self, item: int) -> str:
        return self.names.names[int(item)]

    def find(self, text: str, limit: int = SEARCH_LIMIT) -> list[int]:
        return self.names.find(text, limit)

    def default_query(self) -> int:
        """The store's first item."""
        return 0

    def labels_of(self, item: int | None) -> str | None:
        """The label of ``item`` (``None`` without a label column or an item)."""
        if item is None or self.label_column is None:
            return None
        return str(self.store.labels[self.label_column].iat[int(item)])

    def vector(self, item: int) -> np.ndarray:
        """Row ``item`` as a float32 ``(d,)`` vector (reads that row only)."""
        return self.store.rows([int(item)])[0].numpy()

    def rows(self, ids: np.ndarray) -> torch.Tensor:
        return self.store.rows(ids)

    def thumbnails(self, ids: Sequence[int], size: int = thumbnails.THUMBNAIL_SIZE) -> list[Image.Image]:
        """Images read from the store's source folder for these items only; a placeholder naming the
        item where there is none (:func:`~anchordiv.explorer.thumbnails.store_thumbnails`)."""
        return thumbnails.store_thumbnails(self.store, ids, self.roots, self.caption, size)

    def presets(self) -> dict[str, tuple[str, ...]]:
        """The store's labels as "Gallery object names" (the first
        :data:`~anchordiv.explorer.MAX_ANCHORS` distinct ones; absent when it has none, so that
        :func:`~anchordiv.explorer.anchors.preset_in` offers a stand-in under its own name), then
        the generic and paper lists of :func:`~anchordiv.explorer.anchor_presets`."""
        if self.label_column is None:
            return anchor_presets(None)
        names = tuple(self.store.labels[self.label_column].dropna().astype(str).unique()[:MAX_ANCHORS])
        return {GALLERY_NAMES: names, **anchor_presets(None)}

    def preset_sources(self) -> dict[str, str]:
        return {GALLERY_NAMES: f"the {self.label_column!r} column of the store's labels"} if self.label_column else {}

    def neighbour_table(self, values: np.ndarray, ids: np.ndarray, query_labels: str | None,
                        value_name: str) -> pd.DataFrame:
        """As :func:`~anchordiv.explorer.neighbour_table` gives for a gallery: ``rank``,
        ``gallery_id`` (store position), ``name``, ``label`` (when the store has labels),
        ``value_name``, ``same_object`` (same label as the query; NA when unknown) and
        ``same_style`` (NA: a store has no style labels)."""
        ids = np.asarray(ids).astype(int)
        table = pd.DataFrame({"rank": np.arange(1, len(ids) + 1), "gallery_id": ids,
                              "name": [self.caption(item) for item in ids]})
        labels = [self.labels_of(item) for item in ids] if self.label_column else None
        if labels is not None:
            table["label"] = labels
        table[value_name] = np.asarray(values, dtype=np.float64)
        known = labels is not None and query_labels is not None
        table["same_object"] = pd.array([label == query_labels for label in labels] if known else [pd.NA] * len(ids),
                                        dtype="boolean")
        table["same_style"] = pd.array([pd.NA] * len(ids), dtype="boolean")
        return table

    def fit_geometry(self, anchor_sets: Sequence[torch.Tensor], anchor_texts: Sequence[Sequence[str]],
                     spec: GeometrySpec, prior: torch.Tensor | None = None,
                     prior_texts: Sequence[str] = (),
                     anchor_weights: Sequence[Sequence[float] | None] = ()) -> ExplorerGeometry:
        return ExplorerGeometry.over_store(self.store, anchor_sets, anchor_texts, spec, prior=prior,
                                           prior_texts=prior_texts, anchor_weights=anchor_weights,
                                           device=self.device)

    def cosine_top_k(self, query: np.ndarray, k: int, exclude: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        return cosine_top_k(self.store, query, k, exclude)

    def projection_frame(self, ids: np.ndarray, xy: np.ndarray, query_id: int | None,
                         neighbour_ids: Sequence[int], colour: str = "label") -> pd.DataFrame:
        """``name``, ``label`` (text; ``"—"`` without labels), ``x``, ``y``, ``gallery_id`` and ``role``."""
        labels = [self.labels_of(item) for item in ids] if self.label_column else ["—"] * len(ids)
        return pd.DataFrame({"name": [self.caption(item) for item in ids], "label": labels, "x": xy[:, 0],
                             "y": xy[:, 1], "gallery_id": np.asarray(ids, dtype=int),
                             "role": point_roles(ids, query_id, neighbour_ids)})


def cosine_top_k(store: GalleryStore, query: np.ndarray, k: int, exclude: int | None = None,
                 block_rows: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` store rows most cosine-similar to ``query`` ``(d,)``: ``(similarities (k,),
    positions (k,))``, descending, what :class:`~anchordiv.CosineIndex` over every row gives. Reads
    the store one float32 block of ``block_rows`` at a time (default: the sharded search's block),
    folded into the running top-``k`` as it comes: never a float32 copy of the store (each block is
    a buffer the next refills, :meth:`~anchordiv.store.GalleryStore.scan_blocks`), unless an index
    over this store object keeps its rows in memory already (:func:`~anchordiv.sharded.kept_row_blocks`),
    which are then read in place."""
    vector = unit_rows(as_matrix(np.asarray(query).reshape(1, -1), "query"), "query").to(torch.float32)
    if vector.shape[1] != store.dim:
        raise ValueError(f"the query has dimension {vector.shape[1]} but the store {store.dim}; embed it with "
                         "the store's model")
    excluded = exclusion_matrix(None if exclude is None else [int(exclude)], 1, len(store), torch.device("cpu"))
    best = RunningTopK(check_top_k(k, len(store), excluded))
    rows = block_rows or max(1, SCAN_BLOCK_ELEMENTS // store.dim)
    blocks = kept_row_blocks(store)
    if blocks is None:
        blocks = (block for number in range(len(store.shards)) for block in store.scan_blocks(number, rows))
    for start, block in blocks:
        scores = (block @ vector.T).T  # (1, n): the (n, d) @ (d, 1) form is the fast one on a CPU
        if excluded is not None:
            mask_excluded(scores, excluded, start)
        best.add_block(scores, start)
    scores, ids = best.result()
    return scores[0].numpy(), ids[0].numpy()
