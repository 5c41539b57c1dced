"""Stores in hostile or busy folders (issue 22): every file a store uses lies inside its folder, a
shard changed on disk after an index was built is refused by name (never scanned with stale terms),
a second writer is refused before it touches anything, and a Ray address where nothing answers is
a one-line error naming it, not a wait. Each case asserts the kind of error and what it names."""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import STORE_SHARD_ROWS, make_store_folder
from helpers import within

import anchordiv as ad
from anchordiv.cache import sha256_file
from anchordiv.cli import main
from anchordiv.embeddings import embed_folder_to_store, plan_folder_store
from anchordiv.ray_embed import embed_folder_to_store_ray
from anchordiv.ray_runtime import check_address
from anchordiv.search import query_terms
from anchordiv.sharded import ShardedAnchorIndex, ShardScanner
from anchordiv.store import LOCK_FILE, MANIFEST, GalleryStore, StoreWriter

SCALE = 12.0
# A hang guard, not a timing: a refusal takes well under a second; a wait for a dead cluster, minutes.
HANG_GUARD_SECONDS = 30
CONFINED = "every file of a store must lie inside its folder"


def write_store(data, folder: Path) -> GalleryStore:
    """The conftest gallery (70 rows, d = 24) in six float32 shards, with a caption per row."""
    captions = pd.DataFrame({"caption": [f"item {index}" for index in range(len(data["gallery"]))]})
    return GalleryStore.from_array(data["gallery"], folder, shard_rows=13, dtype="float32", labels=captions)


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of ``folder``: its bytes and modification time, to show that nothing was touched."""
    return {path.name: (path.read_bytes(), path.stat().st_mtime_ns) for path in sorted(folder.iterdir())}


def dead_port() -> int:
    """A local port that nothing listens on: bound, then closed."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def empirical(data):
    return ad.EmpiricalAnchors(scale=SCALE).fit(data["anchors"])


@pytest.fixture(scope="module")
def mixture(data):
    return ad.MixtureAnchors([ad.EmpiricalAnchors(scale=SCALE), ad.EmpiricalAnchors(scale=SCALE)],
                             [0.5, 0.5]).fit([data["anchors"], data["style"]])


# -- every file a store uses lies inside its folder --------------------------------------------------
def _link_labels(store: Path, outside: Path) -> str:
    (outside / "secrets.csv").write_text("password\nhunter2\n")
    (store / "labels.csv").unlink()
    (store / "labels.csv").symlink_to(outside / "secrets.csv")
    return "labels.csv"


def _link_ids(store: Path, outside: Path) -> str:
    shutil.copy(store / "ids.npy", outside / "ids.npy")
    (store / "ids.npy").unlink()
    (store / "ids.npy").symlink_to(outside / "ids.npy")
    return "ids.npy"


def _link_shard(store: Path, outside: Path) -> str:
    """A shard that is a link to another store's shard of the same shape, the manifest's hash forged
    to match it: every check but confinement passes."""
    other = GalleryStore.from_array(np.random.default_rng(1).normal(size=(26, 24)), outside / "other",
                                    shard_rows=13, dtype="float32")
    target = other.directory / "shard-00001.npy"
    (store / "shard-00001.npy").unlink()
    (store / "shard-00001.npy").symlink_to(target)
    manifest = json.loads((store / MANIFEST).read_text())
    manifest["shards"][1]["sha256"] = sha256_file(target)
    (store / MANIFEST).write_text(json.dumps(manifest))
    return "shard-00001.npy"


def _link_manifest(store: Path, outside: Path) -> str:
    shutil.copytree(store, outside / "copy")
    (store / MANIFEST).unlink()
    (store / MANIFEST).symlink_to(outside / "copy" / MANIFEST)
    return MANIFEST


@pytest.mark.parametrize("link", [_link_labels, _link_ids, _link_shard, _link_manifest],
                         ids=["labels", "ids", "shard-forged-hash", "manifest"])
def test_a_file_that_links_out_of_the_store_is_refused_on_open(data, tmp_path, link):
    store, outside = tmp_path / "data" / "store", tmp_path / "elsewhere"
    outside.mkdir()
    write_store(data, store)
    name = link(store, outside)
    with pytest.raises(ValueError, match=CONFINED) as refused:
        GalleryStore.open(store)
    message = str(refused.value)
    assert f"{name} resolves to {outside.resolve()}" in message and "\n" not in message


def test_links_inside_the_store_and_a_linked_store_folder_are_fine(data, tmp_path):
    """The rule is about where files resolve, not about links: these resolve inside the store."""
    store = tmp_path / "store"
    write_store(data, store)
    (store / "captions.csv").write_bytes((store / "labels.csv").read_bytes())
    (store / "labels.csv").unlink()
    (store / "labels.csv").symlink_to("captions.csv")
    (tmp_path / "link").symlink_to(store, target_is_directory=True)
    opened = GalleryStore.open(tmp_path / "link", verify=True)
    assert list(opened.labels["caption"])[:2] == ["item 0", "item 1"]


@pytest.mark.parametrize("key, name", [
    ("shard", "../other/shard-00000.npy"), ("shard", "/etc/shard-00000.npy"), ("ids", "../ids.npy"),
    ("labels", "sub/labels.csv"),
], ids=["shard-dotdot", "shard-absolute", "ids-dotdot", "labels-in-a-folder"])
def test_a_manifest_naming_a_path_is_refused(data, tmp_path, key, name):
    store = tmp_path / "store"
    write_store(data, store)
    manifest = json.loads((store / MANIFEST).read_text())
    entry = manifest["shards"][0] if key == "shard" else manifest[key]
    entry["file"] = name
    (store / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=CONFINED) as refused:
        GalleryStore.open(store)
    assert repr(name) in str(refused.value) and "not a valid store manifest" in str(refused.value)


# -- a shard changed on disk after an index was built ------------------------------------------------
def _edit_in_place(shard: Path) -> str:
    """Other values with the same header: what the index computed its terms from is gone."""
    rows = np.load(shard)
    with open(shard, "r+b") as handle:
        handle.seek(len(shard.read_bytes()) - rows.nbytes)
        handle.write(np.ascontiguousarray(rows[::-1]).tobytes())
    return "it was written to or touched"


def _truncate(shard: Path) -> str:
    with open(shard, "r+b") as handle:
        handle.truncate(shard.stat().st_size - 24 * 4)
    return "its size went from"


def _replace(shard: Path) -> str:
    """A valid shard of the same shape renamed over it (what a rewrite of the store does)."""
    replacement = shard.with_name(".replacement.npy")
    np.save(replacement, np.load(shard)[::-1])
    os.replace(replacement, shard)
    return "it was replaced by another file"


def _touch(shard: Path) -> str:
    info = shard.stat()
    os.utime(shard, ns=(info.st_atime_ns, info.st_mtime_ns + 10**9))
    return "it was written to or touched"


def _remove(shard: Path) -> str:
    shard.unlink()
    return "it cannot be read now"


CHANGES = [_edit_in_place, _truncate, _replace, _touch, _remove]
CHANGE_IDS = ["edited-same-header", "truncated", "replaced", "touched", "removed"]


def assert_changed(refused: pytest.ExceptionInfo, shard: str, change: str) -> None:
    message = str(refused.value)
    assert f"{shard} changed on disk since the index over it was built ({change}" in message, message
    assert "build the index again" in message and "\n" not in message


@pytest.mark.parametrize("change", CHANGES, ids=CHANGE_IDS)
def test_a_shard_changed_after_the_index_was_built_is_never_searched(data, empirical, tmp_path, change):
    store = write_store(data, tmp_path / "store")
    index = ShardedAnchorIndex(empirical, store)
    index.search(data["queries"], 5)
    expected = change(store.directory / "shard-00003.npy")
    with pytest.raises(ValueError) as refused:
        index.search(data["queries"], 5)
    assert_changed(refused, "shard-00003.npy", expected)


def test_reading_or_copying_a_shard_changes_nothing(data, empirical, tmp_path):
    """The fingerprint is not so fine that reads trip it (the negative control of the test above)."""
    store = write_store(data, tmp_path / "store")
    index = ShardedAnchorIndex(empirical, store)
    before = index.search(data["queries"], 5)
    shutil.copy(store.directory / "shard-00003.npy", tmp_path / "copy.npy")
    GalleryStore.open(store.directory, verify=True)
    for found, expected in zip(index.search(data["queries"], 5), before):
        np.testing.assert_array_equal(found, expected)


@pytest.mark.parametrize("change", [_edit_in_place, _replace], ids=["edited-same-header", "replaced"])
def test_the_slider_refuses_a_changed_store_at_its_next_move(data, mixture, tmp_path, change):
    """A certified move reads nothing from the store, only the terms it kept from it."""
    store = write_store(data, tmp_path / "store")
    slider = ShardedAnchorIndex(mixture, store).slider(data["queries"][2], k=5)
    slider.at(0.3)
    expected = change(store.directory / "shard-00001.npy")
    with pytest.raises(ValueError) as refused:
        slider.at(0.7)
    assert_changed(refused, "shard-00001.npy", expected)


def test_gallery_rows_and_a_new_slider_refuse_a_changed_store(data, mixture, tmp_path):
    store = write_store(data, tmp_path / "store")
    index = ShardedAnchorIndex(mixture, store)
    expected = _touch(store.directory / "shard-00004.npy")
    for read in (lambda: index.gallery_rows([1, 60]), lambda: index.slider(data["queries"][0], k=3)):
        with pytest.raises(ValueError) as refused:
            read()
        assert_changed(refused, "shard-00004.npy", expected)


def test_a_scanner_checks_the_fingerprints_it_was_handed(data, empirical, tmp_path):
    """What a Ray task does: the driver's fingerprints and kappa, the task's own reads."""
    store = write_store(data, tmp_path / "store")
    first = ShardScanner(empirical, store.directory, shards=[0, 2])
    _edit_in_place(store.directory / "shard-00002.npy")
    later = ShardScanner(empirical, store.directory, shards=[0, 2], kappa_state=first.kappa_state(),
                         fingerprints=first.fingerprints)
    queries, _ = query_terms(empirical, data["queries"], False, later.device, torch.float32)
    with pytest.raises(ValueError) as refused:
        later.top_k(queries, 3, None)
    assert_changed(refused, "shard-00002.npy", "it was written to or touched")
    with pytest.raises(ValueError, match="fingerprints= too"):
        ShardScanner(empirical, store.directory, shards=[0], kappa_state=first.kappa_state())


# -- one writer at a time -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def built(tmp_path_factory, encoder):
    """An image folder, its finished store, and the plan a writer of that store uses: shared, since
    every test here leaves the store as it was (what they check)."""
    root = tmp_path_factory.mktemp("built")
    folder = make_store_folder(root / "images")
    out = root / "store"
    embed_folder_to_store(folder, encoder, out, shard_rows=STORE_SHARD_ROWS)
    plan = plan_folder_store(folder, encoder.name, encoder.dim, shard_rows=STORE_SHARD_ROWS).plan
    return folder, out, plan


def assert_refused_by_writer(refused: pytest.ExceptionInfo, out: Path) -> None:
    message = str(refused.value)
    assert f"{out} is being written by another writer (pid {os.getpid()} on " in message, message
    assert "wait for it to finish" in message


@pytest.mark.parametrize("second", ["StoreWriter", "StoreWriter-overwrite", "from_array"])
def test_a_second_writer_in_this_process_is_refused_and_touches_nothing(built, second):
    folder, out, plan = built
    with StoreWriter(out, plan):
        before = snapshot(out)
        with pytest.raises(ValueError) as refused:
            if second == "from_array":
                GalleryStore.from_array(np.eye(3), out, overwrite=True)
            else:
                StoreWriter(out, plan, overwrite=second.endswith("overwrite")).pending_shards()
        assert_refused_by_writer(refused, out)
        assert snapshot(out) == before
    StoreWriter(out, plan).close()  # the lock went with the first writer
    assert len(GalleryStore.open(out, verify=True)) > 0


def test_a_second_embed_process_is_refused_and_leaves_the_store_whole(built):
    """The command line run twice into one store at once: the one that comes second says so."""
    folder, out, plan = built
    with StoreWriter(out, plan):
        before = snapshot(out)
        run = subprocess.run([sys.executable, "-m", "anchordiv", "embed", str(folder), "--encoder", "builtin",
                              "--out", str(out), "--overwrite", "--shard-rows", str(STORE_SHARD_ROWS)],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 2, run.stderr
        assert run.stderr.count("\n") == 1 and "is being written by another writer" in run.stderr, run.stderr
        assert f"(pid {os.getpid()} on " in run.stderr
        assert snapshot(out) == before
    GalleryStore.open(out, verify=True)


def test_a_lock_file_that_is_a_link_is_never_written_through(data, tmp_path):
    outside = tmp_path / "precious.txt"
    outside.write_text("mine")
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / LOCK_FILE).symlink_to(outside)
    with pytest.raises(ValueError, match=rf"cannot lock {re.escape(str(tmp_path / 'store' / LOCK_FILE))}.*remove the link"):
        write_store(data, tmp_path / "store")
    assert outside.read_text() == "mine" and not (tmp_path / "store" / MANIFEST).exists()


@pytest.mark.parametrize("refusal", ["store-held", "other-plan"])
def test_overwrite_refusals_name_the_command_line_flag(data, built, refusal):
    folder, out, plan = built
    with pytest.raises(ValueError, match=r"pass overwrite=True \(--overwrite on the command line\)"):
        if refusal == "store-held":
            write_store(data, out)
        else:
            StoreWriter(out, plan_folder_store(folder, "another-encoder", 8, shard_rows=STORE_SHARD_ROWS).plan)


# -- a Ray address where nothing answers ---------------------------------------------------------------
@pytest.mark.parametrize("form", ["HOST:PORT", "localhost:PORT", "ray://HOST:PORT", "RAY_ADDRESS"])
def test_a_dead_address_is_refused_at_once(monkeypatch, form):
    port = dead_port()
    address = form.replace("HOST", "127.0.0.1").replace("PORT", str(port))
    if form == "RAY_ADDRESS":
        address = f"127.0.0.1:{port}"
        monkeypatch.setenv("RAY_ADDRESS", address)
    _, error = within(HANG_GUARD_SECONDS, lambda: check_address(None if form == "RAY_ADDRESS" else address))
    assert isinstance(error, ValueError), error
    assert f"no Ray cluster answers at {address}" in str(error) and "--address HOST:PORT" in str(error)


@pytest.mark.parametrize("address, message", [
    ("nonsense", "Invalid address format"), ("ray://:10001", "names no host"), ("ray://head:port", "malformed"),
])
def test_a_malformed_address_is_refused_by_name(address, message):
    _, error = within(HANG_GUARD_SECONDS, lambda: check_address(address))
    assert isinstance(error, ValueError) and repr(address) in str(error) and message in str(error), error


def test_embed_on_a_dead_cluster_fails_fast_and_writes_nothing(no_ray, tmp_path, capsys):
    folder, address = make_store_folder(tmp_path / "images"), f"127.0.0.1:{dead_port()}"
    command = ["embed", str(folder), "--encoder", "builtin", "--out", str(tmp_path / "store"), "--engine", "ray",
               "--address", address]
    assert within(HANG_GUARD_SECONDS, lambda: main(command)) == (2, None)
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"no Ray cluster answers at {address}" in error, error
    client = f"ray://127.0.0.1:{dead_port()}"
    _, error = within(HANG_GUARD_SECONDS, lambda: embed_folder_to_store_ray(folder, "builtin", tmp_path / "store",
                                                                           address=client))
    assert isinstance(error, ValueError) and f"no Ray cluster answers at {client}" in str(error), error
    assert not (tmp_path / "store").exists()


def test_a_search_index_on_a_dead_cluster_fails_fast(no_ray, data, empirical, tmp_path):
    import ray

    store, address = write_store(data, tmp_path / "store"), f"127.0.0.1:{dead_port()}"
    _, error = within(HANG_GUARD_SECONDS, lambda: ShardedAnchorIndex(empirical, store, engine="ray", address=address))
    assert isinstance(error, ValueError) and f"no Ray cluster answers at {address}" in str(error), error
    assert not ray.is_initialized()


# -- the Ray engine's tasks check the driver's fingerprints ----------------------------------------------
@pytest.mark.slow
def test_ray_tasks_refuse_a_shard_changed_after_the_index_was_built(ray_instance, data, empirical, tmp_path):
    store = write_store(data, tmp_path / "store")
    index = ShardedAnchorIndex(empirical, store, engine="ray", workers=2)
    index.search(data["queries"], 5)
    _edit_in_place(store.directory / "shard-00005.npy")
    with pytest.raises(ValueError) as refused:
        index.search(data["queries"], 5)
    assert_changed(refused, "shard-00005.npy", "it was written to or touched")
