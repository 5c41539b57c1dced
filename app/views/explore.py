"""Explore: one query, two anchor sets, and the neighbourhoods they induce as ``p`` moves (through
the query's certified slider), beside cosine; UMAP of the geometry. One page over any gallery
source (:class:`~anchordiv.explorer.GallerySource`): the built-in world or an image folder in memory,
or a gallery store on disk; the sections a source offers beyond these (the p sweep, "why this
neighbour?", ITI, the slider's certificate, ...) are its :class:`~anchordiv.explorer.Capabilities`.

Nothing here is ``O(G)`` per move of ``p`` over a store: the name index, the sharded index and each
query's p path (one pass per query, then every slider position from the slider's few hundred
candidates) are cached resources, cosine is cached per query, a move of ``p`` is played in the
browser, and images are read for the items the path shows only.
"""
from __future__ import annotations

import streamlit as st

from anchordiv.app.anchor_inputs import anchor_templates, anchor_widgets, geometry_and_key, view_link
from anchordiv.app.cached import source_presets
from anchordiv.app.explore_details import sweep_section
from anchordiv.app.explore_results import results_section
from anchordiv.app.explore_umap import umap_section
from anchordiv.app.explore_view import ExploreView, baseline_tables
from anchordiv.app.find_anchors import find_anchors_section
from anchordiv.app.encoder_choice import load_encoder_for
from anchordiv.app.query_inputs import QUERY_CAPTION_KEY, QUERY_IMAGE_WIDTH, choose_query
from anchordiv.app.sidebar import load_source_for, page_sidebar, sidebar_state
from anchordiv.app.url_state import link_notes, part_settings, publish_link, share_box, sidebar_fields
from anchordiv.explorer.literal import markdown_literal
from anchordiv.explorer.settings import VIEW
from anchordiv.explorer.sidebar_state import SidebarState


def main(sidebar: SidebarState) -> None:
    encoder = load_encoder_for(sidebar.encoder)
    source = load_source_for(sidebar.gallery, encoder)
    fields = sidebar_fields() + view_link(source, box=page_sidebar())
    link_notes()
    st.sidebar.caption(f"{markdown_literal(source.description)} · {markdown_literal(encoder.name)} (d = {encoder.dim}, "
                       f"logit scale {encoder.logit_scale:.1f})")
    for note in source.notes:
        st.sidebar.warning(note)

    # The gesture first: the query, the p player and its grid share the first screen, the anchors
    # they depend on beside them, at the sidebar's top. The query stands left of the neighbours
    # where both have room, else above them with its picture beside its controls (page.css).
    with st.container(key="explore_top"):
        query_col, results_col = st.columns([1.3, 4], gap="medium")
    notices = results_col.container()  # above the results: what is said of the query, in a wide column
    with query_col, st.container(key="query_box"):
        controls, picture = st.columns([3, 2], gap="small")
    with controls:
        query, query_id, query_labels, image, query_text = choose_query(source, encoder, notices)
    if image is not None:
        picture.image(image, width=QUERY_IMAGE_WIDTH)
    if query is not None:  # in the column's width: under the image it ran 24 letters a line
        picture.container(key=QUERY_CAPTION_KEY).caption(markdown_literal(query_text if image is not None
                                                                           else f"Query: {query_text}"))
    parsed_a, parsed_b = anchor_widgets(page_sidebar(), source_presets(source), encoder, source.preset_sources())
    view_settings = part_settings(VIEW)  # the query's and the anchors' widgets have checked them
    publish_link(fields, source)
    if query is None:
        return
    geometry, geometry_key = geometry_and_key(sidebar, source, encoder, parsed_a, parsed_b)
    top_k = sidebar.settings.top_k
    baselines = baseline_tables(source, encoder, query, query_id, query_labels, top_k,
                                tuple(zip((parsed_a.anchors, parsed_b.anchors), anchor_templates(encoder, shown=True)))
                                if sidebar.settings.show_iti else None)
    view = ExploreView(source, encoder, geometry, geometry_key, view_settings.weighting, query, query_id, query_labels,
                       query_text, top_k, baselines, fields)
    with picture:  # beside the query, on the first screen at every width
        share_box(fields, source)
    with results_col:
        results_section(view)
    st.subheader("Anchors and geometry")
    find_anchors_section(view)
    if source.capabilities.p_sweep:
        sweep_section(view)
    umap_section(view)


main(sidebar_state())
