"""``anchordiv embed``: a folder of images (subfolders are labels) into the content-hash cache, an
``.npz`` file, or a gallery store (locally or on Ray)."""
from __future__ import annotations

import argparse

from ..cache import cache_dir
from .checks import check_device, check_input, check_labels, check_output_file, check_output_folder
from .logs import progress_bar, progress_shown
from .options import add_device_option, add_encoder_options, add_labels_option, integer, option_name
from .output import name_skipped, warn_unlabelled


def add_parser(commands) -> argparse.ArgumentParser:
    embed = commands.add_parser("embed", help="embed a folder of images (subfolders are labels), cached by file content")
    embed.add_argument("folder", help="folder of images, searched recursively")
    add_encoder_options(embed, required=True)
    add_labels_option(embed)
    embed.add_argument("--batch-size", type=integer(1, 4096), dest="batch_size",
                       help="images per forward pass (default: sized to the device, 64 on a CPU)")
    add_device_option(embed)
    embed.add_argument("--out", help="also write embeddings, paths and labels to this .npz file; or, for a path "
                                     "not ending in .npz, a gallery store folder (resumable: a rerun continues)")
    embed.add_argument("--shard-rows", type=integer(1, 2**20), default=4096, dest="shard_rows",
                       help="images per shard of a store (default 4096)")
    embed.add_argument("--overwrite", action="store_true",
                       help="replace a store built from other files or settings at --out")
    embed.add_argument("--engine", choices=["local", "ray"], default="local",
                       help="local (default): encode in this process; ray: encoder actors on Ray (one per GPU, else "
                            "per CPU) write the same store (--out must be a folder)")
    embed.add_argument("--address", help="with --engine ray: join the Ray cluster at this address (auto, HOST:PORT "
                                         "or ray://HOST:10001) instead of starting a local instance")
    embed.add_argument("--workers", type=integer(1, 1024),
                       help="with --engine ray: encoder actors, each holding a copy of the model (default: one per "
                            "GPU, else one per CPU)")
    embed.set_defaults(handler=run)
    return embed


def run(args: argparse.Namespace) -> int:
    # Everything that can be checked is, before loading a model, which can take a while.
    check_input(args.folder, "image folder", "a folder of images", folder=True)
    check_labels(args)
    to_store = bool(args.out) and not args.out.lower().endswith(".npz")
    _check_engine(args, to_store)
    if to_store:
        check_output_folder(args.out, "--out")
    else:
        check_output_file(args.out, "--out")
    if args.engine == "local":
        check_device(args)  # with Ray the cluster's workers choose their device, not this machine
    cache_dir(writable=True)
    skipped = _embed_on_ray(args) if args.engine == "ray" else _embed_locally(args, to_store)
    if skipped:
        print(f"skipped {len(skipped)} file{'s' * (len(skipped) != 1)} (not in the gallery):")
        for path, reason in skipped:
            print(f"  {path}: {reason}")
    return 0


def _check_engine(args: argparse.Namespace, to_store: bool) -> None:
    """``--address``, ``--workers`` and ``--device`` fit the engine, and Ray has a store to write."""
    if args.engine == "local":
        for option in ("address", "workers"):
            if getattr(args, option) is not None:
                raise ValueError(f"{option_name(option)} {getattr(args, option)!r} is for Ray, which only --engine ray "
                                 f"uses; add --engine ray, or drop {option_name(option)}")
        return
    if not to_store:
        given = f"--out {args.out!r} is an .npz file" if args.out else "no --out was given"
        raise ValueError(f"--engine ray writes a gallery store, and {given}; give --out a folder path (not ending "
                         "in .npz), or drop --engine ray")
    if args.device is not None:
        raise ValueError(f"--device {args.device!r} is for --engine local; with --engine ray each worker takes "
                         "one GPU when the cluster has GPUs, else a CPU: drop --device")


def _embed_locally(args: argparse.Namespace, to_store: bool) -> list[tuple[str, str]]:
    """The local engine: the encoder loaded in this process, into a store or the cache."""
    from ..device import describe_device
    from .fetch_model import load_with_progress

    encoder = load_with_progress(args.encoder, args.pretrained, args.device, args.allow_download)
    print(f"anchordiv embed: {args.folder} with {encoder.name} on {describe_device(encoder.device)}", flush=True)
    return _embed_to_store(args, encoder) if to_store else embed_to_cache(args, encoder)


def embed_to_cache(args: argparse.Namespace, encoder, folder_option: str = "image folder", fewest: int = 1,
                   needed_for: str = "") -> list[tuple[str, str]]:
    """The folder's embeddings through the content-hash cache, also as an .npz with ``--out``; the
    files skipped are returned.

    Parameters
    ----------
    args : argparse.Namespace
        The command's options: ``folder``, ``labels``, ``batch_size`` and ``out``.
    encoder : Encoder
        What embeds the images.
    folder_option : str
        What the command calls the folder in a message (``--folder`` for ``demo``).
    fewest : int
        The fewest readable images the command can use.
    needed_for : str
        Why it needs ``fewest``, for the refusal (e.g. ``"a query, a neighbour and one more"``).

    Raises
    ------
    ValueError
        For a folder with no readable image, or fewer than ``fewest`` (before ``--out`` is
        written), naming the files skipped.
    """
    from ..embeddings import embed_folder, export_npz

    gallery = embed_folder(args.folder, encoder, labels_csv=args.labels, batch_size=args.batch_size,
                           progress=progress_shown())
    if not gallery.paths:
        raise ValueError(_no_images(f"{folder_option} {args.folder!r}", gallery.skipped))
    if len(gallery.paths) < fewest:
        raise ValueError(_too_few_images(f"{folder_option} {args.folder!r}", len(gallery.paths), gallery.skipped,
                                         fewest, needed_for))
    warn_unlabelled(args, gallery.unlabelled)
    count, skipped = len(gallery.paths), len(gallery.skipped)
    left_out = f"; {skipped:,} file{'s' * (skipped != 1)} skipped" if skipped else ""
    print(f"embedded {count:,} image{'s' * (count != 1)}: {gallery.reused:,} reused from the cache, "
          f"{count - gallery.reused:,} newly encoded{left_out} (cache: {gallery.cache_path})")
    if args.out:
        print(f"wrote {export_npz(gallery, args.out)}")
    return gallery.skipped


def _no_images(folder: str, skipped: list[tuple[str, str]]) -> str:
    """Why ``folder`` (as the command calls it) gives no gallery, and what to put in it instead."""
    from ..images import ACCEPTED

    found = (f"has no readable image: {len(skipped):,} file{'s' * (len(skipped) != 1)} skipped "
             f"({name_skipped(skipped)})") if skipped else "holds no files"
    return f"{folder} {found}; put {ACCEPTED} images in it (subfolders are labels), or give another folder"


def _too_few_images(folder: str, count: int, skipped: list[tuple[str, str]], fewest: int, needed_for: str) -> str:
    """Why ``folder`` (as the command calls it) with ``count`` readable images is too small, and what to do."""
    from ..images import ACCEPTED

    left_out = (f"; {len(skipped):,} file{'s' * (len(skipped) != 1)} could not be read ({name_skipped(skipped)})"
                if skipped else "")
    why = f" ({needed_for})" if needed_for else ""
    return (f"{folder} has {count} readable image{'s' * (count != 1)}{left_out}; this needs at least {fewest}{why}. "
            f"Add {ACCEPTED} images to it (subfolders are labels), or give another folder")


def _embed_to_store(args: argparse.Namespace, encoder) -> list[tuple[str, str]]:
    """The folder embedded into a GalleryStore at ``--out``, shard by shard: a rerun after a crash
    keeps the finished shards and rebuilds damaged ones."""
    from ..embeddings import embed_folder_to_store

    with progress_bar("store") as progress:
        store = embed_folder_to_store(args.folder, encoder, args.out, labels_csv=args.labels,
                                      shard_rows=args.shard_rows, batch_size=args.batch_size,
                                      overwrite=args.overwrite, progress=progress)
    return _report_store(args, store)


def _embed_on_ray(args: argparse.Namespace) -> list[tuple[str, str]]:
    """``--engine ray``: the same store as :func:`_embed_to_store`, embedded by encoder actors on Ray."""
    from ..device import CPU_IMAGE_BATCH
    from ..ray_embed import embed_folder_to_store_ray

    where = f"the Ray cluster at {args.address}" if args.address else "Ray"
    args.batch_size = args.batch_size or CPU_IMAGE_BATCH  # per actor; each actor's device is the cluster's
    print(f"anchordiv embed: {args.folder} with {args.encoder} on {where}", flush=True)
    with progress_bar("store") as progress:
        store = embed_folder_to_store_ray(
            args.folder, args.encoder, args.out, labels_csv=args.labels, shard_rows=args.shard_rows,
            batch_size=args.batch_size, overwrite=args.overwrite, progress=progress, pretrained=args.pretrained,
            allow_download=args.allow_download, address=args.address, workers=args.workers)
    return _report_store(args, store)


def _report_store(args: argparse.Namespace, store) -> list[tuple[str, str]]:
    """Say what a store build at ``--out`` wrote, kept and rebuilt, and which images ``--labels``
    missed; return its skipped files."""
    from ..embeddings import unlabelled_paths

    if args.labels:
        warn_unlabelled(args, unlabelled_paths(store.labels["path"].tolist(), args.labels))
    report, out = store.build_report, args.out
    print(f"wrote the store {out}: {len(store)} images in {len(store.shards)} shard(s); {report.reused} "
          f"shard(s) kept from an earlier run, {len(report.embedded)} embedded now"
          + (f", rebuilt (damaged): {', '.join(report.rebuilt)}" if report.rebuilt else ""))
    return list(store.skipped)
