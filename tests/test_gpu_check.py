"""scripts/gpu-check: its whole sequence runs on the CPU at a small size (--dry-run), writes its table,
and exits 1 on a mismatch against the CPU or a step that fails."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from anchordiv.benchmarks import gpu_check

ROOT = Path(__file__).resolve().parent.parent


def test_the_dry_run_goes_through_every_step_on_the_cpu(tmp_path):
    result = subprocess.run(["sh", str(ROOT / "scripts" / "gpu-check"), "--dry-run", "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHON": sys.executable})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    table = (tmp_path / "gpu-check.md").read_text()
    for check in ("matmul bfloat16", "Table 4 softmax N=2^8", "Table 4 worst ratio to its FLOP bound",
                  "store p path, 101 steps, on cpu", "explorer on cpu", "explorer page with --device cpu"):
        assert f"| {check}" in table, table
    assert "Rankings against the CPU's: no mismatch" in table
    assert (tmp_path / "gpu-check.json").is_file()


def test_a_mismatch_or_a_failed_step_makes_the_exit_status_one(tmp_path, monkeypatch):
    report = gpu_check.Report()
    ranking = (np.array([0.1, 0.2, 0.3]), np.array([4, 5, 6]))
    report.compare("same", ranking, ranking, atol=1e-6)
    assert report.problems == []
    report.compare("swapped", (np.array([0.1, 0.2, 0.3]), np.array([5, 4, 6])), ranking, atol=1e-6)
    assert len(report.problems) == 1 and report.problems[0].startswith("swapped")

    def failing(report, device, size, scratch):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(gpu_check, "STEPS", (("device", gpu_check.check_device), ("broken", failing)))
    assert gpu_check.main(["--dry-run", "--out", str(tmp_path)]) == 1
    table = (tmp_path / "gpu-check.md").read_text()
    assert "| device |" in table and "broken failed: RuntimeError: out of memory" in table
