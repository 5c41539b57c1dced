"""The Learn page through streamlit.testing.v1.AppTest: every picture it draws is checked against
anchordiv.lesson and anchordiv.explain, computed here from the same widget values."""
from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from markup import plain
from anchordiv import explain, lesson
from anchordiv import explorer as ex
from anchordiv.builtin.weights import ASSETS_DIR, MANIFEST_NAME, WEIGHTS_NAME
from anchordiv.text_cache import encode_texts_cached

streamlit_testing = pytest.importorskip("streamlit.testing.v1")
AppTest = streamlit_testing.AppTest

APP = Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py"
LEARN = "views/learn.py"
TIMEOUT = 240

pytestmark = [
    pytest.mark.skipif(not (ASSETS_DIR / WEIGHTS_NAME).is_file() or not (ASSETS_DIR / MANIFEST_NAME).is_file(),
                       reason="the built-in model weights (assets/builtin-model.*) are not there yet"),
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
def gallery_expectation(app: AppTest, library: dict, rank: int) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """The KL terms and the responsibilities the library gives for the page's query and its ``rank``-th
    neighbour, from the same anchors, sidebar settings, p and weighting; and the neighbour's name."""
    state, gallery, encoder = app.session_state, library["gallery"], library["encoder"]
    texts = [ex.parse_anchor_text(state[f"anchors_{side}"]).anchors for side in "ab"]
    assert state["direction"].startswith("Query first")  # the default: KL(p_query || p_neighbour)
    spec = ex.GeometrySpec(kind=state["model_kind"], scale=float(state["scale"]),
                           n_components=int(state["gmm_components"]), rank=int(state["latent_rank"]))
    geometry = ex.ExplorerGeometry(gallery.embeddings, [encode_texts_cached(encoder, group) for group in texts],
                                   texts, spec)
    query_id = state["query_id"] if "query_id" in state else ex.default_query_id(gallery)
    p = float(state["p"]) if "p" in state else 0.5
    weighting = state["weighting"] if "weighting" in state else "calibrated"
    _, ids = ex.search_one(geometry.index_at(p, weighting), gallery.embeddings[query_id], int(state["top_k"]),
                           exclude=query_id)
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
