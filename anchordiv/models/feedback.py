"""An empirical anchor model whose weights are learned from the neighbours a person marks (issue 25)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from .._validation import ArrayLike, as_matrix, check_dimension, check_non_negative, check_positive_int, check_scale, unit_rows
from .empirical import EmpiricalAnchors


class FeedbackAnchors(EmpiricalAnchors):
    """The empirical anchor model with weights ``w`` learned so that marked items rank first.

    The fitted geometry is :class:`EmpiricalAnchors` with the learned weights: with ``a_i`` the
    unit-norm anchors ``(N, d)``, ``s`` the scale and ``eta = s x``,

        kappa_w(eta) = log sum_i w_i exp(eta . a_i),
        p_w(i | eta) = w_i exp(eta . a_i - kappa_w(eta)),
        D_w(x -> y)  = KL(p_w(.|eta_x) || p_w(.|eta_y))
                     = kappa_w(eta_y) - kappa_w(eta_x) - sum_i p_w(i|eta_x) s (y - x) . a_i.

    ``fit`` chooses ``w`` on the probability simplex by minimising

        L(w) = 1/|T| sum_{(q, y+) in T} 1/|C_q| sum_{y- in C_q} log(1 + exp((D_w(q -> y+) - D_w(q -> y-)) / tau))
               + lambda H(w),           H(w) = -sum_i w_i log w_i,

    where ``T`` holds the pairs (training query ``q``, one of its positives ``y+``), ``C_q`` is the
    query's negatives: its marked negatives, its ``n_hard`` nearest unmarked gallery items by
    cosine (the hard ones) and ``n_negatives`` unmarked items drawn at random with ``seed`` (shared
    by all queries), ``tau`` is ``temperature`` and ``lambda`` is ``sparsity``. The first term is the
    pairwise logistic (RankNet) ranking loss: each positive should be nearer the query than each
    negative. It averages over the negatives rather than taking a softmax over them, so the
    unmarked items that are in truth like the query (most of them are never marked) cost a bounded
    amount and are not pushed away at any price. The entropy term rewards weight on few anchors.
    With ``pairwise=True`` every positive also serves as a training query whose positives are the
    query and the other positives (items marked alike are alike to one another).

    Optimisation (float64, autograd): ``w = softmax(theta)`` with ``theta`` started at
    ``init_sharpness * z``, where ``z_i`` is anchor ``i``'s absolute standardised contrast,
    ``|mean logit s y . a_i of the training queries - that of the negatives|`` over the negatives'
    standard deviation; then ``max_iter`` Adam steps of size ``learning_rate`` on ``theta`` (few steps: the
    start and the step count act as the regulariser, as longer runs fit accidents of the marked
    items). Finally weights below ``threshold`` times the largest become exactly 0 and the rest are
    renormalised. Deterministic for a given ``seed``; the cost is ``O((Q' + n_hard + n_negatives) N d)``
    once plus ``O(max_iter (Q' + n_hard + n_negatives) N Q')``, ``Q'`` the training queries.

    Parameters
    ----------
    scale : float, default 100.0
        The logit scale ``s``; use the encoder's (``encoder.logit_scale``).
    temperature : float, default 1.0
        ``tau``, in nats of divergence.
    sparsity : float, default 0.05
        ``lambda``, the weight of the entropy term (``>= 0``).
    n_negatives : int, default 4096
        Unmarked gallery items drawn at random into every ``C_q`` (fewer when the gallery is smaller).
    n_hard : int, default 256
        Each query's cosine-nearest unmarked items added to its ``C_q``.
    max_iter : int, default 30
        Adam steps.
    learning_rate : float, default 0.1
        Adam's step size on ``theta``.
    init_sharpness : float, default 3.0
        The factor of ``z`` in the starting ``theta`` (0: start from uniform weights).
    threshold : float, default 0.01
        Weights below ``threshold * max(w)`` become 0 after the descent (in ``[0, 1)``).
    pairwise : bool, default True
        Whether the positives also serve as training queries (above).
    seed : int, default 0
        Seeds the random negatives.

    Attributes
    ----------
    weights_ : ndarray of shape (N,)
        The learned ``w``: non-negative, summing to 1, most entries exactly 0.
    support_ : ndarray of shape (N_+,)
        The ids of the anchors with ``w_i > 0``.
    anchors_ : tensor of shape (N_+, d)
        The unit-norm anchors of the support (the others carry no mass and change no divergence).
    log_weights_ : tensor of shape (N_+,)
        ``log w_i`` on the support.
    loss_ : float
        ``L(w)`` at the learned (sparse) weights.
    n_features_in_ : int
        ``d``.
    """

    def __init__(self, scale: float = 100.0, temperature: float = 1.0, sparsity: float = 0.05,
                 n_negatives: int = 4096, n_hard: int = 256, max_iter: int = 30, learning_rate: float = 0.1, init_sharpness: float = 3.0,
                 threshold: float = 0.01, pairwise: bool = True, seed: int = 0):
        self.scale = scale
        self.temperature = temperature
        self.sparsity = sparsity
        self.n_negatives = n_negatives
        self.n_hard = n_hard
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.init_sharpness = init_sharpness
        self.threshold = threshold
        self.pairwise = pairwise
        self.seed = seed

    @property
    def weights(self) -> np.ndarray | None:
        """The learned weights (``None`` before ``fit``), for code that reads an empirical model's."""
        return getattr(self, "weights_", None)

    def fit(self, anchors: ArrayLike, queries: ArrayLike = None, gallery: ArrayLike = None,
            positives: Sequence[Sequence[int]] = None, negatives: Sequence[Sequence[int]] | None = None
            ) -> "FeedbackAnchors":
        """Learn the anchor weights from marked gallery items.

        Parameters
        ----------
        anchors : array-like of shape (N, d)
            The vocabulary's text embeddings ``a_i`` (rows normalised inside).
        queries : array-like of shape (Q, d)
            The query image embeddings ``q``.
        gallery : array-like of shape (G, d)
            The gallery image embeddings ``y``.
        positives : list of Q lists of int
            For each query, the gallery ids marked "like the query" (at least one per query).
        negatives : list of Q lists of int, optional
            For each query, gallery ids marked "not like it" (always in ``C_q``).

        Returns
        -------
        FeedbackAnchors
            ``self``, fitted.
        """
        scale = check_scale(self.scale)
        tau = check_non_negative(self.temperature, "temperature", "e.g. temperature=1.0")
        if tau <= 0:
            raise ValueError(f"temperature must be positive; got {self.temperature!r}.")
        lam = check_non_negative(self.sparsity, "sparsity", "e.g. sparsity=0.05 (0 for none)")
        n_negatives = check_positive_int(self.n_negatives, "n_negatives", minimum=0)
        n_hard = check_positive_int(self.n_hard, "n_hard", minimum=0)
        max_iter = check_positive_int(self.max_iter, "max_iter", minimum=0)
        lr = check_non_negative(self.learning_rate, "learning_rate", "e.g. learning_rate=0.1")
        sharpness = check_non_negative(self.init_sharpness, "init_sharpness", "e.g. init_sharpness=2.0")
        threshold = check_non_negative(self.threshold, "threshold", "e.g. threshold=1e-3")
        if threshold >= 1:
            raise ValueError(f"threshold must be below 1 (a fraction of the largest weight); got {self.threshold!r}.")
        seed = check_positive_int(self.seed, "seed", minimum=0)
        if queries is None or gallery is None or positives is None:
            raise ValueError("fit needs anchors (N, d), queries (Q, d), gallery (G, d) and positives "
                             "(one list of gallery ids per query).")
        unit_anchors = unit_rows(as_matrix(anchors, "anchors"), "anchors")
        dim = unit_anchors.shape[1]
        query_rows = as_matrix(queries, "queries")
        check_dimension(query_rows, dim, "queries")
        gallery_rows = as_matrix(gallery, "gallery")
        check_dimension(gallery_rows, dim, "gallery")
        n_queries, n_gallery = query_rows.shape[0], gallery_rows.shape[0]
        marked = _id_lists(positives, n_queries, n_gallery, "positives", need_one=True)
        unliked = _id_lists(negatives, n_queries, n_gallery, "negatives", need_one=False) if negatives is not None \
            else [[] for _ in range(n_queries)]
        for row, (good, bad) in enumerate(zip(marked, unliked)):
            if set(good) & set(bad):
                raise ValueError(f"query {row} marks gallery ids {sorted(set(good) & set(bad))} both positive and "
                                 "negative; mark each item one way.")

        device = unit_anchors.device
        a = unit_anchors.to(torch.float64)
        q = unit_rows(query_rows.to(device), "queries").to(torch.float64)
        g = unit_rows(gallery_rows.to(device), "gallery").to(torch.float64)
        generator = np.random.default_rng(seed)
        batch = _training_groups(q, g, marked, unliked, n_negatives, n_hard, bool(self.pairwise), generator)
        weights = _descend(a, batch, scale, tau, lam, max_iter, lr, sharpness)
        weights = torch.where(weights >= threshold * weights.max(), weights, torch.zeros_like(weights))
        weights = weights / weights.sum()
        self.loss_ = float(_loss(weights, batch, tau, lam, scale, a))
        support = torch.nonzero(weights > 0).flatten()
        self.weights_ = weights.to(unit_anchors.dtype).cpu().numpy()
        self.support_ = support.cpu().numpy()
        self.anchors_ = unit_anchors[support]
        self.log_weights_ = weights[support].log().to(unit_anchors.dtype)
        self._mark_fitted(dim)
        return self


def _id_lists(lists: Any, n_queries: int, n_gallery: int, name: str, need_one: bool) -> list[list[int]]:
    """``lists`` as ``n_queries`` lists of distinct gallery ids in ``[0, n_gallery)``."""
    if isinstance(lists, (str, bytes)) or not hasattr(lists, "__len__"):
        raise ValueError(f"{name} must be a list of {n_queries} lists of gallery ids (one per query); got {lists!r}.")
    if len(lists) != n_queries:
        raise ValueError(f"{name} has {len(lists)} lists for {n_queries} queries; pass one list of gallery ids per query.")
    result = []
    for row, ids in enumerate(lists):
        array = np.asarray(list(ids) if not isinstance(ids, np.ndarray) else ids)
        if array.size and (array.dtype.kind not in "iu" and not (array.dtype.kind == "f" and np.all(array == np.round(array)))):
            raise ValueError(f"{name}[{row}] must hold whole gallery ids; got {ids!r}.")
        array = array.astype(np.int64).ravel()
        if need_one and array.size == 0:
            raise ValueError(f"{name}[{row}] is empty; mark at least one gallery item like query {row}.")
        bad = array[(array < 0) | (array >= n_gallery)]
        if bad.size:
            raise ValueError(f"{name}[{row}] has ids {bad[:5].tolist()} outside the gallery's range [0, {n_gallery}).")
        result.append(sorted(set(array.tolist())))
    return result


def _training_groups(q: torch.Tensor, g: torch.Tensor, marked: list[list[int]], unliked: list[list[int]],
                     n_negatives: int, n_hard: int, pairwise: bool, generator: np.random.Generator) -> dict:
    """The rows the loss sees and the groups that compare them.

    ``rows`` ``(M, d)``: the queries, then the gallery items any group uses (positives, marked
    negatives, each query's ``n_hard`` cosine-nearest unmarked items, and ``n_negatives`` items drawn
    at random, shared by all groups). ``groups``: ``(anchor row, positive rows, negative mask (M,))``
    per training query (the queries and, with ``pairwise``, their positives).
    """
    n_gallery = g.shape[0]
    n_hard = min(n_hard, n_gallery)
    hard = [np.argsort(-(g @ query).cpu().numpy(), kind="stable")[:n_hard + len(good) + len(bad)]
            for query, good, bad in zip(q, marked, unliked)]
    drawn = generator.choice(n_gallery, size=min(n_negatives, n_gallery), replace=False)
    used = np.unique(np.concatenate([drawn, *hard, *[np.asarray(ids, np.int64) for ids in marked + unliked]]))
    position = {int(item): row + q.shape[0] for row, item in enumerate(used)}
    rows = torch.cat([q, g[torch.as_tensor(used)]])
    random_rows = np.asarray([position[int(item)] for item in drawn], np.int64)
    groups = []
    for row, (good, bad, nearest) in enumerate(zip(marked, unliked, hard)):
        good_rows = [position[item] for item in good]
        mask = np.zeros(rows.shape[0], bool)
        mask[random_rows] = True
        mask[[position[int(item)] for item in nearest]] = True
        mask[[position[item] for item in bad]] = True
        mask[good_rows] = False
        mask[:q.shape[0]] = False
        groups.append((row, good_rows, mask))
        if pairwise:
            members = [row, *good_rows]
            for k, member in enumerate(members[1:], start=1):
                groups.append((member, members[:k] + members[k + 1:], mask))
    return {"rows": rows, "groups": groups}


def _prepared(a: torch.Tensor, batch: dict, scale: float) -> dict:
    """The logits ``L = s rows a^T`` ``(M, N)``, their row maxima ``m`` and ``E = exp(L - m)``, with the groups
    as index tensors."""
    logits = scale * batch["rows"] @ a.T
    peak = logits.amax(dim=1)
    groups = [(anchor, torch.as_tensor(positive), torch.as_tensor(np.flatnonzero(mask)))
              for anchor, positive, mask in batch["groups"]]
    return {"logits": logits, "shifted": torch.exp(logits - peak[:, None]), "peak": peak, "groups": groups,
            "anchors": torch.as_tensor([group[0] for group in batch["groups"]])}


def _objective(w: torch.Tensor, prepared: dict, tau: float, lam: float) -> torch.Tensor:
    """``L(w)``: the mean pairwise logistic ranking loss plus ``lam`` times the entropy of ``w``."""
    logits, shifted = prepared["logits"], prepared["shifted"]
    total = shifted @ w
    kappa = torch.log(total) + prepared["peak"]
    anchors = prepared["anchors"]
    tilt = w * shifted[anchors] / total[anchors, None]
    divergence = (kappa[None, :] - kappa[anchors, None] - tilt @ logits.T
                  + (tilt * logits[anchors]).sum(dim=1, keepdim=True))
    ranking, pairs = 0.0, 0
    for k, (_, positive, negative) in enumerate(prepared["groups"]):
        margins = (divergence[k, positive][:, None] - divergence[k, negative][None, :]) / tau
        ranking = ranking + torch.nn.functional.softplus(margins).mean(dim=1).sum()
        pairs += positive.numel()
    entropy = -(w * torch.log(w.clamp_min(1e-300))).sum()
    return ranking / pairs + lam * entropy


def _loss(w: torch.Tensor, batch: dict, tau: float, lam: float, scale: float, a: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return _objective(w, _prepared(a, batch, scale), tau, lam)


def _contrast(prepared: dict) -> torch.Tensor:
    """Each anchor's absolute standardised contrast ``z_i`` ``(N,)``: the mean logit of the marked
    items (the groups' anchors) minus that of their negatives, over the negatives' standard
    deviation, in absolute value (an anchor the marked items all lack tells them apart too)."""
    logits = prepared["logits"]
    members = logits[torch.unique(prepared["anchors"])]
    negative = torch.unique(torch.cat([group[2] for group in prepared["groups"]]))
    others = logits[negative]
    return ((members.mean(dim=0) - others.mean(dim=0)) / others.std(dim=0).clamp_min(1e-12)).abs()


def _descend(a: torch.Tensor, batch: dict, scale: float, tau: float, lam: float, steps: int,
             lr: float, sharpness: float) -> torch.Tensor:
    """Adam on the logits ``theta`` of ``w = softmax(theta)`` from uniform weights: ``w`` ``(N,)``."""
    prepared = _prepared(a, batch, scale)
    theta = (sharpness * _contrast(prepared)).requires_grad_(True)
    optimiser = torch.optim.Adam([theta], lr=lr)
    for _ in range(steps):
        optimiser.zero_grad()
        _objective(torch.softmax(theta, dim=0), prepared, tau, lam).backward()
        optimiser.step()
    return torch.softmax(theta.detach(), dim=0)
