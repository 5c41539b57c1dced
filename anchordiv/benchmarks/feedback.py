"""The learned-geometry benchmark (issues 25 and 50): the Explore page's "Learn a geometry" on the
built-in world, through the very functions the page calls.

Each fit is the page's own path: the query's and its marks' :class:`~anchordiv.explorer.feedback.QueryMarks`,
:func:`~anchordiv.explorer.feedback.training_set`, :func:`~anchordiv.explorer.feedback.learn_weights`,
on the gallery the explorer shows by default (the whole world, read as the panel reads it:
:func:`~anchordiv.explorer.vocabulary.gallery_sample`), at the sidebar's default scale
(:data:`~anchordiv.explorer.settings.GEOMETRY`), over the panel's default vocabulary for the
built-in model (chosen, listed and encoded as the panel does) and over a 2,000-term one
(:func:`world_vocabulary`).

Figures, per vocabulary, number of marks (1, 3, 5) and task, on ``queries`` seeded queries of one
split (the training split while designing; the held-out split once, for the docs):

* ``"object"``: the marks are the query's emoji drawn in other styles; ``"style"``: other emoji in
  the query's style (queries drawn by a vendor, google or twitter, are left out of this task: the
  vendors' names are no style terms, so such a query's style has no term to find); ``"mixed"``:
  marks of both kinds (every other mark the query's emoji, the rest its style), which no kind of
  term can follow;
* **followed**: the share of queries whose marks decide the weights (not "too few to tell") with
  at least half the weight on the task's kind of term and the query's own term (its name; its
  style) among the 3 heaviest; **flagged**: the share the page answers "too few to tell";
* the mean weight on the task's kind of term, and the mean average precision of the query's
  *other* relevant items (query and marks left out of the ranking) under the learned weights
  (also when flagged), cosine and the whole vocabulary with uniform weights.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from ..builtin.captions import STYLE_TEMPLATES, subcategory_words
from ..datasets.shipped import VENDORS
from ..metrics import average_precision
from ..models.empirical import EmpiricalAnchors

VOCABULARY_SIZE = 2000
GENERIC_PHRASES = (
    "an emoji", "an icon", "a picture", "a drawing", "a painting", "a photo", "a sketch", "a cartoon",
    "a symbol", "a sign", "a face", "a person", "an animal", "a plant", "food", "a drink", "a place",
    "a vehicle", "a building", "a flag", "an object", "a tool", "clothing", "a sport", "weather",
    "red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white", "grey",
    "bright colours", "dark background", "white background", "soft edges", "sharp edges", "texture",
    "brush strokes", "pixels", "lines", "glow", "flat colours", "shading", "small", "large",
)
TASKS = ("object", "style", "mixed")
MARK_COUNTS = (1, 3, 5)
# Where the task's own term must rank among the learned weights to count as followed.
TOP = 3


def style_phrases(styles: list[str]) -> list[str]:
    """The style phrases of the vocabulary: each style through :data:`STYLE_TEMPLATES`."""
    return [template.format(style=style) for style in styles for template in STYLE_TEMPLATES]


def world_vocabulary(labels, size: int = VOCABULARY_SIZE) -> tuple[list[str], list[str]]:
    """``(terms, kinds)``: ``size`` distinct texts about the world and what each describes. Its emoji
    names, subcategories and categories (kind ``"object"``), the style phrases of its drawing styles
    (``"style"``; not the vendors' names, which describe no look), generic phrases (``"other"``),
    then ``"a {name}"`` (``"object"``) until ``size``."""
    names = list(dict.fromkeys(labels["name"].astype(str)))
    styles = sorted(style for style in dict.fromkeys(labels["style"].astype(str)) if style not in VENDORS)
    subcategories = [subcategory_words(s) for s in dict.fromkeys(labels["subcategory"].astype(str))]
    categories = list(dict.fromkeys(labels["category"].astype(str)))
    kinds: dict[str, str] = {}
    for kind, group in (("object", names), ("style", style_phrases(styles)), ("object", subcategories),
                        ("object", categories), ("other", GENERIC_PHRASES), ("object", [f"a {name}" for name in names])):
        for term in group:
            if len(kinds) < size:
                kinds.setdefault(term, kind)
    return list(kinds), list(kinds.values())


@dataclass
class FeedbackBenchConfig:
    queries: int = 16
    repeats: int = 3
    seed: int = 0


@dataclass(frozen=True)
class Vocabulary:
    """A vocabulary as the learner gets it: its terms, their kinds and their embeddings ``(N, d)``."""

    name: str
    terms: tuple[str, ...]
    kinds: tuple[str, ...] | None
    anchors: torch.Tensor


def page_setting(split: str):
    """What the page learns with: the built-in encoder, the explorer's default gallery (the whole
    world) and the rows the panel reads of it, the sidebar's default scale, the panel's default
    vocabulary and the 2,000-term one, and the ids of ``split`` (the queries and marks)."""
    from ..encoders.builtin import load_builtin_encoder
    from ..explorer.settings import GEOMETRY
    from ..explorer.vocabulary import default_vocabulary, gallery_sample, panel_vocabulary
    from ..gallery import world_gallery
    from ..prompts import default_choice, encode_anchors

    encoder = load_builtin_encoder()
    gallery = world_gallery(encoder, "all")
    ids = gallery_sample(len(gallery))
    name = default_vocabulary(encoder.name)
    terms, kinds = panel_vocabulary(name)
    wide_terms, wide_kinds = world_vocabulary(gallery.labels)
    vocabularies = [Vocabulary(f"page default ({name}, {len(terms):,} terms)", terms, kinds,
                               encode_anchors(encoder, terms, default_choice(encoder))),
                    Vocabulary(f"{len(wide_terms):,}-term", tuple(wide_terms), tuple(wide_kinds),
                               encode_anchors(encoder, wide_terms, default_choice(encoder)))]
    in_split = np.flatnonzero(gallery.labels["split"].to_numpy() == split)
    return gallery, ids, gallery.embeddings[ids], float(GEOMETRY.scale), vocabularies, in_split


def learn_as_the_page_does(gallery, ids, rows, scale: float, vocabulary: Vocabulary, query: int, marks):
    """:func:`~anchordiv.explorer.feedback.learn_weights` of one query's "like the query" marks, as
    the page calls it."""
    from ..explorer.feedback import QueryMarks, learn_weights, training_set

    marked = QueryMarks(np.asarray(gallery.embeddings[query], dtype=np.float32), query, gallery.caption(query),
                        tuple(int(item) for item in marks))
    data = training_set([marked], len(gallery))
    return learn_weights(vocabulary.anchors, vocabulary.terms, data, ids, rows, scale, vocabulary.kinds)


def time_fit(config: FeedbackBenchConfig) -> dict:
    """Seconds of one page fit on the whole world with the 2,000-term vocabulary (best of ``repeats``),
    one query and 5 marks."""
    gallery, ids, rows, scale, vocabularies, _ = page_setting("all")
    rng = np.random.default_rng(config.seed)
    styles = gallery.labels["style"].to_numpy()
    query = int(rng.integers(len(gallery)))
    same = np.flatnonzero(styles == styles[query])
    marks = rng.choice(same[same != query], size=5, replace=False)
    times = []
    for _ in range(config.repeats):
        start = time.perf_counter()
        learned = learn_as_the_page_does(gallery, ids, rows, scale, vocabularies[1], query, marks)
        times.append(time.perf_counter() - start)
    return {"gallery": len(gallery), "anchors": len(vocabularies[1].terms), "threads": torch.get_num_threads(),
            "seconds": min(times), "support": len(learned.terms)}


def draw_cases(labels, in_split: np.ndarray, task: str, n_marks: int, count: int, seed: int) -> list[tuple[int, list[int]]]:
    """``count`` seeded ``(query, marks)`` of ``task`` with ``n_marks`` marks, all from ``in_split``."""
    emoji, style = labels["emoji_id"].to_numpy(), labels["style"].to_numpy()
    inside = np.zeros(len(labels), bool)
    inside[in_split] = True
    rng = np.random.default_rng([seed, TASKS.index(task), n_marks])
    cases = []
    for query in rng.permutation(in_split):
        same_object = np.flatnonzero(inside & (emoji == emoji[query]) & (style != style[query]))
        same_style = np.flatnonzero(inside & (style == style[query]) & (emoji != emoji[query]))
        if task == "style" and style[query] in VENDORS:
            continue
        wanted = {"object": (n_marks, 0), "style": (0, n_marks), "mixed": ((n_marks + 1) // 2, n_marks // 2)}[task]
        if same_object.size < wanted[0] or same_style.size < wanted[1]:
            continue
        marks = [*rng.choice(same_object, wanted[0], replace=False), *rng.choice(same_style, wanted[1], replace=False)]
        cases.append((int(query), [int(item) for item in marks]))
        if len(cases) == count:
            break
    return cases


def own_terms(labels, query: int, task: str) -> set[str]:
    """The terms that name what the query's marks share with it: its name (or ``"a {name}"``) for
    ``"object"``, its style (or ``"{style} style"``) for ``"style"``."""
    if task == "object":
        name = str(labels["name"].iloc[query])
        return {name, f"a {name}"}
    return set(style_phrases([str(labels["style"].iloc[query])]))


def quality(config: FeedbackBenchConfig, split: str = "train") -> dict:
    """Per vocabulary, number of marks and task: the figures of the module's docstring on ``split``."""
    gallery, ids, rows, scale, vocabularies, in_split = page_setting(split)
    labels = gallery.labels
    embeddings = gallery.embeddings
    relevant_label = {"object": labels["emoji_id"].to_numpy(), "style": labels["style"].to_numpy()}
    results = {}
    for vocabulary in vocabularies:
        kind_of = dict(zip(vocabulary.terms, vocabulary.kinds or ()))
        uniform = EmpiricalAnchors(scale=scale).fit(vocabulary.anchors)
        for n_marks in MARK_COUNTS:
            for task in TASKS:
                if task == "mixed" and n_marks == 1:
                    continue
                rows_of = {"followed": [], "flagged": [], "kind_weight": [], "learned": [], "cosine": [], "uniform": []}
                for query, marks in draw_cases(labels, in_split, task, n_marks, config.queries, config.seed):
                    learned = learn_as_the_page_does(gallery, ids, rows, scale, vocabulary, query, marks)
                    rows_of["flagged"].append(not learned.decided)
                    if task == "mixed":
                        continue
                    on_kind = float(sum(w for term, w in zip(learned.terms, learned.weights)
                                        if kind_of.get(term, task) == task))
                    top = set(learned.terms[:TOP]) & own_terms(labels, query, task)
                    rows_of["kind_weight"].append(on_kind)
                    rows_of["followed"].append(learned.decided and on_kind >= 0.5 and bool(top))
                    for name, score in _scores(learned, vocabulary, uniform, scale, embeddings, query).items():
                        keep = np.ones(len(embeddings), bool)
                        keep[[query, *marks]] = False
                        relevant = relevant_label[task] == relevant_label[task][query]
                        rows_of[name].append(average_precision(score[keep], relevant[keep]))
                results[(vocabulary.name, n_marks, task)] = {
                    "queries": len(rows_of["flagged"]),
                    **{name: float(np.mean(values)) for name, values in rows_of.items() if values}}
    return results


def _scores(learned, vocabulary: Vocabulary, uniform: EmpiricalAnchors, scale: float, embeddings, query: int) -> dict:
    """Each gallery item's closeness to ``query`` ``(G,)``, higher first: minus the divergence under
    the learned weights and under uniform ones, and the cosine."""
    position = {term: row for row, term in enumerate(vocabulary.terms)}
    support = [position[term] for term in learned.terms]
    model = EmpiricalAnchors(scale=scale, weights=learned.weights).fit(vocabulary.anchors[support])
    x = embeddings[[query]]
    return {"learned": -model.divergence(x, embeddings)[0].numpy(), "cosine": (embeddings @ x[0]).numpy(),
            "uniform": -uniform.divergence(x, embeddings)[0].numpy()}


TASK_WORDS = {"object": "object marks (its emoji, other styles)", "style": "style marks (its style, other emoji)",
              "mixed": "mixed marks (both kinds)"}


def figure_lines(speed: dict, results: dict, split: str) -> list[str]:
    """The benchmark's printed result: the fit's time, then one table row per vocabulary, marks and task."""
    width = max(len(vocabulary) for vocabulary, _, _ in results)
    lines = [f"one page fit, whole world: G={speed['gallery']:,}, N={speed['anchors']:,} terms, {speed['threads']} "
             f"threads: {speed['seconds']:.2f} s (best of runs), {speed['support']} anchors kept",
             f"{split} split; followed = not flagged, >= half the weight on the task's kind of term and the query's "
             f"own term in the top {TOP}; AP of the query's other relevant items (learned also when flagged)",
             f"{'vocabulary':<{width}} {'marks':>5} {'task':<40} {'n':>3} {'followed':>8} {'flagged':>7} {'kind w':>6} "
             f"{'AP learned':>10} {'cosine':>6} {'uniform':>7}"]
    for (vocabulary, n_marks, task), figures in results.items():
        if task == "mixed":
            lines.append(f"{vocabulary:<{width}} {n_marks:>5} {TASK_WORDS[task]:<40} {figures['queries']:>3} {'':>8} "
                         f"{figures['flagged']:>7.0%}")
            continue
        lines.append(f"{vocabulary:<{width}} {n_marks:>5} {TASK_WORDS[task]:<40} {figures['queries']:>3} "
                     f"{figures['followed']:>8.0%} {figures['flagged']:>7.0%} {figures['kind_weight']:>6.2f} "
                     f"{figures['learned']:>10.3f} {figures['cosine']:>6.3f} {figures['uniform']:>7.3f}")
    return lines
