"""Retrieval quality (docs/design.md §6): average precision per query, from scores
(:func:`average_precision`) or from an index's rankings (:func:`retrieval_average_precision`), and
means with bootstrap intervals over queries (and over anchor draws)."""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ._validation import ArrayLike, as_float_array, as_numeric_tensor, check_positive_int

if TYPE_CHECKING:
    from .search import Index


def _as_rows(scores: ArrayLike, relevant: ArrayLike) -> tuple[np.ndarray, np.ndarray, bool]:
    score_array = as_float_array(scores, "scores")
    relevant_array = _as_relevance(relevant)
    if score_array.shape != relevant_array.shape or score_array.ndim not in (1, 2):
        raise ValueError(
            f"scores and relevant must have one shared shape, (G,) or (Q, G); got {score_array.shape} "
            f"and {relevant_array.shape}."
        )
    if score_array.size == 0:
        raise ValueError("scores is empty; pass at least one ranked item per query.")
    if not np.all(np.isfinite(score_array)):
        raise ValueError("scores contains NaN or infinite values; rank only finite scores.")
    single = score_array.ndim == 1
    return np.atleast_2d(score_array), np.atleast_2d(relevant_array), single


def _as_relevance(relevant: ArrayLike) -> np.ndarray:
    """``relevant`` as a boolean array: booleans, or numbers that are all 0 or 1."""
    array = np.asarray(relevant.cpu() if hasattr(relevant, "cpu") else relevant)
    if array.dtype.kind == "b":
        return array
    if array.dtype.kind not in "iuf" or not np.all((array == 0) | (array == 1)):
        raise ValueError(f"relevant must hold True/False (or 0/1) per item; got dtype {array.dtype}"
                         f"{'' if array.dtype.kind not in 'iuf' else ' with values other than 0 and 1'}. "
                         "Compare labels first, e.g. relevant = gallery_labels == query_label.")
    return array.astype(bool)


def average_precision(scores: ArrayLike, relevant: ArrayLike) -> np.ndarray | float:
    """Average precision (area under the precision–recall step curve) per row.

    ``AP = sum_t (R_t - R_{t-1}) P_t`` over the distinct score thresholds ``t`` (higher score =
    ranked earlier), with ``P_t`` and ``R_t`` the precision and recall of the items scoring
    ``>= t``. Ties share a threshold, exactly as ``sklearn.metrics.average_precision_score``.

    ``scores`` and ``relevant`` are ``(G,)`` or ``(Q, G)``; pass ``-divergence`` as the score for
    divergences. Returns a float for 1-D input, else ``(Q,)``. A row with no relevant item has no
    precision–recall curve and gives NaN (scikit-learn returns 0 with a warning), so it cannot
    silently drag a mean down.
    """
    score_rows, relevant_rows, single = _as_rows(scores, relevant)
    order = np.argsort(-score_rows, axis=1, kind="stable")
    sorted_scores = np.take_along_axis(score_rows, order, axis=1)
    ap = ranked_average_precision(tie_group_ends(sorted_scores), np.take_along_axis(relevant_rows, order, axis=1))
    return float(ap[0]) if single else ap


def tie_group_ends(sorted_scores: np.ndarray) -> np.ndarray:
    """For rows ``(Q, G)`` sorted best first, the position of the last item of each item's tie group."""
    n_items = sorted_scores.shape[1]
    is_group_end = np.ones(sorted_scores.shape, dtype=bool)
    is_group_end[:, :-1] = sorted_scores[:, :-1] != sorted_scores[:, 1:]
    end_index = np.where(is_group_end, np.arange(n_items), n_items)
    return np.minimum.accumulate(end_index[:, ::-1], axis=1)[:, ::-1]


def ranked_average_precision(group_ends: np.ndarray, hits: np.ndarray) -> np.ndarray:
    """AP ``(Q,)`` of rankings already sorted best first: ``hits`` ``(Q, G)`` bool, ``group_ends``
    from :func:`tie_group_ends`. Each item takes the precision at the end of its tie group, as a
    threshold curve does; NaN where a row has no hit."""
    true_positives = np.cumsum(hits, axis=1)
    precision_at_end = np.take_along_axis(true_positives, group_ends, axis=1) / (group_ends + 1)
    n_relevant = hits.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n_relevant > 0, (precision_at_end * hits).sum(axis=1) / n_relevant, np.nan)


@dataclass(frozen=True)
class MeanAP:
    """Mean of per-query AP with a percentile-bootstrap confidence interval over queries."""

    mean: float
    low: float
    high: float
    confidence: float
    per_query: np.ndarray
    n_queries: int

    def __str__(self) -> str:
        return f"{self.mean:.4f} [{self.low:.4f}, {self.high:.4f}]"


def bootstrap_interval(values: np.ndarray, n_bootstrap: int = 1000, confidence: float = 0.95,
                       random_state: int | None = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` ``(n,)``, resampling entries."""
    _check_confidence(confidence)
    n_bootstrap = check_positive_int(n_bootstrap, "n_bootstrap")
    rng = np.random.default_rng(random_state)
    means = values[rng.integers(0, len(values), size=(n_bootstrap, len(values)))].mean(axis=1)
    return _percentile_interval(means, confidence)


def _check_confidence(confidence: float) -> None:
    if isinstance(confidence, (bool, np.bool_)) or not isinstance(confidence, (int, float, np.number)) \
            or not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), a number such as 0.95; got {confidence!r}.")


def _percentile_interval(means: np.ndarray, confidence: float) -> tuple[float, float]:
    """The central ``confidence`` interval of bootstrap replicate ``means``."""
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def mean_average_precision(scores: ArrayLike, relevant: ArrayLike, n_bootstrap: int = 1000,
                           confidence: float = 0.95, random_state: int | None = 0) -> MeanAP:
    """Mean AP over the queries (rows) that have a relevant item, with a bootstrap interval.

    ``scores``, ``relevant``: ``(Q, G)``. Queries with no relevant item are left out (and counted
    out of ``n_queries``); if none is left a ``ValueError`` says so.
    """
    per_query = np.atleast_1d(average_precision(scores, relevant))
    return summarize_average_precision(per_query, n_bootstrap, confidence, random_state)


def summarize_average_precision(per_query: np.ndarray, n_bootstrap: int = 1000, confidence: float = 0.95,
                                random_state: int | None = 0) -> MeanAP:
    """:class:`MeanAP` of per-query APs ``(Q,)``; NaN entries (no relevant item) are left out."""
    valid = per_query[~np.isnan(per_query)]
    if len(valid) == 0:
        raise ValueError("No query has a relevant gallery item, so mean AP is undefined; check the labels.")
    low, high = bootstrap_interval(valid, n_bootstrap, confidence, random_state)
    return MeanAP(float(valid.mean()), low, high, confidence, per_query, len(valid))


def two_way_bootstrap_interval(values: np.ndarray, n_bootstrap: int = 1000, confidence: float = 0.95,
                               random_state: int | None = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the grand mean of ``values`` ``(R, Q)``, resampling rows
    (e.g. ``R`` random anchor subsets) and columns (``Q`` queries) independently.

    Each replicate draws ``R`` rows and ``Q`` columns with replacement and takes the mean of the
    ``R x Q`` sub-table, so the interval carries both sources of variation: which queries were
    asked and which anchors were drawn. With ``R = 1`` it is :func:`bootstrap_interval` over queries.
    NaN entries are not allowed (drop queries with no relevant item before).
    """
    table = as_float_array(values, "values")
    if table.ndim != 2 or 0 in table.shape:
        raise ValueError(f"values must be a non-empty (R, Q) table; got shape {table.shape}.")
    if not np.all(np.isfinite(table)):
        raise ValueError("values contains NaN or infinite entries; drop queries with no relevant item first.")
    _check_confidence(confidence)
    n_bootstrap = check_positive_int(n_bootstrap, "n_bootstrap")
    n_rows, n_columns = table.shape
    rng = np.random.default_rng(random_state)
    means = np.empty(n_bootstrap)
    for replicate in range(n_bootstrap):
        rows = rng.integers(0, n_rows, n_rows)
        columns = rng.integers(0, n_columns, n_columns)
        # Mean over the drawn rows of the per-row means over the drawn columns.
        means[replicate] = table[rows][:, columns].mean()
    return _percentile_interval(means, confidence)


def retrieval_average_precision(index: Index, queries: ArrayLike, query_labels: ArrayLike,
                                gallery_labels: ArrayLike, exclude: ArrayLike | None = None,
                                batch_size: int = 1024) -> np.ndarray:
    """AP of each query's full ranking of the gallery, relevant = same label.

    ``queries`` ``(Q, d)``; ``query_labels`` ``(Q,)`` and ``gallery_labels`` ``(G,)`` of any
    hashable type, or ``(Q, T)`` and ``(G, T)`` for ``T`` label kinds judged on one ranking;
    ``exclude`` ``(Q,)`` or ``(Q, m)`` gallery ids left out of each ranking (the query's own
    position when the queries are gallery items). Returns ``(Q,)`` (or ``(Q, T)``); NaN where
    nothing is relevant.
    """
    batch_size = check_positive_int(batch_size, "batch_size")
    single = np.ndim(query_labels) == 1
    gallery_labels = np.asarray(gallery_labels).reshape(len(gallery_labels), -1)
    query_labels = np.asarray(query_labels).reshape(len(query_labels), -1)
    query_matrix = as_numeric_tensor(queries, "queries")
    _check_label_counts(len(query_matrix), len(index), query_labels, gallery_labels)
    query_labels, gallery_labels = label_codes(query_labels, gallery_labels)
    excluded = None if exclude is None else np.asarray(exclude).reshape(len(query_labels), -1)
    k = len(index) - (0 if excluded is None else excluded.shape[1])
    result = np.empty(query_labels.shape)
    for start in range(0, len(query_labels), batch_size):
        rows = slice(start, start + batch_size)
        values, ids = index.search(query_matrix[rows], k, None if excluded is None else excluded[rows])
        values, ids = np.asarray(values), np.asarray(ids)
        if not np.all(np.isfinite(values)):
            raise ValueError("the index returned NaN or infinite scores; check the embeddings and the model's scale.")
        group_ends = tie_group_ends(values)  # the search returns each ranking sorted best first
        for kind in range(query_labels.shape[1]):
            relevant = gallery_labels[ids, kind] == query_labels[rows, kind, None]
            result[rows, kind] = ranked_average_precision(group_ends, relevant)
    return result[:, 0] if single else result


def label_codes(query_labels: np.ndarray, gallery_labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes for labels ``(Q, T)`` and ``(G, T)`` of any hashable type, equal where the
    labels are equal (``==``): a ranking is then judged by comparing integers, not (for strings)
    Python objects. A label unequal to itself (NaN) gets a code of its own and matches nothing."""
    query_codes = np.empty(query_labels.shape, dtype=np.int64)
    gallery_codes = np.empty(gallery_labels.shape, dtype=np.int64)
    for kind in range(query_labels.shape[1]):
        codes: dict = {}
        unequal = itertools.count(-1, -1)
        for labels, out in ((query_labels[:, kind], query_codes[:, kind]), (gallery_labels[:, kind], gallery_codes[:, kind])):
            out[:] = [codes.setdefault(label, len(codes)) if label == label else next(unequal) for label in labels.tolist()]
    return query_codes, gallery_codes


def _check_label_counts(n_queries: int, n_gallery: int, query_labels: np.ndarray,
                        gallery_labels: np.ndarray) -> None:
    """One label row per query and per gallery item, with the same number of label kinds."""
    if len(query_labels) != n_queries or len(gallery_labels) != n_gallery:
        raise ValueError(
            f"got {len(query_labels)} query label(s) for {n_queries} queries and {len(gallery_labels)} gallery "
            f"label(s) for a gallery of {n_gallery}; pass one label per query and one per gallery item, in order."
        )
    if query_labels.shape[1] != gallery_labels.shape[1]:
        raise ValueError(f"query_labels has {query_labels.shape[1]} label kind(s) per row but gallery_labels has "
                         f"{gallery_labels.shape[1]}; pass the same kinds, (Q, T) and (G, T).")


def retrieval_map(index: Index, queries: ArrayLike, query_labels: ArrayLike,
                  gallery_labels: ArrayLike, exclude: ArrayLike | None = None, n_bootstrap: int = 1000,
                  random_state: int | None = 0) -> MeanAP:
    """Mean of :func:`retrieval_average_precision` with a bootstrap interval over queries."""
    per_query = retrieval_average_precision(index, queries, query_labels, gallery_labels, exclude)
    return summarize_average_precision(per_query, n_bootstrap, random_state=random_state)
