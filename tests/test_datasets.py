"""The emoji world: shipped data, labels and split, renditions, and the render cache.

Whole-world rendering takes about a minute, so loader tests run on a tiny copy of the shipped
data (a few emoji), and every test points ANCHORDIV_CACHE at its own tmp_path.
"""
from __future__ import annotations

import ast
import itertools
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from anchordiv.datasets import STYLES, ShippedDataError, cache_dir, load_emoji_world
from anchordiv.datasets import emoji as emoji_module
from anchordiv.cache import atomic_write, cached_array
from anchordiv.datasets.emoji import LAYOUT
from anchordiv.datasets.shipped import DEFAULT_DATA_DIR, VENDORS, read_shipped, write_shipped
from anchordiv.datasets.styles import RENDITIONS, render, style_seed

REPO = Path(__file__).resolve().parents[1]
SAMPLE_NAMES = ["dog face", "red apple", "automobile", "rocket", "broccoli"]


@pytest.fixture(scope="module")
def shipped():
    return read_shipped()


@pytest.fixture(scope="module")
def sprites(shipped):
    return {vendor: shipped.sprites(vendor) for vendor in VENDORS}


@pytest.fixture
def tiny_data(tmp_path, shipped, sprites):
    """Shipped-format data with 4 training and 2 held-out emoji, written by the recipe's own writer."""
    index = shipped.index
    rows = np.concatenate([np.flatnonzero(index["split"] == "train")[:4], np.flatnonzero(index["split"] == "heldout")[:2]])
    out = tmp_path / "data"
    write_shipped(out, index.iloc[rows].reset_index(drop=True), {v: sprites[v][rows] for v in VENDORS}, {"test": True})
    return out


@pytest.fixture
def render_calls(monkeypatch):
    """Counts whole-world renderings, i.e. cache misses."""
    calls = []
    real = emoji_module.render_world

    def counting(shipped):
        calls.append(shipped.digest)
        return real(shipped)

    monkeypatch.setattr(emoji_module, "render_world", counting)
    return calls


def test_shipped_index_is_complete_and_filtered(shipped):
    index = shipped.index
    assert len(index) > 1000
    assert (index != "").all().all()
    assert index["emoji_id"].is_unique and index["name"].is_unique
    assert (index["name"] == index["name"].str.lower()).all()
    assert "Component" not in set(index["category"])
    assert not index["subcategory"].isin(["country-flag", "subdivision-flag"]).any()
    assert set(index["split"]) == {"train", "heldout"}
    assert (index["split"] == "heldout").mean() >= 0.2
    assert "dog face" in set(index["name"])


def test_shipped_files_are_small_and_licensed():
    shipped_bytes = sum(path.stat().st_size for path in DEFAULT_DATA_DIR.rglob("*") if path.is_file())
    assert shipped_bytes < 40 * 2**20
    licences = {path.name for path in (DEFAULT_DATA_DIR / "LICENSES").iterdir()}
    assert {"Apache-2.0.txt", "CC-BY-4.0.txt", "emoji-datasource-MIT.txt"} <= licences
    assert (DEFAULT_DATA_DIR / "README.md").is_file()


def test_world_labels_images_and_split(tiny_data, cache):
    world = load_emoji_world("all", data_dir=tiny_data)
    labels = world.labels
    assert len(world.images) == len(labels) == len(world.array) == 6 * len(LAYOUT)
    assert world.array.dtype == np.uint8 and world.array.shape[1:] == (64, 64, 3)
    assert list(labels.columns[:5]) == ["emoji_id", "name", "subcategory", "category", "style"]
    assert not labels.isna().any().any() and (labels != "").all().all()
    assert set(labels["style"]) == set(STYLES) == set(world.styles)
    # Every emoji appears once per (style, source), and its labels agree across its rows.
    assert (labels.groupby("emoji_id").size() == len(LAYOUT)).all()
    assert (labels.groupby("emoji_id")[["name", "subcategory", "category", "split"]].nunique() == 1).all().all()
    image = world.images[5]
    assert isinstance(image, Image.Image) and image.mode == "RGB" and image.size == (64, 64)
    assert np.array_equal(np.asarray(image), world.array[5])
    assert len(world.images[2:5]) == 3

    train, heldout = load_emoji_world("train", data_dir=tiny_data), load_emoji_world("heldout", data_dir=tiny_data)
    assert set(train.labels["emoji_id"]).isdisjoint(heldout.labels["emoji_id"])
    assert len(train) + len(heldout) == len(world)
    assert sorted(heldout.names) == sorted(world.heldout_names) and len(heldout.names) == 2
    assert np.array_equal(heldout.array, world.array[(labels["split"] == "heldout").to_numpy()])


def test_bad_split_names_the_choices(cache):
    with pytest.raises(ValueError, match="'all', 'train', 'heldout'"):
        load_emoji_world("test")


@pytest.mark.parametrize("style", STYLES)
def test_rendering_is_deterministic(style, shipped, sprites):
    row = 7
    source = style if style in VENDORS else "twitter"
    sprite = sprites[source][row].copy()
    seed = style_seed(shipped.index["emoji_id"][row], source, style)
    first, second = render(style, sprite, seed), render(style, sprite, seed)
    assert first.dtype == np.uint8 and first.shape == (64, 64, 3)
    assert first.tobytes() == second.tobytes()
    assert np.array_equal(sprite, sprites[source][row])  # the sprite is not modified


def test_each_style_is_visibly_different(shipped, sprites):
    rows = [int(np.flatnonzero(shipped.index["name"] == name)[0]) for name in SAMPLE_NAMES]
    images = {
        style: np.stack([render(style, sprites[style if style in VENDORS else "google"][r], r) for r in rows]).astype(float)
        for style in STYLES
    }
    for a, b in itertools.combinations(STYLES, 2):
        mean_abs = np.abs(images[a] - images[b]).mean()
        assert mean_abs > 20, f"{a!r} and {b!r} differ by only {mean_abs:.1f} grey levels on average"


def test_unknown_style_is_refused(sprites):
    with pytest.raises(ValueError, match="pencil sketch"):
        render("crayon", sprites["google"][0], 0)


def test_cache_is_reused_when_valid(tiny_data, cache, render_calls):
    first = load_emoji_world(data_dir=tiny_data)
    second = load_emoji_world(data_dir=tiny_data)
    assert len(render_calls) == 1
    assert np.array_equal(first.array, second.array)
    assert isinstance(second.array, np.memmap)
    assert len(list(cache.rglob("*.npy"))) == 1


def test_cache_is_rebuilt_when_stale(tiny_data, cache, render_calls, monkeypatch):
    load_emoji_world(data_dir=tiny_data)
    monkeypatch.setattr(emoji_module, "RENDERER_VERSION", emoji_module.RENDERER_VERSION + 1)
    load_emoji_world(data_dir=tiny_data)
    assert len(render_calls) == 2


@pytest.mark.parametrize("damage", ["truncate", "flip byte", "drop meta"])
def test_cache_is_rebuilt_when_corrupt(tiny_data, cache, render_calls, damage):
    expected = np.array(load_emoji_world(data_dir=tiny_data).array)
    (npy,) = cache.rglob("*.npy")
    data = npy.read_bytes()
    if damage == "truncate":
        npy.write_bytes(data[: len(data) // 2])
    elif damage == "flip byte":
        npy.write_bytes(data[:-10] + bytes([data[-10] ^ 0xFF]) + data[-9:])
    else:
        npy.with_name(npy.name + ".json").unlink()
    rebuilt = load_emoji_world(data_dir=tiny_data)
    assert len(render_calls) == 2
    assert np.array_equal(rebuilt.array, expected)
    assert len(load_emoji_world(data_dir=tiny_data)) == len(expected) and len(render_calls) == 2


def test_failed_write_leaves_previous_file(tmp_path):
    target = tmp_path / "x.npy"

    def crash(handle):
        handle.write(b"partial")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, crash)
    assert list(tmp_path.iterdir()) == []
    array = cached_array(target, "k", lambda: np.arange(6))
    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, crash)
    assert np.array_equal(cached_array(target, "k", lambda: pytest.fail("rebuilt a valid cache")), array)


def test_shipped_hash_mismatch_is_a_clear_error(tiny_data, cache):
    index_csv = tiny_data / "index.csv"
    index_csv.write_text(index_csv.read_text().replace("train", "heldout", 1))
    with pytest.raises(ShippedDataError, match=r"index\.csv has sha256 .* rebuild it with `python data/build_emoji_world\.py`"):
        load_emoji_world(data_dir=tiny_data)


def test_missing_shipped_file_is_a_clear_error(tiny_data, cache):
    (tiny_data / "twitter.png").unlink()
    with pytest.raises(ShippedDataError, match=r"twitter\.png is missing; rebuild it with"):
        load_emoji_world(data_dir=tiny_data)
    shutil.rmtree(tiny_data)
    with pytest.raises(ShippedDataError, match="manifest.json is missing"):
        load_emoji_world(data_dir=tiny_data)


def test_cache_dir_follows_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("ANCHORDIV_CACHE", str(tmp_path))
    assert cache_dir() == tmp_path
    monkeypatch.delenv("ANCHORDIV_CACHE")
    assert cache_dir() == Path.home() / ".cache" / "anchordiv"


def test_math_core_does_not_import_datasets():
    core = [REPO / "anchordiv" / "search.py", *sorted((REPO / "anchordiv" / "models").glob("*.py"))]
    for path in core:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [alias.name for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            assert not any("datasets" in name for name in names), f"{path.name} imports {names}"


def test_every_rendition_is_in_the_layout():
    assert {style for style, _ in LAYOUT} == set(STYLES)
    assert {(style, vendor) for style in RENDITIONS for vendor in VENDORS} <= set(LAYOUT)


def test_the_lazy_view_draws_exactly_the_rendered_images(tiny_data, render_calls):
    """open_emoji_world renders nothing up front; each image it draws equals the whole-world rendering's."""
    from anchordiv.datasets import open_emoji_world

    for split in ("all", "train", "heldout"):
        renders = len(render_calls)
        view = open_emoji_world(split, data_dir=tiny_data)
        view.image(0)
        assert len(render_calls) == renders
        world = load_emoji_world(split, data_dir=tiny_data)
        assert len(view) == len(world) and view.labels.equals(world.labels)
        assert all(np.array_equal(view.image(i), world.array[i]) for i in range(len(view)))
        everything = load_emoji_world("all", data_dir=tiny_data)
        assert all(np.array_equal(everything.array[row], view.image(i)) for i, row in enumerate(view.rows))
    with pytest.raises(IndexError, match="outside this split"):
        view.image(len(view))
    with pytest.raises(ValueError, match="split='test'"):
        open_emoji_world("test", data_dir=tiny_data)
