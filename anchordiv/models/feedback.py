"""An empirical anchor model whose weights are learned from the neighbours a person marks (issue 25)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from .._validation import ArrayLike, Interval, as_matrix, check_dimension, one_of, unit_rows
from .empirical import DiscreteAnchors


# The starts "auto" descends from: the gallery's main axes with the contrast, and the contrast alone.
AUTO_SPREAD_WEIGHTS = (0.85, 0.0)


class FeedbackAnchors(DiscreteAnchors):
    """The empirical anchor model with weights ``w`` learned so that marked items rank near their queries.

    The fitted geometry is :class:`EmpiricalAnchors` with the learned weights: with ``a_i`` the
    unit-norm anchors ``(N, d)``, ``s`` the scale and ``eta = s x``,

        kappa_w(eta) = log sum_i w_i exp(eta . a_i),
        p_w(i | eta) = w_i exp(eta . a_i - kappa_w(eta)),
        D_w(x -> y)  = KL(p_w(.|eta_x) || p_w(.|eta_y))
                     = kappa_w(eta_y) - kappa_w(eta_x) - sum_i p_w(i|eta_x) s (y - x) . a_i.

    ``fit`` chooses ``w`` on the probability simplex by minimising

        L(w) = 1/|T| sum_{(q, y+) in T} beta softplus((r_q(y+) - alpha) / beta) + lambda H(w),
        r_q(y+) = 1/|C_q| sum_{y- in C_q} sigmoid((D_w(q -> y+) - D_w(q -> y-)) / tau),
        H(w) = -sum_i w_i log w_i,

    where ``T`` holds the pairs (training query ``q``, one of its positives ``y+``), ``C_q`` is the
    query's comparison items: its marked negatives, its ``n_hard`` nearest unmarked gallery items by
    cosine and ``n_negatives`` unmarked items drawn at random with ``seed`` (shared by all
    queries); ``r_q(y+)`` is the smoothed fraction of them nearer ``q`` than ``y+`` (its rank, as a
    fraction), ``alpha`` is ``top_fraction``, ``beta`` is ``smoothing``, ``tau`` is ``temperature``
    and ``lambda`` is ``sparsity``. The first term asks each positive to rank within the top
    ``alpha`` of the comparison items and no further: a person marks a few of the items they mean
    and leaves the rest unmarked, so the unmarked items nearest the query are often alike to it too,
    and a loss that pushed every unmarked item behind every marked one would learn what tells the
    few marked items from their unmarked likes (in the built-in world: their names) instead of what
    they share. With ``pairwise=True`` every positive also serves as a training query whose
    positives are the query and the other positives (items marked alike are alike to one another).

    Optimisation (float64, autograd): ``w = softmax(theta)`` with ``theta`` started at
    ``init_sharpness * (spread_weight * z_spread + z_contrast)``: ``z_spread`` is the log standard deviation of
    anchor ``i``'s logit ``s y . a_i`` over the random and hard comparison items, standardised over
    the anchors (the terms along which the gallery varies most), ``z_contrast`` the absolute
    difference of the training queries' mean logit and the comparison items', over that standard
    deviation (the terms on which the marked items stand out, by having them or by lacking them);
    then ``max_iter`` Adam steps of size ``learning_rate`` on ``theta``. Finally weights below
    ``threshold`` times the largest become exactly 0 and the rest are renormalised. Deterministic
    for a given ``seed``; the cost is ``O(M N d)`` once (``M = Q' + n_hard + n_negatives`` rows,
    ``Q'`` the training queries) plus ``O(max_iter (M N Q' + P M))`` for the steps, ``P`` the pairs.

    Parameters
    ----------
    scale : float, default 100.0
        The logit scale ``s``; use the encoder's (``encoder.logit_scale``).
    temperature : float, default 1.0
        ``tau``, in nats of divergence.
    top_fraction : float, default 0.1
        ``alpha``, in ``(0, 1)``: how far down the comparison items a positive may rank at no cost.
    smoothing : float, default 0.05
        ``beta`` (``> 0``): the softness of the rank penalty's corner at ``alpha``.
    sparsity : float, default 0.0
        ``lambda``, the weight of the entropy term (``>= 0``); larger values put the weight on
        fewer anchors (at the cost of the ranking on the built-in world, docs/benchmarks.md).
    n_negatives : int, default 4096
        Unmarked gallery items drawn at random into every ``C_q`` (fewer when the gallery is smaller).
    n_hard : int, default 256
        Each query's cosine-nearest unmarked items added to its ``C_q``.
    max_iter : int, default 60
        Adam steps.
    learning_rate : float, default 0.1
        Adam's step size on ``theta``.
    init_sharpness : float, default 3.0
        The factor of the start direction in the starting ``theta`` (0: start from uniform weights).
    spread_weight : float or "auto", default "auto"
        The weight of ``z_spread`` in the start direction (``>= 0``). It leans the learner towards the
        terms along which the gallery varies most, which keeps the learned weight on few, readable
        terms when that is what the marked items share (a style in the built-in world); 0 starts from
        the contrast alone, which ranks better when the marked items share something else (the same
        emoji) at the price of weight spread over many terms (docs/benchmarks.md). ``"auto"``
        descends from both (:data:`AUTO_SPREAD_WEIGHTS`) and keeps the weights that sit most on what
        the marked items share, ``sum_i w_i c_i`` with ``c_i`` the marked items' mean logit of anchor
        ``i`` minus the comparison items', over the latter's standard deviation: the marks decide
        (twice the descent's cost).
    threshold : float, default 0.001
        Weights below ``threshold * max(w)`` become 0 after the descent (in ``[0, 1)``).
    pairwise : bool, default True
        Whether the positives also serve as training queries (above).
    seed : int, default 0
        Seeds the random comparison items.

    Attributes
    ----------
    weights_ : ndarray of shape (N,)
        The learned ``w``: non-negative, summing to 1, entries below the threshold exactly 0.
    support_ : ndarray of shape (N_+,)
        The ids of the anchors with ``w_i > 0``.
    anchors_ : tensor of shape (N_+, d)
        The unit-norm anchors of the support (the others carry no mass and change no divergence).
    log_weights_ : tensor of shape (N_+,)
        ``log w_i`` on the support.
    loss_ : float
        ``L(w)`` at the learned (thresholded) weights.
    spread_weight_ : float
        The start's ``spread_weight`` the weights descend from (with ``"auto"``, the one chosen).
    n_features_in_ : int
        ``d``.
    """

    parameter_constraints = {
        **DiscreteAnchors.parameter_constraints,
        "temperature": Interval(0, open_low=True, example="e.g. temperature=1.0"),
        "top_fraction": Interval(0, 1, open_low=True, open_high=True, example="a fraction of the gallery, e.g. 0.1"),
        "smoothing": Interval(0, open_low=True, example="e.g. smoothing=0.05"),
        "sparsity": Interval(example="e.g. sparsity=0.05, 0 for none"),
        "n_negatives": Interval(integer=True), "n_hard": Interval(integer=True), "max_iter": Interval(integer=True),
        "learning_rate": Interval(example="e.g. learning_rate=0.1"),
        "init_sharpness": Interval(example="e.g. init_sharpness=2.0"),
        "spread_weight": Interval(also=("auto",), example='e.g. 1.0, 0 for none, "auto" to let the marks choose'),
        "threshold": Interval(0, 1, open_high=True, example="a fraction of the largest weight, e.g. 1e-3"),
        "pairwise": one_of(True, False),
        "seed": Interval(integer=True),
    }

    def __init__(self, *, scale: float = 100.0, temperature: float = 1.0, top_fraction: float = 0.1,
                 smoothing: float = 0.05, sparsity: float = 0.0, n_negatives: int = 4096, n_hard: int = 256,
                 max_iter: int = 60, learning_rate: float = 0.1, init_sharpness: float = 3.0,
                 spread_weight: float | str = "auto",
                 threshold: float = 0.001, pairwise: bool = True, seed: int = 0):
        super().__init__(scale=scale)
        self.temperature = temperature
        self.top_fraction = top_fraction
        self.smoothing = smoothing
        self.sparsity = sparsity
        self.n_negatives = n_negatives
        self.n_hard = n_hard
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.init_sharpness = init_sharpness
        self.spread_weight = spread_weight
        self.threshold = threshold
        self.pairwise = pairwise
        self.seed = seed

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
        params = self.check_params()
        starts = AUTO_SPREAD_WEIGHTS if params["spread_weight"] == "auto" else (params["spread_weight"],)
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
        generator = np.random.default_rng(params["seed"])
        batch = _training_groups(q, g, marked, unliked, params["n_negatives"], params["n_hard"], params["pairwise"],
                                 generator)
        prepared = _prepared(a, batch, params["scale"])
        terms = dict(tau=params["temperature"], lam=params["sparsity"], alpha=params["top_fraction"],
                     beta=params["smoothing"])
        fits = [_descend(prepared, terms, steps=params["max_iter"], lr=params["learning_rate"],
                         sharpness=params["init_sharpness"], spread_weight=weight, threshold=params["threshold"])
                + (weight,) for weight in starts]
        # Of several starts, the weights that sit most on what the marked items share.
        shared = _shared(prepared)[0]
        weights, self.loss_, self.spread_weight_ = max(fits, key=lambda fitted: float((fitted[0] * shared).sum()))
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
    wanted = [n_hard + len(good) + len(bad) for good, bad in zip(marked, unliked)]
    # Each query's nearest rows, ranked on the rows' device and read once.
    nearest = torch.sort(-(q @ g.T), dim=1, stable=True).indices[:, :max(wanted)].cpu().numpy()
    hard = [row[:count] for row, count in zip(nearest, wanted)]
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


def _divergences(w: torch.Tensor, prepared: dict) -> torch.Tensor:
    """``D_w(anchor row of group k -> row m)`` ``(K, M)`` from the prepared logits."""
    logits, shifted = prepared["logits"], prepared["shifted"]
    total = shifted @ w
    kappa = torch.log(total) + prepared["peak"]
    anchors = prepared["anchors"]
    tilt = w * shifted[anchors] / total[anchors, None]
    return (kappa[None, :] - kappa[anchors, None] - tilt @ logits.T
            + (tilt * logits[anchors]).sum(dim=1, keepdim=True))


def _objective(w: torch.Tensor, prepared: dict, tau: float, lam: float, alpha: float, beta: float) -> torch.Tensor:
    """``L(w)``: the mean top-``alpha`` rank penalty of the positives plus ``lam`` times the entropy of ``w``."""
    divergence = _divergences(w, prepared)
    penalty, pairs = 0.0, 0
    for k, (_, positive, negative) in enumerate(prepared["groups"]):
        nearer = torch.sigmoid((divergence[k, positive][:, None] - divergence[k, negative][None, :]) / tau).mean(dim=1)
        penalty = penalty + (beta * torch.nn.functional.softplus((nearer - alpha) / beta)).sum()
        pairs += positive.numel()
    entropy = -(w * torch.log(w.clamp_min(1e-300))).sum()
    return penalty / pairs + lam * entropy


def _start(prepared: dict, spread_weight: float) -> torch.Tensor:
    """The starting direction ``spread_weight * z_spread + z_contrast`` ``(N,)``.

    ``z_spread``: the log standard deviation of each anchor's logit over the comparison items (the
    gallery), standardised over the anchors: the terms along which the gallery varies most (in the
    built-in world, its styles). ``z_contrast``: the absolute difference of the marked items' mean
    logit (the groups' anchors) and the comparison items', in units of the latter's standard
    deviation: the terms on which the marked items stand out, by having them or by lacking them."""
    shared, spread = _shared(prepared)
    return spread_weight * _standardised(spread.log()) + shared.abs()


def _shared(prepared: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """``(shared (N,), spread (N,))``: how much more the marked items (the groups' anchors) have each
    term than the comparison items, their mean logits' difference in units of the comparison items'
    standard deviation (``spread``)."""
    logits = prepared["logits"]
    members = logits[torch.unique(prepared["anchors"])]
    others = logits[torch.unique(torch.cat([group[2] for group in prepared["groups"]]))]
    spread = others.std(dim=0).clamp_min(1e-12)
    return (members.mean(dim=0) - others.mean(dim=0)) / spread, spread


def _standardised(values: torch.Tensor) -> torch.Tensor:
    deviation = values.std()
    return (values - values.mean()) / deviation if deviation > 0 else torch.zeros_like(values)


def _descend(prepared: dict, terms: dict, steps: int, lr: float, sharpness: float, spread_weight: float,
             threshold: float) -> tuple[torch.Tensor, float]:
    """Adam on the logits ``theta`` of ``w = softmax(theta)`` from ``sharpness`` times :func:`_start`,
    ``terms`` the objective's ``tau, lam, alpha, beta``; ``(w (N,) after thresholding, L(w))``."""
    theta = (sharpness * _start(prepared, spread_weight)).requires_grad_(True)
    optimiser = torch.optim.Adam([theta], lr=lr)
    for _ in range(steps):
        optimiser.zero_grad()
        _objective(torch.softmax(theta, dim=0), prepared, **terms).backward()
        optimiser.step()
    weights = torch.softmax(theta.detach(), dim=0)
    weights = torch.where(weights >= threshold * weights.max(), weights, torch.zeros_like(weights))
    weights = weights / weights.sum()
    with torch.no_grad():
        return weights, float(_objective(weights, prepared, **terms))
