"""The learned-geometry benchmark (issue 25): :class:`~anchordiv.FeedbackAnchors` on the built-in world.

Two figures, both on the built-in encoder's shipped world embeddings:

* **speed**: the time of one ``fit`` with the whole world as the gallery (G = 19,728) and a
  2,000-term vocabulary (:func:`world_vocabulary`), best of ``repeats``;
* **quality**, on one split (the training split unless asked): for ``queries`` seeded queries and
  each task, 5 marked items (``"style"``: of the query's style, other emoji; ``"emoji"``: the
  query's emoji in other renderings), the average precision of the query's *other* relevant items
  (query and marked items left out of the ranking) under the learned geometry, cosine, and the
  whole vocabulary with uniform weights; and how often the style phrases (for ``"emoji"``: the
  emoji names) hold at least half of the learned weight.

The design is chosen on the training split; the held-out split is measured once the design is
fixed, for the docs (``python -m anchordiv bench --feedback --heldout``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from ..builtin.captions import STYLE_TEMPLATES, subcategory_words
from ..metrics import average_precision
from ..models.empirical import EmpiricalAnchors
from ..models.feedback import FeedbackAnchors

VOCABULARY_SIZE = 2000
GENERIC_PHRASES = (
    "an emoji", "an icon", "a picture", "a drawing", "a painting", "a photo", "a sketch", "a cartoon",
    "a symbol", "a sign", "a face", "a person", "an animal", "a plant", "food", "a drink", "a place",
    "a vehicle", "a building", "a flag", "an object", "a tool", "clothing", "a sport", "weather",
    "red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white", "grey",
    "bright colours", "dark background", "white background", "soft edges", "sharp edges", "texture",
    "brush strokes", "pixels", "lines", "glow", "flat colours", "shading", "small", "large",
)


def style_phrases(styles: list[str]) -> list[str]:
    """The style phrases of the vocabulary: each style through :data:`STYLE_TEMPLATES`."""
    return [template.format(style=style) for style in styles for template in STYLE_TEMPLATES]


def world_vocabulary(labels, size: int = VOCABULARY_SIZE) -> tuple[list[str], list[str]]:
    """``(terms, style terms)``: ``size`` distinct texts about the world, its emoji names, style phrases,
    subcategories and categories, generic phrases, then ``"a {name}"`` until ``size``."""
    names = list(dict.fromkeys(labels["name"].astype(str)))
    styles = sorted(dict.fromkeys(labels["style"].astype(str)))
    styled = style_phrases(styles)
    subcategories = [subcategory_words(s) for s in dict.fromkeys(labels["subcategory"].astype(str))]
    categories = list(dict.fromkeys(labels["category"].astype(str)))
    terms = list(dict.fromkeys([*names, *styled, *subcategories, *categories, *GENERIC_PHRASES]))
    for name in names:
        if len(terms) >= size:
            break
        if f"a {name}" not in terms:
            terms.append(f"a {name}")
    return terms[:size], styled


@dataclass
class FeedbackBenchConfig:
    queries: int = 50
    marked: int = 5
    repeats: int = 3
    seed: int = 0
    params: dict = field(default_factory=dict)


def _world(split: str):
    from ..encoders.builtin import load_builtin_encoder
    from ..gallery import world_gallery
    from ..text_cache import encode_texts_cached

    encoder = load_builtin_encoder()
    gallery = world_gallery(encoder, split)
    terms, styled = world_vocabulary(gallery.labels)
    anchors = encode_texts_cached(encoder, terms)
    return encoder, gallery, terms, styled, anchors


def time_fit(config: FeedbackBenchConfig) -> dict:
    """Seconds of one fit on the whole world (best of ``repeats``), with one query and 5 marked items."""
    encoder, gallery, terms, _, anchors = _world("all")
    rng = np.random.default_rng(config.seed)
    styles = gallery.labels["style"].to_numpy()
    query = int(rng.integers(len(gallery)))
    same = np.flatnonzero(styles == styles[query])
    marked = rng.choice(same[same != query], size=config.marked, replace=False)
    times = []
    for _ in range(config.repeats):
        model = FeedbackAnchors(scale=encoder.logit_scale, **config.params)
        start = time.perf_counter()
        model.fit(anchors, gallery.embeddings[[query]], gallery.embeddings, [marked.tolist()])
        times.append(time.perf_counter() - start)
    return {"gallery": len(gallery), "anchors": len(terms), "threads": torch.get_num_threads(),
            "seconds": min(times), "support": int(model.support_.size)}


TASKS = ("style", "emoji")


def quality(config: FeedbackBenchConfig, split: str = "train") -> dict:
    """Per task of :data:`TASKS`, the mean AP of the other relevant items on ``split``: learned,
    cosine, uniform vocabulary; the share of queries whose task terms hold half the weight."""
    encoder, gallery, terms, styled, anchors = _world(split)
    labels = {"style": gallery.labels["style"].to_numpy(), "emoji": gallery.labels["emoji_id"].to_numpy()}
    names = set(gallery.labels["name"].astype(str))
    task_terms = {"style": np.isin(np.asarray(terms), styled),
                  "emoji": np.asarray([term in names or term.removeprefix("a ") in names for term in terms])}
    uniform = EmpiricalAnchors(scale=encoder.logit_scale).fit(anchors)
    return {task: _task_quality(config, encoder, gallery.embeddings, anchors, uniform, labels, task, task_terms[task])
            for task in TASKS}


def _task_quality(config, encoder, embeddings, anchors, uniform, labels, task: str, is_task_term) -> dict:
    rng = np.random.default_rng(config.seed)
    other = labels["emoji" if task == "style" else "style"]
    same_label = labels[task]
    rows = {"learned": [], "cosine": [], "uniform": [], "task_weight": [], "seconds": [], "support": []}
    for query in rng.permutation(len(embeddings)):
        relevant_all = same_label == same_label[query]
        candidates = np.flatnonzero(relevant_all & (other != other[query]))
        if candidates.size <= config.marked:  # nothing would be left to find
            continue
        marked = rng.choice(candidates, size=config.marked, replace=False)
        keep = np.ones(len(embeddings), bool)
        keep[[query, *marked]] = False
        model = FeedbackAnchors(scale=encoder.logit_scale, seed=config.seed, **config.params)
        start = time.perf_counter()
        model.fit(anchors, embeddings[[query]], embeddings, [marked.tolist()])
        rows["seconds"].append(time.perf_counter() - start)
        rows["support"].append(model.support_.size)
        rows["task_weight"].append(float(model.weights_[is_task_term].sum()))
        x = embeddings[[query]]
        scores = {"learned": -model.divergence(x, embeddings)[0], "uniform": -uniform.divergence(x, embeddings)[0],
                  "cosine": (embeddings @ x[0]).numpy()}
        for name, score in scores.items():
            rows[name].append(average_precision(np.asarray(score)[keep], relevant_all[keep]))
        if len(rows["learned"]) == config.queries:
            break
    weights = np.asarray(rows["task_weight"])
    return {"queries": len(rows["learned"]), **{name: float(np.mean(rows[name])) for name in ("learned", "cosine", "uniform")},
            "task_half": float(np.mean(weights >= 0.5)), "task_weight": float(weights.mean()),
            "fit_seconds": float(np.median(rows["seconds"])), "support": float(np.median(rows["support"]))}


TASK_WORDS = {"style": ("same-style items (other emoji)", "the style phrases"),
              "emoji": ("same-emoji items (other renderings)", "the emoji names")}


def figure_lines(speed: dict, results: dict, split: str) -> list[str]:
    """The benchmark's printed result."""
    lines = [f"fit, whole world: G={speed['gallery']:,}, N={speed['anchors']:,} terms, {speed['threads']} threads: "
             f"{speed['seconds']:.2f} s (best of runs), {speed['support']} anchors kept"]
    for task, figures in results.items():
        marked, terms = TASK_WORDS[task]
        lines += [f"{split} split, {figures['queries']} queries, 5 marked {marked}: mean AP of the other ones: "
                  f"learned {figures['learned']:.3f}, cosine {figures['cosine']:.3f}, uniform vocabulary "
                  f"{figures['uniform']:.3f}",
                  f"  {terms} hold >= half the learned weight for {figures['task_half']:.0%} of queries (mean "
                  f"{figures['task_weight']:.2f}); median fit {figures['fit_seconds']:.2f} s, median support "
                  f"{figures['support']:.0f} anchors"]
    return lines
