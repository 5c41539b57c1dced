"""The Explore page's UMAP of the geometry: a fixed sample of the gallery projected at a p the user
pins (``umap_p``), so moving the slider never recomputes a projection; a cosine map beside it
where the source offers one. The query and its neighbours outside the sample are placed by UMAP's
own ``transform`` (:func:`anchordiv.explorer.map_placer`)."""
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


def projected(column, key: str, method: str, source: ex.GallerySource, geometry: ex.ExplorerGeometry, p: float,
              weighting: str, max_points: int):
    """``(ids, xy)`` of the map ``key`` names: read from the disk cache, or laid out under a progress
    bar that names each step (drawn only when there is work to show)."""
    slot, bar = column.empty(), []

    def progress(fraction: float, text: str) -> None:
        if not bar:
            bar.append(slot.progress(0.0))
        bar[0].progress(min(fraction, 1.0), text=text)

    try:
        return ex.geometry_projection(source, method, geometry, p, weighting, None, max_points, cache_key=key,
                                      progress=progress)
    finally:
        slot.empty()


def placed_on_map(key: str, method: str, view: ExploreView, ids, xy, p: float, neighbour_ids: list[int]):
    """:func:`anchordiv.explorer.with_query_and_neighbours` for the map ``key`` names, its
    :class:`~anchordiv.explorer.MapPlacer` built (under a spinner that says so) only when something
    lies outside the sample, and kept for the next runs."""
    def place(rows: torch.Tensor):
        return cached.get_map_placer(key, len(ids), view.source, ids, xy, method, view.geometry, p,
                                     view.weighting).place(rows)

    return ex.with_query_and_neighbours(view.source, ids, xy, view.query_id, neighbour_ids,
                                        torch.as_tensor(view.query), place)


def draw_umap(view: ExploreView) -> None:
    source, geometry = view.source, view.geometry
    # Two rows of two: four in a row left each label a few letters in a 1000 px window.
    points_col, colour_col = st.columns(2)
    cosine_col, p_col = st.columns(2)
    max_points = int(points_col.number_input("Points (fixed sample)", 10, 20_000, source.projection_rows,
                                             step=500, key="umap_points",
                                             help="UMAP of the anchor-divergence kNN graph of a fixed sample; "
                                                  "computed once per geometry and cached."))
    colours = source.colour_columns
    if st.session_state.get(UMAP_COLOUR_OF) != source.key:  # another gallery's column means nothing here
        st.session_state.pop("umap_colour", None)
        st.session_state[UMAP_COLOUR_OF] = source.key
    colour = colour_col.selectbox("Colour by", colours, key="umap_colour", index=colours.index(source.default_colour))
    with_cosine = (cosine_col.checkbox("Cosine projection beside it", key="umap_cosine")
                   if source.capabilities.cosine_projection else False)
    p = pinned_projection_p(p_col, geometry.is_mixture)
    projections = [("anchor", f"Anchor divergence at p = {p:.2f} ({view.weighting})",
                    ex.projection_key(view.geometry_key, round(p, 4), view.weighting))]
    if with_cosine:
        projections.append(("cosine", "Cosine", ex.projection_key(source.key, view.encoder.name)))
    neighbour_ids = neighbours(view, p).gallery_id.tolist()
    for column, (method, title, key) in zip(st.columns(len(projections)), projections):
        # A spinner (shown after half a second: a cached map draws without one) and, within it, the
        # progress bars of each step: the first map a server lays out spends seconds compiling UMAP.
        with column, st.spinner(f"Drawing the map: a new layout takes about "
                                f"{projection.layout_estimate(min(max_points, len(source))):.0f} s, then it is kept…",
                                show_time=True):
            ids, xy = attempt(lambda: projected(column, key, method, source, geometry, p, view.weighting, max_points),
                              "Cannot project the gallery") or (None, None)
            placed = None if ids is None else attempt(
                lambda: placed_on_map(key, method, view, ids, xy, p, neighbour_ids),
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
    projection_caption(sampled, outside, p)
