"""The explorer on a gallery store, in the library (anchordiv.explorer.store_source): the name index,
opening checks, cosine over a store, the sharded geometry and its certified slider, thumbnails read
for the shown items only, and the UMAP sample."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

import anchordiv as ad
from anchordiv import explorer as ex
from anchordiv.explorer import thumbnails
from anchordiv.projection import sample_ids
from anchordiv.search import AnchorIndex, CosineIndex
from anchordiv.store import MANIFEST, GalleryStore
from conftest import object_style_world
from rankings import assert_same_ranking

ENCODER = "test-encoder@1"
ROWS = 20_000


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> ex.StoreSource:
    """20,000 random rows of d = 16 with names ``item-NNNNN-cat`` (every 7th) or ``-dog``, in 3 shards."""
    folder = tmp_path_factory.mktemp("big") / "store"
    rows = np.random.default_rng(0).standard_normal((ROWS, 16)).astype(np.float32)
    names = pd.DataFrame({"name": [f"Item-{j:05d}-{'cat' if j % 7 == 0 else 'dog'}" for j in range(ROWS)]})
    GalleryStore.from_array(rows, folder, shard_rows=7000, labels=names, encoder=ENCODER)
    return ex.StoreSource.open(folder, ENCODER, 16)


# The exact search over the float32 store against the slider (float64 over the store's float32 eta,
# or the same search when it falls back): the float32 search's rounding at s = 12, d = 24 (measured
# within 7e-6 of float64, docs/design.md §9; bounded by about 2 d u ||g|| s = 3.4e-5 for ||g|| <= 1).
SEARCH_TOL = dict(rtol=1e-4, atol=1e-5)


@pytest.fixture(scope="module")
def world(tmp_path_factory, seed):
    """A store of an object x style world (labels: the object), its anchors and the store gallery."""
    images, rows, objects, styles = object_style_world(3 + seed, 6, 4, 8, 24, 0.6, 0.3)
    labels = pd.DataFrame({"path": [f"o{o}/s{s}-{i}.png" for i, (o, s) in enumerate(rows)],
                           "label": [f"object {o}" for o, _ in rows]})
    folder = tmp_path_factory.mktemp("world") / "store"
    GalleryStore.from_array(images, folder, shard_rows=50, labels=labels, encoder=ENCODER, dtype="float32")
    return ex.StoreSource.open(folder, ENCODER, 24), objects, styles


def brute_find(names: list[str], text: str) -> set[int]:
    return {item for item, name in enumerate(names) if text.lower() in name.lower()}


# -- names ------------------------------------------------------------------------------------------
def test_name_search_finds_prefixes_then_substrings(big):
    names = big.names.names
    assert ex.NameIndex(["b-cat", "Cat-a", "a-cat", "cat"]).find("CAT") == [3, 1, 0, 2]  # prefixes first, by name
    assert big.find("item-0042") == list(range(420, 430))
    hits = big.find("00126-CAT")
    assert hits == [126] and big.caption(126) == "Item-00126-cat"
    for needle in ("cat", "-0001", "9-dog", "  ITEM-1999  "):
        found = big.find(needle, limit=50)
        expected = brute_find(names, " ".join(needle.split()))
        assert set(found) <= expected and len(found) == min(50, len(expected)) and len(set(found)) == len(found)
    assert big.find("") == [] and big.find("no such name") == [] and big.find("\n") == []


def test_name_search_has_no_python_loop_over_the_names(big, monkeypatch):
    """A search touches the sorted names by bisection and the joined text by str.find: a list of
    names that raises on iteration is never walked."""
    class NoWalk(list):
        def __iter__(self):
            raise AssertionError("a search walked every name")

    monkeypatch.setattr(big.names, "_sorted", NoWalk(big.names._sorted))
    assert len(big.find("dog", limit=200)) == 200 and big.find("item-19999") == [19999]


# -- opening ----------------------------------------------------------------------------------------
def test_opening_checks_the_model_and_the_manifest(big, tmp_path):
    folder = big.store.directory
    with pytest.raises(ValueError, match="embedded with 'test-encoder@1' but the chosen model is 'other'"):
        ex.StoreSource.open(folder, "other", 16)
    with pytest.raises(ValueError, match="dimension 16 but the chosen model gives 32"):
        ex.StoreSource.open(folder, ENCODER, 32)
    bare = GalleryStore.from_array(np.eye(3, 16), tmp_path / "bare")  # no encoder recorded: any model of its dimension
    assert ex.StoreSource.open(bare.directory, "anything", 16).caption(2) == "#2"
    (bare.directory / MANIFEST).write_text("{broken")
    with pytest.raises(ValueError, match="not a valid store manifest"):
        ex.StoreSource.open(bare.directory, "anything", 16)
    assert ex.StoreSource.open(folder, ENCODER, 16).key == big.key
    assert ex.StoreSource.open(folder, ENCODER, 16, stamp=ex.store_stamp(folder)).key == big.key  # the caller's stamp


def test_stores_are_offered_from_the_data_roots_only(big, tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    inside = GalleryStore.from_array(np.eye(3, 16), root / "stores" / "small")
    GalleryStore.from_array(np.eye(3, 16), outside / "hidden")
    (root / "link").symlink_to(outside, target_is_directory=True)
    (root / "images").mkdir()
    roots = ex.DataRoots((root.resolve(),))
    assert roots.stores() == [inside.directory.resolve()]


# -- ranking ----------------------------------------------------------------------------------------
def test_cosine_over_the_store_is_cosine_over_its_rows(big):
    rows = big.store.rows(np.arange(len(big)))
    query = big.vector(5)
    values, ids = ex.cosine_top_k(big.store, query, 12, exclude=5, block_rows=3000)  # blocks cross shards
    expected = ex.search_one(CosineIndex(rows), query, 20, exclude=5)
    assert 5 not in ids
    # The store's float16 rows are used as they are and CosineIndex normalises them again: their norms
    # are 1 within float16's unit round-off 2^-11, so the similarities differ by at most about 4.9e-4.
    assert_same_ranking((values, ids), expected, atol=1e-3, higher_is_closer=True, context="cosine over the store")
    with pytest.raises(ValueError, match="dimension 3 but the store 16"):
        ex.cosine_top_k(big.store, np.ones(3), 5)


def test_cosine_over_a_store_an_index_keeps_in_memory_reads_the_kept_rows(big, monkeypatch):
    """Once a geometry's index keeps the store object's rows in memory, the cosine scan reads them
    there (no file read at all) and ranks as it does from the files."""
    from anchordiv import sharded

    store = GalleryStore.open(big.store.directory)
    query = big.vector(5)
    from_files = ex.cosine_top_k(store, query, 12, exclude=5)
    anchors = big.store.rows(np.arange(6))
    model = ad.MixtureAnchors([ad.EmpiricalAnchors(scale=10.0), ad.EmpiricalAnchors(scale=10.0)])
    model.fit([anchors[:3], anchors[3:]])
    assert sharded.ShardedAnchorIndex(model, store, device="cpu")._engine.scanner.keeps_rows == "host"
    monkeypatch.setattr(GalleryStore, "scan_blocks", lambda *args: pytest.fail("the files were read"))
    monkeypatch.setattr(GalleryStore, "rows", lambda *args: pytest.fail("the files were read"))
    from_memory = ex.cosine_top_k(store, query, 12, exclude=5)
    assert_same_ranking(from_memory, from_files, atol=1e-6, higher_is_closer=True, context="kept against files")


@pytest.mark.parametrize("weighting", list(ex.WEIGHTING_HELP))
def test_the_p_path_and_the_search_give_the_mixture_s_top_k(world, weighting):
    gallery, objects, styles = world
    geometry = ex.ExplorerGeometry.over_store(gallery.store, [objects, styles], [["o"] * 6, ["s"] * 4], ex.GeometrySpec(scale=12.0),
                                sample_rows=120)
    query, k = gallery.vector(7), 8
    path = geometry.p_path(query, k, 7, weighting)
    rows = gallery.store.rows(np.arange(len(gallery)))
    assert len(path) == 101 and path.certified.dtype == bool
    for step in range(0, 101, 5):
        p = float(path.p[step])
        model = geometry.model_at(p, weighting)
        expected = ex.search_one(AnchorIndex(model, rows), query, 2 * k, exclude=7)
        assert_same_ranking((path.values[step], path.ids[step]), expected, **SEARCH_TOL, context=f"path at p = {p:.2f}")
        assert_same_ranking(ex.search_one(geometry.index_at(p, weighting), query, k, 7), expected, **SEARCH_TOL,
                            context=f"sharded search at p = {p:.2f}")
    assert len({tuple(ids) for ids in path.ids.tolist()}) > 1  # p moves the neighbours


def test_without_a_slider_the_path_is_the_exact_search_at_each_step(world):
    gallery, objects, styles = world
    query = gallery.vector(3)
    one = ex.ExplorerGeometry.over_store(gallery.store, [objects, objects[:0]], [["o"] * 6, []], ex.GeometrySpec(), sample_rows=50)
    reverse = ex.ExplorerGeometry.over_store(gallery.store, [objects, styles], [["o"] * 6, ["s"] * 4],
                               ex.GeometrySpec(reverse=True), sample_rows=50)
    for geometry, steps in ((one, 101), (reverse, 21)):
        path = geometry.p_path(query, 5, 3, "calibrated")
        assert len(path) == steps and not path.certified.any()
        step = path.step_of(0.3)
        expected = ex.search_one(geometry.index_at(float(path.p[step]), "calibrated"), query, 5, 3)
        assert path.ids[step].tolist() == expected[1].tolist()


def test_the_neighbour_table_marks_the_query_s_label(world):
    gallery = world[0]
    table = gallery.neighbour_table(np.array([0.1, 0.2]), np.array([0, 100]), gallery.labels_of(1), "divergence")
    assert table.columns.tolist() == ["rank", "gallery_id", "name", "label", "divergence", "same_object", "same_style"]
    assert table.same_object.tolist() == [True, False] and table.same_style.isna().all()
    assert ex.agreement_text(table) == "1/2 same object"  # a store has no style labels
    assert gallery.presets()["Gallery object names"] == tuple(f"object {o}" for o in range(6))


# -- thumbnails -------------------------------------------------------------------------------------
def test_thumbnails_are_read_for_the_shown_items_only(world, tmp_path, monkeypatch):
    gallery = world[0]
    source = tmp_path / "images"
    for item in (0, 1, 2):
        path = source / gallery.caption(item)
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (200, 100), (200, 30, 30)).save(path)
    manifest = json.loads((gallery.store.directory / MANIFEST).read_text())
    opened = ex.StoreSource(GalleryStore(gallery.store.directory, {**manifest, "source": str(source)}), gallery.key,
                            gallery.names, gallery.label_column, ex.DataRoots((tmp_path.resolve(),)))
    read = []
    real = thumbnails.read_thumbnail
    monkeypatch.setattr(thumbnails, "read_thumbnail", lambda path, size: read.append(path) or real(path, size))
    images = opened.thumbnails([2, 0, 150])
    assert [path.name for path in read] == [Path(gallery.caption(2)).name, Path(gallery.caption(0)).name]
    assert images[0].size == (96, 48) and images[2].size == (96, 96)  # item 150 has no file: a placeholder
    read.clear()
    elsewhere = ex.DataRoots((source.parent / "x",))
    assert [image.size for image in replace(opened, roots=elsewhere).thumbnails([0])] == [(96, 96)]
    assert read == []  # the source is outside the data roots: nothing is read
    assert replace(gallery, roots=ex.DataRoots(allow_any_path=True)).thumbnails([0])[0].size == (96, 96)  # no source


# -- the projection sample ----------------------------------------------------------------------------
@pytest.mark.slow
def test_the_projection_is_of_a_fixed_sample(world):
    gallery, objects, styles = world
    geometry = ex.ExplorerGeometry.over_store(gallery.store, [objects, styles], [["o"] * 6, ["s"] * 4], ex.GeometrySpec(),
                                sample_rows=100)
    ids, xy = ex.geometry_projection(gallery, "anchor", geometry, 0.5, "calibrated", max_points=60, n_neighbors=5)
    assert ids.tolist() == sample_ids(len(gallery), 60, 0).tolist() and xy.shape == (60, 2)
    frame = gallery.projection_frame(ids, xy, int(ids[0]), [int(ids[1]), 10_000])
    assert frame.role.tolist()[:3] == ["query", "neighbour", "gallery"] and frame.label.iloc[0] == gallery.labels_of(ids[0])
    # The query and its neighbours are always on the map: one outside the sample is placed by UMAP's
    # transform from its nearest sampled items, and a query that is no store row (an upload) too.
    outside = next(item for item in range(len(gallery)) if item not in set(ids.tolist()))
    place = ex.map_placer(gallery, ids, xy, "anchor", geometry, 0.5, n_neighbors=5).place
    more, placed_xy, query_xy, placed = ex.with_query_and_neighbours(
        gallery, ids, xy, int(ids[0]), [int(ids[1]), outside], None, place)
    assert placed == 1 and more.tolist() == [*ids.tolist(), outside] and query_xy is None
    spread = xy.max(axis=0) - xy.min(axis=0)
    assert np.all(placed_xy[-1] >= xy.min(axis=0) - spread) and np.all(placed_xy[-1] <= xy.max(axis=0) + spread)
    _, _, query_xy, placed = ex.with_query_and_neighbours(gallery, ids, xy, None, [], gallery.rows([outside])[0],
                                                          place)
    assert placed == 1 and query_xy.shape == (2,) and np.allclose(query_xy, placed_xy[-1])
    # Nothing outside the sample: nothing is placed (the placer is not even asked).
    _, _, query_xy, placed = ex.with_query_and_neighbours(gallery, ids, xy, int(ids[0]), [int(ids[1])], None,
                                                          lambda rows: pytest.fail("placed"))
    assert placed == 0 and query_xy is None
