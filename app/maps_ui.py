"""Drawing a map of the gallery: a projection frame as a scatter whose query and neighbours stand
out (a click makes a point the query), the p it is pinned at, and what its caption says."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.express as px
import streamlit as st

from anchordiv.explorer.literal import plotly_literal
from anchordiv.explorer.maps import PLACING_NEIGHBOURS
from anchordiv.explorer.page_state import GALLERY_QUERY


def use_projection_pick(chart_key: str) -> None:
    """on_select callback of a projection chart: the clicked image becomes the query. It runs before
    the page is drawn, so it may still set the query-mode radio."""
    points = st.session_state[chart_key].selection.points
    if points and int(points[0]["customdata"][0]) >= 0:  # -1: a query that is no gallery image
        st.session_state.query_id = int(points[0]["customdata"][0])
        st.session_state.query_mode = GALLERY_QUERY


def project_at_current_p() -> None:
    st.session_state.umap_p = st.session_state.get("p", 0.5)


def pinned_projection_p(column, show: bool, is_mixture: bool) -> float | None:
    """The "Project at the current p" button in ``column``, and the p a projection is drawn at (pinned
    by that button, so moving the slider never recomputes a projection); ``None`` while ``show`` is off.
    UMAP's kernels are compiled by the first projection a server draws, not in the background at
    start-up: compiling holds Python's lock for seconds, which every session's moves of p would wait on."""
    column.button("Project at the current p", key="umap_use_p", on_click=project_at_current_p,
                  disabled=not (show and is_mixture))
    if not show:
        return None
    if "umap_p" not in st.session_state:
        project_at_current_p()
    return float(st.session_state.umap_p)


def projection_caption(sampled: int, placed: int, p: float) -> None:
    """Says at which p the neighbours are marked, and how the query and neighbours outside the
    sample of ``sampled`` points came onto the map (``placed`` of them)."""
    st.caption(f"Neighbours marked at p = {p:.2f}; moving p does not re-project (press “Project at the current p”)."
               + (f" {placed} of the query and its neighbours were not among the {sampled:,} sampled points: each is "
                  f"placed at the mean position of its {PLACING_NEIGHBOURS} nearest sampled images, where UMAP "
                  "would start it." if placed else ""))


def with_query_point(frame: pd.DataFrame, query_xy: np.ndarray | None, colour: str, name: str) -> pd.DataFrame:
    """``frame`` with a point for a query that is not a gallery image (an upload, a text) at
    ``query_xy``, named "your query"."""
    if query_xy is None:
        return frame
    point = {"x": float(query_xy[0]), "y": float(query_xy[1]), "role": "query", "gallery_id": -1,
             colour: "your query", name: "your query"}
    return pd.concat([frame, pd.DataFrame([point])], ignore_index=True)


def plotly_text(frame: pd.DataFrame, *columns: str) -> tuple[pd.DataFrame, ...]:
    """``frame`` with ``columns`` (their names and their text values) as :func:`plotly_literal`, and the new names."""
    renamed = {column: plotly_literal(column) for column in columns}
    frame = frame.assign(**{column: frame[column].map(lambda value: value if pd.isna(value) else plotly_literal(value))
                            for column in dict.fromkeys(columns) if frame[column].dtype == object})
    return (frame.rename(columns=renamed), *renamed.values())


def projection_chart(column, frame: pd.DataFrame, colour: str, name: str, title: str, chart_key: str) -> None:
    """A projection frame (``x``, ``y``, ``role``, ``gallery_id``, ``colour`` and ``name`` columns) as a
    scatter whose query and neighbours stand out; clicking a point makes it the query. Names,
    labels and their column names come from files: Plotly gets them as text."""
    frame, colour, name = plotly_text(frame, colour, name)
    figure = px.scatter(frame, x="x", y="y", color=colour, symbol="role", custom_data=["gallery_id"],
                        hover_data={name: True, "x": False, "y": False},
                        symbol_map={"gallery": "circle", "neighbour": "diamond", "query": "star"},
                        title=title, height=520)
    figure.update_traces(marker={"size": 5, "opacity": 0.7})
    figure.for_each_trace(lambda trace: trace.update(marker={"size": 14, "opacity": 1.0, "line": {"width": 1}})
                          if "query" in trace.name or "neighbour" in trace.name else None)
    column.plotly_chart(figure, key=chart_key, on_select=lambda: use_projection_pick(chart_key),
                        selection_mode="points")
