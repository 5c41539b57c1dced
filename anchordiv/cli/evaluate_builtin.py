"""``anchordiv evaluate-builtin``: the built-in model's zero-shot and retrieval figures on the held-out emoji."""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from .checks import check_device, check_output_file, check_weights
from .logs import progress_shown
from .options import FRACTION, SCALE, add_device_option, add_json_option, add_weights_option
from .output import write_json

DEFAULT_SCALES = (5.0, 10.0, 20.0, 50.0)


def add_parser(commands) -> argparse.ArgumentParser:
    evaluate = commands.add_parser("evaluate-builtin", help="zero-shot and retrieval figures on the held-out emoji")
    add_weights_option(evaluate)
    evaluate.add_argument("--scales", type=SCALE, nargs="+", help="extra scales s for the sweep (default 5 10 20 50)")
    evaluate.add_argument("--memory-weight", type=FRACTION, dest="memory_weight",
                          help="mix of text projection and visual memory, 0 to 1 (default: the manifest's, 0.5)")
    add_json_option(evaluate, "figures")
    add_device_option(evaluate)
    evaluate.set_defaults(handler=run)
    return evaluate


def run(args: argparse.Namespace) -> int:
    check_weights(args)
    check_output_file(args.json, "--json")
    check_device(args)
    write_json(args.json, evaluate_command(Path(args.weights), scales=args.scales, device=args.device,
                                           memory_weight=args.memory_weight))
    return 0


def evaluate_command(weights_dir: Path, scales: list[float] | None = None,
                     device: str | None = None, memory_weight: float | None = None) -> dict:
    """Print the held-out figures of the issue and return them as plain data (``memory_weight``:
    see :func:`~anchordiv.encoders.builtin.load_builtin_encoder`)."""
    from ..builtin.heldout import geometries, retrieval_table, zero_shot_hits, zero_shot_table
    from ..datasets import load_emoji_world
    from ..encoders.builtin import load_builtin_encoder

    encoder = load_builtin_encoder(device=device, directory=weights_dir, memory_weight=memory_weight)
    world = load_emoji_world("heldout")
    styles, names = list(world.styles), world.names
    print(f"{encoder.name}: logit scale {encoder.logit_scale:.1f}, text memory weight "
          f"{encoder.model.config.memory_weight:g}; held-out: {len(world)} images of "
          f"{len(names)} emoji in {len(styles)} styles", flush=True)
    images = encoder.encode_images(world.images, progress=progress_shown())
    style_texts, name_texts = encoder.encode_texts(styles), encoder.encode_texts(names)
    hits = zero_shot_hits(images, world.labels, style_texts, styles, name_texts, names)
    zero_shot = zero_shot_table(hits, world.labels["style"])
    by_category = zero_shot_table(hits, world.labels["category"])
    print("\nzero-shot (bare style phrases; object names among the held-out names)")
    print(zero_shot.to_string(float_format=lambda v: f"{v:.3f}"))
    print("\nthe same by emoji category (where unseen objects are hard to name)")
    hardest_first = pd.concat([by_category.loc[["all"]], by_category.drop(index="all").sort_values("object top-5")])
    print(hardest_first.to_string(float_format=lambda v: f"{v:.3f}"))
    scale_list = sorted({round(encoder.logit_scale, 1), *(scales or DEFAULT_SCALES)})
    print(f"\nmAP, queries = every held-out image (excluded from its own gallery); scales {scale_list}", flush=True)
    builders = geometries({"object": name_texts, "style": style_texts}, images, scale_list)
    retrieval = retrieval_table(images, world.labels, builders)
    result = {"encoder": encoder.name, "logit_scale": encoder.logit_scale, "zero_shot": zero_shot.to_dict(),
              "zero_shot_by_category": by_category.to_dict(),
              "retrieval": retrieval.to_dict()}
    _print_headline(retrieval, encoder.logit_scale)
    return result


def _print_headline(retrieval: pd.DataFrame, scale: float) -> None:
    """The rows that matter, per query style, and softmax's gain over cosine at the model's own scale."""
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
