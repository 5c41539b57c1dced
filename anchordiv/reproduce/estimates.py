"""Per-query average precision for a fixed sample of queries, and intervals over queries and anchor draws."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..metrics import retrieval_average_precision, two_way_bootstrap_interval
from ..search import Index
from .study import Study


@dataclass(frozen=True)
class Estimate:
    """Mean of an ``(R, Q)`` table of per-query values and its 95% two-way bootstrap interval."""

    mean: float
    low: float
    high: float
    n_draws: int
    n_queries: int

    def row(self) -> dict[str, float | int]:
        return {"mean": self.mean, "low": self.low, "high": self.high, "draws": self.n_draws, "queries": self.n_queries}


def estimate(values: np.ndarray, n_bootstrap: int, random_state: int = 0) -> Estimate:
    """:class:`Estimate` of ``values`` ``(R, Q)`` (or ``(Q,)``), resampling anchor draws (rows) and
    queries (columns); columns with a NaN (a query with no relevant item) are left out."""
    table = np.atleast_2d(np.asarray(values, dtype=np.float64))
    table = table[:, ~np.isnan(table).any(axis=0)]
    if table.shape[1] == 0:
        raise ValueError("no query has a relevant gallery item for this target; check the label column.")
    low, high = two_way_bootstrap_interval(table, n_bootstrap, random_state=random_state)
    return Estimate(float(table.mean()), low, high, table.shape[0], table.shape[1])


class QuerySample:
    """A fixed random sample of gallery images used as queries, each left out of its own ranking.

    ``targets`` maps a target name ("object", "style", a condition) to its label column; AP for
    every target comes from one ranking per query.
    """

    def __init__(self, study: Study, n_queries: int, seed: int = 0, ids: np.ndarray | None = None):
        self.study = study
        targets = {"object": study.object_column, "style": study.style_column}
        targets.update({column: column for column in study.condition_columns})
        self.targets = {name: column for name, column in targets.items() if column is not None}
        if ids is None:
            rng = np.random.default_rng(seed)
            n_items = len(study.gallery)
            ids = np.sort(rng.choice(n_items, size=min(n_queries, n_items), replace=False))
        self.ids = np.asarray(ids, dtype=np.int64)
        labels = study.labels[list(self.targets.values())]
        self._gallery_labels = labels.to_numpy()
        self._query_labels = self._gallery_labels[self.ids]
        self._queries = study.embeddings[torch.as_tensor(self.ids)]

    def __len__(self) -> int:
        return len(self.ids)

    def average_precision(self, index: Index) -> dict[str, np.ndarray]:
        """AP of each query ``(Q,)`` per target, ranking the whole gallery with ``index``."""
        per_query = retrieval_average_precision(index, self._queries, self._query_labels, self._gallery_labels,
                                                exclude=self.ids)
        return {name: per_query[:, column] for column, name in enumerate(self.targets)}

    def agreement(self, index: Index, k: int = 10) -> dict[str, np.ndarray]:
        """Per target, the fraction of each query's top-``k`` under ``index`` that shares its label ``(Q,)``:
        what a person reads off a grid of ``k`` neighbours."""
        _, ids = index.search(self._queries, k, exclude=self.ids)
        shared = self._gallery_labels[np.asarray(ids)] == self._query_labels[:, None, :]  # (Q, k, T)
        return {name: shared[:, :, column].mean(axis=1) for column, name in enumerate(self.targets)}
