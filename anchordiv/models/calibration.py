"""Calibrated ``p`` for a two-component :class:`~anchordiv.MixtureAnchors` (docs/design.md §3).

With literal or balanced weights the neighbourhoods hardly move until ``p`` is near 1 and then
move all at once. Calibration measures, on a reference set (the gallery) and without labels, how
far the mixture's neighbourhoods have moved from B's towards A's at each log-odds
``lambda = log(w_A / w_B)``, and maps ``p`` to the ``lambda`` at which they have moved the fraction
``p`` of the way.

**The measure.** For a query ``x`` and a set of neighbours ``N`` (its top-``k`` under the mixture
at ``lambda``), how A-like the neighbourhood is is the mean A-divergence ``D_A(x -> y)`` over
``y`` in ``N``, and how B-like it is the mean B-divergence. With ``N_A`` and ``N_B`` the top-``k``
under A alone and B alone,

    progress_A(x, lambda) = (D_A(x, N_B) - D_A(x, N_lambda)) / (D_A(x, N_B) - D_A(x, N_A))
    progress_B(x, lambda) = (D_B(x, N_lambda) - D_B(x, N_B)) / (D_B(x, N_A) - D_B(x, N_B))

are 0 at B alone and 1 at A alone. Averaged over a fixed sample of queries, ``progress(lambda)``
is the *smaller* of the two sides, made non-decreasing: the grid looks half-way only once it is
at least half-way on both sides. Two facts shaped this. First, divergences, not identities, are
compared: a coarse anchor set (seven style phrases) ranks the images *within* a style almost at
random, so "how many of B's exact top-``k`` remain" collapses long before the grid stops looking
like B's, whereas the B-divergence of the neighbours stays low for as long as they share the
query's style, which is what a person sees. Second, the side of the fine anchor set (object
names) moves first and invisibly: the neighbours become more A-like *within* the query's style
(closer in A's geometry, still other objects) well before they leave it, so its progress alone
would call a grid that still shows one style "nearly A". The slower side is the one a person
sees move. (Measured on the built-in world's *training* split, softmax at s = 10: A's side is at
0.77 where B's is at 0.01 and the grid is unchanged; same-object and same-style agreement move
while B's side goes from 0.04 to 0.96.) Then ``p`` maps to ``lambda(p) = progress^{-1}(p)`` by linear
interpolation, so ``p = 0`` and ``p = 1`` are B and A exactly, ``p = 1/2`` is half-way, and the
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


@dataclass(frozen=True)
class CalibrationCurve:
    """``progress`` ``(L,)`` (non-decreasing, 0 at B alone, 1 at A alone) at log-odds
    ``log_odds`` ``(L,)`` increasing, with its two sides ``progress_a`` and ``progress_b``;
    ``queries`` and ``k`` say what it was measured on."""

    log_odds: np.ndarray
    progress: np.ndarray
    progress_a: np.ndarray
    progress_b: np.ndarray
    queries: int
    k: int

    def log_odds_at(self, p: float) -> float:
        """``lambda(p)``: the log-odds at which the neighbourhoods have moved the fraction ``p``;
        ``-inf`` at ``p = 0`` and ``inf`` at ``p = 1``."""
        if p <= 0.0:
            return -np.inf
        if p >= 1.0:
            return np.inf
        # A strictly increasing copy for interpolation: on a plateau the smallest log-odds wins.
        ramp = self.progress + np.arange(len(self.progress)) * 1e-12
        return float(np.interp(p, ramp, self.log_odds))


def calibration_curve(models: list[AnchorModel], reference_eta: torch.Tensor, k: int = 10, queries: int = QUERIES,
                      seed: int = 0) -> CalibrationCurve:
    """The progress curve of the mixture of ``models`` (A, B) over the reference ``reference_eta``
    ``(G, d)`` (natural parameters), from ``queries`` reference items (fixed seed), each ranking
    the others by its top-``k`` (see the module docstring)."""
    k, queries = check_positive_int(k, "k"), check_positive_int(queries, "queries")
    n_items = reference_eta.shape[0]
    if n_items < k + 2:
        raise ValueError(f"calibration needs more than k + 1 = {k + 1} reference items; got {n_items}. "
                         "Calibrate on the gallery, or lower k.")
    ids = np.sort(np.random.default_rng(seed).choice(n_items, size=min(queries, n_items), replace=False))
    eta_y = reference_eta.float()
    eta_x = eta_y[torch.as_tensor(ids)]
    kappa_y = torch.stack([model.cgf_eta(eta_y) for model in models], dim=1)          # (G, 2)
    pairs = [model.cgf_grad_eta(eta_x) for model in models]
    kappa_x = torch.stack([kappa for kappa, _ in pairs], dim=1)                         # (Q, 2)
    scores = torch.stack([grad @ eta_y.T for _, grad in pairs])                          # (2, Q, G)
    conjugate = torch.stack([(grad * eta_x).sum(dim=1) for _, grad in pairs]) - kappa_x.T  # (2, Q)
    divergence = kappa_y.T[:, None, :] - scores + conjugate[:, :, None]                  # D_k(x -> y)
    own = torch.as_tensor(ids)[:, None]
    divergence.scatter_(2, own.expand(2, -1, -1).contiguous(), float("inf"))  # a query is not its own neighbour

    def neighbour_divergences(ranking: torch.Tensor) -> torch.Tensor:
        """Mean A- and B-divergence ``(2, Q)`` of each query's top-``k`` under ``ranking`` (lower first)."""
        top = torch.topk(ranking, k, dim=1, largest=False).indices
        return torch.gather(divergence, 2, top.expand(2, -1, -1)).mean(dim=2)

    at_a, at_b = neighbour_divergences(divergence[0]), neighbour_divergences(divergence[1])
    span_a, span_b = at_b[0] - at_a[0], at_a[1] - at_b[1]
    # Queries whose A and B neighbourhoods coincide have nothing to move between.
    moving = (span_a > 1e-9 * at_b[0].abs().clamp_min(1.0)) & (span_b > 1e-9 * at_a[1].abs().clamp_min(1.0))
    if not bool(moving.any()):
        raise ValueError("A and B give every sampled query the same neighbours, so there is nothing to calibrate; "
                         "use anchor sets that differ, or the balanced weights.")
    log_odds = _log_odds_grid(kappa_y)
    progress_a, progress_b = [], []
    for value in log_odds:
        log_w = torch.log_softmax(torch.tensor([value / 2, -value / 2], dtype=eta_y.dtype), dim=0)
        terms_x = kappa_x + log_w
        responsibility = torch.softmax(terms_x, dim=1)                                   # (Q, 2)
        kappa_mix_y = torch.logsumexp(kappa_y + log_w, dim=1)                              # (G,)
        # The mixture's divergence up to a per-query constant: the ranking is all that matters here.
        mixed = kappa_mix_y[None, :] - (responsibility.T[:, :, None] * scores).sum(dim=0)
        mixed = mixed.scatter(1, own, float("inf"))
        seen = neighbour_divergences(mixed)
        progress_a.append(((at_b[0] - seen[0]) / span_a)[moving].mean().item())
        progress_b.append(((seen[1] - at_b[1]) / span_b)[moving].mean().item())
    progress_a, progress_b = np.clip(progress_a, 0, 1), np.clip(progress_b, 0, 1)
    progress = np.maximum.accumulate(np.minimum(progress_a, progress_b))
    return CalibrationCurve(log_odds, progress, progress_a, progress_b, len(ids), k)


def _log_odds_grid(kappa_y: torch.Tensor) -> np.ndarray:
    """Log-odds from where B owns every reference item to where A does: the responsibility of A at
    ``y`` is ``sigmoid(lambda + kappa_A(y) - kappa_B(y))``, so the neighbourhoods move while
    ``lambda`` crosses the spread of ``kappa_B - kappa_A``; a margin of 12 nats covers the tails."""
    gap = (kappa_y[:, 1] - kappa_y[:, 0]).numpy()
    return np.linspace(gap.min() - 12.0, gap.max() + 12.0, GRID_POINTS)
