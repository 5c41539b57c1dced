"""The Explore page's results: the ``p`` slider and what depends on it (the neighbour grids beside
the baselines, the neighbour table and its downloads), a fragment, so that moving ``p`` reruns only it.

A move of ``p`` does only what it changes (``explorer-bench --browser`` splits its CPU time by the
stages of :mod:`~anchordiv.app.step_clock`): the slider's ``O(candidates)`` re-rank, the grids'
captions, and images sent as the bytes encoded on their first showing; the neighbour table and "why
this neighbour?" are built only while their expanders are open, the downloads only when clicked."""
from __future__ import annotations

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
P_LABEL = "p: weight of A against B (p = 1: only A, p = 0: only B)"


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
    """The neighbours' heading and legend (drawn once a full run), :func:`p_section`, and below it
    the details (the neighbour table, "why this neighbour?") while both are closed.

    Closed, the details are drawn here, outside the fragment, so that a move of p re-sends neither
    expander (in the fragment, closed, the two took 5-10% of a step's time in Chromium on 2 cores);
    open, they follow p, so the fragment draws them. Opening one here is a full run, which moves them into the
    fragment; closing the last one there is a fragment run, after which the next run of the fragment
    asks for a full run that moves them back out."""
    st.subheader("Neighbours")
    st.caption(view.source.legend)
    st.session_state[DETAILS_DRAWN_IN_FRAGMENT] = details_open(view.source)
    p_section(view)
    if not details_open(view.source):
        table_expander()
        if view.source.capabilities.explain:
            explain_expander()


def details_open(source: ex.GallerySource) -> bool:
    """Whether the neighbour table or "why this neighbour?" (where the source offers it) is open."""
    state = st.session_state
    return bool(state.get(TABLE_KEY) or (source.capabilities.explain and state.get(EXPLAIN_KEY)))


def table_expander():
    """The expander of the neighbour table; opening or closing it reruns the fragment it is in."""
    return st.expander(TABLE_LABEL, key=TABLE_KEY, on_change="rerun")


@st.fragment
def p_section(view: ExploreView) -> None:
    """The p slider and everything that depends on it: a fragment, so that moving p reruns only this."""
    if st.session_state.get(DETAILS_DRAWN_IN_FRAGMENT) != details_open(view.source):
        st.rerun(scope="app")  # a detail opened or closed in a fragment run: they belong elsewhere now
    with step_clock.timed_run("explorer"):
        draw_results(view)


def draw_results(view: ExploreView) -> None:
    geometry, source = view.geometry, view.source
    setting = SETTINGS["p"]
    p = st.slider(P_LABEL, *setting.bounds, step=setting.step, key="p", disabled=not geometry.is_mixture)
    share_box(view.link_fields, source)  # in the fragment, so the link shown follows p
    with step_clock.stage("rerank"):
        anchor_table, certified = neighbours(view, p)
    if source.capabilities.certificate:
        st.caption(certificate_text(view, certified))
    elif not geometry.is_mixture:
        st.caption(f"Only set {geometry.component_names[0]} has anchors, so p has no effect.")
    tables = {"anchor divergence": anchor_table, **view.baselines}
    titles = {"anchor divergence": f"Anchor divergence ({anchor_model_kind(geometry.spec.kind).short}, p = {p:.2f})",
              "cosine": "Cosine similarity", "iti": "ITI (our reading: cosine of anchor profiles)"}
    for column, (method, table) in zip(st.columns(len(tables)), tables.items()):
        draw_grid(column, titles[method], table, source, "divergence" if method == "anchor divergence" else "similarity")
    if details_open(source):
        downloads(view, tables, p)
        if source.capabilities.explain:
            explain_section(view, p, anchor_table)
    # Last: the URL's update redraws the whole page in the browser, which the grids need not wait for.
    publish_link(view.link_fields, source)


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
