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
