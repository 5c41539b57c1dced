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
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=2))
        print(f"wrote {path}")
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
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except ValueError as error:
        print(f"anchordiv {args.command}: {error}", file=sys.stderr)
        return 2
