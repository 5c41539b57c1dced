"""The Explore page on a gallery store (10^5 - 10^6 items, docs/design.md §11): the query (by name,
row, text or upload), anchor sets A and B, the certified ``p`` slider's top-k beside cosine, and a
UMAP of a fixed sample.

Nothing here is ``O(G)`` per run: the name index, the sharded index (one pass per store, anchors and
model) and each query's slider (one pass per query) are cached resources, cosine is cached per
query, a move of ``p`` costs the slider's few hundred candidates, and images are read from disk for
the items shown only (:func:`anchordiv.explorer.store_thumbnails`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

import shared_ui as ui
from anchordiv import explorer as ex
from anchordiv.models import anchor_model_kind
from anchordiv.explorer.literal import markdown_literal
from shared_ui import BY_IDENTITY, attempt



@dataclass(frozen=True)
class StoreView:
    """What the sections below the anchors draw from: everything but ``p``, which the results
    fragment owns (so moving it reruns only that fragment)."""

    gallery: ex.StoreSource
    geometry: ex.ExplorerGeometry
    geometry_key: str
    weighting: str
    query: np.ndarray
    query_id: int | None
    query_label: str | None
    query_text: str
    k: int
    cosine: pd.DataFrame
    link_fields: list


# -- cached per query -------------------------------------------------------------------------------
@st.cache_resource(show_spinner="Preparing the p slider (one pass over the store)…", max_entries=32)
def get_slider(geometry_key: str, _geometry: ex.ExplorerGeometry, query: np.ndarray, k: int, exclude: int | None,
               weighting: str):
    """The query's certified slider (``None`` where none applies); ``geometry_key`` names ``_geometry``."""
    return _geometry.slider(query, k, exclude, weighting)


@st.cache_data(show_spinner="Ranking the store by cosine (one pass)…", max_entries=64, hash_funcs=BY_IDENTITY)
def get_cosine_table(gallery: ex.StoreSource, query: np.ndarray, k: int, exclude: int | None,
                     query_label: str | None) -> pd.DataFrame:
    return gallery.neighbour_table(*ex.cosine_top_k(gallery.store, query, k, exclude), query_label,
                                    "similarity")


@st.cache_data(show_spinner="Projecting a fixed sample of the store with UMAP (cached per geometry)…",
               max_entries=16, hash_funcs=BY_IDENTITY)
def get_store_projection(key: str, gallery: ex.StoreSource, _geometry: ex.ExplorerGeometry, p: float, weighting: str,
                         max_points: int) -> tuple[np.ndarray, np.ndarray]:
    """``_geometry`` is not hashed: ``key`` names it (anchors, model, encoder)."""
    return ex.geometry_projection(gallery, "anchor", _geometry, p, weighting, max_points=max_points, cache_key=key)


# -- the page -----------------------------------------------------------------------------------------
def store_item(gallery: ex.StoreSource, item: int) -> ui.Query:
    """Store row ``item`` as a query: ``(embedding (d,), item, label, thumbnail, description)``."""
    image = gallery.thumbnails([item], size=ui.QUERY_IMAGE_WIDTH)[0]
    return gallery.vector(item), item, gallery.labels_of(item), image, f"#{item} {gallery.caption(item)}"


def main(choices: dict[str, Any], encoder) -> None:
    gallery = ui.load_store_for(choices, encoder)
    fields = ui.sidebar_fields() + ui.follow_view_link(gallery)
    ui.link_notes()
    st.sidebar.caption(f"{markdown_literal(gallery.description)} · {markdown_literal(encoder.name)} "
                       f"(d = {encoder.dim}) on CPU")
    if gallery.store.encoder is None:
        st.sidebar.warning("This store does not record the model that embedded it; its neighbours mean something "
                           "only if that was the model chosen here.")

    query, parsed_a, parsed_b, weighting = ui.query_and_anchors(
        gallery, encoder, lambda item: store_item(gallery, item), fields, by_row=True)
    query, query_id, query_label, _, query_text = query
    if query is None:
        return
    geometry, geometry_key = ui.geometry_and_key(choices, gallery, encoder, parsed_a, parsed_b)
    cosine = attempt(lambda: get_cosine_table(gallery, query, choices["k"], query_id, query_label),
                     "Cannot rank the store by cosine", stop=True)
    view = StoreView(gallery, geometry, geometry_key, weighting, query, query_id, query_label, query_text,
                     choices["k"], cosine, fields)
    results_section(view)
    umap_section(view)


def neighbours(view: StoreView, p: float) -> tuple[pd.DataFrame, bool | None]:
    """The anchor-divergence neighbour table at ``p`` and whether the slider certified it (``None``: no slider)."""
    def rank() -> tuple[np.ndarray, np.ndarray, bool | None]:
        slider = get_slider(view.geometry_key, view.geometry, view.query, view.k, view.query_id, view.weighting)
        return ex.neighbours_at(view.geometry, slider, view.query, view.k, p, view.weighting, view.query_id)

    values, ids, certified = attempt(rank, "Cannot rank the store", stop=True)
    return view.gallery.neighbour_table(values, ids, view.query_label, "divergence"), certified


def certificate_text(view: StoreView, certified: bool | None) -> str:
    if certified:
        return ("✓ Certified: the slider's candidates provably hold the exact top-k at this p, so no pass over the "
                "store was needed.")
    if certified is False:
        return "Not certified at this p: the exact search ran over the whole store (the same answer, one pass)."
    if not view.geometry.is_mixture:
        return "One anchor set: the exact sharded search (p has no effect)."
    return ("Reverse direction: the certified slider is for the query-first direction, so this is the exact "
            "sharded search.")


@st.fragment
def results_section(view: StoreView) -> None:
    """The p slider and everything that depends on it: a fragment, so that moving p reruns only this."""
    gallery, geometry = view.gallery, view.geometry
    p = st.slider("p: weight of A against B (p = 1: only A, p = 0: only B)", 0.0, 1.0, step=0.05, key="p",
                  disabled=not geometry.is_mixture)
    ui.publish_link(view.link_fields, gallery)
    ui.share_box(view.link_fields, gallery)  # in the fragment, so the link shown follows p
    anchor_table, certified = neighbours(view, p)
    st.caption(certificate_text(view, certified))
    tables = {"anchor divergence": anchor_table, "cosine": view.cosine}

    st.subheader("Neighbours")
    st.caption("✓obj: same label as the query · d = anchor divergence (lower is closer), s = similarity "
               "(higher is closer) · images are read from the store's image folder when shown")
    titles = {"anchor divergence": f"Anchor divergence ({anchor_model_kind(geometry.spec.kind).short}, "
                                   f"p = {p:.2f})", "cosine": "Cosine similarity"}
    for column, (method, table) in zip(st.columns(len(tables)), tables.items()):
        value_name = "divergence" if method == "anchor divergence" else "similarity"
        ui.draw_grid(column, titles[method], table, gallery, value_name,
                     images=gallery.thumbnails(table["gallery_id"].tolist()))
    combined = ex.combined_table(tables)
    with st.expander("Neighbour table"):
        st.dataframe(combined, hide_index=True)
    # Built when clicked (on a server thread), not on every move of p.
    st.download_button("Download neighbour table (CSV)", lambda: combined.to_csv(index=False).encode(),
                       "neighbours.csv", "text/csv", key="download_csv")


@st.fragment
def umap_section(view: StoreView) -> None:
    """A fragment: its controls rerun only this. UMAP of a fixed sample of the store at a p the
    user pins (``umap_p``), so moving the slider never recomputes a projection."""
    gallery, geometry = view.gallery, view.geometry
    st.subheader("UMAP of a fixed sample of the store")
    controls = st.columns(3)
    show = controls[0].checkbox("Show the projection", key="umap_show",
                                help="UMAP of the anchor-divergence kNN graph of a fixed sample; computed once per "
                                     "geometry and cached.")
    max_points = int(controls[1].number_input("Points (fixed sample)", 10, 20_000,
                                              min(len(gallery), ex.store_source.PROJECTION_ROWS), step=500,
                                              key="store_umap_points"))
    p = ui.pinned_projection_p(controls[2], show, geometry.is_mixture)
    if p is None:
        return
    key = ex.projection_key(view.geometry_key, round(p, 4), view.weighting)
    projected = attempt(lambda: get_store_projection(key, gallery, geometry, p, view.weighting, max_points),
                        "Cannot project the store")
    if projected is None:
        return
    ids, xy = projected
    neighbour_ids = neighbours(view, p)[0].gallery_id.tolist()
    frame = gallery.projection_frame(ids, xy, view.query_id, neighbour_ids)
    ui.projection_chart(st, frame, "label", "name", f"Anchor divergence at p = {p:.2f} ({view.weighting}), "
                        f"{len(ids):,} of {len(gallery):,} items", "umap_chart_store")
    ui.projection_caption(ids, view.query_id, neighbour_ids, p)
