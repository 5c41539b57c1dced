"""The built-in world's shipped embeddings: made by the shipped model from the shipped data, used
only for them, and never trusted when their bytes or their provenance differ."""
import json
import warnings

import numpy as np
import pytest
import torch

from anchordiv.datasets.world_embeddings import (DTYPE, EMBEDDINGS_NAME, MANIFEST_NAME, save_world_embeddings,
                                                 shipped_world_embeddings)
from anchordiv.datasets import open_emoji_world
from anchordiv.gallery import embed_world, world_gallery


def test_the_shipped_embeddings_belong_to_the_shipped_model_and_data(encoder):
    """A retrained model or changed data without `embed-builtin-world` fails here, not at a user's first start."""
    world = open_emoji_world("all")
    vectors = shipped_world_embeddings(encoder.weights_sha256, world.digest)
    assert vectors is not None, "run `python -m anchordiv embed-builtin-world` and commit assets/"
    assert vectors.shape == (len(world), encoder.dim) and vectors.dtype == DTYPE


def test_the_shipped_embeddings_are_what_the_model_makes_of_the_images(encoder):
    world = open_emoji_world("all")
    shipped = shipped_world_embeddings(encoder.weights_sha256, world.digest)
    from PIL import Image

    rows = np.random.default_rng(0).choice(len(world), size=48, replace=False)
    made = encoder.encode_images([Image.fromarray(world.image(row), "RGB") for row in rows]).numpy()
    # float16 keeps about 3 decimal digits; a wrong row or model would be off by far more.
    np.testing.assert_allclose(np.asarray(shipped[rows], np.float32), made, atol=2e-3)


def test_world_gallery_uses_them_and_slices_by_split(encoder):
    world, heldout = open_emoji_world("all"), open_emoji_world("heldout")
    gallery = world_gallery(encoder, split="heldout", limit=50)
    shipped = shipped_world_embeddings(encoder.weights_sha256, world.digest)
    assert torch.equal(gallery.embeddings, torch.from_numpy(np.asarray(shipped[heldout.rows[:50]], np.float32)))
    assert gallery.labels.equals(heldout.labels.iloc[:50].reset_index(drop=True))
    assert np.array_equal(np.asarray(gallery.image(7)), heldout.image(7))


def test_other_weights_or_data_get_none_and_a_damaged_file_a_warning(tmp_path):
    vectors = np.random.default_rng(1).normal(size=(6, 4)).astype(np.float32)
    save_world_embeddings(vectors, "w" * 64, "d" * 64, tmp_path)
    loaded = shipped_world_embeddings("w" * 64, "d" * 64, tmp_path)
    np.testing.assert_array_equal(loaded, vectors.astype(DTYPE))
    assert shipped_world_embeddings("x" * 64, "d" * 64, tmp_path) is None
    assert shipped_world_embeddings("w" * 64, "e" * 64, tmp_path) is None
    assert shipped_world_embeddings(None, "d" * 64, tmp_path) is None
    assert shipped_world_embeddings("w" * 64, "d" * 64, tmp_path / "elsewhere") is None

    data = bytearray((tmp_path / EMBEDDINGS_NAME).read_bytes())
    data[-1] ^= 0xFF
    (tmp_path / EMBEDDINGS_NAME).write_bytes(bytes(data))
    with pytest.warns(UserWarning, match="embedded again instead"):
        assert shipped_world_embeddings("w" * 64, "d" * 64, tmp_path) is None
    (tmp_path / MANIFEST_NAME).write_text("[not a manifest")
    with pytest.warns(UserWarning, match="cannot read the shipped world embeddings"):
        assert shipped_world_embeddings("w" * 64, "d" * 64, tmp_path) is None
    (tmp_path / MANIFEST_NAME).write_text(json.dumps(["a list"]))
    with pytest.warns(UserWarning):
        assert shipped_world_embeddings("w" * 64, "d" * 64, tmp_path) is None


def test_an_encoder_they_do_not_belong_to_embeds_the_world_with_progress(encoder, monkeypatch, tmp_path):
    """The rebuild path: same rows, made by embed_world, cached, with progress reported."""
    monkeypatch.setenv("ANCHORDIV_CACHE", str(tmp_path))
    monkeypatch.setattr(encoder, "weights_sha256", "retrained" + "0" * 55)
    monkeypatch.setattr(encoder, "name", encoder.name + "-retrained-for-test")
    reports = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gallery = world_gallery(encoder, split="heldout", limit=20, progress=lambda f, text: reports.append((f, text)))
    assert reports[0][1].startswith("Rendering") and reports[-1] == (1.0, "Embedding the gallery: 20 / 20 images")
    np.testing.assert_array_equal(gallery.embeddings.numpy(),
                                  embed_world(encoder, "heldout", 20).astype(np.float32))
    again = world_gallery(encoder, split="heldout", limit=20, progress=lambda f, text: reports.append("again"))
    assert "again" not in reports and torch.equal(again.embeddings, gallery.embeddings)
