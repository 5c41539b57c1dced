"""Safe image loading, the embedding cache and the ``embed`` command."""
from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image

import anchordiv.embeddings.vector_cache as embedding_cache
from anchordiv.cli import main
from anchordiv.cache import atomic_write
from anchordiv.embeddings import embed_folder
from anchordiv.encoders import Encoder
from anchordiv.images import MAX_BYTES, ImageLoadError, load_image
from helpers import encoded
from tiny_open_clip import TINY_ARCH, make_tiny_checkpoint

GOOD = ["cats/a.png", "cats/b.jpg", "dogs/c.webp", "dogs/puppies/d.bmp", "top.gif"]
BAD = {  # relative path -> words its reason must contain
    "bad/bomb.png": "pixels",
    "bad/corrupt.png": "not an image",
    "bad/huge.jpg": "MB limit",
    "bad/truncated.png": "damaged or cut off",
    "notes.txt": "not an image",
}


class CountingEncoder(Encoder):
    """Test double standing in for a real model, only to keep the cache tests fast.

    The "embedding" is a fixed random projection of an 8x8 thumbnail, so equal pictures get equal
    vectors; ``images_seen`` counts what was actually encoded.
    """

    def __init__(self, name: str = "test:counting"):
        super().__init__(name=name, dim=16, logit_scale=10.0, device="cpu")
        self.images_seen = 0
        self.projection = torch.randn(8 * 8 * 3, 16, generator=torch.Generator().manual_seed(0))

    def _encode_image_batch(self, images):
        self.images_seen += len(images)
        thumbnails = [np.asarray(image.resize((8, 8)), dtype=np.float32).reshape(-1) for image in images]
        return torch.from_numpy(np.stack(thumbnails)) @ self.projection

    def _encode_text_batch(self, texts):
        raise AssertionError("the cache tests embed no text")


def png_header_claiming(width: int, height: int) -> bytes:
    """A valid PNG signature and IHDR for width x height RGB, with a few bytes of data: a decompression bomb."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b""))


def picture(seed: int, size=(20, 16)) -> Image.Image:
    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


@pytest.fixture
def folder(tmp_path, cache) -> Path:
    """Five good images (labels: cats, dogs, dogs/puppies, none) and one file of each bad kind; the
    test's own anchordiv cache."""
    root = tmp_path / "gallery"
    for seed, rel in enumerate(GOOD):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        picture(seed).save(path, {".jpg": "JPEG", ".webp": "WEBP", ".bmp": "BMP", ".gif": "GIF"}.get(path.suffix, "PNG"))
    (root / "bad").mkdir()
    (root / "bad/bomb.png").write_bytes(png_header_claiming(100_000, 100_000))
    (root / "bad/corrupt.png").write_bytes(np.random.default_rng(9).bytes(500))
    with open(root / "bad/huge.jpg", "wb") as handle:
        handle.truncate(MAX_BYTES + 1)  # sparse: costs no disk, and must never be read
    (root / "bad/truncated.png").write_bytes(encoded(picture(7, (64, 64)))[:300])
    (root / "notes.txt").write_text("not a picture")
    (root / ".hidden").mkdir()
    (root / ".hidden/ignored.png").write_bytes(encoded(picture(8)))
    return root


def cache_files(tmp_path: Path) -> list[str]:
    return sorted(path.name for path in (tmp_path / "cache").rglob("*") if path.is_file())


# ---- image loading -------------------------------------------------------------------------------

def test_load_image_orientation_alpha_palette_and_bytes():
    wide = picture(0, (30, 10))
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 degrees clockwise to display"
    buffer = io.BytesIO()
    wide.save(buffer, "JPEG", exif=exif)
    assert load_image(buffer.getvalue()).size == (10, 30)

    transparent = Image.new("RGBA", (4, 4), (255, 0, 0, 0))
    assert load_image(encoded(transparent)).getpixel((0, 0)) == (255, 255, 255)
    palette = Image.new("P", (4, 4), 0)
    palette.putpalette([0, 0, 0] * 256)
    palette.info["transparency"] = 0
    assert load_image(encoded(palette)).getpixel((1, 1)) == (255, 255, 255)
    gray = Image.new("L", (5, 5), 100)
    assert load_image(encoded(gray)).mode == "RGB"


def test_load_image_first_gif_frame(tmp_path):
    frames = [Image.new("RGB", (6, 6), color) for color in ("red", "blue")]
    path = tmp_path / "anim.gif"
    frames[0].save(path, save_all=True, append_images=frames[1:])
    assert load_image(path).getpixel((0, 0)) == (255, 0, 0)


@pytest.mark.parametrize("data, words", [
    (png_header_claiming(100_000, 100_000), "too many pixels"),
    (png_header_claiming(8000, 6000), "8000 x 6000 pixels (48 megapixels) is over the 40-megapixel limit"),
    (b"%PDF-1.4 not an image", "not an image in an accepted format (PNG, JPEG, WebP, GIF or BMP)"),
    (b"", "not an image"),
], ids=["bomb", "over-limit", "pdf", "empty"])
def test_load_image_refusals_are_readable(data, words):
    with pytest.raises(ImageLoadError) as caught:
        load_image(data, name="photo.png")
    assert str(caught.value).startswith("photo.png: ") and words in str(caught.value)


def test_load_image_size_limit_and_missing_file(tmp_path, monkeypatch):
    monkeypatch.setattr("anchordiv.images.MAX_BYTES", 100)
    with pytest.raises(ImageLoadError, match="over the 0 MB limit"):
        load_image(encoded(picture(0, (64, 64))))
    with pytest.raises(ImageLoadError, match="no such file"):
        load_image(tmp_path / "absent.png")


# ---- embed_folder and its cache ------------------------------------------------------------------

def test_bad_files_are_reported_and_the_rest_embedded(folder):
    encoder = CountingEncoder()
    gallery = embed_folder(folder, encoder, progress=False)
    assert gallery.paths == sorted(GOOD)
    assert gallery.embeddings.shape == (5, 16) and gallery.embeddings.dtype == torch.float32
    torch.testing.assert_close(gallery.embeddings.norm(dim=1), torch.ones(5))
    assert dict(gallery.skipped).keys() == BAD.keys()
    for path, reason in gallery.skipped:
        assert BAD[path] in reason
    assert gallery.labels["path"].tolist() == gallery.paths
    assert gallery.labels["label"].tolist() == ["cats", "cats", "dogs", "dogs/puppies", None]
    assert gallery.encoder_name == "test:counting" and gallery.reused == 0 and encoder.images_seen == 5
    # Rows follow paths: the cats/a.png row is that picture's embedding.
    torch.testing.assert_close(gallery.embeddings[0], encoder.encode_images([picture(0)])[0])


def test_cache_is_reused_without_encoding(folder):
    first = embed_folder(folder, CountingEncoder(), progress=False)
    encoder = CountingEncoder()
    again = embed_folder(folder, encoder, progress=False)
    assert encoder.images_seen == 0 and again.reused == 5
    torch.testing.assert_close(again.embeddings, first.embeddings, rtol=0, atol=0)
    assert again.paths == first.paths and again.skipped == first.skipped
    pd.testing.assert_frame_equal(again.labels, first.labels)
    other_model = CountingEncoder(name="test:another-model")
    embed_folder(folder, other_model, progress=False)
    assert other_model.images_seen == 5  # the cache is per encoder


def test_edit_add_remove_rename_are_detected_incrementally(folder):
    embed_folder(folder, CountingEncoder(), progress=False)

    picture(100).save(folder / "cats/a.png")
    encoder = CountingEncoder()
    edited = embed_folder(folder, encoder, progress=False)
    assert encoder.images_seen == 1 and edited.reused == 4
    torch.testing.assert_close(edited.embeddings[0], encoder.encode_images([picture(100)])[0])

    picture(101).save(folder / "cats/new.png")
    encoder = CountingEncoder()
    added = embed_folder(folder, encoder, progress=False)
    assert encoder.images_seen == 1 and "cats/new.png" in added.paths

    (folder / "dogs/c.webp").unlink()
    (folder / "cats/b.jpg").rename(folder / "dogs/b.jpg")
    encoder = CountingEncoder()
    moved = embed_folder(folder, encoder, progress=False)
    assert encoder.images_seen == 0  # same contents, new places: nothing to encode
    assert "dogs/c.webp" not in moved.paths and "dogs/b.jpg" in moved.paths
    assert moved.labels.set_index("path").loc["dogs/b.jpg", "label"] == "dogs"

    encoder = CountingEncoder()
    assert embed_folder(folder, encoder, progress=False).reused == len(moved.paths) and encoder.images_seen == 0


@pytest.mark.parametrize("damage", ["truncate", "flip-bytes", "delete-meta", "garble-meta"])
def test_damaged_cache_is_rebuilt(folder, damage):
    first = embed_folder(folder, CountingEncoder(), progress=False)
    data = first.cache_path
    meta = data.with_name(data.name + ".json")
    if damage == "truncate":
        data.write_bytes(data.read_bytes()[:-40])
    elif damage == "flip-bytes":
        raw = bytearray(data.read_bytes())
        raw[-1] ^= 0xFF
        data.write_bytes(bytes(raw))
    elif damage == "delete-meta":
        meta.unlink()
    else:
        meta.write_text("{not json")
    encoder = CountingEncoder()
    rebuilt = embed_folder(folder, encoder, progress=False)
    assert encoder.images_seen == 5 and rebuilt.reused == 0
    torch.testing.assert_close(rebuilt.embeddings, first.embeddings, rtol=0, atol=0)
    assert embed_folder(folder, CountingEncoder(), progress=False).reused == 5  # and it is trusted again


def test_run_killed_between_data_and_meta_is_not_trusted(folder, monkeypatch):
    embed_folder(folder, CountingEncoder(), progress=False)
    picture(100).save(folder / "cats/a.png")
    writes = []

    def killed_before_meta(path, write):
        writes.append(path)
        if path.suffix == ".json":
            raise KeyboardInterrupt  # stands in for SIGKILL after the new vectors replaced the old ones
        atomic_write(path, write)

    # A context, not monkeypatch.undo(): that would also unset the fixture's ANCHORDIV_CACHE.
    with monkeypatch.context() as patch, pytest.raises(KeyboardInterrupt):
        patch.setattr(embedding_cache, "atomic_write", killed_before_meta)
        embed_folder(folder, CountingEncoder(), progress=False)
    assert [path.suffix for path in writes] == [".npz", ".npy", ".json"]  # the finished batch, then the cache

    encoder = CountingEncoder()
    after = embed_folder(folder, encoder, progress=False)
    # The old meta no longer vouches for the data, so only the killed run's finished batch (the edit) is reused.
    assert encoder.images_seen == 4 and after.reused == 1
    torch.testing.assert_close(after.embeddings[0], encoder.encode_images([picture(100)])[0])


def test_run_killed_while_writing_data_leaves_nothing_to_trust(folder, tmp_path, monkeypatch):
    def dies_mid_write(path, write):
        if path.suffix != ".npy":  # the finished batches are written; the run dies writing the full cache
            return atomic_write(path, write)

        def partial(handle):
            handle.write(b"\x93NUMPY half a file")
            raise KeyboardInterrupt

        atomic_write(path, partial)

    with monkeypatch.context() as patch, pytest.raises(KeyboardInterrupt):
        patch.setattr(embedding_cache, "atomic_write", dies_mid_write)
        embed_folder(folder, CountingEncoder(), progress=False)
    # atomic_write removed its temporary file; what is left is the finished batch, kept for the next run.
    assert not [name for name in cache_files(tmp_path) if name.endswith(".tmp") or name.endswith(".npy")]
    assert [name.startswith("batch-") for name in cache_files(tmp_path)] == [True, False]  # and the lock

    encoder = CountingEncoder()
    assert embed_folder(folder, encoder, progress=False).reused == 5 and encoder.images_seen == 0
    assert [name.rpartition(".")[2] for name in cache_files(tmp_path)] == ["npy", "json"]  # partial folder gone


def test_labels_csv_joins_on_path_or_filename(folder, tmp_path):
    by_path = tmp_path / "by_path.csv"
    pd.DataFrame({"path": ["./cats/a.png", "dogs\\c.webp", "elsewhere.png"], "label": ["tabby", "corgi", "x"],
                  "style": ["photo", "sketch", "x"]}).to_csv(by_path, index=False)
    gallery = embed_folder(folder, CountingEncoder(), labels_csv=by_path, progress=False)
    table = gallery.labels.set_index("path")
    assert list(gallery.labels.columns) == ["path", "label", "style"]
    assert table.loc["cats/a.png", "label"] == "tabby" and table.loc["dogs/c.webp", "style"] == "sketch"
    assert pd.isna(table.loc["top.gif", "label"])

    by_name = folder / "labels.csv"  # inside the folder: used as labels, not reported as a skipped file
    pd.DataFrame({"filename": ["b.jpg", "d.bmp"], "breed": ["siamese", "beagle"]}).to_csv(by_name, index=False)
    gallery = embed_folder(folder, CountingEncoder(), labels_csv=by_name, progress=False)
    table = gallery.labels.set_index("path")
    assert table.loc["dogs/puppies/d.bmp", "breed"] == "beagle" and table.loc["cats/a.png", "label"] == "cats"
    assert "labels.csv" not in dict(gallery.skipped)


def test_labels_csv_errors(folder, tmp_path):
    no_key = tmp_path / "no_key.csv"
    pd.DataFrame({"image": ["a.png"], "label": ["x"]}).to_csv(no_key, index=False)
    # The header is the file's content: a shared server must not show it, so only its size is named.
    with pytest.raises(ValueError, match=r"needs a 'path' column .* its header has 2 column\(s\), none of them named so"):
        embed_folder(folder, CountingEncoder(), labels_csv=no_key, progress=False)
    picture(50).save(folder / "dogs/a.png")
    by_name = tmp_path / "by_name.csv"
    pd.DataFrame({"filename": ["a.png"], "label": ["x"]}).to_csv(by_name, index=False)
    with pytest.raises(ValueError, match="'a.png' occurs in several folders"):
        embed_folder(folder, CountingEncoder(), labels_csv=by_name, progress=False)
    with pytest.raises(ValueError, match="labels CSV .* does not exist"):
        embed_folder(folder, CountingEncoder(), labels_csv=tmp_path / "absent.csv", progress=False)
    with pytest.raises(ValueError, match="does not exist or is not a folder"):
        embed_folder(tmp_path / "absent", CountingEncoder(), progress=False)


def test_empty_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("ANCHORDIV_CACHE", str(tmp_path / "cache"))
    (tmp_path / "empty").mkdir()
    gallery = embed_folder(tmp_path / "empty", CountingEncoder(), progress=False)
    assert gallery.embeddings.shape == (0, 16) and gallery.paths == [] and len(gallery.labels) == 0


# ---- the embed command ---------------------------------------------------------------------------

def test_embed_command_end_to_end_with_open_clip(folder, tmp_path, capsys):
    checkpoint, _ = make_tiny_checkpoint(tmp_path)
    out = tmp_path / "export" / "gallery.npz"
    command = ["embed", str(folder), "--encoder", f"open_clip:{TINY_ARCH}", "--pretrained", str(checkpoint),
               "--batch-size", "2", "--device", "cpu", "--out", str(out)]
    assert main(command) == 0
    printed = capsys.readouterr().out
    assert "embedded 5 images: 0 reused from the cache, 5 newly encoded" in printed
    assert "skipped 5 files (not in the gallery):" in printed
    for path in BAD:
        assert f"  {path}: " in printed
    exported = np.load(out)
    assert exported["embeddings"].shape == (5, 32) and exported["paths"].tolist() == sorted(GOOD)
    assert exported["labels"].tolist() == ["cats", "cats", "dogs", "dogs/puppies", ""]
    assert str(exported["encoder_name"]).startswith(f"open_clip:{TINY_ARCH}@")

    assert main(command) == 0
    assert "embedded 5 images: 5 reused from the cache, 0 newly encoded" in capsys.readouterr().out


@pytest.mark.parametrize("argv, words", [
    (["--encoder", "open_clip:ViT-B-32", "--pretrained", "/no/such/weights.pt"], "neither an existing checkpoint file"),
    (["--encoder", "open_clip:ViT-B-32", "--pretrained", "laion2b_s34b_b79k"], "are not on this machine"),
    (["--encoder", "clip"], "unknown encoder spec 'clip'"),
], ids=["missing-file", "tag-not-cached", "bad-spec"])
def test_embed_command_errors_exit_2_with_one_line(folder, tmp_path, monkeypatch, capsys, argv, words):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    monkeypatch.setenv("HOME", str(tmp_path))  # open_clip's ~/.cache/clip
    assert main(["embed", str(folder), *argv]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("anchordiv embed: ") and words in captured.err
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err


def test_embed_command_missing_folder(tmp_path, capsys):
    assert main(["embed", str(tmp_path / "absent"), "--encoder", f"open_clip:{TINY_ARCH}",
                 "--pretrained", str(make_tiny_checkpoint(tmp_path)[0])]) == 2
    assert "does not exist or is not a folder" in capsys.readouterr().err


# ---- a run killed for real keeps its finished batches -------------------------------------------

KILLED_RUN = """
import sys, time
sys.path.insert(0, sys.argv[3])
from test_embeddings import CountingEncoder
from anchordiv.embeddings import embed_folder

class SlowEncoder(CountingEncoder):
    def _encode_image_batch(self, images):
        time.sleep(0.15)  # time for the parent to see some batches land, and to kill the run mid-way
        return super()._encode_image_batch(images)

embed_folder(sys.argv[1], SlowEncoder(), batch_size=int(sys.argv[2]), progress=False)
"""


def test_sigkilled_run_resumes_where_it_stopped(tmp_path, monkeypatch):
    import os
    import signal
    import subprocess
    import sys
    import time

    cache = tmp_path / "cache"
    monkeypatch.setenv("ANCHORDIV_CACHE", str(cache))
    root = tmp_path / "many"
    for index in range(200):
        path = root / f"class{index % 4}" / f"{index:03d}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        picture(index, (6, 5)).save(path)
    batch_size = 8
    run = subprocess.Popen([sys.executable, "-c", KILLED_RUN, str(root), str(batch_size), str(Path(__file__).parent)],
                           env={**os.environ, "ANCHORDIV_CACHE": str(cache)}, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 90
        while len(list(cache.rglob("batch-*.npz"))) < 3:
            assert run.poll() is None, f"the run ended before it could be killed: {run.stderr.read().decode()[-2000:]}"
            assert time.monotonic() < deadline, "no batches were written within 90 s"
            time.sleep(0.01)
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait()
        run.stderr.close()
    partial = next(cache.rglob("*.partial"))
    (partial / ".batch-leftover.npz.abc123.tmp").write_bytes(b"")  # what a kill inside atomic_write leaves
    kept = len(list(partial.glob("batch-*.npz")))
    assert 3 <= kept < 200 // batch_size and not list(cache.rglob("*.npy.json"))

    encoder = CountingEncoder()
    resumed = embed_folder(root, encoder, batch_size=batch_size, progress=False)
    assert resumed.reused == kept * batch_size and encoder.images_seen == 200 - kept * batch_size
    assert sorted(path.name for path in cache.rglob("*")) == sorted(  # no partial folder, no temporary files
        ["embeddings", resumed.cache_path.name, resumed.cache_path.name + ".json"])

    monkeypatch.setenv("ANCHORDIV_CACHE", str(tmp_path / "other-cache"))
    uninterrupted = embed_folder(root, CountingEncoder(), batch_size=batch_size, progress=False)
    assert resumed.paths == uninterrupted.paths and len(resumed.paths) == 200
    torch.testing.assert_close(resumed.embeddings, uninterrupted.embeddings, rtol=1e-6, atol=1e-6)
