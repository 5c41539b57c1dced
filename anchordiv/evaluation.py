"""Retrieval evaluation (DESIGN.md §6): per-query AP over the whole gallery, query excluded."""
from __future__ import annotations

import numpy as np
import torch

from ._validation import ArrayLike
from .metrics import MeanAP, ranked_average_precision, summarize_average_precision, tie_group_ends
from .search import _InnerProductIndex


def retrieval_average_precision(index: _InnerProductIndex, queries: ArrayLike, query_labels: ArrayLike,
                                gallery_labels: ArrayLike, exclude: ArrayLike | None = None,
                                batch_size: int = 1024) -> np.ndarray:
    """AP of each query's full ranking of the gallery, relevant = same label.

    ``queries`` ``(Q, d)``; ``query_labels`` ``(Q,)`` and ``gallery_labels`` ``(G,)`` of any
    comparable type, or ``(Q, T)`` and ``(G, T)`` for ``T`` label kinds judged on one ranking;
    ``exclude`` ``(Q,)`` or ``(Q, m)`` gallery ids left out of each ranking (the query's own
    position when the queries are gallery items). Returns ``(Q,)`` (or ``(Q, T)``); NaN where
    nothing is relevant.
    """
    single = np.ndim(query_labels) == 1
    gallery_labels = np.asarray(gallery_labels).reshape(len(gallery_labels), -1)
    query_labels = np.asarray(query_labels).reshape(len(query_labels), -1)
    query_matrix = torch.as_tensor(np.asarray(queries)) if not isinstance(queries, torch.Tensor) else queries
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


def retrieval_map(index: _InnerProductIndex, queries: ArrayLike, query_labels: ArrayLike,
                  gallery_labels: ArrayLike, exclude: ArrayLike | None = None, n_bootstrap: int = 1000,
                  random_state: int | None = 0) -> MeanAP:
    """Mean of :func:`retrieval_average_precision` with a bootstrap interval over queries."""
    per_query = retrieval_average_precision(index, queries, query_labels, gallery_labels, exclude)
    return summarize_average_precision(per_query, n_bootstrap, random_state=random_state)
