"""Changing the gallery in the explorer (streamlit.testing.v1.AppTest): anchor sets filled from a
preset of the last gallery become the new gallery's list of that preset, a typed set stays; the
gallery presets read the folder's label columns (never another gallery's); the UMAP colour starts
on a label column, never a path."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from anchordiv import explorer as ex
from app_pages import APP, TIMEOUT
from helpers import needs_builtin
from anchordiv.explorer.anchors import GALLERY_NAMES, GALLERY_STYLES, GENERIC, GENERIC_STYLES, preset_in
from anchordiv.explorer.colours import label_colour
from anchordiv.explorer.source import NO_LABEL

AppTest = pytest.importorskip("streamlit.testing.v1").AppTest
STYLES = ("pencil", "ink")


@pytest.fixture
def photos(tmp_path: Path) -> dict[str, Path]:
    """Forty images in two label folders (enough for the calibration's top-10), and a labels CSV
    giving each a style."""
    folder = tmp_path / "photos"
    rows = ["path,style"]
    for label, colour in (("cat", (200, 120, 40)), ("dog", (40, 120, 200))):
        (folder / label).mkdir(parents=True)
        for number in range(20):
            pixels = np.random.default_rng(number).integers(0, 256, (24, 24, 3)) // 2 + np.array(colour) // 2
            Image.fromarray(pixels.astype(np.uint8)).save(folder / label / f"{number}.png")
            rows.append(f"{label}/{number}.png,{STYLES[number % 2]}")
    (tmp_path / "styles.csv").write_text("\n".join(rows) + "\n")
    return {"folder": folder, "labels": tmp_path / "styles.csv"}


def open_folder(app: AppTest, folder: Path, labels: Path | None = None) -> AppTest:
    app.radio(key="gallery_kind").set_value("folder").run()
    app.text_input(key="folder_path").set_value(str(folder)).run()
    app.text_input(key="folder_labels").set_value(str(labels) if labels else "").run()
    assert not app.exception, app.exception
    return app


@needs_builtin
def test_preset_filled_anchors_follow_the_gallery_and_typed_ones_stay(library, photos, monkeypatch):
    monkeypatch.setenv("ANCHORDIV_ALLOW_ANY_PATH", "1")
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    app.session_state["umap_open"] = True  # its colour menu follows the gallery
    app.run()
    assert not app.exception, app.exception
    world = library["presets"]
    assert app.text_area(key="anchors_a").value == "\n".join(world[GALLERY_NAMES])
    app.text_area(key="anchors_b").set_value("my own style\nanother").run()

    open_folder(app, photos["folder"], photos["labels"])
    assert app.text_area(key="anchors_a").value == "cat\ndog"  # the folder's label column, not 8 emoji names
    assert app.text_area(key="anchors_b").value == "my own style\nanother"  # typed: kept
    assert app.selectbox(key="umap_colour").value == "style"
    app.selectbox(key="preset_b").set_value(GALLERY_STYLES).run()
    assert app.text_area(key="anchors_b").value == "\n".join(STYLES)  # the CSV's style column

    # The same folder without its CSV has no style column: its "Gallery styles" is gone, not the last list.
    app.text_input(key="folder_labels").set_value("").run()
    assert not app.exception, app.exception
    assert GALLERY_STYLES not in app.selectbox(key="preset_b").options
    assert app.selectbox(key="preset_b").value == GENERIC
    assert app.text_area(key="anchors_b").value == "\n".join(GENERIC_STYLES)
    assert not app.error, [e.value for e in app.error]
    assert app.selectbox(key="umap_colour").value == "label"  # never path, which names each image

    app.radio(key="gallery_kind").set_value("world").run()
    assert app.text_area(key="anchors_a").value == "\n".join(world[GALLERY_NAMES])


def test_the_gallery_presets_say_which_columns_they_read(photos):
    from anchordiv.encoders import load_encoder
    from anchordiv.gallery import folder_gallery

    encoder = load_encoder("builtin", device="cpu")
    styled = folder_gallery(photos["folder"], encoder, labels_csv=photos["labels"])
    presets = ex.anchor_presets(styled)
    assert presets[GALLERY_NAMES] == ("cat", "dog") and presets[GALLERY_STYLES] == STYLES
    assert ex.anchors.preset_sources(styled) == {GALLERY_NAMES: "the 'label' column of the gallery's labels",
                                                 GALLERY_STYLES: "the 'style' column of the gallery's labels"}
    plain = ex.anchor_presets(folder_gallery(photos["folder"], encoder))
    assert GALLERY_STYLES not in plain and plain[GENERIC] == GENERIC_STYLES
    assert preset_in(plain, GALLERY_STYLES) == GENERIC and preset_in(plain, "Paper: dog breeds") == "Paper: dog breeds"
    assert GALLERY_STYLES not in ex.anchor_presets(None) and GALLERY_NAMES not in ex.anchor_presets(None)


def test_the_map_colour_is_a_label_column_never_one_value_per_row():
    import pandas as pd

    labels = pd.DataFrame({"path": [f"{n}.png" for n in range(10)], "label": list("aabbccddee"),
                           "filename": [f"{n}.png" for n in range(10)], "shade": list("xyxyxyxyxy")})
    columns = list(labels.columns)
    assert label_colour(labels, columns, (None, "label", "label")) == "label"
    assert label_colour(labels, columns, ("style", "path", "filename")) == "label"  # style absent, the others unique
    assert label_colour(labels, ["path", "filename", "shade"], ("path",)) == "shade"
    assert label_colour(labels.iloc[:1], columns, ("path",)) == "path"  # one row: any column groups it


@needs_builtin
def test_images_a_labels_csv_leaves_out_keep_their_folder_label_everywhere(library, photos, tmp_path, monkeypatch):
    """Issue 51: a CSV with a style for the cats only. The dogs keep their folder label, and have no
    style: the page draws, their captions name the folder alone (never "nan"), and the style preset
    lists the CSV's styles only."""
    from player import player_data

    partial = tmp_path / "cat-styles.csv"
    partial.write_text("path,style\n" + "".join(f"cat/{number}.png,{STYLES[number % 2]}\n" for number in range(20)))
    monkeypatch.setenv("ANCHORDIV_ALLOW_ANY_PATH", "1")
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    open_folder(app, photos["folder"], partial)
    app.session_state["query_id"] = 25  # a dog (the folders are listed cat/ then dog/)
    app.session_state["neighbour_table_open"] = True
    app.session_state["umap_open"] = True  # the map, coloured by style
    app.run()
    assert not app.exception and not app.error, [e.value for e in [*app.exception, *app.error]]
    traces = [trace.get("name") for trace in json.loads(next(chart.proto.spec for chart in app.get("plotly_chart")))["data"]]
    assert any(name.startswith(f"{NO_LABEL},") for name in traces), traces  # the dogs are on the map, their own colour
    assert not any("nan" in str(name).lower() for name in traces), traces
    names = {item["name"] for item in player_data(app)["items"]}
    assert "dog" in names and not any("nan" in name for name in names), names
    table = next(frame.value for frame in app.dataframe if "gallery_id" in frame.value.columns)
    assert set(table["label"]) <= {"cat", "dog"} and "nan" not in table.astype(str).to_string()
    app.selectbox(key="preset_b").set_value(GALLERY_STYLES).run()
    assert app.text_area(key="anchors_b").value == "\n".join(STYLES)
