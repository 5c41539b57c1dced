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
from anchordiv.app.encoder_choice import load_encoder_for
from anchordiv.app.sidebar import load_gallery_for
from anchordiv.app.url_state import link_notes, publish_link, share_box
from anchordiv.app.widget_checks import checked_query_id, checked_rank
from anchordiv.explorer.literal import markdown_literal, plotly_literal
from anchordiv.grids import readable_value
from anchordiv.explorer.settings import DIRECTION_LABELS, FORWARD, REVERSE, SETTINGS
from anchordiv.explorer.sidebar_state import SidebarState
from anchordiv.models import anchor_model_kind

# The colours of sets A and B in the gallery's charts (the toy world draws with the same: toy_world_draw.js).
SET_COLOURS = {"A": "#1f77b4", "B": "#d62728"}
TERMS_SHOWN = 8  # anchors each way in the gallery's bar chart of KL terms


def gallery_section(sidebar: SidebarState, fields: list, share_slot) -> None:
    """``fields``: the page's link so far; the Explore page's (query, anchors, p) join it here, and
    the whole link is offered in ``share_slot`` at the top of the page."""
    st.header("On the real gallery")
    encoder = load_encoder_for(sidebar.encoder)
    gallery = load_gallery_for(sidebar.gallery, encoder)
    source = cached.memory_source(gallery)
    set_a, set_b, view_link, view = anchor_sets(source)
    link_notes()
    query_id = checked_query_id(source, "Choose the query on the Explore page.", st)  # before the link writes it
    fields = fields + view_link
    publish_link(fields, source)
    with share_slot:
        share_box(fields, source)
    geometry = geometry_for(sidebar, source, encoder, set_a, set_b)
    p, weighting, top_k = view.p, view.weighting, sidebar.settings.top_k
    st.caption(settings_text(geometry.spec, top_k, p, weighting))
    st.caption(ex.WEIGHTING_HELP[weighting])
    values, ids = attempt(lambda: ex.search_one(geometry.index_at(p, weighting), gallery.embeddings[query_id],
                                                top_k, exclude=query_id), "Cannot rank the gallery", stop=True)
    neighbour_setting = SETTINGS["learn_neighbour"]
    # A link's neighbour may lie beyond this k.
    checked_rank(neighbour_setting.key, len(ids), neighbour_setting.label, st)
    rank = st.selectbox(neighbour_setting.label, list(range(1, len(ids) + 1)), key=neighbour_setting.key,
                        format_func=lambda r: f"{r}. {caption_of(source)(int(ids[r - 1]))}")
    neighbour = int(ids[rank - 1])
    # Each caption in its column's width, not the image's: 96 px left it 14 letters a line.
    for column, item, name in zip(st.columns(3), (query_id, neighbour), ("query", f"neighbour {rank}")):
        column.image(gallery.image(item), width=96)
        column.caption(f"{name}: {markdown_literal(gallery.caption(item))}")
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
        st.markdown(share_text(geometry, query, p, weighting))


# What p means under each of the Explore page's weightings, beside the toy world's (balanced or literal):
# why A's share of the query is one half where it is, calibrated p above all, which is not a weight.
GALLERY_SHARE_NOTES: dict[str, str] = {
    "calibrated": "Calibrated p is not A's weight: it is **how far the neighbours have moved from B's (p = 0) to "
                  "A's (p = 1)**, measured on this gallery, so p = 0.5 puts them half-way. The weights that do "
                  "so may give A most of the query's tilt at p = 0.5, or little of it: A's share need not be one "
                  "half there. The toy world above uses p as a weight (balanced or literal), so its crossing and "
                  "this one answer different questions. To weigh the gallery as the toy world does, choose "
                  "balanced or literal weights on the Explore page (*Weights of A and B*).",
    "balanced": "Balanced weights, as in the toy world above, except that each set's average κ is taken over "
                "this gallery instead of over evenly spread directions: p is the weight once that average is "
                "taken off, so A's share is one half at p = 0.5 for an image whose κ favours neither set more than "
                "the gallery's do on average; an image that points at A's anchors is A's from a smaller p.",
    "literal": "Literal weights (p, 1 − p), as the toy world's literal option: a set that explains the query much "
               "better (a larger κ) owns it for most p.",
}


def settings_text(spec: ex.GeometrySpec, k: int, p: float, weighting: str) -> str:
    """This section's settings in words: the sidebar's geometry (``spec`` and top-``k``) and the
    Explore page's ``p`` and ``weighting``; that the toy world's controls are not among them."""
    direction = DIRECTION_LABELS[REVERSE if spec.reverse else FORWARD].split(":")[0].lower()
    return (f"This section's settings: the sidebar's geometry ({anchor_model_kind(spec.kind).short} anchor model, "
            f"scale s = {spec.scale:g}, {direction}, top-k {k}) and the Explore page's query, anchor sets, "
            f"p = {p:.2f} and {weighting} weights. The toy world's controls above do not apply here.")


def share_text(geometry: ex.ExplorerGeometry, query: torch.Tensor, p: float, weighting: str) -> str:
    """A's share of the query's tilt at ``p`` and the p at which it is one half, under
    ``weighting``, with why they are where they are (:data:`GALLERY_SHARE_NOTES`)."""
    share = lesson.share_of_a(geometry.model_at(p, weighting), query)
    even = lesson.even_share_p(lambda value: geometry.model_at(value, weighting), query)
    return (f"Under these **{weighting}** weights at scale s = {geometry.spec.scale:g}, A holds {share:.0%} of the "
            f"query's tilt at p = {p:.2f} and half of it at **p = {even:.2f}**. {GALLERY_SHARE_NOTES[weighting]}")


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
    # Both through one rounding (3 significant digits): at four decimals 0.00054 and 0.00055 read
    # "0.0005" and "0.0006", two numbers that seem to disagree.
    st.caption(f"Sum of the terms: {readable_value(terms['term'].sum(), divergence=True)} nats · the model's "
               f"divergence: {readable_value(divergence, divergence=True)} nats"
               + ("" if query_tilt.exact else " (this model is smooth, so the terms are over the softmax tilt "
                                              "of the anchors in use, a stand-in)"))
    with st.expander("All the terms"):
        st.dataframe(terms, hide_index=True)
