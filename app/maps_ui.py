"""Drawing a map of the gallery: a projection frame as a scatter whose neighbours stand out and whose
query, labelled, is drawn above them (a click makes a point the query), the p it is pinned at, and
what its caption says."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from anchordiv.app.url_state import part_settings
from anchordiv.app.widget_state import current_value, write_values
from anchordiv.explorer.literal import plotly_literal
from anchordiv.explorer.settings import GALLERY_QUERY, VIEW


def use_projection_pick(chart_key: str) -> None:
    """on_select callback of a projection chart: the clicked image becomes the query (as the client
    sent its id: the query's one check reads it, and names any value that is not an image of this
    gallery, on the run this starts). It runs before the page is drawn, so it may still set the
    query-mode radio."""
    clicked = clicked_id(st.session_state.get(chart_key))
    if clicked is not None and clicked != -1:  # -1: a query that is no gallery image
        write_values({"query_id": clicked, "query_mode": GALLERY_QUERY})


def clicked_id(event: Any) -> Any:
    """The gallery id a chart's selection event gives its first point (its ``customdata``), as
    sent; ``None`` when it selects no point, or is not shaped as a selection (a client may send
    anything)."""
    try:
        return event["selection"]["points"][0]["customdata"][0]
    except (KeyError, IndexError, TypeError):
        return None


def project_at_current_p() -> None:
    write_values({"umap_p": part_settings(VIEW).p})


def pinned_projection_p(column, is_mixture: bool) -> float:
    """The "Project at the current p" button in ``column``, and the p a projection is drawn at (pinned
    by that button, so moving the slider never recomputes a projection). UMAP's kernels are compiled
    by the first projection a server draws, not in the background at start-up: compiling holds
    Python's lock for seconds, which every session's moves of p would wait on."""
    column.button("Project at the current p", key="umap_use_p", on_click=project_at_current_p, disabled=not is_mixture)
    if current_value("umap_p") is None:
        project_at_current_p()
    return float(current_value("umap_p"))


def projection_caption(sampled: int, placed: int, p: float) -> None:
    """Says at which p the neighbours are marked, and how the query and neighbours outside the
    sample of ``sampled`` points came onto the map (``placed`` of them)."""
    st.caption(f"Neighbours marked at p = {p:.2f}; moving p does not re-project (press “Project at the current p”)."
               + (f" {placed} of the query and its neighbours were not among the {sampled:,} sampled points: UMAP's "
                  "own transform placed each on the fixed layout, from its nearest sampled images under the same "
                  "geometry." if placed else ""))


def with_query_point(frame: pd.DataFrame, query_xy: np.ndarray | None, colour: str, name: str,
                     description: str) -> pd.DataFrame:
    """``frame`` with a point for a query that is not a gallery image (an upload, a text) at
    ``query_xy``, coloured as "your query" and named by its ``description`` (e.g. "upload cat.png")."""
    if query_xy is None:
        return frame
    point = {"x": float(query_xy[0]), "y": float(query_xy[1]), "role": "query", "gallery_id": -1,
             colour: "your query", name: description}
    return pd.concat([frame, pd.DataFrame([point])], ignore_index=True)


def is_text(values: pd.Series) -> bool:
    """Whether ``values`` hold text: object columns, and pandas' string columns (what pandas 3 makes
    of text by default)."""
    return pd.api.types.is_object_dtype(values) or pd.api.types.is_string_dtype(values)


def plotly_text(frame: pd.DataFrame, *columns: str) -> tuple[pd.DataFrame, ...]:
    """``frame`` with ``columns`` (their names and their text values) as :func:`plotly_literal`, and the new names."""
    renamed = {column: plotly_literal(column) for column in columns}
    frame = frame.assign(**{column: frame[column].map(lambda value: value if pd.isna(value) else plotly_literal(value))
                            for column in dict.fromkeys(columns) if is_text(frame[column])})
    return (frame.rename(columns=renamed), *(renamed[column] for column in columns))  # one per column asked


QUERY_MARKER = {"symbol": "star", "size": 20, "color": "#111111", "line": {"width": 1.5, "color": "#ffffff"}}


def projection_chart(column, frame: pd.DataFrame, colour: str, name: str, title: str, chart_key: str) -> None:
    """A projection frame (``x``, ``y``, ``role``, ``gallery_id``, ``colour`` and ``name`` columns) as a
    scatter whose neighbours stand out and whose query is a labelled star drawn last, so above
    every other point; clicking a point makes it the query. Names, labels and their column names
    come from files: Plotly gets them as text."""
    frame, colour, name = plotly_text(frame, colour, name)
    query, others = frame[frame.role == "query"], frame[frame.role != "query"]
    figure = px.scatter(others, x="x", y="y", color=colour, symbol="role", custom_data=["gallery_id"],
                        hover_data={name: True, "x": False, "y": False},
                        symbol_map={"gallery": "circle", "neighbour": "diamond"}, title=title, height=520)
    figure.update_traces(marker={"size": 5, "opacity": 0.7})
    figure.for_each_trace(lambda trace: trace.update(marker={"size": 12, "opacity": 1.0, "line": {"width": 1}})
                          if trace.name.endswith(", neighbour") else None)
    labels = [f"query: {value}" for value in query[name]]
    # Plotly Express draws many points with WebGL, whose canvas lies over every SVG trace: the query
    # is drawn in the same layer as the others (last, so on top), its label as an annotation, which
    # lies over both.
    scatter = go.Scattergl if any(trace.type == "scattergl" for trace in figure.data) else go.Scatter
    figure.add_trace(scatter(x=query.x, y=query.y, mode="markers", name="query", marker=QUERY_MARKER,
                             customdata=query[["gallery_id"]].to_numpy(), hovertext=labels, hoverinfo="text"))
    for x, y, label in zip(query.x, query.y, labels):
        figure.add_annotation(x=x, y=y, text=label, showarrow=True, arrowhead=0, ax=0, ay=-30,
                              bgcolor="rgba(255, 255, 255, 0.9)", bordercolor="#111111",
                              font={"size": 13, "color": "#111111"})
    column.plotly_chart(figure, key=chart_key, on_select=lambda: use_projection_pick(chart_key),
                        selection_mode="points")
