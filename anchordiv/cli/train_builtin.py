"""``anchordiv train-builtin``: retrain the built-in model on the emoji world's training split (seeded)."""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..builtin.train import TrainConfig
from ..cache import cache_dir
from ..resources import assets_dir
from .checks import check_device, check_output_folder
from .embed_builtin_world import embed_world_command
from .options import FRACTION, SEED, add_device_option, integer


def add_parser(commands) -> argparse.ArgumentParser:
    train = commands.add_parser("train-builtin", help="retrain the built-in model on the emoji world (seeded)")
    train.add_argument("--epochs", type=integer(1, 10_000), default=TrainConfig.epochs)
    train.add_argument("--batch-size", type=integer(1, 65536), default=TrainConfig.batch_size, dest="batch_size")
    train.add_argument("--seed", type=SEED, default=TrainConfig.seed)
    train.add_argument("--name-smoothing", type=FRACTION, default=TrainConfig.name_smoothing, dest="name_smoothing",
                       help="target mass spread over semantically close training names (0: hard targets)")
    train.add_argument("--classify-subcategory", action=argparse.BooleanOptionalAction,
                       default=TrainConfig.classify_subcategory, dest="classify_subcategory",
                       help="also classify each image among the subcategory phrases")
    train.add_argument("--max-emoji", type=integer(1, 10**6), dest="max_emoji", help="train on the first N emoji only (a toy run)")
    train.add_argument("--out", default=str(assets_dir()), help="folder for the weights and manifest (default: assets/)")
    add_device_option(train)
    train.set_defaults(handler=run)
    return train


def run(args: argparse.Namespace) -> int:
    check_output_folder(args.out, "--out")
    check_device(args)
    cache_dir(writable=True)
    config = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, seed=args.seed, max_emoji=args.max_emoji,
                         name_smoothing=args.name_smoothing, classify_subcategory=args.classify_subcategory)
    train_command(config, Path(args.out), device=args.device)
    return 0


def training_images(max_emoji: int | None) -> tuple[pd.DataFrame, np.ndarray]:
    """Labels and images of the training split, or of its first ``max_emoji`` emoji (a toy run),
    whose images alone are drawn: the whole world takes half a minute to render on 2 cores."""
    from ..datasets import load_emoji_world, open_emoji_world

    if max_emoji is None:
        world = load_emoji_world("train")
        return world.labels, world.array
    view = open_emoji_world("train")
    first = view.labels["emoji_id"].drop_duplicates()[:max_emoji]
    rows = np.flatnonzero(view.labels["emoji_id"].isin(first).to_numpy())
    return view.labels.iloc[rows].reset_index(drop=True), np.stack([view.image(row) for row in rows])


def train_command(config: TrainConfig, out: Path, device: str | None = None) -> Path:
    """Train on the training split, write the weights and manifest to ``out`` and, after a full
    run, the world's embeddings beside them; returns the weights path."""
    from ..builtin.train import train_builtin
    from ..builtin.weights import save_builtin

    started = time.perf_counter()
    labels, array = training_images(config.max_emoji)
    model, report = train_builtin(config, labels, array, device=device)
    path = save_builtin(model, report, out)
    print(f"wrote {path} after {time.perf_counter() - started:.0f} s")
    if config.max_emoji is None:
        embed_world_command(out, device=device)
    else:
        print(f"a toy run: the world's embeddings were not made; `python -m anchordiv embed-builtin-world "
              f"--weights {out}` makes them (else the explorer embeds the world on its first start)")
    return path
