"""Models from a hub, for real: huggingface_hub and open_clip against a loopback stand-in
(tests/loopback_hub.py) serving a tiny open_clip model: download, cache, resume, verify, offline."""
from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from anchordiv.encoders import (CheckpointNotFound, ModelUnavailable, fetch_model, hub_model_folder, load_encoder,
                                missing_files)
from anchordiv.encoders import downloads, url_client
from anchordiv.encoders.downloads import Unreachable
from anchordiv.encoders.folders import checkpoints_root
from anchordiv.encoders.hub_client import cached_hub_file
from anchordiv.encoders.hub_models import TOKENIZER_FILES
from anchordiv.encoders.url_client import url_file
from loopback_hub import (CONFIG_NAME, TINY_REPO, TINY_SPEC as SPEC, WEIGHTS_NAME, bundled_tokenizer_files, serve_tiny_hub,
                          tiny_hub_files)
from tiny_open_clip import TINY_ARCH, TINY_LOGIT_SCALE, make_tiny_checkpoint, register_tiny_arch

REPO_ROOT = Path(__file__).resolve().parents[1]


pytestmark = pytest.mark.usefixtures("cache")  # every test its own anchordiv cache (conftest.py)


def pictures(count: int = 3) -> list[Image.Image]:
    rng = np.random.default_rng(0)
    return [Image.fromarray(rng.integers(0, 256, (40, 48, 3), dtype=np.uint8)) for _ in range(count)]


def test_downloads_caches_and_loads_then_works_with_the_hub_gone(hub, tmp_path):
    reports = []
    cache = tmp_path / "hf"
    encoder = load_encoder(SPEC, allow_download=True, cache_dir=cache, device="cpu", progress=reports.append)
    weights_sha = hashlib.sha256(hub.files[WEIGHTS_NAME]).hexdigest()
    assert encoder.name == f"{SPEC}@{weights_sha[:16]}"
    assert encoder.logit_scale == pytest.approx(TINY_LOGIT_SCALE, rel=1e-2)  # from the file, not open_clip's init
    first = encoder.encode_images(pictures())
    finals = [r for r in reports if r.filename == WEIGHTS_NAME and r.done_bytes == len(hub.files[WEIGHTS_NAME])]
    assert finals and finals[-1].total_bytes == len(hub.files[WEIGHTS_NAME]) and finals[-1].fraction == 1.0
    assert WEIGHTS_NAME in finals[-1].text() and "of" in finals[-1].text()
    assert len(hub.gets(WEIGHTS_NAME)) == 1 and len(hub.gets(CONFIG_NAME)) == 1

    hub.stop()
    again = load_encoder(SPEC, cache_dir=cache, device="cpu")  # no download allowed, no server: the cache
    torch.testing.assert_close(again.encode_images(pictures()), first)
    assert again.name == encoder.name and missing_files(SPEC, cache_dir=cache) == []


def test_a_simpler_mirror_with_pytorch_weights_and_plain_sha1_tags(tmp_path, monkeypatch):
    """A hub stand-in less faithful than huggingface.co: only ``open_clip_pytorch_model.bin`` (no
    safetensors), every file tagged with the plain sha1 of its bytes, no LFS headers. The model still
    downloads, verifies (a damaged transfer is refused) and loads."""
    from tiny_open_clip import make_tiny_checkpoint

    _, model = make_tiny_checkpoint(tmp_path, seed=5)
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    files = {CONFIG_NAME: tiny_hub_files(tmp_path)[CONFIG_NAME], "open_clip_pytorch_model.bin": buffer.getvalue()}
    with serve_tiny_hub(tmp_path, files=files) as mirror:
        mirror.patch_endpoint(monkeypatch)
        mirror.plain_etags = True
        mirror.corrupt.add("open_clip_pytorch_model.bin")
        with pytest.raises(ValueError, match="damaged or incomplete and was deleted"):
            load_encoder(SPEC, allow_download=True, cache_dir=tmp_path / "hf", device="cpu")
        mirror.corrupt.clear()
        encoder = load_encoder(SPEC, allow_download=True, cache_dir=tmp_path / "hf", device="cpu")
    assert encoder.logit_scale == pytest.approx(TINY_LOGIT_SCALE, rel=1e-2)
    assert encoder.name.startswith(f"{SPEC}@{hashlib.sha256(files['open_clip_pytorch_model.bin']).hexdigest()[:16]}")


def test_interrupted_download_resumes_with_a_range_request(hub, tmp_path, monkeypatch):
    from huggingface_hub import constants

    # huggingface_hub resumes from its last whole chunk (10 MB); smaller ones fit the tiny file
    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", 1 << 16)
    hub.cut_once(WEIGHTS_NAME, 100_000)
    load_encoder(SPEC, allow_download=True, cache_dir=tmp_path / "hf", device="cpu")
    gets = hub.gets(WEIGHTS_NAME)
    assert len(gets) == 2 and gets[0].range is None and gets[1].range and gets[1].range.startswith("bytes=")
    path = cached_hub_file(TINY_REPO, WEIGHTS_NAME, tmp_path / "hf")
    assert path.read_bytes() == hub.files[WEIGHTS_NAME]


def test_corrupted_download_is_refused_and_deleted(hub, tmp_path):
    hub.corrupt.add(WEIGHTS_NAME)
    with pytest.raises(ValueError, match=f"{WEIGHTS_NAME} .*damaged or incomplete and was deleted; fetch it again"):
        load_encoder(SPEC, allow_download=True, cache_dir=tmp_path / "hf", device="cpu")
    assert cached_hub_file(TINY_REPO, WEIGHTS_NAME, tmp_path / "hf") is None
    hub.corrupt.clear()
    load_encoder(SPEC, allow_download=True, cache_dir=tmp_path / "hf", device="cpu")  # fetched again, whole


def test_without_downloads_or_hub_the_error_names_files_urls_and_folder(hub, tmp_path):
    with pytest.raises(CheckpointNotFound) as off:
        load_encoder(SPEC, cache_dir=tmp_path / "hf")
    from anchordiv.cli.words import in_command_words

    # The library's words name its argument; the command line says the same as its option.
    assert "allow_download=True" in str(off.value) and hub.requests == []
    assert "--allow-download" in in_command_words(off.value, "demo")
    hub.stop()
    with pytest.raises(ModelUnavailable) as gone:
        load_encoder(SPEC, allow_download=True, cache_dir=tmp_path / "hf")
    message = str(gone.value)
    assert "\n" not in message and hub.url(CONFIG_NAME) in message and str(hub_model_folder(TINY_REPO)) in message
    assert f"fetch-model {SPEC} --to DIR" in message


def test_concurrent_callers_share_one_download(hub, tmp_path):
    def heads() -> int:
        return sum(seen.method == "HEAD" and seen.path.endswith("/" + WEIGHTS_NAME) for seen in hub.requests)

    load_encoder(SPEC, allow_download=True, cache_dir=tmp_path / "alone", device="cpu")
    alone = heads()  # what one caller's download asks the hub
    hub.hold_gets, hub.held = threading.Event(), {WEIGHTS_NAME}
    cache, size = tmp_path / "hf", len(hub.files[WEIGHTS_NAME])
    results, reports = [None] * 4, [[] for _ in range(4)]

    def load(index):
        results[index] = load_encoder(SPEC, allow_download=True, cache_dir=cache, device="cpu",
                                      progress=reports[index].append).name

    threads = [threading.Thread(target=load, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 60  # all four wait on the weights (the transfer is held) before it moves
    while not all(any(r.filename == WEIGHTS_NAME for r in seen) for seen in reports) and time.monotonic() < deadline:
        time.sleep(0.01)
    hub.hold_gets.set()
    for thread in threads:
        thread.join(60)
    assert len(set(results)) == 1 and results[0] is not None
    assert len(hub.gets(WEIGHTS_NAME)) == 2  # one here, one alone
    assert heads() - alone == alone  # one caller asked the hub, the others shared its transfer
    # and every caller watched it to the end, not only the one whose request moved the bytes
    assert all(max(r.done_bytes for r in seen if r.filename == WEIGHTS_NAME) == size for seen in reports)


def test_a_download_hashes_the_weights_once_and_a_presence_check_not_at_all(hub, tmp_path, monkeypatch):
    hashed, real_sha256, real_git_sha1 = [], downloads.sha256_file, downloads.git_blob_sha1
    monkeypatch.setattr(downloads, "sha256_file", lambda path: hashed.append(Path(path).resolve()) or real_sha256(path))
    cache = tmp_path / "hf"
    load_encoder(SPEC, allow_download=True, cache_dir=cache, device="cpu")
    blob = cached_hub_file(TINY_REPO, WEIGHTS_NAME, cache).resolve()
    assert hashed.count(blob) == 1

    def refuse(path):
        raise AssertionError(f"hashed {path}")

    monkeypatch.setattr(downloads, "sha256_file", refuse)
    monkeypatch.setattr(downloads, "git_blob_sha1", refuse)
    assert missing_files(SPEC, cache_dir=cache) == []  # what the app asks on every rerun: no hashing
    blob.write_bytes(b"x" + blob.read_bytes()[1:])
    assert missing_files(SPEC, cache_dir=cache) == []  # a presence check: the load is what verifies
    monkeypatch.setattr(downloads, "sha256_file", real_sha256)
    monkeypatch.setattr(downloads, "git_blob_sha1", real_git_sha1)
    with pytest.raises(ValueError, match="damaged or incomplete and was deleted"):
        load_encoder(SPEC, cache_dir=cache, device="cpu")
    assert [item.filename for item in missing_files(SPEC, cache_dir=cache)] == [WEIGHTS_NAME]


# SigLIP's configs name their own repository; a tokenizer may also come from another one.
@pytest.mark.parametrize("tokenizer_repo", [TINY_REPO, "anchordiv-test/tiny-tokenizer"])
def test_hub_model_with_a_hugging_face_tokenizer_fetched_for_offline_use(tmp_path, monkeypatch, tokenizer_repo):
    from transformers import AutoTokenizer

    served_tokenizer = bundled_tokenizer_files()
    files = tiny_hub_files(tmp_path / "model", tokenizer_repo=tokenizer_repo)
    other_repos = {tokenizer_repo: served_tokenizer} if tokenizer_repo != TINY_REPO else {}
    cache, out, text = tmp_path / "hf", tmp_path / "usb-stick", "a photo of a cat"
    with serve_tiny_hub(tmp_path, files={**files, **({} if other_repos else served_tokenizer)},
                        other_repos=other_repos) as hub:
        hub.patch_endpoint(monkeypatch)
        online = load_encoder(SPEC, allow_download=True, cache_dir=cache, device="cpu")
        fetch_model(SPEC, to=out, cache_dir=tmp_path / "hf-fetch")
        asked = {seen.path.rsplit("/", 1)[-1] for seen in hub.requests if f"/{tokenizer_repo}/" in seen.path}
    # through anchordiv's downloads only: transformers asked the hub for nothing
    assert asked - set(files) == set(TOKENIZER_FILES)
    expected = online.tokenizer([text])[0]
    folder = tmp_path / "reference-tokenizer"
    folder.mkdir()
    for name, data in served_tokenizer.items():
        (folder / name).write_bytes(data)
    ids = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)(text)["input_ids"]
    assert expected[:len(ids)].tolist() == ids and expected[len(ids):].eq(0).all()  # the served tokenizer's ids
    vectors = online.encode_texts([text, "a dog"])
    assert missing_files(SPEC, cache_dir=cache) == []

    # the hub is gone: the hub cache serves the tokenizer too
    torch.testing.assert_close(load_encoder(SPEC, cache_dir=cache, device="cpu").encode_texts([text, "a dog"]), vectors)
    # another machine: empty caches, the fetched folder copied into anchordiv's checkpoint folder
    empty = tmp_path / "empty-hub-cache"
    shutil.copytree(out, checkpoints_root(), dirs_exist_ok=True)
    tokenizer_folder = hub_model_folder(tokenizer_repo)
    copied_files = {*served_tokenizer, "SHA256SUMS", *(files if tokenizer_folder == hub_model_folder(TINY_REPO) else [])}
    assert {p.name for p in tokenizer_folder.iterdir()} == copied_files
    assert set((tokenizer_folder / "SHA256SUMS").read_text().split()[1::2]) == copied_files - {"SHA256SUMS"}
    assert missing_files(SPEC, cache_dir=empty) == []
    copied = load_encoder(SPEC, cache_dir=empty, device="cpu")
    torch.testing.assert_close(copied.encode_texts([text, "a dog"]), vectors)

    for name in served_tokenizer:  # a copy without the tokenizer: listed, and refused in one line
        (tokenizer_folder / name).unlink()
    listed = missing_files(SPEC, cache_dir=empty)
    assert [item.filename for item in listed] == list(TOKENIZER_FILES)
    assert {item.folder for item in listed} == {tokenizer_folder}
    assert "where the repository has it" in listed[0].text() and tokenizer_repo in listed[0].url
    with pytest.raises(CheckpointNotFound) as refused:
        load_encoder(SPEC, cache_dir=empty, device="cpu")
    assert "\n" not in str(refused.value) and str(tokenizer_folder) in str(refused.value)


def test_url_download_without_an_answer_gives_up_at_once(tmp_path, monkeypatch):
    monkeypatch.setattr(url_client, "CONNECT_TIMEOUT", 0.3)
    silent = socket.create_server(("127.0.0.1", 0))  # takes connections and never answers
    accepted, peers = [], []

    def accept():
        with contextlib.suppress(OSError):
            while True:
                connection, peer = silent.accept()
                accepted.append(connection)
                peers.append(peer)

    threading.Thread(target=accept, daemon=True).start()
    part = tmp_path / "weights.pt.part"
    part.write_bytes(b"x" * 1000)  # an earlier run got this far
    try:
        with pytest.raises(Unreachable, match="could not be reached"):
            url_file(f"http://127.0.0.1:{silent.getsockname()[1]}/weights.pt", tmp_path / "weights.pt")
        # Any retry connected before url_file gave up; connections are accepted in the order they came,
        # so once a probe made now is accepted, every connection before it has been too.
        probe = socket.create_connection(silent.getsockname(), timeout=5)
        deadline = time.monotonic() + 30
        while probe.getsockname() not in peers:
            assert time.monotonic() < deadline, "the probe was never accepted"
            time.sleep(0.01)
        probe.close()
        assert len(accepted) == 2 and part.read_bytes() == b"x" * 1000  # url_file's one connection, and the probe
    finally:
        silent.close()
        for connection in accepted:
            connection.close()


def test_fetch_model_to_a_folder_then_load_offline_from_the_copy(hub, tmp_path, capsys, monkeypatch):
    from anchordiv.cli import main

    out = tmp_path / "usb-stick"
    assert main(["fetch-model", SPEC, "--to", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "copy the contents of" in printed and str(out) in printed
    hub.stop()
    # "the other machine": an empty hub cache, the copy placed into anchordiv's checkpoint folder
    shutil.copytree(out, checkpoints_root(), dirs_exist_ok=True)
    encoder = load_encoder(SPEC, cache_dir=tmp_path / "empty-hub-cache", device="cpu")
    assert encoder.name.startswith(SPEC + "@")
    weights = hub_model_folder(TINY_REPO) / WEIGHTS_NAME
    weights.write_bytes(b"x" + weights.read_bytes()[1:])
    with pytest.raises(ValueError, match="damaged or incomplete"):
        load_encoder(SPEC, cache_dir=tmp_path / "empty-hub-cache", device="cpu")


def test_url_download_resumes_across_runs_and_is_verified(hub, tmp_path, monkeypatch):
    import open_clip.pretrained

    register_tiny_arch(tmp_path)
    checkpoint, _ = make_tiny_checkpoint(tmp_path, seed=3)
    data = checkpoint.read_bytes()
    url = hub.serve_plain("tiny.pt", data)
    # A published tag of the tiny architecture whose weights come by URL, as OpenAI's do (through open_clip's
    # public lookup, which anchordiv asks at call time).
    published = open_clip.pretrained.get_pretrained_cfg
    tag_cfg = {"url": url, "hf_hub": "", "mean": (0.5, 0.5, 0.5), "std": (0.25, 0.25, 0.25),
               "interpolation": "bicubic", "resize_mode": "shortest"}
    monkeypatch.setattr(open_clip.pretrained, "get_pretrained_cfg",
                        lambda arch, tag: tag_cfg if (arch, tag) == (TINY_ARCH, "loopback") else published(arch, tag))
    tags = open_clip.pretrained.list_pretrained_tags_by_model
    monkeypatch.setattr(open_clip.pretrained, "list_pretrained_tags_by_model",
                        lambda arch: [*tags(arch), "loopback"] if arch == TINY_ARCH else tags(arch))
    folder = tmp_path / "clip"
    folder.mkdir()
    (folder / "tiny.pt.part").write_bytes(data[:50_000])  # an earlier run stopped here
    hub.cut_once("tiny.pt", 200_000)  # and this one loses its connection once
    hashed, real_sha256 = [], downloads.sha256_file
    monkeypatch.setattr(downloads, "sha256_file", lambda path: hashed.append(Path(path).name) or real_sha256(path))
    encoder = load_encoder(f"open_clip:{TINY_ARCH}", pretrained="loopback", allow_download=True, cache_dir=folder,
                           device="cpu")
    assert hashed == ["tiny.pt.part"]  # checked once, before it is moved into place; the load trusts that
    ranges = [seen.range for seen in hub.gets("tiny.pt")]
    assert ranges[0] == "bytes=50000-" and len(ranges) == 2 and ranges[1].startswith("bytes=")
    assert (folder / "tiny.pt").read_bytes() == data and not (folder / "tiny.pt.part").exists()
    assert encoder.name.startswith(f"open_clip:{TINY_ARCH}/loopback@")

    hub.corrupt.add("damaged.pt")
    damaged_url = hub.serve_plain("damaged.pt", data)
    with pytest.raises(ValueError, match="damaged or incomplete and was deleted"):
        url_file(damaged_url, folder / "damaged.pt", sha256=damaged_url.split("/")[-2])
    assert not (folder / "damaged.pt").exists() and not (folder / "damaged.pt.part").exists()


@pytest.mark.slow
def test_cli_embed_downloads_caches_and_fails_in_one_line_offline(tmp_path):
    folder = tmp_path / "photos" / "cats"
    folder.mkdir(parents=True)
    for index, image in enumerate(pictures(2)):
        image.save(folder / f"{index}.png")
    env = {**os.environ, "ANCHORDIV_CACHE": str(tmp_path / "ad"), "HF_HUB_CACHE": str(tmp_path / "hf")}

    def embed(out: str, **extra):
        command = [sys.executable, "-m", "anchordiv", "embed", str(tmp_path / "photos"), "--encoder", SPEC,
                   "--allow-download", "--out", str(tmp_path / out), "--device", "cpu"]
        return subprocess.run(command, env={**env, **extra}, capture_output=True, text=True, timeout=120,
                              cwd=REPO_ROOT)

    with serve_tiny_hub(tmp_path) as hub:
        first = embed("first.npz", **hub.env())
        assert first.returncode == 0, first.stderr
        endpoint = hub.env()
    second = embed("second.npz", **endpoint)  # the hub is gone: the cache answers
    assert second.returncode == 0, second.stderr
    np.testing.assert_allclose(np.load(tmp_path / "first.npz")["embeddings"], np.load(tmp_path / "second.npz")["embeddings"])

    started = time.monotonic()
    fresh = embed("third.npz", **endpoint, HF_HUB_CACHE=str(tmp_path / "empty-hf"))
    elapsed = time.monotonic() - started
    lines = fresh.stderr.strip().splitlines()
    assert fresh.returncode == 2 and len(lines) == 1, fresh.stderr
    assert elapsed < 15, f"the offline refusal took {elapsed:.1f} s"  # the bound (Python's start included)
    assert CONFIG_NAME in lines[0] and f"{endpoint['HF_ENDPOINT']}/{TINY_REPO}/resolve/main/" in lines[0]
    assert "hf-hub" in lines[0] and "fetch-model" in lines[0]


@pytest.mark.parametrize("route", ["hub", "url"])
def test_a_server_that_drips_is_given_up_in_one_deadline(hub, tmp_path, monkeypatch, route):
    """A server that answers, then sends a few bytes a second (the client's own retries included)
    is given up once the transfer moves less than the slowest rate over one window (here 1 s and
    8 kB/s instead of 60 s and 16 kB/s), with a message naming the address."""
    from anchordiv.encoders import transfers
    from anchordiv.encoders.hub_client import hub_file

    monkeypatch.setattr(transfers, "STALL_WINDOW", 1.0)
    monkeypatch.setattr(transfers, "SLOWEST_RATE", 8_000)
    hub.throttle = 200.0  # bytes a second
    start = time.monotonic()
    with pytest.raises(Unreachable, match="could not be reached .*fewer than 8.0 kB/s over 1 s"):
        if route == "hub":
            hub_file(TINY_REPO, WEIGHTS_NAME, cache_dir=tmp_path / "hf")
        else:
            url_file(hub.serve_plain("slow.bin", os.urandom(300_000)), tmp_path / "slow.bin")
    assert time.monotonic() - start < 10
    hub.throttle = None  # let the abandoned transfer's thread finish
