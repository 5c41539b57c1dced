"""How the familiarity check (:mod:`anchordiv.builtin.familiarity`) was chosen, and its reference
rebuilt: :func:`study` prints the figures, with ``write`` it also writes
``assets/builtin-familiarity.npy`` and its manifest (seeded: the same bytes on a rerun with the
same libraries and thread count). ``python -m anchordiv.cli.familiarity_study [--write]`` runs it on
the shipped encoder and world, which this package does not import (the encoders import it).

* Emoji: the training split to fit on; the held-out split (all 7 styles) halved by emoji (a hash
  of its id): one half to tune on, one to report.
* Photos: the real photos that installed packages ship (:func:`sample_photos`), split by photo
  (sorted by name, every other one to tuning, the rest to reporting: :func:`photo_halves`), each
  seen whole, in greyscale and as 120 crops (:func:`photo_variants`).
* Candidates: nearest-neighbour z-scores against 1,024 k-means centres of the training split (of
  the embedding, of one stage's texture, their sum and their minimum), and seeded logistic
  regressions of training emoji against tuning-photo variants on several feature sets.
* Threshold of a candidate: the largest that flags at most 1% of the tuning emoji of EVERY style.
* Choice, fixed in advance: the candidate that then flags the most tuning photos (the mean over
  photos of the share of its variants flagged); a regression is scored on each tuning photo by a
  fit without that photo (leave one photo out), so it is not graded on what it was fitted to.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import warnings

import numpy as np
from PIL import Image, ImageOps

from ..cache import atomic_write, sha256_file
from .familiarity import (MANIFEST_NAME, REFERENCE_NAME, FamiliarityReference, block_columns, familiarity,
                          feature_blocks, image_features)
from .weights import ASSETS_DIR

CENTRES = 1024
MAX_FLAGGED_EMOJI = 0.01
STAGES = ("stage 0", "stage 1", "stage 2", "stage 3")
PIXELS = ("colours", "gradients", "border")
FEATURE_SETS = (("embedding",), STAGES, PIXELS, ("stage 0", "stage 1") + PIXELS, STAGES + PIXELS,
                ("embedding",) + STAGES + PIXELS)
STRENGTHS = (0.01, 1.0)  # the regressions' C (inverse L2 penalty)
# scikit-image's photos (the grey ones as they come); not its drawings, documents or synthetic
# images, nor motorcycle_right or microaneurysms (near-copies of motorcycle and retina).
SKIMAGE_PHOTOS = ("astronaut", "brick", "camera", "cell", "chelsea", "clock", "coffee", "coins", "grass", "gravel",
                  "hubble_deep_field", "immunohistochemistry", "moon", "retina", "rocket")


def _rgb(array) -> Image.Image:
    array = np.asarray(array)
    return Image.fromarray(np.stack([array] * 3, axis=-1) if array.ndim == 2 else array[..., :3])


def sample_photos() -> dict[str, Image.Image]:
    """The real photos that installed packages ship, all offline: scikit-learn's two, matplotlib's
    one and scikit-image's sixteen (:data:`SKIMAGE_PHOTOS` and the left stereo motorcycle)."""
    import skimage.data
    from matplotlib import cbook
    from sklearn.datasets import load_sample_image

    photos = {name: Image.fromarray(load_sample_image(f"{name}.jpg")) for name in ("china", "flower")}
    with cbook.get_sample_data("grace_hopper.jpg") as handle:
        photos["grace_hopper"] = Image.open(handle).convert("RGB")
    photos.update({name: _rgb(getattr(skimage.data, name)()) for name in SKIMAGE_PHOTOS})
    photos["motorcycle"] = _rgb(skimage.data.stereo_motorcycle()[0])
    return dict(sorted(photos.items()))


def photo_halves(names) -> tuple[list[str], list[str]]:
    """The tuning and the reporting photos: sorted by name, every other one (first, third, ...) tunes."""
    names = sorted(names)
    return names[0::2], names[1::2]


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


def unit(array: np.ndarray) -> np.ndarray:
    """The rows of ``array`` ``(n, d)`` scaled to unit length, float32."""
    array = np.asarray(array, np.float32)
    return array / np.linalg.norm(array, axis=1, keepdims=True)


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


def emoji_groups(labels) -> dict[str, np.ndarray]:
    """Boolean masks over the world's images: ``train``, and the held-out halves ``tune`` and ``report``."""
    split = labels["split"].to_numpy()
    half = np.array([int(hashlib.sha256(i.encode()).hexdigest(), 16) % 2 for i in labels["emoji_id"]])
    return {"train": split == "train", "tune": (split == "heldout") & (half == 0),
            "report": (split == "heldout") & (half == 1)}


def style_threshold(scores: np.ndarray, tune: np.ndarray, styles: np.ndarray) -> float:
    """The largest threshold under which at most :data:`MAX_FLAGGED_EMOJI` of the ``tune`` images
    of every style score (``scores``, ``styles`` ``(n,)``)."""
    return float(min(np.quantile(scores[tune & (styles == style)], MAX_FLAGGED_EMOJI) for style in np.unique(styles)))


def flagged_share(scores: np.ndarray, threshold: float) -> float:
    return float(np.mean(scores < threshold))


def fit_logistic(blocks: dict, chosen: tuple, emoji: np.ndarray, photos: np.ndarray, strength: float,
                 weights_sha256: str = "") -> FamiliarityReference:
    """A reference (threshold not yet set) whose score is a seeded, class-balanced logistic
    regression of the feature rows ``photos`` against ``emoji``, on the ``chosen`` blocks
    standardised by the emoji's mean and spread."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    columns = block_columns(blocks, chosen)
    mean, scale = emoji[:, columns].mean(axis=0), emoji[:, columns].std(axis=0) + 1e-6
    rows = (np.concatenate([emoji, photos])[:, columns] - mean) / scale
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # an unconverged fit would not be reproducible
        model = LogisticRegression(C=strength, class_weight="balanced", max_iter=5000, random_state=0).fit(
            rows, np.r_[np.zeros(len(emoji)), np.ones(len(photos))])
    return FamiliarityReference(blocks, chosen, mean.astype(np.float32), scale.astype(np.float32),
                                model.coef_[0].astype(np.float32), float(model.intercept_[0]), np.nan, weights_sha256)


def neighbour_candidates(blocks: dict, world: np.ndarray, photos: dict, groups: dict) -> dict:
    """Nearest-neighbour z-scores (cosine to the nearest of :data:`CENTRES` k-means centres of the
    training split, centred on the tuning emoji's median, scaled by median minus 5% quantile): each
    block alone, and the embedding's with each stage's, summed and as the minimum. Name -> (world
    scores ``(n,)``, photo name -> scores)."""
    def z_scores(name):
        columns = block_columns(blocks, (name,))
        centres = unit(spherical_kmeans(unit(world[groups["train"]][:, columns]), CENTRES))
        def cosines(rows):
            return (unit(rows[:, columns]) @ centres.T).max(axis=1)
        tune = cosines(world[groups["tune"]])
        centre, spread = np.median(tune), np.median(tune) - np.quantile(tune, 0.05)
        return (cosines(world) - centre) / spread, {photo: (cosines(rows) - centre) / spread for photo, rows in photos.items()}

    parts = {name: z_scores(name) for name in ("embedding",) + STAGES}
    candidates = {f"nearest {name}": scores for name, scores in parts.items()}
    for stage in STAGES:
        for how, combine in (("+", np.add), ("min", np.minimum)):
            (world_a, photos_a), (world_b, photos_b) = parts["embedding"], parts[stage]
            candidates[f"nearest embedding {how} {stage}"] = (
                combine(world_a, world_b), {photo: combine(photos_a[photo], photos_b[photo]) for photo in photos})
    return candidates


def tuning_share(world_scores: np.ndarray, photo_scores: dict, tune_photos, groups, styles) -> float:
    """Mean over the tuning photos of the share of their variants flagged at the style threshold."""
    threshold = style_threshold(world_scores, groups["tune"], styles)
    return float(np.mean([flagged_share(photo_scores[photo], threshold) for photo in tune_photos]))


def logistic_tuning_share(blocks, chosen, strength, world, photos, tune_photos, groups, styles) -> float:
    """:func:`tuning_share` of a regression, each tuning photo scored by a fit without it (and
    the threshold of that fit)."""
    shares = []
    for left_out in tune_photos:
        others = np.concatenate([photos[photo] for photo in tune_photos if photo != left_out])
        reference = fit_logistic(blocks, chosen, world[groups["train"]], others, strength)
        threshold = style_threshold(familiarity(world, reference), groups["tune"], styles)
        shares.append(flagged_share(familiarity(photos[left_out], reference), threshold))
    return float(np.mean(shares))


def report(world_scores, photo_scores, threshold, groups, styles, report_photos) -> dict:
    """The chosen statistic's figures on the reporting halves (and, for comparison, the others)."""
    figures = {f"{group} emoji flagged": round(flagged_share(world_scores[groups[group]], threshold), 4)
               for group in ("report", "tune", "train")}
    figures["report emoji flagged, by style"] = {
        style: round(flagged_share(world_scores[groups["report"] & (styles == style)], threshold), 4)
        for style in np.unique(styles)}
    figures["report photos: whole / greyscale flagged"] = {
        photo: [bool(score < threshold) for score in photo_scores[photo][:2]] for photo in report_photos}
    figures["report photos: variants flagged"] = {
        photo: round(flagged_share(photo_scores[photo], threshold), 3) for photo in report_photos}
    figures["report photos: variants flagged, mean"] = round(float(np.mean(list(
        figures["report photos: variants flagged"].values()))), 4)
    return figures


def study(encoder, world_data, write: bool = False) -> dict:
    """Choose the statistic for the built-in ``encoder`` on the emoji world ``world_data`` (its "all"
    split, :func:`anchordiv.datasets.load_emoji_world`), print and return the figures; with
    ``write``, save the reference."""
    blocks = feature_blocks(encoder.model.config.widths, encoder.model.config.embed_dim)
    groups, styles = emoji_groups(world_data.labels), world_data.labels["style"].to_numpy()
    photos = {name: image_features(encoder, photo_variants(photo)) for name, photo in sample_photos().items()}
    tune_photos, report_photos = photo_halves(photos)
    print(f"tuning photos: {', '.join(tune_photos)}\nreporting photos: {', '.join(report_photos)}")
    world = image_features(encoder, world_data.images[:])

    shares = {name: tuning_share(world_scores, photo_scores, tune_photos, groups, styles)
              for name, (world_scores, photo_scores) in neighbour_candidates(blocks, world, photos, groups).items()}
    for chosen in FEATURE_SETS:
        for strength in STRENGTHS:
            shares["logistic " + " + ".join(chosen) + f", C={strength}"] = logistic_tuning_share(
                blocks, chosen, strength, world, photos, tune_photos, groups, styles)
    print("candidate: tuning photos' variants flagged (mean over photos) with <= 1% of tuning emoji of every style")
    for name, share in shares.items():
        print(f"  {share:.3f}  {name}")
    best = max(shares, key=shares.get)
    if not best.startswith("logistic "):
        raise SystemExit(f"{best} won, but the shipped check (anchordiv.builtin.familiarity) is linear only")
    chosen, strength = next((blocks_, c) for blocks_ in FEATURE_SETS for c in STRENGTHS
                            if best == "logistic " + " + ".join(blocks_) + f", C={c}")
    reference = fit_logistic(blocks, chosen, world[groups["train"]],
                             np.concatenate([photos[photo] for photo in tune_photos]), strength, encoder.weights_sha256)
    world_scores = familiarity(world, reference)
    threshold = style_threshold(world_scores, groups["tune"], styles)
    reference = dataclasses.replace(reference, threshold=threshold)
    figures = {"statistic": best, "tuning photos": tune_photos, "reporting photos": report_photos,
               "tuning share (leave one photo out)": round(shares[best], 4), "threshold": threshold,
               **report(world_scores, {name: familiarity(rows, reference) for name, rows in photos.items()},
                        threshold, groups, styles, report_photos)}
    print(f"chosen: {best}")
    for key, value in figures.items():
        print(f"  {key}: {value}")
    if write:
        save_reference(reference, strength, figures)
    return figures


def save_reference(reference: FamiliarityReference, strength: float, figures: dict, directory=ASSETS_DIR) -> None:
    """Write the reference (float32 mean, scale, weights) and then the manifest that vouches for it."""
    path = directory / REFERENCE_NAME
    atomic_write(path, lambda handle: np.save(handle, np.stack([reference.mean, reference.scale, reference.weights])))
    manifest = {"weights_sha256": reference.weights_sha256, "sha256": sha256_file(path),
                "blocks": reference.blocks, "chosen": list(reference.chosen), "bias": reference.bias,
                "threshold": reference.threshold, "C": strength, "figures": figures}
    atomic_write(directory / MANIFEST_NAME, lambda handle: handle.write(json.dumps(manifest, indent=1).encode()))
