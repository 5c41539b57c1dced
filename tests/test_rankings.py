"""The tests' tie-aware ranking comparison (tests/rankings.py) accepts reorderings within tied runs
and nothing else."""
import numpy as np
import pytest
import torch

from rankings import assert_same_ranking, tied_runs, tolerances

EXPECTED = (np.array([0.10, 0.20, 0.2000004, 0.30, 0.40, 0.4000003, 0.50]), np.array([7, 3, 9, 1, 4, 6, 2]))


def test_tied_runs_chain_neighbours_within_twice_the_tolerance():
    values = np.array([0.0, 1.0, 1.0 + 1.5e-6, 1.0 + 3e-6, 2.0])
    assert tied_runs(values, tolerances(values, 1e-6, 0.0)) == [(0, 1), (1, 4), (4, 5)]
    assert tied_runs(values, tolerances(values, 1e-7, 0.0)) == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]


def test_reorders_inside_a_tied_run_and_swaps_at_the_kth_place_are_accepted():
    assert_same_ranking(EXPECTED, EXPECTED, atol=0.0)
    swapped = (np.array([0.10, 0.2000001, 0.2000002, 0.30]), np.array([7, 9, 3, 1]))
    assert_same_ranking(swapped, EXPECTED, atol=1e-6)
    at_k = (np.array([0.10, 0.20, 0.2000004, 0.30, 0.4000001]), np.array([7, 3, 9, 1, 6]))  # 6 tied with 4
    assert_same_ranking(at_k, EXPECTED, atol=1e-6)
    past_the_list = (np.array([0.10, 0.20, 0.2000004, 0.30, 0.40, 0.4000003, 0.5000002]), np.array([7, 3, 9, 1, 4, 6, 11]))
    assert_same_ranking(past_the_list, EXPECTED, atol=1e-6)  # 11 may tie with 2 beyond what was listed
    assert_same_ranking((torch.tensor([[0.5, 0.4]]), torch.tensor([[1, 2]])),
                        (np.array([[0.5, 0.4 + 1e-9]]), np.array([[1, 2]])), atol=1e-8, higher_is_closer=True)


@pytest.mark.parametrize("got, problem", [
    ((np.array([0.10, 0.20, 0.2000004, 0.30]), np.array([3, 7, 9, 1])), "ranks 0..0"),         # untied swap
    ((np.array([0.10, 0.20, 0.2000004, 0.30]), np.array([7, 3, 9, 5])), "ranks 3..3"),         # a wrong item
    ((np.array([0.10, 0.20, 0.2000004, 0.31]), np.array([7, 3, 9, 1])), "beyond the tolerance"),
    ((np.array([0.10, 0.20, 0.2000004, 0.40, 0.40]), np.array([7, 3, 9, 4, 6])), "ranks 3..3"),  # skipped rank 3
    ((np.array([0.10, 0.20, 0.2000004, 0.30]), np.array([7, 3, 3, 1])), "repeated ids"),
    ((np.array([0.10, 0.2000004, 0.20, 0.30]), np.array([7, 9, 3, 1])), None),                  # fine within 1e-6
])
def test_anything_else_is_refused(got, problem):
    if problem is None:
        assert_same_ranking(got, EXPECTED, atol=1e-6)
        return
    with pytest.raises(AssertionError, match=problem):
        assert_same_ranking(got, EXPECTED, atol=1e-6)
    with pytest.raises(AssertionError):
        assert_same_ranking(got, EXPECTED, atol=0.0)


def test_a_tied_run_past_the_list_may_not_repeat_an_earlier_item():
    past = (np.array([0.10, 0.20, 0.2000004, 0.30, 0.40, 0.4000003, 0.50]), np.array([7, 3, 9, 1, 4, 6, 3]))
    with pytest.raises(AssertionError, match="repeated ids|ranked before"):
        assert_same_ranking(past, EXPECTED, atol=1e-6)
    with pytest.raises(AssertionError, match="at least k long"):
        assert_same_ranking((np.zeros(8), np.arange(8)), EXPECTED, atol=1e-6)


def test_the_tie_that_failed_on_another_cpu_is_a_tie():
    """The last two of a slider's top 8 against the exact float32 search at p = 0.9, as one 2-core Intel
    machine gave them (test_store_view, calibrated): the same two items, in the other order."""
    slider = (np.array([0.0006, 0.0007666, 0.0007674]), np.array([31, 23, 13]))
    search = (np.array([0.0006, 0.0007668, 0.0007668, 0.0009]), np.array([31, 13, 23, 40]))
    assert_same_ranking(slider, search, rtol=1e-4, atol=1e-5)   # test_store_view's SEARCH_TOL
    with pytest.raises(AssertionError, match="beyond the tolerance"):
        assert_same_ranking(slider, search, atol=1e-7)           # below the float32 search's rounding
    with pytest.raises(AssertionError, match="ranks 1..1"):
        assert_same_ranking(slider, (np.array([0.0006, 0.0007668, 0.0007690]), np.array([31, 13, 23])), atol=1e-6)
