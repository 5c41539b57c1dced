"""The Explore page's results: the ``p`` slider above the anchor-divergence grid, a fragment (so
that moving ``p`` reruns only it), beside the baselines' grids (cosine, ITI), which do not move with
``p`` and, while the details are closed, are drawn on full runs only; below them the neighbour
table and its downloads, and "why this neighbour?".

A move of ``p`` does only what it changes (``explorer-bench --browser`` splits its CPU time by the
stages of :mod:`~anchordiv.app.step_clock`): the slider's ``O(candidates)`` re-rank, one grid's
captions, and images sent as the bytes encoded on their first showing. The neighbour table and "why
this neighbour?" are built only while their expanders are open (and then follow ``p``), the downloads
only when clicked."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st

from anchordiv import explorer as ex
from anchordiv.app import step_clock
from anchordiv.app.cached import encoded_thumbnails
from anchordiv.app.explore_details import EXPLAIN_KEY, explain_expander, explain_section
from anchordiv.app.explore_view import ExploreView, certificate_text, neighbours
from anchordiv.app.url_state import publish_link, share_box
from anchordiv.explorer.literal import markdown_literal
from anchordiv.explorer.page_state import SETTINGS
from anchordiv.models import anchor_model_kind

GRID_WIDTH = 96
P_LABEL = "p: weight of A against B"
P_HELP = ("p = 1: only set A's anchors, p = 0: only set B's. Moves the anchor-divergence neighbours only: cosine "
          "and ITI do not depend on the anchor weights.")
# Room above a baseline's grid for the p slider above the anchor-divergence grid (its label and
# track, and the gap after it), so that the grids' rows start level.
SLIDER_ROOM_PX = 68
BASELINE_TITLES = {"cosine": "Cosine similarity", "iti": "ITI (our reading: cosine of anchor profiles)"}


def draw_grid(column, title: str, table: pd.DataFrame, source: ex.GallerySource, value_name: str) -> None:
    """A neighbour table as captioned images, read (and encoded) for its rows only, once per server."""
    with step_clock.stage("captions and tables"):
        heading = f"**{title}**  \n{ex.agreement_text(table)}"
        captions = [grid_caption_markdown(text) for text in ex.grid_captions(table, source, value_name)]
    column.markdown(heading)
    with step_clock.stage("image encoding"):
        images = encoded_thumbnails(source)(table["gallery_id"].tolist())
        column.image(images, caption=captions, width=GRID_WIDTH, output_format="PNG")


def grid_caption_markdown(text: str) -> str:
    """A grid caption (:func:`~anchordiv.explorer.grid_captions`) as Markdown: each of its lines
    literal, with a hard line break between them (a plain newline would join them)."""
    return "  \n".join(markdown_literal(line) for line in text.split("\n"))


TABLE_LABEL, TABLE_KEY = "Neighbour table and downloads", "neighbour_table_open"
DETAILS_DRAWN_IN_FRAGMENT = "_details_in_p_fragment"


def results_section(view: ExploreView) -> None:
    """The neighbours' heading, legend and share box; the p slider and the anchor-divergence grid
    beside the baselines' grids; the details (the neighbour table, "why this neighbour?") below.

    Every move of p is a fragment run: a full run would write the page's kept values back
    (:func:`~anchordiv.app.url_state.keep_values`) while a person is still pressing the slider's
    arrow keys. While the details are closed, the fragment is the slider and its grid alone
    (:func:`p_section`), so a move of p re-sends one grid; the baselines, which p does not move, and
    the closed expanders are drawn on full runs only. While one is open, the fragment is the whole
    section (:func:`results_fragment`), so that the open detail follows p. Opening an expander is a
    full run, which switches to the latter; closing the last one is a fragment run, after which the
    next run of the fragment asks for a full run that switches back."""
    source = view.source
    st.subheader("Neighbours")
    st.caption(source.legend)
    # Outside the fragment: its link is written on the full run that opens it, with p as it is then.
    share_box(view.link_fields, source)
    opened = st.session_state[DETAILS_DRAWN_IN_FRAGMENT] = details_open(source)
    if opened:
        results_fragment(view)
        return
    draw_grids(view, p_section)
    table_expander()
    if source.capabilities.explain:
        explain_expander()


def draw_grids(view: ExploreView, p_part: Callable[[ExploreView], Any]) -> Any:
    """``p_part`` (the p slider and the anchor-divergence grid) beside the baselines' grids, level
    with it; what ``p_part`` returns."""
    columns = st.columns(1 + len(view.baselines))
    with columns[0]:
        drawn = p_part(view)
    for column, (method, table) in zip(columns[1:], view.baselines.items()):
        column.space(SLIDER_ROOM_PX)
        draw_grid(column, BASELINE_TITLES[method], table, view.source, "similarity")
    return drawn


def details_open(source: ex.GallerySource) -> bool:
    """Whether the neighbour table or "why this neighbour?" (where the source offers it) is open."""
    state = st.session_state
    return bool(state.get(TABLE_KEY) or (source.capabilities.explain and state.get(EXPLAIN_KEY)))


def table_expander():
    """The expander of the neighbour table; opening or closing it reruns the fragment it is in, or
    the page."""
    return st.expander(TABLE_LABEL, key=TABLE_KEY, on_change="rerun")


@st.fragment
def p_section(view: ExploreView) -> None:
    """:func:`draw_p_part` as a fragment, so that moving p reruns only it (while the details are closed)."""
    with step_clock.timed_run("explorer"):
        draw_p_part(view)


@st.fragment
def results_fragment(view: ExploreView) -> None:
    """The grids and the open details as one fragment, so that moving p reruns them all."""
    source = view.source
    if st.session_state.get(DETAILS_DRAWN_IN_FRAGMENT) != details_open(source):
        st.rerun(scope="app")  # the last detail was closed in a fragment run: the section changes shape
    with step_clock.timed_run("explorer"):
        p, anchor_table = draw_grids(view, draw_p_part)
        downloads(view, {"anchor divergence": anchor_table, **view.baselines}, p)
        if source.capabilities.explain:
            explain_section(view, p, anchor_table)


def draw_p_part(view: ExploreView) -> tuple[float, pd.DataFrame]:
    """The p slider, the anchor-divergence grid at p and what the slider did; the URL follows p.
    Returns ``(p, the anchor-divergence neighbour table)``."""
    geometry, source = view.geometry, view.source
    setting = SETTINGS["p"]
    p = st.slider(P_LABEL, *setting.bounds, step=setting.step, key="p", disabled=not geometry.is_mixture,
                  help=P_HELP)
    with step_clock.stage("rerank"):
        anchor_table, certified = neighbours(view, p)
    title = f"Anchor divergence ({anchor_model_kind(geometry.spec.kind).short}, p = {p:.2f})"
    draw_grid(st, title, anchor_table, source, "divergence")
    if source.capabilities.certificate:
        st.caption(certificate_text(view, certified))
    elif not geometry.is_mixture:
        st.caption(f"Only set {geometry.component_names[0]} has anchors, so p has no effect.")
    # Last: the URL's update redraws the whole page in the browser, which the grid need not wait for.
    publish_link(view.link_fields, source)
    return p, anchor_table


def downloads(view: ExploreView, tables: dict[str, pd.DataFrame], p: float) -> None:
    """The neighbour table and its downloads (the files built when clicked, on a server thread), in
    an expander whose content is drawn only while open."""
    box = table_expander()
    if not box.open:
        return
    with box, step_clock.stage("captions and tables"):
        st.dataframe(ex.combined_table(tables), hide_index=True)
    columns = box.columns(2)
    columns[0].download_button("Download neighbour table (CSV)",
                               lambda: ex.combined_table(tables).to_csv(index=False).encode(),
                               "neighbours.csv", "text/csv", key="download_csv")
    if view.source.capabilities.grid_png:
        title = f"Query: {view.query_text} · p = {p:.2f}"
        columns[1].download_button("Download neighbour grid (PNG)",
                                   lambda: ex.neighbour_grid_png(tables["anchor divergence"], view.source, title=title),
                                   "neighbours.png", "image/png", key="download_png")
