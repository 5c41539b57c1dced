"""The benchmark command runs end to end at toy size; its naive reference is a true reference."""
import json
import subprocess
import sys

import numpy as np
import pytest
import torch

import anchordiv as ad
from anchordiv.benchmarks.search import BenchConfig, method_flops, naive_softmax_search
from anchordiv.cli import main
from rankings import assert_same_ranking


def test_naive_reference_returns_what_the_index_returns(data):
    anchors, gallery, queries = (torch.tensor(data[key]) for key in ("anchors", "gallery", "queries"))
    found = naive_softmax_search(anchors, gallery, queries, scale=12.0, k=6)
    expected = ad.AnchorIndex(ad.EmpiricalAnchors(scale=12.0).fit(anchors), gallery).search(queries, 12)
    # float64 data: the naive softmax route and the index's inner products agree to round-off.
    assert_same_ranking(found, expected, rtol=1e-9, atol=1e-12)


def test_flop_counts_follow_the_cost_model():
    q, g, n, d = 10, 100, 64, 8
    assert method_flops("cosine", q, g, n, d, 4, 0) == (2 * q * g * d, 0)
    assert method_flops("softmax", q, g, n, d, 4, 0)[0] == 2 * (g + 2 * q) * n * d + 2 * q * g * d
    assert method_flops("gaussian", q, g, n, d, 4, 0)[0] == 2 * n * d * d + 2 * (g + q) * d * d + 2 * q * g * d
    assert method_flops("gmm", q, g, n, d, 4, 9)[1] > 0


def test_paper_size_is_table_4():
    paper = BenchConfig.paper()
    assert (paper.queries, paper.gallery, paper.anchors[0], paper.anchors[-1]) == (10000, 50000, 2**10, 2**17)


def test_bench_command_prints_and_writes_every_method(tmp_path):
    out = tmp_path / "bench.json"
    completed = subprocess.run(
        [sys.executable, "-m", "anchordiv", "bench", "--queries", "40", "--gallery", "300", "--dim", "16",
         "--anchors", "32", "64", "--repeats", "1", "--warmup", "0", "--naive-queries", "10", "--json", str(out)],
        capture_output=True, text=True, timeout=300, check=True,
    )
    assert "matmul throughput" in completed.stdout and "softmax speed-up over naive at N=64" in completed.stdout
    result = json.loads(out.read_text())
    methods = {(row["method"], row["anchors"]) for row in result["rows"]}
    assert methods == {(m, n) for m in ("cosine", "softmax", "gaussian", "gmm", "naive") for n in (32, 64)}
    assert all(row["seconds"] > 0 and row["vs_flop_bound"] > 0 for row in result["rows"])


def test_bench_command_reports_bad_options_without_a_traceback(capsys):
    code = main(["bench", "--queries", "4", "--gallery", "5", "--dim", "8", "--anchors", "16", "--k", "10"])
    assert code == 2
    assert "anchordiv bench: --k=10 must be an integer from 1 to 5 (the gallery size, --gallery)" in capsys.readouterr().err


def test_config_takes_numpy_integers_and_stores_python_ones():
    config = BenchConfig(queries=np.int64(40), gallery=np.int32(300), dim=np.int64(16), anchors=np.array([32, 64]),
                         k=np.int64(5), repeats=np.int64(1), warmup=np.int64(0)).validate()
    assert config.anchors == (32, 64) and all(type(n) is int for n in (config.queries, config.gallery, *config.anchors))


def test_sizes_that_cannot_fit_in_memory_are_refused_with_an_estimate(monkeypatch):
    config = BenchConfig(queries=100, gallery=20000, dim=64, anchors=(1024,), device="cpu")
    parts = config.memory_estimate()
    assert {"queries and gallery", "anchors", "blocked score matrices", "GMM EM", "naive arrays"} <= set(parts)
    assert parts["naive arrays"] >= 3 * 20000 * 1024 * 4  # the naive method's (G, N) arrays
    monkeypatch.setattr("anchordiv.benchmarks.search.available_memory", lambda device: sum(parts.values()) - 1)
    with pytest.raises(ValueError, match=r"needs about [\d.]+ GiB of memory \(queries and gallery .*\) but cpu has "
                                         r"[\d.]+ GiB available; lower queries, gallery, dim, anchors"):
        config.validate()
    monkeypatch.setattr("anchordiv.benchmarks.search.available_memory", lambda device: sum(parts.values()))
    config.validate()


SCALE_LINES = ("store build", "store size on disk", "mixture calibration") + tuple(f"[local] {name}" for name in (
    "index build", "resident memory after building the index", "exact mat-vec pass", "new-query pass",
    "new-query pass / mat-vec pass", "slider move p50", "slider move p95", "certified rate", "exact search",
    "peak resident memory searching"))


def test_synthetic_store_bench_prints_every_figure_and_writes_them(tmp_path, capsys):
    out = tmp_path / "scale.json"
    code = main(["bench", "--scale", "20000", "--synthetic", "--dim", "32", "--moves", "50", "--shard-rows", "7000",
                 "--store-dir", str(tmp_path / "store"), "--json", str(out), "--engine", "local"])
    assert code == 0
    printed = capsys.readouterr().out.splitlines()
    names = {line.split(":")[0] for line in printed}
    assert set(SCALE_LINES) <= names
    result = json.loads(out.read_text())
    assert result["config"]["gallery"] == 20000 and result["parametrisation"] == "calibrated"
    assert "ray" not in result and result["config"]["engines"] == ["local"]
    for key in ("store_build_seconds", "store_bytes_on_disk", "calibration_seconds"):
        assert result[key] > 0
    local = result["local"]
    for key in ("index_build_seconds", "reference_pass_seconds", "new_query_pass_seconds", "new_query_vs_reference",
                "slider_move_p50_ms", "slider_move_p95_ms", "exact_search_seconds", "peak_rss_total_bytes_searching"):
        assert local[key] > 0
    assert 0.0 <= local["certified_rate"] <= 1.0
    assert result["store_bytes_on_disk"] >= 20000 * 32 * 2  # float16 rows
    assert len(list((tmp_path / "store" / "store").glob("shard-*.npy"))) == 3


def test_synthetic_bench_refuses_what_it_cannot_do(capsys, monkeypatch):
    assert main(["bench", "--synthetic", "--dim", "8"]) == 2
    assert "--synthetic needs --scale N, the gallery's row count" in capsys.readouterr().err
    assert main(["bench", "--moves", "5"]) == 2
    assert "--moves belongs to the store benchmark; add --synthetic" in capsys.readouterr().err
    assert main(["bench", "--engine", "ray"]) == 2
    assert "--engine belongs to the store benchmark" in capsys.readouterr().err
    for option in (["--heldout"], ["--seed", "3"]):
        assert main(["bench", *option]) == 2
        assert f"{option[0]} belongs to the learned-geometry benchmark; add --feedback" in capsys.readouterr().err
    monkeypatch.setattr("anchordiv.benchmarks.scale.available_memory", lambda device: 2**20)
    assert main(["bench", "--scale", "5000", "--synthetic", "--dim", "8"]) == 2
    assert "this benchmark needs about" in capsys.readouterr().err


def test_new_query_at_scale_prints_a_line_per_gallery_and_keeps_its_store(tmp_path, capsys):
    """``explorer-bench --scale`` at toy sizes: a line per gallery in memory and one for the store, the
    path against one pass and against the bandwidth reference; the store kept in --store-dir is
    reused by a second run of the same size and refused for another."""
    store_dir = tmp_path / "kept"
    argv = ["explorer-bench", "--scale", "--sizes", "1500", "3000", "--store-rows", "4000", "--dim", "16",
            "--anchors", "30", "--repeats", "2", "--users", "3", "--store-dir", str(store_dir),
            "--json", str(tmp_path / "f.json")]
    assert main(argv) == 0
    lines = capsys.readouterr().out.strip().splitlines()[1:-1]  # the heading, the figures, "wrote ..."
    assert [line.split(",")[0] for line in lines] == ["in memory", "in memory", "in memory", "store", "store"], lines
    assert "3 new queries at once" in lines[2] and "3 new queries at once" in lines[4]
    assert "G = 1,500 x 16 float32" in lines[0] and "4,000 x 16 float16 (rows host)" in lines[3]
    for line in (lines[0], lines[1], lines[3]):
        assert " x one " in line and "GB/s" in line and "100% of steps certified" in line, line
    figures = json.loads((tmp_path / "f.json").read_text())
    assert [entry["rows"] for entry in figures["memory"]] == [1500, 3000] and figures["threads"] == 1
    assert all(entry["path_s"] > 0 and entry["pass_s"] > 0 and entry["bandwidth"] > 0 for entry in figures["memory"])
    built = (store_dir / "store" / "manifest.json").stat().st_mtime_ns
    assert main(argv[:2] + ["--sizes", "--store-rows", "4000", "--dim", "16", "--anchors", "30", "--repeats", "2",
                            "--users", "0", "--store-dir", str(store_dir)]) == 0
    assert (store_dir / "store" / "manifest.json").stat().st_mtime_ns == built
    assert capsys.readouterr().out.strip().splitlines()[1].startswith("store, 4,000 x 16")
    assert main(argv[:2] + ["--sizes", "--store-rows", "5000", "--dim", "16", "--store-dir", str(store_dir)]) == 2
    assert "holds 4,000 x 16, not 5,000 x 16; give another --store-dir" in capsys.readouterr().err
    assert main(["explorer-bench", "--sizes", "10"]) == 2
    assert "--sizes sizes the --scale measurement: add --scale" in capsys.readouterr().err


def test_the_explorer_bench_measurements_are_one_at_a_time(capsys):
    assert main(["explorer-bench", "--scale", "--map", "1000"]) == 2
    assert "--scale and --map are separate measurements: give one of them" in capsys.readouterr().err
    assert main(["explorer-bench", "--map", "10"]) == 2
    assert "--map" in capsys.readouterr().err
