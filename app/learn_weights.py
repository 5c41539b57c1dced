"""The Learn page's lesson on anchor weights (issue 25): on the circle, moving weight between a few
anchors reshapes the query's neighbourhood; then the learner (:class:`anchordiv.FeedbackAnchors`)
chooses the weights of a vocabulary of directions from points a person marks as like the query.
Every number comes from :mod:`anchordiv.lesson_weights`; this module turns widgets into its
arguments and its results into pictures."""
from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from anchordiv import lesson, lesson_weights
from anchordiv.app.errors import ERROR_CHARS, attempt
from anchordiv.app.session_keys import WEIGHTS_LEARNED, WEIGHTS_REQUEST
from anchordiv.app.setting_widgets import setting_widget
from anchordiv.app.widget_checks import checked_choices
from anchordiv.app.widget_state import list_kept_as_list
from anchordiv.explorer.literal import markdown_literal
from anchordiv.explorer.settings import POINT_LABELS, SETTINGS, hand_weight_key

NEAR, FAR, MARKED, ANCHOR = "#2ca02c", "lightgrey", "#ff7f0e", "#1f77b4"
MARKS = SETTINGS["learn_weights_marks"]


def weights_lesson(linked: Mapping[str, object] = MappingProxyType({})) -> None:
    """The whole lesson: shared controls, then weights by hand, then what the learner does.
    ``linked``: what the page's link gave this run (the marks it gave are named as the link's)."""
    st.divider()
    st.header("Weights: how moving weight between anchors reshapes a neighbourhood")
    st.markdown("An empirical anchor model gives each anchor a weight *wᵢ*. Here the gallery is "
                f"{len(POINT_LABELS)} points of the circle, one every {lesson_weights.POINT_STEP:g}°, and the "
                "query's neighbourhood is its *k* points of smallest anchor divergence.")
    st.latex(r"p_w(\gamma_i \mid x) = \frac{w_i\, e^{s\,\gamma_i\cdot x}}{\sum_j w_j\, e^{s\,\gamma_j\cdot x}},"
             r"\qquad D_w(x \to y) = \mathrm{KL}\big(p_w(\cdot\mid x)\,\|\,p_w(\cdot\mid y)\big)")
    query_col, k_col, scale_col = st.columns(3)
    query = float(setting_widget(query_col, "learn_weights_query"))
    k = int(setting_widget(k_col, "learn_weights_k"))
    scale = float(setting_widget(scale_col, "learn_weights_scale"))
    hand_section(query, k, scale)
    learner_section(query, k, scale, MARKS.key in linked)


def hand_section(query: float, k: int, scale: float) -> None:
    st.subheader("Move the weights yourself")
    columns = st.columns(len(lesson_weights.HAND_ANCHORS))
    weights = [setting_widget(column, hand_weight_key(angle))
               for column, angle in zip(columns, lesson_weights.HAND_ANCHORS)]
    st.caption(f"Weighting: the four sliders, normalised to sum to 1. Scale: s = {scale:g} (the slider above).")
    if not any(weights):  # said here in the page's words, before the library would refuse
        st.info("All the weights are 0, so no anchor counts: give at least one anchor a weight above 0 with its "
                "slider *Weight of the anchor at …°* above.")
        return
    model = attempt(lambda: lesson_weights.weighted_model(lesson_weights.HAND_ANCHORS, weights, scale),
                    "Cannot weigh the anchors")
    if model is None:
        return
    table = lesson_weights.weight_table(lesson_weights.HAND_ANCHORS, weights)
    points = lesson_weights.nearest_points(model, query, k)
    picture, profile = st.columns(2)
    with picture:
        st.plotly_chart(circle_figure(table, points, query), key="learn_weights_chart_circle")
        st.markdown("The circle: each anchor drawn as large as its weight, the query's arrow, and its "
                    f"{k} nearest points in green.")
    with profile:
        curve = lesson.circle_profile(model, query)
        st.plotly_chart(profile_figure([("D_w", curve, points)], query), key="learn_weights_chart_profile")
        st.markdown("The divergence from the query to every direction; the points on the curve are the gallery, "
                    "green the nearest. Give an anchor more weight and the directions that tilt to it draw together.")


def circle_figure(table: pd.DataFrame, points: pd.DataFrame, query: float) -> go.Figure:
    """Anchors sized by weight, the toy points (the nearest in green) and the query's arrow."""
    anchors = lesson.circle_directions(table["angle"].to_numpy()).numpy()
    arrow = lesson.circle_directions([query])[0].numpy()
    figure = go.Figure()
    for near, colour, name in ((False, FAR, "other points"), (True, NEAR, "nearest points")):
        rows = points[points["near"] == near]
        figure.add_trace(go.Scatter(x=rows["x"], y=rows["y"], mode="markers", name=name, customdata=rows["angle"],
                                    marker=dict(color=colour, size=9), hovertemplate="%{customdata}°<extra></extra>"))
    figure.add_trace(go.Scatter(x=1.18 * anchors[:, 0], y=1.18 * anchors[:, 1], mode="markers+text", name="anchors",
                                text=[f"{label} w={weight:.2f}" for label, weight in zip(table["anchor"], table["weight"])],
                                textposition="top center", marker=dict(color=ANCHOR, size=6 + 50 * table["weight"])))
    figure.add_annotation(x=float(arrow[0]), y=float(arrow[1]), ax=0, ay=0, xref="x", yref="y", axref="x", ayref="y",
                          showarrow=True, arrowhead=3, arrowwidth=2, text="query")
    figure.update_layout(title="Anchors (size = weight) and the query's nearest points", height=440,
                         xaxis=dict(range=[-1.45, 1.45], visible=False),
                         yaxis=dict(range=[-1.45, 1.45], visible=False, scaleanchor="x"))
    return figure


def profile_figure(curves: list[tuple[str, pd.DataFrame, pd.DataFrame]], query: float,
                   marked: list[float] = ()) -> go.Figure:
    """For each ``(name, circle profile, nearest points)``: the divergence along the circle and the
    points, the nearest ones named ``"<name>: nearest points"``; the marked points, if any."""
    figure = go.Figure()
    dashes = ("solid", "dash")
    for (name, curve, points), dash in zip(curves, dashes):
        figure.add_trace(go.Scatter(x=curve["angle"], y=curve["divergence"], name=name, mode="lines",
                                    line=dict(color=NEAR if dash == "solid" else "grey", dash=dash)))
        near = points[points["near"]]
        figure.add_trace(go.Scatter(x=near["angle"], y=near["divergence"], mode="markers",
                                    name=f"{name}: nearest points",
                                    marker=dict(color=NEAR if dash == "solid" else "grey", size=10)))
    if marked:
        rows = curves[0][2][curves[0][2]["angle"].isin(marked)]
        figure.add_trace(go.Scatter(x=rows["angle"], y=rows["divergence"], mode="markers", name="marked points",
                                    marker=dict(color=MARKED, size=14, symbol="star")))
    figure.add_vline(x=query % 360.0, line_color="black", line_dash="dot", annotation_text="query")
    figure.update_layout(title="D(query → direction θ) around the circle", xaxis_title="direction θ (degrees)",
                         yaxis_title="D (nats)", legend=dict(orientation="h", y=-0.3), height=440)
    return figure


def learner_section(query: float, k: int, scale: float, marks_linked: bool = False) -> None:
    st.subheader("What the learner does")
    vocabulary = lesson_weights.vocabulary_angles()
    st.markdown(f"Mark two or three points as **like the query** and press *Learn*: anchordiv's learner "
                f"(`FeedbackAnchors`, seed {lesson_weights.SEED}) chooses the weights of {len(vocabulary)} anchors, "
                f"one every {lesson_weights.VOCABULARY_STEP:g}°, by what the query and every marked point share: "
                "each anchor's score on them, standardised over the circle's points, and its soft minimum over "
                "them. The weight goes to the anchors they all hold, not to those only the query holds.")
    state = st.session_state
    list_kept_as_list(MARKS.key, MARKS.label)
    keep_known_marks(marks_linked)
    labels = setting_widget(st, MARKS.key)
    marks = [POINT_LABELS[label] for label in labels]
    st.button("Learn the weights", key="learn_weights_learn", on_click=_remember, args=(query, marks, scale))
    st.caption(f"Weighting: learned from the marks, against uniform weights 1/{len(vocabulary)}. "
               f"Scale: s = {scale:g} (the slider above), for both.")
    request = state.get(WEIGHTS_REQUEST)
    if request is None:
        return
    if not request[1]:  # said here in the page's words, before the learner would refuse
        st.info("No point is marked yet: choose two or three points in *Points like the query* above, "
                "then press *Learn the weights*.")
        return
    if state.get(WEIGHTS_LEARNED, (None, None))[0] != request:
        learned = attempt(lambda: lesson_weights.learn_from_marks(*request), "Cannot learn the weights")
        if learned is None:
            return
        state[WEIGHTS_LEARNED] = (request, learned)
    learned = state[WEIGHTS_LEARNED][1]
    if request != (query, marks, scale):
        st.info("The query, the marks or the scale changed since the weights were learned: press Learn again.")
    show_learned(learned, request, k)


def keep_known_marks(linked: bool) -> list[str]:
    """The marks (points of the lesson, each once: :func:`~anchordiv.app.widget_checks.checked_choices`);
    what else the marks held is named, as the link's (``linked``: the page's link gave them this
    run) or as sent to the menu *Points like the query*."""
    where = f"The link's marks ({MARKS.param})" if linked else f"The menu “{MARKS.label}”"
    marks, repeated = checked_choices(
        MARKS.key, list(POINT_LABELS), len(POINT_LABELS), where, "the points of this lesson",
        f"Its points are {next(iter(POINT_LABELS))} to {list(POINT_LABELS)[-1]}: mark them below.", st)
    if repeated:
        st.warning(markdown_literal(f"{where} held a point more than once; it counts once.", ERROR_CHARS))
    return marks


def _remember(query: float, marks: list[float], scale: float) -> None:
    st.session_state[WEIGHTS_REQUEST] = (query, marks, scale)


def show_learned(learned, request: tuple, k: int) -> None:
    """The learned weights' bar chart, and the learned neighbourhood against the uniform one."""
    query, marks, scale = request
    if not learned.decided_:  # the Explore page offers no weights then; the lesson shows why
        these = "This mark shares" if len(marks) == 1 else f"These {len(marks)} marks share"
        st.info(f"{these} no one direction with the query (too few, at odds or spread round the circle): "
                "the learner would not offer these weights on the Explore page. They are shown here to see why: "
                "spread, not peaked. For weights that peak, mark two or three neighbouring points near the query "
                "and press *Learn the weights* again.")
    vocabulary = lesson_weights.vocabulary_angles()
    table = lesson_weights.weight_table(vocabulary, learned.weights_)
    chart, compare = st.columns(2)
    with chart:
        figure = go.Figure(go.Bar(x=table["anchor"], y=table["weight"], marker_color=ANCHOR, name="learned weight"))
        figure.update_layout(title="Learned weights of the vocabulary's anchors", yaxis_title="weight w", height=440)
        st.plotly_chart(figure, key="learn_weights_chart_learned")
        heavy = table.sort_values("weight", ascending=False, kind="stable").head(3)["anchor"]
        st.markdown(f"The learned weights: most sit on {', '.join(heavy)}. They need not sit near the marked points: "
                    "the learner weighs the anchors from which the query and the marked points look alike and "
                    "the unmarked points look different.")
    uniform = lesson_weights.weighted_model(vocabulary, None, scale)
    curves = [(name, lesson.circle_profile(model, query), lesson_weights.nearest_points(model, query, k))
              for name, model in (("learned", learned), ("uniform", uniform))]
    with compare:
        st.plotly_chart(profile_figure(curves, query, marks), key="learn_weights_chart_compare")
        near = {name: ", ".join(f"{angle:g}°" for angle in points.loc[points["near"], "angle"])
                for name, _, points in curves}
        st.markdown(f"The divergence under the learned weights (green) and uniform ones (grey dashes), with the "
                    f"marked points as stars: the {k} nearest points are {near['learned']} learned against "
                    f"{near['uniform']} uniform.")
