"""``embed --engine ray``: encoder actors on a small local Ray instance write the store the local
engine writes, either engine resumes the other's build, and a SIGKILLed run (Ray workers and all)
resumes to the clean store. Slow (Ray and its actor processes start here), so few tests."""
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import STORE_IMAGES, STORE_NOT_IMAGES, STORE_SHARD_ROWS, make_store_folder

from anchordiv.cli import main
from anchordiv.embeddings import embed_folder_to_store
from anchordiv.encoders import load_encoder
from anchordiv.ray_embed import embed_folder_to_store_ray
from anchordiv.store import MANIFEST, PLAN_FILE, GalleryStore

pytestmark = pytest.mark.slow

BATCH = 3  # smaller than a shard, so batches straddle shards
# The CLI, slowed after its first shard so that the test can kill it mid-run at a known point.
SLOW_CLI = """
import sys, time
from anchordiv.cli import main
from anchordiv.store import StoreWriter

write_shard = StoreWriter.write_shard

def write_then_wait(self, *args):
    write_shard(self, *args)
    time.sleep(120)

StoreWriter.write_shard = write_then_wait
sys.exit(main(sys.argv[1:]))
"""


def local_store(folder: Path, out: Path, **options) -> GalleryStore:
    return embed_folder_to_store(folder, load_encoder("builtin", device="cpu"), out, shard_rows=STORE_SHARD_ROWS,
                                 batch_size=BATCH, **options)


def assert_same_store(store: GalleryStore, expected: GalleryStore) -> None:
    assert GalleryStore.open(store.directory, verify=True).verify() == []
    np.testing.assert_array_equal(store.ids, expected.ids)
    np.testing.assert_allclose(store.rows(np.arange(len(store))).numpy(),
                               expected.rows(np.arange(len(expected))).numpy(), atol=1e-3)
    assert store.skipped == expected.skipped and store.labels.equals(expected.labels)
    # Same plan, same key: this is what lets either engine resume the other's build.
    assert (store.directory / PLAN_FILE).read_bytes() == (expected.directory / PLAN_FILE).read_bytes()


def session_processes(session: int) -> list[int]:
    """The processes still in ``session``: the killed CLI's, its Ray instance's and their workers'
    (Ray workers set their own process group but stay in the session)."""
    found = subprocess.run(["pgrep", "-s", str(session)], capture_output=True, text=True).stdout.split()
    return [int(pid) for pid in found]


def test_ray_engine_writes_the_local_store_and_either_engine_resumes_the_other(ray_instance, tmp_path):
    folder = make_store_folder(tmp_path / "images")
    labels = tmp_path / "labels.csv"
    pd.DataFrame({"path": STORE_IMAGES, "style": [f"s{index % 3}" for index in range(len(STORE_IMAGES))]}
                 ).to_csv(labels, index=False)
    expected = local_store(folder, tmp_path / "local", labels_csv=labels)
    store = embed_folder_to_store_ray(folder, "builtin", tmp_path / "ray", labels_csv=labels,
                                      shard_rows=STORE_SHARD_ROWS, batch_size=BATCH, workers=2)
    assert_same_store(store, expected)
    assert [path for path, _ in store.skipped] == STORE_NOT_IMAGES and len(store) == len(STORE_IMAGES)
    assert store.build_report.embedded == list(range(6)) and list(store.labels["style"])[:3] == ["s0", "s1", "s2"]
    # Shard 2 of the Ray build lost (killed between shard and record): the local engine redoes only it.
    (tmp_path / "ray" / "shard-00002.json").unlink()
    resumed = local_store(folder, tmp_path / "ray", labels_csv=labels)
    assert resumed.build_report.embedded == [2] and resumed.build_report.reused == 5
    assert_same_store(resumed, expected)


def test_sigkilled_ray_run_resumes_to_the_clean_store_and_leaves_no_process(ray_instance, tmp_path, capsys):
    folder, out = make_store_folder(tmp_path / "images"), tmp_path / "store"
    command = ["embed", str(folder), "--encoder", "builtin", "--out", str(out), "--shard-rows", str(STORE_SHARD_ROWS),
               "--batch-size", str(BATCH), "--engine", "ray", "--workers", "1"]
    # Its own local Ray instance (not this process's), so that the kill takes a whole instance down.
    environment = {name: value for name, value in os.environ.items() if name != "RAY_ADDRESS"}
    log = tmp_path / "killed-run.log"  # a file, not a pipe, which a chatty run could fill and block on
    with open(log, "w") as handle:
        run = subprocess.Popen([sys.executable, "-c", SLOW_CLI, *command], env=environment, start_new_session=True,
                               stdout=handle, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while not (out / "shard-00000.json").exists():
            assert run.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the Ray run wrote no shard within 120 s"
            time.sleep(0.05)
        os.killpg(run.pid, signal.SIGKILL)  # the CLI, its raylet and GCS; the workers die with the raylet
        assert run.wait(timeout=30) == -signal.SIGKILL
        deadline = time.monotonic() + 30
        while session_processes(run.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert session_processes(run.pid) == [], "the killed run left Ray processes behind"
    finally:
        for pid in session_processes(run.pid):  # only this run's processes, and only if the test failed
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert sorted(path.name for path in out.glob("shard-*.json")) == ["shard-00000.json"]
    assert not (out / MANIFEST).exists()

    assert main(command) == 0  # on this process's Ray instance
    assert "1 shard(s) kept from an earlier run, 5 embedded now" in capsys.readouterr().out
    store = GalleryStore.open(out)
    assert_same_store(store, local_store(folder, tmp_path / "clean"))
    np.testing.assert_array_equal(store.ids, np.arange(len(STORE_IMAGES)))  # none missing, none twice


def test_the_embed_command_refuses_ray_options_that_do_not_fit(tmp_path, capsys):
    folder = make_store_folder(tmp_path / "images")
    base = ["embed", str(folder), "--encoder", "builtin"]
    assert main([*base, "--out", str(tmp_path / "g.npz"), "--engine", "ray"]) == 2
    assert "is an .npz file; give --out a folder path" in capsys.readouterr().err
    assert main([*base, "--out", str(tmp_path / "s"), "--address", "auto"]) == 2
    assert "add --engine ray, or drop --address" in capsys.readouterr().err
    assert main([*base, "--out", str(tmp_path / "s"), "--engine", "ray", "--device", "cpu"]) == 2
    assert "drop --device" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()
