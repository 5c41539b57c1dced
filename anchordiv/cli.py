"""Command line: ``python -m anchordiv <command>`` (also installed as ``anchordiv``)."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import fields
from pathlib import Path


def _bench(args: argparse.Namespace) -> int:
    from .bench import BenchConfig, run_benchmark, summary

    config = BenchConfig.paper() if args.paper else BenchConfig()
    for field in fields(BenchConfig):
        value = getattr(args, field.name, None)
        if value is not None:
            setattr(config, field.name, tuple(value) if isinstance(value, list) else value)
    print(f"anchordiv bench: Q={config.queries} queries, G={config.gallery} gallery, d={config.dim}, "
          f"k={config.k}, scale={config.scale}, warm-up {config.warmup}, best of {config.repeats}", flush=True)
    result = run_benchmark(config, log=lambda line: print(line, flush=True))
    for line in summary(result):
        print(line)
    _write_json(args.json, result)
    return 0


def _write_json(path: str | None, result: object) -> None:
    """Write ``result`` as JSON when a ``--json`` path was given."""
    if path:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(result, indent=2, default=float))
        print(f"wrote {target}")


def _embed(args: argparse.Namespace) -> int:
    from .embeddings import embed_folder, export_npz
    from .encoders import load_encoder

    if not Path(args.folder).is_dir():  # before loading a model, which can take a while
        raise ValueError(f"image folder {args.folder!r} does not exist or is not a folder")
    encoder = load_encoder(args.model, pretrained=args.pretrained, device=args.device,
                           allow_download=args.allow_download)
    print(f"anchordiv embed: {args.folder} with {encoder.name} on {encoder.device}", flush=True)
    gallery = embed_folder(args.folder, encoder, labels_csv=args.labels, batch_size=args.batch_size)
    count = len(gallery.paths)
    print(f"embedded {count} images: {gallery.reused} reused from the cache, {count - gallery.reused} newly encoded "
          f"(cache: {gallery.cache_path})")
    if gallery.skipped:
        print(f"skipped {len(gallery.skipped)} file{'s' * (len(gallery.skipped) != 1)} (not in the gallery):")
        for path, reason in gallery.skipped:
            print(f"  {path}: {reason}")
    if args.out:
        print(f"wrote {export_npz(gallery, args.out)}")
    return 0


def _train_builtin(args: argparse.Namespace) -> int:
    from .builtin.commands import train_command
    from .builtin.train import TrainConfig

    config = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, seed=args.seed, max_emoji=args.max_emoji,
                         name_smoothing=args.name_smoothing, classify_subcategory=args.classify_subcategory)
    train_command(config, Path(args.out), device=args.device)
    return 0


def _evaluate_builtin(args: argparse.Namespace) -> int:
    from .builtin.commands import evaluate_command

    _write_json(args.json, evaluate_command(Path(args.weights), scales=args.scales, device=args.device,
                                            memory_weight=args.memory_weight))
    return 0


def _read_lines(path: str | None) -> list[str]:
    if path is None:
        return []
    if not Path(path).is_file():
        raise ValueError(f"anchor file {path!r} does not exist; give a text file with one anchor per line")
    return [line.strip() for line in Path(path).read_text().splitlines() if line.strip()]


def _reproduce_study(args: argparse.Namespace, encoder):
    """The study the options name: a dataset layout, an image folder, or the built-in world."""
    from .reproduce import layout_study, make_study, world_study

    if args.layout:
        from .datasets.layouts import load_layout

        if not args.root:
            raise ValueError("--layout needs --root, the dataset's folder")
        return layout_study(load_layout(args.layout, args.root), encoder)
    if args.folder:
        from .gallery import folder_gallery

        gallery = folder_gallery(args.folder, encoder, labels_csv=args.labels)
        object_column = args.object_column or gallery.object_column
        style_column = args.style_column or gallery.style_column
        labels = gallery.labels
        return make_study(str(args.folder), gallery, encoder, object_column, style_column,
                          object_texts=_read_lines(args.object_anchors) or labels[object_column],
                          style_texts=_read_lines(args.style_anchors) or (labels[style_column] if style_column else ()),
                          prior_texts=_read_lines(args.prior_anchors), group_column=args.group_column)
    return world_study(encoder, limit=args.settings.world_limit)


def _reproduce(args: argparse.Namespace) -> int:
    import dataclasses

    from .encoders import load_encoder
    from .reproduce import Settings, run_reproduction

    settings = Settings.quick() if args.quick else Settings.full()
    overrides = {name: getattr(args, name) for name in ("queries", "scale", "seed") if getattr(args, name) is not None}
    args.settings = dataclasses.replace(settings, **overrides)
    for path in (args.root, args.folder):
        if path and not Path(path).is_dir():  # before loading a model, which can take a while
            raise ValueError(f"folder {path!r} does not exist or is not a folder")
    encoder = load_encoder(args.model, pretrained=args.pretrained, device=args.device, allow_download=args.allow_download)
    study = _reproduce_study(args, encoder)
    print(f"anchordiv reproduce ({'quick' if args.quick else 'full'}): {study.name}, {len(study.gallery):,} images, "
          f"{encoder.name}", flush=True)
    report = run_reproduction(study, args.out, args.settings, log=lambda line: print(line, flush=True))
    print(f"wrote {report}")
    return 0


def _explorer_bench(args: argparse.Namespace) -> int:
    import torch

    from .explorer import benchmark

    print(f"anchordiv explorer-bench: G={args.gallery}, N={args.anchors}, d={args.dim}, UMAP {args.umap_points} "
          f"points, CPU, {torch.get_num_threads()} torch threads", flush=True)
    results = benchmark(gallery_size=args.gallery, n_anchors=args.anchors, dim=args.dim, umap_points=args.umap_points,
                        repeats=args.repeats, log=lambda line: print(line, flush=True))
    _write_json(args.json, results)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="anchordiv", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    bench = commands.add_parser("bench", help="Table-4-shaped runtime benchmark (fit + preprocess + retrieval)")
    bench.add_argument("--paper", action="store_true", help="the paper's size (Q=10,000, G=50,000, N=2^10..2^17): for a GPU")
    bench.add_argument("--queries", type=int)
    bench.add_argument("--gallery", type=int)
    bench.add_argument("--dim", type=int)
    bench.add_argument("--anchors", type=int, nargs="+", help="anchor counts N")
    bench.add_argument("--k", type=int)
    bench.add_argument("--scale", type=float)
    bench.add_argument("--repeats", type=int)
    bench.add_argument("--warmup", type=int)
    bench.add_argument("--methods", nargs="+", choices=["cosine", "softmax", "gaussian", "gmm", "naive"])
    bench.add_argument("--naive-max-anchors", type=int, dest="naive_max_anchors")
    bench.add_argument("--naive-queries", type=int, dest="naive_queries")
    bench.add_argument("--gmm-max-anchors", type=int, dest="gmm_max_anchors")
    bench.add_argument("--device", help="cpu or cuda (default: CUDA when available)")
    bench.add_argument("--json", help="also write the rows to this JSON file")
    bench.set_defaults(handler=_bench)
    embed = commands.add_parser("embed", help="embed a folder of images (subfolders are labels), cached by file content")
    embed.add_argument("folder", help="folder of images, searched recursively")
    embed.add_argument("--model", required=True, help="encoder spec: builtin or open_clip:<arch>, e.g. open_clip:ViT-B-32")
    embed.add_argument("--pretrained", help="open_clip checkpoint file or pretrained tag (its file must be on disk)")
    embed.add_argument("--allow-download", action="store_true", dest="allow_download",
                       help="let open_clip fetch missing weights from the network (off: nothing is downloaded)")
    embed.add_argument("--labels", help="CSV with a path (or filename) column and label columns")
    embed.add_argument("--batch-size", type=int, default=64, dest="batch_size")
    embed.add_argument("--device", help="cpu or cuda (default: CUDA when available)")
    embed.add_argument("--out", help="also write embeddings, paths and labels to this .npz file")
    embed.set_defaults(handler=_embed)
    from .builtin.train import TrainConfig
    from .builtin.weights import ASSETS_DIR

    train = commands.add_parser("train-builtin", help="retrain the built-in model on the emoji world (seeded)")
    train.add_argument("--epochs", type=int, default=TrainConfig.epochs)
    train.add_argument("--batch-size", type=int, default=TrainConfig.batch_size, dest="batch_size")
    train.add_argument("--seed", type=int, default=TrainConfig.seed)
    train.add_argument("--name-smoothing", type=float, default=TrainConfig.name_smoothing, dest="name_smoothing",
                       help="target mass spread over semantically close training names (0: hard targets)")
    train.add_argument("--classify-subcategory", action=argparse.BooleanOptionalAction,
                       default=TrainConfig.classify_subcategory, dest="classify_subcategory",
                       help="also classify each image among the subcategory phrases")
    train.add_argument("--max-emoji", type=int, dest="max_emoji", help="train on the first N emoji only (a toy run)")
    train.add_argument("--out", default=str(ASSETS_DIR), help="folder for the weights and manifest (default: assets/)")
    train.add_argument("--device", help="cpu or cuda (default: CUDA when available)")
    train.set_defaults(handler=_train_builtin)
    evaluate = commands.add_parser("evaluate-builtin", help="zero-shot and retrieval figures on the held-out emoji")
    evaluate.add_argument("--weights", default=str(ASSETS_DIR), help="folder with the weights and manifest")
    evaluate.add_argument("--scales", type=float, nargs="+", help="extra scales s for the sweep (default 5 10 20 50)")
    evaluate.add_argument("--memory-weight", type=float, dest="memory_weight",
                          help="mix of text projection and visual memory, 0 to 1 (default: the manifest's, 0.5)")
    evaluate.add_argument("--json", help="also write the figures to this JSON file")
    evaluate.add_argument("--device", help="cpu or cuda (default: CUDA when available)")
    evaluate.set_defaults(handler=_evaluate_builtin)
    explorer_bench = commands.add_parser("explorer-bench", help="the explorer's interactive timings (move p, new query, UMAP)")
    explorer_bench.add_argument("--gallery", type=int, default=20_000, help="gallery size G (default 20,000)")
    explorer_bench.add_argument("--anchors", type=int, default=4_000, help="anchors in set A (default 4,000)")
    explorer_bench.add_argument("--dim", type=int, default=256, help="embedding dimension (default 256, the built-in model's)")
    explorer_bench.add_argument("--umap-points", type=int, default=10_000, dest="umap_points")
    explorer_bench.add_argument("--repeats", type=int, default=20)
    explorer_bench.add_argument("--json", help="also write the figures to this JSON file")
    explorer_bench.set_defaults(handler=_explorer_bench)
    reproduce = commands.add_parser("reproduce", help="the paper's experiments, written as a report (Markdown, PNG, CSV)")
    reproduce.add_argument("--quick", action="store_true", help="smaller sweeps and samples (about 3 minutes on 2 cores)")
    reproduce.add_argument("--out", default="reports", help="folder for report.md, its figures and tables (default reports/)")
    reproduce.add_argument("--model", default="builtin", help="encoder spec: builtin (default) or open_clip:<arch>")
    reproduce.add_argument("--pretrained", help="open_clip checkpoint file or pretrained tag (its file must be on disk)")
    reproduce.add_argument("--allow-download", action="store_true", dest="allow_download",
                           help="let open_clip fetch missing weights from the network (off: nothing is downloaded)")
    reproduce.add_argument("--device", help="cpu or cuda for encoding (default: CUDA when available)")
    reproduce.add_argument("--layout", help="a published dataset's layout under --root: imagenet-r, cub-200, sketchy, chexpert")
    reproduce.add_argument("--root", help="the dataset's folder, for --layout")
    reproduce.add_argument("--folder", help="instead: a folder of images (subfolders are object labels)")
    reproduce.add_argument("--labels", help="with --folder: a CSV with a path (or filename) column and label columns")
    reproduce.add_argument("--object-column", dest="object_column", help="with --folder: the object label column")
    reproduce.add_argument("--style-column", dest="style_column", help="with --folder: the style label column")
    reproduce.add_argument("--group-column", dest="group_column", help="with --folder: groups for the condition table")
    for role in ("object", "style", "prior"):
        reproduce.add_argument(f"--{role}-anchors", dest=f"{role}_anchors",
                               help=f"with --folder: text file of {role} anchors, one per line")
    reproduce.add_argument("--queries", type=int, help="number of queries sampled from the gallery")
    reproduce.add_argument("--scale", type=float, help="logit scale s of the anchor models (default 10)")
    reproduce.add_argument("--seed", type=int, help="seed of every random draw (default 0)")
    reproduce.set_defaults(handler=_reproduce)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except ValueError as error:
        print(f"anchordiv {args.command}: {error}", file=sys.stderr)
        return 2
