"""``anchordiv bench``: the Table-4-shaped runtime benchmark, or with ``--synthetic`` the store-scale one."""
from __future__ import annotations

import argparse
from dataclasses import fields

from .checks import check_output_file
from .options import SEED, add_device_option, add_json_option, integer, labels_for, number, option_name
from .output import write_json

STORE_ONLY = ("shard_rows", "moves", "store_dir", "address", "workers")


def add_parser(commands) -> argparse.ArgumentParser:
    bench = commands.add_parser("bench", help="Table-4-shaped runtime benchmark (fit + preprocess + retrieval)")
    bench.add_argument("--paper", action="store_true", help="the paper's size (Q=10,000, G=50,000, N=2^10..2^17): for a GPU")
    # Sizes far past any machine's memory still parse: the run's memory estimate refuses them by name.
    bench.add_argument("--queries", type=integer(1, 10**9))
    bench.add_argument("--gallery", type=integer(1, 10**9))
    bench.add_argument("--dim", type=integer(1, 65536))
    bench.add_argument("--anchors", type=integer(2, 10**7), nargs="+", help="anchor counts N")
    bench.add_argument("--k", type=integer(1, 10**6))
    bench.add_argument("--scale", type=number(0, 10**12, low_open=True),
                       help="the anchor models' scale; with --synthetic, the gallery's row count N instead")
    bench.add_argument("--synthetic", action="store_true",
                       help="the store benchmark: N synthetic rows in a float16 GalleryStore, sharded search and "
                            "the certified p slider (build time, memory, new-query pass, slider moves)")
    bench.add_argument("--feedback", action="store_true",
                       help="the learned-geometry benchmark (issues 25, 50): the Explore page's learning path on the built-in "
                            "world with 1, 3 and 5 marks, on its default vocabulary and a 2,000-term one: how often "
                            "the weights follow the marks, and the average precision, on the training split")
    bench.add_argument("--heldout", action="store_true",
                       help="with --feedback: measure the quality on the held-out split instead (for the docs, once "
                            "the design is fixed on the training split)")
    bench.add_argument("--seed", type=SEED,
                       help="with --feedback: the seed that draws the queries and their marks (default 0, the "
                            "queries the design was chosen on; another seed draws queries it was not tuned on)")
    bench.add_argument("--shard-rows", type=integer(1, 10**8), dest="shard_rows",
                       help="with --synthetic: rows per shard (65,536)")
    bench.add_argument("--moves", type=integer(1, 10**8), help="with --synthetic: random p per slider (1,000)")
    bench.add_argument("--store-dir", dest="store_dir",
                       help="with --synthetic: build the store here (kept) instead of a temporary folder")
    bench.add_argument("--engine", choices=["local", "ray", "both"], default="both",
                       help="with --synthetic: search in this process, in Ray actors, or both in turn (default both)")
    bench.add_argument("--address", help="with --synthetic --engine ray: the Ray cluster to join (default: a local instance)")
    bench.add_argument("--workers", type=integer(1, 1024),
                       help="with --synthetic --engine ray: Ray actors (default: one per CPU)")
    bench.add_argument("--repeats", type=integer(1, 10**6))
    bench.add_argument("--warmup", type=integer(0, 10**6))
    bench.add_argument("--methods", nargs="+", choices=["cosine", "softmax", "gaussian", "gmm", "naive"])
    bench.add_argument("--naive-max-anchors", type=integer(0, 10**7), dest="naive_max_anchors")
    bench.add_argument("--naive-queries", type=integer(1, 10**9), dest="naive_queries")
    bench.add_argument("--gmm-max-anchors", type=integer(0, 10**7), dest="gmm_max_anchors")
    add_device_option(bench)
    add_json_option(bench, "rows")
    bench.set_defaults(handler=run)
    return bench


def run(args: argparse.Namespace) -> int:
    from ..benchmarks.search import BenchConfig, result_lines, run_benchmark, summary

    check_output_file(args.json, "--json")
    if args.feedback:
        return _run_feedback(args)
    for option, given in (("--heldout", args.heldout), ("--seed", args.seed is not None)):
        if given:
            raise ValueError(f"{option} belongs to the learned-geometry benchmark; add --feedback.")
    if args.synthetic:
        return _run_synthetic(args)
    if args.engine != "both":
        raise ValueError("--engine belongs to the store benchmark; add --synthetic (with --scale N).")
    for option in STORE_ONLY:
        if getattr(args, option) is not None:
            raise ValueError(f"{option_name(option)} belongs to the store benchmark; add --synthetic (with --scale N).")
    config = BenchConfig.paper() if args.paper else BenchConfig()
    for field in fields(BenchConfig):
        value = getattr(args, field.name, None)
        if value is not None:
            setattr(config, field.name, tuple(value) if isinstance(value, list) else value)
    config.validate(labels_for(args))
    print(f"anchordiv bench: Q={config.queries} queries, G={config.gallery} gallery, d={config.dim}, "
          f"k={config.k}, scale={config.scale}, warm-up {config.warmup}, {config.statistic} of {config.repeats}", flush=True)
    result = run_benchmark(config)
    for line in [*result_lines(result), *summary(result)]:
        print(line)
    write_json(args.json, result)
    return 0


def _run_synthetic(args: argparse.Namespace) -> int:
    """``bench --scale N --synthetic``: the store-scale benchmark (issue 15) at ``N`` gallery rows."""
    from ..benchmarks.scale import ScaleConfig, figure_lines, run_scale_benchmark

    if args.scale is None or float(args.scale) != int(args.scale):
        raise ValueError(f"--synthetic needs --scale N, the gallery's row count (a whole number, e.g. 1000000); "
                         f"got {args.scale!r}.")
    config = ScaleConfig(gallery=int(args.scale))
    for name in ("dim", "shard_rows", "moves", "k", "queries", "store_dir", "address", "workers"):
        if getattr(args, name) is not None:
            setattr(config, name, getattr(args, name))
    config.engines = ("local", "ray") if args.engine == "both" else (args.engine,)
    labels = {"gallery": "--scale", "engines": "--engine"}
    config.validate(lambda name: labels.get(name, option_name(name)))
    print(f"anchordiv bench --synthetic: G={config.gallery:,} rows, d={config.dim}, float16 store, "
          f"shards of {config.shard_rows:,}, k={config.k}, {config.moves:,} moves per query, cpu, "
          f"engines {' and '.join(config.engines)}", flush=True)
    result = run_scale_benchmark(config)
    for line in figure_lines(result):
        print(line)
    write_json(args.json, result)
    return 0


def _run_feedback(args: argparse.Namespace) -> int:
    """``bench --feedback``: the page's learning path on the built-in world (quality on the training
    split, or with ``--heldout`` the held-out split)."""
    from ..benchmarks.feedback import FeedbackBenchConfig, figure_lines, quality, time_fit

    if args.synthetic:
        raise ValueError("--feedback and --synthetic are two benchmarks; pass one of them.")
    config = FeedbackBenchConfig()
    if args.queries is not None:
        config.queries = args.queries
    if args.repeats is not None:
        config.repeats = args.repeats
    if args.seed is not None:
        config.seed = args.seed
    split = "heldout" if args.heldout else "train"
    print(f"anchordiv bench --feedback: the page's own learning path on the built-in world, {config.queries} "
          f"{split} queries (seed {config.seed}) per task and number of marks; the style task leaves out queries drawn by a "
          "vendor (google, twitter: no style term names them)", flush=True)
    speed = time_fit(config)
    results = quality(config, split)
    for line in figure_lines(speed, results, split):
        print(line)
    write_json(args.json, {"speed": speed, split: {f"{vocabulary} | {marks} marks | {task}": figures
                                                   for (vocabulary, marks, task), figures in results.items()}})
    return 0
