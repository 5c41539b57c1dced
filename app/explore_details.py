"""The Explore page's sections for the sources that offer them: "why this neighbour?" (the two
tilted anchor distributions, and the vocabulary's terms that pull the pair together or push it
apart), the p sweep and the calibration curve behind calibrated ``p``."""
from __future__ import annotations

import pandas as pd
import streamlit as st
import torch

from anchordiv import explain
from anchordiv import explorer as ex
from anchordiv.app.cached import get_p_sweep
from anchordiv.app.explore_view import ExploreView
from anchordiv.app.find_anchors import pair_terms_section
from anchordiv.app.query_inputs import caption_of
from anchordiv.app.widget_checks import checked_rank
from anchordiv.explorer.literal import markdown_literal
from anchordiv.explorer.settings import SETTINGS
from anchordiv.grids import readable_value


EXPLAIN_LABEL = "Why this neighbour? Its tilted anchor distribution beside the query's, and the terms between them"
EXPLAIN_KEY = "explain_open"


def explain_expander():
    """The expander of "why this neighbour?"; opening or closing it reruns the fragment it is in."""
    return st.expander(EXPLAIN_LABEL, key=EXPLAIN_KEY, on_change="rerun")


def explain_section(view: ExploreView, p: float, table: pd.DataFrame) -> None:
    """Built only while its expander is open. Part of the results fragment, not a fragment nested
    in it: Streamlit drops the unsent elements of a fragment whose next run has started, but not
    those of a fragment nested in it, whose places then point past the end of the page's tree (the
    browser's "Bad delta path index" error, which blanks the page) when two runs of the results
    fragment are queued behind a full run, as two releases of p on a busy server."""
    box = explain_expander()
    if box.open:
        with box:
            explain_neighbour(view, p, table)


def explain_neighbour(view: ExploreView, p: float, table: pd.DataFrame) -> None:
    """The chosen neighbour's and the query's tilted distributions, the divergence, and the
    vocabulary's pull and push terms."""
    source, geometry = view.source, view.geometry
    rank_setting = SETTINGS["explain_rank"]
    checked_rank(rank_setting.key, len(table), rank_setting.label, st)
    rank = st.selectbox(rank_setting.label, table["rank"].tolist(), key=rank_setting.key,
                        format_func=lambda r: f"{r}. {caption_of(source)(table.gallery_id.iloc[r - 1])}")
    neighbour = int(table.gallery_id.iloc[rank - 1])
    query_tilt, neighbour_tilt, divergence, shown = explain.explain_pair(
        geometry.model_at(p, view.weighting), geometry.component_anchors, geometry.component_texts,
        geometry.component_names, torch.as_tensor(view.query), source.rows([neighbour])[0],
        reverse=geometry.spec.reverse)
    # The neighbour and the divergence on a row of their own, above the two tables: a narrow middle
    # column between the tables cut the value short in a window 1000 px wide.
    image_col, value_col, note_col = st.columns([1, 3, 3], vertical_alignment="center")
    image_col.image(source.thumbnails([neighbour])[0], width=96)
    value_col.metric("Anchor divergence", readable_value(divergence, divergence=True),
                     help="The model's own divergence D(x → y) of the query and this neighbour.")
    if query_tilt.exact:
        note_col.caption("Exact tilted distributions p(anchor | x) ∝ w · exp(s γ·x); their KL equals the divergence.")
    else:
        value_col.metric("KL of the shown tilts", readable_value(shown, divergence=True))
        note_col.caption("This model is not supported on the anchors: the tables show the empirical tilt over the "
                         "anchors in use (a stand-in); the divergence beside it is the model's own.")
    left, right = st.columns(2)
    left.markdown("**Query's tilted anchor distribution**")
    # Static tables: eight rows need no scrolling or sorting, and they draw faster on every move of p.
    left.table(tilt_table(query_tilt))
    right.markdown(f"**Neighbour {rank}'s tilted anchor distribution**")
    right.table(tilt_table(neighbour_tilt))
    pair_terms_section(view, neighbour, rank)


def tilt_table(tilt: explain.TiltedDistribution) -> pd.DataFrame:
    """The eight most probable anchors, by anchor (as text: a static table draws Markdown),
    probabilities to 4 decimals (as shown)."""
    top = tilt.top(8)
    return top.assign(anchor=top["anchor"].map(markdown_literal)).set_index("anchor").round({"probability": 4})


def sweep_section(view: ExploreView) -> None:
    """Agreement with the query's object and style across p (outside the results fragment: it does
    not depend on where p is), in an expander drawn only while open: its charts, drawn, would cost
    the browser time on every move of p (docs/benchmarks.md)."""
    box = st.expander("p sweep: agreement with the query's object and style as p moves, and how calibrated p is "
                      "made", key="sweep_open", on_change="rerun")
    if box.open:
        with box:
            draw_sweep(view)


def draw_sweep(view: ExploreView) -> None:
    if not view.geometry.is_mixture or view.query_labels is None:
        st.caption("Needs both anchor sets and a query from the gallery (whose labels are known).")
        return
    sweep = get_p_sweep(view.geometry_key, view.geometry, view.query, view.k, view.source, view.query_labels,
                        view.query_id, view.weighting)
    long = sweep.rename(columns={"object": "same object", "style": "same style"}).melt(
        id_vars="p", var_name="shared with the query", value_name="fraction")
    # A Vega-Lite spec rather than st.line_chart: the same picture without building an Altair chart on
    # every rerun, and a fixed 0-1 axis (no "infinite extent" when a curve is flat).
    st.vega_lite_chart(long, {
        "mark": {"type": "line", "point": True}, "height": 240,
        "encoding": {"x": {"field": "p", "type": "quantitative", "title": "p (weight of A)"},
                     "y": {"field": "fraction", "type": "quantitative", "title": "agreement",
                           "scale": {"domain": [0, 1]}},
                     "color": {"field": "shared with the query", "type": "nominal"}}}, width="stretch")
    st.caption(f"Agreement: the fraction of the top-{view.k} that shares the query's object or style "
               f"({view.weighting} weights).")
    calibration_section(view)


def calibration_section(view: ExploreView) -> None:
    """The calibration curve behind the calibrated weights: how far the gallery's neighbourhoods have
    moved from B's to A's at each log-odds, measured without labels (docs/design.md §3)."""
    frame = ex.calibration_frame(view.geometry)
    if frame is None:
        return
    st.markdown("**How calibrated p is made: the calibration curve**")
    st.vega_lite_chart(frame, {
        "mark": {"type": "line", "point": True}, "height": 240,
        "encoding": {"x": {"field": "log-odds", "type": "quantitative", "title": "log(w_A / w_B)"},
                     "y": {"field": "moved", "type": "quantitative", "title": "share moved, B → A",
                           "scale": {"domain": [0, 1]}},
                     "color": {"field": "curve", "type": "nominal"}}}, width="stretch", key="calibration_chart")
    st.caption("On a fixed sample of gallery images, each side counts the neighbours that have left B's "
               "neighbourhood in that set's own divergence (A's side: closer to A's; B's side: farther from "
               "B's). p is the slower side: calibrated p = 0.5 uses the weights where it reaches one half. "
               "No labels are used.")
