"""The Learn page through streamlit.testing.v1.AppTest. The toy world is drawn by the browser (its
numbers are the library's: tests/test_toy_world_math.py; its drags and releases:
tests/test_browser_toy_world.py): here the page hands it the settings, typed anchors and link it
holds (the component's payload, as anchordiv.explorer.toy_world builds it from them), draws no
second control of the query, s, p or the arc, fits no toy model and draws no figure of it, and says
beside it what each figure shows with its formula. The real gallery's part, the server's, is
checked against anchordiv.lesson and anchordiv.explain, computed here from the same values."""
from __future__ import annotations

import base64
import json
import re

import numpy as np
import pandas as pd
import pytest

from markup import plain
from anchordiv import explain, lesson
from anchordiv import explorer as ex
from anchordiv.explorer import links
from anchordiv.explorer.toy_world import ToyState, gmm_labels, slider_bounds, toy_payload
from app_pages import APP, PAGES, TIMEOUT
from helpers import needs_builtin
from anchordiv.grids import readable_value
from anchordiv.text_cache import encode_texts_cached

streamlit_testing = pytest.importorskip("streamlit.testing.v1")
AppTest = streamlit_testing.AppTest
Widget = pytest.importorskip("streamlit.testing.v1.element_tree").Widget

LEARN = PAGES["learn"]

pytestmark = [
    needs_builtin,
    pytest.mark.usefixtures("app_env"),
]


def open_learn() -> AppTest:
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    app.switch_page(LEARN).run()
    assert not app.exception, app.exception
    return app


def chart(app: AppTest, key: str) -> list[dict]:
    """The traces of the plotly chart drawn with ``key``."""
    matches = [element for element in app.get("plotly_chart") if element.proto.id.endswith(key)]
    assert len(matches) == 1, f"expected one chart {key!r}, found {len(matches)}"
    return json.loads(matches[0].proto.spec)["data"]


def values(array) -> np.ndarray:
    """A trace's array: plotly writes numpy arrays as base64 bytes of their dtype (and shape)."""
    if not isinstance(array, dict):
        return np.asarray(array)
    data = np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"])
    shape = array.get("shape")
    return data.reshape([int(size) for size in str(shape).split(",")]) if shape else data


def trace(traces: list[dict], name: str) -> dict:
    return next(item for item in traces if item.get("name") == name)


def walk(node):
    """Every node under ``node`` of the app's tree, in the order the page shows them."""
    yield node
    children = getattr(node, "children", None)
    for child in (children.values() if isinstance(children, dict) else ()):
        yield from walk(child)


def visible_widgets(app: AppTest) -> list[tuple[str, str]]:
    """``(label, key)`` of every widget the page shows, in the main area and the sidebar."""
    return [(node.label, node.key) for block in (app.main, app.sidebar) for node in walk(block)
            if isinstance(node, Widget)]


def sections(app: AppTest) -> dict[str, str]:
    """The main area's texts (headers, markdown, captions, boxes) in page order, joined per section:
    each header starts one, named by the header's text."""
    texts: dict[str, list[str]] = {"": []}
    current = ""
    for node in walk(app.main):
        if node.type == "header":
            current = node.value
            texts[current] = []
        elif node.type in ("markdown", "caption", "subheader", "alert", "info", "warning", "error"):
            texts[current].append(plain(str(node.value)))
    return {name: "\n".join(parts) for name, parts in texts.items()}


def section(app: AppTest, start: str) -> str:
    """The texts of the section whose header starts with ``start``."""
    matches = [text for name, text in sections(app).items() if name.startswith(start)]
    assert len(matches) == 1, (start, list(sections(app)))
    return matches[0]


def stated(pattern: str, text: str) -> list[str]:
    """Every match of ``pattern``'s group in ``text`` (a value the page states)."""
    return re.findall(pattern, text)


def sphere_option(app: AppTest) -> str:
    """The world radio's 3-D option, by what it says."""
    return next(option for option in app.radio(key="learn_world").options if option.startswith("3-D"))


# -- the toy world ------------------------------------------------------------------------------------
# The settings the component's sliders move: the page draws no widget of its own for them.
TOY_SLIDERS = {"learn_query", "learn_query_azimuth", "learn_query_elevation", "learn_scale", "learn_p", "learn_width"}
# The page's own charts (the lesson on weights, the real gallery); none is the toy world's.
SERVER_CHARTS = ("learn_weights_chart", "learn_chart_kl_terms", "learn_chart_gallery_responsibility")


def payload(app: AppTest) -> dict | None:
    """What the page sent the toy world's component this run (``None``: no component)."""
    found = [node for node in walk(app.main) if node.type == "bidi_component"
             and node.proto.component_name == "anchordiv.toy_world"]
    assert len(found) <= 1
    return json.loads(found[0].proto.json) if found else None


def expected_payload(app: AppTest) -> dict:
    """The payload the protocol builds from the page's settings as the session holds them (the
    anchors parsed from their typed texts), as JSON."""
    state = app.session_state
    sphere = state["learn_world"] == "sphere"
    if sphere:
        sets = [lesson.parse_angle_pairs(state[f"learn_anchors_{side}_3d"], allow_empty=True) for side in "ab"]
        query = (float(state["learn_query_azimuth"]), float(state["learn_query_elevation"]))
    else:
        sets = [lesson.parse_angles(state[f"learn_anchors_{side}"], allow_empty=True) for side in "ab"]
        query = float(state["learn_query"])
    toy = ToyState(state["learn_world"], query, *(tuple(group) for group in sets), float(state["learn_scale"]),
                   float(state["learn_p"]), float(state["learn_width"]))
    return json.loads(json.dumps(toy_payload(toy, state["learn_kind"], state["learn_weighting"], slider_bounds(),
                                             companion_params=(links.GALLERY_PARAM,))))


def assert_the_world_is_the_pages(app: AppTest) -> None:
    """No exception or error; the component has the page's settings; no toy figure from the server."""
    assert not app.exception and not app.error, (app.exception, [error.value for error in app.error])
    assert payload(app) == expected_payload(app)
    drawn = [element.proto.id for element in app.get("plotly_chart")]
    assert drawn and all(any(key in chart_id for key in SERVER_CHARTS) for chart_id in drawn), drawn


def test_page_starts_with_the_toy_world_in_the_page_and_its_formulas_beside_it():
    app = open_learn()
    assert_the_world_is_the_pages(app)
    assert app.title[0].value.startswith("Learn")
    sent = payload(app)
    assert (sent["world"], sent["query"], sent["sets"]) == ("circle", 120.0, [[0.0, 40.0, 80.0], [160.0, 250.0]])
    assert set(sent["controls"]) == {"theta", "azimuth", "elevation", "scale", "p", "width"}
    assert sent["controls"]["theta"] == {"min": 0, "max": 359, "step": 1}
    formulas = " ".join(element.value for element in app.latex)
    for formula in (r"\kappa(\eta) = \log", r"D(x \to y) = \mathrm{KL}", r"p(\gamma_i \mid x)", r"r_k(x)"):
        assert formula in formulas, formulas
    text = section(app, "A toy world")
    for said in ("Grey: the directions closest to the query by **cosine**", "stays flat while the same anchor",
                 "The bars are the **tilted distribution**", "Moving p hands the query from B (p = 0) to A"):
        assert said in text, said


@pytest.mark.parametrize("world", ["circle", "sphere"])
def test_the_query_s_p_and_the_arc_have_one_control_each_the_worlds(world):
    """The component's sliders are the page's controls of the query, s, p and the arc: no widget of
    the page's draws them a second time; the menus and the typed anchors stay the page's."""
    app = open_learn()
    if world == "sphere":
        app.radio(key="learn_world").set_value(sphere_option(app)).run()
    keys = {key for _, key in visible_widgets(app)}
    assert not keys & TOY_SLIDERS, sorted(keys & TOY_SLIDERS)
    assert {"learn_world", "learn_kind", "learn_weighting"} <= keys
    assert {f"learn_anchors_a{'_3d' if world == 'sphere' else ''}", "learn_add_a"} <= {
        key.removesuffix("_3d") if key.startswith("learn_add") else key for key in keys}
    assert_the_world_is_the_pages(app)


def test_each_setting_reaches_the_world_as_the_page_holds_it():
    """A menu, a typed set, or a released query, s, p or arc (written into the settings, as the
    component's release does before its run): the component starts from it."""
    app = open_learn()
    steps = [
        ("released query", lambda: app.session_state.__setitem__("learn_query", 45)),
        ("anchors of A", lambda: app.text_input(key="learn_anchors_a").set_value("0, 90")),
        ("released scale", lambda: app.session_state.__setitem__("learn_scale", 12.0)),
        ("released p", lambda: app.session_state.__setitem__("learn_p", 0.2)),
        ("weighting", lambda: app.radio(key="learn_weighting").set_value("literal")),
        ("released arc", lambda: app.session_state.__setitem__("learn_width", 90)),
        ("model", lambda: app.selectbox(key="learn_kind").set_value("gaussian")),
        ("anchors of B", lambda: app.text_input(key="learn_anchors_b").set_value("")),
    ]
    for what, change in steps:
        change()
        app.run()
        try:
            assert_the_world_is_the_pages(app)
        except AssertionError as error:
            raise AssertionError(f"after changing the {what}: {error}") from error
    sent = payload(app)
    assert (sent["query"], sent["sets"], sent["scale"], sent["p"], sent["width"]) == (45.0, [[0.0, 90.0], []], 12.0,
                                                                                      0.2, 90.0)
    assert (sent["kind"], sent["weighting"]) == ("gaussian", "literal")


def test_a_gmm_world_gets_the_librarys_k_means_labels_and_an_unfittable_set_keeps_the_world():
    """A Gaussian mixture starts from the library's k-means labels; a set the library cannot fit
    (a latent model of one anchor) is the component's to refuse, in the library's words: the page
    fits nothing, so it says nothing of it and the world stays, with what the person set."""
    app = open_learn()
    app.selectbox(key="learn_kind").set_value("gmm").run()
    assert_the_world_is_the_pages(app)
    assert payload(app)["labels"] == gmm_labels(ToyState("circle", 120.0, (0.0, 40.0, 80.0), (160.0, 250.0), 5.0,
                                                         0.5, 40.0), "gmm", "balanced")
    app.selectbox(key="learn_kind").set_value("latent-softmax").run()
    app.text_input(key="learn_anchors_a").set_value("40").run()
    assert_the_world_is_the_pages(app)
    assert payload(app)["sets"][0] == [40.0] and payload(app)["kind"] == "latent-softmax"


def toy_statements(app: AppTest) -> None:
    """The toy world's section names the toy's own weighting and scale (not the sidebar's)."""
    text = section(app, "A toy world")
    scale, weighting = app.session_state["learn_scale"], app.radio(key="learn_weighting").value
    assert stated(r"The toy world's settings: [^.]*?scale s = ([\d.]+), (\w+) weights", text) == [
        (f"{scale:g}", weighting)], text
    assert stated(r"under the toy's \*\*(\w+)\*\* weights at scale s = ([\d.]+)", text) == [(weighting, f"{scale:g}")]
    assert f"sidebar's geometry (scale s = {app.slider(key='scale').value:g}) is for *On the real gallery* alone" in text


def crosses_one_half(model_at, point, p: float) -> bool:
    """Whether A's responsibility for ``point`` crosses one half within the rounding of a stated ``p``
    (two decimals), read from the mixture's own responsibilities."""
    share = [float(model_at(min(max(value, 0.0), 1.0)).responsibilities(point.reshape(1, -1))[0, 0])
             for value in (p - 0.006, p + 0.006)]
    return share[0] < 0.5 < share[1]


def test_the_toy_section_names_its_own_weighting_and_scale():
    app = open_learn()
    toy_statements(app)
    for what, change in [("sidebar's scale", lambda: app.slider(key="scale").set_value(20.0)),
                         ("toy's scale", lambda: app.session_state.__setitem__("learn_scale", 7.5)),
                         ("toy's weighting", lambda: app.radio(key="learn_weighting").set_value("literal"))]:
        change()
        app.run()
        try:
            toy_statements(app)
        except AssertionError as error:
            raise AssertionError(f"after changing the {what}: {error}") from error
    assert "scale s = 7.5, literal weights" in section(app, "A toy world")


def test_adding_the_query_as_an_anchor():
    app = open_learn()
    app.session_state["learn_query"] = 200  # as a release of the world writes it
    app.run()
    app.button(key="learn_add_b").click().run()
    assert app.text_input(key="learn_anchors_b").value == "160, 250, 200"
    assert payload(app)["sets"][1] == [160.0, 250.0, 200.0]
    assert_the_world_is_the_pages(app)


def test_the_sphere_world_starts_at_the_pages_query_and_anchors():
    app = open_learn()
    app.radio(key="learn_world").set_value(sphere_option(app)).run()
    app.session_state["learn_query_elevation"] = -10
    app.run()
    assert_the_world_is_the_pages(app)
    sent = payload(app)
    assert sent["world"] == "sphere" and sent["query"] == [30.0, -10.0]
    assert sent["sets"] == [[[0.0, 0.0], [60.0, 0.0], [120.0, 0.0]], [[0.0, 60.0], [180.0, 60.0]]]
    assert r"u(\varphi, e)" in " ".join(element.value for element in app.latex)


@pytest.mark.parametrize("key, text, message", [
    ("learn_anchors_a", "", "Set A is empty"),
    ("learn_anchors_a", "0, north", "'north' is not a number"),
    ("learn_anchors_b", "30, 390", "30° and 390° are the same direction"),
    ("learn_anchors_a_3d", "0 100", "outside [-90, 90]"),
])
def test_bad_anchor_text_gives_a_message_and_no_exception(key, text, message):
    app = open_learn()
    if key.endswith("_3d"):
        app.radio(key="learn_world").set_value(sphere_option(app)).run()
    app.text_input(key=key).set_value(text).run()
    assert not app.exception, app.exception
    assert any(message in plain(error.value) for error in app.error), [error.value for error in app.error]
    assert app.text_input(key=key).value == text  # what was typed stays, to be mended
    # The lesson on the gallery does not depend on the toy world, so it is still there.
    assert chart(app, "learn_chart_kl_terms")


def test_the_toy_world_travels_in_the_link():
    """The settings a release writes are the link's, and a link opened starts the world there."""
    app = open_learn()
    app.session_state["learn_query"] = 200  # as a release of the world writes them
    app.session_state["learn_p"] = 0.35
    app.run()
    app.text_input(key="learn_anchors_b").set_value("170, 260").run()
    assert (app.query_params["toy_query"], app.query_params["toy_b"], app.query_params["toy_p"]) == (
        "200", "170, 260", "0.35")
    # AppTest runs the default page first; the link is then opened on the Learn page, as a browser would.
    again = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    again.query_params = dict(app.query_params) | {"toy_scale": "400", "toy_world": "torus"}
    again.switch_page(LEARN).run()
    assert not again.exception
    assert_the_world_is_the_pages(again)
    sent = payload(again)
    assert (sent["query"], sent["sets"][1], sent["p"]) == (200.0, [170.0, 260.0], 0.35)
    warning = " ".join(plain(str(item.value)) for item in again.warning)
    assert "toy_scale" in warning and "toy_world" in warning
    assert sent["scale"] == 5.0


# -- the real gallery ---------------------------------------------------------------------------------
def gallery_geometry(app: AppTest, library: dict) -> tuple[ex.ExplorerGeometry, int, float, str]:
    """The geometry the library gives for the page's anchors and sidebar settings; the query's id,
    p and the weighting the gallery section reads."""
    state, gallery, encoder = app.session_state, library["gallery"], library["encoder"]
    texts = [ex.parse_anchor_text(state[f"anchors_{side}"]).anchors for side in "ab"]
    assert state["direction"] == "forward"  # the default: KL(p_query || p_neighbour)
    spec = ex.GeometrySpec(kind=state["anchor_model"], scale=float(state["scale"]),
                           n_components=int(state["n_components"]), rank=int(state["rank"]))
    geometry = ex.ExplorerGeometry(gallery.embeddings, [encode_texts_cached(encoder, group) for group in texts],
                                   texts, spec)
    query_id = state["query_id"] if "query_id" in state else ex.default_query_id(gallery)
    p = float(state["p"]) if "p" in state else 0.5
    weighting = state["weighting"] if "weighting" in state else "calibrated"
    return geometry, query_id, p, weighting


def gallery_expectation(app: AppTest, library: dict, rank: int) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """The KL terms and the responsibilities the library gives for the page's query and its ``rank``-th
    neighbour, from the same anchors, sidebar settings, p and weighting; and the neighbour's name."""
    gallery = library["gallery"]
    geometry, query_id, p, weighting = gallery_geometry(app, library)
    _, ids = ex.search_one(geometry.index_at(p, weighting), gallery.embeddings[query_id],
                           int(app.session_state["top_k"]), exclude=query_id)
    neighbour = int(ids[rank - 1])
    query_tilt, neighbour_tilt, _, _ = explain.explain_pair(
        geometry.model_at(p, weighting), geometry.component_anchors, geometry.component_texts,
        geometry.component_names, gallery.embeddings[query_id], gallery.embeddings[neighbour])
    curve = lesson.responsibility_curve(lambda value: geometry.model_at(value, weighting),
                                        {"query": gallery.embeddings[query_id],
                                         f"neighbour {rank}": gallery.embeddings[neighbour]})
    return explain.kl_terms(query_tilt, neighbour_tilt), curve, f"neighbour {rank}"


def test_gallery_kl_terms_and_responsibilities_are_the_librarys(library):
    app = open_learn()
    for rank in (1, 3):
        app.selectbox(key="learn_neighbour").set_value(rank).run()
        assert not app.exception and not app.error
        terms, curve, name = gallery_expectation(app, library, rank)
        shown = next(frame.value for frame in app.dataframe if "term" in frame.value.columns)
        pd.testing.assert_frame_equal(shown.reset_index(drop=True), terms, rtol=1e-6)
        bars = chart(app, "learn_chart_kl_terms")
        drawn = {anchor: term for item in bars for anchor, term in zip(item["y"], values(item["x"]))}
        expected = dict(zip(terms["anchor"], terms["term"]))
        assert drawn == pytest.approx({anchor: expected[anchor] for anchor in drawn}, rel=1e-6)
        assert set(terms["anchor"].head(8)) <= set(drawn) and set(terms["anchor"].tail(8)) <= set(drawn)
        # The sum of the terms and the divergence through one rounding: the same number, read the same.
        said = next(caption.value for caption in app.caption if caption.value.startswith("Sum of the terms"))
        total, model = re.findall(r": ([0-9.,]+) nats", said)
        assert total == model == readable_value(terms["term"].sum(), divergence=True), said
        lines = chart(app, "learn_chart_gallery_responsibility")
        for point in ("query", name):
            expected = curve[(curve["point"] == point) & (curve["component"] == "A")]["responsibility"]
            np.testing.assert_allclose(values(trace(lines, f"A, {point}")["y"]), expected, rtol=1e-6)


def gallery_statements(app: AppTest, library: dict) -> str:
    """The gallery section names the sidebar's scale and the Explore page's weighting it uses, and
    states A's share of the query at p and the p of an even share as the library's responsibilities
    give them; its text."""
    text = section(app, "On the real gallery")
    geometry, query_id, p, weighting = gallery_geometry(app, library)
    scale = app.slider(key="scale").value
    assert stated(r"This section's settings: the sidebar's geometry \([^)]*?scale s = ([\d.]+)[^)]*\) and the "
                  r"Explore page's [^.]*?p = ([\d.]+) and (\w+) weights\.", text) == [
        (f"{scale:g}", f"{p:.2f}", weighting)]
    shares = stated(r"Under these \*\*(\w+)\*\* weights at scale s = ([\d.]+), A holds (\d+)% of the query's tilt "
                    r"at p = ([\d.]+) and half of it at \*\*p = ([\d.]+)\*\*", text)
    assert len(shares) == 1 and shares[0][:2] == (weighting, f"{scale:g}") and float(shares[0][3]) == round(p, 2)
    query = library["gallery"].embeddings[query_id]
    share = float(geometry.model_at(p, weighting).responsibilities(query.reshape(1, -1))[0, 0])
    assert int(shares[0][2]) == round(100 * share)
    assert crosses_one_half(lambda value: geometry.model_at(value, weighting), query, float(shares[0][4]))
    return text


def test_the_gallery_section_names_the_sidebars_geometry_and_explains_calibration(library):
    """At p = 0.5 calibrated weights give A most of the default query (the student's "97% at
    p = 0.5, crossing near 0.03"): the section says why, and its stated scale follows the
    sidebar's, not the toy's."""
    app = open_learn()
    text = gallery_statements(app, library)
    assert "calibrated weights" in text and "how far the neighbours have moved from B's (p = 0) to A's (p = 1)" in text
    assert "A's share need not be one half there" in text
    assert "Calibrated: p is how far the neighbours have moved" in text  # the Explore page's caption of it
    app.slider(key="scale").set_value(20.0).run()
    assert not app.exception and not app.error
    gallery_statements(app, library)
    app.session_state["learn_scale"] = 7.5  # as a release of the toy world writes it
    app.run()
    assert "scale s = 20," in gallery_statements(app, library)
    app.session_state["weighting"] = "balanced"  # as chosen on the Explore page
    app.run()
    text = gallery_statements(app, library)
    assert "balanced weights" in text and "how far the neighbours have moved" not in text
    _, curve, _ = gallery_expectation(app, library, 1)
    drawn = values(trace(chart(app, "learn_chart_gallery_responsibility"), "A, query")["y"])
    expected = curve[(curve["point"] == "query") & (curve["component"] == "A")]["responsibility"]
    np.testing.assert_allclose(drawn, expected, rtol=1e-6)
