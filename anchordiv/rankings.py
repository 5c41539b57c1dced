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
:func:`check_row` says what breaks exactly this, nothing looser, and :func:`ranking_differences`
does it for every query row; the tests assert with them, and ``scripts/gpu-check`` judges the GPU's
rankings against the CPU's with them.
"""
from __future__ import annotations

from typing import Any

import numpy as np


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


def as_rows(got: tuple[Any, Any], expected: tuple[Any, Any]) -> tuple[np.ndarray, ...]:
    """``(values, ids, expected_values, expected_ids)`` as float64 and int64 numpy rows ``(Q, .)``."""
    values, ids = as_numpy(got[0], np.float64), as_numpy(got[1], np.int64)
    expected_values, expected_ids = as_numpy(expected[0], np.float64), as_numpy(expected[1], np.int64)
    if ids.ndim == 1:
        values, ids = values[None, :], ids[None, :]
    if expected_ids.ndim == 1:
        expected_values, expected_ids = expected_values[None, :], expected_ids[None, :]
    return values, ids, expected_values, expected_ids


def ranking_differences(got: tuple[Any, Any], expected: tuple[Any, Any], *, atol: float, rtol: float = 0.0,
                        higher_is_closer: bool = False) -> list[str]:
    """What keeps ``got`` and ``expected`` from being one ranking up to ties (``[]``: nothing).

    ``got`` is ``(values, ids)`` of shape ``(k,)`` or ``(Q, k)`` (numpy, tensors on any device, or
    lists); ``expected`` the same with at least ``k`` per row (pass more, or the whole ranking, to
    judge a run tied across the ``k``-th place). ``atol + rtol |value|`` bounds the difference
    between the two routes' values for one item; ``higher_is_closer`` gives the sort direction.
    Each problem names its query row.
    """
    values, ids, expected_values, expected_ids = as_rows(got, expected)
    if values.shape[0] != expected_values.shape[0]:
        return [f"{values.shape[0]} query rows against {expected_values.shape[0]}"]
    return [f"query row {row}: {problem}" for row in range(values.shape[0])
            for problem in check_row(values[row], ids[row], expected_values[row], expected_ids[row], atol, rtol,
                                     higher_is_closer)]
