"""Does an image lie inside the built-in model's emoji world? A familiarity score for images seen
by the built-in model, so that the explorer can say when a photo's neighbours mean little.

The score of an image is the sum of two robust z-scores, each a nearest-neighbour cosine to a
small shipped reference made from the world's *training* split
(``assets/builtin-familiarity.npy``, hash-checked against ``assets/builtin-familiarity.json``):

* **semantic**: the cosine of the image's embedding to its nearest reference embedding;
* **texture**: the mean cosine of the image's *texture* (per-channel mean and standard deviation
  of one early stage of the image tower) to its ``k`` nearest reference textures.

Each z-score is ``(cosine - centre) / spread``, with the centre the median and the spread the
median minus the 5% quantile over calibration emoji; an image is *outside the world* when its
score is below the reference's threshold. Which stage, which ``k`` and the threshold were chosen
on held-out emoji and photos (:mod:`anchordiv.builtin.familiarity_study`, which rebuilds the
reference and prints the figures: ``python -m anchordiv.builtin.familiarity_study``).

:func:`familiarity` and :func:`outside_world` are math on arrays (no file I/O);
:func:`image_signatures` runs the image tower; :func:`load_reference` reads the shipped file.
"""
from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from ..cache import sha256_file
from .weights import ASSETS_DIR, RESTORE

REFERENCE_NAME = "builtin-familiarity.npy"
MANIFEST_NAME = "builtin-familiarity.json"


@dataclass(frozen=True)
class FamiliarityReference:
    """What :func:`familiarity` compares an image with.

    ``embeddings`` ``(m, d)`` and ``textures`` ``(m2, t)`` are unit rows (reference points of the
    training split); ``centres`` and ``spreads`` ``(2,)`` standardise the semantic and texture
    cosines; ``threshold`` is the score below which an image is outside the world; ``stage`` is the
    image-tower stage the textures are read after and ``k`` how many texture neighbours are averaged;
    ``weights_sha256`` names the weights the reference was made with.
    """

    embeddings: np.ndarray
    textures: np.ndarray
    centres: np.ndarray
    spreads: np.ndarray
    threshold: float
    stage: int
    k: int
    weights_sha256: str


def _unit_rows(values, name: str, dim: int) -> np.ndarray:
    """``values`` as float32 ``(n, dim)`` unit rows; a ValueError naming ``name`` otherwise."""
    array = np.asarray(values, dtype=np.float32)
    if array.ndim != 2 or array.shape[1] != dim:
        raise ValueError(f"{name} must be an (n, {dim}) array, not shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} holds NaN or infinite values")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    if (norms == 0).any():
        raise ValueError(f"{name} holds an all-zero row, which has no direction")
    return array / norms


def neighbour_cosines(points, reference: np.ndarray, k: int = 1) -> np.ndarray:
    """Mean cosine of each row of ``points`` ``(n, d)`` to its ``k`` nearest rows of the unit
    ``reference`` ``(m, d)``: ``(n,)``."""
    cosines = _unit_rows(points, "points", reference.shape[1]) @ reference.T
    return np.sort(cosines, axis=1)[:, -k:].mean(axis=1)


def familiarity_parts(embeddings, textures, reference: FamiliarityReference) -> np.ndarray:
    """The semantic and texture z-scores ``(n, 2)`` of images with ``embeddings`` ``(n, d)`` and
    ``textures`` ``(n, t)`` (:func:`image_signatures`)."""
    embeddings = _unit_rows(embeddings, "embeddings", reference.embeddings.shape[1])
    textures = _unit_rows(textures, "textures", reference.textures.shape[1])
    if len(embeddings) != len(textures):
        raise ValueError(f"{len(embeddings)} embeddings but {len(textures)} textures: one of each per image")
    cosines = np.stack([neighbour_cosines(embeddings, reference.embeddings, 1),
                        neighbour_cosines(textures, reference.textures, reference.k)], axis=1)
    return (cosines - reference.centres) / reference.spreads


def familiarity(embeddings, textures, reference: FamiliarityReference) -> np.ndarray:
    """How much images look like the built-in model's training world: ``(n,)``, about 0 for a
    typical emoji, lower for less familiar images (see the module docstring)."""
    return familiarity_parts(embeddings, textures, reference).sum(axis=1)


def outside_world(embeddings, textures, reference: FamiliarityReference) -> np.ndarray:
    """Boolean ``(n,)``: the images whose :func:`familiarity` is below ``reference.threshold``."""
    return familiarity(embeddings, textures, reference) < reference.threshold


@torch.no_grad()
def image_signatures(encoder, images: Sequence, stage: int, batch_size: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """The built-in ``encoder``'s embeddings ``(n, d)`` of PIL ``images`` and their textures
    ``(n, 2 * channels)``: per-channel mean and standard deviation after image-tower stage
    ``stage``, both from one pass through the tower."""
    from ..encoders.builtin import image_tensor

    tower = encoder.model.image_tower
    size = encoder.model.config.image_size
    embeddings, textures = [], []
    for start in range(0, len(images), batch_size):
        batch = torch.stack([image_tensor(image, size) for image in images[start:start + batch_size]])
        features = tower.stem((batch.to(encoder.device) - tower.pixel_mean) / tower.pixel_std)
        for index, block in enumerate(tower.stages):
            features = block(features)
            if index == stage:
                textures.append(torch.cat([features.mean(dim=(2, 3)), features.std(dim=(2, 3))], dim=1).cpu())
        pooled = torch.cat([features.mean(dim=(2, 3)), features.amax(dim=(2, 3))], dim=1)
        embeddings.append(torch.nn.functional.normalize(tower.head(pooled), dim=1).cpu())
    return torch.cat(embeddings).numpy(), torch.cat(textures).numpy()


def load_reference(weights_sha256: str | None, directory: Path = ASSETS_DIR) -> FamiliarityReference | None:
    """The shipped reference when it was made with the weights ``weights_sha256`` and its bytes are
    the ones its manifest records; ``None`` otherwise (retrained weights: no familiarity check)."""
    directory = Path(directory)
    manifest_path, path = directory / MANIFEST_NAME, directory / REFERENCE_NAME
    if weights_sha256 is None or not manifest_path.is_file() or not path.is_file():
        return None
    manifest = json.loads(manifest_path.read_text())
    if manifest.get("weights_sha256") != weights_sha256:
        return None
    if sha256_file(path) != manifest.get("sha256"):
        warnings.warn(f"{path} is not the file {manifest_path} records, so photos are not recognised as outside "
                      f"the built-in world (restore it by {RESTORE})", stacklevel=2)
        return None
    # One float16 array: the reference embeddings' columns, then the textures' (rows paired by index only).
    stacked, dim = np.load(path), int(manifest["embedding_dim"])
    return FamiliarityReference(
        embeddings=_unit_rows(stacked[:, :dim], "reference embeddings", dim),
        textures=_unit_rows(stacked[:, dim:], "reference textures", stacked.shape[1] - dim),
        centres=np.asarray(manifest["centres"], np.float32), spreads=np.asarray(manifest["spreads"], np.float32),
        threshold=float(manifest["threshold"]), stage=int(manifest["stage"]), k=int(manifest["k"]),
        weights_sha256=weights_sha256)


def images_outside_world(encoder, images: Sequence, reference: FamiliarityReference | None = None) -> np.ndarray | None:
    """Boolean ``(n,)`` for PIL ``images`` under ``encoder``: True where an image lies outside the
    built-in model's world. ``None`` when the encoder is not the built-in one (other models have no
    such check) or no reference belongs to its weights."""
    if not hasattr(encoder, "weights_sha256") or not hasattr(encoder, "model"):
        return None
    reference = reference or load_reference(encoder.weights_sha256)
    if reference is None:
        return None
    embeddings, textures = image_signatures(encoder, list(images), reference.stage)
    return outside_world(embeddings, textures, reference)
