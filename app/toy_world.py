"""The Learn page's toy world as one browser component, which computes and draws every figure of
the toy world (the anchors sized by tilted probability, the two neighbourhoods, kappa along the
circle, the divergence against cosine, the sphere and its maps, the tilt and who owns the query)
in the page, as the query, an anchor, s, p or the arc's width moves, with no request to the server.

A thin adapter: what the component receives and sends back is built and read by
:mod:`anchordiv.explorer.toy_world` (docs/design.md, "The toy world's protocol"); this module
mounts the component and, on a release, writes the reported state into the page's settings (the
query, the sets' texts, s, p, the width), so that the page's widgets and its link follow it. The
component's files are plain HTML, CSS and JavaScript in ``components/``, read once at import by
:mod:`anchordiv.explorer.components`.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from anchordiv.app.widget_state import replace_value
from anchordiv.explorer.components import component_text, module_text
from anchordiv.explorer.settings import SETTINGS, toy_set_key
from anchordiv.explorer.toy_world import CIRCLE, SPHERE, Bounds, ToyState, read_released, toy_payload

TOY_KEY = "toy_world"
TOY_WORLD = st.components.v2.component("anchordiv.toy_world", html=component_text("toy_world.html"),
                                       css=component_text("toy_world.css"), js=module_text("toy_world.js"),
                                       isolate_styles=False)
# Where the page keeps the server's figures of the toy world, with their formulas.
SERVER_FIGURES = "The same figures with their formulas, as the server draws them when you let go"
# The component's sliders and the page's settings they move.
SLIDERS = {"scale": "learn_scale", "p": "learn_p", "width": "learn_width"}


def slider_bounds() -> dict[str, Bounds]:
    """Each of the component's sliders' bounds, as the page's setting has them."""
    return {name: Bounds(SETTINGS[key].low, SETTINGS[key].high, SETTINGS[key].step) for name, key in SLIDERS.items()}


def take_released(world: str) -> None:
    """The component's release callback: the state it reports (read by
    :func:`~anchordiv.explorer.toy_world.read_released`) becomes the page's settings before the run
    it starts; a state the component could not have sent changes nothing."""
    sent = st.session_state.get(TOY_KEY)
    state = read_released(sent.get("released") if isinstance(sent, Mapping) else None, world, slider_bounds())
    if state is None:
        return
    sphere = state.world != CIRCLE
    if sphere:
        replace_value("learn_query_azimuth", int(state.query[0]))
        replace_value("learn_query_elevation", int(state.query[1]))
    else:
        replace_value("learn_query", int(state.query))
    for side, text in zip("ab", state.set_texts()):
        replace_value(toy_set_key(side, sphere), text)
    for name, key in SLIDERS.items():
        replace_value(key, getattr(state, name))


def toy_world(settings: Any, query: float | tuple[float, float], sets: tuple[Sequence, Sequence]) -> Any:
    """Mount the toy world at the page's ``settings`` (the Learn part's: world, anchor model,
    weighting, s, p, the arc's width), its ``query`` (an angle, or an ``(azimuth, elevation)``
    pair) and its ``sets`` as parsed (angles, or pairs); a release writes its state into the page's
    settings (:func:`take_released`) and reruns the page. Returns the collapsed expander the page
    draws the server's figures of the same world in, with their formulas."""
    world = SPHERE if settings.learn_world == SPHERE else CIRCLE
    state = ToyState(world, tuple(map(float, query)) if world == SPHERE else float(query),
                     *(tuple(tuple(map(float, angles)) if world == SPHERE else float(angles) for angles in group)
                       for group in sets),
                     float(settings.learn_scale), float(settings.learn_p), float(settings.learn_width))
    payload = toy_payload(state, settings.learn_kind, settings.learn_weighting, slider_bounds())
    TOY_WORLD(key=TOY_KEY, data=payload, on_released_change=lambda: take_released(world))
    return st.expander(SERVER_FIGURES)
