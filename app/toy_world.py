"""The Learn page's toy world as one browser component, which computes and draws every figure of
the toy world (the anchors sized by tilted probability, the two neighbourhoods, kappa along the
circle, the divergence against cosine, the sphere and its maps, the tilt and who owns the query)
in the page, as the query, an anchor, s, p or the arc's width moves, with no request to the server.
Its sliders (the query's angle, s, p, the arc's width) are the page's only controls of those
settings: the page draws no second one.

A thin adapter: what the component receives and sends back is built and read by
:mod:`anchordiv.explorer.toy_world` (docs/design.md, "The toy world's protocol"); this module
mounts the component and, on a release, writes the reported state into the page's settings (the
query, the sets' texts, s, p, the width), so that the typed anchor boxes and the page's link follow
it, and a link opened starts the component where it says. The component's files are plain HTML,
CSS and JavaScript in ``components/``, read once at import by :mod:`anchordiv.explorer.components`.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from anchordiv.app.widget_state import replace_value
from anchordiv.explorer import links
from anchordiv.explorer.components import component_text, module_text
from anchordiv.explorer.settings import SETTINGS, toy_set_key
from anchordiv.explorer.toy_world import (CIRCLE, SLIDER_SETTINGS, SPHERE, ToyState, read_released, slider_bounds,
                                          toy_payload)

TOY_KEY = "toy_world"
TOY_WORLD = st.components.v2.component("anchordiv.toy_world", html=component_text("toy_world.html"),
                                       css=component_text("toy_world.css"), js=module_text("toy_world.js"),
                                       isolate_styles=False)


def write_setting(key: str, value: Any) -> None:
    """Setting ``key`` holds ``value``, typed as its row types it (a whole number of degrees)."""
    replace_value(key, SETTINGS[key].read(value))


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
        write_setting("learn_query_azimuth", state.query[0])
        write_setting("learn_query_elevation", state.query[1])
    else:
        write_setting("learn_query", state.query)
    for side, text in zip("ab", state.set_texts()):
        replace_value(toy_set_key(side, sphere), text)
    for name in ("scale", "p", "width"):
        write_setting(SLIDER_SETTINGS[name], getattr(state, name))


def toy_world(settings: Any, sets: tuple[Sequence, Sequence]) -> None:
    """Mount the toy world at the page's ``settings`` (the Learn part's: world, anchor model,
    weighting, the query, s, p, the arc's width) and its ``sets`` as parsed (angles, or pairs); a
    release writes its state into the page's settings (:func:`take_released`) and reruns the page."""
    world = SPHERE if settings.learn_world == SPHERE else CIRCLE
    query = ((float(settings.learn_query_azimuth), float(settings.learn_query_elevation)) if world == SPHERE
             else float(settings.learn_query))
    state = ToyState(world, query,
                     *(tuple(tuple(map(float, angles)) if world == SPHERE else float(angles) for angles in group)
                       for group in sets),
                     float(settings.learn_scale), float(settings.learn_p), float(settings.learn_width))
    payload = toy_payload(state, settings.learn_kind, settings.learn_weighting, slider_bounds(),
                          companion_params=(links.GALLERY_PARAM,))
    TOY_WORLD(key=TOY_KEY, data=payload, on_released_change=lambda: take_released(world))
