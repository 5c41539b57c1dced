"""The built-in model's familiarity check: real photos that installed packages ship are outside its
emoji world, world images of both splits (every style) are inside; and the explorer says so by an
uploaded photo and not by an uploaded emoji (AppTest)."""
from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from markup import plain
from anchordiv.builtin.familiarity import (MANIFEST_NAME, REFERENCE_NAME, familiarity, image_signatures,
                                           images_outside_world, load_reference)
from anchordiv.builtin.familiarity_study import photo_variants, sample_photos
from anchordiv.builtin.weights import ASSETS_DIR
from anchordiv.datasets import open_emoji_world

APP = Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py"


@pytest.fixture(scope="module")
def encoder():
    from anchordiv.encoders import load_encoder

    return load_encoder("builtin", device="cpu")


@pytest.fixture(scope="module")
def reference(encoder):
    reference = load_reference(encoder.weights_sha256)
    assert reference is not None, "the shipped familiarity reference does not belong to the shipped weights"
    return reference


def world_images(split: str, count: int) -> list[Image.Image]:
    """``count`` images of ``split`` spread evenly over it (so over its emoji and all its styles)."""
    world = open_emoji_world(split)
    return [Image.fromarray(world.image(int(item))) for item in np.linspace(0, len(world) - 1, count).round()]


def png_bytes(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def test_whole_photos_and_their_greyscale_are_outside_the_world(encoder, reference):
    photos = sample_photos()
    for name in ("china", "flower"):
        whole_and_grey = photo_variants(photos[name], count=0)
        assert images_outside_world(encoder, whole_and_grey, reference).all(), name


def test_most_crops_of_the_photos_are_outside_the_world(encoder, reference):
    """Fresh crops (another seed than the study's). The Grace Hopper portrait, which the threshold
    was not tuned on, is the check's known weak spot (docs/builtin-model.md): about half of its
    crops pass, as do a third of china.jpg's; still more of them than of the emoji are flagged."""
    photos = sample_photos()
    crops = [crop for name in ("china", "flower") for crop in photo_variants(photos[name], count=24, seed=1)[2:]]
    assert images_outside_world(encoder, crops, reference).mean() > 0.6
    hopper = images_outside_world(encoder, photo_variants(photos["grace_hopper"], count=24, seed=1)[2:], reference)
    assert hopper.mean() > 0.25


def test_world_images_of_both_splits_are_inside(encoder, reference):
    """Training emoji almost never get the notice, held-out ones rarely (the threshold lets one
    held-out emoji in twenty through as unfamiliar)."""
    assert images_outside_world(encoder, world_images("train", 140), reference).mean() <= 0.03
    assert images_outside_world(encoder, world_images("heldout", 140), reference).mean() <= 0.12


def test_photos_score_below_emoji(encoder, reference):
    photo = sample_photos()["flower"]
    emoji = world_images("train", 7)
    scores = familiarity(*image_signatures(encoder, [photo] + emoji, reference.stage), reference)
    assert scores[0] < scores[1:].min()


def test_bad_signatures_are_a_clear_error(encoder, reference):
    embeddings, textures = image_signatures(encoder, world_images("train", 2), reference.stage)
    with pytest.raises(ValueError, match="NaN"):
        familiarity(np.where(np.eye(2, embeddings.shape[1]) > 0, np.nan, embeddings), textures, reference)
    with pytest.raises(ValueError, match=r"\(n, 256\)"):
        familiarity(embeddings[:, :10], textures, reference)
    with pytest.raises(ValueError, match="one of each per image"):
        familiarity(embeddings, textures[:1], reference)


def test_the_reference_is_used_only_for_its_weights_and_bytes(encoder, tmp_path):
    for name in (REFERENCE_NAME, MANIFEST_NAME):
        shutil.copy(ASSETS_DIR / name, tmp_path / name)
    assert load_reference(encoder.weights_sha256, tmp_path) is not None
    assert load_reference("0" * 64, tmp_path) is None
    manifest = json.loads((tmp_path / MANIFEST_NAME).read_text())
    (tmp_path / MANIFEST_NAME).write_text(json.dumps({**manifest, "sha256": "f" * 64}))
    with pytest.warns(UserWarning, match="restore it"):
        assert load_reference(encoder.weights_sha256, tmp_path) is None


@pytest.mark.slow
def test_the_page_warns_by_an_uploaded_photo_and_not_by_an_emoji(app_env):
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(str(APP), default_timeout=240).run()
    app.radio(key="query_mode").set_value("Upload").run()
    photo = sample_photos()["china"]
    app.file_uploader(key="query_upload").set_value(("china.jpg", png_bytes(photo), "image/png")).run()
    warnings = " ".join(plain(warning.value) for warning in app.warning)
    assert not app.exception and "knows emoji drawings only" in warnings and "open_clip" in warnings
    emoji = world_images("train", 3)[1]
    app.file_uploader(key="query_upload").set_value(("emoji.png", png_bytes(emoji), "image/png")).run()
    assert not app.exception
    assert not any("emoji drawings only" in plain(warning.value) for warning in app.warning)
