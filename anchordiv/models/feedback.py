"""An empirical anchor model whose weights follow what the items a person marks share with the query
(issues 25 and 50)."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import torch

from .._validation import ArrayLike, Interval, as_matrix, check_dimension, unit_rows
from .empirical import DiscreteAnchors

# The kind of every term when the caller names none: the vocabulary is one kind.
ONE_KIND = "term"


class FeedbackAnchors(DiscreteAnchors):
    """The empirical anchor model with weights ``w`` on the terms that a query and the items marked
    like it share.

    The fitted geometry is :class:`EmpiricalAnchors` with the learned weights: with ``a_i`` the
    unit-norm anchors ``(N, d)``, ``s`` the scale and ``eta = s x``,

        kappa_w(eta) = log sum_i w_i exp(eta . a_i),
        D_w(x -> y)  = KL(p_w(.|eta_x) || p_w(.|eta_y)),  p_w(i | eta) = w_i exp(eta . a_i - kappa_w(eta)).

    ``fit`` reads each term's standardised score on every member ``m`` of a query's group ``g``
    (the query and the items marked like it, ``M_g`` of them)::

        z_i(m) = (m . a_i - mu_i) / sigma_i,

    ``mu_i`` and ``sigma_i`` the mean and standard deviation of ``y . a_i`` over the reference rows
    (at most ``n_reference`` gallery rows drawn with ``seed``); ``z`` does not depend on ``s``. Then:

    * the group's **shared score** of term ``i``, a soft minimum over its members minus a soft
      maximum over the items marked "not like it" (``U_g``, none: 0), the latter kept only above 0::

          S_i^g = -tau log (1/M_g sum_m exp(-z_i(m) / tau)) - max(0, tau log (1/|U_g| sum_u exp(z_i(u) / tau)));

      a term all members hold scores high, one that only the query holds (its style, when the marks
      share its object) scores low;
    * the group's **agreement** within a kind ``k`` of terms (``kinds``: e.g. object names, styles):
      with ``p_m(. | k)`` member ``m``'s pick among the kind's terms, the log of their
      Bhattacharyya coefficient (the sum over the terms of the members' geometric mean)::

          A_k^g = log sum_{i in k} exp(1/M_g sum_m log p_m(i | k)),  p_m(i | k) = exp(gamma z_i(m)) / sum_{j in k} exp(gamma z_j(m)),

      at most 0 (every member picks alike), however the picks spread over near-synonyms ("office
      worker", "woman office worker"). Unlike ``S``, it does not grow with the kind's size: five
      styles and 1,644 object names compete fairly;
    * the kind's **excess** agreement ``E_k = A_k - A_k^0``: ``A_k = 1/Q sum_g A_k^g`` over the
      ``Q`` queries, less ``A_k^0``, the mean agreement of ``n_null`` groups per query of as many
      reference rows drawn at random with ``seed`` (a coarse kind, a few generic phrases, agrees on anything;
      only agreement beyond chance says what the marks share);
    * the chosen kind ``k* = argmax_k E_k``,
      and the weights ``w_i = 1/Q sum_g softmax_{j in k*}(beta S_j^g)_i`` on its terms (0 on every
      other term): most on the shared term, the rest spread over its kind, which is what tells the
      kind's terms apart (weight on a single anchor would make every divergence 0);
    * weights below ``threshold`` times the largest become exactly 0 and the rest are renormalised.

    The marks **decide** (``decided_``) when ``A_{k*} >= log(min_agreement)`` (something is shared
    by every member) and ``E_{k*} - E_k >= min_margin`` for every other kind ``k`` (it is clearly of
    one kind): otherwise they are too few, or contradict each other, to tell what they share, and
    the weights are the best guess of a result that should be shown as such. Deterministic for a
    given ``seed``; the cost is ``O(R N d)`` for the reference rows (``R`` of them) plus
    ``O((M + n_null M) N)`` for the ``M`` members and marked items and the random groups.

    Parameters
    ----------
    scale : float, default 100.0
        The logit scale ``s`` of the fitted geometry; use the encoder's (``encoder.logit_scale``).
    softness : float, default 0.5
        ``tau`` (``> 0``), in units of ``z``: how soft the shared score's minimum (and maximum) is.
    agreement_sharpness : float, default 2.0
        ``gamma`` (``> 0``): how sharply each member picks a term of a kind.
    weight_sharpness : float, default 1.0
        ``beta`` (``>= 0``): how much of the weight goes to the most shared terms of the kind rather
        than spread evenly over it (0: uniform over the kind).
    min_agreement : float, default 0.5
        The smallest Bhattacharyya coefficient ``exp(A_{k*})`` of the members' picks that decides, in ``(0, 1]``.
    min_margin : float, default 0.5
        ``E_{k*} - E_k``, in nats, by which the chosen kind must lead every other one (``>= 0``).
    n_null : int, default 64
        Random groups per query whose agreement is chance's, ``A_k^0``.
    n_reference : int, default 20000
        Gallery rows the standardisation reads (all when the gallery is smaller).
    threshold : float, default 0.001
        Weights below ``threshold * max(w)`` become 0 (in ``[0, 1)``).
    seed : int, default 0
        Seeds the draws of the reference rows and of the random groups.

    Attributes
    ----------
    weights_ : ndarray of shape (N,)
        The learned ``w``: non-negative, summing to 1, 0 outside the chosen kind and below the threshold.
    support_ : ndarray of shape (N_+,)
        The ids of the anchors with ``w_i > 0``.
    anchors_ : tensor of shape (N_+, d)
        The unit-norm anchors of the support (the others carry no mass and change no divergence).
    log_weights_ : tensor of shape (N_+,)
        ``log w_i`` on the support.
    shared_ : ndarray of shape (N,)
        ``1/Q sum_g S_i^g``, each term's shared score.
    agreement_ : dict of str to float
        ``A_k`` for every kind ``k``.
    excess_ : dict of str to float
        ``E_k`` for every kind ``k``.
    kind_ : str
        ``k*``, the chosen kind.
    decided_ : bool
        Whether the marks decide (above); when ``False`` the weights are a guess not to act on.
    n_features_in_ : int
        ``d``.
    """

    parameter_constraints = {
        **DiscreteAnchors.parameter_constraints,
        "softness": Interval(0, open_low=True, example="e.g. softness=0.5"),
        "agreement_sharpness": Interval(0, open_low=True, example="e.g. agreement_sharpness=2.0"),
        "weight_sharpness": Interval(example="e.g. weight_sharpness=1.0, 0 for uniform over the kind"),
        "min_agreement": Interval(0, 1, open_low=True, example="a coefficient in (0, 1], e.g. 0.5"),
        "min_margin": Interval(example="in nats per member, e.g. 0.5"),
        "n_reference": Interval(1, integer=True, example="e.g. 20000"),
        "n_null": Interval(1, integer=True, example="e.g. 64"),
        "threshold": Interval(0, 1, open_high=True, example="a fraction of the largest weight, e.g. 1e-3"),
        "seed": Interval(integer=True),
    }

    def __init__(self, *, scale: float = 100.0, softness: float = 0.5, agreement_sharpness: float = 2.0,
                 weight_sharpness: float = 1.0, min_agreement: float = 0.5, min_margin: float = 0.5,
                 n_reference: int = 20000, n_null: int = 64, threshold: float = 0.001, seed: int = 0):
        super().__init__(scale=scale)
        self.softness = softness
        self.agreement_sharpness = agreement_sharpness
        self.weight_sharpness = weight_sharpness
        self.min_agreement = min_agreement
        self.min_margin = min_margin
        self.n_reference = n_reference
        self.n_null = n_null
        self.threshold = threshold
        self.seed = seed

    def fit(self, anchors: ArrayLike, queries: ArrayLike = None, gallery: ArrayLike = None,
            positives: Sequence[Sequence[int]] = None, negatives: Sequence[Sequence[int]] | None = None,
            kinds: Sequence[str] | None = None) -> "FeedbackAnchors":
        """Learn the anchor weights from marked gallery items.

        Parameters
        ----------
        anchors : array-like of shape (N, d)
            The vocabulary's text embeddings ``a_i`` (rows normalised inside).
        queries : array-like of shape (Q, d)
            The query image embeddings; required, like ``gallery`` and ``positives`` (the marks are
            what is learned from: there is no target ``y``, and this argument stands where
            scikit-learn's would).
        gallery : array-like of shape (G, d)
            The gallery image embeddings ``y``.
        positives : list of Q lists of int
            For each query, the gallery ids marked "like the query" (at least one per query).
        negatives : list of Q lists of int, optional
            For each query, gallery ids marked "not like it".
        kinds : sequence of N str, optional
            The kind of each term (e.g. ``"object"``, ``"style"``); ``None``: all one kind.

        Returns
        -------
        FeedbackAnchors
            ``self``, fitted.
        """
        params = self.check_params()
        unit_anchors = unit_rows(as_matrix(anchors, "anchors"), "anchors")  # the first argument's faults first
        if queries is None or gallery is None or positives is None:
            raise ValueError("fit needs anchors (N, d), queries (Q, d), gallery (G, d) and positives "
                             "(one list of gallery ids per query).")
        n_terms, dim = unit_anchors.shape
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
        kind_of = _kind_labels(kinds, n_terms)

        device = unit_anchors.device
        a = unit_anchors.to(torch.float64)
        q = unit_rows(query_rows.to(device), "queries").to(torch.float64)
        g = unit_rows(gallery_rows.to(device), "gallery").to(torch.float64)
        generator = np.random.default_rng(params["seed"])
        reference = np.sort(generator.choice(n_gallery, size=min(params["n_reference"], n_gallery), replace=False))
        reference_scores = g[torch.as_tensor(reference, device=device)] @ a.T
        standardise = _standardiser(reference_scores)
        groups = [(standardise(torch.cat([q[[row]], g[torch.as_tensor(good, device=device)]]) @ a.T),
                   standardise(g[torch.as_tensor(bad, device=device)] @ a.T) if bad else None)
                  for row, (good, bad) in enumerate(zip(marked, unliked))]
        members = {name: torch.as_tensor(np.flatnonzero(kind_of == name), device=device) for name in dict.fromkeys(kind_of)}
        tau, gamma = params["softness"], params["agreement_sharpness"]
        scores = torch.stack([_shared_score(z, z_unlike, tau) for z, z_unlike in groups])  # (Q, N)
        chance = [standardise(reference_scores[torch.as_tensor(generator.integers(len(reference), size=z.shape[0]),
                                                               device=device)])
                  for z, _ in groups for _ in range(params["n_null"])]
        agreement = _mean_agreement([z for z, _ in groups], members, gamma)
        baseline = _mean_agreement(chance, members, gamma)
        excess = {name: value - baseline[name] for name, value in agreement.items()}
        kind = max(excess, key=excess.get)
        chosen = members[kind]
        weights = torch.zeros(n_terms, dtype=torch.float64, device=device)
        weights[chosen] = torch.softmax(params["weight_sharpness"] * scores[:, chosen], dim=1).mean(dim=0)
        weights = torch.where(weights >= params["threshold"] * weights.max(), weights, torch.zeros_like(weights))
        weights = weights / weights.sum()
        runner_up = max((value for name, value in excess.items() if name != kind), default=-math.inf)
        self.decided_ = bool(agreement[kind] >= math.log(params["min_agreement"])
                             and excess[kind] - runner_up >= params["min_margin"])
        self.kind_, self.agreement_, self.excess_ = str(kind), agreement, excess
        self.shared_ = scores.mean(dim=0).cpu().numpy()
        support = torch.nonzero(weights > 0).flatten()
        self.weights_ = weights.to(unit_anchors.dtype).cpu().numpy()
        self.support_ = support.cpu().numpy()
        self.anchors_ = unit_anchors[support]
        self.log_weights_ = weights[support].log().to(unit_anchors.dtype)
        self._mark_fitted(dim)
        return self


def _kind_labels(kinds: Sequence[str] | None, n_terms: int) -> np.ndarray:
    """``kinds`` as an ``(N,)`` array of str (all :data:`ONE_KIND` when ``None``)."""
    if kinds is None:
        return np.full(n_terms, ONE_KIND, dtype=object)
    if isinstance(kinds, (str, bytes)) or len(kinds) != n_terms:
        raise ValueError(f"kinds must name the kind of each of the {n_terms} terms (one str per anchor); got "
                         f"{kinds if isinstance(kinds, (str, bytes)) else f'{len(kinds)} entries'!r}.")
    return np.asarray([str(kind) for kind in kinds], dtype=object)


def _standardiser(reference_scores: torch.Tensor):
    """The map from scores ``(n, N)`` to ``z = (scores - mu) / sigma``, ``mu`` and ``sigma`` over the
    rows of ``reference_scores`` ``(R, N)`` (a term on which the reference does not vary gets ``sigma`` 1)."""
    mean = reference_scores.mean(dim=0)
    deviation = reference_scores.std(dim=0) if reference_scores.shape[0] > 1 else torch.ones_like(mean)
    deviation = torch.where(deviation > 0, deviation, torch.ones_like(deviation))
    return lambda scores: (scores - mean) / deviation


def _shared_score(z: torch.Tensor, z_unlike: torch.Tensor | None, tau: float) -> torch.Tensor:
    """``S_i`` ``(N,)`` of one group: the soft minimum of its members' ``z`` ``(M, N)``, less the soft
    maximum (above 0) of the items marked "not like it" ``(U, N)``."""
    members = -tau * (torch.logsumexp(-z / tau, dim=0) - math.log(z.shape[0]))
    if z_unlike is None:
        return members
    unlike = tau * (torch.logsumexp(z_unlike / tau, dim=0) - math.log(z_unlike.shape[0]))
    return members - unlike.clamp_min(0.0)


def _mean_agreement(groups: list[torch.Tensor], kinds: dict[str, torch.Tensor], gamma: float) -> dict[str, float]:
    """Per kind (its term ids in ``kinds``), the mean :func:`_agreement` of the groups' ``z`` ``(M, N)``."""
    return {name: float(torch.stack([_agreement(z[:, ids], gamma) for z in groups]).mean()) for name, ids in kinds.items()}


def _agreement(z: torch.Tensor, gamma: float) -> torch.Tensor:
    """``A_k`` of one group over one kind's columns of ``z`` ``(M, N_k)``: the log Bhattacharyya
    coefficient of the members' ``softmax(gamma z)``, ``log sum_i exp(mean_m log p_m(i))``."""
    return torch.logsumexp(torch.log_softmax(gamma * z, dim=1).mean(dim=0), dim=0)


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
