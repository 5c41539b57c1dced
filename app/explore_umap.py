"""The Explore page's UMAP of the geometry: a fixed sample of the gallery projected at a p the user
pins (``umap_p``), so moving the slider never recomputes a projection; a cosine map beside it
where the source offers one. The query and its neighbours outside the sample are placed by UMAP's
own ``transform`` (:func:`anchordiv.explorer.map_placer`). A sample of up to
:data:`~anchordiv.explorer.maps.MAX_MAP_POINTS` may be asked for; a new map estimated to take longer
than :data:`~anchordiv.explorer.maps.ASK_FIRST_SECONDS` shows its estimate and waits for a click, and every step of a layout
(its kNN graph, UMAP's compile, its epochs) reports on a progress bar."""
from __future__ import annotations

import streamlit as st
import torch

from anchordiv import explorer as ex
from anchordiv import projection
from anchordiv.app import cached
from anchordiv.app.errors import attempt
from anchordiv.app.explore_view import ExploreView, neighbours
from anchordiv.app.maps_ui import pinned_projection_p, projection_caption, projection_chart, with_query_point
from anchordiv.app.session_keys import UMAP_COLOUR_OF
from anchordiv.app.setting_widgets import setting_widget
from anchordiv.app.widget_state import replace_value
from anchordiv.explorer.maps import ASK_FIRST_SECONDS, map_status


@st.fragment
def umap_section(view: ExploreView) -> None:
    """A fragment: its controls rerun only this. In an expander drawn only while open (and then
    with its map: opening it is asking for the map): its controls, drawn, would cost the browser
    time on every move of p (docs/benchmarks.md)."""
    box = st.expander("UMAP of the geometry: the gallery laid out by its anchor-divergence neighbours",
                      key="umap_open", on_change="rerun")
    if box.open:
        with box:
            draw_umap(view)


def progress_bar(column):
    """``(slot, progress)``: a progress callback drawing a bar in an empty ``slot`` of ``column``
    from its first report (none for work that reports nothing); ``slot.empty()`` clears it."""
    slot, bar = column.empty(), []

    def progress(fraction: float, text: str) -> None:
        if not bar:
            bar.append(slot.progress(0.0))
        bar[0].progress(min(max(fraction, 0.0), 1.0), text=text)

    return slot, progress


def projected(column, key: str, method: str, source: ex.GallerySource, geometry: ex.ExplorerGeometry, p: float,
              weighting: str, max_points: int):
    """``(ids, xy)`` of the map ``key`` names: read from the disk cache, or laid out under a progress
    bar that names each step (drawn only when there is work to show)."""
    slot, progress = progress_bar(column)
    try:
        return ex.geometry_projection(source, method, geometry, p, weighting, None, max_points, cache_key=key,
                                      progress=progress)
    finally:
        slot.empty()


def asked_for(column, key: str, method: str, points: int, n_items: int) -> bool:
    """Whether the map ``key`` names may be drawn now: it is cached or being made, or quick enough,
    or its button was pressed; else its estimate is shown with that button, for the visitor to ask
    for it knowing what it costs."""
    status = map_status(n_items, method, points, cache_key=key)
    estimate = projection.projection_estimate(min(points, n_items))
    if status != "new" or estimate <= ASK_FIRST_SECONDS:
        return True
    rows = min(points, n_items)
    column.info(f"A new map of {rows:,} points takes about {estimate:.0f} s here: each point's nearest images "
                "under this geometry, then UMAP's layout"
                + ("" if projection.is_compiled() else ", after compiling UMAP's kernels (once per server)")
                + ". It is then kept, and drawn in a moment next time.")
    return column.button(f"Lay out {rows:,} points (about {estimate:.0f} s)", key=f"umap_lay_out_{method}")


def placed_on_map(column, key: str, method: str, view: ExploreView, ids, xy, p: float, neighbour_ids: list[int]):
    """:func:`anchordiv.explorer.with_query_and_neighbours` for the map ``key`` names, its
    :class:`~anchordiv.explorer.MapPlacer` built (under a spinner that says so; its graph read back
    from the disk cache) only when something lies outside the sample, and kept for the next runs.
    Where this server has not compiled UMAP's kernels yet, that is done first under a progress bar
    in ``column``."""
    def place(rows: torch.Tensor):
        if not projection.is_compiled():  # a map read from the disk cache: placing compiles UMAP's kernels
            slot, progress = progress_bar(column)
            try:
                projection.warm_up(progress)
            finally:
                slot.empty()
        return cached.get_map_placer(key, len(ids), view.source, ids, xy, method, view.geometry, p,
                                     view.weighting).place(rows)

    return ex.with_query_and_neighbours(view.source, ids, xy, view.query_id, neighbour_ids,
                                        torch.as_tensor(view.query), place)


def draw_umap(view: ExploreView) -> None:
    source, geometry = view.source, view.geometry
    # Two rows of two: four in a row left each label a few letters in a 1000 px window.
    points_col, colour_col = st.columns(2)
    cosine_col, p_col = st.columns(2)
    max_points = int(setting_widget(points_col, "umap_points", value=source.projection_rows))
    colours = source.colour_columns
    if st.session_state.get(UMAP_COLOUR_OF) != source.key:  # another gallery's column means nothing here
        replace_value("umap_colour", source.default_colour)
        st.session_state[UMAP_COLOUR_OF] = source.key
    colour = setting_widget(colour_col, "umap_colour", options=colours)
    with_cosine = setting_widget(cosine_col, "umap_cosine") if source.capabilities.cosine_projection else False
    p = pinned_projection_p(p_col, geometry.is_mixture)
    projections = [("anchor", f"Anchor divergence at p = {p:.2f} ({view.weighting})",
                    ex.projection_key(view.geometry_key, round(p, 4), view.weighting))]
    if with_cosine:
        projections.append(("cosine", "Cosine", ex.projection_key(source.key, view.encoder.name)))
    neighbour_ids = neighbours(view, p).gallery_id.tolist()
    drawn = None
    for column, (method, title, key) in zip(st.columns(len(projections)), projections):
        if not asked_for(column, key, method, max_points, len(source)):
            continue
        # A spinner (shown after half a second: a cached map draws without one) and, within it, the
        # progress bars of each step: the first map a server lays out spends seconds compiling UMAP.
        with column, st.spinner(f"Drawing the map: a new layout takes about "
                                f"{projection.projection_estimate(min(max_points, len(source))):.0f} s, "
                                "then it is kept…", show_time=True):
            ids, xy = attempt(lambda: projected(column, key, method, source, geometry, p, view.weighting, max_points),
                              "Cannot project the gallery") or (None, None)
            placed = None if ids is None else attempt(
                lambda: placed_on_map(column, key, method, view, ids, xy, p, neighbour_ids),
                "Cannot place the query on the map")
        if placed is None:
            return
        sampled = len(ids)
        if sampled < len(source):
            title += f", {sampled:,} of {len(source):,} items"
        ids, xy, query_xy, outside = placed
        frame = with_query_point(source.projection_frame(ids, xy, view.query_id, neighbour_ids, colour), query_xy,
                                 colour, source.name_column, view.query_text)
        projection_chart(column, frame, colour, source.name_column, title, f"umap_chart_{method}")
        drawn = (sampled, outside)
    if drawn is not None:
        projection_caption(*drawn, p)
