"""Two routes to one ranking, compared up to ties, for the tests: :func:`assert_same_ranking`
asserts what :mod:`anchordiv.rankings` states (the tied runs and why they are the only ranks two
routes may reorder; docs/design.md §9), naming the ids and values when it fails, and with
``ANCHORDIV_TIE_LOG`` records how close each comparison came; :func:`check_candidates` does the same
for a certified slider's candidate set, whose ties sit at each grid point's ``k'``-th place.
"""
from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from anchordiv.rankings import as_rows, check_row, tied_runs, tolerances  # noqa: F401 (test_rankings imports tied_runs here)
from anchordiv.slider import log_sigmoid, mixture_scores


def record(values: np.ndarray, ids: np.ndarray, expected_values: np.ndarray, expected_ids: np.ndarray, atol: float,
           rtol: float, context: str) -> None:
    """With ``ANCHORDIV_TIE_LOG`` set to a file, append how close this comparison came to its
    tolerance and whether the ids were reordered (the figures of a tie hunt; nothing by default)."""
    path = os.environ.get("ANCHORDIV_TIE_LOG")
    if not path:
        return
    k = len(ids)
    with np.errstate(divide="ignore", invalid="ignore"):
        fractions = np.abs(values - expected_values[:k]) / tolerances(expected_values[:k], atol, rtol)
    ratio = float(np.nanmax(np.where(np.isnan(fractions), 0.0, fractions)))
    entry = {"test": os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0], "context": context,
             "worst_fraction_of_tolerance": ratio, "reordered": bool((ids != expected_ids[:k]).any()),
             "other_set": set(ids.tolist()) != set(expected_ids[:k].tolist())}
    with open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps(entry) + "\n")


def assert_same_ranking(got: tuple[Any, Any], expected: tuple[Any, Any], *, atol: float, rtol: float = 0.0,
                        higher_is_closer: bool = False, context: str = "") -> None:
    """Assert that ``got`` and ``expected`` are one ranking up to ties.

    ``got`` is ``(values, ids)`` of shape ``(k,)`` or ``(Q, k)``; ``expected`` the same with at
    least ``k`` per row (pass more, or the whole ranking, to judge a run tied across the ``k``-th
    place). ``atol + rtol |value|`` bounds the difference between the two routes' values for one
    item; the caller states why next to the call. ``higher_is_closer`` gives the sort direction.
    """
    values, ids, expected_values, expected_ids = as_rows(got, expected)
    if values.shape[0] != expected_values.shape[0]:
        raise AssertionError(f"{context}: {values.shape[0]} query rows against {expected_values.shape[0]}")
    for row in range(values.shape[0]):
        problems = check_row(values[row], ids[row], expected_values[row], expected_ids[row], atol, rtol,
                             higher_is_closer)
        if problems:
            raise AssertionError(f"{context} (query row {row}, atol={atol}, rtol={rtol}): " + "; ".join(problems)
                                 + f"\n  got ids      {ids[row].tolist()}\n  got values   {values[row].tolist()}"
                                 + f"\n  expected ids {expected_ids[row][:len(ids[row]) + 3].tolist()}"
                                 + f"\n  expected     {expected_values[row][:len(ids[row]) + 3].tolist()}")
        record(values[row], ids[row], expected_values[row], expected_ids[row], atol, rtol, context)


def grid_scores(slider, index):
    """Every item's f_y(r_j) at the slider's grid points, in float64 from the in-memory index's
    float32 eta: ``(m + 2, G)``, the query's own position at -inf."""
    eta, kappa = index.gallery_eta.cpu().double(), index.component_kappa.cpu().double()
    ab = (eta @ slider._grads.cpu()).numpy()  # the slider's gradients live on its index's device
    shifted = kappa.numpy() - slider._kappa_x
    log_odds = slider._log_odds_grid[:, None]
    scores = mixture_scores(log_sigmoid(log_odds), log_sigmoid(-log_odds), ab[:, 0], ab[:, 1], shifted[:, 0],
                            shifted[:, 1])
    if slider.exclude is not None:
        scores[:, slider.exclude] = -np.inf
    return scores


def check_candidates(slider, index):
    """The candidates are the union of each grid point's top-k' by f_y(r_j), up to ties at a k'-th
    place: the pass rounds a_y, b_y in float32 (at most the slack it adds to the thresholds), so an
    item within twice that slack of a grid point's k'-th score may be kept or not."""
    scores = grid_scores(slider, index)
    kth = -np.sort(-scores, axis=1)[:, slider._kept - 1][:, None]
    slack = 2 * slider._pass_slack()
    must = np.flatnonzero((scores > kth + slack).any(axis=0))
    may = np.flatnonzero((scores >= kth - slack).any(axis=0))
    candidates = set(slider.candidate_ids.tolist())
    assert set(must.tolist()) <= candidates <= set(may.tolist()), (
        f"missing {sorted(set(must.tolist()) - candidates)}, extra {sorted(candidates - set(may.tolist()))}")
