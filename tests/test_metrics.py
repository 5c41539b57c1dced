"""Average precision equals scikit-learn's; bootstrap intervals behave as intervals should."""
import numpy as np
import pytest
from sklearn.metrics import average_precision_score

from anchordiv import average_precision, mean_average_precision


def test_average_precision_equals_scikit_learn_with_and_without_ties():
    rng = np.random.default_rng(0)
    for decimals in (None, 1, 0):  # no ties, many ties, a handful of distinct scores
        scores = rng.standard_normal((40, 50))
        if decimals is not None:
            scores = np.round(scores, decimals)
        relevant = rng.random((40, 50)) < 0.2
        relevant[:, 0] = True
        expected = [average_precision_score(r, s) for r, s in zip(relevant, scores)]
        np.testing.assert_allclose(average_precision(scores, relevant), expected, rtol=1e-12)


def test_single_row_gives_a_float_and_perfect_ranking_gives_one():
    assert average_precision([3.0, 2.0, 1.0, 0.0], [1, 1, 0, 0]) == 1.0
    assert average_precision([0.0, 1.0, 2.0, 3.0], [1, 0, 0, 0]) == pytest.approx(0.25)
    assert isinstance(average_precision([1.0, 0.0], [0, 1]), float)


def test_no_relevant_item_is_nan_and_left_out_of_the_mean():
    scores = np.array([[0.9, 0.1, 0.5], [0.2, 0.3, 0.1]])
    relevant = np.array([[1, 0, 0], [0, 0, 0]])
    per_query = average_precision(scores, relevant)
    assert per_query[0] == 1.0 and np.isnan(per_query[1])
    result = mean_average_precision(scores, relevant)
    assert result.mean == 1.0 and result.n_queries == 1
    with pytest.raises(ValueError, match="No query has a relevant gallery item"):
        mean_average_precision(scores, np.zeros_like(relevant))


def test_bad_metric_input():
    with pytest.raises(ValueError, match="one shared shape"):
        average_precision(np.zeros((2, 3)), np.zeros((2, 4)))
    with pytest.raises(ValueError, match="NaN or infinite"):
        average_precision([np.nan, 1.0], [1, 0])
    with pytest.raises(ValueError, match="confidence must be in"):
        mean_average_precision([[1.0, 0.0]], [[1, 0]], confidence=1.5)


def _ranks_with_ap_near(target: np.ndarray) -> np.ndarray:
    """One relevant item at rank r has AP exactly 1/r: the rank whose AP is nearest each target."""
    return np.maximum(1, np.round(1 / np.clip(target, 1e-3, 1))).astype(int)


def test_bootstrap_interval_has_the_width_and_coverage_theory_predicts():
    """Queries whose AP is 1/r with r drawn at random: over repeated experiments the 95% interval
    covers the population mean about 95% of the time, with width near 2 * 1.96 * sd / sqrt(n)."""
    rng = np.random.default_rng(0)
    population = 1 / _ranks_with_ap_near(rng.normal(0.5, 0.1, 1_000_000))
    n, trials, covered = 200, 200, 0
    for trial in range(trials):
        ranks = _ranks_with_ap_near(rng.normal(0.5, 0.1, n))
        scores = np.tile(np.arange(ranks.max(), 0, -1, dtype=float), (n, 1))
        relevant = np.zeros(scores.shape, bool)
        relevant[np.arange(n), ranks - 1] = True
        result = mean_average_precision(scores, relevant, n_bootstrap=500, random_state=trial)
        np.testing.assert_allclose(result.per_query, 1 / ranks)
        covered += result.low <= population.mean() <= result.high
        expected_width = 2 * 1.96 * np.std(1 / ranks) / np.sqrt(n)
        assert result.high - result.low == pytest.approx(expected_width, rel=0.25)
    assert 0.90 <= covered / trials <= 0.99


def test_constant_per_query_ap_gives_a_degenerate_interval():
    result = mean_average_precision(np.tile([2.0, 1.0], (30, 1)), np.tile([1, 0], (30, 1)))
    assert (result.mean, result.low, result.high) == (1.0, 1.0, 1.0)
    assert str(result) == "1.0000 [1.0000, 1.0000]"


def test_two_way_bootstrap_covers_a_known_mean_that_query_only_intervals_miss():
    """Simulated per-query AP differences: true mean 0.05, a random effect per anchor subset
    (sd 0.05, 8 subsets), per query (sd 0.1) and noise. The two-way interval must cover the true
    mean about 95% of the time; resampling queries alone ignores the subset draw and under-covers."""
    from anchordiv.metrics import bootstrap_interval, two_way_bootstrap_interval

    rng = np.random.default_rng(1)
    true_mean, trials, covered, covered_queries_only = 0.05, 100, 0, 0
    for trial in range(trials):
        table = (true_mean + 0.05 * rng.standard_normal((8, 1)) + 0.1 * rng.standard_normal((1, 150))
                 + 0.05 * rng.standard_normal((8, 150)))
        low, high = two_way_bootstrap_interval(table, 300, random_state=trial)
        covered += low <= true_mean <= high
        low, high = bootstrap_interval(table.mean(axis=0), 300, random_state=trial)
        covered_queries_only += low <= true_mean <= high
    assert covered / trials >= 0.85
    assert covered_queries_only / trials <= 0.8


def test_two_way_bootstrap_with_one_row_is_the_query_bootstrap_and_rejects_nan():
    from anchordiv.metrics import bootstrap_interval, two_way_bootstrap_interval

    values = np.random.default_rng(0).random(50)
    two_way = two_way_bootstrap_interval(values[None, :], 400, random_state=3)
    assert two_way[0] < values.mean() < two_way[1]
    assert np.allclose(two_way, bootstrap_interval(values, 400, random_state=3), atol=0.02)
    with pytest.raises(ValueError, match="NaN"):
        two_way_bootstrap_interval(np.array([[0.1, np.nan]]))
    with pytest.raises(ValueError, match="non-empty"):
        two_way_bootstrap_interval(np.zeros((0, 3)))
