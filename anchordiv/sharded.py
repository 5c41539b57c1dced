"""Exact anchor-divergence retrieval over a :class:`~anchordiv.store.GalleryStore` (docs/design.md §4, §9).

:class:`ShardedAnchorIndex` returns what :class:`~anchordiv.AnchorIndex` returns on the store's
float32 rows, but never holds the gallery in memory at float32: each shard's ``eta_y`` is read
from the memory map one block at a time during a search, and the only per-item arrays kept are
the per-component ``kappa_k(eta_y)`` ``(rows, K)``. A search is a map (each shard's top-``k`` of
``query . key + bias``) followed by a reduce (the global top-``k`` of those), so an engine that
runs the map elsewhere (Ray, later) can slot in at :meth:`ShardedAnchorIndex._shard_top_k`.

Reverse direction (``KL(p_y || p_x)``): the keys ``grad kappa(eta_y)`` are ``(G, d)``, as large as
the gallery itself at float32 (2 GB for 10^6 x 512) and too costly to keep; float16 copies on disk
would round the keys and break exactness. So they are recomputed from ``eta_y`` block by block at
each search: exact, and memory stays bounded, but every search costs one ``grad kappa`` per
gallery item (``O(G N d)`` for an empirical model with ``N`` anchors). Search many queries per call:
they share that pass.
"""
from __future__ import annotations

import copy
from typing import Any, Iterator

import numpy as np
import torch

from ._validation import ArrayLike, check_finite_output, check_positive_int
from .device import resolve_device
from .models.base import BLOCK_ELEMENTS, AnchorModel, like_input
from .search import check_top_k, exclusion_matrix, top_k_inner_product
from .slider import MixtureSlider
from .store import GalleryStore

ENGINES = ("local",)


def merge_top_k(scores: list[torch.Tensor], ids: list[torch.Tensor], k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` largest of several ``(Q, k_i)`` score tensors and their ``(Q, k_i)`` global ids:
    ``(Q, min(k, sum k_i))`` each, best first. The reduce step of a sharded search."""
    all_scores, all_ids = torch.cat(scores, dim=1), torch.cat(ids, dim=1)
    best, order = torch.topk(all_scores, min(k, all_scores.shape[1]), dim=1)
    return best, torch.gather(all_ids, 1, order)


class ShardedAnchorIndex:
    """Exact anchor-divergence retrieval over a gallery store: ranks it by ``D(x -> y)`` ascending
    (``reverse=True``: ``KL(p_y || p_x)``), with the :class:`~anchordiv.search.Index` contract and
    the results of ``AnchorIndex(model, store.rows(all), reverse)``; ``ids`` are global gallery
    positions (``store.ids[position]`` gives a row's external id).

    Parameters
    ----------
    model : a fitted anchor model of the store's dimension. store : a :class:`GalleryStore`.
    reverse : rank by ``KL(p_y || p_x)`` instead (keys recomputed per search; see the module doc).
    engine : ``"local"`` (the only one for now). device : where blocks are scored (``None``: CUDA
        when available, else CPU). block_rows : gallery rows read and scored at a time (default:
        about 128 MB of float32 per block).

    Memory: the float16 memory maps (paged by the OS), ``component_kappa`` (``G K`` floats) and one
    block. For a :class:`~anchordiv.MixtureAnchors`, :meth:`with_model` re-mixes the stored
    per-component ``kappa_k`` at other weights in ``O(G K)``.
    """

    higher_is_closer = False

    def __init__(self, model: AnchorModel, store: GalleryStore, reverse: bool = False, engine: str = "local",
                 device: str | torch.device | None = None, block_rows: int | None = None):
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}; got {engine!r} (a ray engine comes later).")
        if not isinstance(store, GalleryStore):
            raise ValueError(f"store must be a GalleryStore (GalleryStore.open(folder)); got {type(store).__name__}.")
        self.device = resolve_device(device)
        model.check_fitted()
        if store.dim != model.n_features_in_:
            raise ValueError(f"the store has dimension {store.dim} but the anchors have dimension "
                             f"{model.n_features_in_}; embed images and anchor texts with the same model.")
        self.model, self.store, self.reverse, self.engine = model, store, bool(reverse), engine
        self.block_rows = (max(1, BLOCK_ELEMENTS // store.dim) if block_rows is None
                           else check_positive_int(block_rows, "block_rows"))
        self._n_gallery = len(store)
        self._fit_token = model.fit_token()
        self._weights_token = model.weights_token()
        # Per shard, what gallery_state gives without gradients: (rows,) for a plain model, (rows, K) for a mixture.
        self._kappa_state = [torch.cat([model.gallery_state(eta, with_grad=False)[0]
                                        for _, eta in self._eta_blocks(number)])
                             for number in range(len(store.shards))]
        self._bias = self._mixed_bias(model)

    def __len__(self) -> int:
        return self._n_gallery

    # -- what a p-slider needs ----------------------------------------------------------------
    @property
    def fit_token(self):
        """The fit of the model the stored terms belong to (compare with ``model.fit_token()``)."""
        return self._fit_token

    @property
    def component_kappa(self) -> list[torch.Tensor]:
        """Per shard, ``kappa_k(eta_y)`` ``(rows, K)`` (``K = 1`` for a plain model), on ``device``."""
        return [state if state.ndim == 2 else state[:, None] for state in self._kappa_state]

    def iter_eta(self) -> Iterator[tuple[int, torch.Tensor]]:
        """``(start, eta)`` over the whole gallery: ``eta`` ``(n, d)`` float32 on ``device`` for the
        rows starting at global position ``start``, one block at a time."""
        for number in range(len(self.store.shards)):
            yield from self._eta_blocks(number)

    def iter_gallery_terms(self) -> Iterator[tuple[int, torch.Tensor, torch.Tensor, torch.Tensor]]:
        """``(start, rows (n, d), factors (n,), kappa (n, K))`` over the whole gallery, one block at a
        time: the store's float32 rows, ``eta_y = factors[:, None] * rows`` up to float32 rounding
        (``factors = scale / ||row||``), and the block's rows of :attr:`component_kappa`. The slider's
        one pass takes ``eta_y . g`` as ``factor * (row . g)``, so no scaled ``(n, d)`` copy is made."""
        kappa, scale = self.component_kappa, float(self.model.scale)
        for number in range(len(self.store.shards)):
            shard_start = self.store.shard_starts[number]
            for start, block in self.store.shard_blocks(number, self.block_rows):
                rows = block.to(self.device)
                factors = scale / torch.linalg.vector_norm(rows, dim=1)
                yield start, rows, factors, kappa[number][start - shard_start:start - shard_start + rows.shape[0]]

    def gallery_rows(self, ids: ArrayLike) -> tuple[torch.Tensor, torch.Tensor]:
        """``(eta (n, d), kappa (n, K))`` at global positions ``ids`` ``(n,)``, on ``device``: reads
        only those rows of the store (the slider's candidates)."""
        positions = torch.as_tensor(np.asarray(ids, dtype=np.int64).reshape(-1))
        eta = self.model.natural_parameters(self.store.rows(positions), "gallery").to(self.device)
        kappa = self.component_kappa
        wanted = positions.numpy()
        shard_of = np.searchsorted(self.store.shard_starts, wanted, side="right") - 1
        result = torch.empty(wanted.size, kappa[0].shape[1], dtype=kappa[0].dtype, device=self.device)
        for number in np.unique(shard_of):
            picked = np.flatnonzero(shard_of == number)
            local = torch.as_tensor(wanted[picked] - self.store.shard_starts[number], device=self.device)
            result[torch.as_tensor(picked, device=self.device)] = kappa[number][local]
        return eta, result

    def slider(self, query: ArrayLike, k: int = 10, exclude: Any = None, grid: Any = None,
               candidates: int | None = None) -> MixtureSlider:
        """A certified ``p`` slider for one ``query`` ``(d,)`` over this index's two-component
        :class:`~anchordiv.MixtureAnchors`, as :meth:`anchordiv.AnchorIndex.slider` (same arguments,
        same results; docs/design.md §10): one pass reads the store block by block, never a float32
        copy of the gallery; ``slider.at(p)`` gives ``(values, ids, certified)``, and an uncertified
        move falls back to ``with_model(m).search`` (one pass over the store)."""
        return MixtureSlider(self, query, k=k, exclude=exclude, grid=grid, candidates=candidates)

    # -- re-weighting ------------------------------------------------------------------------
    def with_model(self, model: AnchorModel) -> "ShardedAnchorIndex":
        """A new index over the same store for ``model``, a model with this index's fitted components
        at other weights (e.g. ``index.model.with_weights([p, 1 - p])``): the stored ``kappa_k`` are
        re-mixed in ``O(G K)``, nothing is read from disk. This index is unchanged."""
        if model.fit_token() != self._fit_token:
            raise ValueError(
                "with_model needs a model with this index's fitted components (e.g. index.model.with_weights(w)); "
                "for other anchors build a new ShardedAnchorIndex(model, store)."
            )
        index = copy.copy(self)
        index.model = model
        index._weights_token = model.weights_token()
        index._bias = index._mixed_bias(model)
        return index

    # -- search ------------------------------------------------------------------------------
    def search(self, queries: ArrayLike, k: int, exclude: ArrayLike | None = None) -> tuple[Any, Any]:
        """The ``k`` gallery items of least divergence for each query ``(Q, d)``: ``(values, ids)``,
        both ``(Q, k)``, ascending; ``ids`` global positions. ``exclude`` ``(Q,)`` or ``(Q, m)``
        global positions to skip, ``-1`` for none. numpy in, numpy out; tensors in, tensors out."""
        query_vectors, offset = self._query_vectors(queries)
        excluded = exclusion_matrix(exclude, query_vectors.shape[0], self._n_gallery, self.device)
        k = check_top_k(k, self._n_gallery, excluded)
        bias = self._current_bias()
        parts = [self._shard_top_k(number, query_vectors, k, excluded, bias) for number in range(len(self.store.shards))]
        scores, ids = merge_top_k([part[0] for part in parts], [part[1] for part in parts], k)
        values = check_finite_output(offset[:, None] - scores, "the anchor divergences of the search", self.model.scale)
        return like_input(values, queries), like_input(ids, queries)

    def _shard_top_k(self, number: int, queries: torch.Tensor, k: int, exclude: torch.Tensor | None,
                     bias: list[torch.Tensor] | None) -> tuple[torch.Tensor, torch.Tensor]:
        """Shard ``number``'s best ``min(k, rows)`` scores ``(Q, .)`` and their global ids: the map step."""
        best = None
        shard_start = self.store.shard_starts[number]
        for start, eta in self._eta_blocks(number):
            if self.reverse:
                keys, block_bias = self._reverse_terms(eta)
            else:
                keys, block_bias = eta, bias[number][start - shard_start:start - shard_start + eta.shape[0]]
            local = None if exclude is None else exclude - start
            scores, ids = top_k_inner_product(queries, keys, block_bias, min(k, eta.shape[0]), local)
            ids = ids + start
            if best is not None:  # fold as we go: at most 2k candidates per query are ever held
                scores, ids = merge_top_k([best[0], scores], [best[1], ids], k)
            best = (scores, ids)
        return best

    def _reverse_terms(self, eta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys ``grad kappa(eta_y)`` ``(n, d)`` and bias ``kappa - grad . eta`` ``(n,)`` of one block."""
        kappa, grad = self.model.combine_state(self.model.gallery_state(eta, with_grad=True))
        bias = kappa - (grad * eta).sum(dim=1)
        return grad, check_finite_output(bias, "the gallery's conjugate terms", self.model.scale)

    def _mixed_bias(self, model: AnchorModel) -> list[torch.Tensor] | None:
        """Per shard ``-kappa(eta_y)`` ``(rows,)`` under ``model``'s weights; ``None`` in reverse,
        where the bias is recomputed per block with the keys."""
        if self.reverse:
            return None
        return [-model.combine_state((state, None))[0] for state in self._kappa_state]

    def _current_bias(self) -> list[torch.Tensor] | None:
        if self.model.fit_token() != self._fit_token:
            raise ValueError("The anchor model was refitted after this ShardedAnchorIndex was built, so the stored "
                             "gallery terms are stale; build a new ShardedAnchorIndex(model, store).")
        if self.model.weights_token() != self._weights_token:  # set_weights since: re-mix for this call only
            return self._mixed_bias(self.model)
        return self._bias

    def _eta_blocks(self, number: int) -> Iterator[tuple[int, torch.Tensor]]:
        """``(start, eta)`` for shard ``number``: float16 rows read from the memory map and turned
        into float32 ``eta = scale * y / ||y||`` on ``device``, ``block_rows`` at a time."""
        for start, block in self.store.shard_blocks(number, self.block_rows):
            yield start, self.model.natural_parameters(block, "gallery").to(self.device)

    def _query_vectors(self, queries: ArrayLike) -> tuple[torch.Tensor, torch.Tensor]:
        """As in AnchorIndex: query-first ``grad kappa(eta_x)`` with offset ``kappa*``; reverse ``eta_x``
        with offset ``kappa(eta_x)``; float32, like the gallery blocks."""
        eta = self.model.natural_parameters(queries, "queries").to(self.device, torch.float32)
        if self.reverse:
            return eta, self.model.cgf_eta(eta)
        kappa, grad = self.model.cgf_grad_eta(eta)
        return grad, (grad * eta).sum(dim=1) - kappa
