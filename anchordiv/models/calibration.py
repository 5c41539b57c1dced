"""Calibrated ``p`` for a two-component :class:`~anchordiv.MixtureAnchors` (docs/design.md §3).

With literal or balanced weights the neighbourhoods hardly move until ``p`` is near 1 and then
move all at once. Calibration measures, on a reference set (the gallery) and without labels, how
far the mixture's neighbourhoods have moved from B's towards A's at each log-odds
``lambda = log(w_A / w_B)``, and maps ``p`` to the ``lambda`` at which they have moved the fraction
``p`` of the way.

**The measure.** For a query ``x``, let ``N_A`` and ``N_B`` be its top-``k`` under A alone and B
alone and ``N_lambda`` under the mixture. On A's side a neighbour ``y`` counts as *moved* when its
A-divergence ``D_A(x -> y)`` is below ``t_A(x)``, the midpoint between the mean A-divergence over
``N_A`` and over ``N_B``; on B's side when ``D_B(x -> y)`` is above the midpoint ``t_B(x)`` of the
mean B-divergences. With ``F_A(N)`` and ``F_B(N)`` the fractions of ``N`` that have moved on each side,

    progress_A(x, lambda) = (F_A(N_lambda) - F_A(N_B)) / (F_A(N_A) - F_A(N_B))
    progress_B(x, lambda) = (F_B(N_lambda) - F_B(N_B)) / (F_B(N_A) - F_B(N_B))

are 0 at B alone and 1 at A alone. Averaged over a fixed sample of queries, ``progress(lambda)``
is the *smaller* of the two sides, made non-decreasing: the grid looks half-way only once it is
at least half-way on both sides. Three facts shaped this. First, divergences, not identities, are
compared: a coarse anchor set (seven style phrases) ranks the images *within* a style almost at
random, so "how many of B's exact top-``k`` remain" collapses long before the grid stops looking
like B's, whereas the B-divergence of the neighbours stays low for as long as they share the
query's style, which is what a person sees. Second, the side of the fine anchor set (object
names) moves first and invisibly: the neighbours become more A-like *within* the query's style
(closer in A's geometry, still other objects) well before they leave it, so its progress alone
would call a grid that still shows one style "nearly A". The slower side is the one a person
sees move. (Measured on the built-in world's *training* split, softmax at s = 10: A's side is at
0.97 where B's is at 0.01 and the grid is unchanged; same-object and same-style agreement move
while B's side goes from 0.03 to 0.96.) Third, neighbours are counted, not their divergences
averaged: the first neighbours to leave the query's style are the least B-unlike, so the mean
B-divergence lags the number that have left, and with means ``p = 0.5`` sat past half-way (on the
training split, 400 queries: same-object agreement 61% and same-style 56% of the way for softmax,
65% and 58% for the Gaussian; counting gives 58% and 52%, 60% and 54%). Then ``p`` maps to
``lambda(p) = progress^{-1}(p)`` by linear interpolation, so ``p = 0`` and ``p = 1`` are B and A
exactly, ``p = 1/2`` is half-way, and the
map is monotone. The sample is drawn with a fixed seed, so the calibration is deterministic.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .._validation import check_positive_int
from .base import AnchorModel

# Log-odds grid: this many points over the span where the neighbourhoods move, measured on this many
# queries: about half a second for a 20,000-image gallery on 2 cores.
GRID_POINTS = 33
QUERIES = 128
# The fewest reference items a calibration measures on: a query, a neighbour, and one item left out of
# its neighbourhood. With fewer, every top-k under A is every top-k under B (all the other items).
MIN_REFERENCE = 3


class CannotCalibrate(ValueError):
    """A calibration that has nothing to measure: the other ways of weighting ``p`` still apply."""


class TooFewToCalibrate(CannotCalibrate):
    """A reference of fewer than :data:`MIN_REFERENCE` items (``n_items``)."""

    def __init__(self, n_items: int):
        super().__init__(f"calibrating p between anchor sets A and B needs at least {MIN_REFERENCE} images to measure "
                         f"on (a query, a neighbour and one more that A or B can rank apart); got {n_items}. Use more "
                         "images, or one anchor set alone (it has no p to calibrate).")
        self.n_items = n_items

    def __reduce__(self):  # pickled with its count, not its message
        return type(self), (self.n_items,)


class NothingToCalibrate(CannotCalibrate):
    """A calibration whose sampled queries have the same top-``k`` neighbours under A as under B:
    ``p`` cannot move them, so there is nothing to measure. ``k``: the neighbourhood size compared
    (a caller that chose the anchor sets by its own options names them from this)."""

    def __init__(self, k: int):
        super().__init__(f"A and B give every sampled query the same top-{k} neighbours, so there is nothing to "
                         "calibrate; use anchor sets that differ, or the balanced weights.")
        self.k = k

    def __reduce__(self):  # pickled with its k, not its message
        return type(self), (self.k,)


@dataclass(frozen=True)
class CalibrationCurve:
    """``progress`` ``(L,)`` (non-decreasing, 0 at B alone, 1 at A alone) at log-odds
    ``log_odds`` ``(L,)`` increasing, with its two sides ``progress_a`` and ``progress_b``;
    ``queries`` and ``k`` say what it was measured on (``k``: the neighbourhood size used, which a
    small reference lowers, :func:`neighbourhood_size`)."""

    log_odds: np.ndarray
    progress: np.ndarray
    progress_a: np.ndarray
    progress_b: np.ndarray
    queries: int
    k: int

    def log_odds_at(self, p: float | np.ndarray) -> float | np.ndarray:
        """``lambda(p)``: the log-odds at which the neighbourhoods have moved the fraction ``p``;
        ``-inf`` at ``p = 0`` and ``inf`` at ``p = 1``. A float for a number, an array of the same
        shape for an array of fractions."""
        fractions = np.asarray(p, dtype=np.float64)
        # A strictly increasing copy for interpolation: on a plateau the smallest log-odds wins.
        ramp = self.progress + np.arange(len(self.progress)) * 1e-12
        inside = np.interp(np.clip(fractions, 0.0, 1.0), ramp, self.log_odds)
        log_odds = np.where(fractions <= 0.0, -np.inf, np.where(fractions >= 1.0, np.inf, inside))
        return float(log_odds) if log_odds.ndim == 0 else log_odds


def neighbourhood_size(k: int, n_items: int) -> int:
    """The neighbourhood size a calibration with ``k`` measures on ``n_items`` reference items:
    ``k``, or ``n_items - 2`` where that is smaller, so that each query's top-``k`` leaves at least
    one of the other items out (else A's and B's neighbourhoods are the same set, and nothing can
    move). :class:`TooFewToCalibrate` below :data:`MIN_REFERENCE` items."""
    if n_items < MIN_REFERENCE:
        raise TooFewToCalibrate(n_items)
    return min(k, n_items - 2)


def calibration_curve(models: list[AnchorModel], reference_eta: torch.Tensor, k: int = 10, queries: int = QUERIES,
                      seed: int = 0, component_kappa: torch.Tensor | None = None) -> CalibrationCurve:
    """The progress curve of the mixture of ``models`` (A, B) over the reference ``reference_eta``
    ``(G, d)`` (natural parameters), from ``queries`` reference items (fixed seed), each ranking
    the others by its top-``k`` (see the module docstring); on a reference too small for ``k``, by
    as many as it allows (:func:`neighbourhood_size`: at least :data:`MIN_REFERENCE` items).
    ``component_kappa`` ``(G, 2)``: the models' ``kappa`` at ``reference_eta``, when the caller has
    them (else computed here)."""
    k, queries = check_positive_int(k, "k"), check_positive_int(queries, "queries")
    n_items = reference_eta.shape[0]
    k = neighbourhood_size(k, n_items)
    ids = np.sort(np.random.default_rng(seed).choice(n_items, size=min(queries, n_items), replace=False))
    eta_y = reference_eta.float()
    own = torch.as_tensor(ids, device=eta_y.device)[:, None]                            # (Q, 1)
    eta_x = eta_y[own[:, 0]]
    kappa_y = (torch.stack([model.cgf_eta(eta_y) for model in models], dim=1) if component_kappa is None
               else component_kappa.to(eta_y.device, eta_y.dtype))                                     # (G, 2)
    pairs = [model.cgf_grad_eta(eta_x) for model in models]
    kappa_x = torch.stack([kappa for kappa, _ in pairs], dim=1)                         # (Q, 2)
    scores = torch.stack([grad @ eta_y.T for _, grad in pairs])                          # (2, Q, G)
    conjugate = torch.stack([(grad * eta_x).sum(dim=1) for _, grad in pairs]) - kappa_x.T  # (2, Q)
    divergence = kappa_y.T[:, None, :] - scores + conjugate[:, :, None]                  # D_k(x -> y)
    divergence.scatter_(2, own.expand(2, -1, -1).contiguous(), float("inf"))  # a query is not its own neighbour

    def top_k(ranking: torch.Tensor) -> torch.Tensor:
        """Each query's top-``k`` ``(Q, k)`` under ``ranking`` ``(Q, G)`` (lower first)."""
        return torch.topk(ranking, k, dim=1, largest=False).indices

    def neighbour_mean(values: torch.Tensor, top: torch.Tensor) -> torch.Tensor:
        """Mean of ``values`` ``(2, Q, G)`` over each query's neighbours ``top`` ``(Q, k)``: ``(2, Q)``."""
        return torch.gather(values, 2, top.expand(2, -1, -1)).float().mean(dim=2)

    # A neighbour has moved on A's side when its A-divergence is below the midpoint between the mean
    # A-divergence of A's and of B's neighbourhoods, and on B's side when its B-divergence is above
    # the midpoint on B's: a count, like the agreement a person reads off the grid.
    top_a, top_b = top_k(divergence[0]), top_k(divergence[1])
    midpoint = (neighbour_mean(divergence, top_a) + neighbour_mean(divergence, top_b)) / 2
    moved = torch.stack([divergence[0] < midpoint[0][:, None], divergence[1] > midpoint[1][:, None]])
    at_a, at_b = neighbour_mean(moved, top_a), neighbour_mean(moved, top_b)
    span = at_a - at_b
    # Queries whose A and B neighbourhoods do not differ on a side have nothing to move between.
    moving = (span > 0).all(dim=0)
    if not bool(moving.any()):
        raise NothingToCalibrate(k)
    log_odds = _log_odds_grid(kappa_y)
    sides_along = []
    for value in log_odds:
        log_w = torch.log_softmax(torch.tensor([value / 2, -value / 2], dtype=eta_y.dtype, device=eta_y.device), dim=0)
        terms_x = kappa_x + log_w
        responsibility = torch.softmax(terms_x, dim=1)                                   # (Q, 2)
        kappa_mix_y = torch.logsumexp(kappa_y + log_w, dim=1)                              # (G,)
        # The mixture's divergence up to a per-query constant: the ranking is all that matters here.
        mixed = kappa_mix_y[None, :] - (responsibility.T[:, :, None] * scores).sum(dim=0)
        mixed = mixed.scatter(1, own, float("inf"))
        sides_along.append(((neighbour_mean(moved, top_k(mixed)) - at_b) / span)[:, moving].mean(dim=1))
    progress_a, progress_b = np.clip(torch.stack(sides_along).T.cpu().double().numpy(), 0, 1)  # read once
    progress = np.maximum.accumulate(np.minimum(progress_a, progress_b))
    return CalibrationCurve(log_odds, progress, progress_a, progress_b, len(ids), k)


def _log_odds_grid(kappa_y: torch.Tensor) -> np.ndarray:
    """Log-odds from where B owns every reference item to where A does: the responsibility of A at
    ``y`` is ``sigmoid(lambda + kappa_A(y) - kappa_B(y))``, so the neighbourhoods move while
    ``lambda`` crosses the spread of ``kappa_B - kappa_A``; a margin of 12 nats covers the tails."""
    gap = (kappa_y[:, 1] - kappa_y[:, 0]).cpu().numpy()
    return np.linspace(gap.min() - 12.0, gap.max() + 12.0, GRID_POINTS)
