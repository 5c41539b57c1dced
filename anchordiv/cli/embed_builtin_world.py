"""``anchordiv embed-builtin-world``: the emoji world embedded with the built-in model, written
beside its weights (the explorer's first start reads them instead of embedding the world)."""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from ..cache import cache_dir
from .checks import check_device, check_weights
from .logs import progress_bar
from .options import add_device_option, add_weights_option


def add_parser(commands) -> argparse.ArgumentParser:
    world = commands.add_parser("embed-builtin-world",
                                help="embed the emoji world with the built-in model and write the embeddings that ship with it")
    add_weights_option(world, "; the embeddings are written there")
    add_device_option(world)
    world.set_defaults(handler=run)
    return world


def run(args: argparse.Namespace) -> int:
    check_weights(args)
    check_device(args)
    cache_dir(writable=True)
    embed_world_command(Path(args.weights), device=args.device)
    return 0


def embed_world_command(weights_dir: Path, device: str | None = None) -> Path:
    """Embed the whole emoji world with the built-in model in ``weights_dir`` and write the
    embeddings the explorer's first start uses (:mod:`anchordiv.datasets.world_embeddings`)."""
    from ..datasets.world_embeddings import save_world_embeddings
    from ..datasets import open_emoji_world
    from ..encoders.builtin import load_builtin_encoder
    from ..gallery import embed_world

    started = time.perf_counter()
    encoder = load_builtin_encoder(device=device, directory=weights_dir)
    digest = open_emoji_world("all").digest  # the data's digest, without rendering the world here
    with progress_bar("emoji world") as progress:
        vectors = embed_world(encoder, "all", progress=progress)
    path = save_world_embeddings(vectors, encoder.weights_sha256, digest, weights_dir)
    print(f"wrote {path} ({len(vectors):,} x {vectors.shape[1]} float16) after {time.perf_counter() - started:.0f} s")
    return path
