"""The explorer on a gallery store, through streamlit.testing.v1.AppTest: a store embedded from a small
image folder under a temporary data root. The neighbours the page shows are the library's
(ShardedAnchorIndex through ExplorerGeometry.over_store and its certified slider; cosine over the store), images
are read for the shown items only, and bad stores are messages."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from player import player_data, release_p
from anchordiv import explorer as ex
from app_pages import APP, TIMEOUT, messages
from helpers import needs_builtin
from anchordiv.embeddings import embed_folder_to_store
from anchordiv.explorer import thumbnails
from anchordiv.store import MANIFEST, GalleryStore
from anchordiv.text_cache import encode_texts_cached
from rankings import assert_same_ranking
from test_app import neighbour_table, neighbours

streamlit_testing = pytest.importorskip("streamlit.testing.v1")
AppTest = streamlit_testing.AppTest

PER_LABEL = 20

pytestmark = needs_builtin


@pytest.fixture(scope="module")
def stores(tmp_path_factory, library):
    """A data root with an image folder and its store (``shard_rows`` 16, so shards are crossed), a
    store of another model, a damaged one and one without images or labels; a store outside the
    root, also linked from inside it."""
    base = tmp_path_factory.mktemp("store-app")
    root, encoder = base / "data", library["encoder"]
    for label, colour in (("red", (220, 20, 20)), ("blue", (20, 20, 220))):
        (root / "images" / label).mkdir(parents=True)
        for i in range(PER_LABEL):
            shade = tuple(max(0, c - 9 * i) for c in colour)
            Image.new("RGB", (48 + i, 48), shade).save(root / "images" / label / f"{label}-{i:02d}.png")
    built = embed_folder_to_store(root / "images", encoder, root / "stores" / "shapes", shard_rows=16)
    assert Path(built.source) == (root / "images").resolve()  # the build records where the thumbnails are
    vectors = built.rows(np.arange(len(built)))
    GalleryStore.from_array(vectors, root / "stores" / "other-model", encoder="open_clip:ViT-B-32@0123")
    GalleryStore.from_array(vectors[:15], root / "stores" / "no-images", encoder=encoder.name)
    broken = GalleryStore.from_array(vectors[:5], root / "stores" / "broken", encoder=encoder.name)
    (broken.directory / MANIFEST).write_text('{"format": "anchordiv-gallery-store", "version": 1')
    outside = GalleryStore.from_array(vectors, base / "outside" / "private", encoder=encoder.name)
    (root / "escape").symlink_to(outside.directory.parent, target_is_directory=True)
    return {"root": root.resolve(), "shapes": built.directory.resolve(), "outside": outside.directory.resolve()}


@pytest.fixture
def served(stores, monkeypatch):
    """The app's environment: only the temporary data root, no free paths."""
    monkeypatch.setenv("ANCHORDIV_DATA_ROOTS", str(stores["root"]))
    monkeypatch.delenv("ANCHORDIV_ALLOW_ANY_PATH", raising=False)
    return stores


def open_store(folder: Path) -> AppTest:
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    app.session_state["neighbour_table_open"] = True  # the neighbour table's expander open: the tests read it
    app.run()
    app.radio(key="gallery_kind").set_value("store").run()
    assert not app.exception, app.exception
    app.selectbox(key="store_choice").set_value(str(folder)).run()
    assert not app.exception, app.exception
    return app


def library_geometry(library, app: AppTest, gallery: ex.StoreSource) -> ex.ExplorerGeometry:
    """The geometry the page builds for the anchor sets it shows (softmax, s = 10), by the library alone."""
    texts = [ex.parse_anchor_text(app.session_state[f"anchors_{side}"]).anchors for side in "ab"]
    anchors = [encode_texts_cached(library["encoder"], t) for t in texts]
    return ex.ExplorerGeometry.over_store(gallery.store, anchors, texts, ex.GeometrySpec(scale=10.0))


def test_the_page_ranks_the_store_as_the_library_and_reads_only_shown_images(library, served, monkeypatch):
    read = []
    real = thumbnails.read_thumbnail
    monkeypatch.setattr(thumbnails, "read_thumbnail", lambda path, size: read.append(path.name) or real(path, size))
    app = open_store(served["shapes"])
    assert not app.error
    gallery = ex.StoreSource.open(served["shapes"], library["encoder"].name, library["encoder"].dim)
    geometry = library_geometry(library, app, gallery)
    query = int(app.session_state["query_id"])
    vector = gallery.vector(query)
    path = geometry.p_path(vector, 10, query, "calibrated")
    shown = neighbours(app)
    values, ids = path.values[path.step_of(0.5)], path.ids[path.step_of(0.5)]
    assert shown == ids.tolist()  # the page's own route: the p path, built as here
    # The exact float32 search over the store, another route: its rounding at s = 10, d = 256.
    assert_same_ranking((values, ids), ex.search_one(geometry.index_at(0.5, "calibrated"), vector, 20, query), rtol=1e-4, atol=1e-5,
                        context="the slider against the store's exact search")
    assert neighbours(app, "cosine") == ex.cosine_top_k(gallery.store, vector, 10, query)[1].tolist()
    data = player_data(app)
    assert data["notes"][data["note"][path.step_of(0.5)]].startswith("✓ Certified")
    # One read per image the page can show: the query, both grids, and what every step of the p path
    # shows (sent to the browser with the path, so that no move of p waits for a file); none for the others.
    drawn = {query, *neighbours(app, "cosine"), *path.shown_ids.tolist()}
    assert set(shown) <= drawn
    assert sorted(read) == sorted(Path(gallery.caption(item)).name for item in drawn) and len(read) < len(gallery)
    seen = {tuple(shown)}
    for p in (1.0, 0.0):
        release_p(app, p)
        assert not app.exception
        assert neighbours(app) == path.ids[path.step_of(p)].tolist()
        seen.add(tuple(neighbours(app)))
        drawn |= set(neighbours(app))
    assert len(seen) > 1  # p moves the neighbours
    # Each image is read and encoded once, however often a move of p shows it again.
    assert sorted(read) == sorted(Path(gallery.caption(item)).name for item in drawn)
    app.radio(key="weighting").set_value("literal").run()
    assert neighbours(app) == geometry.p_path(vector, 10, query, "literal").ids[0].tolist()


def test_name_search_and_row_choose_the_query(library, served):
    app = open_store(served["shapes"])
    app.text_input(key="query_search").set_value("ED-1").run()  # case-insensitive substring: red-10 .. red-19
    options = app.selectbox(key="query_pick").options
    assert options[:2] == ["red/red-10.png", "red/red-11.png"] and len(options) == 10
    app.selectbox(key="query_pick").set_value(app.selectbox(key="query_pick").options[0]).run()
    gallery = ex.StoreSource.open(served["shapes"], library["encoder"].name, library["encoder"].dim)
    picked = gallery.find("red/red-10")[0]
    assert app.session_state["query_id"] == picked and picked not in neighbours(app)
    app.number_input(key="query_row").set_value(3).run()
    assert not app.exception and app.session_state["query_id"] == 3 and 3 not in neighbours(app)
    app.radio(key="query_mode").set_value("text").run()
    app.text_input(key="query_text").set_value("a red square").run()
    assert not app.exception and len(neighbours(app)) == 10


def test_bad_stores_are_messages_naming_the_fix(library, served):
    app = open_store(served["root"] / "stores" / "broken")
    assert not app.exception and "not a valid store manifest" in messages(app, ("error",))
    assert "rebuild the store" in messages(app, ("error",))
    app.selectbox(key="store_choice").set_value(str(served["root"] / "stores" / "other-model")).run()
    assert not app.exception
    assert "embedded with 'open_clip:ViT-B-32@0123'" in messages(app, ("error",))
    assert "choose that model in the sidebar" in messages(app, ("error",))


def test_only_stores_under_the_data_roots_are_offered(library, served, monkeypatch):
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    app.radio(key="gallery_kind").set_value("store").run()
    options = app.selectbox(key="store_choice").options
    assert str(served["shapes"]) in options
    assert not any("private" in option or "outside" in option for option in options)
    assert str(served["root"] / "images") not in options  # a folder without a manifest is not a store
    assert not [box for box in app.text_input if box.key == "store_path"]
    monkeypatch.setenv("ANCHORDIV_ALLOW_ANY_PATH", "1")  # the local mode: a typed path, anywhere
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    app.radio(key="gallery_kind").set_value("store").run()
    app.text_input(key="store_path").set_value(str(served["outside"])).run()
    assert not app.exception and not app.error and len(neighbours(app)) == 10
    app.text_input(key="store_path").set_value(str(served["root"] / "nowhere")).run()
    assert not app.exception and "does not exist" in messages(app, ("error",))


def test_a_store_without_images_or_labels_shows_placeholders(library, served, monkeypatch):
    read = []
    monkeypatch.setattr(thumbnails, "read_thumbnail", lambda path, size: read.append(path))
    app = open_store(served["root"] / "stores" / "no-images")
    assert not app.exception and not app.error and read == []
    assert len(neighbours(app)) == 10 and set(player_data(app)["agreement"]) == {"query labels unknown"}
    table = next(frame.value for frame in app.dataframe if "method" in frame.value.columns)
    assert table["name"].str.fullmatch(r"#\d+").all()  # no labels: items are named by their id


@pytest.mark.parametrize("page", ["views/compare.py", "views/learn.py"])
def test_compare_and_learn_ask_for_an_in_memory_gallery(library, served, page):
    app = open_store(served["shapes"])
    app.switch_page(page).run()
    assert not app.exception and not app.error
    assert "works on galleries held in memory" in messages(app, ("info",))


@pytest.mark.slow
def test_umap_of_a_fixed_sample_marks_the_query(library, served):
    app = open_store(served["shapes"])
    app.session_state["umap_open"] = True  # opening the section draws the map
    app.run()
    assert not app.exception and not app.error
    chart = next(element for element in app.get("plotly_chart") if element.proto.id.endswith("umap_chart_anchor"))
    assert '"name":"query"' in chart.proto.spec  # the query is marked (it is in the sample: 40 rows, all sampled)


def test_a_shard_edited_in_place_while_the_page_is_open_is_named_not_searched(served):
    """A shard rewritten with the same header after the page opened the store: the next run opens
    the store afresh, its check names the changed shard, and no neighbour is ranked from it; once
    the shard is put back, the page searches the store again without a restart."""
    import shutil

    copy = served["root"] / "stores" / "edited"
    shutil.copytree(served["shapes"], copy)
    app = open_store(copy)
    assert len(neighbours(app)) == 10 and not app.error
    shard = sorted(copy.glob("shard-*.npy"))[0]
    rows = np.load(shard)
    np.save(shard, -rows[::-1])  # the same shape and dtype: the same header
    release_p(app, 0.3)
    assert not app.exception
    assert shard.name in messages(app, ("error",)), messages(app)
    assert not [frame for frame in app.dataframe if "method" in frame.value.columns]
    np.save(shard, rows)  # put back: the store is opened afresh again, and searched
    app.run()
    assert not app.exception and not app.error, messages(app, ("error",))
    assert len(neighbours(app)) == 10
