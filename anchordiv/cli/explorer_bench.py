"""``anchordiv explorer-bench``: the explorer's interactive timings (move p, new query, UMAP), or
with ``--browser`` the Streamlit explorer itself timed in headless Chromium (with ``--sessions N``,
N sessions moving p at once; with ``--isolation``, one session's p step beside the heaviest request;
with ``--class N``, a class of N students on one server and the class sizes its measured costs hold)."""
from __future__ import annotations

import argparse
from functools import partial

from .checks import check_output_file
from .options import add_json_option, add_world_options, integer, number
from .output import write_json


def add_parser(commands) -> argparse.ArgumentParser:
    bench = commands.add_parser("explorer-bench", help="the explorer's interactive timings (move p, new query, UMAP)")
    bench.add_argument("--gallery", type=integer(1, 10**7), default=20_000, help="gallery size G (default 20,000)")
    bench.add_argument("--anchors", type=integer(2, 10**6),
                       help="anchors in set A (default 4,000; 1,644 with --scale, the built-in world's object names)")
    bench.add_argument("--dim", type=integer(1, 65536), default=256, help="embedding dimension (default 256, the built-in model's)")
    bench.add_argument("--scale", action="store_true",
                       help="a new query's p path (what the player needs before it plays) over galleries of 20,000, "
                            "100,000 and 500,000 rows in memory and a float16 store of 10^6 rows, against one mat-vec "
                            "pass and against reading the rows at the memory bandwidth measured in the same run")
    bench.add_argument("--map", type=integer(100, 10**6), metavar="N", dest="map_points",
                       help="a map of N points as the page lays it out (N = 50000 for the page's largest): its kNN "
                            "graph under the divergence against the bare matrix product it needs, UMAP's compile and "
                            "layout, the longest stretch without progress, the cached second request, placing a query")
    bench.add_argument("--sizes", type=integer(1, 10**7), nargs="*", metavar="G",
                       help="with --scale: the galleries in memory (default 20000 100000 500000; none: only the store)")
    bench.add_argument("--store-rows", type=integer(0, 10**8), dest="store_rows",
                       help="with --scale: the store's rows (default 1,000,000; 0: no store)")
    bench.add_argument("--users", type=integer(0, 64),
                       help="with --scale: new queries asked for at once, over the largest gallery in memory and over "
                            "the store, against the same one after another (default 16; 0: none)")
    bench.add_argument("--store-dir", dest="store_dir",
                       help="with --scale: build the store in this folder and keep it (reused by a later run of the "
                            "same size); default a temporary folder")
    bench.add_argument("--umap-points", type=integer(1, 10**6), default=10_000, dest="umap_points")
    bench.add_argument("--repeats", type=integer(1, 10**6), help="default 20 (5 with --browser)")
    bench.add_argument("--browser", action="store_true",
                       help="time the Streamlit explorer in headless Chromium against a minimal reference app "
                            "(first start, start, open, move p: grid changed, page at rest, and the server's CPU per p "
                            "step by stage); the size options above do not apply")
    bench.add_argument("--isolation", action="store_true",
                       help="with --browser: another session's p step while one draws the costliest Compare "
                            "figure a link may ask for, and the server's CPU once a tab asking for it closed")
    bench.add_argument("--sessions", type=integer(2, 64), metavar="N",
                       help="with --browser: N browser sessions move p at once, each its own Streamlit session "
                            "(the explorer, then the reference app): their steps against one session's alone, and "
                            "whether each ends on the grid one session alone shows at that p")
    bench.add_argument("--class", type=integer(2, 64), metavar="N", dest="class_size",
                       help="with --browser: a class of N students on one server, each in a browser session of its "
                            "own changing the query or the anchors every 20-30 s and moving p; what each action "
                            "costs alone, the server's memory per session, the class's waits, and the class sizes "
                            "a model of the measured costs holds")
    bench.add_argument("--minutes", type=number(0.5, 600.0),
                       help="with --class: how long the class runs, in minutes (default 4)")
    add_world_options(bench, "--gallery-split", "--gallery-limit", shows="the explorer shows", note="with --browser: ")
    add_json_option(bench, "figures")
    bench.set_defaults(handler=run)
    return bench


def _at_most_one(options: tuple[tuple[str, bool], ...]) -> None:
    """``ValueError`` naming the given ones of ``options`` (``(option, given)`` pairs) where more than
    one is: each is a measurement of its own."""
    chosen = [option for option, given in options if given]
    if len(chosen) > 1:
        raise ValueError(f"{' and '.join(chosen)} are separate measurements: give one of them")


def run(args: argparse.Namespace) -> int:
    scale_only = (("--sizes", args.sizes is not None), ("--store-rows", args.store_rows is not None),
                  ("--store-dir", args.store_dir is not None), ("--users", args.users is not None))
    if not args.scale:
        for option, given in scale_only:
            if given:
                raise ValueError(f"{option} sizes the --scale measurement: add --scale")
    _at_most_one((("--browser", args.browser), ("--scale", args.scale), ("--map", args.map_points is not None)))
    if args.browser:
        return _run_in_browser(args)
    if args.map_points is not None:
        return _run_map(args)
    for option, given in (("--isolation", args.isolation), ("--sessions", args.sessions is not None),
                          ("--class", args.class_size is not None), ("--minutes", args.minutes is not None)):
        if given:
            raise ValueError(f"{option} is a browser measurement: add --browser")
    if args.scale:
        return _run_at_scale(args)
    args.anchors = args.anchors or 4_000
    import torch

    from ..benchmarks.explorer import benchmark

    check_output_file(args.json, "--json")
    args.repeats = args.repeats or 20
    print(f"anchordiv explorer-bench: G={args.gallery}, N={args.anchors}, d={args.dim}, UMAP {args.umap_points} "
          f"points, CPU, {torch.get_num_threads()} torch threads", flush=True)
    results = benchmark(gallery_size=args.gallery, n_anchors=args.anchors, dim=args.dim, umap_points=args.umap_points,
                        repeats=args.repeats)
    write_json(args.json, results)
    return 0


def _run_map(args: argparse.Namespace) -> int:
    from ..benchmarks.map_scale import map_scale_figures, map_scale_lines

    check_output_file(args.json, "--json")
    anchors = args.anchors or 1_644
    print(f"anchordiv explorer-bench --map {args.map_points}: a map of {args.map_points:,} random unit rows, d = "
          f"{args.dim}, A = {anchors:,} and B = 7 random anchors, softmax at scale 10, laid out as the page does",
          flush=True)
    figures = map_scale_figures(points=args.map_points, dim=args.dim, n_anchors=anchors)
    for line in map_scale_lines(figures):
        print(line, flush=True)
    write_json(args.json, figures)
    return 0


def _run_at_scale(args: argparse.Namespace) -> int:
    from ..benchmarks.new_query import MEMORY_SIZES, OBJECT_ANCHORS, STORE_ROWS, NewQueryConfig, figure_lines, \
        new_query_benchmark

    check_output_file(args.json, "--json")
    config = NewQueryConfig(sizes=tuple(MEMORY_SIZES if args.sizes is None else args.sizes),
                            store_rows=STORE_ROWS if args.store_rows is None else args.store_rows, dim=args.dim,
                            anchors=args.anchors or OBJECT_ANCHORS, queries=args.repeats or 5,
                            store_dir=args.store_dir, users=16 if args.users is None else args.users)
    print(f"anchordiv explorer-bench --scale: a new query's p path (ExplorerGeometry.p_path: 101 steps, k = 10, "
          f"calibrated) with A = {config.anchors:,} and B = 7 random anchors, softmax at scale 10, d = {config.dim}, "
          f"the median of {config.queries} new queries; torch at one thread as the explorer's server runs it",
          flush=True)
    figures = new_query_benchmark(config)
    for line in figure_lines(figures):
        print(line, flush=True)
    write_json(args.json, figures)
    return 0


def _run_in_browser(args: argparse.Namespace) -> int:
    from ..benchmarks.browser import browser_benchmark, check_browser
    from ..benchmarks.browser_sessions import isolation_benchmark, sessions_benchmark

    _at_most_one((("--isolation", args.isolation), ("--sessions", args.sessions is not None),
                  ("--class", args.class_size is not None)))
    check_output_file(args.json, "--json")
    check_browser()  # before the servers start: a missing browser is a one-line error naming what to install
    if args.minutes is not None and args.class_size is None:
        raise ValueError("--minutes is how long the --class measurement runs: add --class N")
    if args.class_size is not None:
        from ..benchmarks.classroom import class_benchmark

        args.minutes = 4.0 if args.minutes is None else args.minutes
        print(f"anchordiv explorer-bench --browser --class {args.class_size}: a class of {args.class_size} "
              f"students on one explorer server for {args.minutes:g} minutes, in headless Chromium", flush=True)
        results = class_benchmark(args.class_size, minutes=args.minutes, repeats=args.repeats or 5,
                                  split=args.gallery_split, limit=args.gallery_limit)
        write_json(args.json, results)
        return 0
    if args.isolation:
        print("anchordiv explorer-bench --browser --isolation: one session's p step while another draws the "
              "costliest Compare figure a link may ask for, in headless Chromium", flush=True)
        bench = isolation_benchmark
    elif args.sessions is not None:
        print(f"anchordiv explorer-bench --browser --sessions {args.sessions}: {args.sessions} browser sessions "
              "moving p at once, each its own Streamlit session, the explorer against app/reference_grid.py in "
              "headless Chromium (each step until its own grid changes and its page is at rest)", flush=True)
        bench = partial(sessions_benchmark, args.sessions)
    else:
        print("anchordiv explorer-bench --browser: the explorer against app/reference_grid.py in headless Chromium, "
              "with the server's CPU per p step by stage", flush=True)
        bench = browser_benchmark
    results = bench(repeats=args.repeats or 5, split=args.gallery_split, limit=args.gallery_limit)
    write_json(args.json, results)
    return 0
