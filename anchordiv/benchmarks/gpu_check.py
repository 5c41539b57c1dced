"""``scripts/gpu-check``: what a GPU does for anchordiv, measured in one command and judged against
the CPU.

Five steps, each printing its figures as it goes and adding rows to one Markdown table (written to
``OUT/gpu-check.md``, with every figure in ``OUT/gpu-check.json``):

1. the device, and its measured bf16 and fp32 matmul throughput;
2. Table 4 at the paper's size (:meth:`~.search.BenchConfig.paper`: Q = 10,000, G = 50,000,
   N = 2^10 ... 2^17; cosine, softmax and Gaussian; fit + preprocessing + retrieval; 3 warm-ups,
   the median of 10), each row with its ratio to its FLOP bound; for every N the device's top-10 of
   64 queries is compared with the CPU's;
3. the p path (101 steps, top-10) of one query over a synthetic float16 store of 10^6 rows
   (:mod:`.scale`), against reading the store's bytes at the device's bandwidth measured in the same
   run (target: within 10x on a GPU), compared with the CPU's path;
4. the explorer on the device: the built-in world's geometry (objects against styles), its p path
   and search compared with the CPU's, and the real explorer page (Streamlit's ``AppTest``) started
   with ``--device``, timed for its first page and for a new query;
5. the built-in encoder's images per second on the device and on the CPU.

Rankings are compared up to ties (:mod:`anchordiv.rankings`) with each comparison's rounding bound
stated beside it; any mismatch, or a step that fails, makes the exit status 1. ``--dry-run`` runs
the same sequence on the CPU at a small size (under a minute), so the script is known to work
before a GPU's minutes are spent on it.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..device import describe_device, resolve_device
from ..rankings import ranking_differences
from .search import BenchConfig, clustered_unit_vectors, matmul_throughput, run_benchmark, time_on

FLOAT32_UNIT = 2.0**-24  # float32's unit round-off
CHECK_QUERIES, K = 64, 10
TABLE4_METHODS = ("cosine", "softmax", "gaussian")


@dataclass(frozen=True)
class CheckSize:
    """The sizes of one run: Table 4's (``table4``), the store's rows and dimension, the world's
    image limit (``None``: all of it), the square matmul's side, the timing repeats and the images
    encoded."""

    table4: BenchConfig
    store_rows: int
    store_dim: int
    world_limit: int | None
    matmul_side: int
    repeats: int
    images: int


def full_size() -> CheckSize:
    return CheckSize(BenchConfig.paper(), 10**6, 512, None, 8192, 5, 2048)


def dry_size() -> CheckSize:
    table4 = BenchConfig(queries=200, gallery=1500, dim=64, anchors=(64, 256), repeats=3, warmup=1,
                         statistic="median")
    return CheckSize(table4, 20_000, 64, 400, 512, 2, 64)


class Report:
    """The Markdown table's rows, the figures and the mismatches found."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str]] = []
        self.figures: dict[str, Any] = {}
        self.problems: list[str] = []

    def add(self, check: str, figure: str, note: str = "") -> None:
        self.rows.append((check, figure, note))
        print(f"gpu-check: {check}: {figure}{f' ({note})' if note else ''}", flush=True)

    def compare(self, what: str, got: tuple[Any, Any], expected: tuple[Any, Any], **tolerance: Any) -> None:
        differences = ranking_differences(got, expected, **tolerance)
        if differences:
            self.problems.append(f"{what}: {len(differences)} rows differ from the CPU's; first: {differences[0]}")
            print(f"gpu-check: MISMATCH {self.problems[-1]}", flush=True)

    def markdown(self, device: str, date: str) -> str:
        lines = [f"GPU check, {date}, on {device} (`scripts/gpu-check`)", "", "| check | figure | note |",
                 "|---|---|---|"]
        lines += [f"| {check} | {figure} | {note} |" for check, figure, note in self.rows]
        verdict = "no mismatch against the CPU" if not self.problems else "; ".join(self.problems)
        return "\n".join([*lines, "", f"Rankings against the CPU's: {verdict}.", ""])


def check_device(report: Report, device: torch.device, size: CheckSize, scratch: Path) -> None:
    side = size.matmul_side
    report.figures["device"] = describe_device(device)
    report.add("device", f"{describe_device(device)}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    for dtype in (torch.bfloat16, torch.float32):
        rate = matmul_throughput(device, dtype, shape=(side, side, side), repeats=10) / 1e12
        report.figures[f"matmul_{dtype}_tflops"] = rate
        report.add(f"matmul {str(dtype).removeprefix('torch.')} {side}^3", f"{rate:.1f} TFLOP/s")


def check_table4(report: Report, device: torch.device, size: CheckSize, scratch: Path) -> None:
    config = BenchConfig(**{**vars(size.table4), "methods": TABLE4_METHODS, "device": str(device)}).validate()
    result = run_benchmark(config)
    report.figures["table4"] = result
    for row in result["rows"]:
        report.add(f"Table 4 {row['method']} N=2^{int(np.log2(row['anchors']))}", f"{row['seconds']:.3f} s",
                   f"x{row['vs_cosine']:.2f} cosine, x{row['vs_flop_bound']:.2f} FLOP bound, "
                   f"x{row['vs_shape_bound']:.2f} at its shapes")
    rows = result["rows"]
    gaussian = max(row["vs_cosine"] for row in rows if row["method"] == "gaussian")
    worst = max(rows, key=lambda row: row["vs_flop_bound"])
    report.add("Table 4 Gaussian / cosine, worst N", f"x{gaussian:.2f}", "target <= 1.5")
    report.add("Table 4 worst ratio to its FLOP bound", f"x{worst['vs_flop_bound']:.2f}",
               f"{worst['method']} N={worst['anchors']}; target <= 1.5")
    compare_table4(report, config, device)


def compare_table4(report: Report, config: BenchConfig, device: torch.device) -> None:
    """For each N, the device's top-10 of the first queries against the CPU's top-20, data made as
    :func:`run_benchmark` makes it (same seed)."""
    from ..models.registry import anchor_model_kind
    from ..search import AnchorIndex, CosineIndex

    generator = torch.Generator().manual_seed(config.seed)
    centres = torch.randn(64, config.dim, generator=generator)
    cpu = torch.device("cpu")
    queries = clustered_unit_vectors(config.queries, config.dim, centres, 0.6, generator, cpu)[:CHECK_QUERIES]
    gallery = clustered_unit_vectors(config.gallery, config.dim, centres, 0.6, generator, cpu)
    # float32 inner products of length d: |error| <= 2 d u |eta| |g| with |eta| = s, |g| <= 1 (cosine: s = 1).
    bound = 2 * config.dim * FLOAT32_UNIT
    report.compare("Table 4 cosine", CosineIndex(gallery, device=device).search(queries, K),
                   CosineIndex(gallery, device=cpu).search(queries, 2 * K), atol=bound, higher_is_closer=True)
    for n_anchors in config.anchors:
        anchors = clustered_unit_vectors(n_anchors, config.dim, centres, 1.0, generator, cpu)
        for kind in ("softmax", "gaussian"):
            model, _ = anchor_model_kind(kind).fit(anchors, config.scale)
            got = AnchorIndex(model, gallery, device=device).search(queries, K)
            expected = AnchorIndex(model, gallery, device=cpu).search(queries, 2 * K)
            report.compare(f"Table 4 {kind} N={n_anchors}", got, expected, atol=bound * config.scale, rtol=1e-5)


def check_store_path(report: Report, device: torch.device, size: CheckSize, scratch: Path) -> None:
    from ..sharded import ShardedAnchorIndex
    from ..slider import query_path
    from .scale import ScaleConfig, build_synthetic_store, synthetic_mixture

    config = ScaleConfig(gallery=size.store_rows, dim=size.store_dim, engines=("local",)).validate()
    generator = torch.Generator().manual_seed(config.seed)
    centres = torch.randn(64, config.dim, generator=generator)
    started = time.perf_counter()
    store = build_synthetic_store(config, scratch, centres, generator)
    mixture = synthetic_mixture(config, store, centres, generator)
    built = time.perf_counter() - started
    report.add(f"store of {len(store):,} float16 rows, d={store.dim}", f"built in {built:.1f} s")
    query_id = len(store) // 3
    query = store.rows([query_id])[0].numpy()
    paths = {}
    store_bytes = len(store) * store.dim * np.dtype(store.dtype).itemsize
    for where in dict.fromkeys((device, torch.device("cpu"))):
        started = time.perf_counter()
        index = ShardedAnchorIndex(mixture, store, device=where)
        build = time.perf_counter() - started
        path = lambda: query_path(index, query, K, query_id)  # noqa: E731 (the explorer's route)
        paths[where.type] = path()
        seconds = time_on(where, path, size.repeats, statistic="median")
        floor = store_bytes / device_bandwidth(where, store_bytes, size.repeats)
        report.figures[f"store_path_{where.type}_seconds"] = seconds
        report.figures[f"store_path_{where.type}_floor_seconds"] = floor
        report.add(f"store p path, 101 steps, on {where.type}", f"{seconds * 1e3:.1f} ms",
                   f"{seconds / floor:.1f} x reading the store's {store_bytes / 1e9:.2f} GB at the bandwidth "
                   f"measured here ({floor * 1e3:.2f} ms){'; target <= 10 x' if where.type == 'cuda' else ''}; "
                   f"rows kept: {index._engine.scanner.keeps_rows}; index built in {build:.1f} s; "
                   f"certified {paths[where.type].certified.mean():.0%}")
    # Each step's scores mix two components' float32 terms (a gradient product and a kappa each, at
    # scale s = 100): four times compare_table4's bound.
    compare_paths(report, "store p path", paths[device.type], paths["cpu"], 4 * 2 * store.dim * FLOAT32_UNIT * 100.0)


def device_bandwidth(device: torch.device, n_bytes: int, repeats: int) -> float:
    """Bytes per second at which ``device`` reads ``n_bytes`` held in its memory (a float32 sum, the
    best of ``repeats``): the floor a pass over that many bytes can reach."""
    values = torch.ones(max(1, n_bytes // 4), dtype=torch.float32, device=device)
    return values.numel() * 4 / time_on(device, lambda: values.sum(), repeats)


def compare_paths(report: Report, what: str, got: Any, expected: Any, atol: float) -> None:
    """Two :class:`~anchordiv.slider.SliderPath` of one query, step by step, up to ties."""
    for step in range(len(expected.p)):
        report.compare(f"{what} step {step}", (got.values[step], got.ids[step]),
                       (expected.values[step], expected.ids[step]), atol=atol, rtol=1e-5)


def check_explorer(report: Report, device: torch.device, size: CheckSize, scratch: Path) -> None:
    """The built-in world's geometry as the explorer builds it (objects A against styles B), on the
    device and on the CPU (each calibrated on its own: no calibration cache), then the explorer's
    page itself."""
    from .. import explorer as ex
    from ..encoders import load_encoder
    from ..gallery import world_gallery
    from ..prompts import encode_anchors

    encoder = load_encoder("builtin", device=device)
    gallery = world_gallery(encoder, limit=size.world_limit)
    presets = ex.anchor_presets(gallery)
    texts = [presets["Gallery object names"], presets["Gallery styles"]]
    anchors = [encode_anchors(encoder, set_texts) for set_texts in texts]
    query_ids = np.random.default_rng(0).choice(len(gallery), 3, replace=False)
    paths = {}
    for where in dict.fromkeys((device, torch.device("cpu"))):
        started = time.perf_counter()
        geometry = ex.ExplorerGeometry(gallery.embeddings, anchors, texts, ex.GeometrySpec(), device=where)
        build = time.perf_counter() - started
        query = gallery.embeddings[query_ids[0]].numpy()
        paths[where.type] = geometry.p_path(query, K, int(query_ids[0]), "calibrated")
        seconds = time_on(where, lambda: [geometry.p_path(gallery.embeddings[i].numpy(), K, int(i), "calibrated")
                                          for i in query_ids], size.repeats, statistic="median") / len(query_ids)
        search = time_on(where, lambda: ex.search_one(geometry.index_at(0.5), query, K, int(query_ids[0])),
                         size.repeats, statistic="median")
        report.add(f"explorer on {where.type}: {len(gallery):,} images", f"p path {seconds * 1e3:.1f} ms",
                   f"geometry fitted, calibrated and indexed in {build:.2f} s; one search {search * 1e3:.1f} ms")
    # The calibrated weights come from each device's own calibration; with the scale 10 of the
    # explorer and d = 512, float32 terms differ by far less than this.
    compare_paths(report, "explorer p path", paths[device.type], paths["cpu"], 1e-3)
    check_explorer_page(report, device, size, scratch)


def check_explorer_page(report: Report, device: torch.device, size: CheckSize, scratch: Path) -> None:
    """The explorer's page (Streamlit's AppTest, the real script) started with ``--device``: its
    first page and a random new query, timed; no exception, and the sidebar names the device."""
    from streamlit.testing.v1 import AppTest

    from ..resources import app_dir

    script = app_dir() / "streamlit_app.py"
    saved = sys.argv
    sys.argv = [str(script), "--device", str(device)]
    if size.world_limit is not None:
        os.environ["ANCHORDIV_APP_GALLERY_LIMIT"] = str(size.world_limit)
    try:
        app = AppTest.from_file(str(script), default_timeout=600)
        started = time.perf_counter()
        app.run()
        first = time.perf_counter() - started
        started = time.perf_counter()
        app.button(key="query_random").click().run()
        again = time.perf_counter() - started
    finally:
        sys.argv = saved
    if app.exception:
        report.problems.append(f"the explorer page raised: {app.exception[0].message}")
    captions = " ".join(caption.value for caption in app.sidebar.caption)
    named = f"ranking and maps on {device.type.upper()}"  # a CPU's thread count is the server's own
    if named not in captions:
        report.problems.append(f"the explorer's sidebar does not say {named!r}: {captions[:300]!r}")
    report.add(f"explorer page with --device {device}", f"first page {first:.1f} s, new query {again:.2f} s",
               "AppTest, the real script")


def check_encoding(report: Report, device: torch.device, size: CheckSize, scratch: Path) -> None:
    """The built-in encoder on the world's first images, on the device and on the CPU (model loaded
    first; images drawn before the clock starts)."""
    from PIL import Image

    from ..datasets.emoji import open_emoji_world
    from ..encoders import load_encoder

    world = open_emoji_world("all")  # draws just the images asked for
    images = [Image.fromarray(world.image(i), "RGB") for i in range(min(size.images, len(world)))]
    for where in dict.fromkeys((device, torch.device("cpu"))):
        encoder = load_encoder("builtin", device=where)
        seconds = time_on(where, lambda: encoder.encode_images(images), 1)
        report.add(f"built-in encoder on {where.type}", f"{len(images) / seconds:,.0f} images/s",
                   f"{len(images):,} images")


STEPS = (("device", check_device), ("table4", check_table4), ("store", check_store_path),
         ("explorer", check_explorer), ("encoding", check_encoding))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/gpu-check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="the whole sequence on the CPU at a small size")
    parser.add_argument("--device", help="where to check (default: cuda; with --dry-run, cpu)")
    parser.add_argument("--out", default="gpu-check-out", help="folder for gpu-check.md and gpu-check.json")
    parser.add_argument("--steps", nargs="+", choices=[name for name, _ in STEPS], metavar="STEP",
                        help=f"only these steps, e.g. to measure one again (default: all of {[n for n, _ in STEPS]})")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="gpu-check: %(message)s")
    logging.getLogger("streamlit").setLevel(logging.WARNING)  # AppTest's runs log every media file
    device = resolve_device(args.device or ("cpu" if args.dry_run else "cuda"), "--device")
    size = dry_size() if args.dry_run else full_size()
    report, out = Report(), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as scratch:
        for name, step in STEPS:
            if args.steps and name not in args.steps:
                continue
            print(f"gpu-check: -- {name} ({time.perf_counter() - started:.0f} s in)", flush=True)
            try:
                step(report, device, size, Path(scratch))
            except Exception as error:  # a failed step is reported and the others still run
                traceback.print_exc()
                report.problems.append(f"{name} failed: {type(error).__name__}: {error}")
    report.add("the whole check", f"{time.perf_counter() - started:.0f} s", "--dry-run" if args.dry_run else "")
    (out / "gpu-check.md").write_text(report.markdown(describe_device(device), time.strftime("%Y-%m-%d")))
    (out / "gpu-check.json").write_text(json.dumps({"figures": report.figures, "problems": report.problems},
                                                   indent=1, default=str))
    print((out / "gpu-check.md").read_text(), flush=True)
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
