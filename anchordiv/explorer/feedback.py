"""A geometry learned from the gallery items a person marks (the Explore page's "Find anchors"):
the marks of one query (:class:`QueryMarks`), the training data they make for
:class:`~anchordiv.FeedbackAnchors` (:func:`training_set`), the fit over a vocabulary
(:func:`learn_weights`), and what the page says of it (:func:`explanation`; when the marks are too
few to tell what they share, :func:`too_few_to_tell`)."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd
import torch

from ..device import resolve_device
from ..models.feedback import ONE_KIND, FeedbackAnchors
from .anchors import WEIGHT_DIGITS
from .literal import SHOWN_CHARS, shown

# Marks of one query, each way (the grids show at most 2 x 50 items), and queries with marks.
MAX_MARKS = 50
MAX_MARKED_QUERIES = 20
FIT_SEED = 0
# The explanation names the fewest top terms holding this share of the weight, at most SUMMARY_TERMS,
# whole ones only, in at most SHOWN_CHARS characters (what the page shows of a text uncut).
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
    first (summing to 1), how many queries it was learned from, the kind of term the weight is on
    (``"object"``, ``"style"``; ``"term"`` for a vocabulary of one kind) and the vocabulary's kinds,
    and whether the marks decide it (:attr:`~anchordiv.FeedbackAnchors.decided_`: when not, the
    weights are a guess that the page does not offer)."""

    terms: tuple[str, ...]
    weights: np.ndarray
    queries: int
    kind: str = ONE_KIND
    kinds: tuple[str, ...] = (ONE_KIND,)
    decided: bool = True

    def table(self) -> pd.DataFrame:
        """``term`` and ``weight``, one row per term, the weight to :data:`~anchordiv.explorer.anchors.WEIGHT_DIGITS`
        significant digits as :func:`~anchordiv.explorer.anchors.weighted_anchor_text` writes it (decimals
        would show a small positive weight as 0)."""
        shown_weights = [float(f"{weight:.{WEIGHT_DIGITS}g}") for weight in self.weights]
        return pd.DataFrame({"term": list(self.terms), "weight": shown_weights})


def learn_weights(anchors: torch.Tensor, terms: Sequence[str], data: TrainingSet, gallery_ids: np.ndarray,
                  gallery_rows: torch.Tensor, scale: float, kinds: Sequence[str] | None = None, seed: int = FIT_SEED,
                  device: str | torch.device | None = None) -> LearnedAnchors:
    """:class:`~anchordiv.FeedbackAnchors` at ``scale`` with ``seed`` (its defaults otherwise), over
    the vocabulary's embeddings ``anchors`` ``(N, d)`` (row ``i`` for ``terms[i]``, of kind
    ``kinds[i]``; ``None``: one kind), on the gallery rows ``gallery_rows`` ``(G', d)`` of the
    distinct ids ``gallery_ids`` ``(G',)`` (a sample of the gallery holding every marked id: the
    marks are renumbered to their positions in it).

    The weights go to the kind of term on which the query and the items marked like it agree most
    (the same object in other styles: object names; the same style on other objects: styles),
    most to the term they share; ``decided`` is ``False`` when the marks are too few, or too much
    at odds, to tell what they share (:class:`~anchordiv.FeedbackAnchors` gives the rule). The fit
    runs on ``device`` (``None``: CUDA when available, else CPU). A ``ValueError`` for fewer than
    2 terms, a marked id missing from ``gallery_ids``, a fit that fails or weights that are not finite.
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
        learner = FeedbackAnchors(scale=float(scale), seed=seed)
        model = learner.fit(anchors.to(resolve_device(device)), data.queries, gallery_rows, renumbered(data.positives),
                            renumbered(data.negatives), kinds=kinds)
    except (RuntimeError, FloatingPointError) as error:  # numerical trouble, said as what to try
        raise ValueError(f"the fit failed ({error}); mark other items or choose another list") from None
    weights = np.asarray(model.weights_, dtype=np.float64)
    if not np.all(np.isfinite(weights)):
        raise ValueError("the fit did not converge (weights are not finite); mark other items or choose another list")
    order = np.argsort(-weights, kind="stable")
    order = order[weights[order] > 0]
    return LearnedAnchors(tuple(terms[i] for i in order), weights[order], len(data.queries), model.kind_,
                          tuple(model.agreement_), model.decided_)


def too_few_to_tell(learned: LearnedAnchors) -> str:
    """What the page says instead of the weights when the marks do not decide them: that they are
    too few (or too much at odds) to tell what they share with the query, and what to mark."""
    things = " or ".join(f"its {kind}" for kind in learned.kinds) if len(learned.kinds) > 1 else "it"
    return ("Your marks are too few, or too much at odds, to tell what they share with the query, so no "
            "geometry is offered. Mark two or three more items that share with the query the one thing you "
            f"mean ({things}), and clear any marks that share something else.")


def explanation(learned: LearnedAnchors, limit: int = SHOWN_CHARS) -> str:
    """The geometry in words, as :func:`~anchordiv.explorer.literal.shown` shows it in at most
    ``limit`` characters and never cut inside a term: what the marks share with the query (the top
    term and its kind), then, with ``w_(1) >= w_(2) >= ...`` the learned weights, the fewest ``m``
    top terms with ``sum_{j <= m} w_(j) >= 2/3`` (at most :data:`SUMMARY_TERMS`; those that do not
    fit in ``limit`` are counted, not named), e.g. "What your marks share with the query:
    dog face (an object). Most of the weight (72%) is on 6 object terms: dog face, ...". """
    kind = "" if learned.kind == ONE_KIND else learned.kind
    what = f" ({'an' if kind[:1] in tuple('aeiou') else 'a'} {kind})" if kind else ""
    cumulative = np.cumsum(learned.weights)
    count = min(int(np.searchsorted(cumulative, SUMMARY_SHARE - 1e-12)) + 1, SUMMARY_TERMS, len(learned.terms))
    share = float(cumulative[count - 1])
    noun = f"{kind} term" if kind else "term"
    if count == len(learned.terms):
        lead = f" All of the weight is on {count} {noun}{'s' * (count != 1)}: "
    elif share >= SUMMARY_SHARE:
        lead = f" Most of the weight ({share:.0%}) is on {count} {noun}{'s' * (count != 1)}: "
    else:
        lead = f" The weight is spread over {len(learned.terms)} {noun}s; the top {count} hold {share:.0%}: "
    opening = f"What your marks share with the query: {shown(learned.terms[0])}{what}."
    if len(shown(opening + lead)) + len(f"and {count:,} more.") > limit:  # a term too long to quote in the sentence
        opening = f"What your marks share with the query is the first term of the table{what}."
    head = shown(opening + lead)
    return head + _whole_terms([shown(term) for term in learned.terms[:count]], limit - len(head)) + "."


def _whole_terms(terms: list[str], room: int) -> str:
    """``terms`` joined by commas in at most ``room - 1`` characters (a full stop follows): as many
    whole terms as fit, then how many more are left out (which may leave out one more term to fit)."""
    for kept in range(len(terms), -1, -1):
        left = len(terms) - kept
        text = ", ".join(terms[:kept]) + (f"{', ' if kept else ''}and {left:,} more" if left else "")
        if len(text) < room:
            return text
    return ""
