"""Learn: the anchor divergence on a toy world of directions you can see whole (2-D or 3-D), then on
the real gallery: which anchors make a neighbour close, and how p shares a tilt between A and B.

Every number drawn here comes from :mod:`anchordiv.lesson` and :mod:`anchordiv.explain`; the page only
turns widgets into their arguments and their results into pictures."""
from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st
import torch

from anchordiv import lesson
from anchordiv.app.errors import attempt
from anchordiv.app.learn_gallery import SET_COLOURS, gallery_section
from anchordiv.app.learn_weights import weights_lesson
from anchordiv.app.setting_widgets import setting_widget
from anchordiv.app.sidebar import sidebar_state
from anchordiv.app.toy_world import toy_world
from anchordiv.app.url_state import follow_link, link_notes, part_settings, publish_link, sidebar_fields
from anchordiv.app.widget_state import current_value, replace_value
from anchordiv.explorer import links
from anchordiv.explorer.settings import CIRCLE, LEARN, SETTINGS, toy_set_key
from anchordiv.explorer.sidebar_state import SidebarState
from anchordiv.models import anchor_model_kind


# -- the toy world's controls -----------------------------------------------------------------------
def toy_controls(sidebar: SidebarState) -> Any:
    """The toy world's controls, labelled "Toy", as the sidebar's anchor model and scale
    (``sidebar``) are the gallery section's, not the toy's; then the Learn page's settings, read
    once for this run (:func:`~anchordiv.app.url_state.part_settings`: the toy's, its anchors still
    as typed text)."""
    world, kind, weighting = st.columns([2, 2, 2])
    setting_widget(world, "learn_world")
    setting_widget(kind, "learn_kind")
    weighting.caption(lesson.TOY_WEIGHTING_HELP[setting_widget(weighting, "learn_weighting")])
    scale, p = st.columns(2)
    setting_widget(scale, "learn_scale")
    setting_widget(p, "learn_p")
    settings = part_settings(LEARN)  # the toy's widgets drawn, so checked
    st.caption(f"The toy world's settings: {anchor_model_kind(settings.learn_kind).short} anchor model, scale s = "
               f"{settings.learn_scale:g}, {settings.learn_weighting} weights, p = {settings.learn_p:.2f} (the "
               f"controls above). The sidebar's geometry (scale s = {sidebar.geometry.scale:g}) is for *On the real "
               "gallery* alone.")
    return settings


def add_query_to(set_key: str, text: str) -> None:
    """Append ``text`` (the query direction as typed) to an anchor set's text."""
    current = current_value(set_key, "")
    if not isinstance(current, str):  # a callback runs before the page: the text box's check names the value
        return
    current = current.strip()
    joined = f"{current}{'; ' if set_key.endswith('_3d') else ', '}{text}" if current else text
    if len(joined) <= SETTINGS[set_key].max_chars:  # past it the set is already over the toy world's limit
        replace_value(set_key, joined)


def anchor_inputs(sphere: bool, query_text: str) -> tuple[str, str]:
    """The two anchor sets' text inputs of the circle or the ``sphere`` (and buttons that add the
    query to each); the typed texts."""
    texts = []
    for column, side in zip(st.columns(2), "ab"):
        key = toy_set_key(side, sphere)
        texts.append(setting_widget(column, key))
        column.button(f"Add the query to {side.upper()}", key=f"learn_add_{side}{'_3d' if sphere else ''}",
                      on_click=add_query_to, args=(key, query_text))
    return texts[0], texts[1]


# -- pictures shared by both worlds -----------------------------------------------------------------
def tilt_section(toy: lesson.ToyGeometry, query: torch.Tensor) -> None:
    st.subheader("What the query looks like, in the anchors' words")
    table = toy.anchor_table(query)
    figure = px.bar(table, x="anchor", y="probability", color="set", color_discrete_map=SET_COLOURS,
                    title="Tilted distribution p(γ | x) over the anchors")
    st.plotly_chart(figure, key="learn_chart_tilt")
    st.markdown("The query **tilts** the anchor model toward the anchors it points at. The larger the scale *s*, "
                "the more the tilt piles onto the single best-matching anchor; a small *s* spreads it out.")
    st.latex(r"p(\gamma_i \mid x) = \frac{w_i\, e^{s\,\gamma_i\cdot x}}{\sum_j w_j\, e^{s\,\gamma_j\cdot x}}")
    if not toy.tilt(query).exact:
        st.caption("This model is not a list of anchors (it is smooth), so the bars show the softmax tilt over the "
                   "anchors as a readable stand-in; the curves are the model's own.")


def responsibility_section(toy: lesson.ToyGeometry, query: torch.Tensor, settings: Any) -> None:
    """The responsibilities of A and B for the query as p moves, under the toy's weighting and
    scale (``settings``), and the p at which they share it evenly."""
    st.subheader("Who owns the query: A or B?")
    if not toy.is_mixture:
        st.info("Set B is empty, so set A's model is the whole model and p changes nothing. Type some angles in B.")
        return
    curve = lesson.responsibility_curve(toy.model_at, {"query": query}, component_names=toy.component_names)
    figure = px.line(curve, x="p", y="responsibility", color="component", color_discrete_map=SET_COLOURS,
                     markers=True, title="Responsibilities of A and B for the query, as p moves")
    figure.add_vline(x=settings.learn_p, line_dash="dot", annotation_text=f"p = {settings.learn_p:.2f}")
    st.plotly_chart(figure, key="learn_chart_responsibility")
    weighting, even = settings.learn_weighting, lesson.even_share_p(toy.model_at, query)
    st.markdown("Tilting a mixture tilts each set and weighs the two by their **responsibilities**: how well each "
                "set explains the query (its κ), times its weight. Moving p hands the query from B (p = 0) to "
                f"A (p = 1). Under the toy's **{weighting}** weights at scale s = {settings.learn_scale:g}, A takes "
                f"half of this query's tilt at **p = {even:.2f}**. {lesson.TOY_SHARE_NOTES[weighting]} (The real "
                "gallery at the bottom weighs its sets as the Explore page does, calibrated by default: there p "
                "is how far the neighbours have moved, and its crossing may lie far from this one.)")
    st.latex(r"r_k(x) = \frac{w_k\, e^{\kappa_k(s x)}}{\sum_j w_j\, e^{\kappa_j(s x)}}")


# -- the circle -------------------------------------------------------------------------------------
def circle_world(settings: Any) -> None:
    query_angle = setting_widget(st, "learn_query")
    text_a, text_b = anchor_inputs(False, f"{query_angle:g}")
    angles = attempt(lambda: (lesson.parse_angles(text_a, "Set A"), lesson.parse_angles(text_b, "Set B", True)),
                     "Cannot read the anchors")
    if angles is None:
        return
    toy = attempt(lambda: lesson.toy_geometry(lesson.circle_directions(angles[0]), lesson.circle_directions(angles[1]),
                                              settings.learn_kind, settings.learn_scale, settings.learn_p,
                                              settings.learn_weighting), "Cannot fit the toy model")
    if toy is None:
        return
    query = lesson.circle_directions([query_angle])[0]
    profile = attempt(lambda: lesson.circle_profile(toy.model, float(query_angle)), "Cannot draw the circle")
    if profile is None:
        return
    with toy_world(settings, query_angle, angles):  # the figures in the page, then the server's, with formulas
        picture, shape = st.columns(2)
        with picture:
            circle_picture(toy, query, profile)
        with shape:
            kappa_picture(profile, angles, query_angle)
        divergence_picture(profile, angles, query_angle)
        tilt, owner = st.columns(2)
        with tilt:
            tilt_section(toy, query)
        with owner:
            responsibility_section(toy, query, settings)


def circle_picture(toy: lesson.ToyGeometry, query: torch.Tensor, profile: pd.DataFrame) -> None:
    st.subheader("The world and the query's neighbourhood")
    width = setting_widget(st, "learn_width")
    balls = lesson.equal_size_neighbourhoods(profile, float(width))
    anchors = toy.anchor_table(query)
    figure = go.Figure()
    figure.add_trace(go.Scatter(x=profile["x"], y=profile["y"], mode="lines", line_color="lightgrey",
                                name="directions", hoverinfo="skip"))
    # The two neighbourhoods are drawn just outside the circle, one ring each, so both stay visible.
    for column, radius, colour, name in (("near_by_cosine", 1.08, "grey", "cosine neighbourhood"),
                                         ("near_by_divergence", 1.16, "#2ca02c", "divergence neighbourhood")):
        near = balls[balls[column]]
        figure.add_trace(go.Scatter(x=radius * near["x"], y=radius * near["y"], mode="markers", name=name,
                                    marker=dict(color=colour, size=5), customdata=near["angle"],
                                    hovertemplate="%{customdata}°<extra>" + name + "</extra>"))
    for name, rows in anchors.groupby("set", sort=False):
        figure.add_trace(go.Scatter(x=rows["x"], y=rows["y"], mode="markers+text", name=f"set {name}",
                                    text=rows["anchor"], textposition="top center", customdata=rows["probability"],
                                    marker=dict(color=SET_COLOURS[name], size=8 + 40 * rows["probability"]),
                                    hovertemplate="%{text}: p = %{customdata:.3f}<extra></extra>"))
    figure.add_annotation(x=float(query[0]), y=float(query[1]), ax=0, ay=0, xref="x", yref="y", axref="x", ayref="y",
                          showarrow=True, arrowhead=3, arrowwidth=2, text="query x")
    figure.update_layout(title="Anchors and the query<br>(size: tilted probability)", height=460,
                         xaxis=dict(range=[-1.35, 1.35], visible=False),
                         yaxis=dict(range=[-1.35, 1.35], visible=False, scaleanchor="x"))
    st.plotly_chart(figure, key="learn_chart_circle")
    st.markdown("Grey: the directions closest to the query by **cosine**, an arc of the chosen width. Green: "
                "**as many** directions, those of smallest anchor divergence, the top-k a search would return. "
                "Near an anchor the green neighbourhood stretches (every direction there tilts to that anchor); "
                "between two anchors it shrinks, and may jump to directions far away that tilt the same way.")


def kappa_picture(profile: pd.DataFrame, angles: tuple[list[float], list[float]], query_angle: float) -> None:
    st.subheader("κ along the circle")
    figure = px.line(profile, x="angle", y="kappa", title="κ(s·u(θ)) for every direction θ",
                     labels={"angle": "direction θ (degrees)", "kappa": "κ"})
    mark_angles(figure, angles, query_angle)
    st.plotly_chart(figure, key="learn_chart_kappa")
    st.markdown("The cumulant generating function κ is the log of the anchors' average agreement with a direction: "
                "high where the direction points at anchors, low between them and away from them. Over the whole "
                "plane of η it is convex, and its gradient is the tilted mean of the anchors: the divergence below "
                "is built from κ and that gradient alone.")
    st.latex(r"\kappa(\eta) = \log \mathbb{E}_{\gamma\sim P}\!\left[e^{\eta\cdot\gamma}\right],\qquad "
             r"\eta = s\,u(\theta)")


def divergence_picture(profile: pd.DataFrame, angles: tuple[list[float], list[float]], query_angle: float) -> None:
    st.subheader("Anchor divergence against cosine")
    figure = go.Figure()
    figure.add_trace(go.Scatter(x=profile["angle"], y=profile["divergence"], name="anchor divergence D(x → u(θ))",
                                line_color="#2ca02c"))
    figure.add_trace(go.Scatter(x=profile["angle"], y=profile["cosine_distance"], name="cosine distance 1 − cos",
                                line=dict(color="grey", dash="dash"), yaxis="y2"))
    figure.update_layout(title="From the query to every direction θ", xaxis_title="direction θ (degrees)",
                         yaxis=dict(title="D (nats)"), legend=dict(orientation="h", y=-0.25),
                         yaxis2=dict(title="1 − cos", overlaying="y", side="right"))
    mark_angles(figure, angles, query_angle)
    st.plotly_chart(figure, key="learn_chart_divergence")
    st.markdown("Cosine only sees the angle to the query. The anchor divergence asks whether a direction tilts the "
                "anchors the way the query does: it stays flat while the same anchor keeps winning, and climbs where "
                "the winner changes, so directions between anchors are far apart and directions on one anchor close.")
    st.latex(r"D(x \to y) = \mathrm{KL}\big(p(\cdot\mid\eta_x)\,\|\,p(\cdot\mid\eta_y)\big) = "
             r"\kappa(\eta_y) - \kappa(\eta_x) - \nabla\kappa(\eta_x)\cdot(\eta_y - \eta_x)")


def mark_angles(figure: go.Figure, angles: tuple[list[float], list[float]], query_angle: float) -> None:
    """Vertical lines at the anchors (coloured by set) and at the query."""
    for name, set_angles in zip("AB", angles):
        for angle in set_angles:
            figure.add_vline(x=angle % 360.0, line_color=SET_COLOURS[name], line_width=1, opacity=0.5)
    figure.add_vline(x=query_angle, line_color="black", line_dash="dot", annotation_text="query")


# -- the sphere -------------------------------------------------------------------------------------
def sphere_world(settings: Any) -> None:
    azimuth_col, elevation_col = st.columns(2)
    azimuth = setting_widget(azimuth_col, "learn_query_azimuth")
    elevation = setting_widget(elevation_col, "learn_query_elevation")
    text_a, text_b = anchor_inputs(True, f"{azimuth:g} {elevation:g}")
    pairs = attempt(lambda: (lesson.parse_angle_pairs(text_a, "Set A"),
                             lesson.parse_angle_pairs(text_b, "Set B", allow_empty=True)), "Cannot read the anchors")
    if pairs is None:
        return
    directions = [lesson.sphere_directions([a for a, _ in group], [e for _, e in group]) for group in pairs]
    toy = attempt(lambda: lesson.toy_geometry(directions[0], directions[1], settings.learn_kind, settings.learn_scale,
                                              settings.learn_p, settings.learn_weighting), "Cannot fit the toy model")
    if toy is None:
        return
    query = lesson.sphere_directions([azimuth], [elevation])[0]
    profile = attempt(lambda: lesson.sphere_profile(toy.model, float(azimuth), float(elevation)),
                      "Cannot draw the sphere")
    if profile is None:
        return
    with toy_world(settings, (azimuth, elevation), pairs):
        st.subheader("Divergence from the query over the whole sphere")
        divergence_map, cosine_map = st.columns(2)
        with divergence_map:
            sphere_map(profile, "divergence", "Anchor divergence D(x → u)", pairs, (azimuth, elevation),
                       "learn_chart_sphere_divergence")
        with cosine_map:
            sphere_map(profile, "cosine_distance", "Cosine distance 1 − cos", pairs, (azimuth, elevation),
                       "learn_chart_sphere_cosine")
        st.markdown("Each map is the sphere unrolled (azimuth across, elevation up). Cosine grows alike in every "
                    "direction from the query. The divergence barely grows along directions in which the anchors do "
                    "not vary: put A's anchors on the equator and the query between them, and moving it straight up "
                    "changes nothing the anchors can see, so its neighbourhood stretches out of their plane.")
        st.latex(r"D(x \to y) = \kappa(\eta_y) - \kappa(\eta_x) - \nabla\kappa(\eta_x)\cdot(\eta_y - \eta_x),\qquad "
                 r"u(\varphi, e) = (\cos e\cos\varphi,\ \cos e\sin\varphi,\ \sin e)")
        tilt, owner = st.columns(2)
        with tilt:
            tilt_section(toy, query)
        with owner:
            responsibility_section(toy, query, settings)


def sphere_map(profile: pd.DataFrame, value: str, title: str, pairs: tuple, query: tuple[float, float],
               key: str) -> None:
    grid = profile.pivot(index="elevation", columns="azimuth", values=value)
    figure = go.Figure(go.Heatmap(x=grid.columns, y=grid.index, z=grid.to_numpy(), colorscale="Viridis",
                                  colorbar=dict(title=value.replace("_", " "))))
    for name, group in zip("AB", pairs):
        figure.add_trace(go.Scatter(x=[(a + 180.0) % 360.0 - 180.0 for a, _ in group], y=[e for _, e in group],
                                    mode="markers", name=f"set {name}",
                                    marker=dict(color=SET_COLOURS[name], size=11, line=dict(color="white", width=1))))
    figure.add_trace(go.Scatter(x=[query[0]], y=[query[1]], mode="markers", name="query",
                                marker=dict(symbol="x", color="white", size=12, line=dict(color="black", width=1))))
    figure.update_layout(title=title, xaxis_title="azimuth φ (degrees)", yaxis_title="elevation (degrees)",
                         legend=dict(orientation="h", y=-0.25), height=420)
    st.plotly_chart(figure, key=key)


def main(sidebar: SidebarState) -> None:
    lesson_fields = links.lesson_fields()
    fields = sidebar_fields() + lesson_fields
    linked = follow_link(lesson_fields, LEARN)
    link_notes()
    st.title("Learn: the anchor divergence, step by step")
    share_slot = st.container()  # the link, once the gallery part has joined it
    st.markdown("An image embedding is a direction. The anchors (text embeddings of phrases) are directions too. "
                "Here they live on a circle or a sphere, so you can see everything: move the query, add, remove "
                "or move anchors, change the scale s and the weight p, and watch the neighbourhood change.\n\n"
                "The page has three parts, each with its own settings: the toy world (its controls just below), "
                "the lesson on weights (its own sliders) and, at the bottom, the real gallery, the only part that "
                "uses the sidebar's geometry and the Explore page's query, anchors and weights.")
    st.header("A toy world you can see whole")
    settings = toy_controls(sidebar)
    (circle_world if settings.learn_world == CIRCLE else sphere_world)(settings)
    weights_lesson(linked)
    publish_link(fields)
    st.divider()
    gallery_section(sidebar, fields, share_slot)


main(sidebar_state())
