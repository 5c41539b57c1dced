"""Exact retrieval as maximum inner product search (docs/design.md §4), plus the baselines.

Every index satisfies the public :class:`Index` protocol (docs/design.md §9), in the manner of
faiss: ``search(queries, k, exclude=None)`` returns ``(values, ids)``, both ``(Q, k)``, best first,
and ``higher_is_closer`` states the sort direction: ``False`` for :class:`AnchorIndex`
(divergences, ascending), ``True`` for :class:`CosineIndex` and :class:`ITIIndex` (similarities,
descending). ``search`` never changes an index, so one index can serve many threads at once.
Score matrices are formed in blocks of at most ``BLOCK_ELEMENTS`` entries, so memory stays
bounded for any gallery size.
"""
from __future__ import annotations

import copy
from typing import Any, Iterator, Protocol, runtime_checkable

import torch

from ._validation import ArrayLike, as_matrix, check_dimension, check_finite_output, unit_rows
from .device import resolve_device
from .models.base import BLOCK_ELEMENTS, AnchorModel, like_input
from .pass_pool import row_parts, run_parts
from .slider import GridPass, MixtureSlider
from .topk import RunningTopK, check_top_k, exclusion_matrix, mask_excluded


@runtime_checkable
class Index(Protocol):
    """What every anchordiv index offers (``AnchorIndex``, ``CosineIndex``, ``ITIIndex``, and any
    index written to the same contract, such as one over a sharded gallery).

    * ``search(queries, k, exclude=None) -> (values, ids)``: ``queries`` ``(Q, d)``; ``values`` and
      ``ids`` ``(Q, k)``, best first. ``k`` must be an integer from 1 to ``len(index)`` minus the
      number of ids excluded per query; anything else raises ``ValueError`` naming that range
      (results are never silently shorter than ``k``). ``exclude`` is ``(Q,)`` or ``(Q, m)``
      integer gallery ids to leave out per query, ``-1`` for none (any other id outside the gallery
      raises ``ValueError``). numpy queries give numpy arrays, tensor queries give tensors. A
      search never changes the index.
    * ``AnchorIndex`` raises ``ValueError`` naming the scale when the divergences overflow (a very
      large scale, above all in float32) rather than rank by NaN or infinity.
    * ``higher_is_closer``: ``False`` when ``values`` are divergences (ascending), ``True`` when
      they are similarities (descending).
    * ``len(index)``: the number of gallery items.
    """

    higher_is_closer: bool

    def __len__(self) -> int: ...

    def search(self, queries: ArrayLike, k: int, exclude: ArrayLike | None = None) -> tuple[Any, Any]: ...


GALLERY_CHUNK = 2**20


def check_fit(model: AnchorModel, fit_token: Any, weights: tuple[float, ...], index_name: str, rebuild: str) -> None:
    """An index's stored gallery terms belong to the fit ``fit_token``, mixed with ``weights``
    (``model.mixing_weights()``): ``ValueError`` naming the rebuild (``rebuild``, e.g.
    ``"AnchorIndex(model, gallery)"``) when ``model`` was refitted since, and naming ``with_model``
    when a mixture's weights were changed in place (``set_params``): the terms are never re-mixed
    behind the caller's back, so a stale index cannot answer for the old weights."""
    if model.fit_token() != fit_token:
        raise ValueError(f"The anchor model was refitted after this {index_name} was built, so the stored gallery "
                         f"terms are stale; build a new {rebuild}.")
    if model.mixing_weights() != weights:
        raise ValueError(f"The mixture's weights were changed in place after this {index_name} was built, so its "
                         "terms are mixed for the old ones; use index.with_model(model) (it re-mixes them) or "
                         "model.with_weights(w), which leaves the indexed model alone.")


def check_reweighting(model: AnchorModel, fit_token: Any, rebuild: str) -> None:
    """``with_model`` serves the same fitted components at other weights only: ``ValueError``
    naming the rebuild for a model with other components."""
    if model.fit_token() != fit_token:
        raise ValueError("with_model needs a model with this index's fitted components (e.g. "
                         f"index.model.with_weights(w)); for other anchors build a new {rebuild}.")


def query_terms(model: AnchorModel, queries: ArrayLike, reverse: bool, device: torch.device,
                dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """The query side of §4's inner product, ``(vectors (Q, d), offset (Q,))``: query first,
    ``grad kappa(eta_x)`` with offset ``grad kappa(eta_x) . eta_x - kappa(eta_x)``; reverse,
    ``eta_x`` with offset ``kappa(eta_x)``; in ``dtype`` on ``device``, like the gallery's keys."""
    eta = model.natural_parameters(queries, "queries").to(device, dtype)
    if reverse:
        return eta, model.cgf_eta(eta)
    kappa, grad = model.cgf_grad_eta(eta)
    return grad, (grad * eta).sum(dim=1) - kappa


def top_k_inner_product(queries: torch.Tensor, keys: torch.Tensor, bias: torch.Tensor | None, k: int,
                        exclude: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` largest ``queries @ keys.T + bias`` per row: ``(scores, ids)``, both ``(Q, k)``.

    ``queries`` ``(Q, d)``, ``keys`` ``(G, d)``, ``bias`` ``(G,)``; ``exclude`` ``(Q, m)`` gallery ids
    to skip per query. Works in query blocks and gallery chunks of bounded size.
    """
    n_gallery = keys.shape[0]
    chunk = min(n_gallery, GALLERY_CHUNK)
    query_rows = max(1, BLOCK_ELEMENTS // chunk)
    all_scores, all_ids = [], []
    for q_start in range(0, queries.shape[0], query_rows):
        q_block = queries[q_start:q_start + query_rows]
        excluded = None if exclude is None else exclude[q_start:q_start + query_rows]
        best = RunningTopK(k)
        for g_start in range(0, n_gallery, chunk):
            chunk_keys = keys[g_start:g_start + chunk]
            scores = (q_block @ chunk_keys.T if bias is None
                      else torch.addmm(bias[g_start:g_start + chunk], q_block, chunk_keys.T))
            if excluded is not None:
                mask_excluded(scores, excluded, g_start)
            best.add_block(scores, g_start)
        best_scores, best_ids = best.result()
        all_scores.append(best_scores)
        all_ids.append(best_ids)
    return torch.cat(all_scores), torch.cat(all_ids)


class _InnerProductIndex:
    """Shared search machinery: subclasses say how gallery and queries become vectors."""

    higher_is_closer: bool

    def __init__(self, device: str | torch.device | None):
        self.device = resolve_device(device)

    def __len__(self) -> int:
        return self._n_gallery

    def _keys_and_bias(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        raise NotImplementedError

    def _query_vectors(self, queries: ArrayLike) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Query vectors ``(Q, d')`` and a per-query offset ``(Q,)`` used by ``_values``."""
        raise NotImplementedError

    def _values(self, scores: torch.Tensor, offset: torch.Tensor | None) -> torch.Tensor:
        return scores

    def search(self, queries: ArrayLike, k: int, exclude: ArrayLike | None = None) -> tuple[Any, Any]:
        """The ``k`` nearest gallery items for each query ``(Q, d)``: ``(values, ids)``, both ``(Q, k)``,
        best first (see ``higher_is_closer``). ``exclude`` gives gallery ids to skip per query,
        shape ``(Q,)`` or ``(Q, m)`` with ``-1`` for none (e.g. the query's own position).
        Returns numpy arrays for numpy queries, tensors for tensor queries."""
        query_vectors, offset = self._query_vectors(queries)
        excluded = exclusion_matrix(exclude, query_vectors.shape[0], self._n_gallery, self.device)
        k = check_top_k(k, self._n_gallery, excluded)
        keys, bias = self._keys_and_bias()
        scores, ids = top_k_inner_product(query_vectors, keys, bias, k, excluded)
        return like_input(self._values(scores, offset), queries), like_input(ids, queries)

    def inner_product_terms(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(keys (G, d'), bias (G,))`` of this index's search, ``score = query_vector . key + bias``
        (docs/design.md §4), after the checks a search makes (the model not refitted, nor its
        weights changed, since): for a caller that ranks the gallery against itself in its own
        batches (:func:`anchordiv.projection.knn_graph`). Shared: never write to them."""
        return self._keys_and_bias()

    def _as_queries(self, queries: ArrayLike, dim: int) -> torch.Tensor:
        matrix = as_matrix(queries, "queries")
        check_dimension(matrix, dim, "queries", against="the gallery embeddings")
        return unit_rows(matrix, "queries").to(self.device)


class AnchorIndex(_InnerProductIndex):
    """Exact anchor-divergence retrieval: ranks the gallery by ``D(x -> y)`` ascending.

    The gallery is stored once in augmented form (docs/design.md §4). Query-first (default):
    keys ``eta_y``, bias ``-kappa(eta_y)``, query ``grad kappa(eta_x)``, so
    ``score = grad kappa(eta_x) . eta_y - kappa(eta_y)`` and ``D = kappa*(grad kappa(eta_x)) - score``.
    Reverse (``D(y -> x) = KL(p_y || p_x)``): keys ``grad kappa(eta_y)``, bias
    ``kappa(eta_y) - grad kappa(eta_y) . eta_y``, query ``eta_x``, and ``D = kappa(eta_x) - score``.
    A query costs one ``grad kappa`` plus one inner-product search; the anchor count never
    enters the query-by-gallery product.

    When the model is a :class:`~anchordiv.MixtureAnchors`, per-component ``kappa_k`` (and, in
    reverse, ``grad kappa_k``) are stored, so :meth:`with_model` serves the same components at
    other weights (``mixture.with_weights(w)``) in ``O(G K)`` (``O(G K d)`` reverse) without a pass
    over the anchors. ``search`` never writes to the index. Refitting the model's anchors needs a
    new index.

    Parameters
    ----------
    model : a fitted anchor model. gallery : embeddings ``(G, d)`` (rows normalised inside).
    reverse : rank by ``KL(p_y || p_x)`` instead. device : where to keep the gallery
        (``None``: CUDA when available, else CPU). component_kappa : query-first only, the
        gallery's ``kappa`` as :attr:`component_kappa` of an index of the same model's fit over the
        same rows gave it (``(G,)``, or ``(G, K)`` for a mixture), kept by the caller (the explorer
        keeps it on disk): the one ``O(G N d)`` pass is not made again. The caller vouches for it.
    """

    higher_is_closer = False

    def __init__(self, model: AnchorModel, gallery: ArrayLike, reverse: bool = False,
                 device: str | torch.device | None = None, component_kappa: torch.Tensor | None = None):
        super().__init__(device)
        self.model = model
        self.reverse = bool(reverse)
        self._eta = model.natural_parameters(gallery, "gallery").to(self.device)
        self._n_gallery = self._eta.shape[0]
        self._state = (model.gallery_state(self._eta, with_grad=self.reverse) if component_kappa is None
                       else self._kept_state(model, component_kappa))
        self._fit_token = model.fit_token()
        self._weights = model.mixing_weights()
        # Keys and bias; an index of other weights (with_model) makes its own at its first search.
        self._terms: tuple[torch.Tensor, torch.Tensor] | None = self._augmented(model)

    def _kept_state(self, model: AnchorModel, component_kappa: torch.Tensor) -> tuple[torch.Tensor, None]:
        """The stored terms from a kept ``component_kappa``, checked for direction and shape."""
        if self.reverse:
            raise ValueError("component_kappa serves the query-first direction; the reverse one stores grad kappa too")
        mixed = len(model.mixing_weights())  # a mixture's components, 0 for one model
        shape = (self._n_gallery, mixed) if mixed else (self._n_gallery,)
        if tuple(component_kappa.shape) != shape:
            raise ValueError(f"component_kappa has shape {tuple(component_kappa.shape)}; this gallery and model "
                             f"need {shape}")
        return torch.as_tensor(component_kappa).to(device=self.device, dtype=self._eta.dtype), None

    def with_model(self, model: AnchorModel) -> "AnchorIndex":
        """A new index over the same gallery for ``model``, a model with this index's fitted
        components at other weights (e.g. ``index.model.with_weights([p, 1 - p])`` or
        ``.with_balance(None)``). The stored per-component terms are shared, not recomputed:
        ``O(G K)`` (``O(G K d)`` reverse). This index is unchanged."""
        check_reweighting(model, self._fit_token, "AnchorIndex(model, gallery)")
        index = copy.copy(self)
        index.model = model
        index._weights = model.mixing_weights()
        index._terms = None  # mixed at its first search: a slider's pass never needs them
        return index

    @property
    def gallery_eta(self) -> torch.Tensor:
        """The stored natural parameters ``eta_y`` ``(G, d)`` (shared: never write to them)."""
        return self._eta

    @property
    def component_kappa(self) -> torch.Tensor:
        """Per-component ``kappa_k(eta_y)`` ``(G, K)`` as stored for a mixture (``(G,)`` for one model)."""
        return self._state[0]

    def iter_gallery_terms(self, rows: int = 2**16, first: int = 0, stop: int | None = None
                           ) -> Iterator[tuple[int, torch.Tensor, torch.Tensor, torch.Tensor]]:
        """``(start, eta (n, d), factors (n,), kappa (n, K))`` for consecutive blocks of ``rows``
        stored rows from ``first`` to ``stop`` (default: the whole gallery), as
        :meth:`anchordiv.sharded.ShardScanner.iter_gallery_terms` gives them (the slider's one pass
        reads either); the factors are ones, the stored ``eta`` being already scaled. Views,
        nothing copied."""
        stop = self._n_gallery if stop is None else stop
        for start in range(first, stop, rows):
            end = min(start + rows, stop)
            eta, kappa = self._eta[start:end], self.component_kappa[start:end]
            yield start, eta, torch.ones(eta.shape[0], dtype=eta.dtype, device=eta.device), kappa

    def grid_top_k(self, job: GridPass) -> tuple[torch.Tensor, torch.Tensor]:
        """The certified slider's one pass, ``job`` an :class:`anchordiv.slider.GridPass`, over this
        gallery: split among the host's cores when it is large (:mod:`anchordiv.pass_pool`)."""
        parts = run_parts(lambda bounds: job.run(self.iter_gallery_terms(first=bounds[0], stop=bounds[1])),
                          row_parts(self._n_gallery, self.device))
        return parts[0] if len(parts) == 1 else job.merge(parts)

    def gallery_rows(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(eta (n, d), kappa (n, K))`` at gallery positions ``ids`` ``(n,)``."""
        ids = torch.as_tensor(ids).to(self.device)
        return self._eta[ids], self.component_kappa[ids]

    @property
    def fit_token(self):
        """The fit of the model the stored terms belong to (compare with ``model.fit_token()``)."""
        return self._fit_token

    def slider(self, query: ArrayLike, k: int = 10, exclude: Any = None, grid: Any = None,
               candidates: int | None = None) -> MixtureSlider:
        """A certified ``p`` slider for one ``query`` ``(d,)`` over this index's two-component
        :class:`~anchordiv.MixtureAnchors` (docs/design.md §10): ``slider.at(p)`` gives
        ``(values, ids, certified)``, both ``(k,)``, for the mixture ``model.with_weights([p, 1 - p])``
        in its parametrisation (literal, balanced or calibrated), exact whether certified or not.

        One pass over the gallery now (``O(G d)``); each move then costs ``O(C)`` for ``C``
        candidates when certified, one exact search otherwise. ``exclude``: one gallery id (or
        ``-1``/``None``); ``grid``: interior points (int) or responsibilities in ``[0, 1]``;
        ``candidates``: items kept per grid point (default ``max(4 k, 256)``). Raises ``ValueError``
        for a reverse index (its divergences do not have the convex form; use
        ``with_model(m).search``), for a model that is not a two-component mixture, and for ``k``
        outside ``1 .. len(index)`` minus the excluded id. See :class:`anchordiv.slider.MixtureSlider`.
        """
        return MixtureSlider(self, query, k=k, exclude=exclude, grid=grid, candidates=candidates)

    def _augmented(self, model: AnchorModel) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys ``(G, d)`` and bias ``(G,)`` of the stored gallery under ``model``'s weights."""
        kappa, grad = model.combine_state(self._state)
        if self.reverse:
            bias = kappa - (grad * self._eta).sum(dim=1)
            return grad, check_finite_output(bias, "the gallery's conjugate terms", model.scale)
        return self._eta, -kappa

    def _keys_and_bias(self) -> tuple[torch.Tensor, torch.Tensor]:
        check_fit(self.model, self._fit_token, self._weights, "AnchorIndex", "AnchorIndex(model, gallery)")
        if self._terms is None:  # two threads may both make them: the same values, one kept
            self._terms = self._augmented(self.model)
        return self._terms

    def _query_vectors(self, queries: ArrayLike) -> tuple[torch.Tensor, torch.Tensor]:
        return query_terms(self.model, queries, self.reverse, self.device, self._eta.dtype)

    def _values(self, scores: torch.Tensor, offset: torch.Tensor) -> torch.Tensor:
        """Divergences ``(Q, k)``; refused when they overflow, as a ranking by them would be arbitrary
        (a NaN score sorts first, so it always reaches the returned values)."""
        return check_finite_output(offset[:, None] - scores, "the anchor divergences of the search", self.model.scale)


class CosineIndex(_InnerProductIndex):
    """Cosine-similarity baseline: ranks the gallery by ``x . y`` (unit rows), descending."""

    higher_is_closer = True

    def __init__(self, gallery: ArrayLike, device: str | torch.device | None = None):
        super().__init__(device)
        self._keys = unit_rows(as_matrix(gallery, "gallery"), "gallery").to(self.device)
        self._n_gallery = self._keys.shape[0]

    def _keys_and_bias(self) -> tuple[torch.Tensor, None]:
        return self._keys, None

    def _query_vectors(self, queries: ArrayLike) -> tuple[torch.Tensor, None]:
        return self._as_queries(queries, self._keys.shape[1]).to(self._keys.dtype), None


class ITIIndex(_InnerProductIndex):
    """Image -> text -> image baseline (our reading of the paper's ITI), similarity descending.

    Each image is represented by its cosine profile over the anchors, ``Gamma x`` ``(N,)``, and
    profiles are compared by cosine: ``sim(x, y) = (Gamma x) . (Gamma y) / (||Gamma x|| ||Gamma y||)``.
    With ``M = Gamma^T Gamma`` ``(d, d)``, ``(Gamma x) . (Gamma y) = x^T M y`` and
    ``||Gamma x||^2 = x^T M x``, so the gallery is stored as ``M y / ||Gamma y||`` ``(G, d)`` and a
    query as ``x / ||Gamma x||``: ``O(d)`` per pair, whatever the number of anchors.
    """

    higher_is_closer = True

    def __init__(self, anchors: ArrayLike, gallery: ArrayLike, device: str | torch.device | None = None):
        super().__init__(device)
        gallery_t = unit_rows(as_matrix(gallery, "gallery"), "gallery").to(self.device)
        anchors_t = unit_rows(as_matrix(anchors, "anchors"), "anchors")
        check_dimension(gallery_t, anchors_t.shape[1], "gallery")
        anchors_t = anchors_t.to(self.device, gallery_t.dtype)
        self._gram = anchors_t.T @ anchors_t
        projected = gallery_t @ self._gram
        self._keys = projected / self._profile_norms(projected, gallery_t)[:, None]
        self._n_gallery = gallery_t.shape[0]

    @staticmethod
    def _profile_norms(projected: torch.Tensor, unit: torch.Tensor) -> torch.Tensor:
        """``||Gamma x|| = sqrt(x^T M x)`` from ``projected = x M``; floored to stay finite."""
        squared = (projected * unit).sum(dim=1)
        return squared.clamp_min(torch.finfo(squared.dtype).tiny).sqrt()

    def _keys_and_bias(self) -> tuple[torch.Tensor, None]:
        return self._keys, None

    def _query_vectors(self, queries: ArrayLike) -> tuple[torch.Tensor, None]:
        unit = self._as_queries(queries, self._gram.shape[0]).to(self._keys.dtype)
        return unit / self._profile_norms(unit @ self._gram, unit)[:, None], None
