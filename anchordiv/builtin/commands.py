"""The built-in model's commands: ``train-builtin``, ``embed-builtin-world`` and ``evaluate-builtin``."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..datasets import load_emoji_world
from .heldout import geometries, retrieval_table, zero_shot_hits, zero_shot_table
from .train import TrainConfig, train_builtin
from .weights import ASSETS_DIR, save_builtin


def first_emoji(world, max_emoji: int | None) -> tuple[pd.DataFrame, np.ndarray]:
    """Labels and images of the first ``max_emoji`` emoji of ``world`` (all when ``None``)."""
    if max_emoji is None:
        return world.labels, world.array
    keep = world.labels["emoji_id"].isin(world.labels["emoji_id"].drop_duplicates()[:max_emoji]).to_numpy()
    return world.labels[keep].reset_index(drop=True), np.asarray(world.array[keep])


def train_command(config: TrainConfig, out: Path = ASSETS_DIR, device: str | None = None) -> Path:
    """Train on the training split, write the weights and manifest to ``out``; returns the weights path."""
    started = time.perf_counter()
    labels, array = first_emoji(load_emoji_world("train"), config.max_emoji)
    model, report = train_builtin(config, labels, array, device=device, log=lambda line: print(line, flush=True))
    path = save_builtin(model, report, out)
    print(f"wrote {path} after {time.perf_counter() - started:.0f} s")
    if config.max_emoji is None:
        embed_world_command(out, device=device)
    else:
        print(f"a toy run: the world's embeddings were not made; `python -m anchordiv embed-builtin-world "
              f"--weights {out}` makes them (else the explorer embeds the world on its first start)")
    return path


def embed_world_command(weights_dir: Path = ASSETS_DIR, device: str | None = None) -> Path:
    """Embed the whole emoji world with the built-in model in ``weights_dir`` and write the
    embeddings the explorer's first start uses (:mod:`anchordiv.builtin.world_embeddings`)."""
    from ..encoders.builtin import load_builtin_encoder
    from ..gallery import embed_world
    from .world_embeddings import save_world_embeddings

    started = time.perf_counter()
    encoder = load_builtin_encoder(device=device, directory=weights_dir)
    world = load_emoji_world("all")
    vectors = embed_world(encoder, "all", progress=lambda fraction, text: print(f"\r{text}", end="", flush=True))
    path = save_world_embeddings(vectors, encoder.weights_sha256, world.digest, weights_dir)
    print(f"\nwrote {path} ({len(vectors):,} x {vectors.shape[1]} float16) after {time.perf_counter() - started:.0f} s")
    return path


def evaluate_command(weights_dir: Path = ASSETS_DIR, scales: list[float] | None = None,
                     device: str | None = None, memory_weight: float | None = None) -> dict:
    """Print the held-out figures of the issue and return them as plain data (``memory_weight``:
    see :func:`~anchordiv.encoders.builtin.load_builtin_encoder`)."""
    from ..encoders.builtin import load_builtin_encoder

    encoder = load_builtin_encoder(device=device, directory=weights_dir, memory_weight=memory_weight)
    world = load_emoji_world("heldout")
    styles, names = list(world.styles), world.names
    print(f"{encoder.name}: logit scale {encoder.logit_scale:.1f}, text memory weight "
          f"{encoder.model.config.memory_weight:g}; held-out: {len(world)} images of "
          f"{len(names)} emoji in {len(styles)} styles", flush=True)
    images = encoder.encode_images(world.images, progress=True)
    style_texts, name_texts = encoder.encode_texts(styles), encoder.encode_texts(names)
    hits = zero_shot_hits(images, world.labels, style_texts, styles, name_texts, names)
    zero_shot = zero_shot_table(hits, world.labels["style"])
    by_category = zero_shot_table(hits, world.labels["category"])
    print("\nzero-shot (bare style phrases; object names among the held-out names)")
    print(zero_shot.to_string(float_format=lambda v: f"{v:.3f}"))
    print("\nthe same by emoji category (where unseen objects are hard to name)")
    hardest_first = pd.concat([by_category.loc[["all"]], by_category.drop(index="all").sort_values("object top-5")])
    print(hardest_first.to_string(float_format=lambda v: f"{v:.3f}"))
    scale_list = sorted({round(encoder.logit_scale, 1), *(scales or [5.0, 10.0, 20.0, 50.0])})
    print(f"\nmAP, queries = every held-out image (excluded from its own gallery); scales {scale_list}", flush=True)
    builders = geometries({"object": name_texts, "style": style_texts}, images, scale_list)
    retrieval = retrieval_table(images, world.labels, builders)
    result = {"encoder": encoder.name, "logit_scale": encoder.logit_scale, "zero_shot": zero_shot.to_dict(),
              "zero_shot_by_category": by_category.to_dict(),
              "retrieval": retrieval.to_dict()}
    _print_headline(retrieval, encoder.logit_scale)
    return result


def _print_headline(retrieval: pd.DataFrame, scale: float) -> None:
    own = f"s={round(scale, 1):g}"
    for target, anchors in (("same emoji", "object"), ("same style", "style")):
        rows = ["cosine", f"ITI, {anchors} anchors", f"softmax, {anchors} anchors, {own}",
                f"Gaussian, {anchors} anchors, any s"]
        columns = [c for c in retrieval.columns if c.startswith(f"{target} | ")]
        table = retrieval.loc[rows, columns].rename(columns=lambda c: c.split(" | ")[1])
        print(f"\n{target} mAP per query style, {anchors} anchors")
        print(table.to_string(float_format=lambda v: f"{v:.3f}"))
    cosine = retrieval.loc["cosine"]
    print(f"\nat the model's own scale s={scale:.1f}, softmax minus cosine:")
    for target, anchors in (("same emoji", "object"), ("same style", "style")):
        row = retrieval.loc[f"softmax, {anchors} anchors, s={round(scale, 1):g}"]
        print(f"  {target} with {anchors} anchors: {row[target]:.3f} - {cosine[target]:.3f} = "
              f"{row[target] - cosine[target]:+.3f}")
