"""Captions for contrastive training: each names the object, the style, both, or the
subcategory, and knows which images it truthfully describes."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

OBJECT_TEMPLATES = ("{name}", "a {name}", "an emoji of a {name}")
STYLE_TEMPLATES = ("{style}", "{style} style")
BOTH_TEMPLATES = ("{style} {name}", "a {name} in {style} style")
SUBCATEGORY_TEMPLATES = ("{subcategory}",)
# How often each kind is drawn. Objects lead because held-out names are the hardest target.
KIND_WEIGHTS = {"object": 0.45, "both": 0.25, "style": 0.15, "subcategory": 0.15}


def subcategory_words(subcategory: str) -> str:
    """emoji.json's "animal-mammal" as a phrase: "animal mammal"."""
    return subcategory.replace("-", " ")


@dataclass(frozen=True)
class CaptionBank:
    """Every distinct caption, what it describes, and which captions fit each image.

    ``texts`` (C,); ``emoji``, ``style``, ``subcategory`` (C,) integer codes with -1 for "any";
    ``choices[i]`` lists, per kind, the caption ids that describe image ``i``.
    """

    texts: list[str]
    emoji: np.ndarray
    style: np.ndarray
    subcategory: np.ndarray
    choices: list[dict[str, np.ndarray]]

    def sample(self, images: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One caption id per image id in ``images`` ``(B,)``, kind drawn by :data:`KIND_WEIGHTS`."""
        kinds = list(KIND_WEIGHTS)
        drawn = rng.choice(len(kinds), size=len(images), p=list(KIND_WEIGHTS.values()))
        return np.array([rng.choice(self.choices[i][kinds[k]]) for i, k in zip(images, drawn)])


def image_codes(labels: pd.DataFrame, columns: tuple[str, ...] = ("emoji_id", "style", "subcategory")
                ) -> tuple[np.ndarray, dict[str, dict[str, int]]]:
    """Integer codes ``(n, 3)`` of each image's emoji, style and subcategory, and the vocabularies."""
    vocab = {col: {value: i for i, value in enumerate(sorted(labels[col].unique()))} for col in columns}
    codes = np.stack([labels[col].map(vocab[col]).to_numpy() for col in columns], axis=1)
    return codes, vocab


def build_caption_bank(labels: pd.DataFrame) -> CaptionBank:
    """Captions for every image of ``labels`` (columns emoji_id, name, style, subcategory)."""
    codes, vocab = image_codes(labels)
    ids: dict[tuple, int] = {}
    texts, attributes = [], []

    def caption(text: str, emoji: int, style: int, subcategory: int) -> int:
        key = (text, emoji, style, subcategory)
        if key not in ids:
            ids[key] = len(texts)
            texts.append(text)
            attributes.append((emoji, style, subcategory))
        return ids[key]

    choices = []
    for row, (emoji, style, sub) in zip(labels.itertuples(index=False), codes):
        phrase = subcategory_words(row.subcategory)
        choices.append({
            "object": np.array([caption(t.format(name=row.name), emoji, -1, -1) for t in OBJECT_TEMPLATES]),
            "style": np.array([caption(t.format(style=row.style), -1, style, -1) for t in STYLE_TEMPLATES]),
            "both": np.array([caption(t.format(name=row.name, style=row.style), emoji, style, -1)
                              for t in BOTH_TEMPLATES]),
            "subcategory": np.array([caption(t.format(subcategory=phrase), -1, -1, sub)
                                     for t in SUBCATEGORY_TEMPLATES]),
        })
    emoji, style, subcategory = (np.array(column) for column in zip(*attributes))
    return CaptionBank(texts, emoji, style, subcategory, choices)


def describes(bank: CaptionBank, image_codes_batch: np.ndarray, caption_ids: np.ndarray) -> np.ndarray:
    """Boolean ``(B, C_b)``: caption ``caption_ids[j]`` is true of image ``i`` (codes ``(B, 3)``).

    Many images share a caption ("pencil sketch"), so a batch has several positives per row.
    """
    result = np.ones((len(image_codes_batch), len(caption_ids)), bool)
    for column, wanted in enumerate((bank.emoji, bank.style, bank.subcategory)):
        need = wanted[caption_ids][None, :]
        result &= (need < 0) | (image_codes_batch[:, column:column + 1] == need)
    return result
