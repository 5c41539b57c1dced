"""The Explore page's p player: the ``p`` slider, Play and the anchor-divergence grid as one browser
component, which plays the query's whole p path (its exact top-``k`` at every slider position,
:meth:`~anchordiv.explorer.ExplorerGeometry.p_path`) with no request to the server per step.

The component's HTML, CSS and JavaScript are plain files in ``components/`` beside this module,
shipped in the package and read once at import (no build step, nothing fetched). The server sends
the path and the captions as data (:func:`~anchordiv.explorer.p_player.player_data`) and each image
as an address of Streamlit's media files, which the browser fetches once. On release the
component reports ``p``; :func:`take_released_p` makes it the page's ``p`` before the run it starts.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st
from streamlit import runtime

from anchordiv import explorer as ex
from anchordiv.app.cached import encoded_thumbnails, get_player_data
from anchordiv.slider import SliderPath

COMPONENT_DIR = Path(__file__).resolve().parent / "components"
P_LABEL = "p: weight of A against B"
P_HELP = ("p = 1: only set A's anchors, p = 0: only set B's. Moves the anchor-divergence neighbours only: cosine "
          "and ITI do not depend on the anchor weights. Arrow keys step p, Home and End go to the ends, Space plays.")
PLAYER_KEY = "p_player"


def _asset(name: str) -> str:
    return (COMPONENT_DIR / name).read_text(encoding="utf-8")


P_PLAYER = st.components.v2.component("anchordiv.p_player", html=_asset("p_player.html"), css=_asset("p_player.css"),
                                      js=_asset("p_player.js"), isolate_styles=False)


def player_report(name: str) -> Any:
    """What the component last reported as ``name`` (``"p"``, ``"marks"``), as sent; ``None`` when
    it reported none, or sent something other than a mapping of reports (a client may send anything)."""
    reports = st.session_state.get(PLAYER_KEY)
    return reports.get(name) if isinstance(reports, Mapping) else None


def take_released_p() -> None:
    """The component's release callback: the ``p`` it reports becomes the page's ``p`` (a number
    in ``[0, 1]``; anything else a client might send is ignored)."""
    reported = player_report("p")
    if isinstance(reported, (int, float)) and not isinstance(reported, bool) and math.isfinite(reported):
        st.session_state["p"] = min(1.0, max(0.0, float(reported)))


def image_addresses(source: ex.GallerySource, ids: list[int]) -> list[str]:
    """Each image's address on this server: its PNG (encoded once per server,
    :func:`~anchordiv.app.cached.encoded_thumbnails`) among Streamlit's media files, which the
    browser fetches once per address."""
    manager = runtime.get_instance().media_file_mgr
    pngs = encoded_thumbnails(source)(ids)
    return [manager.add(png, "image/png", f"{PLAYER_KEY}.{item}") for item, png in zip(ids, pngs)]


def p_player(path: SliderPath, source: ex.GallerySource, query_labels: Any, *, key: str, title: str,
             step_notes: list[str], enabled: bool, p: float, baselines: dict[str, pd.DataFrame],
             marks: dict[str, Any], on_marks: Any) -> None:
    """Mount the player on ``path`` at the page's ``p`` (the browser keeps its own ``p`` afterwards,
    for as long as ``key`` names the same path), with ``baselines`` (title: neighbour table of
    similarities) drawn beside its grid and each image's "like the query" toggle showing ``marks``
    (``like``: gallery ids; ``enabled``: whether more may be marked). A release reruns the fragment
    it is in; a toggle calls ``on_marks`` first (it reads the reported list from the state)."""
    shared = get_player_data(key, path, source, query_labels, title, tuple(step_notes), enabled)
    addresses = image_addresses(source, [item["id"] for item in shared["items"]])
    data = {**shared, "items": [{**item, "src": src} for item, src in zip(shared["items"], addresses)],
            "p_now": float(path.p[path.step_of(p)]), "label": P_LABEL, "help": P_HELP,
            "baselines": [baseline_panel(name, table, source) for name, table in baselines.items()],
            "marks": marks}
    P_PLAYER(key=PLAYER_KEY, data=data, on_p_change=take_released_p, on_marks_change=on_marks)


def baseline_panel(title: str, table: pd.DataFrame, source: ex.GallerySource) -> dict[str, Any]:
    """A baseline's grid as the player draws it: its title, agreement line and images, each with its
    caption and marks (:func:`~anchordiv.explorer.grid_tiles`) and address."""
    tiles = ex.grid_tiles(table, source, "similarity")
    tiles = [{**tile, "src": src} for tile, src in zip(tiles, image_addresses(source, [tile["id"] for tile in tiles]))]
    return {"title": title, "agreement": ex.agreement_text(table), "tiles": tiles}
