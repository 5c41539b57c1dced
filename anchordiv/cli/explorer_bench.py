"""``anchordiv explorer-bench``: the explorer's interactive timings (move p, new query, UMAP), or
with ``--browser`` the Streamlit explorer itself timed in headless Chromium (with ``--sessions N``,
N sessions moving p at once; with ``--isolation``, one session's p step beside the heaviest request)."""
from __future__ import annotations

import argparse
from functools import partial

from .checks import check_output_file
from .options import add_json_option, add_world_options, integer
from .output import write_json


def add_parser(commands) -> argparse.ArgumentParser:
    bench = commands.add_parser("explorer-bench", help="the explorer's interactive timings (move p, new query, UMAP)")
    bench.add_argument("--gallery", type=integer(1, 10**7), default=20_000, help="gallery size G (default 20,000)")
    bench.add_argument("--anchors", type=integer(2, 10**6), default=4_000, help="anchors in set A (default 4,000)")
    bench.add_argument("--dim", type=integer(1, 65536), default=256, help="embedding dimension (default 256, the built-in model's)")
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
    add_world_options(bench, "--gallery-split", "--gallery-limit", shows="the explorer shows", note="with --browser: ")
    add_json_option(bench, "figures")
    bench.set_defaults(handler=run)
    return bench


def run(args: argparse.Namespace) -> int:
    if args.browser:
        return _run_in_browser(args)
    for option, given in (("--isolation", args.isolation), ("--sessions", args.sessions is not None)):
        if given:
            raise ValueError(f"{option} is a browser measurement: add --browser")
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


def _run_in_browser(args: argparse.Namespace) -> int:
    from ..benchmarks.browser import browser_benchmark, check_browser
    from ..benchmarks.browser_sessions import isolation_benchmark, sessions_benchmark

    if args.isolation and args.sessions is not None:
        raise ValueError("--isolation and --sessions are two measurements: give one of them")
    check_output_file(args.json, "--json")
    check_browser()  # before the servers start: a missing browser is a one-line error naming what to install
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
