"""Does an image lie inside the built-in model's emoji world? A familiarity score for images seen
by the built-in model, so that the explorer can say when a photo's neighbours mean little.

Every image gets one feature row from one pass through the image tower (:func:`image_features`):
its embedding, the per-channel mean and standard deviation after each tower stage (its *texture*
at four scales), and a few statistics of the 64 x 64 pixels the tower sees (a colour histogram,
how much of the image is flat, how its border differs from its centre: drawings are few flat
colours on a plain backdrop, photos are neither). The score is linear in the standardised
columns of some of these blocks, ``familiarity = -(z @ weights + bias)``: a logistic regression
of photo against emoji, so about 0 and above for emoji, far below for photos. An image is
*outside the world* when its score is below the threshold.

Which blocks, the weights and the threshold were chosen and fitted on training-split emoji,
held-out emoji and sample photos by :mod:`anchordiv.builtin.familiarity_study`, which rebuilds
the shipped reference (``assets/builtin-familiarity.npy``, hash-checked against
``assets/builtin-familiarity.json``) and prints the figures:
``python -m anchordiv.cli.familiarity_study``.

:func:`familiarity`, :func:`outside_world` and :func:`pixel_statistics` are math on arrays (no
file I/O); :func:`image_features` runs the image tower; :func:`load_reference` reads the shipped file.
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
from .model import image_tensor
from .weights import ASSETS_DIR, RESTORE

REFERENCE_NAME = "builtin-familiarity.npy"
MANIFEST_NAME = "builtin-familiarity.json"
# Pixel statistics: 4 levels per channel make the 64-bin colour histogram; a neighbour step below
# the first two levels is flat (drawn fills; the quantisation steps of a PNG), above the last an edge.
COLOUR_LEVELS = 4
FLAT_STEPS, EDGE_STEP = (0.004, 0.02, 0.06), 0.25
BORDER = 4


def feature_blocks(widths: Sequence[int], embed_dim: int) -> dict[str, int]:
    """The named blocks of an :func:`image_features` row, in order, with their widths, for a
    tower of stage ``widths`` and embedding size ``embed_dim``."""
    return {"embedding": embed_dim, **{f"stage {index}": 2 * width for index, width in enumerate(widths)},
            "colours": COLOUR_LEVELS ** 3, "gradients": 2 + len(FLAT_STEPS), "border": 9}


def block_columns(blocks: dict[str, int], chosen: Sequence[str]) -> np.ndarray:
    """The column indices ``(c,)`` of the ``chosen`` blocks within a row laid out as ``blocks``."""
    starts = np.cumsum([0] + list(blocks.values()))
    unknown = [name for name in chosen if name not in blocks]
    if unknown:
        raise ValueError(f"unknown feature block(s) {unknown}; the blocks are {list(blocks)}")
    index = {name: position for position, name in enumerate(blocks)}
    return np.concatenate([np.arange(starts[index[name]], starts[index[name] + 1]) for name in chosen])


def pixel_statistics(pixels: torch.Tensor) -> torch.Tensor:
    """Statistics ``(n, 78)`` of RGB ``pixels`` ``(n, 3, H, W)`` in [0, 1]: the colour histogram
    (64 bins), the mean largest-channel step between neighbours with the share of flat and of edge
    steps (5), and per channel the border's spread, the border's distance from the centre's mean
    and the centre's spread (9)."""
    count = len(pixels)
    levels = (pixels.clamp(0, 1 - 1e-6) * COLOUR_LEVELS).long()
    bins = (levels[:, 0] * COLOUR_LEVELS + levels[:, 1]) * COLOUR_LEVELS + levels[:, 2]
    histogram = torch.zeros(count, COLOUR_LEVELS ** 3).scatter_add_(1, bins.reshape(count, -1),
                                                                   torch.ones(bins.reshape(count, -1).shape))
    histogram /= bins[0].numel()
    steps = torch.cat([(pixels[..., 1:] - pixels[..., :-1]).abs().amax(dim=1).reshape(count, -1),
                       (pixels[..., 1:, :] - pixels[..., :-1, :]).abs().amax(dim=1).reshape(count, -1)], dim=1)
    gradients = torch.stack([steps.mean(dim=1), *((steps < flat).float().mean(dim=1) for flat in FLAT_STEPS),
                             (steps > EDGE_STEP).float().mean(dim=1)], dim=1)
    ring = torch.ones(pixels.shape[2:], dtype=torch.bool)
    ring[BORDER:-BORDER, BORDER:-BORDER] = False
    border, centre = pixels[..., ring], pixels[..., ~ring]
    edges = torch.cat([border.std(dim=2), (border.mean(dim=2) - centre.mean(dim=2)).abs(), centre.std(dim=2)], dim=1)
    return torch.cat([histogram, gradients, edges], dim=1)


@torch.no_grad()
def image_features(encoder, images: Sequence, batch_size: int = 64) -> np.ndarray:
    """Feature rows ``(n, f)`` of PIL ``images`` under the built-in ``encoder``, laid out as
    :func:`feature_blocks`: embedding, each stage's texture, :func:`pixel_statistics`."""
    tower = encoder.model.image_tower
    size = encoder.model.config.image_size
    rows = []
    for start in range(0, len(images), batch_size):
        pixels = torch.stack([image_tensor(image, size) for image in images[start:start + batch_size]])
        features = tower.stem((pixels.to(encoder.device) - tower.pixel_mean) / tower.pixel_std)
        textures = []
        for block in tower.stages:
            features = block(features)
            textures.append(torch.cat([features.mean(dim=(2, 3)), features.std(dim=(2, 3))], dim=1).cpu())
        pooled = torch.cat([features.mean(dim=(2, 3)), features.amax(dim=(2, 3))], dim=1)
        embedding = torch.nn.functional.normalize(tower.head(pooled), dim=1).cpu()
        rows.append(torch.cat([embedding, *textures, pixel_statistics(pixels)], dim=1))
    return torch.cat(rows).numpy()


@dataclass(frozen=True)
class FamiliarityReference:
    """What :func:`familiarity` scores an image with.

    ``blocks`` is the layout of a feature row (name -> width, :func:`feature_blocks`) and ``chosen``
    the blocks the score reads; ``mean``, ``scale`` and ``weights`` ``(c,)`` standardise and weigh
    their columns, ``bias`` completes the logistic regression; ``threshold`` is the score below
    which an image is outside the world; ``weights_sha256`` names the model weights it belongs to.
    """

    blocks: dict[str, int]
    chosen: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    threshold: float
    weights_sha256: str


def familiarity(features, reference: FamiliarityReference) -> np.ndarray:
    """How much images with feature rows ``features`` ``(n, f)`` (:func:`image_features`) look like
    the built-in model's training world: ``(n,)``, lower for less familiar images."""
    features = np.asarray(features, dtype=np.float32)
    width = sum(reference.blocks.values())
    if features.ndim != 2 or features.shape[1] != width:
        raise ValueError(f"features must be an (n, {width}) array, not shape {features.shape}")
    if not np.isfinite(features).all():
        raise ValueError("features hold NaN or infinite values")
    columns = features[:, block_columns(reference.blocks, reference.chosen)]
    return -(((columns - reference.mean) / reference.scale) @ reference.weights + reference.bias)


def outside_world(features, reference: FamiliarityReference) -> np.ndarray:
    """Boolean ``(n,)``: the images whose :func:`familiarity` is below ``reference.threshold``."""
    return familiarity(features, reference) < reference.threshold


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
    mean, scale, weights = np.load(path).astype(np.float32)  # one (3, c) array
    return FamiliarityReference(blocks=dict(manifest["blocks"]), chosen=tuple(manifest["chosen"]), mean=mean,
                                scale=scale, weights=weights, bias=float(manifest["bias"]),
                                threshold=float(manifest["threshold"]), weights_sha256=weights_sha256)


def images_outside_world(encoder, images: Sequence, reference: FamiliarityReference | None = None) -> np.ndarray | None:
    """Boolean ``(n,)`` for PIL ``images`` under ``encoder``: True where an image lies outside the
    built-in model's world. ``None`` when the encoder is not the built-in one (other models have no
    such check) or no reference belongs to its weights."""
    if not hasattr(encoder, "weights_sha256") or not hasattr(encoder, "model"):
        return None
    reference = reference or load_reference(encoder.weights_sha256)
    if reference is None:
        return None
    return outside_world(image_features(encoder, list(images)), reference)
