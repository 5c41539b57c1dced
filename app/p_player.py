"""The Explore page's p player: the ``p`` slider, Play and the anchor-divergence grid as one browser
component, which plays the query's whole p path (its exact top-``k`` at every slider position,
:meth:`~anchordiv.explorer.ExplorerGeometry.p_path`) with no request to the server per step.

A thin adapter: what the component receives and sends back is built and read by
:mod:`anchordiv.explorer.p_player` (docs/design.md §13, "The p player's protocol"); this module
mounts the component, gives each image an address among Streamlit's media files and hands the
read reply to the callbacks.

The component's HTML, CSS and JavaScript are plain files in ``components/`` beside this module,
shipped in the package and read once at import (no build step, nothing fetched) by
:mod:`anchordiv.explorer.components`, which the notebook widget (:mod:`anchordiv.widgets`) reads
them through too.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st
from streamlit import runtime

from anchordiv import explorer as ex
from anchordiv.app.cached import encoded_thumbnails, get_player_data
from anchordiv.app.widget_state import write_values
from anchordiv.explorer import links
from anchordiv.explorer.components import component_text, module_text
from anchordiv.explorer.p_player import PlayerMarks, PlayerReply, baseline_panel, player_payload, read_reply
from anchordiv.explorer.settings import SETTINGS
from anchordiv.slider import SliderPath

PLAYER_KEY = "p_player"
P_PLAYER = st.components.v2.component("anchordiv.p_player", html=component_text("p_player.html"),
                                      css=component_text("p_player.css"), js=module_text("p_player.js"),
                                      isolate_styles=False)


def take_released_p(reply: PlayerReply) -> None:
    """The component's release callback: the ``p`` it reports (read: a number in ``[0, 1]``)
    becomes the page's ``p`` before the run it starts; no number, no change."""
    if reply.p is not None:
        write_values({"p": reply.p})


def image_addresses(source: ex.GallerySource, ids: list[int]) -> list[str]:
    """Each image's address on this server: its PNG (encoded once per server,
    :func:`~anchordiv.app.cached.encoded_thumbnails`) among Streamlit's media files, which the
    browser fetches once per address."""
    manager = runtime.get_instance().media_file_mgr
    pngs = encoded_thumbnails(source)(ids)
    return [manager.add(png, "image/png", f"{PLAYER_KEY}.{item}") for item, png in zip(ids, pngs)]


def p_player(path: SliderPath, source: ex.GallerySource, query_labels: Any, *, key: str, title: str,
             step_notes: list[str], enabled: bool, p: float, baselines: dict[str, pd.DataFrame],
             marks: PlayerMarks, on_marks: Callable[[PlayerReply], None]) -> None:
    """Mount the player on ``path`` at the page's ``p`` (the browser keeps its own ``p`` afterwards,
    for as long as ``key`` names the same path), with ``baselines`` (title: neighbour table of
    similarities) drawn beside its grid and each image's "like the query" toggle showing ``marks``.
    A release reruns the fragment it is in; a toggle calls ``on_marks`` first with the reply, its
    marks read as ids of ``source``."""
    path_data = get_player_data(key, path, source, query_labels, title, tuple(step_notes), enabled)
    panels = [baseline_panel(name, table, source) for name, table in baselines.items()]
    payload = player_payload(path_data, p=p, address=lambda ids: image_addresses(source, ids), label=SETTINGS["p"].label,
                             help=SETTINGS["p"].help, baselines=panels, marks=marks, instance=PLAYER_KEY,
                             companion_params=(links.GALLERY_PARAM,))
    n_items = len(source)

    def reply() -> PlayerReply:
        return read_reply(st.session_state.get(PLAYER_KEY), n_items)

    P_PLAYER(key=PLAYER_KEY, data=payload.as_json(), on_p_change=lambda: take_released_p(reply()),
             on_marks_change=lambda: on_marks(reply()))
