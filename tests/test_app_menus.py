"""Menus and grid captions that tell items apart, through streamlit.testing.v1.AppTest: the Matches
menu of a name search, the image-folder and checkpoint menus of a data root, and the neighbour grids'
captions (rank and value, then the name whole on GRID_CAPTION_LINES line where it fits, else cut at
a word with "…"; the whole name beside them, and the marks apart)."""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from PIL import Image

from player import player_data
from anchordiv.app.session_keys import SIDEBAR_STATE
from anchordiv.explorer import GeometrySpec
from anchordiv.explorer.neighbours import GRID_CAPTION_LINE_CHARS, GRID_CAPTION_LINES
from anchordiv.explorer.settings import CHECKPOINT, FOLDER
from helpers import needs_builtin
from test_app import neighbour_table, start

pytestmark = needs_builtin


def test_matches_for_a_name_with_duplicates_are_distinct_and_name_their_ids(library):
    app = start()
    app.text_input(key="query_search").set_value("pencil sketch").run()
    menu = app.selectbox(key="query_pick")
    captions = [library["gallery"].caption(item) for item in library["gallery"].find("pencil sketch")]
    assert len(set(captions)) < len(captions), "the slice must hold duplicate names for this test"
    assert len(set(menu.options)) == len(menu.options) == len(captions)
    duplicated = {caption for caption in captions if captions.count(caption) > 1}
    for option in menu.options:
        if any(option.endswith(": " + caption) for caption in duplicated):
            # What tells it apart comes first: a narrow menu cuts an option's end.
            assert re.match(r"source \w+, #\d+: ", option), option
    menu.set_value(menu.options[1]).run()  # the option names the item it picks
    assert f"#{app.session_state['query_id']}:" in app.selectbox(key="query_pick").options[1]


@pytest.fixture
def data_root(tmp_path: Path, monkeypatch) -> Path:
    """A data root with a folder of PNGs, a folder of checkpoints and an empty folder, opened by the app."""
    root = tmp_path / "data"
    for name in ("images", "weights", "empty"):
        (root / name).mkdir(parents=True)
    for index in range(3):
        Image.new("RGB", (8, 8), (40 * index, 0, 0)).save(root / "images" / f"red-{index}.png")
    (root / "weights" / "model.pt").write_bytes(b"weights")
    (root / "weights" / "model.safetensors").write_bytes(b"weights")
    monkeypatch.setenv("ANCHORDIV_DATA_ROOTS", str(root))
    return root.resolve()


def test_the_folder_menus_offer_only_what_the_chosen_source_opens(library, data_root):
    app = start()
    app.radio(key="gallery_kind").set_value(FOLDER).run()
    assert app.selectbox(key="folder_choice").options == [str(data_root), str(data_root / "images")]
    app.radio(key="encoder_kind").set_value(CHECKPOINT).run()
    assert app.selectbox(key="checkpoint_choice").options == [str(data_root / "weights" / "model.pt"),
                                                              str(data_root / "weights" / "model.safetensors")]


def test_grid_captions_are_whole_when_they_fit_and_else_cut_at_a_word(library):
    app = start()
    data = player_data(app)  # the player's grid at the page's p, then the baselines' (cosine)
    step = data["p"].index(data["p_now"])
    tiles = [{**data["items"][index], "head": head} for head, index in zip(data["heads"][step], data["order"][step])]
    tiles += [tile for baseline in data["baselines"] for tile in baseline["tiles"]]
    table = neighbour_table(app)
    assert len(tiles) == len(table) >= 20
    for tile, item in zip(tiles, table["gallery_id"]):
        line, full = tile["line"], library["gallery"].caption(item)
        assert tile["name"] == full and re.fullmatch(r"\d+\. [ds]=\S+", tile["head"]), tile
        fits = len(textwrap.wrap(full, GRID_CAPTION_LINE_CHARS)) <= GRID_CAPTION_LINES
        assert line == full if fits else (line.endswith("…") and full.startswith(line[:-1])
                                          and full[len(line) - 1] == " "), (line, full)
        assert len(textwrap.wrap(line, GRID_CAPTION_LINE_CHARS)) <= GRID_CAPTION_LINES
        assert set(tile["marks"].split()) <= {"✓obj", "✓sty"}
    assert any(tile["marks"] for tile in tiles), "the query shares its object or style with none of its neighbours"


def test_the_sidebar_keeps_a_hidden_setting_and_every_setting_through_the_report(library):
    """A setting the anchor model does not use is not drawn, and the report draws no sidebar: both
    keep their values (the sidebar's widgets persist them), and the geometry the page ranks by is
    the one they give."""
    app = start()
    app.selectbox(key="anchor_model").set_value("gmm").run()
    app.number_input(key="n_components").set_value(3).run()
    app.slider(key="scale").set_value(22.0).run()
    app.selectbox(key="anchor_model").set_value("softmax").run()
    assert "n_components" not in [widget.key for widget in app.sidebar.number_input]
    app.switch_page("views/report.py").run()
    assert not app.exception and not list(app.sidebar.slider)
    app.switch_page("views/explore.py").run()
    app.selectbox(key="anchor_model").set_value("gmm").run()
    assert not app.exception, app.exception
    assert app.number_input(key="n_components").value == 3 and app.slider(key="scale").value == 22.0
    assert app.session_state[SIDEBAR_STATE].geometry == GeometrySpec(kind="gmm", scale=22.0, n_components=3)
