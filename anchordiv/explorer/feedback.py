"""A geometry learned from the gallery items a person marks (the Explore page's "Find anchors"):
the marks of one query (:class:`QueryMarks`), the training data they make for
:class:`~anchordiv.FeedbackAnchors` (:func:`training_set`), the fit over a vocabulary
(:func:`learn_weights`) and its explanation in words (:func:`weight_summary`)."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd
import torch

from ..device import resolve_device
from ..models.feedback import FeedbackAnchors
from .anchors import WEIGHT_DIGITS

# Marks of one query, each way (the grids show at most 2 x 50 items), and queries with marks.
MAX_MARKS = 50
MAX_MARKED_QUERIES = 20
FIT_SEED = 0
# The explanation names the fewest top terms holding this share of the weight, at most SUMMARY_TERMS.
SUMMARY_SHARE = 2 / 3
SUMMARY_TERMS = 10


@dataclass(frozen=True)
class QueryMarks:
    """One query's marks: its embedding ``vector`` ``(d,)``, its gallery id (``None`` for an upload
    or a text), its caption, and the gallery ids marked "like the query" and "not like it"."""

    vector: np.ndarray
    query_id: int | None
    caption: str
    like: tuple[int, ...] = ()
    unlike: tuple[int, ...] = ()

    @property
    def marked(self) -> bool:
        return bool(self.like or self.unlike)


def marks_key(query_id: int | None, vector: np.ndarray) -> str:
    """The key a query's marks are kept under: its gallery id, else a hash of its embedding."""
    if query_id is not None:
        return f"#{int(query_id)}"
    return "vector:" + hashlib.sha256(np.ascontiguousarray(vector, dtype=np.float32).tobytes()).hexdigest()[:16]


@dataclass(frozen=True)
class TrainingSet:
    """What :meth:`~anchordiv.FeedbackAnchors.fit` takes, in gallery ids: the queries ``(Q, d)``,
    per query the ids marked like it and not like it, and every marked id (sorted)."""

    queries: np.ndarray
    positives: list[list[int]]
    negatives: list[list[int]]
    marked_ids: np.ndarray


def training_set(marks: Sequence[QueryMarks], n_items: int) -> TrainingSet:
    """The training data of the queries in ``marks`` that have marks; a ``ValueError`` that names
    the query and the fix when there are none, when a query has no item marked like it, marks
    itself, marks an item both ways, or when there are more than :data:`MAX_MARKED_QUERIES`
    queries or :data:`MAX_MARKS` marks a way, or an id outside ``[0, n_items)``."""
    marked = [query for query in marks if query.marked]
    if not marked:
        raise ValueError("no gallery item is marked; mark at least one item 'like the query' first")
    if len(marked) > MAX_MARKED_QUERIES:
        raise ValueError(f"{len(marked)} queries have marks; at most {MAX_MARKED_QUERIES} are learned from "
                         "(clear the marks and mark fewer)")
    for query in marked:
        check_marks(query, n_items)
    return TrainingSet(np.stack([np.asarray(query.vector, dtype=np.float32) for query in marked]),
                       [list(query.like) for query in marked], [list(query.unlike) for query in marked],
                       np.unique(np.asarray([i for query in marked for i in query.like + query.unlike], np.int64)))


def check_marks(query: QueryMarks, n_items: int) -> None:
    """A ``ValueError`` naming ``query`` when its marks cannot be learned from (:func:`training_set`)."""
    where = f"query {query.caption}"
    if not query.like:
        raise ValueError(f"{where} has items marked 'not like it' but none 'like the query'; mark at least one "
                         "like it, or clear its marks")
    for way, ids in (("like the query", query.like), ("not like it", query.unlike)):
        if len(ids) > MAX_MARKS:
            raise ValueError(f"{where} has {len(ids)} items marked '{way}'; at most {MAX_MARKS} are taken")
        if any(not 0 <= int(i) < n_items for i in ids):
            raise ValueError(f"{where} marks an item outside this gallery of {n_items:,}; clear its marks")
    if query.query_id is not None and int(query.query_id) in set(query.like) | set(query.unlike):
        raise ValueError(f"{where} is marked as its own neighbour; unmark #{query.query_id}")
    both = sorted(set(query.like) & set(query.unlike))
    if both:
        raise ValueError(f"{where} marks {', '.join(f'#{i}' for i in both)} both 'like the query' and "
                         "'not like it'; mark each item one way")


@dataclass(frozen=True)
class LearnedAnchors:
    """A learned geometry's anchors: the terms with positive weight and their weights, largest
    first (summing to 1), how many queries it was learned from, its final loss, and the start the
    weights descended from (``spread_weight``: > 0 leans on the gallery's main axes, 0 is the
    marks' contrast alone)."""

    terms: tuple[str, ...]
    weights: np.ndarray
    queries: int
    loss: float
    spread_weight: float = 0.0

    def table(self) -> pd.DataFrame:
        """``term`` and ``weight``, one row per term, the weight to :data:`~anchordiv.explorer.anchors.WEIGHT_DIGITS`
        significant digits as :func:`~anchordiv.explorer.anchors.weighted_anchor_text` writes it (decimals
        would show a small positive weight as 0)."""
        shown = [float(f"{weight:.{WEIGHT_DIGITS}g}") for weight in self.weights]
        return pd.DataFrame({"term": list(self.terms), "weight": shown})


def learn_weights(anchors: torch.Tensor, terms: Sequence[str], data: TrainingSet, gallery_ids: np.ndarray,
                  gallery_rows: torch.Tensor, scale: float, seed: int = FIT_SEED,
                  spread_weight: float | str = "auto", device: str | torch.device | None = None) -> LearnedAnchors:
    """:class:`~anchordiv.FeedbackAnchors` at ``scale`` with ``seed``, over the vocabulary's
    embeddings ``anchors`` ``(N, d)`` (row ``i`` for ``terms[i]``), on the gallery rows
    ``gallery_rows`` ``(G', d)`` of the distinct ids ``gallery_ids`` ``(G',)`` (a sample of the
    gallery holding every marked id: the marks are renumbered to their positions in it).

    Its objective is :class:`~anchordiv.FeedbackAnchors`' (at its defaults): each item marked like
    a query should rank within the top ``top_fraction`` (10%) of that query's comparison items (the
    items marked "not like it", its 256 cosine-nearest unmarked rows and 4,096 unmarked rows drawn
    with the seed), a smoothed rank penalty that costs nothing once it does (the marked items also
    serve as queries of one another); 60 Adam steps on the weights, after which those below 0.1% of
    the largest become 0. ``spread_weight`` is FeedbackAnchors' start: ``"auto"`` (the default)
    descends both from the terms along which the gallery varies most and from the marks' contrast
    alone, and keeps the weights that sit more on what the marks share (a style, an object), so the
    marks decide where the weight goes (docs/benchmarks.md has the figures); a number fixes the
    start. The fit runs on ``device`` (``None``: CUDA when available,
    else CPU). A ``ValueError`` for fewer than 2 terms, a marked id missing from
    ``gallery_ids``, a fit that fails or weights that are not finite.
    """
    if len(terms) < 2 or anchors.shape[0] != len(terms):
        raise ValueError(f"a vocabulary of {len(terms)} term(s) has nothing to weigh; choose a list of at least 2 terms")
    position = {int(item): row for row, item in enumerate(np.asarray(gallery_ids, dtype=np.int64))}
    missing = [int(item) for item in data.marked_ids if int(item) not in position]
    if missing:
        raise ValueError(f"marked items {missing[:5]} are not among the gallery rows read")

    def renumbered(lists: list[list[int]]) -> list[list[int]]:
        return [[position[int(item)] for item in items] for items in lists]

    try:
        learner = FeedbackAnchors(scale=float(scale), seed=seed, spread_weight=spread_weight)
        model = learner.fit(anchors.to(resolve_device(device)), data.queries, gallery_rows, renumbered(data.positives), renumbered(data.negatives))
    except (RuntimeError, FloatingPointError) as error:  # numerical trouble, said as what to try
        raise ValueError(f"the fit failed ({error}); mark other items or choose another list") from None
    weights = np.asarray(model.weights_, dtype=np.float64)
    if not np.all(np.isfinite(weights)):
        raise ValueError("the fit did not converge (weights are not finite); mark other items or choose another list")
    order = np.argsort(-weights, kind="stable")
    order = order[weights[order] > 0]
    return LearnedAnchors(tuple(terms[i] for i in order), weights[order], len(data.queries), float(model.loss_),
                          float(model.spread_weight_))


def start_summary(learned: LearnedAnchors) -> str:
    """Which start the weights came from, in words: of the two, the one whose weights sit more on
    what the marks share."""
    if learned.spread_weight > 0:
        return ("These weights lean on the terms along which the gallery varies most: of the two starts tried, "
                "they sit more on what your marks share.")
    return ("These weights come from what your marks share alone: of the two starts tried, they sit more on it "
            "than leaning on the terms along which the gallery varies most.")


def weight_summary(learned: LearnedAnchors) -> str:
    """The geometry in one sentence: with ``w_(1) >= w_(2) >= ...`` the learned weights, the fewest
    ``m`` top terms with ``sum_{j <= m} w_(j) >= 2/3`` (at most :data:`SUMMARY_TERMS`), e.g.
    "Most of the weight (72%) is on 6 terms: pixel art, ...". """
    cumulative = np.cumsum(learned.weights)
    count = min(int(np.searchsorted(cumulative, SUMMARY_SHARE - 1e-12)) + 1, SUMMARY_TERMS, len(learned.terms))
    share = float(cumulative[count - 1])
    terms = ", ".join(learned.terms[:count])
    if count == len(learned.terms):
        return f"All of the weight is on {count} term{'s' * (count != 1)}: {terms}."
    if share >= SUMMARY_SHARE:
        return f"Most of the weight ({share:.0%}) is on {count} term{'s' * (count != 1)}: {terms}."
    return (f"The weight is spread over {len(learned.terms)} terms; the top {count} hold {share:.0%}: {terms}.")
