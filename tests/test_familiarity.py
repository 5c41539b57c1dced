"""The built-in model's familiarity check: every real photo that installed packages ship (both the
tuning and the reporting half, whole and in greyscale) is outside its emoji world, fresh crops of
them mostly are, and held-out world images of every style are inside; the explorer says so by an
uploaded photo and not by an uploaded emoji, and once in the sidebar for a folder of photos but
not for a folder of emoji (AppTest)."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from PIL import Image

from app_pages import open_page
from helpers import encoded
from markup import plain
from anchordiv.builtin.familiarity import (MANIFEST_NAME, REFERENCE_NAME, familiarity, image_features,
                                           images_outside_world, load_reference)
from anchordiv.builtin.familiarity_study import (MAX_FLAGGED_EMOJI, photo_halves, photo_variants, sample_photos,
                                                 style_threshold)
from anchordiv.builtin.weights import ASSETS_DIR
from anchordiv.datasets import open_emoji_world

PER_STYLE = 5


@pytest.fixture(scope="module")
def reference(encoder):
    reference = load_reference(encoder.weights_sha256)
    assert reference is not None, "the shipped familiarity reference does not belong to the shipped weights"
    return reference


@pytest.fixture(scope="module")
def photos():
    return sample_photos()


def world_images(split: str, count: int) -> list[Image.Image]:
    """``count`` images of ``split`` spread evenly over it (so over its emoji and all its styles)."""
    world = open_emoji_world(split)
    return [Image.fromarray(world.image(int(item))) for item in np.linspace(0, len(world) - 1, count).round()]


def heldout_by_style(per_style: int) -> dict[str, list[Image.Image]]:
    """A fixed sample of the held-out split: ``per_style`` images of each style, evenly spread."""
    world = open_emoji_world("heldout")
    styles = world.labels["style"].to_numpy()
    return {style: [Image.fromarray(world.image(int(item)))
                    for item in np.flatnonzero(styles == style)[np.linspace(0, (styles == style).sum() - 1,
                                                                            per_style).round().astype(int)]]
            for style in np.unique(styles)}


def test_the_photos_are_many_and_split_by_photo(photos):
    tune, report = photo_halves(photos)
    assert len(photos) >= 15 and "chelsea" in photos
    assert set(tune) | set(report) == set(photos) and not set(tune) & set(report) and abs(len(tune) - len(report)) <= 1


# The one whole photo the chosen statistic misses, in colour (its greyscale is flagged): scikit-image's
# retina, an orange disc on black, which the reporting figures name (docs/builtin-model.md).
KNOWN_MISS = pytest.mark.xfail(strict=True, reason="the retina photo in colour passes for a drawing on black")


@pytest.mark.parametrize("name", [pytest.param(name, marks=KNOWN_MISS) if name == "retina" else name
                                  for name in sorted(sample_photos())])
def test_every_whole_photo_and_its_greyscale_is_outside_the_world(encoder, reference, photos, name):
    assert images_outside_world(encoder, photo_variants(photos[name], count=0), reference).tolist() == [True, True]


def test_most_fresh_crops_of_every_photo_are_outside_the_world(encoder, reference, photos):
    """Fresh crops (another seed than the study's): more than half of each photo's get the notice."""
    shares = {name: float(images_outside_world(encoder, photo_variants(photo, count=12, seed=1)[2:], reference).mean())
              for name, photo in photos.items()}
    assert all(share > 0.5 for share in shares.values()), shares


def test_held_out_world_images_of_every_style_are_inside(encoder, reference):
    """A fixed sample, 5 per style. The threshold lets about 1% of held-out emoji through as
    unfamiliar (its figures, docs/builtin-model.md), so at most one of the 35 may be flagged: it is
    one oil painting."""
    flagged = {style: int(images_outside_world(encoder, images, reference).sum())
               for style, images in heldout_by_style(PER_STYLE).items()}
    assert len(flagged) == 7 and sum(flagged.values()) <= 1, flagged


def test_training_world_images_are_inside(encoder, reference):
    assert images_outside_world(encoder, world_images("train", 140), reference).mean() <= 2 * MAX_FLAGGED_EMOJI


def test_photos_score_below_emoji(encoder, reference, photos):
    scores = familiarity(image_features(encoder, [photos["chelsea"]] + world_images("train", 7)), reference)
    assert scores[0] < reference.threshold < scores[1:].min()


def test_the_threshold_flags_at_most_one_percent_of_every_style():
    rng = np.random.default_rng(0)
    styles = np.repeat(["a", "b"], 1000)
    scores = np.r_[rng.normal(0, 1, 1000), rng.normal(5, 1, 1000)]  # style a scores far lower
    threshold = style_threshold(scores, np.ones(2000, bool), styles)
    assert np.mean(scores[:1000] < threshold) <= MAX_FLAGGED_EMOJI and np.mean(scores[1000:] < threshold) == 0


def test_bad_features_are_a_clear_error(encoder, reference):
    features = image_features(encoder, world_images("train", 2))
    width = features.shape[1]
    with pytest.raises(ValueError, match="NaN"):
        familiarity(np.where(np.eye(2, width) > 0, np.nan, features), reference)
    with pytest.raises(ValueError, match=rf"\(n, {width}\)"):
        familiarity(features[:, :10], reference)


def test_the_reference_is_small_and_used_only_for_its_weights_and_bytes(encoder, tmp_path):
    assert (ASSETS_DIR / REFERENCE_NAME).stat().st_size < 1_000_000
    for name in (REFERENCE_NAME, MANIFEST_NAME):
        shutil.copy(ASSETS_DIR / name, tmp_path / name)
    assert load_reference(encoder.weights_sha256, tmp_path) is not None
    assert load_reference("0" * 64, tmp_path) is None
    manifest = json.loads((tmp_path / MANIFEST_NAME).read_text())
    (tmp_path / MANIFEST_NAME).write_text(json.dumps({**manifest, "sha256": "f" * 64}))
    with pytest.warns(UserWarning, match="restore it"):
        assert load_reference(encoder.weights_sha256, tmp_path) is None


@pytest.mark.slow
def test_the_page_warns_by_an_uploaded_photo_and_not_by_an_emoji(app_env, photos):
    app = open_page()
    app.radio(key="query_mode").set_value("upload").run()
    app.file_uploader(key="query_upload").set_value(("chelsea.png", encoded(photos["chelsea"]), "image/png")).run()
    warnings = " ".join(plain(warning.value) for warning in app.warning)
    assert not app.exception and "knows emoji drawings only" in warnings and "open_clip" in warnings
    emoji = world_images("train", 3)[1]
    app.file_uploader(key="query_upload").set_value(("emoji.png", encoded(emoji), "image/png")).run()
    assert not app.exception
    assert not any("emoji drawings only" in plain(warning.value) for warning in app.warning)


def folder_page(folder: str) -> None:
    """A page that embeds ``folder`` under the built-in model and calls the folder notice (AppTest script)."""
    from anchordiv.app.photo_notice import folder_notice
    from anchordiv.encoders import load_encoder
    from anchordiv.gallery import folder_gallery

    encoder = load_encoder("builtin", device="cpu")
    folder_notice(encoder, folder_gallery(folder, encoder))


def test_folder_notice_for_a_folder_of_photos_and_not_of_emoji(app_env, photos, tmp_path):
    from streamlit.testing.v1 import AppTest

    crops = [crop for name in ("chelsea", "coffee", "moon", "astronaut") for crop in
             photo_variants(photos[name], count=6, seed=2)[2:]]
    folders = {"photos": crops, "emoji": [image for images in heldout_by_style(3).values() for image in images]}
    warnings = {}
    for kind, images in folders.items():
        (tmp_path / kind).mkdir()
        for index, image in enumerate(images):
            image.save(tmp_path / kind / f"{index:02d}.png")
        app = AppTest.from_function(folder_page, args=(str(tmp_path / kind),), default_timeout=120).run()
        assert not app.exception, app.exception
        warnings[kind] = [plain(warning.value) for warning in app.sidebar.warning]
    assert len(warnings["photos"]) == 1 and "Most images in this folder" in warnings["photos"][0], warnings
    assert warnings["emoji"] == [], warnings
