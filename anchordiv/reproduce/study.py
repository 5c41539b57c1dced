"""What a reproduction runs on: a labelled, embedded gallery and its anchor texts, encoded.

A :class:`Study` bundles a :class:`~anchordiv.gallery.Gallery` (embeddings, labels, images) with
the anchor phrases of each role: object anchors (one per class), style anchors, and a broad prior
vocabulary for the posterior experiment. :func:`world_study` builds it for the built-in emoji
world's held-out split; :func:`layout_study` for a published dataset read by
:mod:`anchordiv.datasets.layouts`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from ..gallery import Gallery
from ..progress import ProgressCallback


@dataclass
class Study:
    """A gallery and the anchors the experiments draw from.

    ``object_texts`` ``(K,)``, ``style_texts`` ``(S,)`` and ``prior_texts`` ``(P,)`` are anchor
    phrases (``style_texts``/``prior_texts`` may be empty, which skips the experiments that need
    them); ``*_anchors`` are their unit embeddings ``(K, d)``, ``(S, d)``, ``(P, d)``.
    ``object_column`` (equal values = same object) and ``style_column`` name label columns, either
    may be ``None`` (CheXpert has neither); ``group_column`` groups queries for the condition-wise
    table (e.g. emoji category); ``condition_columns`` are boolean label columns judged one at a
    time (CheXpert pathologies), whose anchors are ``object_texts``. ``learned_scale`` is the
    encoder's logit scale.
    """

    name: str
    gallery: Gallery
    object_texts: tuple[str, ...]
    style_texts: tuple[str, ...]
    prior_texts: tuple[str, ...]
    object_anchors: torch.Tensor
    style_anchors: torch.Tensor
    prior_anchors: torch.Tensor
    encoder_name: str
    learned_scale: float
    object_column: str | None
    style_column: str | None
    group_column: str | None = None
    condition_columns: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)

    @property
    def labels(self) -> pd.DataFrame:
        return self.gallery.labels

    @property
    def embeddings(self) -> torch.Tensor:
        return self.gallery.embeddings


def _encode(encoder, texts: tuple[str, ...]) -> torch.Tensor:
    if not texts:
        return torch.zeros(0, encoder.dim)
    return torch.as_tensor(np.asarray(encoder.encode_texts(list(texts)), dtype=np.float32))


def _unique(values) -> tuple[str, ...]:
    return tuple(dict.fromkeys(str(value) for value in values if isinstance(value, str) and value.strip()))


def make_study(name: str, gallery: Gallery, encoder, object_column: str | None, style_column: str | None,
               object_texts, style_texts=(), prior_texts=(), group_column: str | None = None,
               condition_columns: tuple[str, ...] = ()) -> Study:
    """Encode the anchor texts with ``encoder`` and check them against the gallery."""
    object_texts, style_texts = _unique(object_texts), _unique(style_texts)
    prior_texts = tuple(text for text in _unique(prior_texts) if text not in set(object_texts))
    if len(object_texts) < 2:
        raise ValueError(f"a study needs at least 2 object anchors; got {len(object_texts)}. "
                         "Pass the class names of the gallery.")
    if len(gallery) < 3:
        raise ValueError(f"a study needs at least 3 gallery images; got {len(gallery)}.")
    for column in (object_column, style_column, group_column, *condition_columns):
        if column is not None and column not in gallery.labels.columns:
            raise ValueError(f"label column {column!r} is not in the gallery's labels {list(gallery.labels.columns)}.")
    return Study(name=name, gallery=gallery, object_texts=object_texts, style_texts=style_texts,
                 prior_texts=prior_texts, object_anchors=_encode(encoder, object_texts),
                 style_anchors=_encode(encoder, style_texts), prior_anchors=_encode(encoder, prior_texts),
                 encoder_name=encoder.name, learned_scale=float(encoder.logit_scale), object_column=object_column,
                 style_column=style_column if style_texts else None, group_column=group_column,
                 condition_columns=tuple(condition_columns))


def world_study(encoder, limit: int | None = None, progress: ProgressCallback | None = None) -> Study:
    """The built-in world's held-out split (emoji never seen in training), first ``limit`` images;
    ``progress(fraction, text)`` hears how its embedding goes when the world must be embedded.

    Object anchors are the held-out emoji names, style anchors the style names; the prior for the
    posterior experiment is every training emoji's name plus the emoji subcategory and category
    words (a broad vocabulary that never names a held-out emoji). Queries are grouped by category.
    """
    from ..datasets import open_emoji_world
    from ..gallery import world_gallery

    gallery = world_gallery(encoder, split="heldout", limit=limit, progress=progress)
    everything = open_emoji_world("all").labels  # the labels alone: nothing is drawn
    train = everything[everything["split"] == "train"]
    prior = [*train["name"], *(text.replace("-", " ") for text in everything["subcategory"]),
             *everything["category"]]
    return make_study("built-in emoji world, held-out split", gallery, encoder, "emoji_id", "style",
                      object_texts=gallery.labels["name"], style_texts=gallery.labels["style"],
                      prior_texts=prior, group_column="category")


def layout_study(layout, encoder, batch_size: int = 64) -> Study:
    """A published dataset read by :func:`anchordiv.datasets.layouts.load_layout`, embedded with
    ``encoder`` (cached by :func:`anchordiv.embeddings.embed_folder`). Images the layout does not
    label are left out; labelled images that cannot be read are reported in the study's notes."""
    from ..embeddings import embed_folder
    from ..images import load_image

    embedded = embed_folder(layout.root, encoder, batch_size=batch_size)
    rows = pd.DataFrame({"path": embedded.paths, "row": np.arange(len(embedded.paths))})
    joined = layout.labels.merge(rows, on="path", how="inner").sort_values("path").reset_index(drop=True)
    if joined.empty:
        raise ValueError(f"none of the {len(layout.labels)} labelled images of {layout.name} at {layout.root} "
                         "could be embedded; check the root folder.")
    paths = joined["path"].tolist()
    shown = layout.object_column or "path"
    gallery = Gallery(embeddings=embedded.embeddings[torch.tensor(joined["row"].to_numpy())],
                      labels=joined.drop(columns="row"), load=lambda item: load_image(layout.root / paths[item]),
                      object_column=shown, name_column=shown, style_column=layout.style_column,
                      key=f"{layout.name}|{encoder.name}|{embedded.cache_path.name}", description=layout.name)
    study = make_study(layout.name, gallery, encoder, layout.object_column, layout.style_column,
                       object_texts=layout.anchors.get("object", layout.anchors.get("condition", ())),
                       style_texts=layout.anchors.get("style", ()), group_column=layout.group_column,
                       condition_columns=layout.condition_columns)
    missing = len(layout.labels) - len(joined)
    if missing:
        study.notes.append(f"{missing} labelled image(s) could not be read and are left out.")
    return study
