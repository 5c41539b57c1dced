"""The query: a gallery item (found by name, drawn at random, picked on a map or, where the source
numbers its rows, typed by row), an uploaded image or a text."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import streamlit as st

from anchordiv import explorer as ex
from anchordiv.app.cached import embed_text_query, embed_upload, encoded_thumbnails
from anchordiv.app.errors import attempt
from anchordiv.app.photo_notice import upload_notice
from anchordiv.app.session_keys import LAST_QUERY, menu_labels
from anchordiv.app.url_state import UPLOAD_NOT_LINKED
from anchordiv.app.setting_widgets import setting_widget
from anchordiv.app.widget_checks import IMAGES, checked_query_id
from anchordiv.app.widget_state import current_value, replace_value, say, write_values
from anchordiv.explorer.literal import shown, without_joiners
from anchordiv.explorer.settings import TEXT_QUERY, UPLOAD_QUERY
from anchordiv.explorer.query import another_item, distinct_captions
from anchordiv.explorer.widget_values import gallery_ids, is_whole_in, not_among

QUERY_IMAGE_WIDTH = 160
QUERY_CAPTION_KEY = "query_caption"  # what names the query on Explore, under its picture (a page hook)
NO_QUERY: tuple[None, None, None, None, str] = (None, None, None, None, "")
# (embedding (d,) or None, gallery id or None, labels or None, image or None, description)
Query = tuple[np.ndarray | None, int | None, Any, Any, str]


def caption_of(source: ex.GallerySource) -> Callable[[int], str]:
    """Item captions for a menu (plain text there, but it must be one line of valid UTF-8)."""
    return lambda item: shown(source.caption(item))


def distinct_caption_of(source: ex.GallerySource, items: list[int]) -> Callable[[int], str]:
    """Captions for a menu of ``items`` that no two options read the same (:func:`distinct_captions`:
    items sharing a caption get the labels that differ and their id), one line each."""
    captions = dict(zip(map(int, items), distinct_captions(source, items)))
    return lambda item: shown(captions[int(item)])


# The labels the match menus showed, for reading back a pick (at most this many kept).
MENU_LABELS = 2000


def match_menu(column, label: str, source: ex.GallerySource, options: list[int], *, key: str, on_change,
               placeholder: str) -> None:
    """A menu of gallery matches whose pick :func:`picked_item` reads; a value it holds that is no
    image of this gallery (a client may send any) is cleared, and said in ``column``. Its labels
    are remembered: a person may click a match of the last search while the run for a new one is on
    its way, and Streamlit then returns the clicked label, which the new options no longer hold."""
    note = pick_note(key, len(source))
    if note:
        replace_value(key, None)
        say(note, column)
    format_func = distinct_caption_of(source, options)
    labels = {**st.session_state.get(menu_labels(key), {}), **{format_func(item): int(item) for item in options}}
    st.session_state[menu_labels(key)] = dict(list(labels.items())[-MENU_LABELS:])
    column.selectbox(label, options, index=None, format_func=format_func, key=key, on_change=on_change,
                     placeholder=placeholder)


def picked_value(key: str) -> Any:
    """What the menu ``key`` (:func:`match_menu`) holds, a label it showed read as the item it named."""
    value = st.session_state.get(key)
    return st.session_state.get(menu_labels(key), {}).get(value, value) if isinstance(value, str) else value


def picked_item(key: str) -> int | None:
    """The gallery id the menu ``key`` holds: its option, or the id of a label it showed; ``None``
    when nothing is picked, or nothing that can be a gallery id (its range is the caller's to check)."""
    value = picked_value(key)
    return int(value) if is_whole_in(value, 0, math.inf) else None


def pick_note(key: str, n_items: int) -> str:
    """What is to be said of the value the menu ``key`` holds when it is no image of this gallery of
    ``n_items`` (empty when it is one, or nothing is picked)."""
    value = picked_value(key)
    if value is None or gallery_ids([value], n_items, 1).kept:
        return ""
    return f"The pick {not_among(value, IMAGES)}: it is ignored. Type a name above and choose a match."


def source_item(source: ex.GallerySource, item: int) -> Query:
    """Item ``item`` as a query: ``(embedding (d,), item, labels, image, description)``."""
    return (source.vector(item), item, source.labels_of(item), encoded_thumbnails(source)([item], QUERY_IMAGE_WIDTH)[0],
            f"#{item} {source.caption(item)}")


def choose_query(source: ex.GallerySource, encoder, notices) -> Query:
    """The query the widgets name (:func:`pick_query`); what is to be said of an upload goes to the
    container ``notices`` (wider than the query's column, where a paragraph ran a word a line).
    While "Upload" waits for its file, the last query stays, so the page keeps its results."""
    state = st.session_state
    query = pick_query(source, encoder, notices)
    if query[0] is not None:
        state[LAST_QUERY] = (source.key, query)
    elif current_value("query_upload") is None and state.get(LAST_QUERY, (None,))[0] == source.key \
            and current_value("query_mode") == UPLOAD_QUERY:
        st.caption("Showing the last query's neighbours until an image is uploaded.")
        query = state[LAST_QUERY][1]
    return query


def pick_query(source: ex.GallerySource, encoder, notices) -> Query:
    """The query the widgets name now: an upload, a text, or a gallery item (found by name, drawn
    at random or, where the source numbers its rows, typed by its row number); :data:`NO_QUERY`
    while there is none yet."""
    checked_query_id(source, "Choose another query here.", notices)
    mode = setting_widget(st, "query_mode")
    if mode == UPLOAD_QUERY:
        return upload_query(encoder, notices)
    if mode == TEXT_QUERY:
        return text_query(encoder)

    def searched() -> None:
        # Enter takes the best match at once (source.find ranks them); the menu offers the others.
        best = source.find(without_joiners(current_value("query_search")), limit=1)
        if best:
            write_values({"query_id": best[0]})
            replace_value("query_pick", best[0])

    # One above the other: side by side in the narrow query column, a 1000 px window left each a
    # few letters of its placeholder.
    needle = without_joiners(setting_widget(st, "query_search", on_change=searched))
    options = source.find(needle) if needle.strip() else []
    if needle.strip() and not options:
        st.caption("No gallery image matches.")

    def picked() -> None:
        item = picked_item("query_pick")
        if item is not None and item < len(source):  # any other value is named by the menu (match_menu)
            write_values({"query_id": item})

    pick = picked_item("query_pick")
    if pick is not None and pick < len(source) and pick != current_value("query_id"):
        # The menu shows the query or nothing: a map click or a typed row has moved the query since.
        # (A value that is no image of this gallery is named, and cleared, by the menu itself.)
        replace_value("query_pick", None)
    match_menu(st, "Matches, best first" if options else "Matches", source, options, key="query_pick",
               on_change=picked, placeholder=f"{len(options)} match(es)" if options else "search first")

    def draw_random() -> None:
        write_values({"query_id": another_item(len(source), current_value("query_id"), np.random.default_rng())})
        forget_search()

    # A short label: the query column of a 1000 px window cut "Random gallery image" to "Random gallery im…".
    st.button("Random image", key="query_random", on_click=draw_random, help="Draw a random gallery image as the query")
    if source.capabilities.row_numbers:
        def typed() -> None:
            # Checked, with any other value, by the next run's first line.
            write_values({"query_id": current_value("query_row")})

        replace_value("query_row", int(current_value("query_id")))  # follows a pick, a random draw or a link
        setting_widget(st, "query_row", label=f"Row (0 to {len(source) - 1:,})", bounds=(0, len(source) - 1),
                       on_change=typed)
    return source_item(source, int(current_value("query_id")))


def forget_search() -> None:
    """Clear the name search and its menu: they named a query that a random draw or an upload has
    replaced (a callback: the widgets are not drawn yet)."""
    replace_value("query_search", "")
    replace_value("query_pick", None)


def upload_query(encoder, notices) -> tuple[np.ndarray | None, None, None, Any, str]:
    """The uploaded query as ``(embedding (d,), None, None, image, description)``; :data:`NO_QUERY`
    while none is uploaded or when it cannot be used (an error box says why). The photo notice and
    that an upload is not in the link go to the container ``notices``."""
    upload = setting_widget(st, "query_upload", on_change=forget_search)
    if upload is None:
        st.info("Upload an image to use it as the query.")
        return NO_QUERY
    vector = attempt(lambda: embed_upload(encoder, upload.getvalue(), upload.name), "That upload cannot be used")
    if vector is None:
        return NO_QUERY
    image = ex.query_image_from_upload(upload.getvalue(), upload.name)
    with notices:
        upload_notice(encoder, upload.getvalue(), upload.name)
        st.caption(UPLOAD_NOT_LINKED)
    return vector, None, None, image, f"upload {upload.name}"


def text_query(encoder) -> tuple[np.ndarray | None, None, None, None, str]:
    """The typed text query as ``(embedding (d,), None, None, None, description)``; :data:`NO_QUERY` while blank."""
    typed = setting_widget(st, "query_text")
    text = without_joiners(typed).strip()
    if not text:
        st.warning("Type a text query.")
        return NO_QUERY
    return embed_text_query(encoder, text), None, None, None, f"text “{text}”"
