"""GalleryStore: round trips, shard boundaries, integrity checks and atomic writes."""
import json

import numpy as np
import pandas as pd
import pytest
import torch

import anchordiv.store.folder as store_folder
from anchordiv.store import GalleryStore
from helpers import unit


@pytest.fixture
def embeddings():
    return np.random.default_rng(0).standard_normal((23, 6))


@pytest.mark.parametrize("dtype, tol", [("float16", 2e-3), ("float32", 1e-6)])
def test_round_trip_gives_the_unit_rows(tmp_path, embeddings, dtype, tol):
    store = GalleryStore.from_array(embeddings, tmp_path / "store", shard_rows=5, dtype=dtype)
    reopened = GalleryStore.open(tmp_path / "store", verify=True)
    assert len(reopened) == 23 and reopened.dim == 6 and reopened.dtype == dtype
    assert all(shard.dtype == np.dtype(dtype) for shard in reopened.shards)
    everything = reopened.rows(np.arange(23))
    assert everything.dtype == torch.float32 and everything.shape == (23, 6)
    np.testing.assert_allclose(everything.numpy(), unit(embeddings), atol=tol)
    np.testing.assert_array_equal(store.rows([22, 0, 7]).numpy(), everything.numpy()[[22, 0, 7]])


def test_shard_boundaries_and_blocks(tmp_path, embeddings):
    store = GalleryStore.from_array(torch.as_tensor(embeddings), tmp_path / "s", shard_rows=5, dtype="float32")
    assert [shard.shape[0] for shard in store.shards] == [5, 5, 5, 5, 3]
    assert store.shard_starts == [0, 5, 10, 15, 20]
    blocks = list(store.iter_blocks(rows=2))
    assert [start for start, _ in blocks] == [0, 2, 4, 5, 7, 9, 10, 12, 14, 15, 17, 19, 20, 22]
    stacked = torch.cat([block for _, block in blocks])
    np.testing.assert_allclose(stacked.numpy(), unit(embeddings), atol=1e-6)
    with pytest.raises(ValueError, match="positions"):
        store.rows([23])


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_a_scan_reads_the_blocks_into_reused_buffers_and_names_a_cut_shard(tmp_path, embeddings, dtype):
    """scan_blocks gives what shard_blocks gives, each block a view of one buffer refilled for the next;
    a shard cut short after the store was opened is named, not read as fewer rows."""
    store = GalleryStore.from_array(embeddings, tmp_path / "s", shard_rows=10, dtype=dtype)
    for number in range(len(store.shards)):
        scanned = [(start, block.clone(), block.data_ptr()) for start, block in store.scan_blocks(number, rows=4)]
        expected = list(store.shard_blocks(number, rows=4))
        assert [start for start, _, _ in scanned] == [start for start, _ in expected]
        for (_, block, _), (_, wanted) in zip(scanned, expected):
            assert torch.equal(block, wanted)
        assert len({pointer for _, _, pointer in scanned}) == 1
    path = store.directory / "shard-00001.npy"
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(ValueError, match=r"shard-00001\.npy ends before its 10 rows; rebuild the store"):
        list(store.scan_blocks(1, rows=4))


def test_ids_labels_and_encoder_are_kept(tmp_path, embeddings):
    labels = pd.DataFrame({"name": [f"item {i}" for i in range(23)], "group": np.arange(23) % 3})
    ids = np.arange(100, 123)[::-1].copy()
    GalleryStore.from_array(embeddings, tmp_path / "s", shard_rows=10, ids=ids, labels=labels, encoder="clip-b32")
    store = GalleryStore.open(tmp_path / "s")
    np.testing.assert_array_equal(store.ids, ids)
    assert store.ids.dtype == np.int64 and store.encoder == "clip-b32"
    pd.testing.assert_frame_equal(store.labels, labels)
    plain = GalleryStore.from_array(embeddings, tmp_path / "p")
    np.testing.assert_array_equal(plain.ids, np.arange(23))
    assert plain.labels is None and plain.encoder is None


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_a_damaged_shard_is_named(tmp_path, embeddings, damage):
    GalleryStore.from_array(embeddings, tmp_path / "s", shard_rows=10)
    path = tmp_path / "s" / "shard-00001.npy"
    data = bytearray(path.read_bytes())
    if damage == "truncate":
        path.write_bytes(bytes(data[:-7]))
        with pytest.raises(ValueError, match="shard-00001.npy.*rebuild"):
            GalleryStore.open(tmp_path / "s")  # the header no longer fits the file: caught on open
        return
    data[-3] ^= 0x10
    path.write_bytes(bytes(data))
    store = GalleryStore.open(tmp_path / "s")  # same shape, so only the hash can tell
    assert store.verify() == ["shard-00001.npy"]
    with pytest.raises(ValueError, match="shard-00001.npy.*rebuild"):
        GalleryStore.open(tmp_path / "s", verify=True)


def test_a_missing_shard_or_bad_manifest_is_refused_on_open(tmp_path, embeddings):
    GalleryStore.from_array(embeddings, tmp_path / "s", shard_rows=10)
    (tmp_path / "s" / "shard-00002.npy").unlink()
    with pytest.raises(ValueError, match="shard-00002.npy is missing"):
        GalleryStore.open(tmp_path / "s")
    GalleryStore.from_array(embeddings, tmp_path / "m", shard_rows=10)
    manifest_path = tmp_path / "m" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["shards"][1]["rows"] = 9
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="manifest"):
        GalleryStore.open(tmp_path / "m")
    manifest_path.write_text("{not json")
    with pytest.raises(ValueError, match="not a valid store manifest"):
        GalleryStore.open(tmp_path / "m")
    manifest_path.unlink()
    with pytest.raises(ValueError, match="manifest.json is missing"):
        GalleryStore.open(tmp_path / "m")


def test_overwrite_protection(tmp_path, embeddings):
    GalleryStore.from_array(embeddings, tmp_path / "s")
    with pytest.raises(ValueError, match="already holds a gallery store.*overwrite=True"):
        GalleryStore.from_array(embeddings[:4], tmp_path / "s")
    assert len(GalleryStore.from_array(embeddings[:4], tmp_path / "s", overwrite=True)) == 4
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="other files.*notes.txt"):
        GalleryStore.from_array(embeddings, tmp_path / "other")


@pytest.mark.parametrize("bad, message", [
    ("nan", "NaN or infinite"), ("inf", "NaN or infinite"), ("1d", "2-D"), ("empty", "non-empty"),
])
def test_bad_embeddings_are_refused_before_writing(tmp_path, embeddings, bad, message):
    rows = embeddings.copy()
    if bad in ("nan", "inf"):
        rows[17, 2] = np.nan if bad == "nan" else np.inf
    rows = {"1d": rows[0], "empty": rows[:0]}.get(bad, rows)
    with pytest.raises(ValueError, match=message):
        GalleryStore.from_array(rows, tmp_path / "s", shard_rows=5)
    assert not (tmp_path / "s").exists()


def test_bad_arguments_are_refused(tmp_path, embeddings):
    with pytest.raises(ValueError, match="dtype"):
        GalleryStore.from_array(embeddings, tmp_path / "a", dtype="int8")
    with pytest.raises(ValueError, match="ids must be 23 integers"):
        GalleryStore.from_array(embeddings, tmp_path / "b", ids=np.arange(5))
    with pytest.raises(ValueError, match="distinct"):
        GalleryStore.from_array(embeddings, tmp_path / "c", ids=np.zeros(23, dtype=int))
    with pytest.raises(ValueError, match="labels must be a pandas DataFrame"):
        GalleryStore.from_array(embeddings, tmp_path / "d", labels=pd.DataFrame({"a": [1]}))


def test_a_write_killed_midway_leaves_no_store_and_a_rerun_completes(tmp_path, embeddings, monkeypatch):
    real_write = store_folder.atomic_write
    written = []

    def fail_after_first_shard(path, write):
        if written:
            raise OSError("disk full")
        written.append(path)
        real_write(path, write)

    monkeypatch.setattr(store_folder, "atomic_write", fail_after_first_shard)
    with pytest.raises(OSError):
        GalleryStore.from_array(embeddings, tmp_path / "s", shard_rows=5)
    assert written == [tmp_path / "s" / "shard-00000.npy"]
    assert not (tmp_path / "s" / "manifest.json").exists()
    with pytest.raises(ValueError, match="manifest.json is missing"):
        GalleryStore.open(tmp_path / "s")
    monkeypatch.setattr(store_folder, "atomic_write", real_write)
    store = GalleryStore.from_array(embeddings, tmp_path / "s", shard_rows=5)  # leftovers only: no overwrite needed
    assert len(store) == 23 and store.verify() == []
