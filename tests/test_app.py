"""The Streamlit explorer through streamlit.testing.v1.AppTest, on a small slice of the emoji world.

Every test checks the app against the library: the neighbours the app shows are the ones
anchordiv.explorer computes for the same query, anchors, p and model.
"""
from __future__ import annotations

import base64
import io
import json
import os
import re
from pathlib import Path
from urllib.parse import parse_qs

import numpy as np
import pytest
from PIL import Image

from markup import plain
from player import player_data, release_p
from anchordiv import explorer as ex
from conftest import APP_LIMIT
from drawings import distinct_drawings
from rankings import assert_same_ranking
from app_pages import APP, TIMEOUT, messages, open_page
from helpers import needs_builtin
from anchordiv.grids import CAPTION_LINES, LINE_HEIGHT
from anchordiv.explorer.sweep_files import MAX_STRIP_ROWS

streamlit_testing = pytest.importorskip("streamlit.testing.v1")
AppTest = streamlit_testing.AppTest

pytestmark = needs_builtin


def select_projection_point(app: AppTest, chart_key: str, gallery_id: int) -> AppTest:
    """Run the app as after a click on the projection point of image ``gallery_id``.

    AppTest has no plotly chart element to click, so this sends what the browser sends: the chart's
    selection as its widget state, beside every other widget's state, through AppTest's own run
    step (a private method of streamlit.testing; the only way in for an element it cannot drive)."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    chart = next(element for element in app.get("plotly_chart") if element.proto.id.endswith(chart_key))
    selection = {"selection": {"points": [{"customdata": [gallery_id]}], "point_indices": [0], "box": [], "lasso": []}}
    states = app._tree.get_widget_states()
    states.widgets.append(WidgetState(id=chart.proto.id, string_value=json.dumps(selection)))
    return app._run(states)


def map_figure(app: AppTest, chart_key: str) -> dict:
    """The Plotly figure of the map ``chart_key`` names."""
    chart = next(element for element in app.get("plotly_chart") if element.proto.id.endswith(chart_key))
    return json.loads(chart.proto.spec)


def map_traces(app: AppTest, chart_key: str) -> list[dict]:
    """The traces of the map ``chart_key`` names, in the order Plotly draws them (the last on top)."""
    return [{name: plotly_values(value) for name, value in trace.items()}
            for trace in map_figure(app, chart_key)["data"]]


def map_labels(app: AppTest, chart_key: str) -> list[str]:
    """The texts written on the map ``chart_key`` names (its annotations)."""
    return [note["text"] for note in map_figure(app, chart_key)["layout"].get("annotations", [])]


def plotly_values(value):
    """A trace's value as a list where Plotly sent an array as base64 bytes (``{"dtype", "bdata"}``)."""
    if not (isinstance(value, dict) and "bdata" in value):
        return value
    array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
    return array.reshape([int(side) for side in value["shape"].split(",")]).tolist() if "shape" in value else array.tolist()


def start() -> AppTest:
    app = with_table(AppTest.from_file(str(APP), default_timeout=TIMEOUT)).run()
    assert not app.exception, app.exception
    return app


def with_table(app: AppTest) -> AppTest:
    """``app`` with the Explore page's neighbour table open (what opening its expander does: a
    closed one builds nothing), so that the tests can read the neighbours and their values."""
    app.session_state["neighbour_table_open"] = True
    return app


def library_geometry(library, texts_a, texts_b, kind="softmax", reverse=False) -> ex.ExplorerGeometry:
    """The geometry the app builds for these anchor texts, built by the library alone."""
    import torch

    encoder, gallery = library["encoder"], library["gallery"]
    texts_a, texts_b = tuple(texts_a), tuple(texts_b)
    anchors = [torch.as_tensor(encoder.encode_texts(list(t))) if t else torch.zeros((0, encoder.dim))
               for t in (texts_a, texts_b)]
    return ex.ExplorerGeometry(gallery.embeddings, anchors, [texts_a, texts_b],
                               ex.GeometrySpec(kind=kind, scale=10.0, reverse=reverse))


def expected_ranking(library, texts_a, texts_b, p=0.5, query_id=None, kind="softmax", weighting="calibrated", k=10,
                     reverse=False) -> tuple[np.ndarray, np.ndarray]:
    """The library's top ``2 k`` (divergences, ids), enough to judge a tie at the ``k``-th place."""
    gallery = library["gallery"]
    geometry = library_geometry(library, texts_a, texts_b, kind, reverse)
    query_id = ex.default_query_id(gallery) if query_id is None else query_id
    return ex.search_one(geometry.index_at(p, weighting), gallery.embeddings[query_id], 2 * k, exclude=query_id)


def neighbour_table(app: AppTest):
    """The page's neighbour table (opened first where it is closed)."""
    if "neighbour_table_open" not in app.session_state or not app.session_state["neighbour_table_open"]:
        with_table(app).run()
    return next(frame.value for frame in app.dataframe if "method" in frame.value.columns)


def shown_table(app: AppTest, method: str = "anchor divergence"):
    """A method's rows of the page's neighbour table."""
    table = neighbour_table(app)
    return table.loc[table["method"] == method]


def neighbours(app: AppTest, method: str = "anchor divergence") -> list[int]:
    """The gallery ids of a method's neighbours, as the page's neighbour table shows them."""
    return shown_table(app, method)["gallery_id"].tolist()


def shown_ranking(app: AppTest, method: str = "anchor divergence") -> tuple[np.ndarray, np.ndarray]:
    table = shown_table(app, method)
    value = "divergence" if method == "anchor divergence" else "similarity"
    return table[value].to_numpy(), table["gallery_id"].to_numpy()


def assert_shows(app: AppTest, expected: tuple[np.ndarray, np.ndarray], method: str = "anchor divergence") -> None:
    """The page's neighbours are the library's, up to ties: the page encodes its anchors through the
    text cache in its own batches, so its float32 values (s = 10) may differ from the library's by the
    encoders' and the search's round-off (a few 1e-6)."""
    assert_same_ranking(shown_ranking(app, method), expected, rtol=1e-4, atol=1e-5,
                        higher_is_closer=method != "anchor divergence", context=method)


def test_app_starts_on_the_builtin_world(library):
    app = start()
    presets = library["presets"]
    assert_shows(app, expected_ranking(library, presets["Gallery object names"], presets["Gallery styles"]))
    assert app.session_state["query_id"] == ex.default_query_id(library["gallery"])
    assert len(neighbours(app, "cosine")) == 10
    assert not app.error
    assert "anchors in use" in messages(app)
    data = player_data(app)  # Play's stops: one per set of images, the first and last at p's ends
    runs, stops, steps = data["runs"], data["stops"], len(data["p"])
    assert runs[0][0] == 0 and runs[-1][1] == steps - 1 and all(b[0] == a[1] + 1 for a, b in zip(runs, runs[1:]))
    shown = [{data["items"][index]["id"] for index in data["order"][stop]} for stop in stops]
    assert stops[0] == 0 and stops[-1] == steps - 1 and len(stops) == len(runs) >= 3
    assert all(a != b for a, b in zip(shown, shown[1:])), "two stops of Play show the same images"


def test_p_moves_the_neighbours_as_the_library_says(library):
    app = start()
    presets = library["presets"]
    for p in (1.0, 0.0):
        release_p(app, p)
        assert not app.exception
        assert_shows(app, expected_ranking(library, presets["Gallery object names"], presets["Gallery styles"], p=p))
    app.radio(key="weighting").set_value("literal").run()  # the paper's literal weights
    assert_shows(app, expected_ranking(library, presets["Gallery object names"], presets["Gallery styles"], p=0.0,
                                       weighting="literal"))
    app.radio(key="weighting").set_value("balanced").run()
    for p in (0.5, 0.8):
        release_p(app, p)
        assert_shows(app, expected_ranking(library, presets["Gallery object names"], presets["Gallery styles"], p=p,
                                           weighting="balanced"))


def test_changing_anchors_changes_the_neighbours(library):
    app = start()
    names = library["presets"]["Gallery object names"]
    app.text_area(key="anchors_b").set_value("pixel art\n\npixel art\n\nwatercolor painting").run()
    assert not app.exception
    assert "2 anchors in use (1 duplicate, 2 blank lines ignored)" in messages(app)
    assert_shows(app, expected_ranking(library, names, ["pixel art", "watercolor painting"]))
    app.selectbox(key="preset_a").set_value("Paper: dog breeds").run()
    assert app.text_area(key="anchors_a").value.splitlines()[0] == "husky"
    assert_shows(app, expected_ranking(library, ex.DOG_BREEDS, ["pixel art", "watercolor painting"]))


def test_changing_the_model_and_query(library):
    app = start()
    presets = library["presets"]
    app.selectbox(key="anchor_model").set_value("gaussian").run()
    assert not app.exception
    assert_shows(app, expected_ranking(library, presets["Gallery object names"], presets["Gallery styles"],
                                       kind="gaussian"))
    app.text_input(key="query_search").set_value("pixel art").run()
    choice = app.selectbox(key="query_pick").options[3]
    app.selectbox(key="query_pick").set_value(choice).run()
    query_id = app.session_state["query_id"]
    # The slice draws each emoji by two vendors: a caption two options share starts with its id.
    assert choice.endswith(library["gallery"].caption(query_id)) and f"#{query_id}:" in choice and "pixel art" in choice
    assert_shows(app, expected_ranking(library, presets["Gallery object names"], presets["Gallery styles"],
                                       kind="gaussian", query_id=query_id))
    app.button(key="query_random").click().run()
    assert not app.exception and len(neighbours(app)) == 10


def test_text_query_and_iti(library):
    app = start()
    app.radio(key="query_mode").set_value("text").run()
    app.text_input(key="query_text").set_value("a pixel art cat").run()
    app.checkbox(key="show_iti").check().run()
    assert not app.exception and not app.error and len(neighbours(app)) == 10
    encoder, gallery, presets = library["encoder"], library["gallery"], library["presets"]
    texts = list(presets["Gallery object names"] + presets["Gallery styles"])
    iti = ex.baseline_index("iti", gallery.embeddings, encoder.encode_texts(texts))
    query = encoder.encode_texts(["a pixel art cat"])[0]
    assert_shows(app, ex.search_one(iti, query, 20), "iti")


def test_direction_control_reverses_the_divergence(library):
    app = start()
    presets = library["presets"]
    forward = neighbours(app)
    app.radio(key="direction").set_value("reverse").run()
    assert not app.exception and not app.error
    assert_shows(app, expected_ranking(library, presets["Gallery object names"], presets["Gallery styles"], reverse=True))
    assert neighbours(app) != forward


def test_the_neighbour_to_explain(library):
    """"Why this neighbour?", once opened, shows the chosen neighbour's tilted distribution and the
    model's divergence; closed, it builds nothing (a move of p does not pay for it)."""
    from anchordiv import explain

    app = start()
    assert not [table for table in app.table if "probability" in table.value.columns]
    app.session_state["explain_open"] = True  # what opening its expander does
    app.run()
    app.selectbox(key="explain_rank").set_value(3).run()
    assert not app.exception and not app.error
    gallery, presets = library["gallery"], library["presets"]
    geometry = library_geometry(library, presets["Gallery object names"], presets["Gallery styles"])
    query_id, third = app.session_state["query_id"], neighbours(app)[2]
    query_tilt, neighbour_tilt, divergence, _ = explain.explain_pair(
        geometry.model_at(0.5), geometry.component_anchors, geometry.component_texts, geometry.component_names,
        gallery.embeddings[query_id], gallery.embeddings[third])
    shown_query, shown_neighbour = [table.value for table in app.table if "probability" in table.value.columns]
    assert [plain(anchor) for anchor in shown_query.index] == query_tilt.top(8)["anchor"].tolist()
    assert [plain(anchor) for anchor in shown_neighbour.index] == neighbour_tilt.top(8)["anchor"].tolist()
    np.testing.assert_allclose(shown_neighbour["probability"], neighbour_tilt.top(8)["probability"], atol=5e-5)
    assert app.metric[0].value == f"{divergence:.4f}"


def test_downloads_hold_the_neighbours_shown(library, download_builders):
    """The CSV, PNG and p sweep downloads, as the browser would receive them on a click, hold the
    neighbours on the page. They are deferred: the page registers a builder that the server runs on the click."""
    builders = download_builders
    app = start()
    files = {name: build() for name, build in builders.items()}
    import pandas as pd

    table = pd.read_csv(io.BytesIO(files["neighbours.csv"]))
    assert table.loc[table.method == "anchor divergence", "gallery_id"].tolist() == neighbours(app)
    assert table.loc[table.method == "cosine", "gallery_id"].tolist() == neighbours(app, "cosine")
    assert {"rank", "divergence", "similarity", "same_object", "same_style"} <= set(table.columns)
    grid = Image.open(io.BytesIO(files["neighbours.png"]))
    caption_height = CAPTION_LINES * LINE_HEIGHT + 4
    assert grid.format == "PNG" and grid.width == 5 * 128 and grid.height == 24 + 2 * (128 + caption_height)  # 5 x 2
    # The p sweep, from the path the player plays: the rankings Play holds, p = 0 to 1 and back in a
    # looping GIF, and a strip with a row of 10 for each.
    rankings = len(player_data(app)["stops"])
    assert 3 <= rankings <= MAX_STRIP_ROWS
    sweep = Image.open(io.BytesIO(files["p-sweep.gif"]))
    assert sweep.format == "GIF" and sweep.n_frames == 2 * rankings - 2 and sweep.width == 10 * 128
    strip = Image.open(io.BytesIO(files["p-sweep.png"]))
    assert strip.size == (10 * 128, 24 + rankings * (24 + 128 + caption_height))


def red_png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 64), (200, 30, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


def test_uploads_good_and_bad(library):
    app = start()
    app.radio(key="query_mode").set_value("upload").run()
    app.file_uploader(key="query_upload").set_value(("broken.png", b"\x89PNG\r\n\x1a\nbroken", "image/png")).run()
    assert not app.exception
    assert any("broken.png" in plain(error.value) for error in app.error)
    app.file_uploader(key="query_upload").set_value(("notes.txt", b"just text", "text/plain")).run()
    assert not app.exception and any("not an image" in plain(error.value) for error in app.error)
    app.file_uploader(key="query_upload").set_value(("red.png", red_png(), "image/png")).run()
    assert not app.exception and not app.error and len(neighbours(app)) == 10


def test_bad_anchor_sets_never_raise(library):
    app = start()
    app.text_area(key="anchors_a").set_value("\n  \n").run()
    assert not app.exception and "p has no effect" in player_data(app)["notes"][0] and not player_data(app)["enabled"]
    app.text_area(key="anchors_b").set_value("").run()
    assert not app.exception and any("both anchor sets are empty" in plain(error.value) for error in app.error)
    app.text_area(key="anchors_b").set_value("pixel art").run()  # one anchor
    assert not app.exception and "one anchor" in messages(app)
    app.selectbox(key="anchor_model").set_value("gaussian").run()
    assert not app.exception and "ridge" in messages(app) and len(neighbours(app)) == 10
    app.selectbox(key="anchor_model").set_value("latent-gaussian").run()
    assert not app.exception and any("latent model needs at least two" in plain(error.value) for error in app.error)
    app.selectbox(key="anchor_model").set_value("posterior-softmax").run()
    assert not app.exception and any("prior" in plain(error.value) for error in app.error)
    app.number_input(key="top_k").set_value(50).run()
    assert not app.exception


def test_sets_that_rank_alike_are_refused_only_under_calibrated_weights(library):
    """A and B the same list rank every image alike: calibrated weights cannot be measured, and the
    page says so in its own words (its sets, its menu); Balanced draws the neighbours."""
    app = start()
    app.text_area(key="anchors_b").set_value(app.text_area(key="anchors_a").value).run()
    assert not app.exception
    (refusal,) = [plain(error.value) for error in app.error]
    assert "rank this gallery's images alike" in refusal and "Balanced or Literal under “Weights of A and B”" in refusal
    assert "balanced weights" not in refusal  # the library's own advice, not the page's words
    app.radio(key="weighting").set_value("balanced").run()
    assert not app.exception and not app.error and len(neighbours(app)) == 10


@pytest.mark.slow
def test_five_thousand_anchors(library):
    app = start()
    app.text_area(key="anchors_a").set_value("\n".join(f"object number {i}" for i in range(5000))).run()
    assert not app.exception and "5,000 anchors in use" in messages(app) and len(neighbours(app)) == 10


def test_missing_checkpoint_and_broken_folder(library, tmp_path, monkeypatch):
    monkeypatch.setenv("ANCHORDIV_ALLOW_ANY_PATH", "1")  # the local mode, in which paths are typed
    app = start()
    app.radio(key="encoder_kind").set_value("checkpoint").run()
    assert not app.exception
    app.text_input(key="openclip_checkpoint").set_value(str(tmp_path / "missing.pt")).run()
    assert not app.exception and any("open_clip" in plain(error.value) for error in app.error)
    app.radio(key="encoder_kind").set_value("builtin").run()
    folder = _image_folder(tmp_path / "images")
    (folder / "red" / "broken.jpg").write_bytes(b"\xff\xd8\xff not a jpeg")
    app.radio(key="gallery_kind").set_value("folder").run()
    app.text_input(key="folder_path").set_value(str(folder)).run()
    assert not app.exception and not app.error
    assert any("1 file(s) skipped" in expander.label for expander in app.sidebar.expander)
    assert len(neighbours(app)) == 10
    app.text_input(key="folder_path").set_value(str(tmp_path / "nowhere")).run()
    assert not app.exception and any("does not exist" in plain(error.value) for error in app.error)


def _image_folder(folder: Path) -> Path:
    """``folder`` with :func:`drawings.distinct_drawings` in two label folders, red/ and blue/:
    images that differ, so that p calibrates on any machine."""
    for number, image in enumerate(distinct_drawings()):
        label = folder / ("red", "blue")[number % 2]
        label.mkdir(parents=True, exist_ok=True)
        image.save(label / f"{number}.png")
    return folder


def test_folders_and_checkpoints_come_from_the_data_roots_only(library, tmp_path, monkeypatch):
    """A shared server: folders and checkpoints are menus of what lies under its data roots; nothing
    can be typed, and a link out of a root is not offered."""
    root, private = tmp_path / "data", _image_folder(tmp_path / "private")
    images = _image_folder(root / "images")
    (root / "escape").symlink_to(private, target_is_directory=True)
    (root / "broken.pt").write_bytes(b"not a checkpoint")
    (private / "weights.pt").write_bytes(b"not a checkpoint either")
    monkeypatch.setenv("ANCHORDIV_DATA_ROOTS", str(root))
    monkeypatch.delenv("ANCHORDIV_ALLOW_ANY_PATH", raising=False)
    app = start()
    app.radio(key="gallery_kind").set_value("folder").run()
    assert not app.exception and not [box for box in app.text_input if box.key in ("folder_path", "folder_labels")]
    options = app.selectbox(key="folder_choice").options
    assert str(images.resolve()) in options and not any("private" in option for option in options)
    app.selectbox(key="folder_choice").set_value(str(images.resolve())).run()
    assert not app.exception and not app.error and len(neighbours(app)) == 10
    app.radio(key="encoder_kind").set_value("checkpoint").run()
    assert not app.exception and not [box for box in app.text_input if box.key == "openclip_checkpoint"]
    assert app.selectbox(key="checkpoint_choice").options == [str((root / "broken.pt").resolve())]
    app.selectbox(key="checkpoint_choice").set_value(str((root / "broken.pt").resolve())).run()
    assert not app.exception and any("Could not load the open_clip model" in plain(error.value) for error in app.error)


def test_without_data_roots_no_path_can_be_opened(library, monkeypatch):
    monkeypatch.delenv("ANCHORDIV_DATA_ROOTS", raising=False)
    monkeypatch.delenv("ANCHORDIV_ALLOW_ANY_PATH", raising=False)
    app = start()
    app.radio(key="gallery_kind").set_value("folder").run()
    assert not app.exception and "offers no data folders" in messages(app)
    assert not [box for box in app.text_input if box.key == "folder_path"]
    assert app.selectbox(key="folder_choice").options == []


def test_broken_shipped_world_is_an_error_box(library, monkeypatch):
    """A test double: the real check (sha256 of every shipped file, tests/test_datasets.py) runs
    before the render cache, which this module shares; here its error is raised where the app
    loads the world. A new gallery size keeps the app from reusing the gallery it has."""
    from anchordiv.datasets import ShippedDataError

    def broken(*args, **kwargs):
        raise ShippedDataError("data/emoji/index.csv has sha256 0123 but manifest.json records 4567; "
                               "rebuild it with `python data/build_emoji_world.py`")

    monkeypatch.setattr("anchordiv.app.cached.world_gallery", broken)
    monkeypatch.setenv("ANCHORDIV_APP_GALLERY_LIMIT", str(APP_LIMIT - 1))
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    assert not app.exception
    assert any("Could not load the built-in emoji world" in plain(e.value) and "build_emoji_world" in plain(e.value) for e in app.error)


def test_two_sessions_do_not_share_state(library):
    first, second = start(), start()
    release_p(first, 0.0)
    before = neighbours(first)
    release_p(second, 1.0)
    second.text_area(key="anchors_b").set_value("neon on black").run()
    first.run()
    assert neighbours(first) == before
    assert first.session_state["p"] == 0.0 and second.session_state["p"] == 1.0
    presets = library["presets"]
    assert_shows(first, expected_ranking(library, presets["Gallery object names"], presets["Gallery styles"], p=0.0))


@pytest.mark.slow
def test_umap_layout_and_p_sweep(library):
    app = start()
    assert not [box for box in app.checkbox if box.key == "umap_cosine"]  # closed: its controls are not drawn
    assert not app.get("plotly_chart")
    app.session_state["umap_open"] = True  # what opening the section does: the map is drawn at once
    app.run()
    assert not app.exception and not app.error
    traces = map_traces(app, "umap_chart_anchor")
    assert [trace.get("name") for trace in traces].index("query") == len(traces) - 1  # drawn last: above the rest
    assert traces[-1]["marker"]["symbol"] == "star" and traces[-1]["type"] == traces[0]["type"]  # in the same layer
    assert [label for label in map_labels(app, "umap_chart_anchor") if label.startswith("query: ")]
    app.checkbox(key="umap_cosine").check().run()
    assert not app.exception and not app.error
    # A small sample leaves the query and its neighbours out: UMAP's transform places each on the map.
    app.number_input(key="umap_points").set_value(30).run()
    for key in ("umap_chart_anchor", "umap_chart_cosine"):
        traces = map_traces(app, key)
        assert traces[-1]["name"] == "query" and len(traces[-1]["x"]) == 1
        spots = {(round(x, 3), round(y, 3)) for trace in traces if trace["name"].endswith(", neighbour")
                 for x, y in zip(trace["x"], trace["y"])}
        assert len(spots) == app.session_state["top_k"], spots  # each its own spot, not one averaged spot
    assert any("were not among the 30 sampled points" in plain(caption.value) and "transform" in plain(caption.value)
               for caption in app.caption)
    # A text query is no gallery image: it is placed on the map too, labelled with its text.
    app.radio(key="query_mode").set_value("text").run()
    app.text_input(key="query_text").set_value("a pixel art cat").run()
    assert not app.exception and not app.error
    query = map_traces(app, "umap_chart_anchor")[-1]
    assert query["name"] == "query" and query["customdata"] == [[-1]]
    assert any("pixel art cat" in label for label in map_labels(app, "umap_chart_anchor"))
    app.radio(key="query_mode").set_value("gallery").run()
    # The projection stays at the p it was made at until asked for the geometry at the current p.
    assert app.session_state["umap_p"] == 0.5
    release_p(app, 0.8)
    assert app.session_state["umap_p"] == 0.5
    app.button(key="umap_use_p").click().run()
    assert app.session_state["umap_p"] == 0.8 and not app.exception
    assert any("p = 0.80" in plain(caption.value) for caption in app.caption)
    # Selecting a point makes it the query (the chart's on_select callback).
    picked = 5
    assert app.session_state["query_id"] != picked
    select_projection_point(app, "umap_chart_anchor", picked)
    assert not app.exception and not app.error
    assert app.session_state["query_id"] == picked
    presets = library["presets"]
    assert_shows(app, expected_ranking(library, presets["Gallery object names"], presets["Gallery styles"],
                                       p=0.8, query_id=picked))
    # The selection persists across reruns but is acted on once, so a query picked afterwards sticks.
    app.button(key="query_random").click().run()
    chosen = app.session_state["query_id"]
    app.run()
    assert app.session_state["query_id"] == chosen and not app.exception


def _encoded(image: Image.Image, format: str, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=format, **options)
    return buffer.getvalue()


def _bomb_png() -> bytes:
    """A PNG whose header claims 10,000 x 10,000 pixels (100 megapixels): refused before decoding."""
    return _encoded(Image.new("L", (10_000, 10_000)), "PNG", optimize=False, compress_level=9)


# A corpus of hostile uploads: (file name, bytes, what the error box must say; None: accepted).
UPLOADS = [
    ("empty.png", b"", r"empty\.png"),
    ("broken.png", b"\x89PNG\r\n\x1a\nbroken", r"broken\.png"),
    ("truncated.jpg", _encoded(Image.new("RGB", (64, 64), (9, 99, 199)), "JPEG")[:200], r"truncated\.jpg"),
    ("notes.txt", b"just text", r"not an image"),
    ("script.png", b"<script>alert(1)</script>", r"not an image"),
    ("anim.gif", _encoded(Image.new("RGB", (32, 32)), "GIF"), r"GIF images are not accepted as queries"),
    ("bitmap.bmp", _encoded(Image.new("RGB", (32, 32)), "BMP"), r"BMP images are not accepted as queries"),
    ("bomb.png", _bomb_png(), r"megapixels"),
    ("grey16.png", _encoded(Image.fromarray(np.full((32, 32), 30000, np.uint16)), "PNG"), None),
    ("cmyk.jpg", _encoded(Image.new("CMYK", (32, 32), (0, 255, 255, 0)), "JPEG"), None),
    ("tiny.webp", _encoded(Image.new("RGB", (1, 1), (255, 0, 0)), "WEBP"), None),
]


@pytest.fixture(scope="module")
def upload_app(library):
    app = start()
    app.radio(key="query_mode").set_value("upload").run()
    return app


@pytest.mark.parametrize("name, data, expected", UPLOADS, ids=[case[0] for case in UPLOADS])
def test_upload_corpus(upload_app, name, data, expected):
    upload_app.file_uploader(key="query_upload").set_value((name, data, "application/octet-stream")).run()
    assert not upload_app.exception
    errors = " ".join(plain(error.value) for error in upload_app.error)
    if expected is None:
        assert not errors and len(neighbours(upload_app)) == 10
    else:
        assert re.search(expected, errors), errors
        assert "Traceback" not in errors


# Hostile anchor sets and text queries: (anchors A, anchors B, text query, what the page must say).
TEXTS = [
    ("<script>alert('a')</script>\n<b>bold</b>", "pixel art\noil painting", "a dog", r"2 anchors in use"),
    ("dog\n" * 50, "cat", "a dog", r"1 anchor in use \(49 duplicates ignored\)"),
    ("\t \n \r\n", "\n", "a dog", r"both anchor sets are empty"),
    ("ü • 🐶 — 猫\n\u200b\n" + "x" * 5000, "oil painting", "a dog", r"2 anchors in use"),
    ("dog", "cat", "   ", r"Type a text query"),
    ("dog", "cat", "<img src=x onerror=alert(1)>" * 20, r"1 anchor in use"),
]


@pytest.mark.parametrize("anchors_a, anchors_b, query, expected", TEXTS, ids=[f"text-{i}" for i in range(len(TEXTS))])
def test_hostile_texts_are_messages_never_markup_or_tracebacks(library, anchors_a, anchors_b, query, expected):
    app = start()
    app.radio(key="query_mode").set_value("text").run()
    app.text_input(key="query_text").set_value(query).run()
    app.text_area(key="anchors_a").set_value(anchors_a).run()
    app.text_area(key="anchors_b").set_value(anchors_b).run()
    assert not app.exception
    assert re.search(expected, messages(app)), messages(app)
    # Anchors are shown as text (data frames, captions), never as markdown that a browser would render.
    assert not any("<script>" in block.value or "onerror" in block.value for block in app.markdown)


def _fifo(tmp_path: Path) -> str:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return str(path)


# Free-path (local) mode: paths that once hung or broke the app, now each an error box in seconds.
FREE_PATHS = [
    ("folder", lambda tmp: "/dev", r"Could not use that image folder"),
    ("folder", lambda tmp: "/proc/self", r"Could not use that image folder"),
    ("folder", _fifo, r"Could not use that image folder"),
    ("folder", lambda tmp: str(tmp / "nowhere"), r"does not exist"),
    ("checkpoint", lambda tmp: "/dev/zero", r"Could not load the open_clip model"),
    ("checkpoint", _fifo, r"Could not load the open_clip model"),
    ("checkpoint", lambda tmp: "/proc/self/environ", r"Could not load the open_clip model"),
]


@pytest.mark.parametrize("field, make, expected", FREE_PATHS,
                         ids=[f"{field}-{i}" for i, (field, _, _) in enumerate(FREE_PATHS)])
def test_free_paths_never_hang(library, tmp_path, monkeypatch, field, make, expected):
    monkeypatch.setenv("ANCHORDIV_ALLOW_ANY_PATH", "1")
    app = AppTest.from_file(str(APP), default_timeout=60).run()
    if field == "folder":
        app.radio(key="gallery_kind").set_value("folder").run()
        app.text_input(key="folder_path").set_value(make(tmp_path)).run()
    else:
        app.radio(key="encoder_kind").set_value("checkpoint").run()
        app.text_input(key="openclip_checkpoint").set_value(make(tmp_path)).run()
    assert not app.exception
    errors = " ".join(plain(error.value) for error in app.error)
    assert re.search(expected, errors), errors
    assert "PATH=" not in errors and "HOME=" not in errors  # nothing of /proc/self/environ is echoed


def test_choosing_upload_keeps_the_last_results_until_a_file_arrives(library):
    app = start()
    before = neighbours(app)
    app.radio(key="query_mode").set_value("upload").run()
    assert not app.exception and neighbours(app) == before
    assert "Showing the last query's neighbours until an image is uploaded" in messages(app)


def test_the_calibration_curve_is_the_library_s(library):
    """The p sweep's expander, opened, plots the calibrated mixture's own curve (progress is p)."""
    import pyarrow as pa

    app = start()
    assert not [chart for chart in app.get("vega_lite_chart") if '"log-odds"' in chart.proto.spec]  # closed
    app.session_state["sweep_open"] = True
    app.run()
    presets = library["presets"]
    geometry = library_geometry(library, presets["Gallery object names"], presets["Gallery styles"])
    curve = geometry.calibrated_model.calibration_
    (chart,) = [chart for chart in app.get("vega_lite_chart") if '"log-odds"' in chart.proto.spec]
    shown = pa.ipc.open_stream(chart.proto.data.data).read_all().to_pandas()
    progress = shown[shown["curve"] == "progress = p"]
    np.testing.assert_allclose(progress["log-odds"], curve.log_odds, rtol=1e-6)
    np.testing.assert_allclose(progress["moved"], curve.progress, atol=1e-9)
    np.testing.assert_allclose(shown.loc[shown["curve"] == "B's side", "moved"], curve.progress_b, atol=1e-9)
    assert not app.exception


# -- shareable views --------------------------------------------------------------------------------
def open_link(params: dict) -> AppTest:
    """The Explore page opened by a link of ``params`` (:func:`~app_pages.open_page`), which ran
    without an exception."""
    app = open_page(params)
    assert not app.exception, app.exception
    return app


def test_the_url_follows_the_view_and_restores_it(library):
    """The page's URL carries p, the model, k and the query; opening it in a new session shows the
    same neighbours."""
    app = start()
    presets = library["presets"]
    app.selectbox(key="anchor_model").set_value("gaussian").run()
    app.number_input(key="top_k").set_value(6).run()
    release_p(app, 0.8)
    assert app.query_params["p"] == "0.8" and app.query_params["anchor_model"] == "gaussian"
    assert app.query_params["k"] == "6"
    shown = neighbours(app)
    assert_shows(app, expected_ranking(library, presets["Gallery object names"], presets["Gallery styles"], p=0.8,
                                       kind="gaussian", k=6))
    again = open_link(dict(app.query_params))
    assert again.session_state["p"] == 0.8 and neighbours(again) == shown
    assert not again.warning
    # the "Share this view" box, opened, holds the same link, to copy
    assert not [code for code in app.code if "?" in code.value]  # closed, it writes nothing
    app.session_state["share_popover"] = True
    app.run()
    (link,) = [code.value for code in app.code if "?" in code.value]
    assert parse_qs(link.split("?", 1)[1]) == {name: [value] for name, value in app.query_params.items()}


def test_a_link_with_the_old_parameter_names_opens_the_same_view_and_is_written_anew(library):
    """model= named the anchor model before it was anchor_model= (and components= the GMM's
    n_components=): such a link opens the view it made, and the page writes its URL with the new names."""
    old = open_link({"model": "gmm", "components": "3", "p": "0.8", "k": "6"})
    new = open_link({"anchor_model": "gmm", "n_components": "3", "p": "0.8", "k": "6"})
    assert not old.warning and old.selectbox(key="anchor_model").value == "gmm"
    assert old.number_input(key="n_components").value == 3 and neighbours(old) == neighbours(new)
    assert dict(old.query_params) == dict(new.query_params)
    assert {"anchor_model": "gmm", "n_components": "3", "p": "0.8", "k": "6"}.items() <= dict(old.query_params).items()
    assert not {"model", "components"} & set(old.query_params)


def test_a_link_to_another_query_and_anchors(library):
    app = open_link({"query": "40", "anchors_b": "pixel art\nwatercolor painting", "weighting": "literal", "p": "0.3"})
    assert app.session_state["query_id"] == 40
    assert_shows(app, expected_ranking(library, library["presets"]["Gallery object names"],
                                       ["pixel art", "watercolor painting"], p=0.3, query_id=40,
                                       weighting="literal"))


def test_a_preset_in_the_link_brings_its_list(library):
    app = open_link({"preset_a": "Paper: dog breeds"})
    assert app.text_area(key="anchors_a").value.splitlines()[0] == "husky"
    assert_shows(app, expected_ranking(library, ex.DOG_BREEDS, library["presets"]["Gallery styles"]))


def test_back_and_forward_show_the_history_entry_s_view(library, monkeypatch):
    """The browser's Back or Forward reruns the page with that history entry's link (Streamlit's run
    context says so): the page shows the entry's view, a setting the link leaves out at its default.
    Any other run keeps the session's values (a link is read once) and writes them to the link."""
    from anchordiv.app import url_state

    app = open_link({"preset_a": "Paper: dog breeds", "anchor_model": "gaussian", "p": "0.8"})
    entry = {"p": "0.3", "k": "6"}  # the link of a view before those choices
    app.query_params.clear()
    app.query_params.update(entry)
    app.run()
    assert app.session_state["p"] == 0.8 and app.selectbox(key="anchor_model").value == "gaussian"
    assert app.query_params["preset_a"] == "Paper: dog breeds"
    app.query_params.clear()
    app.query_params.update(entry)
    monkeypatch.setattr(url_state, "history_navigation", lambda: True)
    app.run()
    assert not app.exception and not app.warning
    presets = library["presets"]
    assert app.selectbox(key="anchor_model").value == "softmax" and app.session_state["p"] == 0.3
    assert app.text_area(key="anchors_a").value.splitlines() == list(presets["Gallery object names"])
    assert_shows(app, expected_ranking(library, presets["Gallery object names"], presets["Gallery styles"], p=0.3,
                                       k=6))
    assert {name: app.query_params[name] for name in app.query_params if name != "gallery"} == entry


def test_a_bad_link_opens_with_defaults_and_says_what_it_ignored(library):
    app = open_link({"p": "7", "k": "many", "model": "transformer", "query": "99999", "colour": "red",
                     "gallery": "0000000000"})
    assert not app.error
    warning = " ".join(plain(str(w.value)) for w in app.warning)
    for said in ("p:", "k:", "model:", "unknown parameter “colour”", "another gallery"):
        assert said in warning, said
    presets = library["presets"]
    assert app.session_state["p"] == 0.5 and app.number_input(key="top_k").value == 10
    assert_shows(app, expected_ranking(library, presets["Gallery object names"], presets["Gallery styles"]))
    release_p(app, 0.6)  # said once, not on every run
    assert not app.warning


def test_long_anchor_lists_are_kept_on_the_server(library):
    app = start()
    long_list = "\n".join(f"a carefully typed anchor {i}" for i in range(150))
    app.text_area(key="anchors_b").set_value(long_list).run()
    token = app.query_params["anchors_b"]
    assert token.startswith("@") and len(token) < 20
    again = open_link(dict(app.query_params))
    assert again.text_area(key="anchors_b").value == long_list
    assert neighbours(again) == neighbours(app)


def test_the_report_page_shows_the_shipped_report(library):
    from anchordiv.explorer.report import read_report

    app = start()
    app.switch_page("views/report.py").run()
    assert not app.exception and not app.error
    title, sections = read_report()
    assert [tab.label for tab in app.tabs] == [section.short_title for section in sections]
    images = [block for section in sections for block in section.blocks if block.kind == "image"]
    assert len(app.get("image")) == len(images) >= 5
    assert app.title[0].value == title
    glance = " ".join(str(item.value) for item in app.markdown)
    assert all(section.verdict in glance for section in sections if section.verdict)
