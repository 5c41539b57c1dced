"""The Learn page's second part: the anchor divergence on the real gallery, for the Explore page's
query, anchor sets and weight: which anchors make a neighbour close and which push it away, and how
``p`` shares each image's tilt between A and B."""
from __future__ import annotations

import pandas as pd
import plotly.express as px
import streamlit as st
import torch

from anchordiv import explain, lesson
from anchordiv import explorer as ex
from anchordiv.app import cached
from anchordiv.app.anchor_inputs import anchor_sets, geometry_for
from anchordiv.app.errors import attempt
from anchordiv.app.query_inputs import caption_of
from anchordiv.app.sidebar import load_encoder_for, load_gallery_for
from anchordiv.app.url_state import link_notes, publish_link, share_box
from anchordiv.explorer.literal import markdown_literal, plotly_literal
from anchordiv.explorer.page_state import SETTINGS

# The colours of sets A and B, in the toy world's pictures and the gallery's alike.
SET_COLOURS = {"A": "#1f77b4", "B": "#d62728"}
TERMS_SHOWN = 8  # anchors each way in the gallery's bar chart of KL terms


def gallery_section(choices: dict, fields: list, share_slot) -> None:
    """``fields``: the page's link so far; the Explore page's (query, anchors, p) join it here, and
    the whole link is offered in ``share_slot`` at the top of the page."""
    st.header("On the real gallery")
    encoder = load_encoder_for(choices)
    gallery = load_gallery_for(choices, encoder)
    source = cached.memory_source(gallery)
    set_a, set_b, view_link = anchor_sets(source)
    link_notes()
    fields = fields + view_link
    publish_link(fields, source)
    with share_slot:
        share_box(fields, source)
    geometry = geometry_for(choices, source, encoder, set_a, set_b)
    state = st.session_state
    query_id = state.get("query_id")
    if not isinstance(query_id, int) or not 0 <= query_id < len(gallery):
        query_id = source.default_query()
    p = float(state.get("p", SETTINGS["p"].default))
    weighting = state.get("weighting", SETTINGS["weighting"].default)
    st.caption(f"The Explore page's query, anchor sets and weight (p = {p:.2f}, {weighting} weights), under the "
               "sidebar's model.")
    values, ids = attempt(lambda: ex.search_one(geometry.index_at(p, weighting), gallery.embeddings[query_id],
                                                choices["k"], exclude=query_id), "Cannot rank the gallery", stop=True)
    if state["learn_neighbour"] > len(ids):  # a link's neighbour beyond this k
        state["learn_neighbour"] = 1
    rank = st.selectbox("Neighbour", list(range(1, len(ids) + 1)), key="learn_neighbour",
                        format_func=lambda r: f"{r}. {caption_of(source)(int(ids[r - 1]))}")
    neighbour = int(ids[rank - 1])
    query_image, neighbour_image, _ = st.columns([1, 1, 4])
    query_image.image(gallery.image(query_id), caption=f"query: {markdown_literal(gallery.caption(query_id))}",
                      width=96)
    neighbour_image.image(gallery.image(neighbour),
                          caption=f"neighbour {rank}: {markdown_literal(gallery.caption(neighbour))}",
                          width=96)
    query, embedding = gallery.embeddings[query_id], gallery.embeddings[neighbour]
    kl_section(geometry, geometry.model_at(p, weighting), query, embedding)
    if geometry.is_mixture:
        curve = lesson.responsibility_curve(lambda value: geometry.model_at(value, weighting),
                                            {"query": query, f"neighbour {rank}": embedding},
                                            component_names=geometry.component_names)
        figure = px.line(curve, x="p", y="responsibility", color="component", line_dash="point",
                         color_discrete_map=SET_COLOURS, markers=True,
                         title="Responsibilities of A and B for the query and the neighbour, as p moves")
        figure.add_vline(x=p, line_dash="dot", annotation_text=f"p = {p:.2f}")
        st.plotly_chart(figure, key="learn_chart_gallery_responsibility")
        st.markdown("How much of each image's tilt lies on A's anchors and how much on B's. Where the two images' "
                    "curves part, p decides whether they count as alike.")
        st.latex(r"r_k(x) = \frac{w_k\, e^{\kappa_k(s x)}}{\sum_j w_j\, e^{\kappa_j(s x)}}")


def kl_section(geometry: ex.ExplorerGeometry, model, query: torch.Tensor, neighbour: torch.Tensor) -> None:
    reverse = geometry.spec.reverse
    query_tilt, neighbour_tilt, divergence, _ = explain.explain_pair(
        model, geometry.component_anchors, geometry.component_texts, geometry.component_names, query, neighbour,
        reverse=reverse)
    terms = explain.kl_terms(neighbour_tilt, query_tilt) if reverse else explain.kl_terms(query_tilt, neighbour_tilt)
    st.subheader("Which anchors make this neighbour close, and which push it away")
    strongest = pd.concat([terms.head(TERMS_SHOWN), terms.tail(TERMS_SHOWN)]).drop_duplicates("anchor")
    strongest = strongest.assign(anchor=strongest["anchor"].map(plotly_literal))  # Plotly reads <a href> in labels
    figure = px.bar(strongest, x="term", y="anchor", color="set", orientation="h", color_discrete_map=SET_COLOURS,
                    hover_data=["p", "q"], title="Per-anchor terms of the KL (largest both ways)")
    figure.update_yaxes(autorange="reversed")
    st.plotly_chart(figure, key="learn_chart_kl_terms")
    first, second = ("neighbour", "query") if reverse else ("query", "neighbour")
    st.markdown(f"The divergence is a sum over anchors. An anchor the {first} leans on (large p) and the {second} "
                f"does not (small q) adds a large term: it **pushes** the neighbour away. An anchor both lean on "
                f"alike adds about nothing, and one the {second} leans on more adds a negative term that "
                "**pulls** the total down.")
    st.latex(r"D = \sum_i p_i \log\frac{p_i}{q_i}")
    st.caption(f"Sum of the terms: {terms['term'].sum():.4f} nats · the model's divergence: {divergence:.4f}"
               + ("" if query_tilt.exact else " (this model is smooth, so the terms are over the softmax tilt "
                                              "of the anchors in use, a stand-in)"))
    with st.expander("All the terms"):
        st.dataframe(terms, hide_index=True)
