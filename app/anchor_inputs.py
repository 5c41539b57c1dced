"""The anchor sets A and B (a preset menu filling a text area each, the prompt templates each is
encoded through, each set's download and upload, and the weighting of ``p``), and the cached
geometry they make under the sidebar's settings. A set may be weighted (``term<TAB>weight`` lines,
:func:`~anchordiv.explorer.parse_anchor_text`): its weights travel with its terms to the geometry
and its cache keys."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import streamlit as st

from anchordiv import explorer as ex
from anchordiv.app.cached import get_geometry, source_presets
from anchordiv.app.errors import ERROR_CHARS, attempt
from anchordiv.app.session_keys import upload_problem
from anchordiv.app.setting_widgets import setting_widget
from anchordiv.app.url_state import follow_view_link, part_settings
from anchordiv.app.widget_checks import checked_settings, checked_widget
from anchordiv.app.widget_state import current_value, replace_value, write_values
from anchordiv.explorer.anchors import OWN_LIST, menu_name, preset_label
from anchordiv.explorer.links import LinkField
from anchordiv.explorer.literal import markdown_literal, without_joiners
from anchordiv.explorer.settings import SET_LABELS, SETTINGS, VIEW, anchor_set_key
from anchordiv.explorer.sidebar_state import SidebarState
from anchordiv.explorer.widget_values import Allowed
from anchordiv.prompts import AUTO, CUSTOM, TEMPLATE_SETS, TemplateChoice, default_choice, template_choice

# What to do about a value of the anchor sets refused on a page that uses them without their widgets.
ELSEWHERE = "Choose it on the Explore page."


def anchor_column(column, name: str, label: str, presets: dict[str, tuple[str, ...]], encoder,
                  columns: dict[str, str]) -> ex.AnchorText:
    """One anchor set: a preset menu that fills a text area (one anchor per line, or ``term<TAB>weight``
    per line for a weighted set), its count, and in an expander the prompt templates it is encoded
    through (:func:`template_widgets`) and its export and reload (:func:`file_widgets`). Their values come from the session
    state (:func:`~anchordiv.app.url_state.follow_view_link`). A set whose weights are not usable is
    said in an error box and used as empty."""
    text_key, preset_key = anchor_set_key("anchors", name), anchor_set_key("preset", name)

    def apply_preset() -> None:
        # A callback runs before the page: a value that is no preset (a client may send any) is left
        # for the menu's check to name.
        chosen = current_value(preset_key)
        if isinstance(chosen, str) and chosen in presets:
            replace_value(text_key, "\n".join(presets[chosen]))

    chosen = checked_preset(name, presets, column)
    text = checked_widget("text_area", SETTINGS[text_key].label, text_key, Allowed.text(), column,
                          default="\n".join(presets[chosen]) if chosen in presets else "")
    read_from = columns.get(chosen)
    shown = preset_label(chosen, text, presets)  # "Your own" once edited
    said = ([f"Edited from {markdown_literal(chosen)}."] if shown == OWN_LIST else []) + \
        ([f"Read from {markdown_literal(read_from)}."] if read_from else [])
    setting_widget(column, preset_key, options=list(presets), on_change=apply_preset,
                   format_func=lambda name: shown if name == chosen else menu_name(name), help=" ".join(said) or None)
    setting_widget(column, text_key)
    parsed = parsed_set(name, column)
    summary = column.container()  # the count and the templates in use, above the expander that sets them
    box = column.expander(f"Templates, save or load set {label[0]}", key=f"save_load_open_{name}", on_change="rerun")
    choice = template_widgets(box, name, label, encoder, summary)
    if parsed is not None:
        encoded = f" · encoded as {markdown_literal(choice.label)}" if choice is not None else ""
        weighted = " · ITI uses its terms without the weights" if parsed.weights is not None else ""
        (summary.caption if len(parsed) else summary.warning)(parsed.summary() + encoded + weighted)
    file_widgets(box, name, parsed)
    return parsed if parsed is not None else ex.AnchorText(())


def parsed_set(name: str, box=st) -> ex.AnchorText | None:
    """Set ``name`` (``"a"`` or ``"b"``) as its text area holds it; ``None`` and an error box in
    ``box`` when its weights are not usable (the set is then not used)."""
    try:
        return ex.parse_anchor_text(current_value(anchor_set_key("anchors", name)))
    except ValueError as error:
        box.error(markdown_literal(f"Anchor set {name.upper()} is not used: {error}", ERROR_CHARS))
        return None


def file_widgets(box, name: str, parsed: ex.AnchorText | None) -> None:
    """Set ``name``'s export (its text in use, :meth:`~anchordiv.explorer.AnchorText.text`, as a
    ``.tsv`` file) and reload (a UTF-8 file of at most
    :data:`~anchordiv.explorer.anchors.MAX_ANCHOR_FILE_BYTES` bytes, into the text area through
    :func:`load_file`; a file that cannot be used leaves the text as it was and says why), in the
    expander ``box``."""
    letter = name.upper()
    # Drawn only while open: an uploader and a download button cost the browser on every rerun.
    if not box.open:
        return
    with box:
        text = parsed.text() if parsed is not None else ""
        st.download_button(f"Download set {letter}", lambda: text.encode("utf-8"),
                           f"anchor-set-{name}.tsv", "text/tab-separated-values", key=f"download_anchors_{name}",
                           disabled=parsed is None or not len(parsed))
        setting_widget(st, anchor_set_key("upload_anchors", name), on_change=load_file, args=(name,))
        problem = st.session_state.get(upload_problem(name))
        if problem is not None:
            st.error(markdown_literal(problem, ERROR_CHARS))


def load_file(name: str) -> None:
    """The uploader's callback (a widget's value may be set only before it is drawn): the file's
    text becomes set ``name``'s, or its problem is kept for :func:`file_widgets` to say."""
    state, anchors_key = st.session_state, anchor_set_key("anchors", name)
    upload, problem_key = current_value(anchor_set_key("upload_anchors", name)), upload_problem(name)
    state.pop(problem_key, None)
    if upload is None:  # the file was taken away: the set keeps its text
        return
    try:
        write_values({anchors_key: ex.anchor_file_text(upload.getvalue(), SETTINGS[anchors_key].max_chars)})
    except ValueError as error:
        state[problem_key] = f"{upload.name} is not loaded, and set {name.upper()} is as it was: {error}"


def template_widgets(column, name: str, label: str, encoder, errors) -> TemplateChoice | None:
    """The prompt templates of set ``name`` in ``column``: a menu ("auto" names the model's default)
    and, for one's own, a text area (one template per line, ``{}`` where the anchor goes); the
    choice, or ``None`` and an error box in ``errors`` when one's own templates are not usable."""
    menu_key, own_key = anchor_set_key("templates", name), anchor_set_key("own_templates", name)
    default = TEMPLATE_SETS[default_choice(encoder).name]  # short: a menu shows its value on one line
    menu = setting_widget(column, menu_key,
                          format_func=lambda option: f"auto = {default}" if option == AUTO else TEMPLATE_SETS[option])
    if menu == CUSTOM:
        setting_widget(column, own_key)
    else:  # not drawn, yet read below
        checked_widget("text_area", SETTINGS[own_key].label, own_key, Allowed.text(), column)
    try:
        return set_templates(name, encoder)
    except ValueError as error:
        errors.error(markdown_literal(f"Set {name.upper()}'s own templates are not used: {error}", ERROR_CHARS))
        return None


def set_templates(name: str, encoder) -> TemplateChoice:
    """The templates of set ``name`` (``"a"`` or ``"b"``) as the session state holds them;
    ``ValueError`` for unusable own templates."""
    return template_choice(current_value(anchor_set_key("templates", name)),
                           without_joiners(current_value(anchor_set_key("own_templates", name))), encoder)


def anchor_templates(encoder, shown: bool = False) -> tuple[TemplateChoice, TemplateChoice]:
    """The templates of sets A and B; a stop when one set's own templates are not usable, after an
    error box unless :func:`template_widgets` has ``shown`` it on this page already."""
    try:
        return set_templates("a", encoder), set_templates("b", encoder)
    except ValueError as error:
        if not shown:
            st.error(markdown_literal(f"The anchor sets' own templates are not usable: {error}", ERROR_CHARS))
        st.stop()


def anchor_widgets(box, presets: dict[str, tuple[str, ...]], encoder,
                   columns: dict[str, str]) -> tuple[ex.AnchorText, ex.AnchorText]:
    """The anchors block of the Explore page in the container ``box`` (the sidebar's top, beside
    the grids): set A above set B (with their templates for ``encoder``; each preset menu's help
    says which label column of ``columns`` a gallery preset reads) and the weighting of p;
    ``(parsed A, parsed B)``."""
    box.subheader("Anchors")
    parsed_a, parsed_b = (anchor_column(box, side, label, presets, encoder, columns)
                          for side, label in SET_LABELS.items())
    box.caption(ex.WEIGHTING_HELP[setting_widget(box, "weighting")])
    return parsed_a, parsed_b


def anchor_sets(source: ex.GallerySource) -> tuple[ex.AnchorText, ex.AnchorText, list[LinkField], Any]:
    """The anchor sets A and B as typed on the Explore page (or its presets), weights included, for
    pages that use them without showing them (a set whose weights are not usable is said in an
    error box and used as empty), the view's link fields (:func:`follow_view_link`'s, for
    :func:`~anchordiv.app.url_state.publish_link`) and the view's settings (query, anchors, p and
    their weighting), each checked as its widget would, read once for this run
    (:func:`~anchordiv.app.url_state.part_settings`): ``(set A, set B, fields, view)``."""
    fields = view_link(source, ELSEWHERE)
    presets = source_presets(source)
    checked_settings([*(anchor_set_key(name, side) for name in ("anchors", "templates", "own_templates")
                        for side in SET_LABELS), "weighting", "query_mode", "query_text"], ELSEWHERE,
                     defaults={anchor_set_key("anchors", side): "\n".join(presets[current_value(anchor_set_key(
                         "preset", side))]) for side in SET_LABELS})
    set_a, set_b = (parsed_set(side) or ex.AnchorText(()) for side in "ab")
    return set_a, set_b, fields, part_settings(VIEW)


def checked_preset(name: str, presets: dict[str, tuple[str, ...]], box, todo: str | None = None) -> str:
    """The preset set ``name``'s menu holds (:func:`~anchordiv.app.widget_checks.checked_widget`:
    a value that is none of ``presets``, sent by a client, is named in ``box`` and the menu keeps
    its last preset). One the menu held on another gallery is left for the page to map to its
    stand-in (:func:`~anchordiv.app.url_state.refresh_presets`)."""
    key = anchor_set_key("preset", name)
    return checked_widget("selectbox", SETTINGS[key].label, key, Allowed.choice(presets), box,
                          fallback=next(iter(presets)), shown=menu_name, todo=todo)


def view_link(source: ex.GallerySource, todo: str | None = None, box=st) -> list[LinkField]:
    """:func:`~anchordiv.app.url_state.follow_view_link`, the preset menus' values checked first
    (:func:`checked_preset`: it would take any value for the first preset without a word), and p
    (no widget's: the p player's, which the page reads from the state), their warnings in ``box``
    saying ``todo``."""
    presets = source_presets(source)
    for side in SET_LABELS:
        checked_preset(side, presets, box, todo)
    checked_settings(["p"], todo or "Use the p slider to change it.", box)
    return follow_view_link(source)


def prior_texts(prior_text: str) -> tuple[str, ...]:
    """The sidebar's prior anchor set (for the posterior kinds); an error box and a stop when it
    has weights (a posterior model weighs its prior by its own rule)."""
    def unweighted() -> tuple[str, ...]:
        prior = ex.parse_anchor_text(prior_text)
        if prior.weights is not None:
            raise ValueError("the prior set takes no weights; give one anchor per line, without a tab")
        return prior.anchors

    return attempt(unweighted, "The prior anchor set is not used", stop=True)


def column_spec(sidebar: SidebarState, kind: str, scale: float) -> ex.GeometrySpec:
    """The sidebar's geometry with a figure column's anchor model and scale (an error box and a
    stop when they are invalid)."""
    return attempt(lambda: replace(sidebar.geometry, kind=kind, scale=float(scale)), "Invalid geometry", stop=True)


def geometry_for(sidebar: SidebarState, source: ex.GallerySource, encoder, set_a: ex.AnchorText,
                 set_b: ex.AnchorText, spec: ex.GeometrySpec | None = None) -> ex.ExplorerGeometry:
    """The cached geometry of anchor sets A and B (through their templates, with their weights)
    over ``source`` under the sidebar's settings (or ``spec``: a figure column's,
    :func:`column_spec`); an error box and a stop when it cannot be built."""
    return fitted_geometry(source, encoder, set_a, set_b, spec or sidebar.geometry,
                           prior_texts(sidebar.settings.prior_anchors),
                           anchor_templates(encoder))


def fitted_geometry(source: ex.GallerySource, encoder, set_a: ex.AnchorText, set_b: ex.AnchorText,
                    spec: ex.GeometrySpec, prior: tuple[str, ...],
                    templates: tuple[TemplateChoice, TemplateChoice]) -> ex.ExplorerGeometry:
    """The cached geometry of A and B (through ``templates``; a weighted set is the empirical model
    with its weights) over ``source`` under ``spec`` and ``prior`` (through the model's default
    templates), its notes shown; an error box and a stop when it cannot be built."""
    geometry = attempt(lambda: get_geometry(source, encoder, set_a.anchors, set_b.anchors, spec, prior, templates,
                                            default_choice(encoder), (set_a.weights, set_b.weights)),
                       "Cannot build the geometry", stop=True)
    for note in geometry.notes:
        st.info(markdown_literal(note, ERROR_CHARS))
    return geometry


def geometry_and_key(sidebar: SidebarState, source: ex.GallerySource, encoder, parsed_a: ex.AnchorText,
                     parsed_b: ex.AnchorText) -> tuple[ex.ExplorerGeometry, str]:
    """The cached geometry of A and B under the sidebar's settings and the templates their widgets
    show, and the key that names it (anchors and their weights, model, templates: for the caches
    of its sliders and projections)."""
    spec, prior = sidebar.geometry, prior_texts(sidebar.settings.prior_anchors)
    templates = anchor_templates(encoder, shown=True)
    geometry = fitted_geometry(source, encoder, parsed_a, parsed_b, spec, prior, templates)
    return geometry, ex.projection_key(source.key, encoder.name, parsed_a.anchors, parsed_b.anchors, spec, prior,
                                       *(choice.token for choice in templates), parsed_a.weights, parsed_b.weights)
