"""Command line: ``python -m anchordiv <command>`` (also installed as ``anchordiv``)."""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import fields
from pathlib import Path
from typing import Callable

from .cache import atomic_write, cache_dir, check_file_target, check_folder


class UsageError(ValueError):
    """A command line argparse refused (unknown option, bad number, missing argument), raised
    instead of argparse's exit so that :func:`main` reports it like any other ``ValueError``."""

    def __init__(self, prog: str, message: str):
        super().__init__(f"{message} (see `{prog} --help`)")
        self.prog = prog


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        raise UsageError(self.prog, message)


def _integer(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer ``>= minimum``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}; got {text!r}")
        return value
    return parse


def _number(low: float, high: float = math.inf, low_open: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number from ``low`` (excluded when ``low_open``) to ``high``."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < low or value > high or (low_open and value == low):
            bound = (f"> {low:g}" if low_open else f">= {low:g}") + (f" and <= {high:g}" if math.isfinite(high) else "")
            raise argparse.ArgumentTypeError(f"must be a finite number {bound}; got {text!r}")
        return value
    return parse


COUNT, NATURAL, POSITIVE, FRACTION = _integer(1), _integer(0), _number(0, low_open=True), _number(0, 1)


def _option(name: str) -> str:
    """The option that sets field ``name``: ``naive_queries`` -> ``--naive-queries``."""
    return "--" + name.replace("_", "-")


def _labels_for(args: argparse.Namespace) -> Callable[[str], str]:
    """Field name -> what to call it in a message: its option where this command has one."""
    return lambda name: _option(name) if hasattr(args, name) else name


def _check_output_file(path: str | None, option: str) -> None:
    """Before the work: a file can be written at ``path`` (when given)."""
    if path:
        check_file_target(path, f"{option} {path!r}", f"give {option} a file path in a folder you can write to")


def _check_output_folder(path: str, option: str) -> None:
    """Before the work: ``path`` is a folder, or can be made one, that this user can write to."""
    check_folder(path, f"{option} {path!r}", f"give {option} a folder you can write to")


def _check_input(path: str | None, option: str, what: str, folder: bool = False) -> None:
    """Before the work: ``path`` (when given) is an existing file (or folder)."""
    if path is not None and not (Path(path).is_dir() if folder else Path(path).is_file()):
        kind = "folder" if folder else "file"
        raise ValueError(f"{option} {path!r} does not exist or is not a {kind}; give {what}")


def _check_labels(args: argparse.Namespace) -> None:
    """Before the work: the ``--labels`` CSV (when given) exists and reads strictly, as the embedding
    will read it (a damaged file is named with its line, never half-read)."""
    from .embeddings import read_labels_table

    _check_input(args.labels, "--labels", "a CSV file with a path (or filename) column")
    if args.labels is not None:
        read_labels_table(Path(args.labels).expanduser(), f"--labels {args.labels!r}")


def _check_device(args: argparse.Namespace) -> None:
    """Before loading anything: the ``--device`` asked for exists here."""
    from .device import resolve_device

    resolve_device(args.device, "--device")


def _warn(args: argparse.Namespace, message: str) -> None:
    """One line on stderr, ``anchordiv <command>: warning: <message>``: the run goes on."""
    print(f"anchordiv {args.command}: warning: {message}", file=sys.stderr, flush=True)


def _warn_unlabelled(args: argparse.Namespace, unlabelled: list[str], shown: int = 3) -> None:
    """Name the images the ``--labels`` CSV has no row for (they keep their folder as label)."""
    if unlabelled:
        names = ", ".join(repr(path) for path in unlabelled[:shown]) + (", …" if len(unlabelled) > shown else "")
        _warn(args, f"--labels {args.labels!r} has no row for {len(unlabelled):,} image(s) ({names}); they keep "
                    "their folder as label. Add a row for each to the CSV to label them")


def _bench(args: argparse.Namespace) -> int:
    from .bench import BenchConfig, run_benchmark, summary

    _check_output_file(args.json, "--json")
    if args.synthetic:
        return _bench_synthetic(args)
    if args.engine != "both":
        raise ValueError("--engine belongs to the store benchmark; add --synthetic (with --scale N).")
    for option in ("shard_rows", "moves", "store_dir", "address", "workers"):
        if getattr(args, option) is not None:
            raise ValueError(f"{_option(option)} belongs to the store benchmark; add --synthetic (with --scale N).")
    config = BenchConfig.paper() if args.paper else BenchConfig()
    for field in fields(BenchConfig):
        value = getattr(args, field.name, None)
        if value is not None:
            setattr(config, field.name, tuple(value) if isinstance(value, list) else value)
    config.validate(_labels_for(args))
    print(f"anchordiv bench: Q={config.queries} queries, G={config.gallery} gallery, d={config.dim}, "
          f"k={config.k}, scale={config.scale}, warm-up {config.warmup}, best of {config.repeats}", flush=True)
    result = run_benchmark(config, log=lambda line: print(line, flush=True))
    for line in summary(result):
        print(line)
    _write_json(args.json, result)
    return 0


def _bench_synthetic(args: argparse.Namespace) -> int:
    """``bench --scale N --synthetic``: the store-scale benchmark (issue 15) at ``N`` gallery rows."""
    from .bench import ScaleConfig, run_scale_benchmark

    if args.scale is None or float(args.scale) != int(args.scale):
        raise ValueError(f"--synthetic needs --scale N, the gallery's row count (a whole number, e.g. 1000000); "
                         f"got {args.scale!r}.")
    config = ScaleConfig(gallery=int(args.scale))
    for name in ("dim", "shard_rows", "moves", "k", "queries", "store_dir", "address", "workers"):
        if getattr(args, name) is not None:
            setattr(config, name, getattr(args, name))
    config.engines = ("local", "ray") if args.engine == "both" else (args.engine,)
    labels = {"gallery": "--scale", "engines": "--engine"}
    config.validate(lambda name: labels.get(name, _option(name)))
    print(f"anchordiv bench --synthetic: G={config.gallery:,} rows, d={config.dim}, float16 store, "
          f"shards of {config.shard_rows:,}, k={config.k}, {config.moves:,} moves per query, cpu, "
          f"engines {' and '.join(config.engines)}", flush=True)
    result = run_scale_benchmark(config, log=lambda line: print(line, flush=True))
    _write_json(args.json, result)
    return 0


def _write_json(path: str | None, result: object) -> None:
    """Write ``result`` as JSON when a ``--json`` path was given."""
    if path:
        target = Path(path)
        atomic_write(target, lambda handle: handle.write(json.dumps(result, indent=2, default=float).encode()))
        print(f"wrote {target}")


def _embed(args: argparse.Namespace) -> int:
    # Everything that can be checked is, before loading a model, which can take a while.
    _check_input(args.folder, "image folder", "a folder of images", folder=True)
    _check_labels(args)
    to_store = bool(args.out) and not args.out.lower().endswith(".npz")
    _check_engine(args, to_store)
    if to_store:
        _check_output_folder(args.out, "--out")
    else:
        _check_output_file(args.out, "--out")
    if args.engine == "local":
        _check_device(args)  # with Ray the cluster's workers choose their device, not this machine
    cache_dir(writable=True)
    skipped = _embed_on_ray(args) if args.engine == "ray" else _embed_locally(args, to_store)
    if skipped:
        print(f"skipped {len(skipped)} file{'s' * (len(skipped) != 1)} (not in the gallery):")
        for path, reason in skipped:
            print(f"  {path}: {reason}")
    return 0


def _check_engine(args: argparse.Namespace, to_store: bool) -> None:
    """Before the work: ``--address``, ``--workers`` and ``--device`` fit the engine, and Ray has a store to write."""
    if args.engine == "local":
        for option in ("address", "workers"):
            if getattr(args, option) is not None:
                raise ValueError(f"{_option(option)} {getattr(args, option)!r} is for Ray, which only --engine ray "
                                 f"uses; add --engine ray, or drop {_option(option)}")
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
    from .encoders import load_encoder

    encoder = load_encoder(args.model, pretrained=args.pretrained, device=args.device,
                           allow_download=args.allow_download)
    print(f"anchordiv embed: {args.folder} with {encoder.name} on {encoder.device}", flush=True)
    return _embed_to_store(args, encoder) if to_store else _embed_to_cache(args, encoder)


def _embed_to_cache(args: argparse.Namespace, encoder) -> list[tuple[str, str]]:
    """The folder's embeddings through the content-hash cache, also as an .npz with ``--out``."""
    from .embeddings import embed_folder, export_npz

    gallery = embed_folder(args.folder, encoder, labels_csv=args.labels, batch_size=args.batch_size)
    _warn_unlabelled(args, gallery.unlabelled)
    count = len(gallery.paths)
    print(f"embedded {count} images: {gallery.reused} reused from the cache, {count - gallery.reused} newly encoded "
          f"(cache: {gallery.cache_path})")
    if args.out:
        print(f"wrote {export_npz(gallery, args.out)}")
    return gallery.skipped


def _embed_to_store(args: argparse.Namespace, encoder) -> list[tuple[str, str]]:
    """The folder embedded into a GalleryStore at ``--out``, shard by shard: a rerun after a crash
    keeps the finished shards and rebuilds damaged ones."""
    from .embeddings import embed_folder_to_store

    store = embed_folder_to_store(args.folder, encoder, args.out, labels_csv=args.labels, shard_rows=args.shard_rows,
                                  batch_size=args.batch_size, overwrite=args.overwrite, progress=_print_progress)
    return _report_store(args, store)


def _embed_on_ray(args: argparse.Namespace) -> list[tuple[str, str]]:
    """``--engine ray``: the same store as :func:`_embed_to_store`, embedded by encoder actors on Ray."""
    from .ray_embed import embed_folder_to_store_ray

    where = f"the Ray cluster at {args.address}" if args.address else "Ray"
    print(f"anchordiv embed: {args.folder} with {args.model} on {where}", flush=True)
    store = embed_folder_to_store_ray(
        args.folder, args.model, args.out, labels_csv=args.labels, shard_rows=args.shard_rows,
        batch_size=args.batch_size, overwrite=args.overwrite, progress=_print_progress, pretrained=args.pretrained,
        allow_download=args.allow_download, address=args.address, workers=args.workers)
    return _report_store(args, store)


def _print_progress(fraction: float, text: str) -> None:
    print(f"{fraction:4.0%} {text}", flush=True)


def _report_store(args: argparse.Namespace, store) -> list[tuple[str, str]]:
    """Say what a store build at ``--out`` wrote, kept and rebuilt, and which images ``--labels``
    missed; return its skipped files."""
    from .embeddings import unlabelled_paths

    if args.labels:
        _warn_unlabelled(args, unlabelled_paths(store.labels["path"].tolist(), args.labels))
    report, out = store.build_report, args.out
    print(f"wrote the store {out}: {len(store)} images in {len(store.shards)} shard(s); {report.reused} "
          f"shard(s) kept from an earlier run, {len(report.embedded)} embedded now"
          + (f", rebuilt (damaged): {', '.join(report.rebuilt)}" if report.rebuilt else ""))
    return list(store.skipped)


def _train_builtin(args: argparse.Namespace) -> int:
    from .builtin.commands import train_command
    from .builtin.train import TrainConfig

    _check_output_folder(args.out, "--out")
    _check_device(args)
    cache_dir(writable=True)
    config = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, seed=args.seed, max_emoji=args.max_emoji,
                         name_smoothing=args.name_smoothing, classify_subcategory=args.classify_subcategory)
    train_command(config, Path(args.out), device=args.device)
    return 0


def _embed_builtin_world(args: argparse.Namespace) -> int:
    from .builtin.commands import embed_world_command

    _check_input(args.weights, "--weights", "the folder with the built-in weights and manifest", folder=True)
    _check_device(args)
    cache_dir(writable=True)
    embed_world_command(Path(args.weights), device=args.device)
    return 0


def _evaluate_builtin(args: argparse.Namespace) -> int:
    from .builtin.commands import evaluate_command

    _check_input(args.weights, "--weights", "the folder with the built-in weights and manifest", folder=True)
    _check_output_file(args.json, "--json")
    _check_device(args)
    _write_json(args.json, evaluate_command(Path(args.weights), scales=args.scales, device=args.device,
                                            memory_weight=args.memory_weight))
    return 0


def _anchor_file(args: argparse.Namespace, option: str) -> tuple[str, ...] | None:
    """The anchors of the file given with ``option`` (``None`` when none is given), parsed as the app
    parses its text areas: one a line, blank lines and repeats dropped, at most
    :data:`~anchordiv.explorer.MAX_ANCHORS`. A file without anchors is refused (rather than
    silently replaced by a default set); anchors past the cap are named in a warning."""
    from .explorer import MAX_ANCHORS, parse_anchor_text

    path = getattr(args, option.removeprefix("--").replace("-", "_"))
    if path is None:
        return None
    _check_input(path, option, "a text file with one anchor per line")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeError) as error:
        raise ValueError(f"{option} {path!r} cannot be read ({error}); give a UTF-8 text file with one anchor "
                         "per line") from error
    parsed = parse_anchor_text(text)
    if not parsed.anchors:
        raise ValueError(f"{option} {path!r} has no anchors (every line is blank); give one anchor per line")
    if parsed.truncated:
        total = len(parsed.anchors) + parsed.truncated
        _warn(args, f"{option} {path!r} has {total:,} distinct anchors; only the first {MAX_ANCHORS:,} are used "
                    "(the most a set takes). Split the file or drop anchors")
    return parsed.anchors


FOLDER_ONLY = ("labels", "object_column", "style_column", "group_column", "object_anchors", "style_anchors",
               "prior_anchors")


def _check_reproduce_sources(args: argparse.Namespace) -> None:
    """Before loading a model: the options name one source of images, and it exists."""
    if args.layout and args.folder:
        raise ValueError("--layout and --folder both name the images; give one of them")
    if args.layout and not args.root:
        raise ValueError("--layout needs --root, the dataset's folder")
    if args.root and not args.layout:
        raise ValueError("--root is the folder of a --layout; add --layout (or use --folder for a plain image folder)")
    given = [_option(name) for name in FOLDER_ONLY if getattr(args, name) is not None]
    if given and not args.folder:
        raise ValueError(f"{', '.join(given)} {'apply' if len(given) > 1 else 'applies'} only with --folder; "
                         "add --folder or drop them")
    _check_input(args.root, "--root", "the dataset's folder", folder=True)
    _check_input(args.folder, "--folder", "a folder of images (subfolders are object labels)", folder=True)
    _check_labels(args)
    if args.folder:
        _check_label_columns(args)


def _check_label_columns(args: argparse.Namespace) -> None:
    """Every ``--*-column`` names a column the folder's labels will have."""
    from .gallery import label_columns

    columns = label_columns(args.labels, "--labels")
    for name in ("object_column", "style_column", "group_column"):
        column = getattr(args, name)
        if column is not None and column not in columns:
            where = "the --labels CSV gives" if args.labels else "without --labels the labels are"
            raise ValueError(f"{_option(name)} {column!r} is not a label column; {where} {columns}. Give one of "
                             "them" + ("" if args.labels else ", or a --labels CSV with more columns"))


def _reproduce_study(args: argparse.Namespace, encoder, anchors: dict[str, list[str]], layout):
    """The study the options name: a dataset layout, an image folder, or the built-in world."""
    from .reproduce import layout_study, make_study, world_study

    if layout is not None:
        return layout_study(layout, encoder)
    if args.folder:
        from .gallery import folder_gallery

        gallery = folder_gallery(args.folder, encoder, labels_csv=args.labels)
        object_column = args.object_column or gallery.object_column
        style_column = args.style_column or gallery.style_column
        labels = gallery.labels
        _warn_unlabelled(args, gallery.unlabelled)
        defaults = {"object": labels[object_column], "style": labels[style_column] if style_column else (),
                    "prior": ()}
        texts = {role: defaults[role] if anchors[role] is None else anchors[role] for role in defaults}
        return make_study(str(args.folder), gallery, encoder, object_column, style_column,
                          object_texts=texts["object"], style_texts=texts["style"], prior_texts=texts["prior"],
                          group_column=args.group_column)
    return world_study(encoder, limit=args.settings.world_limit)


def _reproduce_inputs(args: argparse.Namespace):
    """Everything that can be checked before loading a model (which can take a while), checked;
    returns the anchor texts read from the ``--*-anchors`` files, by role (``None``: no file), and
    the ``--layout``."""
    _check_reproduce_sources(args)
    _check_output_folder(args.out, "--out")
    anchors = {role: _anchor_file(args, _option(f"{role}_anchors")) for role in ("object", "style", "prior")}
    layout = None
    if args.layout:
        from .datasets.layouts import load_layout

        layout = load_layout(args.layout, args.root)
    _check_device(args)
    cache_dir(writable=True)
    return anchors, layout


def _reproduce(args: argparse.Namespace) -> int:
    import dataclasses

    from .encoders import load_encoder
    from .reproduce import Settings, run_reproduction

    settings = Settings.quick() if args.quick else Settings.full()
    overrides = {name: getattr(args, name) for name in ("queries", "scale", "seed") if getattr(args, name) is not None}
    args.settings = dataclasses.replace(settings, **overrides).validate(_labels_for(args))
    anchors, layout = _reproduce_inputs(args)
    encoder = load_encoder(args.model, pretrained=args.pretrained, device=args.device, allow_download=args.allow_download)
    study = _reproduce_study(args, encoder, anchors, layout)
    print(f"anchordiv reproduce ({'quick' if args.quick else 'full'}): {study.name}, {len(study.gallery):,} images, "
          f"{encoder.name}", flush=True)
    report = run_reproduction(study, args.out, args.settings, log=lambda line: print(line, flush=True))
    print(f"wrote {report}")
    return 0


def _explorer_bench(args: argparse.Namespace) -> int:
    if args.browser:
        return _explorer_bench_browser(args)
    if args.isolation:
        raise ValueError("--isolation is a browser measurement: add --browser")
    import torch

    from .explorer import benchmark

    _check_output_file(args.json, "--json")
    args.repeats = args.repeats or 20
    print(f"anchordiv explorer-bench: G={args.gallery}, N={args.anchors}, d={args.dim}, UMAP {args.umap_points} "
          f"points, CPU, {torch.get_num_threads()} torch threads", flush=True)
    results = benchmark(gallery_size=args.gallery, n_anchors=args.anchors, dim=args.dim, umap_points=args.umap_points,
                        repeats=args.repeats, log=lambda line: print(line, flush=True))
    _write_json(args.json, results)
    return 0


def _explorer_bench_browser(args: argparse.Namespace) -> int:
    from .explorer.browser_bench import browser_benchmark, check_browser, isolation_benchmark

    _check_output_file(args.json, "--json")
    check_browser()  # before the servers start: a missing browser is a one-line error naming what to install
    if args.isolation:
        print("anchordiv explorer-bench --browser --isolation: one session's p step while another draws the "
              "costliest Compare figure a link may ask for, in headless Chromium", flush=True)
        bench = isolation_benchmark
    else:
        print("anchordiv explorer-bench --browser: the explorer against app/reference_grid.py in headless Chromium",
              flush=True)
        bench = browser_benchmark
    results = bench(repeats=args.repeats or 5, split=args.gallery_split, limit=args.gallery_limit,
                    log=lambda line: print(line, flush=True))
    _write_json(args.json, results)
    return 0


def _figure(args: argparse.Namespace) -> int:
    from .encoders import load_encoder
    from .explorer import GeometrySpec
    from .figure import compare, render_figure
    from .gallery import world_gallery

    form, rows, columns, images, files, limits = _figure_inputs(args)
    encoder = load_encoder(args.model, pretrained=args.pretrained, device=args.device,
                           allow_download=args.allow_download)
    gallery = world_gallery(encoder, split=args.split, limit=args.limit)
    texts_a, texts_b = (files[name] or _preset(gallery, getattr(args, f"preset_{name}"), f"--preset-{name}")
                        for name in ("a", "b"))
    spec = GeometrySpec(kind=args.kind, scale=args.scale, reverse=args.reverse)
    print(f"anchordiv figure: {len(rows)} row(s) x {len(columns)} column(s), top-{args.k}, {gallery.description}, "
          f"{encoder.name}", flush=True)
    result = compare(gallery, encoder, rows, columns, texts_a, texts_b, args.k, spec, args.weighting,
                     prior_texts=files["prior"] or (), images=images, limits=limits)
    data = render_figure(result, form, dpi=args.dpi, limits=limits)
    atomic_write(Path(args.out), lambda handle: handle.write(data))
    print(f"wrote {args.out}")
    return 0


def _figure_inputs(args: argparse.Namespace):
    """Everything ``figure`` can check before loading a model, checked: the output's format (from
    its suffix) and folder, the query and geometry specs, the figure's size against the
    ``--max-*`` limits, the image files of ``image:`` rows (read), and the anchor files (read;
    ``None`` where a preset is used)."""
    from .explorer import GeometrySpec
    from .figure import (FORMATS, FigureLimits, check_figure_request, fitted_geometries, parse_geometry_column,
                         parse_query_row)

    form = Path(args.out).suffix.lower().lstrip(".")
    if form not in FORMATS:
        raise ValueError(f"--out {args.out!r} must end in .png, .pdf or .svg (the figure's format)")
    _check_output_file(args.out, "--out")
    rows = _parsed(args.queries, parse_query_row, "--queries")
    columns = _parsed(args.geometries, parse_geometry_column, "--geometries")
    limits = FigureLimits(rows=args.max_rows, columns=args.max_columns, k=args.max_k, neighbours=args.max_neighbours,
                          geometries=args.max_geometries, dpi=args.max_dpi, pixels=args.max_pixels)
    spec = GeometrySpec(kind=args.kind, scale=args.scale)
    check_figure_request(len(rows), len(columns), args.k, limits, dpi=args.dpi if form == "png" else None,
                         n_geometries=fitted_geometries(columns, spec))
    images = {}
    for row in rows:
        if row.kind == "upload":
            raise ValueError(f"--queries {str(row)!r}: upload: rows belong to the app; give the file as image:PATH")
        if row.kind == "image":
            _check_input(row.value, "--queries image:", "an image file (PNG, JPEG or WebP)")
            images[row.value] = Path(row.value).read_bytes()
    files = {name: _anchor_file(args, option) for name, option in (
        ("a", "--anchors-a"), ("b", "--anchors-b"), ("prior", "--prior-anchors"))}
    _check_device(args)
    return form, rows, columns, images, files, limits


def _parsed(texts: list[str], parse: Callable, option: str) -> list:
    """Each of ``texts`` through ``parse``; a bad one is named with ``option``."""
    try:
        return [parse(text) for text in texts]
    except ValueError as error:
        raise ValueError(f"{option}: {error}") from None


def _preset(gallery, name: str, option: str) -> tuple[str, ...]:
    """The anchors of preset ``name`` for ``gallery``."""
    from .explorer import anchor_presets

    presets = anchor_presets(gallery)
    if name not in presets:
        raise ValueError(f"{option} {name!r} is not a preset; choose one of {', '.join(map(repr, presets))}")
    return presets[name]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="anchordiv", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    bench = commands.add_parser("bench", help="Table-4-shaped runtime benchmark (fit + preprocess + retrieval)")
    bench.add_argument("--paper", action="store_true", help="the paper's size (Q=10,000, G=50,000, N=2^10..2^17): for a GPU")
    bench.add_argument("--queries", type=COUNT)
    bench.add_argument("--gallery", type=COUNT)
    bench.add_argument("--dim", type=COUNT)
    bench.add_argument("--anchors", type=_integer(2), nargs="+", help="anchor counts N")
    bench.add_argument("--k", type=COUNT)
    bench.add_argument("--scale", type=POSITIVE,
                       help="the anchor models' scale; with --synthetic, the gallery's row count N instead")
    bench.add_argument("--synthetic", action="store_true",
                       help="the store benchmark: N synthetic rows in a float16 GalleryStore, sharded search and "
                            "the certified p slider (build time, memory, new-query pass, slider moves)")
    bench.add_argument("--shard-rows", type=COUNT, dest="shard_rows", help="with --synthetic: rows per shard (65,536)")
    bench.add_argument("--moves", type=COUNT, help="with --synthetic: random p per slider (1,000)")
    bench.add_argument("--store-dir", dest="store_dir",
                       help="with --synthetic: build the store here (kept) instead of a temporary folder")
    bench.add_argument("--engine", choices=["local", "ray", "both"], default="both",
                       help="with --synthetic: search in this process, in Ray actors, or both in turn (default both)")
    bench.add_argument("--address", help="with --synthetic --engine ray: the Ray cluster to join (default: a local instance)")
    bench.add_argument("--workers", type=COUNT, help="with --synthetic --engine ray: Ray actors (default: one per CPU)")
    bench.add_argument("--repeats", type=COUNT)
    bench.add_argument("--warmup", type=NATURAL)
    bench.add_argument("--methods", nargs="+", choices=["cosine", "softmax", "gaussian", "gmm", "naive"])
    bench.add_argument("--naive-max-anchors", type=NATURAL, dest="naive_max_anchors")
    bench.add_argument("--naive-queries", type=COUNT, dest="naive_queries")
    bench.add_argument("--gmm-max-anchors", type=NATURAL, dest="gmm_max_anchors")
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
    embed.add_argument("--batch-size", type=COUNT, default=64, dest="batch_size")
    embed.add_argument("--device", help="cpu or cuda (default: CUDA when available)")
    embed.add_argument("--out", help="also write embeddings, paths and labels to this .npz file; or, for a path "
                                     "not ending in .npz, a gallery store folder (resumable: a rerun continues)")
    embed.add_argument("--shard-rows", type=COUNT, default=4096, dest="shard_rows",
                       help="images per shard of a store (default 4096)")
    embed.add_argument("--overwrite", action="store_true",
                       help="replace a store built from other files or settings at --out")
    embed.add_argument("--engine", choices=["local", "ray"], default="local",
                       help="local (default): encode in this process; ray: encoder actors on Ray (one per GPU, else "
                            "per CPU) write the same store (--out must be a folder)")
    embed.add_argument("--address", help="with --engine ray: join the Ray cluster at this address (auto, HOST:PORT "
                                         "or ray://HOST:10001) instead of starting a local instance")
    embed.add_argument("--workers", type=COUNT, help="with --engine ray: encoder actors, each holding a copy of the "
                                                     "model (default: one per GPU, else one per CPU)")
    embed.set_defaults(handler=_embed)
    from .builtin.train import TrainConfig
    from .builtin.weights import ASSETS_DIR
    from .datasets.layouts import LAYOUTS

    train = commands.add_parser("train-builtin", help="retrain the built-in model on the emoji world (seeded)")
    train.add_argument("--epochs", type=COUNT, default=TrainConfig.epochs)
    train.add_argument("--batch-size", type=COUNT, default=TrainConfig.batch_size, dest="batch_size")
    train.add_argument("--seed", type=NATURAL, default=TrainConfig.seed)
    train.add_argument("--name-smoothing", type=FRACTION, default=TrainConfig.name_smoothing, dest="name_smoothing",
                       help="target mass spread over semantically close training names (0: hard targets)")
    train.add_argument("--classify-subcategory", action=argparse.BooleanOptionalAction,
                       default=TrainConfig.classify_subcategory, dest="classify_subcategory",
                       help="also classify each image among the subcategory phrases")
    train.add_argument("--max-emoji", type=COUNT, dest="max_emoji", help="train on the first N emoji only (a toy run)")
    train.add_argument("--out", default=str(ASSETS_DIR), help="folder for the weights and manifest (default: assets/)")
    train.add_argument("--device", help="cpu or cuda (default: CUDA when available)")
    train.set_defaults(handler=_train_builtin)
    world = commands.add_parser("embed-builtin-world",
                                help="embed the emoji world with the built-in model and write the embeddings that ship with it")
    world.add_argument("--weights", default=str(ASSETS_DIR),
                       help="folder with the weights and manifest; the embeddings are written there (default: assets/)")
    world.add_argument("--device", help="cpu or cuda (default: CUDA when available)")
    world.set_defaults(handler=_embed_builtin_world)
    evaluate = commands.add_parser("evaluate-builtin", help="zero-shot and retrieval figures on the held-out emoji")
    evaluate.add_argument("--weights", default=str(ASSETS_DIR), help="folder with the weights and manifest")
    evaluate.add_argument("--scales", type=POSITIVE, nargs="+", help="extra scales s for the sweep (default 5 10 20 50)")
    evaluate.add_argument("--memory-weight", type=FRACTION, dest="memory_weight",
                          help="mix of text projection and visual memory, 0 to 1 (default: the manifest's, 0.5)")
    evaluate.add_argument("--json", help="also write the figures to this JSON file")
    evaluate.add_argument("--device", help="cpu or cuda (default: CUDA when available)")
    evaluate.set_defaults(handler=_evaluate_builtin)
    explorer_bench = commands.add_parser("explorer-bench", help="the explorer's interactive timings (move p, new query, UMAP)")
    explorer_bench.add_argument("--gallery", type=COUNT, default=20_000, help="gallery size G (default 20,000)")
    explorer_bench.add_argument("--anchors", type=_integer(2), default=4_000, help="anchors in set A (default 4,000)")
    explorer_bench.add_argument("--dim", type=COUNT, default=256, help="embedding dimension (default 256, the built-in model's)")
    explorer_bench.add_argument("--umap-points", type=COUNT, default=10_000, dest="umap_points")
    explorer_bench.add_argument("--repeats", type=COUNT, help="default 20 (5 with --browser)")
    explorer_bench.add_argument("--browser", action="store_true",
                                help="time the Streamlit explorer in headless Chromium against a minimal reference app "
                                     "(first start, start, open, move p: grid changed, page at rest); the size options "
                                     "above do not apply")
    explorer_bench.add_argument("--isolation", action="store_true",
                                help="with --browser: another session's p step while one draws the costliest Compare "
                                     "figure a link may ask for, and the server's CPU once a tab asking for it closed")
    explorer_bench.add_argument("--gallery-split", choices=["all", "train", "heldout"], default="all",
                                dest="gallery_split", help="with --browser: the emoji world split the explorer shows "
                                                           "(default all, as `make demo`)")
    explorer_bench.add_argument("--gallery-limit", type=COUNT, dest="gallery_limit",
                                help="with --browser: only the first N images of that split (default: all)")
    explorer_bench.add_argument("--json", help="also write the figures to this JSON file")
    explorer_bench.set_defaults(handler=_explorer_bench)
    reproduce = commands.add_parser("reproduce", help="the paper's experiments, written as a report (Markdown, PNG, CSV)")
    reproduce.add_argument("--quick", action="store_true", help="smaller sweeps and samples (about a minute on 2 cores once the world is embedded)")
    reproduce.add_argument("--out", default="reports", help="folder for report.md, its figures and tables (default reports/)")
    reproduce.add_argument("--model", default="builtin", help="encoder spec: builtin (default) or open_clip:<arch>")
    reproduce.add_argument("--pretrained", help="open_clip checkpoint file or pretrained tag (its file must be on disk)")
    reproduce.add_argument("--allow-download", action="store_true", dest="allow_download",
                           help="let open_clip fetch missing weights from the network (off: nothing is downloaded)")
    reproduce.add_argument("--device", help="cpu or cuda for encoding (default: CUDA when available)")
    reproduce.add_argument("--layout", choices=list(LAYOUTS), help="a published dataset's layout under --root")
    reproduce.add_argument("--root", help="the dataset's folder, for --layout")
    reproduce.add_argument("--folder", help="instead: a folder of images (subfolders are object labels)")
    reproduce.add_argument("--labels", help="with --folder: a CSV with a path (or filename) column and label columns")
    reproduce.add_argument("--object-column", dest="object_column", help="with --folder: the object label column")
    reproduce.add_argument("--style-column", dest="style_column", help="with --folder: the style label column")
    reproduce.add_argument("--group-column", dest="group_column", help="with --folder: groups for the condition table")
    for role in ("object", "style", "prior"):
        reproduce.add_argument(f"--{role}-anchors", dest=f"{role}_anchors",
                               help=f"with --folder: text file of {role} anchors, one per line")
    reproduce.add_argument("--queries", type=COUNT, help="number of queries sampled from the gallery")
    reproduce.add_argument("--scale", type=POSITIVE, help="logit scale s of the anchor models (default 10)")
    reproduce.add_argument("--seed", type=NATURAL, help="seed of every random draw (default 0)")
    reproduce.set_defaults(handler=_reproduce)
    _add_figure_parser(commands)
    return parser


def _add_figure_parser(commands) -> None:
    from .explorer import WEIGHTINGS
    from .figure import DEFAULT_LIMITS
    from .models import list_anchor_models

    figure = commands.add_parser(
        "figure", help="queries (rows) x geometries (columns) of top-k neighbours as PNG, PDF or SVG (paper Figs. 1, 8)")
    figure.add_argument("--queries", nargs="+", required=True, metavar="Q",
                        help="rows: #ID, NAME or name:NAME (first caption containing it), text:TEXT, random, "
                             "random:SEED, image:PATH")
    figure.add_argument("--geometries", nargs="+", required=True, metavar="G",
                        help="columns: cosine, iti, A, B, 'mix p=0.3', each anchor column with optional "
                             "model=KIND s=SCALE (mix: weighting=NAME), quoted when it has spaces")
    figure.add_argument("--out", required=True, help="the figure's file: .png, .pdf or .svg")
    for name, role, preset in (("a", "A (default: the gallery's object names)", "Gallery object names"),
                               ("b", "B (default: the gallery's styles)", "Gallery styles")):
        sets = figure.add_mutually_exclusive_group()
        sets.add_argument(f"--anchors-{name}", dest=f"anchors_{name}",
                          help=f"text file of anchor set {role}, one per line")
        sets.add_argument(f"--preset-{name}", dest=f"preset_{name}", default=preset,
                          help=f"a preset for set {name.upper()} (default {preset!r})")
    figure.add_argument("--prior-anchors", dest="prior_anchors",
                        help="text file of prior anchors, one per line, for the posterior kinds")
    figure.add_argument("--kind", choices=list_anchor_models(), default="softmax",
                        help="anchor model of the anchor columns without model= (default softmax)")
    figure.add_argument("--scale", type=POSITIVE, default=10.0, help="logit scale s of columns without s= (default 10)")
    figure.add_argument("--weighting", choices=list(WEIGHTINGS), default="calibrated",
                        help="weights of A and B in mix columns without weighting= (default calibrated)")
    figure.add_argument("--reverse", action="store_true", help="rank by KL(p_neighbour || p_query)")
    figure.add_argument("-k", "--k", type=COUNT, default=5, dest="k", help="neighbours per cell (default 5)")
    figure.add_argument("--split", choices=["all", "train", "heldout"], default="all",
                        help="the emoji world split to search (default all)")
    figure.add_argument("--limit", type=COUNT, help="only the first N images of that split")
    figure.add_argument("--dpi", type=COUNT, default=200, help="resolution of a PNG (default 200)")
    for name, what in (("rows", "query rows"), ("columns", "geometry columns"), ("k", "neighbours per cell"),
                       ("neighbours", "neighbours in all (rows x columns x k)"),
                       ("geometries", "anchor geometries to fit (distinct model= and s=)"),
                       ("dpi", "dpi of a PNG"), ("pixels", "pixels of a PNG (width x height)")):
        default = getattr(DEFAULT_LIMITS, name)
        figure.add_argument(f"--max-{name}", type=COUNT, default=default, dest=f"max_{name}",
                            help=f"refuse a figure with more {what} (default {default:,})")
    figure.add_argument("--model", default="builtin", help="encoder spec: builtin (default) or open_clip:<arch>")
    figure.add_argument("--pretrained", help="open_clip checkpoint file or pretrained tag (its file must be on disk)")
    figure.add_argument("--allow-download", action="store_true", dest="allow_download",
                        help="let open_clip fetch missing weights from the network (off: nothing is downloaded)")
    figure.add_argument("--device", help="cpu or cuda for encoding (default: CUDA when available)")
    figure.set_defaults(handler=_figure)


def main(argv: list[str] | None = None) -> int:
    """Run a command; every failure is one line on stderr, ``anchordiv <command>: <message>``,
    and exit status 2 (130 when interrupted), never a traceback."""
    prog, command = "anchordiv", None
    try:
        args = build_parser().parse_args(argv)
        prog, command = f"anchordiv {args.command}", args.command
        return args.handler(args)
    except UsageError as error:
        return _fail(error.prog, str(error))
    except ValueError as error:
        return _fail(prog, str(error))
    except OSError as error:  # the checks before the work catch the usual ones; this is the rest (a full disk, ...)
        where = f" ({error.filename})" if error.filename else ""
        return _fail(prog, f"{error.strerror or error}{where}; check that the path exists and is readable or "
                           "writable as needed, and that its disk has space")
    except MemoryError:
        return _fail(prog, f"ran out of memory; {_MEMORY_FIX.get(command, _MEMORY_FIX[None])}")
    except KeyboardInterrupt:
        _fail(prog, "interrupted")
        return 130


# How each command needs less memory: a figure's is its dpi and its size, not its number of queries alone.
_MEMORY_FIX = {None: "use smaller sizes (fewer queries, gallery images or anchors)",
               "figure": "draw a smaller figure (a lower --dpi, or PDF or SVG; fewer --queries or --geometries; a "
                         "lower -k) or lower the --max-* limits you raised"}


def _fail(prog: str, message: str) -> int:
    print(f"{prog}: {message}", file=sys.stderr)
    return 2
