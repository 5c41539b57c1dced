"""The Learn page's lesson on anchor weights (app/learn_weights.py) through streamlit.testing.v1.AppTest:
every picture is checked against anchordiv.lesson_weights, computed here from the same widget values;
then the library's learner at its edges (no mark to every point marked, repeats, marks that are no point)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from markup import plain
from app_pages import APP, TIMEOUT
from test_app_learn import LEARN, AppTest, chart, open_learn, section, stated, trace, values
from anchordiv import average_precision, lesson_weights
from helpers import needs_builtin

pytestmark = [
    needs_builtin,
    pytest.mark.usefixtures("app_env"),
]
HAND_KEYS = [f"learn_weights_w{angle:g}" for angle in lesson_weights.HAND_ANCHORS]


def controls(app: AppTest) -> tuple[float, int, float]:
    return (float(app.slider(key="learn_weights_query").value), int(app.slider(key="learn_weights_k").value),
            float(app.slider(key="learn_weights_scale").value))


def drawn_nearest(app: AppTest, key: str, name: str) -> list[float]:
    return sorted(values(trace(chart(app, key), f"{name}: nearest points")["x"]).tolist())


def library_nearest(model, query: float, k: int) -> list[float]:
    points = lesson_weights.nearest_points(model, query, k)
    return sorted(points.loc[points["near"], "angle"].tolist())


def hand_nearest_from_widgets(app: AppTest) -> list[float]:
    query, k, scale = controls(app)
    weights = [app.slider(key=key).value for key in HAND_KEYS]
    return library_nearest(lesson_weights.weighted_model(lesson_weights.HAND_ANCHORS, weights, scale), query, k)


def errors(app: AppTest) -> list[str]:
    return [plain(error.value) for error in app.error]


def test_the_section_renders_the_librarys_neighbourhood():
    app = open_learn()
    assert not app.exception and not errors(app), (app.exception, errors(app))
    assert any(header.value.startswith("Weights") for header in app.header)
    drawn = drawn_nearest(app, "learn_weights_chart_profile", "D_w")
    assert drawn == hand_nearest_from_widgets(app) and len(drawn) == controls(app)[1]
    circle = sorted(values(trace(chart(app, "learn_weights_chart_circle"), "nearest points")["customdata"]).tolist())
    assert circle == drawn
    captions = " ".join(caption.value for caption in app.caption)
    assert "Weighting: the four sliders" in captions and "Scale: s = 10" in captions


def test_the_section_states_its_own_scale_not_the_sidebars_or_the_toys():
    """Three scales are on the page (the sidebar's, the toy world's and this lesson's): the lesson
    names the one it uses, and only its own slider moves it."""
    app = open_learn()
    app.slider(key="scale").set_value(20.0).run()
    app.session_state["learn_scale"] = 7.5  # as a release of the toy world's own s slider writes it
    app.run()
    text = section(app, "Weights")
    assert stated(r"Scale: s = ([\d.]+)", text) == ["10", "10"], text
    app.slider(key="learn_weights_scale").set_value(12.5).run()
    assert not app.exception and not errors(app)
    text = section(app, "Weights")
    assert stated(r"Scale: s = ([\d.]+)", text) == ["12.5", "12.5"], text
    assert "Weighting: the four sliders" in text and "Weighting: learned from the marks" in text


def test_moving_a_weight_changes_the_highlighted_neighbourhood():
    app = open_learn()
    before = drawn_nearest(app, "learn_weights_chart_profile", "D_w")
    app.slider(key="learn_weights_w0").set_value(0.5).run()
    after = drawn_nearest(app, "learn_weights_chart_profile", "D_w")
    assert not app.exception and after == hand_nearest_from_widgets(app)
    assert after != before, "moving weight off the 0° anchor left the query's neighbourhood where it was"
    for key in HAND_KEYS:
        app.slider(key=key).set_value(0.0)
    app.run()
    # Said in the page's words (which slider to move), not the library's ("finite, non-negative, not all zero").
    told = [plain(info.value) for info in app.info]
    assert not app.exception and not errors(app) and any("All the weights are 0" in text and
                                                         "Weight of the anchor" in text for text in told), told


def test_learning_from_marked_points_draws_what_the_learner_learned():
    app = open_learn()
    app.multiselect(key="learn_weights_marks").set_value(["60°", "75°", "90°"]).run()
    app.button(key="learn_weights_learn").click().run()
    assert not app.exception and not errors(app), (app.exception, errors(app))
    query, k, scale = controls(app)
    learned = lesson_weights.learn_from_marks(query, [60.0, 75.0, 90.0], scale)
    bars = trace(chart(app, "learn_weights_chart_learned"), "learned weight")
    np.testing.assert_allclose(values(bars["y"]), learned.weights_ / learned.weights_.sum(), rtol=1e-9)
    uniform = lesson_weights.weighted_model(lesson_weights.vocabulary_angles(), None, scale)
    assert drawn_nearest(app, "learn_weights_chart_compare", "learned") == library_nearest(learned, query, k)
    assert drawn_nearest(app, "learn_weights_chart_compare", "uniform") == library_nearest(uniform, query, k)
    # What the section says the learner does: the marked points rank earlier than under uniform weights.
    points = lesson_weights.toy_points()
    marked, others = np.isin(points, [60.0, 75.0, 90.0]), points != query

    def ap(model) -> float:
        divergence = lesson_weights.nearest_points(model, query, k)["divergence"].to_numpy()
        return float(average_precision(-divergence[others], marked[others]))
    assert ap(learned) > ap(uniform) + 0.1, (ap(learned), ap(uniform))
    # Where the weight went, as the sentence under the bars says it.
    heavy = [f"{angle:g}°" for angle in lesson_weights.vocabulary_angles()[np.argsort(-learned.weights_, kind="stable")[:3]]]
    text = " ".join(plain(item.value) for item in app.markdown)
    assert f"most sit on {', '.join(heavy)}" in text
    # Moving the query afterwards says the learned weights are stale, rather than passing them off as current.
    app.slider(key="learn_weights_query").set_value(120).run()
    assert any("press Learn again" in plain(info.value) for info in app.info)


def test_the_section_says_what_the_learner_weighs():
    """The sentence over the marks states FeedbackAnchors' rule: the weight goes to what the query
    and every marked point share (a soft minimum of their standardised scores)."""
    app = open_learn()
    text = " ".join(plain(item.value) for item in app.markdown)
    assert "by what the query and every marked point share" in text, text
    assert "its soft minimum over them" in text and "not to those only the query holds" in text


def test_learning_with_no_marks_says_what_to_do():
    app = open_learn()
    app.button(key="learn_weights_learn").click().run()
    assert not app.exception and not errors(app), errors(app)
    assert any("No point is marked yet: choose two or three points" in info.value for info in app.info)
    assert not any(element.proto.id.endswith("learn_weights_chart_learned") for element in app.get("plotly_chart"))


def test_the_lesson_travels_in_the_link_and_a_bad_mark_is_dropped():
    app = open_learn()
    app.slider(key="learn_weights_w180").set_value(0.25).run()
    app.multiselect(key="learn_weights_marks").set_value(["30°"]).run()
    assert app.query_params["toy_w180"] == "0.25" and app.query_params["toy_marks"] == "30°"
    again = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    again.query_params = dict(app.query_params) | {"toy_marks": ["30°", "31°"]}
    again.switch_page(LEARN).run()
    assert not again.exception
    assert again.slider(key="learn_weights_w180").value == 0.25
    assert again.multiselect(key="learn_weights_marks").value == ["30°"]


# -- the learner at its edges, in the library -------------------------------------------------------
POINTS = lesson_weights.toy_points().tolist()


@pytest.mark.parametrize("marks, decided", [
    ([60.0], True),
    (POINTS, False),  # every point is like the query: they share no direction
    (POINTS[:-1], False),
    (POINTS[:3] + POINTS[4:], False),  # every point but the query's own (45°)
], ids=["one", "all", "all but one", "all but the query's"])
def test_the_learner_takes_one_mark_to_all_and_says_when_they_share_no_direction(marks, decided):
    learned = lesson_weights.learn_from_marks(45.0, marks, 10.0)
    weights = np.asarray(learned.weights_, dtype=np.float64)
    assert np.all(np.isfinite(weights)) and np.all(weights >= 0) and weights.sum() == pytest.approx(1.0)
    assert learned.decided_ is decided
    assert lesson_weights.nearest_points(learned, 45.0, 12)["near"].sum() == 12


def test_a_point_marked_twice_counts_once():
    once = lesson_weights.learn_from_marks(45.0, [30.0, 60.0], 10.0)
    again = lesson_weights.learn_from_marks(45.0, [30.0, 30.0, 390.0, 60.0, -300.0], 10.0)
    np.testing.assert_array_equal(again.weights_, once.weights_)
    assert lesson_weights.marked_points([60.0, 30.0, 60.0]) == [4, 2]


@pytest.mark.parametrize("query, marks, message", [
    (45.0, [], "no point is marked; mark two or three points of the circle as like the query"),
    (45.0, None, "the marks must be a list of angles in degrees, e.g. [30, 45]"),
    (45.0, "30", "the marks must be a list of angles in degrees"),
    (45.0, [31.0], "31° is not a point of the toy circle; mark points every 15°, from 0° to 345°"),
    (45.0, [float("nan")], "nan is not a point of the toy circle"),
    (45.0, ["north"], "'north' is not a point of the toy circle"),
    (45.0, [True], "True is not a point of the toy circle"),
    (float("inf"), [30.0], "query_angle=inf must be a finite number of degrees"),
])
def test_marks_the_learner_cannot_take_say_what_to_mark(query, marks, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        lesson_weights.learn_from_marks(query, marks, 10.0)
