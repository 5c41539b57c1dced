"""Compare: the figure builder. Rows are queries, columns are geometries, each cell the query's top-k
under that geometry (the paper's Figs. 1 and 8, made interactive), exported as PNG, PDF or SVG.

The rows and columns are plain text specs (:mod:`anchordiv.figure`) kept in the settings
``compare_rows`` and ``compare_columns`` (lists of strings); an uploaded
query is the row ``upload:<name>``, its bytes kept under
:data:`~anchordiv.app.session_keys.COMPARE_UPLOADS`. The anchor sets are
the Explore page's; the model, scale and direction are the sidebar's, and a column may override the
model and scale (``A model=gaussian s=20``)."""
from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import streamlit as st

from anchordiv import explorer as ex
from anchordiv import figure as fg
from anchordiv.app import cached
from anchordiv.app.anchor_inputs import anchor_sets, anchor_templates, column_spec, geometry_for, prior_texts
from anchordiv.app.compare_columns import column_models, embedders
from anchordiv.app.compare_preview import show_preview
from anchordiv.app.errors import ERROR_CHARS, attempt
from anchordiv.app.encoder_choice import load_encoder_for
from anchordiv.app.query_inputs import match_menu, picked_item
from anchordiv.app.session_keys import COMPARE_COLUMN_ERROR, COMPARE_ROWS_FROM, COMPARE_ROWS_FULL, COMPARE_UPLOADS
from anchordiv.app.sidebar import load_gallery_for, sidebar_state
from anchordiv.app.setting_widgets import setting_widget
from anchordiv.app.url_state import follow_link, link_notes, part_settings, publish_link, share_box, sidebar_fields
from anchordiv.app.widget_checks import checked_query_id, checked_texts
from anchordiv.app.widget_state import current_value, list_kept_as_list, replace_value, write_values
from anchordiv.explorer import limits, links
from anchordiv.explorer.literal import markdown_literal, without_joiners
from anchordiv.explorer.settings import COMPARE, SETTINGS, TEXT_QUERY, anchor_set_key
from anchordiv.explorer.sidebar_state import SidebarState
from anchordiv.prompts import AUTO

ROWS, COLUMNS = SETTINGS["compare_rows"], SETTINGS["compare_columns"]
LIMITS = fg.DEFAULT_LIMITS  # rows, columns and top-k per cell; a link past them opens with the defaults


# -- rows -----------------------------------------------------------------------------------------
def explore_rows(source: ex.MemorySource, view: Any) -> list[str]:
    """The rows the figure starts from: the query the visitor was exploring (the Explore page's
    ``view``, as this session or the link left it: its text, or its gallery image; an upload stays
    on Explore, which the page's own uploader takes). Rows the visitor has not changed since the
    last Explore query gave them follow the next one."""
    state = st.session_state
    text = " ".join(without_joiners(view.query_text).split())
    if view.query_mode == TEXT_QUERY and text:
        rows = [str(fg.QueryRow("text", text))]
    else:
        rows = [f"#{checked_query_id(source, 'Choose the query on the Explore page.', st)}"]
    held = current_value(ROWS.key)
    if held is not None and held == state.get(COMPARE_ROWS_FROM):
        write_values({ROWS.key: rows})
    state[COMPARE_ROWS_FROM] = rows
    return rows


def add_row(spec: str) -> None:
    """Append ``spec`` to the rows (a callback: it runs before the rows' widget is drawn), unless
    the figure has as many as it may (then say so below the rows)."""
    rows = current_value(ROWS.key)
    if len(rows) >= LIMITS.rows:
        st.session_state[COMPARE_ROWS_FULL] = True
    elif spec not in rows:
        replace_value(ROWS.key, [*rows, spec])


def add_random() -> None:
    add_row(str(fg.QueryRow("random", int(np.random.default_rng().integers(1_000_000)))))


def add_picked(n_items: int) -> None:
    picked = picked_item("compare_pick")
    if picked is not None and picked < n_items:  # any other value stays, for the menu to name (match_menu)
        add_row(str(fg.QueryRow("id", picked)))
        replace_value("compare_pick", None)  # the menu's own key, which may hold a value of another kind


def add_text() -> None:
    text = " ".join(without_joiners(current_value("compare_text", "")).split())
    if text:
        add_row(str(fg.QueryRow("text", text)))
        replace_value("compare_text", "")


def add_upload() -> None:
    upload = current_value("compare_upload")
    if upload is not None:
        st.session_state[COMPARE_UPLOADS] = {**st.session_state[COMPARE_UPLOADS], upload.name: upload.getvalue()}
        add_row(str(fg.QueryRow("upload", upload.name)))


def row_controls(source: ex.MemorySource) -> None:
    """The rows as an editable list (remove with ✕, or type a spec), and the ways to add one."""
    setting_widget(st, ROWS.key, options=current_value(ROWS.key))
    if st.session_state.pop(COMPARE_ROWS_FULL, False):
        st.warning(f"A figure has at most {LIMITS.rows} query rows: remove one (✕) before adding another.")
    by_name, by_text, by_file = st.columns(3)
    needle = without_joiners(setting_widget(by_name, "compare_search"))
    matches = source.find(needle) if needle.strip() else []
    match_menu(by_name, SETTINGS["compare_pick"].label, source, matches, key="compare_pick",
               on_change=partial(add_picked, len(source)),
               placeholder=f"{len(matches)} match(es)" if matches else "search first")
    by_name.button("Add a random image", key="compare_add_random", on_click=add_random,
                   help="Add a random gallery image as a row")
    setting_widget(by_text, "compare_text")
    by_text.button("Add the text query", key="compare_add_text", on_click=add_text)
    setting_widget(by_file, "compare_upload", on_change=add_upload)


def usable_rows(source: ex.MemorySource, encoder, specs: tuple[str, ...]) -> list[fg.QueryRow]:
    """The rows of ``specs`` that parse and resolve; an error box for each that does not (it stays in the list)."""
    rows = []
    for spec in specs:
        row = attempt(lambda: fg.parse_query_row(limits.checked_length(spec)), f"Row {spec!r} is left out")
        if row is not None and attempt(lambda: fg.resolve_queries([row], source.gallery, encoder, st.session_state[COMPARE_UPLOADS],
                                                                  *embedders(encoder)), f"Row {spec!r} is left out"):
            rows.append(row)
    return rows


# -- columns --------------------------------------------------------------------------------------
def add_custom_column() -> None:
    """Append the typed column when it parses; otherwise keep it in the box and say why (below it)."""
    text, columns = current_value("compare_custom"), current_value(COLUMNS.key)
    if not isinstance(text, str):  # a client may send any value: the box's check names it
        return
    try:
        column = fg.parse_geometry_column(limits.checked_length(text))
        if len(columns) >= LIMITS.columns:
            raise ValueError(f"a figure has at most {LIMITS.columns} geometry columns: remove one (✕) first")
    except ValueError as error:
        st.session_state[COMPARE_COLUMN_ERROR] = f"Column {text!r} is not added: {error}"
        return
    st.session_state[COMPARE_COLUMN_ERROR] = None
    if str(column) not in columns:
        replace_value(COLUMNS.key, [*columns, str(column)])
    replace_value("compare_custom", "")


def column_controls() -> None:
    setting_widget(st, COLUMNS.key)
    setting_widget(st, "compare_custom", on_change=add_custom_column)
    if st.session_state.get(COMPARE_COLUMN_ERROR):
        st.error(markdown_literal(st.session_state[COMPARE_COLUMN_ERROR], ERROR_CHARS))


def usable_columns(specs: tuple[str, ...]) -> list[fg.GeometryColumn]:
    parsed = [attempt(lambda: fg.parse_geometry_column(limits.checked_length(spec)), f"Column {spec!r} is left out")
              for spec in specs]
    return [column for column in parsed if column is not None]


# -- the figure -----------------------------------------------------------------------------------
def unresolved_templates(encoder, view: Any) -> tuple:
    """The templates of sets A and B as chosen in ``view``, "auto" kept, for
    :func:`anchordiv.figure.compare`: each encoder of the figure resolves it to its own default (an
    error box and a stop for unusable own templates)."""
    chosen = anchor_templates(encoder)
    return tuple(AUTO if getattr(view, anchor_set_key("templates", name)) == AUTO else choice
                 for name, choice in zip("ab", chosen))


def downloads(result: fg.CompareResult) -> None:
    """The figure as PNG (200 dpi), PDF and SVG (vector), and its neighbours as CSV; each built when clicked."""
    kinds = {"png": ("PNG", "image/png"), "pdf": ("PDF", "application/pdf"), "svg": ("SVG", "image/svg+xml")}
    columns = st.columns(len(kinds) + 1)
    for column, (form, (label, mime)) in zip(columns, kinds.items()):
        column.download_button(f"Download {label}", lambda form=form: fg.render_figure(result, form),
                               f"anchordiv-figure.{form}", mime, key=f"compare_download_{form}")
    columns[-1].download_button("Download CSV", lambda: result.frame().to_csv(index=False).encode(),
                                "anchordiv-figure.csv", "text/csv", key="compare_download_csv")


def main(sidebar: SidebarState) -> None:
    encoder = load_encoder_for(sidebar.encoder)
    source = cached.memory_source(load_gallery_for(sidebar.gallery, encoder))
    set_a, set_b, view_link, view = anchor_sets(source)
    texts_a, texts_b = set_a.anchors, set_b.anchors  # the terms: the figure's captions and ITI
    state = st.session_state
    for setting in (ROWS, COLUMNS):
        list_kept_as_list(setting.key, setting.label)  # before anything reads them
    page_fields = links.compare_fields(explore_rows(source, view))
    follow_link(page_fields, COMPARE)
    link_notes()
    state.setdefault(COMPARE_UPLOADS, {})
    # Each a list of texts, each once (a link may repeat one), at most as many as the figure takes.
    checked_texts(ROWS.key, LIMITS.rows, "“Queries (rows)”", "Type a row or add one below.", st)
    checked_texts(COLUMNS.key, LIMITS.columns, "“Geometries (columns)”", "Choose or type a column.", st)

    st.title("Compare geometries")
    share_slot = st.container()  # the link, once the controls below have settled the state
    st.caption(f"Each row is a query, each column a geometry, each cell the query's top-k. Anchor sets from the "
               f"Explore page: A has {set_a.count_text()}, B {set_b.count_text()}; model, scale and direction from the "
               "sidebar unless a column sets its own (a weighted set is always the empirical model with its "
               "weights; ITI uses the terms alone).")
    row_controls(source)
    column_controls()
    k_col, weighting_col = st.columns([1, 3])
    setting_widget(k_col, "compare_k")
    setting_widget(weighting_col, "compare_weighting")
    figure = part_settings(COMPARE)  # its widgets drawn, so checked
    fields = sidebar_fields() + view_link + page_fields
    publish_link(fields, source)
    with share_slot:
        share_box(fields, source)
    rows = usable_rows(source, encoder, figure.compare_rows)
    columns, models = column_models(sidebar, usable_columns(figure.compare_columns), set_a, set_b, LIMITS)
    if not rows or not columns:
        st.info("Add at least one query row and one geometry column to draw the figure.")
        return
    embed_text, embed_image = embedders(encoder)
    templates = unresolved_templates(encoder, view)
    result = attempt(lambda: fg.compare(
        source.gallery, encoder, rows, columns, texts_a, texts_b, figure.compare_k, sidebar.geometry,
        figure.compare_weighting,
        prior_texts=prior_texts(sidebar.settings.prior_anchors),
        geometry_for=lambda kind, scale: geometry_for(sidebar, source, encoder, set_a, set_b,
                                                      column_spec(sidebar, kind, scale)),
        baseline_for=lambda kind: cached.get_baseline(kind, source, encoder,
                                                      tuple(zip((texts_a, texts_b), anchor_templates(encoder)))),
        images=state[COMPARE_UPLOADS], embed_text=embed_text, embed_image=embed_image, templates=templates,
        model_for=lambda spec, pretrained: models[spec, pretrained],
        anchor_weights=(set_a.weights, set_b.weights)),
        "Cannot build the figure")
    if result is None:
        return
    show_preview(result)
    st.caption("Green frame (obj): same object as the query · orange frame (sty): same style. "
               + " · ".join(markdown_literal(line) for line in result.settings.lines()))
    downloads(result)
    with st.expander("Neighbour table"):
        st.dataframe(result.frame(), hide_index=True)


main(sidebar_state())
