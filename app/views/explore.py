"""Explore: one query, two anchor sets, and the neighbourhoods they induce as ``p`` moves, beside
cosine; the p sweep, "why this neighbour?" and UMAP of the geometry."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st
import torch

import shared_ui as ui
import store_explore
from anchordiv import explain
from anchordiv import explorer as ex
from anchordiv.gallery import Gallery
from anchordiv.models import anchor_model_kind
from anchordiv.explorer.literal import markdown_literal
from shared_ui import BY_IDENTITY, attempt

# -- query ----------------------------------------------------------------------------------------
def gallery_item(gallery: Gallery, item: int) -> tuple[np.ndarray, int, pd.Series, Any, str]:
    """Gallery image ``item`` as a query: ``(embedding (d,), item, labels, image, description)``."""
    return (gallery.embeddings[item].numpy(), item, gallery.labels.iloc[item], gallery.image(item),
            f"#{item} {gallery.caption(item)}")


# -- results --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class View:
    """What the sections below the anchors draw from: everything but ``p``, which the results
    fragment owns (so moving it reruns only that fragment)."""

    gallery: Gallery
    encoder: Any
    geometry: ex.ExplorerGeometry
    geometry_key: str
    weighting: str
    query: np.ndarray
    query_id: int | None
    query_labels: pd.Series | None
    query_text: str
    k: int
    baselines: dict[str, pd.DataFrame]
    link_fields: list  # the page's link, which the results fragment updates as p moves


def main() -> None:
    choices = ui.sidebar()
    encoder = ui.load_encoder_for(choices)
    if choices["source"] == ui.STORE:
        store_explore.main(choices, encoder)
        return
    gallery = ui.load_gallery_for(choices, encoder)
    fields = ui.sidebar_fields() + ui.follow_view_link(gallery)
    ui.link_notes()
    st.sidebar.caption(f"{markdown_literal(gallery.description)} · {markdown_literal(encoder.name)} (d = {encoder.dim}, logit scale "
                       f"{encoder.logit_scale:.1f}) on CPU")

    query, parsed_a, parsed_b, weighting = ui.query_and_anchors(
        gallery, encoder, lambda item: gallery_item(gallery, item), fields)
    query, query_id, query_labels, _, query_text = query
    if query is None:
        return
    geometry, geometry_key = ui.geometry_and_key(choices, gallery, encoder, parsed_a, parsed_b)
    baselines = baseline_tables(gallery, encoder, query, query_id, query_labels, choices["k"],
                                parsed_a.anchors + parsed_b.anchors if choices["show_iti"] else None)
    view = View(gallery, encoder, geometry, geometry_key, weighting, query, query_id, query_labels, query_text,
                choices["k"], baselines, fields)
    results_section(view)
    sweep_section(view)
    umap_section(view)


@st.fragment
def results_section(view: View) -> None:
    """The p slider and everything that depends on it: a fragment, so that moving p reruns only this."""
    geometry, gallery = view.geometry, view.gallery
    p = st.slider("p: weight of A against B (p = 1: only A, p = 0: only B)", 0.0, 1.0, step=0.05, key="p",
                  disabled=not geometry.is_mixture)
    if not geometry.is_mixture:
        st.caption(f"Only set {geometry.component_names[0]} has anchors, so p has no effect.")
    ui.publish_link(view.link_fields, gallery)
    ui.share_box(view.link_fields, gallery)  # in the fragment, so the link shown follows p
    tables = neighbour_tables(view, p)
    anchor_table = tables["anchor divergence"]

    st.subheader("Neighbours")
    st.caption("✓obj: same object as the query · ✓sty: same style · d = anchor divergence (lower is closer), "
               "s = similarity (higher is closer)")
    grid_cols = st.columns(len(tables))
    titles = {"anchor divergence": f"Anchor divergence ({anchor_model_kind(geometry.spec.kind).short}, p = {p:.2f})",
              "cosine": "Cosine similarity", "iti": "ITI (our reading: cosine of anchor profiles)"}
    for column, (method, table) in zip(grid_cols, tables.items()):
        ui.draw_grid(column, titles[method], table, gallery, "divergence" if method == "anchor divergence" else "similarity")

    combined = ex.combined_table(tables)
    with st.expander("Neighbour table"):
        st.dataframe(combined, hide_index=True)
    down_csv, down_png = st.columns(2)
    # Built when clicked (on a server thread), not on every move of p.
    down_csv.download_button("Download neighbour table (CSV)", lambda: combined.to_csv(index=False).encode(),
                             "neighbours.csv", "text/csv", key="download_csv")
    title = f"Query: {view.query_text} · p = {p:.2f}"
    down_png.download_button("Download neighbour grid (PNG)",
                             lambda: ex.neighbour_grid_png(anchor_table, gallery, title=title),
                             "neighbours.png", "image/png", key="download_png")
    explain_section(view, p, anchor_table)


def neighbour_tables(view: View, p: float) -> dict[str, pd.DataFrame]:
    """The query's top-k for the anchor divergence at ``p``, then the baselines', by method."""
    index = view.geometry.index_at(p, view.weighting)
    result = attempt(lambda: ex.search_one(index, view.query, view.k, exclude=view.query_id), "Cannot rank the gallery",
                     stop=True)
    return {"anchor divergence": ex.neighbour_table(*result, view.gallery, view.query_labels, "divergence"),
            **view.baselines}


def baseline_tables(gallery: Gallery, encoder, query: np.ndarray, query_id: int | None, query_labels: pd.Series | None,
                    k: int, iti_texts: tuple[str, ...] | None) -> dict[str, pd.DataFrame]:
    """The query's top-k under cosine and (with ``iti_texts``) ITI: they do not depend on p."""
    indexes = {"cosine": ui.get_baseline("cosine", gallery, encoder, ())}
    if iti_texts is not None:
        indexes["iti"] = attempt(lambda: ui.get_baseline("iti", gallery, encoder, iti_texts), "ITI")
    return {method: ex.neighbour_table(*ex.search_one(index, query, k, exclude=query_id), gallery, query_labels,
                                       "similarity")
            for method, index in indexes.items() if index is not None}


@st.fragment
def explain_section(view: View, p: float, table: pd.DataFrame) -> None:
    """A fragment of its own: choosing another neighbour reruns only this."""
    gallery = view.gallery
    st.subheader("Why this neighbour?")
    rank = st.selectbox("Neighbour", table["rank"].tolist(), key="explain_rank",
                        format_func=lambda r: f"{r}. {ui.caption_of(gallery)(table.gallery_id.iloc[r - 1])}")
    neighbour = int(table.gallery_id.iloc[rank - 1])
    geometry = view.geometry
    query_tilt, neighbour_tilt, divergence, shown = explain.explain_pair(
        geometry.model_at(p, view.weighting), geometry.component_anchors, geometry.component_texts,
        geometry.component_names, torch.as_tensor(view.query), gallery.embeddings[neighbour],
        reverse=geometry.spec.reverse)
    left, middle, right = st.columns([2, 1, 2])
    left.markdown("**Query's tilted anchor distribution**")
    # Static tables: eight rows need no scrolling or sorting, and they draw faster on every move of p.
    left.table(tilt_table(query_tilt))
    right.markdown(f"**Neighbour {rank}'s tilted anchor distribution**")
    right.table(tilt_table(neighbour_tilt))
    middle.image(gallery.image(neighbour), width=96)
    middle.metric("Anchor divergence (model)", f"{divergence:.4f}")
    if query_tilt.exact:
        middle.caption("Exact tilted distributions p(anchor | x) ∝ w · exp(s γ·x); their KL equals the divergence.")
    else:
        middle.metric("KL of the shown tilts", f"{shown:.4f}")
        middle.caption("This model is not supported on the anchors: the tables show the empirical tilt over the "
                       "anchors in use (a stand-in); the divergence above is the model's own.")


def tilt_table(tilt: explain.TiltedDistribution) -> pd.DataFrame:
    """The eight most probable anchors, by anchor (as text: a static table draws Markdown),
    probabilities to 4 decimals (as shown)."""
    top = tilt.top(8)
    return top.assign(anchor=top["anchor"].map(markdown_literal)).set_index("anchor").round({"probability": 4})


@st.cache_data(show_spinner=False, max_entries=64, hash_funcs=BY_IDENTITY)
def get_p_sweep(geometry_key: str, _geometry: ex.ExplorerGeometry, query: np.ndarray, k: int, gallery: Gallery,
                query_labels: pd.Series, query_id: int | None, weighting: str) -> pd.DataFrame:
    """The p sweep does not depend on where p is, so moving p reuses it (``geometry_key`` names ``_geometry``)."""
    return ex.p_sweep(_geometry, torch.as_tensor(query), k, gallery, query_labels, exclude=query_id, weighting=weighting)


def sweep_section(view: View) -> None:
    """Agreement with the query's object and style across p (outside the results fragment: it does
    not depend on where p is)."""
    st.subheader("p sweep")
    if not view.geometry.is_mixture or view.query_labels is None:
        st.caption("Needs both anchor sets and a query from the gallery (whose labels are known).")
        return
    sweep = get_p_sweep(view.geometry_key, view.geometry, view.query, view.k, view.gallery, view.query_labels,
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


def calibration_section(view: View) -> None:
    """The calibration curve behind the calibrated weights: how far the gallery's neighbourhoods have
    moved from B's to A's at each log-odds, measured without labels (docs/design.md §3)."""
    frame = ex.calibration_frame(view.geometry)
    if frame is None:
        return
    with st.expander("How calibrated p is made: the calibration curve"):
        st.vega_lite_chart(frame, {
            "mark": {"type": "line", "point": True}, "height": 220,
            "encoding": {"x": {"field": "log-odds", "type": "quantitative", "title": "log(w_A / w_B)"},
                         "y": {"field": "moved", "type": "quantitative", "title": "fraction moved from B to A",
                               "scale": {"domain": [0, 1]}},
                         "color": {"field": "curve", "type": "nominal"}}}, width="stretch", key="calibration_chart")
        st.caption("On a fixed sample of gallery images, each side counts the neighbours that have left B's "
                   "neighbourhood in that set's own divergence (A's side: closer to A's; B's side: farther from "
                   "B's). p is the slower side: calibrated p = 0.5 uses the weights where it reaches one half. "
                   "No labels are used.")


@st.fragment
def umap_section(view: View) -> None:
    """A fragment: its controls rerun only this. It projects the geometry at a p the user pins
    (``umap_p``), so moving the slider never recomputes a projection."""
    gallery, geometry = view.gallery, view.geometry
    st.subheader("UMAP of the geometry")
    controls = st.columns(5)
    show = controls[0].checkbox("Show the projection", key="umap_show",
                                help="UMAP of the anchor-divergence kNN graph; computed once per geometry and cached.")
    max_points = int(controls[1].number_input("Points (fixed sample)", 10, 20_000, min(len(gallery), 4000),
                                              step=500, key="umap_points"))
    colour_columns = [c for c in gallery.labels.columns if gallery.labels[c].nunique() < 200] or [gallery.name_column]
    colour = controls[2].selectbox("Colour by", colour_columns, key="umap_colour",
                                   index=colour_columns.index(gallery.style_column) if gallery.style_column in colour_columns else 0)
    with_cosine = controls[3].checkbox("Cosine projection beside it", key="umap_cosine")
    p = ui.pinned_projection_p(controls[4], show, geometry.is_mixture)
    if p is None:
        return
    projections = [("anchor", f"Anchor divergence at p = {p:.2f} ({view.weighting})",
                    ex.projection_key(view.geometry_key, round(p, 4), view.weighting))]
    if with_cosine:
        projections.append(("cosine", "Cosine", ex.projection_key(gallery.key, view.encoder.name)))
    neighbour_ids = neighbour_tables(view, p)["anchor divergence"].gallery_id.tolist()
    for column, (method, title, key) in zip(st.columns(len(projections)), projections):
        ids, xy = attempt(lambda: ui.get_projection(key, method, gallery, geometry, p, view.weighting, max_points),
                          "Cannot project the gallery") or (None, None)
        if ids is None:
            return
        frame = ex.MemorySource(gallery).projection_frame(ids, xy, view.query_id, neighbour_ids, colour)
        ui.projection_chart(column, frame, colour, gallery.name_column, title, f"umap_chart_{method}")
    ui.projection_caption(ids, view.query_id, neighbour_ids, p)


main()
