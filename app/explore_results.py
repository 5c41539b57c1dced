"""The Explore page's results: the p player (the ``p`` slider, Play and the anchor-divergence grid,
:mod:`~anchordiv.app.p_player`) beside the baselines' grids (cosine, ITI), which do not move with
``p``; below them the neighbour table and its downloads, and "why this neighbour?".

A move of ``p`` costs the server nothing: the player plays the query's p path, computed once. A
release of ``p`` reruns the results fragment once (``explorer-bench --browser`` splits its CPU by
the stages of :mod:`~anchordiv.app.step_clock`). The neighbour table and "why this neighbour?" are
built only while their expanders are open, the downloads only when clicked."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from anchordiv import explorer as ex
from anchordiv.app import step_clock
from anchordiv.app.errors import attempt
from anchordiv.app.explore_details import explain_section
from anchordiv.app.explore_view import ExploreView, certificate_text, neighbours, p_path, path_key, step_certified
from anchordiv.app.learn_anchors import player_marks, rerun_after_marks, take_player_marks
from anchordiv.app.p_player import p_player
from anchordiv.app.url_state import part_settings, publish_link
from anchordiv.explorer.settings import VIEW
from anchordiv.explorer.sweep_files import MAX_SWEEP_K, sweep_gif, sweep_strip_png
from anchordiv.models import anchor_model_kind
from anchordiv.slider import SliderPath

BASELINE_TITLES = {"cosine": "Cosine similarity", "iti": "ITI (our reading: cosine of anchor profiles)"}


TABLE_LABEL, TABLE_KEY = "Neighbour table and downloads", "neighbour_table_open"


def results_section(view: ExploreView) -> None:
    """The neighbours' heading and legend, then :func:`results_fragment`."""
    st.subheader("Neighbours")
    st.caption(view.source.legend)
    results_fragment(view)


@st.fragment
def results_fragment(view: ExploreView) -> None:
    """The p player (with the baselines' grids beside its own, level with it) and the details below
    (the neighbour table, "why this neighbour?"), as one fragment. A move of p runs nothing here: the
    player plays the query's whole path in the browser. Its release reruns this fragment once,
    which puts the released p in the URL and redraws the open details at it."""
    with step_clock.timed_run("explorer"):
        p = part_settings(VIEW).p
        path = player_section(view, p)
        anchor_table = neighbours(view, p, path)
        publish_link(view.link_fields, view.source)
        downloads(view, {"anchor divergence": anchor_table, **view.baselines}, p, path)
        if view.source.capabilities.explain:
            explain_section(view, p, anchor_table)


def player_section(view: ExploreView, p: float) -> SliderPath:
    """The p player on the query's path, titled by its model, with the certificate's note per step
    where the source shows it and a note where p has no effect, and the baselines' grids beside it;
    the path it plays."""
    geometry, source = view.geometry, view.source
    path = p_path(view)
    if source.capabilities.certificate:
        notes = [certificate_text(view, step_certified(view, path, step)) for step in range(len(path))]
    elif not geometry.is_mixture:
        notes = [f"Only set {geometry.component_names[0]} has anchors, so p has no effect."] * len(path)
    else:
        notes = []
    title = f"Anchor divergence ({anchor_model_kind(geometry.spec.kind).short}, p = {{p}})"
    baselines = {BASELINE_TITLES[method]: table for method, table in view.baselines.items()}
    attempt(lambda: p_player(path, source, view.query_labels, key=path_key(view), title=title, step_notes=notes,
                             enabled=geometry.is_mixture, p=p, baselines=baselines, marks=player_marks(view),
                             on_marks=take_player_marks), "Cannot draw the p player", stop=True)
    rerun_after_marks()
    return path


def table_expander():
    """The expander of the neighbour table; opening or closing it reruns the results fragment."""
    return st.expander(TABLE_LABEL, key=TABLE_KEY, on_change="rerun")


def downloads(view: ExploreView, tables: dict[str, pd.DataFrame], p: float, path: SliderPath) -> None:
    """The neighbour table and its downloads (the files built when clicked, on a server thread), in
    an expander whose content is drawn only while open: the table, the grid at ``p`` and, from the
    query's p ``path``, the sweep as an animation and as a strip."""
    box = table_expander()
    if not box.open:
        return
    with box, step_clock.stage("captions and tables"):
        # One format per column, never scientific notation (divergences are >= 0, similarities in [-1, 1]).
        st.dataframe(ex.combined_table(tables), hide_index=True, column_config={
            name: st.column_config.NumberColumn(format="%.4f") for name in ("divergence", "similarity")})
    columns = box.columns(2)
    columns[0].download_button("Download neighbour table (CSV)",
                               lambda: ex.combined_table(tables).to_csv(index=False).encode(),
                               "neighbours.csv", "text/csv", key="download_csv")
    if view.source.capabilities.grid_png:
        title = f"Query: {view.query_text} · p = {p:.2f}"
        columns[1].download_button("Download neighbour grid (PNG)",
                                   lambda: ex.neighbour_grid_png(tables["anchor divergence"], view.source, title=title),
                                   "neighbours.png", "image/png", key="download_png")
        if view.geometry.is_mixture:
            sweep_downloads(box.columns(2), view, path)


def sweep_downloads(columns, view: ExploreView, path: SliderPath) -> None:
    """The p sweep as an animated GIF (p from 0 to 1 and back) and a strip PNG, one frame or row per
    ranking Play holds, from the path the player plays, with the player's top-k (at most
    :data:`~anchordiv.explorer.sweep_files.MAX_SWEEP_K`)."""
    source, k = view.source, min(MAX_SWEEP_K, view.k)
    title = f"Query: {view.query_text}"
    columns[0].download_button("Download the p sweep (animated GIF)",
                               lambda: sweep_gif(path, source.thumbnails, source.caption, k=k, title=title),
                               "p-sweep.gif", "image/gif", key="download_sweep_gif")
    columns[1].download_button("Download the p sweep as a strip (PNG)",
                               lambda: sweep_strip_png(path, source.thumbnails, source.caption, k=k, title=title),
                               "p-sweep.png", "image/png", key="download_sweep_png")
