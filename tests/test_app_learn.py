"""The Learn page through streamlit.testing.v1.AppTest: every picture it draws is checked against
anchordiv.lesson and anchordiv.explain, computed here from the same widget values."""
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
def toy_from_widgets(app: AppTest) -> tuple[lesson.ToyGeometry, float]:
    """The toy geometry and query angle the library gives for the 2-D widgets' current values."""
    a = lesson.parse_angles(app.text_input(key="learn_anchors_a").value)
    b = lesson.parse_angles(app.text_input(key="learn_anchors_b").value, allow_empty=True)
    toy = lesson.toy_geometry(lesson.circle_directions(a), lesson.circle_directions(b),
                              app.selectbox(key="learn_kind").value, app.slider(key="learn_scale").value,
                              app.slider(key="learn_p").value, app.radio(key="learn_weighting").value)
    return toy, float(app.slider(key="learn_query").value)


def assert_circle_is_the_librarys(app: AppTest) -> None:
    assert not app.exception and not app.error, (app.exception, [error.value for error in app.error])
    toy, angle = toy_from_widgets(app)
    profile = lesson.circle_profile(toy.model, angle)
    kappa = chart(app, "learn_chart_kappa")[0]
    np.testing.assert_allclose(values(kappa["x"]), profile["angle"])
    np.testing.assert_allclose(values(kappa["y"]), profile["kappa"], rtol=1e-12)
    curves = chart(app, "learn_chart_divergence")
    np.testing.assert_allclose(values(trace(curves, "anchor divergence D(x → u(θ))")["y"]), profile["divergence"],
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(values(trace(curves, "cosine distance 1 − cos")["y"]), profile["cosine_distance"])
    # The neighbourhood drawn is the library's, at the chosen width.
    balls = lesson.equal_size_neighbourhoods(profile, float(app.slider(key="learn_width").value))
    circle = chart(app, "learn_chart_circle")
    np.testing.assert_array_equal(values(trace(circle, "divergence neighbourhood")["customdata"]),
                                  balls.loc[balls["near_by_divergence"], "angle"])
    query = lesson.circle_directions([angle])[0]
    table = toy.anchor_table(query)
    bars = chart(app, "learn_chart_tilt")
    drawn = {anchor: p for item in bars for anchor, p in zip(item["x"], values(item["y"]))}
    assert drawn == pytest.approx(dict(zip(table["anchor"], table["probability"])), rel=1e-9)
    if toy.is_mixture:
        curve = lesson.responsibility_curve(toy.model_at, {"query": query})
        drawn_a = values(trace(chart(app, "learn_chart_responsibility"), "A")["y"])
        np.testing.assert_allclose(drawn_a, curve.loc[curve["component"] == "A", "responsibility"], rtol=1e-9)


def test_page_starts_and_draws_the_librarys_toy_world():
    app = open_learn()
    assert_circle_is_the_librarys(app)
    assert app.title[0].value.startswith("Learn")
    assert len(app.latex) >= 4  # each picture comes with its formula


def test_each_toy_control_changes_the_pictures_as_the_library_says():
    app = open_learn()
    before = values(chart(app, "learn_chart_kappa")[0]["y"])
    steps = [
        ("query", lambda: app.slider(key="learn_query").set_value(45)),
        ("anchors of A", lambda: app.text_input(key="learn_anchors_a").set_value("0, 90")),
        ("scale", lambda: app.slider(key="learn_scale").set_value(12.0)),
        ("p", lambda: app.slider(key="learn_p").set_value(0.2)),
        ("weighting", lambda: app.radio(key="learn_weighting").set_value("literal")),
        ("neighbourhood width", lambda: app.slider(key="learn_width").set_value(90)),
        ("model", lambda: app.selectbox(key="learn_kind").set_value("gaussian")),
        ("anchors of B", lambda: app.text_input(key="learn_anchors_b").set_value("")),
    ]
    for what, change in steps:
        change().run()
        try:
            assert_circle_is_the_librarys(app)
        except AssertionError as error:
            raise AssertionError(f"after changing the {what}: {error}") from error
    assert not np.allclose(values(chart(app, "learn_chart_kappa")[0]["y"]), before)
    assert not app.get("plotly_chart") or all(not element.proto.id.endswith("learn_chart_responsibility")
                                               for element in app.get("plotly_chart"))
    assert any("Set B is empty" in plain(info.value) for info in app.info)


@pytest.mark.parametrize("world", ["circle", "sphere"])
def test_no_two_visible_widgets_share_a_label(world):
    """The sidebar's geometry, the toy world and the lesson on weights each have a scale, a model or
    a query: each widget says whose it is, so a student never meets two "Scale s" at once."""
    app = open_learn()
    if world == "sphere":
        app.radio(key="learn_world").set_value(sphere_option(app)).run()
    assert not app.exception
    widgets = visible_widgets(app)
    assert {"scale", "anchor_model", "learn_scale", "learn_kind", "learn_weights_scale"} <= {key for _, key in widgets}
    labels = [label for label, _ in widgets]
    assert not sorted({label for label in labels if labels.count(label) > 1}), widgets


def toy_statements(app: AppTest) -> None:
    """The toy world's section names the toy's own weighting and scale (not the sidebar's), and the
    p at which A takes half of its query is where the library's responsibilities cross one half."""
    text = section(app, "A toy world")
    scale, weighting = app.slider(key="learn_scale").value, app.radio(key="learn_weighting").value
    assert stated(r"The toy world's settings: [^.]*?scale s = ([\d.]+), (\w+) weights", text) == [
        (f"{scale:g}", weighting)], text
    assert stated(r"Under the toy's \*\*(\w+)\*\* weights at scale s = ([\d.]+)", text) == [(weighting, f"{scale:g}")]
    assert f"sidebar's geometry (scale s = {app.slider(key='scale').value:g}) is for *On the real gallery* alone" in text
    even = [float(value) for value in stated(r"A takes half of this query's tilt at \*\*p = ([\d.]+)\*\*", text)]
    toy, angle = toy_from_widgets(app)
    assert len(even) == 1 and crosses_one_half(toy.model_at, lesson.circle_directions([angle])[0], even[0])


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
                         ("toy's scale", lambda: app.slider(key="learn_scale").set_value(7.5)),
                         ("toy's weighting", lambda: app.radio(key="learn_weighting").set_value("literal")),
                         ("query", lambda: app.slider(key="learn_query").set_value(30))]:
        change().run()
        try:
            toy_statements(app)
        except AssertionError as error:
            raise AssertionError(f"after changing the {what}: {error}") from error
    assert "scale s = 7.5, literal weights" in section(app, "A toy world")


def test_adding_the_query_as_an_anchor():
    app = open_learn()
    app.slider(key="learn_query").set_value(200).run()
    app.button(key="learn_add_b").click().run()
    assert app.text_input(key="learn_anchors_b").value == "160, 250, 200"
    assert "B3 200°" in chart(app, "learn_chart_tilt")[1]["x"]
    assert_circle_is_the_librarys(app)


def test_the_sphere_heatmap_is_the_librarys_divergence():
    app = open_learn()
    app.radio(key="learn_world").set_value(sphere_option(app)).run()
    app.slider(key="learn_query_elevation").set_value(-10).run()
    assert not app.exception and not app.error
    pairs = [lesson.parse_angle_pairs(app.text_input(key=f"learn_anchors_{side}_3d").value) for side in "ab"]
    directions = [lesson.sphere_directions([a for a, _ in group], [e for _, e in group]) for group in pairs]
    toy = lesson.toy_geometry(*directions, kind="softmax", scale=app.slider(key="learn_scale").value,
                              p=app.slider(key="learn_p").value, weighting=app.radio(key="learn_weighting").value)
    profile = lesson.sphere_profile(toy.model, float(app.slider(key="learn_query_azimuth").value), -10.0)
    heatmap = chart(app, "learn_chart_sphere_divergence")[0]
    expected = profile.pivot(index="elevation", columns="azimuth", values="divergence")
    np.testing.assert_allclose(values(heatmap["z"]), expected.to_numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(values(heatmap["x"]), expected.columns)
    np.testing.assert_allclose(values(heatmap["y"]), expected.index)


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
    # The lesson on the gallery does not depend on the toy world, so it is still there.
    assert chart(app, "learn_chart_kl_terms")


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


def test_the_toy_world_travels_in_the_link():
    app = open_learn()
    app.slider(key="learn_query").set_value(200).run()
    app.text_input(key="learn_anchors_b").set_value("170, 260").run()
    assert app.query_params["toy_query"] == "200" and app.query_params["toy_b"] == "170, 260"
    # AppTest runs the default page first; the link is then opened on the Learn page, as a browser would.
    again = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    again.query_params = dict(app.query_params) | {"toy_scale": "400", "toy_world": "torus"}
    again.switch_page(LEARN).run()
    assert not again.exception
    assert again.slider(key="learn_query").value == 200 and again.text_input(key="learn_anchors_b").value == "170, 260"
    assert_circle_is_the_librarys(again)
    warning = " ".join(plain(str(item.value)) for item in again.warning)
    assert "toy_scale" in warning and "toy_world" in warning
    assert again.slider(key="learn_scale").value == 5.0


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
    app.slider(key="learn_scale").set_value(7.5).run()
    assert "scale s = 20," in gallery_statements(app, library)
    app.session_state["weighting"] = "balanced"  # as chosen on the Explore page
    app.run()
    text = gallery_statements(app, library)
    assert "balanced weights" in text and "how far the neighbours have moved" not in text
    _, curve, _ = gallery_expectation(app, library, 1)
    drawn = values(trace(chart(app, "learn_chart_gallery_responsibility"), "A, query")["y"])
    expected = curve[(curve["point"] == "query") & (curve["component"] == "A")]["responsibility"]
    np.testing.assert_allclose(drawn, expected, rtol=1e-6)
