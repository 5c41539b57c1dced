"""How the familiarity check (:mod:`anchordiv.builtin.familiarity`) was chosen, and its reference
rebuilt: ``python -m anchordiv.builtin.familiarity_study`` prints the figures, ``--write`` also
writes ``assets/builtin-familiarity.npy`` and its manifest (seeded: the same bytes on a rerun with
the same libraries and thread count).

* Reference: 1,024 k-means centres (seeded) of the training split's embeddings and as many of its
  textures.
* Emoji: the held-out split (all 7 styles), halved by emoji: one half to tune on, one to report.
* Photos: crops (40-100% of the short side), greyscale, mirrored and half-size variants of the
  sample photos that scikit-learn and matplotlib ship. The statistic and threshold are tuned on
  the two scikit-learn photos and reported on matplotlib's (Grace Hopper).
* Candidates: the semantic z-score alone, or plus the texture z-score of stage 0, 1 or 2 with
  ``k`` 1 or 5; the one with the best tuning AUC wins; the threshold is the tuning emoji's 5%
  quantile (one held-out emoji in 20 gets the notice).
"""
from __future__ import annotations

import argparse
import hashlib
import json

import numpy as np
from PIL import Image, ImageOps

from ..cache import atomic_write, sha256_file
from .familiarity import MANIFEST_NAME, REFERENCE_NAME, FamiliarityReference, image_signatures, neighbour_cosines
from .weights import ASSETS_DIR

CENTRES = 1024
STAGES, KS = (0, 1, 2), (1, 5)
FALSE_ALARM = 0.05
TUNE_PHOTOS, REPORT_PHOTOS = ("china", "flower"), ("grace_hopper",)


def sample_photos() -> dict[str, Image.Image]:
    """The real photos that installed packages ship: scikit-learn's two and matplotlib's one."""
    from matplotlib import cbook
    from sklearn.datasets import load_sample_image

    photos = {name: Image.fromarray(load_sample_image(f"{name}.jpg")) for name in ("china", "flower")}
    with cbook.get_sample_data("grace_hopper.jpg") as handle:
        photos["grace_hopper"] = Image.open(handle).convert("RGB")
    return photos


def photo_variants(photo: Image.Image, count: int = 120, seed: int = 0) -> list[Image.Image]:
    """The whole photo, its greyscale, and ``count`` square crops (40-100% of the short side) of
    which every fourth is greyscale, mirrored or taken from the photo at half size."""
    rng = np.random.default_rng(seed)
    variants = [photo, ImageOps.grayscale(photo).convert("RGB")]
    for index in range(count):
        source = photo.resize((photo.width // 2, photo.height // 2)) if index % 4 == 3 else photo
        side = int(min(source.size) * rng.uniform(0.4, 1.0))
        left, top = rng.integers(0, source.width - side + 1), rng.integers(0, source.height - side + 1)
        crop = source.crop((int(left), int(top), int(left) + side, int(top) + side))
        variants.append({1: ImageOps.grayscale(crop).convert("RGB"), 2: ImageOps.mirror(crop)}.get(index % 4, crop))
    return variants


def spherical_kmeans(points: np.ndarray, count: int, seed: int = 0, iterations: int = 20) -> np.ndarray:
    """``count`` unit centres ``(count, d)`` of the unit rows ``points`` ``(n, d)`` (seeded Lloyd
    iterations on cosine; an emptied centre keeps its place)."""
    rng = np.random.default_rng(seed)
    centres = points[np.sort(rng.choice(len(points), count, replace=False))].copy()
    for _ in range(iterations):
        nearest = (points @ centres.T).argmax(axis=1)
        sums = np.zeros_like(centres)
        np.add.at(sums, nearest, points)
        filled = np.linalg.norm(sums, axis=1) > 0
        centres[filled] = sums[filled] / np.linalg.norm(sums[filled], axis=1, keepdims=True)
    return centres


def auc(inside: np.ndarray, outside: np.ndarray) -> float:
    """Probability that an ``inside`` score beats an ``outside`` one (ties count half)."""
    ranks = np.argsort(np.argsort(np.r_[inside, outside], kind="stable"), kind="stable") + 1.0
    values = np.r_[inside, outside]
    for value in np.unique(values):  # average ranks over ties
        tied = values == value
        ranks[tied] = ranks[tied].mean()
    return float((ranks[:len(inside)].sum() - len(inside) * (len(inside) + 1) / 2) / (len(inside) * len(outside)))


def unit(array: np.ndarray) -> np.ndarray:
    array = np.asarray(array, np.float32)
    return array / np.linalg.norm(array, axis=1, keepdims=True)


def study(write: bool = False) -> dict:
    """Choose the statistic, print and return the figures; with ``write``, save the reference."""
    from ..datasets import load_emoji_world
    from ..encoders.builtin import load_builtin_encoder

    encoder = load_builtin_encoder(device="cpu")
    world = load_emoji_world("all")
    labels = world.labels
    split = labels["split"].to_numpy()
    half = np.array([int(hashlib.sha256(i.encode()).hexdigest(), 16) % 2 for i in labels["emoji_id"]])
    groups = {"train": split == "train", "tune": (split == "heldout") & (half == 0),
              "report": (split == "heldout") & (half == 1)}
    world_images = world.images
    photos = {name: photo_variants(photo) for name, photo in sample_photos().items()}
    cosines: dict = {}
    for stage in STAGES:
        embeddings, textures = image_signatures(encoder, world_images[:], stage)
        photo_signatures = {name: image_signatures(encoder, images, stage) for name, images in photos.items()}
        # Rounded to the float16 that is shipped, so the figures are the shipped reference's.
        reference_embeddings = unit(spherical_kmeans(unit(embeddings[groups["train"]]), CENTRES).astype(np.float16))
        reference_textures = unit(spherical_kmeans(unit(textures[groups["train"]]), CENTRES).astype(np.float16))
        for k in KS:
            def of(embeddings_, textures_):
                return np.stack([neighbour_cosines(embeddings_, reference_embeddings, 1),
                                 neighbour_cosines(textures_, reference_textures, k)], axis=1)
            cosines[stage, k] = {"world": of(embeddings, textures),
                                 **{name: of(*pair) for name, pair in photo_signatures.items()},
                                 "reference": (reference_embeddings, reference_textures)}
    candidates = {}
    for (stage, k), values in cosines.items():
        tune = values["world"][groups["tune"]]
        centres = np.median(tune, axis=0)
        spreads = centres - np.quantile(tune, 0.05, axis=0)
        for parts in ((0,), (0, 1)):
            def score(points, parts=parts, centres=centres, spreads=spreads):
                return ((points - centres) / spreads)[:, list(parts)].sum(axis=1)
            tune_photos = np.concatenate([score(values[name]) for name in TUNE_PHOTOS])
            key = "semantic" if parts == (0,) else f"semantic + texture(stage {stage}, k={k})"
            candidates[key] = dict(stage=stage, k=k, parts=parts, centres=centres, spreads=spreads, score=score,
                                   tune_auc=auc(score(tune), tune_photos))
    print("candidate statistic: tuning AUC (held-out emoji, half A, against crops of china.jpg and flower.jpg)")
    for key, candidate in candidates.items():
        print(f"  {candidate['tune_auc']:.4f}  {key}")
    chosen_key = max((key for key in candidates if key != "semantic"), key=lambda key: candidates[key]["tune_auc"])
    chosen = candidates[chosen_key]
    values = cosines[chosen["stage"], chosen["k"]]
    score = chosen["score"]
    threshold = float(np.quantile(score(values["world"][groups["tune"]]), FALSE_ALARM))
    world_scores = score(values["world"])
    figures = {"statistic": chosen_key, "threshold": threshold,
               "tuning AUC": chosen["tune_auc"], "semantic alone, tuning AUC": candidates["semantic"]["tune_auc"]}
    for name in REPORT_PHOTOS:
        photo_scores = score(values[name])
        figures[f"report AUC (held-out emoji half B vs {name} variants)"] = auc(world_scores[groups["report"]], photo_scores)
        figures[f"{name}: variants without the notice"] = float(np.mean(photo_scores >= threshold))
        figures[f"{name}: whole photo / its greyscale flagged"] = [bool(s < threshold) for s in photo_scores[:2]]
    for name in TUNE_PHOTOS:
        figures[f"{name} (tuning): variants without the notice"] = float(np.mean(score(values[name]) >= threshold))
    for group in ("report", "tune", "train"):
        figures[f"{group} emoji with the notice"] = float(np.mean(world_scores[groups[group]] < threshold))
    styles = labels["style"].to_numpy()
    figures["report emoji with the notice, by style"] = {
        style: round(float(np.mean(world_scores[groups["report"] & (styles == style)] < threshold)), 3)
        for style in sorted(set(styles))}
    print(f"chosen: {chosen_key}")
    for key, value in figures.items():
        print(f"  {key}: {round(value, 4) if isinstance(value, float) else value}")
    if write:
        save_reference(FamiliarityReference(*values["reference"], chosen["centres"], chosen["spreads"], threshold,
                                            chosen["stage"], chosen["k"], encoder.weights_sha256), figures)
    return figures


def save_reference(reference: FamiliarityReference, figures: dict, directory=ASSETS_DIR) -> None:
    """Write the reference (float16) and then the manifest that vouches for it."""
    path = directory / REFERENCE_NAME
    stacked = np.concatenate([reference.embeddings, reference.textures], axis=1).astype(np.float16)
    atomic_write(path, lambda handle: np.save(handle, stacked))
    manifest = {"weights_sha256": reference.weights_sha256, "sha256": sha256_file(path),
                "embedding_dim": reference.embeddings.shape[1],
                "centres": reference.centres.tolist(), "spreads": reference.spreads.tolist(),
                "threshold": reference.threshold, "stage": reference.stage, "k": reference.k,
                "figures": figures}
    atomic_write(directory / MANIFEST_NAME, lambda handle: handle.write(json.dumps(manifest, indent=1).encode()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m anchordiv.builtin.familiarity_study", description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="also write the reference into assets/")
    study(write=parser.parse_args(argv).write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
