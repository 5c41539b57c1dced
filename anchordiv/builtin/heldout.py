"""How good is the built-in model? Zero-shot recognition and anchor-divergence retrieval on the
held-out emoji (`python -m anchordiv evaluate-builtin`)."""
from __future__ import annotations

import logging
from typing import Callable

import numpy as np
import pandas as pd
import torch

from ..metrics import retrieval_average_precision, summarize_average_precision
from ..models import EmpiricalAnchors, GaussianAnchors
from ..search import AnchorIndex, CosineIndex, ITIIndex

logger = logging.getLogger(__name__)
TARGETS = {"same emoji": "emoji_id", "same style": "style"}


def zero_shot_hits(images: torch.Tensor, labels: pd.DataFrame, style_texts: torch.Tensor, styles: list[str],
                   name_texts: torch.Tensor, names: list[str]) -> pd.DataFrame:
    """Per image, booleans ``(n, 3)``: style right over the bare style phrases, object top-1 and
    top-5 among ``names``. ``images`` ``(n, d)``, ``style_texts`` ``(S, d)``, ``name_texts`` ``(K, d)``."""
    style_hit = np.array(styles)[(images @ style_texts.T).argmax(dim=1).numpy()] == labels["style"].to_numpy()
    top5 = np.array(names)[(images @ name_texts.T).topk(min(5, len(names)), dim=1).indices.numpy()]
    truth = labels["name"].to_numpy()[:, None]
    return pd.DataFrame({"style accuracy": style_hit, "object top-1": top5[:, 0] == truth[:, 0],
                         "object top-5": (top5 == truth).any(axis=1)})


def zero_shot_table(hits: pd.DataFrame, groups: pd.Series) -> pd.DataFrame:
    """:func:`zero_shot_hits` averaged per value of ``groups`` ``(n,)`` (e.g. each image's style)
    and over all images ("all"), with the number of images of each."""
    grouped = hits.groupby(groups.to_numpy())
    overall = hits.mean()
    overall["images"] = len(hits)
    table = pd.concat([pd.DataFrame([overall], index=["all"]), grouped.mean().assign(images=grouped.size())])
    return table.astype({"images": int})


def geometries(anchor_sets: dict[str, torch.Tensor], gallery: torch.Tensor, scales: list[float]
               ) -> dict[str, Callable[[], object]]:
    """Index builders by name: cosine; per anchor set ITI, softmax per scale, and Gaussian once.

    The Gaussian divergence is ``s^2/2 (x - y)^T Sigma (x - y)``: the scale multiplies every
    value alike, so one ranking serves every s (named "any s")."""
    builders: dict[str, Callable[[], object]] = {"cosine": lambda: CosineIndex(gallery)}
    for anchor_name, anchors in anchor_sets.items():
        builders[f"ITI, {anchor_name} anchors"] = lambda a=anchors: ITIIndex(a, gallery)
        for scale in scales:
            builders[f"softmax, {anchor_name} anchors, s={scale:g}"] = (
                lambda a=anchors, s=scale: AnchorIndex(EmpiricalAnchors(scale=s).fit(a), gallery))
        builders[f"Gaussian, {anchor_name} anchors, any s"] = (
            lambda a=anchors: AnchorIndex(GaussianAnchors(scale=1.0).fit(a), gallery))
    return builders


def retrieval_table(images: torch.Tensor, labels: pd.DataFrame,
                    builders: dict[str, Callable[[], object]]) -> pd.DataFrame:
    """mAP [95% bootstrap CI] of each geometry for each target, queries = every image, each
    excluded from its own gallery; plus per-style mAP for every target. Each geometry's row is
    logged at INFO as it is done."""
    label_matrix = labels[list(TARGETS.values())].to_numpy()
    own = np.arange(len(labels))
    rows = []
    for name, build in builders.items():
        per_query = retrieval_average_precision(build(), images, label_matrix, label_matrix, exclude=own)
        row = {"geometry": name}
        for column, target in enumerate(TARGETS):
            summary = summarize_average_precision(per_query[:, column])
            row[target] = summary.mean
            row[f"{target} CI"] = f"[{summary.low:.3f}, {summary.high:.3f}]"
            for style, mean in pd.Series(per_query[:, column]).groupby(labels["style"].to_numpy()).mean().items():
                row[f"{target} | {style}"] = mean
        rows.append(row)
        logger.info(f"  {name:<40} same emoji {row['same emoji']:.3f}  same style {row['same style']:.3f}")
    return pd.DataFrame(rows).set_index("geometry")
