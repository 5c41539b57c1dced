"""The anchor sets A and B (a preset menu filling a text area each, the prompt templates each is
encoded through, and the weighting of ``p``), and the cached geometry they make under the sidebar's
settings."""
from __future__ import annotations

from typing import Any

import streamlit as st

from anchordiv import explorer as ex
from anchordiv.app.cached import get_geometry
from anchordiv.app.errors import ERROR_CHARS, attempt
from anchordiv.app.url_state import follow_view_link
from anchordiv.explorer.links import LinkField
from anchordiv.explorer.literal import markdown_literal
from anchordiv.explorer.page_state import SETTINGS, TEMPLATE_OPTIONS
from anchordiv.prompts import AUTO, CUSTOM, TEMPLATE_SETS, TemplateChoice, default_choice, template_choice


def anchor_column(column, name: str, label: str, presets: dict[str, tuple[str, ...]], encoder,
                  sources: dict[str, str]) -> ex.AnchorText:
    """One anchor set: a preset menu that fills a text area (one anchor per line), the prompt
    templates it is encoded through (:func:`template_widgets`), and its count. Their values come
    from the session state (:func:`~anchordiv.app.url_state.follow_view_link`)."""
    text_key, preset_key = f"anchors_{name}", f"preset_{name}"

    def apply_preset() -> None:
        st.session_state[text_key] = "\n".join(presets[st.session_state[preset_key]])

    source = sources.get(st.session_state.get(preset_key))
    column.selectbox(f"Preset for {label}", list(presets), key=preset_key, on_change=apply_preset,
                     help=f"Read from {markdown_literal(source)}." if source else None)
    column.text_area(f"Anchor set {label} (one per line)", key=text_key, height=160,
                     max_chars=SETTINGS[text_key].max_chars)
    parsed = ex.parse_anchor_text(st.session_state[text_key])
    choice = template_widgets(column, name, label, encoder)
    encoded = f" · encoded as {markdown_literal(choice.label)}" if choice is not None else ""
    (column.caption if len(parsed) else column.warning)(parsed.summary() + encoded)
    return parsed


def template_widgets(column, name: str, label: str, encoder) -> TemplateChoice | None:
    """The prompt templates of set ``name``: a menu ("auto" names the model's default) and, for
    one's own, a text area (one template per line, ``{}`` where the anchor goes); the choice, or
    ``None`` and an error box under them when one's own templates are not usable."""
    menu_key, own_key = f"templates_{name}", f"own_templates_{name}"
    default = default_choice(encoder).label
    column.selectbox(f"Prompt templates for {label}", TEMPLATE_OPTIONS, key=menu_key,
                     format_func=lambda option: f"auto: {default}" if option == AUTO else TEMPLATE_SETS[option],
                     help="Each anchor is encoded through these templates, and the unit embeddings averaged and "
                          "normalised, as CLIP zero-shot does. auto: none for the built-in model (its own captions), "
                          "'a photo of a {}.' for CLIP models.")
    if st.session_state[menu_key] == CUSTOM:
        column.text_area(f"Own templates for {label} (one per line, {{}} where the anchor goes)", key=own_key,
                         height=100, max_chars=SETTINGS[own_key].max_chars)
    try:
        return set_templates(name, encoder)
    except ValueError as error:
        column.error(markdown_literal(f"These templates are not used: {error}", ERROR_CHARS))
        return None


def set_templates(name: str, encoder) -> TemplateChoice:
    """The templates of set ``name`` (``"a"`` or ``"b"``) as the session state holds them;
    ``ValueError`` for unusable own templates."""
    state = st.session_state
    return template_choice(state[f"templates_{name}"], state[f"own_templates_{name}"], encoder)


def anchor_templates(encoder, shown: bool = False) -> tuple[TemplateChoice, TemplateChoice]:
    """The templates of sets A and B; a stop when one set's own templates are not usable, after an
    error box unless :func:`template_widgets` has ``shown`` it on this page already."""
    try:
        return set_templates("a", encoder), set_templates("b", encoder)
    except ValueError as error:
        if not shown:
            st.error(markdown_literal(f"The anchor sets' own templates are not usable: {error}", ERROR_CHARS))
        st.stop()


def anchor_widgets(presets: dict[str, tuple[str, ...]], encoder,
                   sources: dict[str, str]) -> tuple[ex.AnchorText, ex.AnchorText, str]:
    """The anchors block of the Explore page: sets A and B side by side (with their templates for
    ``encoder``; each preset menu's help says which label column ``sources`` a gallery preset
    reads) and the weighting of p; ``(parsed A, parsed B, weighting)``."""
    st.subheader("Anchors")
    col_a, col_b = st.columns(2)
    parsed_a = anchor_column(col_a, "a", "A (object)", presets, encoder, sources)
    parsed_b = anchor_column(col_b, "b", "B (style)", presets, encoder, sources)
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
    """The cached geometry of anchor sets A and B (through their templates) over ``source`` under
    the sidebar's settings (``kind`` and ``scale`` override them); an error box and a stop when it
    cannot be built."""
    spec = geometry_spec(choices, kind, scale)
    return fitted_geometry(source, encoder, texts_a, texts_b, spec, ex.parse_anchor_text(choices["prior_text"]).anchors,
                           anchor_templates(encoder))


def fitted_geometry(source: ex.GallerySource, encoder, texts_a: tuple[str, ...], texts_b: tuple[str, ...],
                    spec: ex.GeometrySpec, prior: tuple[str, ...],
                    templates: tuple[TemplateChoice, TemplateChoice]) -> ex.ExplorerGeometry:
    """The cached geometry of A and B (through ``templates``) over ``source`` under ``spec`` and
    ``prior`` (through the model's default templates), its notes shown; an error box and a stop
    when it cannot be built."""
    geometry = attempt(lambda: get_geometry(source, encoder, tuple(texts_a), tuple(texts_b), spec, prior, templates,
                                            default_choice(encoder)),
                       "Cannot build the geometry", stop=True)
    for note in geometry.notes:
        st.info(markdown_literal(note, ERROR_CHARS))
    return geometry


def geometry_and_key(choices: dict[str, Any], source: ex.GallerySource, encoder, parsed_a: ex.AnchorText,
                     parsed_b: ex.AnchorText) -> tuple[ex.ExplorerGeometry, str]:
    """The cached geometry of A and B under the sidebar's settings and the templates their widgets
    show, and the key that names it (for the caches of its sliders and projections)."""
    spec = geometry_spec(choices)
    prior = ex.parse_anchor_text(choices["prior_text"]).anchors
    templates = anchor_templates(encoder, shown=True)
    geometry = fitted_geometry(source, encoder, parsed_a.anchors, parsed_b.anchors, spec, prior, templates)
    return geometry, ex.projection_key(source.key, encoder.name, parsed_a.anchors, parsed_b.anchors, spec, prior,
                                       *(choice.token for choice in templates))
