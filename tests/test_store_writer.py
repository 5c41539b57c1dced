"""The resumable store writer: a folder embedded shard by shard, killed, resumed, damaged and changed."""
import logging
from pathlib import Path

import numpy as np
import pytest
from conftest import STORE_IMAGES as GOOD, STORE_NOT_IMAGES as BAD, STORE_SHARD_ROWS as SHARD_ROWS, make_store_folder

from anchordiv.embeddings import embed_folder_to_store
from anchordiv.images import load_image
from anchordiv.store import MANIFEST, PLAN_FILE, GalleryStore, StorePlan, build_store


class Killed(Exception):
    """Stands in for the run being killed."""


@pytest.fixture
def counted(encoder, monkeypatch):
    """The encoder, counting the images it encodes (``counted.seen``)."""
    real = encoder._encode_image_batch
    seen = []

    def counting(images):
        seen.append(len(images))
        return real(images)

    monkeypatch.setattr(encoder, "_encode_image_batch", counting)
    encoder.seen = seen
    yield encoder
    del encoder.seen


@pytest.fixture
def folder(tmp_path) -> Path:
    return make_store_folder(tmp_path / "images")


def build(folder, encoder, out, **options):
    return embed_folder_to_store(folder, encoder, out, shard_rows=SHARD_ROWS, batch_size=3, **options)


def test_full_run_matches_direct_embedding(folder, counted, tmp_path):
    store = build(folder, counted, tmp_path / "store")
    direct = counted.encode_images([load_image(folder / rel) for rel in GOOD]).numpy()
    reopened = GalleryStore.open(tmp_path / "store", verify=True)
    assert len(reopened) == len(GOOD) and reopened.dim == counted.dim and reopened.encoder == counted.name
    np.testing.assert_allclose(reopened.rows(np.arange(len(GOOD))).numpy(), direct, atol=2e-3)
    np.testing.assert_array_equal(reopened.ids, np.arange(len(GOOD)))
    assert list(reopened.labels["path"]) == GOOD and list(reopened.labels["label"]) == [rel[0] for rel in GOOD]
    assert [path for path, _ in reopened.skipped] == BAD
    assert all("not an image" in reason for _, reason in reopened.skipped)
    # Shard 3 holds only bad files: no shard file, and the rows continue without a gap.
    assert reopened.shard_starts == [0, 4, 8, 12, 16] and not (tmp_path / "store" / "shard-00003.npy").exists()
    assert store.build_report.embedded == list(range(6)) and store.build_report.rebuilt == []


def test_killed_run_resumes_without_re_embedding(folder, counted, tmp_path):
    clean = build(folder, counted, tmp_path / "clean")
    counted.seen.clear()

    def kill_after_two_shards(fraction, text):
        if "shard 2 of" in text:
            raise Killed

    with pytest.raises(Killed):
        build(folder, counted, tmp_path / "store", progress=kill_after_two_shards)
    assert not (tmp_path / "store" / MANIFEST).exists()
    with pytest.raises(ValueError, match="manifest.json is missing"):
        GalleryStore.open(tmp_path / "store")
    assert sum(counted.seen) == 8  # shards 0 and 1
    counted.seen.clear()
    # A kill between a shard and its record leaves a shard without one: it is redone, silently.
    (tmp_path / "store" / "shard-00001.json").unlink()
    messages = []
    store = build(folder, counted, tmp_path / "store", progress=lambda fraction, text: messages.append(text))
    assert sum(counted.seen) == len(GOOD) - 4  # shard 0 kept; 1, 2, 4, 5 embedded
    assert store.build_report.embedded == [1, 2, 3, 4, 5] and store.build_report.reused == 1
    assert not any("damaged" in text for text in messages)
    assert GalleryStore.open(tmp_path / "store", verify=True).verify() == []
    np.testing.assert_allclose(store.rows(np.arange(len(GOOD))).numpy(),
                               clean.rows(np.arange(len(GOOD))).numpy(), atol=1e-3)
    np.testing.assert_array_equal(store.ids, clean.ids)
    assert store.skipped == clean.skipped and store.labels.equals(clean.labels)


def test_finished_store_rerun_embeds_nothing(folder, counted, tmp_path):
    build(folder, counted, tmp_path / "store")
    counted.seen.clear()
    store = build(folder, counted, tmp_path / "store")
    assert counted.seen == [] and store.build_report.reused == 6 and len(store) == len(GOOD)


def test_damaged_shard_is_named_and_rebuilt(folder, counted, tmp_path, caplog):
    clean = build(folder, counted, tmp_path / "store")
    expected = clean.rows(np.arange(len(GOOD))).numpy()
    path = tmp_path / "store" / "shard-00001.npy"
    data = bytearray(path.read_bytes())
    data[-5] ^= 0xFF  # a flipped bit in the rows: the header still opens, only the hash tells
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="shard-00001.npy do.*run the same build again"):
        GalleryStore.open(tmp_path / "store", verify=True)
    counted.seen.clear()
    caplog.set_level(logging.INFO, logger="anchordiv.store")
    messages = []
    store = build(folder, counted, tmp_path / "store", progress=lambda fraction, text: messages.append(text))
    assert any("shard-00001.npy is damaged" in text for text in messages)
    assert "shard-00001.npy is damaged" in caplog.text  # logged at INFO, whoever listens to progress
    assert store.build_report.rebuilt == ["shard-00001.npy"] and store.build_report.embedded == [1]
    assert sum(counted.seen) == SHARD_ROWS
    assert GalleryStore.open(tmp_path / "store", verify=True).verify() == []
    np.testing.assert_allclose(store.rows(np.arange(len(GOOD))).numpy(), expected, atol=1e-3)


def test_missing_shard_of_a_finished_store_is_rebuilt(folder, counted, tmp_path):
    build(folder, counted, tmp_path / "store")
    (tmp_path / "store" / "shard-00004.npy").unlink()
    store = build(folder, counted, tmp_path / "store")
    assert store.build_report.rebuilt == ["shard-00004.npy"] and len(store) == len(GOOD)


def test_changed_folder_or_settings_are_refused_without_overwrite(folder, counted, tmp_path):
    build(folder, counted, tmp_path / "store")
    (folder / "c" / "new.png").write_bytes((folder / "a" / "0.png").read_bytes())
    with pytest.raises(ValueError, match=r"another plan \(1 item\(s\) new \(first: 'c/new.png'\)\).*overwrite=True"):
        build(folder, counted, tmp_path / "store")
    with pytest.raises(ValueError, match=r"shard_rows 4 there, 5 now"):
        embed_folder_to_store(folder, counted, tmp_path / "store", shard_rows=5)
    assert GalleryStore.open(tmp_path / "store", verify=True).verify() == []  # the refusals changed nothing
    store = build(folder, counted, tmp_path / "store", overwrite=True)
    assert len(store) == len(GOOD) + 1 and "c/new.png" in list(store.labels["path"])


def test_a_store_not_built_from_a_plan_is_refused(folder, counted, tmp_path):
    GalleryStore.from_array(np.eye(3), tmp_path / "store")
    with pytest.raises(ValueError, match="already holds a gallery store; pass overwrite=True"):
        build(folder, counted, tmp_path / "store")


def test_plan_and_writer_check_their_input(tmp_path):
    with pytest.raises(ValueError, match="distinct"):
        StorePlan(items=(("a", "1"), ("a", "2")), dim=2, encoder=None)
    with pytest.raises(ValueError, match="no items"):
        StorePlan(items=(), dim=2, encoder=None)
    plan = StorePlan(items=(("a", "1"), ("b", "2"), ("c", "3")), dim=2, encoder=None, shard_rows=2)
    with pytest.raises(ValueError, match=r"shape \(1, 2\) for 2 kept items"):
        build_store(tmp_path / "s", plan, lambda keys: (np.ones((1, 2)), []))
    (tmp_path / "s" / PLAN_FILE).write_text("{not json")
    with pytest.raises(ValueError, match="plan.json is damaged.*overwrite=True"):
        build_store(tmp_path / "s", plan, lambda keys: (np.ones((len(keys), 2)), []))
    store = build_store(tmp_path / "s", plan, lambda keys: (np.ones((len(keys), 2)), []), overwrite=True)
    assert len(store) == 3 and store.labels is None and store.skipped == []


def test_kill_inside_a_shard_leaves_no_record_and_resumes(folder, counted, tmp_path, monkeypatch):
    real = counted._encode_image_batch
    calls = []

    def dies_in_shard_two(images):
        calls.append(len(images))
        if len(calls) == 6:  # batches of 3 in shards of 4 good images: call 6 is the second batch of shard 2
            raise Killed
        return real(images)

    monkeypatch.setattr(counted, "_encode_image_batch", dies_in_shard_two)
    with pytest.raises(Killed):
        build(folder, counted, tmp_path / "store")
    store_dir = tmp_path / "store"
    assert sorted(path.name for path in store_dir.glob("shard-*.json")) == ["shard-00000.json", "shard-00001.json"]
    assert not (store_dir / "shard-00002.npy").exists() and not (store_dir / MANIFEST).exists()
    monkeypatch.setattr(counted, "_encode_image_batch", real)
    # A SIGKILL during an atomic write leaves its temporary file; the next run removes it.
    (store_dir / ".shard-00002.npy.x1y2.tmp").write_bytes(b"half")
    store = build(folder, counted, store_dir)
    assert store.build_report.embedded == [2, 3, 4, 5] and len(store) == len(GOOD)
    assert not list(store_dir.glob("*.tmp"))
    np.testing.assert_array_equal(store.ids, np.arange(len(GOOD)))


KILLER = """
import os, signal, sys
from anchordiv.embeddings import embed_folder_to_store
from anchordiv.encoders import load_encoder

def progress(fraction, text):
    if "shard 3 of" in text:
        os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no exception handlers: a real kill

embed_folder_to_store(sys.argv[1], load_encoder("builtin", device="cpu"), sys.argv[2], shard_rows=4, batch_size=3,
                      progress=progress)
"""


def test_sigkilled_process_resumes_to_the_clean_store(folder, counted, tmp_path):
    import signal
    import subprocess
    import sys

    finished = subprocess.run([sys.executable, "-c", KILLER, str(folder), str(tmp_path / "store")],
                              capture_output=True, text=True, timeout=120)
    assert finished.returncode == -signal.SIGKILL, finished.stderr
    assert not (tmp_path / "store" / MANIFEST).exists()
    counted.seen.clear()
    store = build(folder, counted, tmp_path / "store")
    # Shards 0-2 (12 good images) survived the kill; only shards 4 and 5 hold images left to embed.
    assert store.build_report.embedded == [3, 4, 5] and sum(counted.seen) == len(GOOD) - 12
    clean = build(folder, counted, tmp_path / "clean")
    np.testing.assert_allclose(store.rows(np.arange(len(GOOD))).numpy(),
                               clean.rows(np.arange(len(GOOD))).numpy(), atol=1e-3)
    assert GalleryStore.open(tmp_path / "store", verify=True).skipped == clean.skipped


def test_the_embed_command_writes_and_resumes_a_store(folder, tmp_path, capsys):
    """``python -m anchordiv embed FOLDER --encoder builtin --out STORE``: a folder path (not .npz) is a store."""
    from anchordiv.cli import main

    out = tmp_path / "cli-store"
    assert main(["embed", str(folder), "--encoder", "builtin", "--device", "cpu", "--out", str(out),
                 "--shard-rows", str(SHARD_ROWS)]) == 0
    first = capsys.readouterr().out
    store = GalleryStore.open(out, verify=True)
    assert len(store) == len(GOOD) and "skipped 5 files" in first and "notes.txt" in first
    assert main(["embed", str(folder), "--encoder", "builtin", "--device", "cpu", "--out", str(out),
                 "--shard-rows", str(SHARD_ROWS)]) == 0
    assert "0 embedded now" in capsys.readouterr().out  # the rerun keeps every finished shard
    assert main(["embed", str(folder), "--encoder", "builtin", "--device", "cpu", "--out", str(out),
                 "--shard-rows", "3"]) == 2
    assert "overwrite" in capsys.readouterr().err
