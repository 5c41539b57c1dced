"""The learned-geometry benchmark (issue 25): :class:`~anchordiv.FeedbackAnchors` on the built-in world.

Two figures, both on the built-in encoder's shipped world embeddings:

* **speed**: the time of one ``fit`` with the whole world as the gallery (G = 19,728) and a
  2,000-term vocabulary (:func:`world_vocabulary`), best of ``repeats``;
* **quality, on the training split only**: for ``queries`` seeded training queries, 5 marked items
  of the query's style (other emoji), the average precision of the query's *other* same-style
  items (query and marked items left out of the ranking) under the learned geometry, cosine, and
  the whole vocabulary with uniform weights; and how often the style phrases hold at least half
  of the learned weight.

The held-out split is never touched here: the design is chosen on the training split.
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


def training_quality(config: FeedbackBenchConfig) -> dict:
    """Mean AP of the other same-style items on the training split: learned, cosine, uniform vocabulary."""
    encoder, gallery, terms, styled, anchors = _world("train")
    styles = gallery.labels["style"].to_numpy()
    emoji = gallery.labels["emoji_id"].to_numpy()
    is_style_term = np.isin(np.asarray(terms), styled)
    embeddings = gallery.embeddings
    uniform = EmpiricalAnchors(scale=encoder.logit_scale).fit(anchors)
    rng = np.random.default_rng(config.seed)
    rows = {"learned": [], "cosine": [], "uniform": [], "style_weight": [], "seconds": [], "support": []}
    for query in rng.choice(len(gallery), size=config.queries, replace=False):
        same = np.flatnonzero((styles == styles[query]) & (emoji != emoji[query]))
        marked = rng.choice(same, size=config.marked, replace=False)
        keep = np.ones(len(gallery), bool)
        keep[[query, *marked]] = False
        relevant = (styles == styles[query])[keep]
        model = FeedbackAnchors(scale=encoder.logit_scale, **config.params)
        start = time.perf_counter()
        model.fit(anchors, embeddings[[query]], embeddings, [marked.tolist()])
        rows["seconds"].append(time.perf_counter() - start)
        rows["support"].append(model.support_.size)
        rows["style_weight"].append(float(model.weights_[is_style_term].sum()))
        x = embeddings[[query]]
        scores = {"learned": -model.divergence(x, embeddings)[0], "uniform": -uniform.divergence(x, embeddings)[0],
                  "cosine": (embeddings @ x[0]).numpy()}
        for name, score in scores.items():
            rows[name].append(average_precision(np.asarray(score)[keep], relevant))
    weights = np.asarray(rows["style_weight"])
    return {"queries": config.queries, "learned": float(np.mean(rows["learned"])),
            "cosine": float(np.mean(rows["cosine"])), "uniform": float(np.mean(rows["uniform"])),
            "style_half": float(np.mean(weights >= 0.5)), "style_weight": float(weights.mean()),
            "fit_seconds": float(np.median(rows["seconds"])), "support": float(np.median(rows["support"]))}


def figure_lines(speed: dict, quality: dict) -> list[str]:
    """The benchmark's printed result."""
    return [
        f"fit, whole world: G={speed['gallery']:,}, N={speed['anchors']:,} terms, {speed['threads']} threads: "
        f"{speed['seconds']:.2f} s (best of runs), {speed['support']} anchors kept",
        f"training split, {quality['queries']} queries, 5 marked same-style items: mean AP of the other same-style "
        f"items: learned {quality['learned']:.3f}, cosine {quality['cosine']:.3f}, uniform vocabulary "
        f"{quality['uniform']:.3f}",
        f"style phrases hold >= half the learned weight for {quality['style_half']:.0%} of queries "
        f"(mean style weight {quality['style_weight']:.2f}); median fit {quality['fit_seconds']:.2f} s, "
        f"median support {quality['support']:.0f} anchors",
    ]
