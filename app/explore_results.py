"""The Explore page's results: the ``p`` slider and what depends on it (the neighbour grids beside
the baselines, the neighbour table and its downloads), a fragment, so that moving ``p`` reruns only it."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from anchordiv import explorer as ex
from anchordiv.app.explore_details import explain_section
from anchordiv.app.explore_view import ExploreView, certificate_text, neighbours
from anchordiv.app.url_state import publish_link, share_box
from anchordiv.explorer.literal import markdown_literal
from anchordiv.explorer.page_state import SETTINGS
from anchordiv.models import anchor_model_kind

GRID_WIDTH = 96
P_LABEL = "p: weight of A against B (p = 1: only A, p = 0: only B)"


def draw_grid(column, title: str, table: pd.DataFrame, source: ex.GallerySource, value_name: str) -> None:
    """A neighbour table as captioned images, read for its rows only."""
    column.markdown(f"**{title}**  \n{ex.agreement_text(table)}")
    column.image(source.thumbnails(table["gallery_id"].tolist()),
                 caption=[markdown_literal(text) for text in ex.grid_captions(table, source, value_name)],
                 width=GRID_WIDTH)


@st.fragment
def results_section(view: ExploreView) -> None:
    """The p slider and everything that depends on it: a fragment, so that moving p reruns only this."""
    geometry, source = view.geometry, view.source
    setting = SETTINGS["p"]
    p = st.slider(P_LABEL, *setting.bounds, step=setting.step, key="p", disabled=not geometry.is_mixture)
    publish_link(view.link_fields, source)
    share_box(view.link_fields, source)  # in the fragment, so the link shown follows p
    anchor_table, certified = neighbours(view, p)
    if source.capabilities.certificate:
        st.caption(certificate_text(view, certified))
    elif not geometry.is_mixture:
        st.caption(f"Only set {geometry.component_names[0]} has anchors, so p has no effect.")
    tables = {"anchor divergence": anchor_table, **view.baselines}

    st.subheader("Neighbours")
    st.caption(source.legend)
    titles = {"anchor divergence": f"Anchor divergence ({anchor_model_kind(geometry.spec.kind).short}, p = {p:.2f})",
              "cosine": "Cosine similarity", "iti": "ITI (our reading: cosine of anchor profiles)"}
    for column, (method, table) in zip(st.columns(len(tables)), tables.items()):
        draw_grid(column, titles[method], table, source, "divergence" if method == "anchor divergence" else "similarity")
    downloads(view, tables, p)
    if source.capabilities.explain:
        explain_section(view, p, anchor_table)


def downloads(view: ExploreView, tables: dict[str, pd.DataFrame], p: float) -> None:
    """The neighbour table, and its downloads: built when clicked (on a server thread), not on every move of p."""
    combined = ex.combined_table(tables)
    with st.expander("Neighbour table"):
        st.dataframe(combined, hide_index=True)
    columns = st.columns(2)
    columns[0].download_button("Download neighbour table (CSV)", lambda: combined.to_csv(index=False).encode(),
                               "neighbours.csv", "text/csv", key="download_csv")
    if view.source.capabilities.grid_png:
        title = f"Query: {view.query_text} · p = {p:.2f}"
        columns[1].download_button("Download neighbour grid (PNG)",
                                   lambda: ex.neighbour_grid_png(tables["anchor divergence"], view.source, title=title),
                                   "neighbours.png", "image/png", key="download_png")
