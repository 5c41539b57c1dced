"""The encoder interface and the real open_clip loading path, on a tiny random open_clip model."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from PIL import Image

from anchordiv.cache import sha256_file
from anchordiv.encoders import CheckpointNotFound, Encoder, load_encoder
from anchordiv.encoders.open_clip_encoder import checkpoint_folder, resolve_checkpoint
from tiny_open_clip import TINY_ARCH, TINY_EMBED_DIM, TINY_LOGIT_SCALE, make_tiny_checkpoint

TINY = f"open_clip:{TINY_ARCH}"
B32_REPO = "laion/CLIP-ViT-B-32-laion2B-s34B-b79K"
B32_TAG = "laion2b_s34b_b79k"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(checkpoint path, the in-memory model it was saved from)."""
    return make_tiny_checkpoint(tmp_path_factory.mktemp("tiny"))


pytestmark = pytest.mark.usefixtures("cache")  # every test its own anchordiv cache (conftest.py)


def images(count: int, seed: int = 0) -> list[Image.Image]:
    rng = np.random.default_rng(seed)
    return [Image.fromarray(rng.integers(0, 256, (40 + 3 * i, 50, 3), dtype=np.uint8)) for i in range(count)]


TEXTS = ["a husky", "a pencil sketch", "pleural effusion", "a cat", "a cat on a mat"]


def test_tiny_checkpoint_loads_exactly(tiny, no_network):
    path, model = tiny
    encoder = load_encoder(TINY, pretrained=str(path), device="cpu")
    import open_clip
    from open_clip.transform import PreprocessCfg, image_transform_v2

    preprocess = image_transform_v2(PreprocessCfg(**open_clip.get_model_preprocess_cfg(model)), is_train=False)
    pictures = images(5)
    with torch.no_grad():
        expected_images = model.encode_image(torch.stack([preprocess(image) for image in pictures]))
        expected_texts = model.encode_text(open_clip.get_tokenizer(TINY_ARCH)(TEXTS))
    got_images, got_texts = encoder.encode_images(pictures), encoder.encode_texts(TEXTS)

    for got, expected in ((got_images, expected_images), (got_texts, expected_texts)):
        assert got.dtype == torch.float32 and got.device.type == "cpu"
        assert got.shape == (5, TINY_EMBED_DIM)
        torch.testing.assert_close(got.norm(dim=1), torch.ones(5))
        torch.testing.assert_close(got, torch.nn.functional.normalize(expected, dim=-1), rtol=1e-5, atol=1e-6)
    assert encoder.dim == TINY_EMBED_DIM
    assert encoder.logit_scale == pytest.approx(TINY_LOGIT_SCALE, rel=1e-5)
    assert encoder.name == f"{TINY}@{sha256_file(path)[:16]}"
    assert no_network == []


def test_deterministic_and_batch_independent(tiny):
    encoder = load_encoder(TINY, pretrained=str(tiny[0]), device="cpu")
    pictures = images(7, seed=1)
    whole = encoder.encode_images(pictures, batch_size=64)
    torch.testing.assert_close(encoder.encode_images(pictures, batch_size=64), whole, rtol=0, atol=0)
    torch.testing.assert_close(encoder.encode_images(pictures, batch_size=3), whole, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(encoder.encode_texts(TEXTS, batch_size=2), encoder.encode_texts(TEXTS), rtol=1e-5, atol=1e-6)


def test_safetensors_checkpoint_and_name_tracks_content(tiny, tmp_path):
    same_weights, _ = make_tiny_checkpoint(tmp_path, seed=0, suffix=".safetensors")
    other_weights, _ = make_tiny_checkpoint(tmp_path, seed=1)
    reference = load_encoder(TINY, pretrained=str(tiny[0]), device="cpu")
    from_safetensors = load_encoder(TINY, pretrained=str(same_weights), device="cpu")
    other = load_encoder(TINY, pretrained=str(other_weights), device="cpu")
    pictures = images(3)
    torch.testing.assert_close(from_safetensors.encode_images(pictures), reference.encode_images(pictures))
    assert len({reference.name, from_safetensors.name, other.name}) == 3  # names follow the file bytes
    assert not torch.allclose(other.encode_images(pictures), reference.encode_images(pictures))


def test_empty_inputs_and_bad_texts(tiny):
    encoder = load_encoder(TINY, pretrained=str(tiny[0]), device="cpu")
    assert encoder.encode_images([]).shape == (0, TINY_EMBED_DIM)
    assert encoder.encode_texts([]).shape == (0, TINY_EMBED_DIM)
    with pytest.raises(ValueError, match=r"texts\[1\] is a int"):
        encoder.encode_texts(["a dog", 3])
    with pytest.raises(ValueError, match="not one string"):
        encoder.encode_texts("a dog")
    with pytest.raises(ValueError, match="not a PIL image"):
        encoder.encode_images([np.zeros((4, 4, 3))])
    with pytest.raises(ValueError, match="batch_size"):
        encoder.encode_texts(["a dog"], batch_size=0)


def test_missing_checkpoint_file_is_one_clear_error(tmp_path, no_network):
    missing = tmp_path / "nowhere" / "weights.pt"
    with pytest.raises(CheckpointNotFound) as caught:
        load_encoder(TINY, pretrained=str(missing))
    message = str(caught.value)
    assert TINY_ARCH in message and str(missing) in message and "pretrained=/path/to/checkpoint" in message
    assert isinstance(caught.value, ValueError)
    with pytest.raises(CheckpointNotFound, match="needs pretrained="):
        load_encoder(TINY)
    assert no_network == []


def test_tag_not_on_disk_says_where_to_put_it(tmp_path, no_network):
    with pytest.raises(CheckpointNotFound) as caught:
        load_encoder("open_clip:ViT-B-32", pretrained=B32_TAG, cache_dir=tmp_path / "empty-hub")
    message = str(caught.value)
    assert "ViT-B-32" in message and B32_TAG in message
    assert str(checkpoint_folder("ViT-B-32", B32_TAG) / "open_clip_pytorch_model.bin") in message
    assert f"https://huggingface.co/{B32_REPO}/resolve/main/open_clip_pytorch_model.bin" in message
    assert "allow_download=True" in message and "pretrained=/path/to/" in message
    assert no_network == []


def test_tag_found_in_anchordiv_checkpoint_folder(no_network):
    folder = checkpoint_folder("ViT-B-32", B32_TAG)  # under the test's $ANCHORDIV_CACHE
    folder.mkdir(parents=True)
    (folder / "open_clip_pytorch_model.bin").write_bytes(b"weights")
    found = resolve_checkpoint("ViT-B-32", B32_TAG)
    assert found.path == folder / "open_clip_pytorch_model.bin"
    assert found.tag == B32_TAG and found.tag_cfg["hf_hub"].startswith(B32_REPO)
    assert no_network == []


def fake_hub_cache(root, repo_id: str, filename: str, content: bytes, blob_name: str | None = None):
    """The Hugging Face cache layout: snapshots/<commit>/<file> links to blobs/<sha256 of content>."""
    repo = root / f"models--{repo_id.replace('/', '--')}"
    commit = "0" * 40
    blob = repo / "blobs" / (blob_name or hashlib.sha256(content).hexdigest())
    blob.parent.mkdir(parents=True)
    blob.write_bytes(content)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    snapshot = repo / "snapshots" / commit / filename
    snapshot.parent.mkdir(parents=True)
    snapshot.symlink_to(blob)
    return snapshot


def test_tag_found_in_hub_cache_offline_with_checksum(tmp_path, no_network):
    snapshot = fake_hub_cache(tmp_path, B32_REPO, "open_clip_pytorch_model.bin", b"weights")
    found = resolve_checkpoint("ViT-B-32", B32_TAG, cache_dir=tmp_path)
    assert found.path == snapshot
    assert found.expected_sha256 == hashlib.sha256(b"weights").hexdigest()

    damaged = tmp_path / "damaged"
    fake_hub_cache(damaged, B32_REPO, "open_clip_pytorch_model.bin", b"cut off", blob_name=hashlib.sha256(b"x").hexdigest())
    with pytest.raises(ValueError, match="damaged or incomplete"):
        load_encoder("open_clip:ViT-B-32", pretrained=B32_TAG, cache_dir=damaged)
    assert no_network == []


def test_fetch_model_copies_a_cached_tag_only_when_it_verifies(tmp_path, no_network):
    from anchordiv.encoders import fetch_model

    fake_hub_cache(tmp_path / "hub", B32_REPO, "open_clip_pytorch_model.bin", b"weights")
    [copy] = fetch_model(parse("open_clip:ViT-B-32", B32_TAG), to=tmp_path / "out", cache_dir=tmp_path / "hub")
    assert copy == tmp_path / "out" / "open_clip" / "ViT-B-32" / B32_TAG / "open_clip_pytorch_model.bin"
    assert (copy.parent / "SHA256SUMS").read_text() == f"{hashlib.sha256(b'weights').hexdigest()}  {copy.name}\n"

    damaged = tmp_path / "damaged"
    fake_hub_cache(damaged, B32_REPO, "open_clip_pytorch_model.bin", b"cut off", blob_name=hashlib.sha256(b"x").hexdigest())
    with pytest.raises(ValueError, match="damaged or incomplete and was deleted"):
        fetch_model(parse("open_clip:ViT-B-32", B32_TAG), to=tmp_path / "out2", cache_dir=damaged)
    assert not (tmp_path / "out2").exists()  # nothing copied, nothing vouched for
    assert no_network == []


def test_bad_specs_and_architectures(no_network):
    for spec in ("clip", "open_clip:", "open_clip", "builtin:ViT", " open_clip:ViT-B-32"):
        with pytest.raises(ValueError, match="use 'builtin', 'open_clip:<arch>'"):
            load_encoder(spec)
    with pytest.raises(ValueError, match="open_clip has no architecture 'ViT-Z-99'"):
        load_encoder("open_clip:ViT-Z-99", pretrained="x.pt")
    with pytest.raises(ValueError, match="allow_download=True"):
        load_encoder("open_clip:mt5-base-ViT-B-32", pretrained="x.pt")
    with pytest.raises(ValueError, match="own weights"):
        load_encoder("builtin", pretrained="x.pt")
    assert no_network == []


def test_model_specs_round_trip_and_refuse_malformed_repos():
    from anchordiv.encoders import ModelSpec, parse_model_spec

    tag = parse_model_spec("open_clip:ViT-B-32", B32_TAG)
    assert (tag.arch, tag.pretrained, tag.model, tag.label) == ("ViT-B-32", B32_TAG, "open_clip:ViT-B-32",
                                                               f"ViT-B-32 · {B32_TAG}")
    hub = parse_model_spec(f"open_clip:hf-hub:{B32_REPO}")
    assert hub == ModelSpec("open_clip", hub_repo=B32_REPO) and hub.model == f"open_clip:hf-hub:{B32_REPO}"
    assert parse_model_spec(hub) == hub and parse_model_spec("builtin").label == "built-in model"
    for repo in ("org", "org/repo/file", "../etc", "org/..", "org/re po", "org/" + "r" * 97, "org/a--b", "/repo"):
        with pytest.raises(ValueError, match="is not ORG/REPO"):
            parse_model_spec(f"open_clip:hf-hub:{repo}")
    with pytest.raises(ValueError, match="carries its own weights"):
        parse_model_spec(f"open_clip:hf-hub:{B32_REPO}", B32_TAG)


def test_missing_files_and_catalog_offline(no_network):
    from anchordiv.encoders import missing_files, model_catalog

    [weights] = missing_files(parse("open_clip:ViT-B-32", B32_TAG))
    assert weights.filename == "open_clip_pytorch_model.bin" and weights.folder == checkpoint_folder("ViT-B-32", B32_TAG)
    assert weights.url == f"https://huggingface.co/{B32_REPO}/resolve/main/open_clip_pytorch_model.bin"
    folder = checkpoint_folder("ViT-B-32", B32_TAG)
    folder.mkdir(parents=True)
    (folder / "open_clip_pytorch_model.bin").write_bytes(b"weights")
    assert missing_files(parse("open_clip:ViT-B-32", B32_TAG)) == []
    catalog = model_catalog(estimate_sizes=False)
    assert catalog[0].model == "builtin"
    entry = next(e for e in catalog if (e.model, e.pretrained) == ("open_clip:ViT-B-32", B32_TAG))
    assert entry.cached and entry.size_bytes == len(b"weights")
    assert any(e.model.startswith("open_clip:hf-hub:") and not e.cached for e in catalog)
    assert no_network == []


def test_remote_file_text_says_what_to_check_a_copy_by_hand_against(tmp_path):
    from anchordiv.encoders import RemoteFile

    digest = hashlib.sha256(b"weights").hexdigest()
    text = RemoteFile("ViT-B-32.pt", "https://example.org/ViT-B-32.pt", 605_132_968, digest, tmp_path,
                      size_is_estimate=True).text()
    assert text == f"ViT-B-32.pt from https://example.org/ViT-B-32.pt, ≈ 605.1 MB, sha256 {digest[:12]}…"
    assert "sha256" not in RemoteFile("a.bin", "https://example.org/a.bin", None, None, tmp_path).text()


def test_size_estimate_counts_the_architecture(tiny, tmp_path):
    from anchordiv.encoders.sizes import estimated_size_bytes
    from loopback_hub import WEIGHTS_NAME, tiny_hub_files

    # The real download: the float32 safetensors file of the architecture (its header is a few kB).
    published = len(tiny_hub_files(tmp_path, dtype=torch.float32)[WEIGHTS_NAME])
    assert estimated_size_bytes(TINY_ARCH) == pytest.approx(published, rel=0.01)
    assert estimated_size_bytes(TINY_ARCH) <= published  # no buffer the file lacks (the attention mask)


def parse(model, pretrained=None):
    from anchordiv.encoders import parse_model_spec

    return parse_model_spec(model, pretrained)


def test_file_that_does_not_fit_the_architecture(tmp_path):
    wrong = tmp_path / "wrong.pt"
    torch.save({"not_a_clip_weight": torch.zeros(3)}, wrong)
    with pytest.raises(ValueError, match=f"could not load .*wrong.pt as open_clip '{TINY_ARCH}' weights"):
        load_encoder(TINY, pretrained=str(wrong))


def test_base_class_contract():
    class Constant(Encoder):
        """Minimal subclass: un-normalised float64 outputs must come back unit-norm float32."""

        def _encode_image_batch(self, images):
            return torch.full((len(images), self.dim), 3.0, dtype=torch.float64)

        def _encode_text_batch(self, texts):
            return torch.ones((len(texts), self.dim + 1))

    encoder = Constant(name="test:constant", dim=4, logit_scale=10, device="cpu")
    out = encoder.encode_images(images(3), batch_size=2)
    assert out.dtype == torch.float32 and out.shape == (3, 4)
    torch.testing.assert_close(out, torch.full((3, 4), 0.5))
    with pytest.raises(RuntimeError, match=r"expected \(1, 4\)"):
        encoder.encode_texts(["wrong width"])


def test_download_happens_only_when_allowed(tmp_path, no_network):
    from anchordiv.encoders import ModelUnavailable

    with pytest.raises(CheckpointNotFound) as refused:
        resolve_checkpoint("ViT-B-32", B32_TAG, cache_dir=tmp_path / "empty-hub")
    assert not isinstance(refused.value, ModelUnavailable) and no_network == []
    with pytest.raises(ModelUnavailable, match="could not be reached.*fetch-model open_clip:ViT-B-32 --pretrained"):
        resolve_checkpoint("ViT-B-32", B32_TAG, allow_download=True, cache_dir=tmp_path / "empty-hub")
    assert no_network  # allowed: it tried


def test_default_device_is_the_library_default(tiny):
    from anchordiv.device import default_device

    assert load_encoder(TINY, pretrained=str(tiny[0])).device == default_device()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu(tiny):
    pictures = images(4)
    on_cpu = load_encoder(TINY, pretrained=str(tiny[0]), device="cpu")
    on_gpu = load_encoder(TINY, pretrained=str(tiny[0]), device="cuda")
    got = on_gpu.encode_images(pictures)
    assert got.device.type == "cpu"
    # Loose: cuDNN may run the patch convolution in TF32.
    torch.testing.assert_close(got, on_cpu.encode_images(pictures), rtol=1e-2, atol=2e-3)
    torch.testing.assert_close(on_gpu.encode_texts(TEXTS), on_cpu.encode_texts(TEXTS), rtol=1e-2, atol=2e-3)


def test_the_shipped_size_counts_are_the_installed_open_clips():
    """The counts that ship (the sidebar's sizes without building every architecture) match a fresh
    count on the meta device, for a few common architectures; a new open_clip adds, never changes."""
    import json

    from anchordiv.encoders.sizes import SHIPPED_COUNTS, state_dict_count

    shipped = json.loads(SHIPPED_COUNTS.read_text(encoding="utf-8"))
    for arch in ("ViT-B-32", "ViT-B-16", "RN50", "ViT-B-16-SigLIP"):
        assert shipped[arch] == state_dict_count(arch), arch


def test_the_shipped_hub_sources_are_the_installed_open_clips():
    """The hub repository -> architecture table that ships (so that refusing a hub model offline needs
    no import of open_clip) is the installed open_clip's registry, and is what hub_sources() reads."""
    import json

    from anchordiv.encoders.hub_models import SHIPPED_HUB_SOURCES, hub_sources, registry_hub_sources
    from anchordiv.encoders.sizes import open_clip_version

    shipped = json.loads(SHIPPED_HUB_SOURCES.read_text(encoding="utf-8"))
    assert shipped["open_clip"] == open_clip_version(), "run anchordiv.encoders.hub_models.write_shipped_hub_sources()"
    assert shipped["sources"] == registry_hub_sources() == hub_sources()


def test_a_hub_refusal_imports_no_open_clip(tmp_path):
    """Refusing a hub model that is not on disk (downloads off) reads the shipped tables only."""
    code = ("import sys\nfrom anchordiv.encoders import load_encoder\nfrom anchordiv.encoders.base import CheckpointNotFound\n"
            "try:\n    load_encoder('open_clip:hf-hub:timm/ViT-B-16-SigLIP', device='cpu')\n"
            "except CheckpointNotFound as error:\n    print('refused', '≈' in str(error), 'open_clip' in sys.modules)\n")
    env = {**os.environ, "ANCHORDIV_CACHE": str(tmp_path / "ad"), "HF_HUB_CACHE": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["refused", "True", "False"], done.stdout + done.stderr


def test_one_refusal_in_the_library_s_words_and_the_command_line_s(tmp_path, no_network):
    """A refusal that names the loader's arguments keeps them as parts (issue 52, F7): ``str()`` says
    them as keyword arguments, for code (and for the explorer, which words them for its page);
    ``say(option_words)`` as the command line's options; and the parts survive pickling."""
    import pickle

    from anchordiv.encoders.advice import AdvisedError, keyword_words, option_words, said

    with pytest.raises(CheckpointNotFound) as caught:
        load_encoder("open_clip:ViT-B-32", pretrained=B32_TAG, cache_dir=tmp_path / "empty-hub")
    refused = caught.value
    assert isinstance(refused, AdvisedError) and str(refused) == refused.say(keyword_words)
    assert f"open_clip:ViT-B-32 pretrained={B32_TAG!r}:" in str(refused)
    assert "allow the download with allow_download=True," in str(refused) and "CLI:" not in str(refused)
    worded = said(refused, option_words)
    assert f"open_clip:ViT-B-32 --pretrained {B32_TAG}:" in worded
    assert "or pass --pretrained /path/to/open_clip_pytorch_model.bin (" in worded
    assert "allow the download with --allow-download," in worded and "allow_download" not in worded
    assert said(pickle.loads(pickle.dumps(refused)), option_words) == worded
    assert said(ValueError("plain"), option_words) == "plain"
    with pytest.raises(CheckpointNotFound, match="needs pretrained=PATH_OR_TAG: a checkpoint file"):
        load_encoder(TINY)
    with pytest.raises(ValueError) as caught:
        load_encoder("open_clip:")
    assert "with pretrained='laion2b_s34b_b79k' or pretrained=/path/to/checkpoint" in str(caught.value)
    assert "with --pretrained laion2b_s34b_b79k or --pretrained /path/to/checkpoint" in said(caught.value, option_words)


@pytest.mark.parametrize("content", [b"", b"\x80\x02garbage", b"PK\x03\x04 cut short"], ids=["empty", "pickle", "zip"])
def test_an_unreadable_checkpoint_is_not_called_a_mismatch(tiny, tmp_path, content):
    """A file torch or safetensors cannot read (issue 52, F8) is named as damaged or not a checkpoint,
    never with torch's advice to load it with weights_only=False; a readable file of other weights is
    still named as not fitting."""
    damaged = tmp_path / "damaged.pt"
    damaged.write_bytes(content + os.urandom(512))
    with pytest.raises(ValueError) as caught:
        load_encoder(TINY, pretrained=str(damaged))
    message = str(caught.value)
    assert message.startswith(f"{damaged} is not a readable checkpoint: it is damaged"), message
    assert message.endswith(f"use a sound copy of it, or another file: a checkpoint saved for open_clip {TINY_ARCH!r} "
                            "(a state dict as .pt, .pth, .bin or .safetensors)"), message
    assert "weights_only" not in message and "arbitrary code" not in message
