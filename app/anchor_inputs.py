"""The anchor sets A and B (a preset menu filling a text area each, and the weighting of ``p``), and
the cached geometry they make under the sidebar's settings."""
from __future__ import annotations

from typing import Any

import streamlit as st

from anchordiv import explorer as ex
from anchordiv.app.cached import get_geometry
from anchordiv.app.errors import ERROR_CHARS, attempt
from anchordiv.app.url_state import follow_view_link
from anchordiv.explorer.links import LinkField
from anchordiv.explorer.literal import markdown_literal
from anchordiv.explorer.page_state import SETTINGS


def anchor_column(column, name: str, label: str, presets: dict[str, tuple[str, ...]]) -> ex.AnchorText:
    """One anchor set: a preset menu that fills a text area (one anchor per line), and its count.
    Their values come from the session state (:func:`~anchordiv.app.url_state.follow_view_link`)."""
    text_key, preset_key = f"anchors_{name}", f"preset_{name}"

    def apply_preset() -> None:
        st.session_state[text_key] = "\n".join(presets[st.session_state[preset_key]])

    column.selectbox(f"Preset for {label}", list(presets), key=preset_key, on_change=apply_preset)
    column.text_area(f"Anchor set {label} (one per line)", key=text_key, height=160,
                     max_chars=SETTINGS[text_key].max_chars)
    parsed = ex.parse_anchor_text(st.session_state[text_key])
    (column.caption if len(parsed) else column.warning)(parsed.summary())
    return parsed


def anchor_widgets(presets: dict[str, tuple[str, ...]]) -> tuple[ex.AnchorText, ex.AnchorText, str]:
    """The anchors block of the Explore page: sets A and B side by side and the weighting of p;
    ``(parsed A, parsed B, weighting)``."""
    st.subheader("Anchors")
    col_a, col_b = st.columns(2)
    parsed_a = anchor_column(col_a, "a", "A (object)", presets)
    parsed_b = anchor_column(col_b, "b", "B (style)", presets)
    weighting = st.radio("Weights of A and B", SETTINGS["weighting"].options, horizontal=True, key="weighting",
                         format_func=str.capitalize)
    st.caption(ex.WEIGHTINGS[weighting])
    return parsed_a, parsed_b, weighting


def anchor_texts(source: ex.GallerySource) -> tuple[tuple[str, ...], tuple[str, ...], list[LinkField]]:
    """The anchor sets A and B as typed on the Explore page (or its presets), for pages that use
    them without showing them, and the view's link fields (:func:`follow_view_link`'s, for
    :func:`~anchordiv.app.url_state.publish_link`): ``(texts A, texts B, fields)``."""
    fields = follow_view_link(source)
    texts_a, texts_b = (ex.parse_anchor_text(st.session_state[f"anchors_{side}"]).anchors for side in "ab")
    return texts_a, texts_b, fields


def geometry_spec(choices: dict[str, Any], kind: str | None = None, scale: float | None = None) -> ex.GeometrySpec:
    """The sidebar's geometry, with ``kind`` and ``scale`` overridden when given (an error box and
    a stop when a value is invalid)."""
    return attempt(lambda: ex.GeometrySpec(kind=kind or choices["kind"], scale=float(scale or choices["scale"]),
                                           n_components=int(choices["n_components"]), rank=int(choices["rank"]),
                                           alpha=float(choices["alpha"]), reverse=choices["reverse"]),
                   "Invalid geometry", stop=True)


def geometry_for(choices: dict[str, Any], source: ex.GallerySource, encoder, texts_a: tuple[str, ...],
                 texts_b: tuple[str, ...], kind: str | None = None, scale: float | None = None) -> ex.ExplorerGeometry:
    """The cached geometry of anchor sets A and B over ``source`` under the sidebar's settings
    (``kind`` and ``scale`` override them); an error box and a stop when it cannot be built."""
    spec = geometry_spec(choices, kind, scale)
    return fitted_geometry(source, encoder, texts_a, texts_b, spec, ex.parse_anchor_text(choices["prior_text"]).anchors)


def fitted_geometry(source: ex.GallerySource, encoder, texts_a: tuple[str, ...], texts_b: tuple[str, ...],
                    spec: ex.GeometrySpec, prior: tuple[str, ...]) -> ex.ExplorerGeometry:
    """The cached geometry of A and B over ``source`` under ``spec`` and ``prior``, its notes shown;
    an error box and a stop when it cannot be built."""
    geometry = attempt(lambda: get_geometry(source, encoder, tuple(texts_a), tuple(texts_b), spec, prior),
                       "Cannot build the geometry", stop=True)
    for note in geometry.notes:
        st.info(markdown_literal(note, ERROR_CHARS))
    return geometry


def geometry_and_key(choices: dict[str, Any], source: ex.GallerySource, encoder, parsed_a: ex.AnchorText,
                     parsed_b: ex.AnchorText) -> tuple[ex.ExplorerGeometry, str]:
    """The cached geometry of A and B under the sidebar's settings, and the key that names it (for
    the caches of its sliders and projections)."""
    spec = geometry_spec(choices)
    prior = ex.parse_anchor_text(choices["prior_text"]).anchors
    geometry = fitted_geometry(source, encoder, parsed_a.anchors, parsed_b.anchors, spec, prior)
    return geometry, ex.projection_key(source.key, encoder.name, parsed_a.anchors, parsed_b.anchors, spec, prior)
