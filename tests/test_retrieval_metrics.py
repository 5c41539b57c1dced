"""Retrieval AP from an index equals AP computed from the full divergence matrix."""
import numpy as np
import pytest

import anchordiv as ad
from anchordiv.metrics import retrieval_average_precision, retrieval_map


def test_retrieval_ap_equals_ap_of_the_brute_force_ranking(data, models):
    gallery = data["gallery"]
    labels = np.stack([np.arange(70) % 5, np.arange(70) % 3], axis=1)
    own = np.arange(70)
    for index, scores in (
        (ad.AnchorIndex(models["gmm"], gallery), -models["gmm"].divergence(gallery, gallery)),
        (ad.CosineIndex(gallery), gallery @ gallery.T),
    ):
        per_query = retrieval_average_precision(index, gallery, labels, labels, exclude=own, batch_size=16)
        for kind in range(2):
            keep = ~np.eye(70, dtype=bool)
            expected = [ad.average_precision(scores[i][keep[i]], (labels[:, kind] == labels[i, kind])[keep[i]])
                        for i in range(70)]
            np.testing.assert_allclose(per_query[:, kind], expected, rtol=1e-9)


def test_retrieval_map_summarises_the_per_query_values(data):
    gallery = data["gallery"]
    labels = np.arange(70) % 4
    index = ad.CosineIndex(gallery)
    per_query = retrieval_average_precision(index, gallery, labels, labels, exclude=np.arange(70))
    summary = retrieval_map(index, gallery, labels, labels, exclude=np.arange(70))
    assert summary.mean == pytest.approx(per_query.mean()) and summary.low <= summary.mean <= summary.high
    assert summary.n_queries == 70


def test_retrieval_ap_handles_tied_scores_as_scikit_learn_does():
    """Duplicated gallery rows tie; AP from the index's sorted ranking must equal scikit-learn's AP
    of the very scores the index returned."""
    from sklearn.metrics import average_precision_score

    rng = np.random.default_rng(0)
    distinct = rng.standard_normal((6, 8)).astype(np.float32)
    gallery = np.repeat(distinct, 4, axis=0)  # 24 rows, ties in fours
    labels = rng.integers(0, 3, 24)
    index = ad.CosineIndex(gallery)
    per_query = retrieval_average_precision(index, gallery, labels, labels, exclude=np.arange(24))
    values, ids = index.search(gallery, 23, exclude=np.arange(24)[:, None])
    for query in range(24):
        relevant = labels[np.asarray(ids[query])] == labels[query]
        assert per_query[query] == pytest.approx(average_precision_score(relevant, np.asarray(values[query])))


def test_labels_of_any_hashable_kind_judge_as_their_integer_codes_and_nan_matches_nothing(data):
    """String, mixed and NaN labels give the AP that integer labels with the same equalities give:
    1, 1.0 and True are one label (they are equal), and a NaN label is relevant to nothing."""
    gallery = data["gallery"]
    index = ad.CosineIndex(gallery)
    codes = np.arange(70) % 4
    as_text = np.array(["cat", "dog", "fox", "owl"], dtype=object)[codes]
    mixed = np.array([1, 1.0, True, "one"], dtype=object)[codes]  # the first three are equal
    nan = np.where(codes == 3, np.nan, codes).astype(object)
    expected = retrieval_average_precision(index, gallery, codes, codes, exclude=np.arange(70))
    np.testing.assert_array_equal(retrieval_average_precision(index, gallery, as_text, as_text, exclude=np.arange(70)),
                                  expected)
    merged = np.minimum(codes, 3 * (codes == 3))  # 0, 1, 2 are one label; 3 stays apart
    np.testing.assert_array_equal(retrieval_average_precision(index, gallery, mixed, mixed, exclude=np.arange(70)),
                                  retrieval_average_precision(index, gallery, merged, merged, exclude=np.arange(70)))
    with_nan = retrieval_average_precision(index, gallery, nan, nan, exclude=np.arange(70))
    assert np.all(np.isnan(with_nan[codes == 3])) and np.array_equal(with_nan[codes != 3], expected[codes != 3])
