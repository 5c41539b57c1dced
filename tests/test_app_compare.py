"""The Compare page (the figure builder) through streamlit.testing.v1.AppTest: its neighbour table is
anchordiv.figure.compare's for the same rows, columns and settings, every control changes what the
library says it changes, and bad input is a message on the page, never an exception."""
from __future__ import annotations

import base64
import io
import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pandas as pd
import pytest

from markup import plain
from anchordiv import explorer as ex
from anchordiv import figure as fg
from anchordiv.app.session_keys import COMPARE_UPLOADS
from app_pages import APP, TIMEOUT
from helpers import needs_builtin
from anchordiv.encoders import load_encoder
from anchordiv.gallery import folder_gallery

streamlit_testing = pytest.importorskip("streamlit.testing.v1")
AppTest = streamlit_testing.AppTest


pytestmark = [
    needs_builtin,
    pytest.mark.usefixtures("app_env"),
]


def open_compare() -> AppTest:
    """The Compare page as a visitor opening its address."""
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    app.switch_page("views/compare.py").run()
    assert not app.exception, app.exception
    return app


def expected(library, rows, columns, k=5, weighting="calibrated", spec=ex.GeometrySpec(scale=10.0),
             images=None, **options) -> fg.CompareResult:
    """The library's figure for the page's default anchor sets (the Explore page's presets)."""
    presets = library["presets"]
    return fg.compare(library["gallery"], library["encoder"], rows, columns, presets["Gallery object names"],
                      presets["Gallery styles"], k, spec, weighting, images=images, **options)


@pytest.fixture
def loads(monkeypatch) -> list:
    """The models the app loads from here on (spec, pretrained), its cached encoders forgotten first."""
    from anchordiv.app import cached

    cached.get_encoder.clear()
    made, load = [], cached.load_encoder

    def counted(spec, pretrained=None, **options):
        made.append((spec, pretrained))
        return load(spec, pretrained=pretrained, **options)

    monkeypatch.setattr(cached, "load_encoder", counted)
    yield made
    cached.get_encoder.clear()  # none of them counted by another test


def shown_table(app: AppTest) -> pd.DataFrame:
    return app.dataframe[0].value


def preview_bodies(app: AppTest) -> list[str]:
    """The HTML blocks of the page that show the figure (the page's style sheet is another)."""
    return [element.proto.body for element in app.get("html") if "data-anchordiv-figure" in element.proto.body]


def shown_figure_urls(app: AppTest) -> list[str]:
    """The ``src`` of each of the preview's images (the page's one figure block): one per column when
    readable, the whole figure when fitted to the page."""
    (body,) = preview_bodies(app)
    return re.findall(r'<img [^>]*src="([^"]+)"', body)


def shown_figure_url(app: AppTest) -> str:
    """The ``src`` of the preview's first image."""
    return shown_figure_urls(app)[0]


def assert_page_shows(app: AppTest, result: fg.CompareResult) -> None:
    """The page's neighbour table and settings are the library's, and the figure is drawn: as SVG
    (sharp at the page's width), its footer naming ITI only with an ITI column."""
    assert not app.exception, app.exception
    table, want = shown_table(app), result.frame()
    assert table[["query", "geometry", "rank", "gallery_id"]].values.tolist() == \
        want[["query", "geometry", "rank", "gallery_id"]].values.tolist()
    value = "divergence" if "divergence" in want else "similarity"
    pd.testing.assert_series_equal(table[value], want[value], check_exact=False, rtol=1e-5)
    assert len(preview_bodies(app)) == 1
    urls = shown_figure_urls(app)
    assert len(urls) == len(result.columns)  # readable: a picture per column, the legend and settings under the last
    assert all(url.startswith("data:image/svg+xml;base64,") for url in urls), [url[:40] for url in urls]
    drawn = " ".join(" ".join(ElementTree.fromstring(base64.b64decode(url.split(",", 1)[1])).itertext())
                     for url in urls)
    assert f"top-{result.settings.k}" in drawn
    assert ("ITI over" in drawn) == any(column.kind == "iti" for column in result.columns)
    assert any(" · ".join(result.settings.lines()) in plain(caption.value) for caption in app.caption)


def test_the_page_opens_on_the_library_figure_with_its_downloads(library):
    app = open_compare()
    assert not app.error
    rows, columns = app.session_state["compare_rows"], app.session_state["compare_columns"]
    assert rows == [f"#{ex.default_query_id(library['gallery'])}"]  # the query Explore opens on
    assert columns == ["cosine", "A", "B", "mix p=0.5"]
    assert_page_shows(app, expected(library, rows, columns))
    keys = {button.proto.id.rsplit("-", 1)[-1] for button in app.get("download_button")}
    assert {"compare_download_png", "compare_download_pdf", "compare_download_svg"} <= keys


def test_each_control_changes_what_the_library_says(library):
    app = open_compare()
    app.multiselect(key="compare_columns").set_value(["iti", "mix p=0.3 model=gaussian s=20"]).run()
    app.text_input(key="compare_custom").input("B s=5").run()
    columns = ["iti", "mix p=0.3 model=gaussian s=20", "B s=5"]
    assert app.session_state["compare_columns"] == columns
    app.text_input(key="compare_text").input("a dog in  watercolor").run()
    app.button(key="compare_add_text").click().run()
    app.text_input(key="compare_search").input("kissing").run()
    pick = app.selectbox(key="compare_pick")
    assert len(set(pick.options)) == len(pick.options), "two matches read the same"
    pick.select_index(1).run()
    second_kiss = library["gallery"].find("kissing")[1]
    rows = app.session_state["compare_rows"]
    assert rows[1:] == ["text:a dog in watercolor", f"#{second_kiss}"]
    app.number_input(key="compare_k").set_value(3).run()
    app.radio(key="compare_weighting").set_value("literal").run()
    assert_page_shows(app, expected(library, rows, columns, k=3, weighting="literal"))
    app.sidebar.slider(key="scale").set_value(25.0).run()  # the default scale: column "B s=5" keeps its own
    assert_page_shows(app, expected(library, rows, columns, k=3, weighting="literal", spec=ex.GeometrySpec(scale=25.0)))
    app.button(key="compare_add_random").click().run()
    added = app.session_state["compare_rows"][-1]
    assert fg.parse_query_row(added).kind == "random" and fg.parse_query_row(added).value is not None


def test_an_uploaded_query_is_a_row(library):
    app = open_compare()
    png = io.BytesIO()
    library["gallery"].image(30).save(png, format="PNG")
    app.session_state[COMPARE_UPLOADS] = {"face.png": png.getvalue()}
    app.multiselect(key="compare_rows").set_value(["upload:face.png", "#2"]).run()
    result = expected(library, ["upload:face.png", "#2"], app.session_state["compare_columns"],
                      images={"face.png": png.getvalue()})
    assert_page_shows(app, result)
    assert shown_table(app).same_object.iloc[:5].isna().all()  # an upload has no labels to share


def test_bad_input_is_a_message_and_the_rest_is_still_drawn(library):
    app = open_compare()
    app.multiselect(key="compare_rows").set_value(["#1", "#999", "no such emoji", "upload:gone.png", "#"]).run()
    errors = " ".join(plain(error.value) for error in app.error)
    for message in ("the gallery has 96 images", "no gallery image's caption contains 'no such emoji'",
                    "no image data for 'gone.png'; upload it again", "after '#' comes a gallery id"):
        assert message in errors
    assert_page_shows(app, expected(library, ["#1"], app.session_state["compare_columns"]))

    app.text_input(key="compare_custom").input("mix p=3").run()
    assert any("Column 'mix p=3' is not added: p=3 is outside [0, 1]" in plain(error.value) for error in app.error)
    assert app.text_input(key="compare_custom").value == "mix p=3"  # kept, to fix it
    app.multiselect(key="compare_columns").set_value(["A", "A model=nope"]).run()
    assert any("unknown anchor model 'nope'" in plain(error.value) for error in app.error)
    assert_page_shows(app, expected(library, ["#1"], ["A"]))

    app.session_state["compare_rows"] = ["#1", "#4", "#1"]  # as a hand-made link might say
    app.run()
    assert not app.exception and app.session_state["compare_rows"] == ["#1", "#4"]

    app.session_state["anchors_b"] = ""
    app.multiselect(key="compare_columns").set_value(["cosine", "B"]).run()
    assert not app.exception
    assert any("column 'B' needs anchors in set B" in plain(error.value) for error in app.error)
    app.multiselect(key="compare_rows").set_value([]).run()
    assert not app.exception and any("Add at least one query row" in plain(info.value) for info in app.info)


def test_the_sidebar_chosen_on_explore_holds_on_the_first_run_of_compare(library):
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    app.sidebar.slider(key="scale").set_value(20.0).run()
    app.switch_page("views/compare.py").run()
    rows, columns = app.session_state["compare_rows"], app.session_state["compare_columns"]
    assert_page_shows(app, expected(library, rows, columns, spec=ex.GeometrySpec(scale=20.0)))


def test_the_figure_starts_from_the_query_explored(library):
    """Compare opens on the Explore page's query (a gallery image, or a text); rows the visitor has
    not changed follow the next query explored, rows they changed stay."""
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    app.session_state["query_id"] = 7
    app.run()
    app.switch_page("views/compare.py").run()
    assert app.session_state["compare_rows"] == ["#7"] and not app.error
    assert shown_table(app)["query"].iloc[0] == "#7"
    app.switch_page("views/explore.py").run()
    app.radio(key="query_mode").set_value("text").run()
    app.text_input(key="query_text").set_value("a  red square").run()
    app.switch_page("views/compare.py").run()
    assert app.session_state["compare_rows"] == ["text:a red square"] and not app.exception
    app.multiselect(key="compare_rows").set_value(["#3"]).run()
    app.switch_page("views/explore.py").run()
    app.radio(key="query_mode").set_value("gallery").run()
    app.switch_page("views/compare.py").run()
    assert app.session_state["compare_rows"] == ["#3"] and not app.exception


def test_a_link_s_query_is_the_first_row(library):
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    app.query_params["query"] = "12"
    app.switch_page("views/compare.py").run()
    assert not app.exception and app.session_state["compare_rows"] == ["#12"]


def test_the_figure_travels_in_the_link(library):
    app = open_compare()
    app.multiselect(key="compare_columns").set_value(["cosine", "mix p=0.3 model=gaussian s=20"]).run()
    app.number_input(key="compare_k").set_value(3).run()
    assert app.query_params["columns"] == ["cosine", "mix p=0.3 model=gaussian s=20"] and app.query_params["cell_k"] == "3"
    shown = shown_table(app)
    again = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    again.query_params = dict(app.query_params) | {"cell_k": "99"}
    again.switch_page("views/compare.py").run()
    assert not again.exception
    assert again.session_state["compare_columns"] == ["cosine", "mix p=0.3 model=gaussian s=20"]
    assert "cell_k" in " ".join(plain(str(item.value)) for item in again.warning)  # 99 is out of range: k stays 5
    rows, columns = again.session_state["compare_rows"], again.session_state["compare_columns"]
    assert_page_shows(again, expected(library, rows, columns, k=5))
    assert shown_table(again)["gallery_id"].tolist()[:3] == shown["gallery_id"].tolist()[:3]


def small_folder(folder: Path) -> Path:
    """36 small random images in three labels (subfolders) under ``folder``."""
    import numpy as np
    from PIL import Image

    for number in range(36):
        (folder / f"label-{number % 3}").mkdir(parents=True, exist_ok=True)
        pixels = np.random.default_rng(number).integers(0, 256, (20, 20, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(folder / f"label-{number % 3}" / f"{number}.png")
    return folder


def test_a_column_may_name_another_encoder(library, tmp_path, monkeypatch):
    """The built-in model beside the tiny open_clip model (tests/tiny_open_clip.py) on a small folder:
    the page's figure is the library's, loaded through the app's own cached encoder."""
    from tiny_open_clip import TINY_ARCH, make_tiny_checkpoint

    folder = small_folder(tmp_path / "images")
    checkpoint, _ = make_tiny_checkpoint(tmp_path)
    named = f"cosine encoder=open_clip:{TINY_ARCH} pretrained={checkpoint}"
    monkeypatch.setenv("ANCHORDIV_ALLOW_ANY_PATH", "1")
    app = open_compare()
    app.radio(key="gallery_kind").set_value("folder").run()
    app.text_input(key="folder_path").set_value(str(folder)).run()
    app.session_state["compare_rows"] = ["#0", "#20"]
    app.text_input(key="compare_custom").input(named).run()
    app.multiselect(key="compare_columns").set_value(["cosine", named]).run()
    result = folder_figure(library["encoder"], folder, ["cosine", named])
    assert_page_shows(app, result)
    assert result.tables[0][0].gallery_id.tolist() != result.tables[0][1].gallery_id.tolist()
    app.session_state["compare_rows"] = ["text:a red square"]
    app.run()
    assert any("is a text, and column" in plain(error.value) for error in app.error)


def test_a_column_naming_the_sidebar_s_model_loads_it_once(library, loads):
    app = open_compare()
    app.multiselect(key="compare_columns").set_value(["cosine", "A encoder=builtin"]).run()
    assert not app.exception and not app.error
    assert loads == [("builtin", None)]  # the sidebar's and the column's calls are one cache entry
    assert_page_shows(app, expected(library, app.session_state["compare_rows"], ["cosine", "A encoder=builtin"],
                                    model_for=lambda spec, pretrained: fg.ColumnModel(library["encoder"],
                                                                                      library["gallery"])))


def test_a_column_s_checkpoint_must_lie_in_the_data_roots(library, tmp_path, monkeypatch, loads):
    """A server limited to its data roots: a column's pretrained= (a link's columns= can name any
    file) is a tag of open_clip's or a checkpoint under a root; one outside is an error box and is
    never loaded, one inside ranks the folder under that encoder, its anchors through its own
    "auto" templates ('a photo of a {}.') beside the built-in model's (as typed)."""
    from tiny_open_clip import TINY_ARCH, make_tiny_checkpoint

    root, private = tmp_path / "data", tmp_path / "private"
    folder = small_folder(root / "images")
    private.mkdir()
    inside, _ = make_tiny_checkpoint(root)
    outside, _ = make_tiny_checkpoint(private, seed=1)
    monkeypatch.setenv("ANCHORDIV_DATA_ROOTS", str(root))
    monkeypatch.delenv("ANCHORDIV_ALLOW_ANY_PATH", raising=False)
    app = open_compare()
    app.radio(key="gallery_kind").set_value("folder").run()
    app.selectbox(key="folder_choice").set_value(str(folder.resolve())).run()
    app.session_state["compare_rows"] = ["#0", "#20"]
    escaping = f"cosine encoder=open_clip:{TINY_ARCH} pretrained={outside}"
    app.session_state["compare_columns"] = ["cosine", escaping]  # as a crafted link's columns= sets them
    app.run()
    errors = " ".join(plain(error.value) for error in app.error)
    assert not app.exception and "is outside the data folders this server was started with" in errors
    assert str(outside) in errors and all(pretrained != str(outside) for _, pretrained in loads)

    tagged = "cosine encoder=open_clip:ViT-B-32 pretrained=laion2b_s34b_b79k"  # a tag is no path: looked up, not refused
    app.session_state["compare_columns"] = ["cosine", tagged]
    app.run()
    errors = " ".join(plain(error.value) for error in app.error)
    assert not app.exception and "laion2b_s34b_b79k" in errors and "outside the data folders" not in errors

    named = f"A encoder=open_clip:{TINY_ARCH} pretrained={inside}"
    app.session_state["compare_columns"] = ["A", named]
    app.run()
    assert not app.exception and not app.error
    assert (f"open_clip:{TINY_ARCH}", str(inside.resolve())) in loads
    result = folder_figure(library["encoder"], folder, ["A", named])
    assert result.settings.templates_lines()[1].startswith("Anchor texts encoded as 'a photo of a {}.' by open_clip:")
    assert_page_shows(app, result)


def folder_figure(builtin, folder, columns):
    """The library's figure of rows #0 and #20 of ``folder`` under the built-in model and the page's
    default presets, each column naming an encoder loaded on the CPU."""
    gallery = folder_gallery(folder, builtin)
    presets = ex.anchor_presets(gallery)
    return fg.compare(gallery, builtin, ["#0", "#20"], columns, presets["Gallery object names"],
                      presets["Generic styles (not from the gallery)"], 5, ex.GeometrySpec(scale=10.0),
                      model_for=lambda spec, pretrained: fg.ColumnModel(
                          tiny := load_encoder(spec, pretrained, "cpu"), folder_gallery(folder, tiny)))


def shown_text_pixels(app: AppTest, column_width: float) -> float:
    """The smallest text of the preview in CSS pixels, the page's column ``column_width`` px wide."""
    body = preview_bodies(app)[0]
    svg = base64.b64decode(shown_figure_url(app).split(",", 1)[1]).decode()
    units = float(re.search(r'<svg[^>]*\bwidth="([0-9.]+)pt"', svg).group(1))  # its user units are points
    sizes = [float(size) for size in re.findall(r"font-size: ([0-9.]+)px", svg)]
    pixels = re.search(r"width:([0-9.]+)px", body)
    shown = float(pixels.group(1)) if pixels else column_width
    return min(sizes) * shown / units


def test_the_preview_is_readable_unless_asked_to_fit_the_page(library):
    """The figure is drawn for print; the page shows its smallest text at 10 px, a picture per column
    that wrap onto the next line where the page is narrower than them side by side (each narrower
    than the page's column in a 1500 px window, about 1,100 px), or fits the whole figure to the
    column when asked (where a four-column figure's text is tiny)."""
    app = open_compare()
    body = preview_bodies(app)[0]
    assert "flex-wrap:wrap" in body and "overflow-x:auto" in body and "<script" not in body
    widths = [float(width) for width in re.findall(r"width:([0-9.]+)px", body)]
    assert len(widths) == len(app.session_state["compare_columns"]) and max(widths) < 1000, widths
    assert shown_text_pixels(app, column_width=700) >= 9.9
    app.radio(key="compare_preview_size").set_value("fit").run()
    assert not app.exception, app.exception
    assert "width:100%" in preview_bodies(app)[0]
    assert shown_text_pixels(app, column_width=700) < 9


def test_a_column_whose_model_is_not_on_the_server_is_left_out_and_the_rest_drawn(library, loads, monkeypatch):
    """A column naming a model whose weights this server lacks (as a link's columns= may) is left
    out, as a column that does not parse is: a message names it, says why and what to do on this
    page (another encoder=, or ask whoever runs the server; never the library's allow_download=True),
    and the other columns are drawn. Nothing is loaded or fetched for it, even where the server may
    download: the sidebar's download shows its progress, a figure's run would only wait."""
    absent = "cosine encoder=open_clip:ViT-B-32 pretrained=laion2b_s34b_b79k"
    monkeypatch.delenv("ANCHORDIV_ALLOW_DOWNLOAD", raising=False)
    app = open_compare()
    app.session_state["compare_columns"] = ["cosine", "A", absent]
    app.run()
    errors = " ".join(plain(error.value) for error in app.error)
    assert f"Column '{absent}' is left out: ViT-B-32 · laion2b_s34b_b79k: its weights are not on this server" in errors
    assert "Choose another encoder= for this column" in errors and "anchordiv demo --allow-download" in errors
    assert "allow_download=True" not in errors
    assert_page_shows(app, expected(library, app.session_state["compare_rows"], ["cosine", "A"]))

    monkeypatch.setenv("ANCHORDIV_ALLOW_DOWNLOAD", "1")
    app.run()
    errors = " ".join(plain(error.value) for error in app.error)
    assert f"Column '{absent}' is left out" in errors and "choose it under Model in the sidebar" in errors
    assert_page_shows(app, expected(library, app.session_state["compare_rows"], ["cosine", "A"]))
    assert all(spec != "open_clip:ViT-B-32" for spec, _ in loads)
