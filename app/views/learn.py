"""Learn: the anchor divergence on a toy world of directions you can see whole (2-D or 3-D), then on
the real gallery: which anchors make a neighbour close, and how p shares a tilt between A and B.

The toy world is computed and drawn in the browser (:mod:`anchordiv.app.toy_world`, the library's
numbers: tests/test_toy_world_math.py): its query, anchors, s, p and arc move there, with no run,
and the page keeps them when they are let go. The server reads the typed anchors, hands the
component the page's settings and says, beside it, what each figure shows and its formula; it
computes only the real gallery's part (:mod:`anchordiv.app.learn_gallery`, from
:mod:`anchordiv.explain`)."""
from __future__ import annotations

from typing import Any

import streamlit as st

from anchordiv import lesson
from anchordiv.app.errors import attempt
from anchordiv.app.learn_gallery import gallery_section
from anchordiv.app.learn_weights import weights_lesson
from anchordiv.app.setting_widgets import setting_widget
from anchordiv.app.sidebar import sidebar_state
from anchordiv.app.toy_world import toy_world
from anchordiv.app.url_state import follow_link, link_notes, part_settings, publish_link, sidebar_fields
from anchordiv.app.widget_state import current_value, replace_value
from anchordiv.explorer import links
from anchordiv.explorer.settings import CIRCLE, LEARN, SETTINGS, VIEW, toy_set_key
from anchordiv.explorer.sidebar_state import SidebarState
from anchordiv.models import anchor_model_kind


# -- the toy world's controls -----------------------------------------------------------------------
def toy_controls(sidebar: SidebarState) -> Any:
    """The toy world's menus, labelled "Toy", as the sidebar's anchor model and scale (``sidebar``)
    are the gallery section's, not the toy's; then the Learn page's settings, read once for this run
    (:func:`~anchordiv.app.url_state.part_settings`: the toy's, its anchors still as typed text).
    The query, s, p and the arc are the component's own sliders."""
    world, kind, weighting = st.columns([2, 2, 2])
    setting_widget(world, "learn_world")
    setting_widget(kind, "learn_kind")
    weighting.caption(lesson.TOY_WEIGHTING_HELP[setting_widget(weighting, "learn_weighting")])
    settings = part_settings(LEARN)  # the toy's menus drawn, so checked; its sliders' values read as released
    st.caption(f"The toy world's settings: {anchor_model_kind(settings.learn_kind).short} anchor model, scale s = "
               f"{settings.learn_scale:g}, {settings.learn_weighting} weights, p = {settings.learn_p:.2f} (the "
               "menus above, the sliders in the world below). The sidebar's geometry (scale s = "
               f"{sidebar.geometry.scale:g}) is for *On the real gallery* alone.")
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
    query to each); the typed texts. A release of the component writes them before they are drawn."""
    texts = []
    for column, side in zip(st.columns(2), "ab"):
        key = toy_set_key(side, sphere)
        texts.append(setting_widget(column, key))
        column.button(f"Add the query to {side.upper()}", key=f"learn_add_{side}{'_3d' if sphere else ''}",
                      on_click=add_query_to, args=(key, query_text))
    return texts[0], texts[1]


# -- what the figures show, with their formulas -----------------------------------------------------
def explained(title: str, text: str, formula: str) -> None:
    st.subheader(title)
    st.markdown(text)
    st.latex(formula)


def tilt_and_share_text(settings: Any) -> None:
    """The tilt's and the responsibilities' meaning and formulas, under the toy's weighting and
    scale (``settings``)."""
    tilt, owner = st.columns(2)
    with tilt:
        explained("What the query looks like, in the anchors' words",
                  "The bars are the **tilted distribution**: the query tilts the anchor model toward the anchors it "
                  "points at. The larger the scale *s*, the more the tilt piles onto the single best-matching "
                  "anchor; a small *s* spreads it out. On the circle each anchor is drawn as large as its share.",
                  r"p(\gamma_i \mid x) = \frac{w_i\, e^{s\,\gamma_i\cdot x}}{\sum_j w_j\, e^{s\,\gamma_j\cdot x}}")
    with owner:
        weighting = settings.learn_weighting
        explained("Who owns the query: A or B?",
                  "Tilting a mixture tilts each set and weighs the two by their **responsibilities**: how well each "
                  "set explains the query (its κ), times its weight. Moving p hands the query from B (p = 0) to A "
                  f"(p = 1); the curves are A's and B's shares as p moves, under the toy's **{weighting}** weights "
                  f"at scale s = {settings.learn_scale:g}, and the world says at which p A takes half of its query. "
                  f"{lesson.TOY_SHARE_NOTES[weighting]} (The real gallery at the bottom weighs its sets as the "
                  "Explore page does, calibrated by default: there p is how far the neighbours have moved, and its "
                  "crossing may lie far from this one.)",
                  r"r_k(x) = \frac{w_k\, e^{\kappa_k(s x)}}{\sum_j w_j\, e^{\kappa_j(s x)}}")


# The anchor divergence D(x -> y) as a Bregman divergence of kappa (both worlds' formula).
BREGMAN = r"\kappa(\eta_y) - \kappa(\eta_x) - \nabla\kappa(\eta_x)\cdot(\eta_y - \eta_x)"


def circle_text() -> None:
    """What the circle's figures show: the neighbourhoods, κ and the divergence against cosine."""
    world, shape = st.columns(2)
    with world:
        st.subheader("The world and the query's neighbourhood")
        st.markdown("Grey: the directions closest to the query by **cosine**, an arc of the chosen width. Green: "
                    "**as many** directions, those of smallest anchor divergence, the top-k a search would return. "
                    "Near an anchor the green neighbourhood stretches (every direction there tilts to that anchor); "
                    "between two anchors it shrinks, and may jump to directions far away that tilt the same way.")
    with shape:
        explained("κ along the circle",
                  "The cumulant generating function κ is the log of the anchors' average agreement with a direction: "
                  "high where the direction points at anchors, low between them and away from them. Over the whole "
                  "plane of η it is convex, and its gradient is the tilted mean of the anchors: the divergence is "
                  "built from κ and that gradient alone.",
                  r"\kappa(\eta) = \log \mathbb{E}_{\gamma\sim P}\!\left[e^{\eta\cdot\gamma}\right],\qquad "
                  r"\eta = s\,u(\theta)")
    explained("Anchor divergence against cosine",
              "Cosine only sees the angle to the query. The anchor divergence asks whether a direction tilts the "
              "anchors the way the query does: it stays flat while the same anchor keeps winning, and climbs where "
              "the winner changes, so directions between anchors are far apart and directions on one anchor close.",
              r"D(x \to y) = \mathrm{KL}\big(p(\cdot\mid\eta_x)\,\|\,p(\cdot\mid\eta_y)\big) = " + BREGMAN)


def sphere_text() -> None:
    """What the sphere's maps show."""
    explained("Divergence from the query over the whole sphere",
              "Each map is the sphere unrolled (azimuth across, elevation up). Cosine grows alike in every direction "
              "from the query. The divergence barely grows along directions in which the anchors do not vary: put "
              "A's anchors on the equator and the query between them, and moving it straight up changes nothing the "
              "anchors can see, so its neighbourhood stretches out of their plane.",
              r"D(x \to y) = " + BREGMAN + r",\qquad u(\varphi, e) = (\cos e\cos\varphi,\ \cos e\sin\varphi,\ \sin e)")


# -- the two worlds ---------------------------------------------------------------------------------
def circle_world(settings: Any) -> None:
    text_a, text_b = anchor_inputs(False, f"{settings.learn_query:g}")
    angles = attempt(lambda: (lesson.parse_angles(text_a, "Set A"), lesson.parse_angles(text_b, "Set B", True)),
                     "Cannot read the anchors")
    if angles is None:
        return
    toy_world(settings, angles)
    circle_text()
    tilt_and_share_text(settings)


def sphere_world(settings: Any) -> None:
    text_a, text_b = anchor_inputs(True, f"{settings.learn_query_azimuth:g} {settings.learn_query_elevation:g}")
    pairs = attempt(lambda: (lesson.parse_angle_pairs(text_a, "Set A"),
                             lesson.parse_angle_pairs(text_b, "Set B", allow_empty=True)), "Cannot read the anchors")
    if pairs is None:
        return
    toy_world(settings, pairs)
    sphere_text()
    tilt_and_share_text(settings)


def main(sidebar: SidebarState) -> None:
    lesson_fields = links.lesson_fields()
    fields = sidebar_fields() + lesson_fields
    linked = follow_link(lesson_fields, LEARN)
    link_notes()
    st.title("Learn: the anchor divergence, step by step")
    share_slot = st.container()  # the link, once the gallery part has joined it
    st.markdown("An image embedding is a direction. The anchors (text embeddings of phrases) are directions too. "
                "Here they live on a circle or a sphere, so you can see everything: drag the query and the anchors, "
                "click to add an anchor and twice to remove one, turn the sphere, move the scale s and the weight "
                "p, and watch every figure follow as you move.\n\n"
                "The page has three parts, each with its own settings: the toy world (its menus, anchor boxes "
                "and sliders just below), "
                "the lesson on weights (its own sliders) and, at the bottom, the real gallery, the only part that "
                "uses the sidebar's geometry and the Explore page's query, anchors and weights.")
    st.header("A toy world you can see whole")
    settings = toy_controls(sidebar)
    (circle_world if settings.learn_world == CIRCLE else sphere_world)(settings)
    weights_lesson(linked)
    publish_link(fields, later=(VIEW,))  # the gallery part writes the view's parameters
    st.divider()
    gallery_section(sidebar, fields, share_slot)


main(sidebar_state())
