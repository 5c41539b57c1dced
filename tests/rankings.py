"""Two routes to one ranking, compared up to ties (docs/design.md §9, *Ties and tolerances*).

Two routes to the same top-``k`` (the slider and the exact search, a store and its rows, Ray and the
local engine, the GPU and the CPU, float64 brute force and a float32 index) compute the same values
with different rounding. If each item's value differs between the routes by at most ``tol`` (the
routes' combined rounding bound, stated by the caller with its reason), then:

* rank by rank, the two lists of values differ by at most ``tol`` (sorting is 1-Lipschitz in the
  max norm);
* two items can come in the other order only if their values differ by at most ``2 tol``: if
  ``e_x < e_y`` but ``g_x > g_y`` then ``e_y - e_x <= (g_y + tol) - (g_x - tol) < 2 tol``.

So the expected ranking splits into *tied runs*, maximal runs of consecutive ranks whose
neighbouring values are within ``2 tol``. Outside them the ids must be equal; inside a run the ids
must be the same set; a run that crosses the ``k``-th place may hold any of the run's items there,
and one that reaches the end of the expected list any item not ranked before it.
:func:`assert_same_ranking` checks exactly this, nothing looser; :func:`check_candidates` does the
same for a certified slider's candidate set, whose ties sit at each grid point's ``k'``-th place.
"""
from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import torch

from anchordiv.slider import log_sigmoid, mixture_scores


def as_numpy(array: Any, dtype: Any) -> np.ndarray:
    """A numpy copy of a numpy array, a tensor (any device) or a list."""
    if hasattr(array, "detach"):
        array = array.detach().cpu().numpy()
    return np.asarray(array, dtype=dtype)


def tolerances(values: np.ndarray, atol: float, rtol: float) -> np.ndarray:
    """Per-rank bound ``atol + rtol |v|`` on one value's rounding difference between the routes."""
    return atol + rtol * np.abs(values)


def tied_runs(values: np.ndarray, tol: np.ndarray) -> list[tuple[int, int]]:
    """Maximal ``[start, stop)`` runs of ranks whose neighbouring values differ by at most the sum of
    their tolerances (``2 tol`` for a constant ``tol``): the only ranks two routes may reorder."""
    runs, start = [], 0
    for rank in range(1, len(values) + 1):
        if rank == len(values) or abs(values[rank] - values[rank - 1]) > tol[rank] + tol[rank - 1]:
            runs.append((start, rank))
            start = rank
    return runs


def check_row(values: np.ndarray, ids: np.ndarray, expected_values: np.ndarray, expected_ids: np.ndarray,
              atol: float, rtol: float, higher_is_closer: bool) -> list[str]:
    """What is wrong with one query's ranking (``[]``: nothing)."""
    k = len(ids)
    if values.shape != (k,) or len(expected_ids) < k or expected_values.shape != expected_ids.shape:
        return [f"shapes: got {values.shape} values for {k} ids, expected {expected_values.shape} for "
                f"{len(expected_ids)} ids (the expected ranking must be at least k long)"]
    problems = []
    if len(set(ids.tolist())) != k:
        problems.append(f"repeated ids {ids.tolist()}")
    tol = tolerances(expected_values, atol, rtol)
    off = np.abs(values - expected_values[:k]) > tol[:k]
    if off.any():
        problems.append(f"values differ beyond the tolerance at ranks {np.flatnonzero(off).tolist()}: "
                        f"got {values[off].tolist()}, expected {expected_values[:k][off].tolist()}")
    steps = np.diff(values) * (-1 if higher_is_closer else 1)
    if (steps < -(tol[1:k] + tol[:k - 1])).any():
        problems.append(f"values not sorted {'descending' if higher_is_closer else 'ascending'}: {values.tolist()}")
    for start, stop in tied_runs(expected_values, tol):
        if start >= k:
            break
        got, allowed = set(ids[start:min(stop, k)].tolist()), set(expected_ids[start:stop].tolist())
        if stop >= len(expected_ids):
            # The run reaches the end of the expected list, so items not listed may be tied in it.
            ranked_before = got & set(expected_ids[:start].tolist())
            if ranked_before:
                problems.append(f"ranks {start}..{k - 1}: ids {sorted(ranked_before)} were ranked before this "
                                "run in the expected list")
        elif stop <= k:
            if got != allowed:
                problems.append(f"ranks {start}..{stop - 1}: got ids {sorted(got)}, expected {sorted(allowed)}")
        elif not got <= allowed:
            problems.append(f"ranks {start}..{k - 1} (a run tied past k): got ids {sorted(got)}, expected a subset "
                            f"of {sorted(allowed)}")
    return problems


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
    values, ids = as_numpy(got[0], np.float64), as_numpy(got[1], np.int64)
    expected_values, expected_ids = as_numpy(expected[0], np.float64), as_numpy(expected[1], np.int64)
    if ids.ndim == 1:
        values, ids = values[None, :], ids[None, :]
    if expected_ids.ndim == 1:
        expected_values, expected_ids = expected_values[None, :], expected_ids[None, :]
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
    eta, kappa = index.gallery_eta.to(torch.float64), index.component_kappa.to(torch.float64)
    ab = (eta @ slider._grads).numpy()
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
