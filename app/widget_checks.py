"""The widgets' values that name gallery images (the query, a match menu's pick, the marks, a
neighbour's rank, the Compare figure's rows and columns), read back through one check before
anything indexes with them.

A client may send any value for a widget, and Streamlit hands it to the page as sent: each read here
goes through :mod:`anchordiv.explorer.widget_values`, writes back what the widget could hold, and
says in a warning what it left out. Never an exception.
"""
from __future__ import annotations

from typing import Any

import streamlit as st

from anchordiv import explorer as ex
from anchordiv.app.errors import ERROR_CHARS
from anchordiv.explorer.literal import markdown_literal
from anchordiv.explorer.widget_values import Checked, gallery_ids, not_among, texts, whole_numbers

IMAGES = "the images of this gallery"


def say(note: str, box: Any) -> None:
    """``note`` (empty: nothing to say) as a warning in ``box``, drawn as text: it quotes the value."""
    if note:
        box.warning(markdown_literal(note, ERROR_CHARS))


def _written_back(key: str, checked: Checked, where: str, what: str, todo: str, box: Any) -> list:
    """What ``checked`` kept of widget ``key``'s value, written back when that differs (so the widget
    shows it, and a value written back unchanged does not override what the browser holds), and
    what it left out said in ``box``."""
    if st.session_state.get(key) != checked.kept:
        st.session_state[key] = checked.kept
    say(checked.note(where, what, todo), box)
    return checked.kept


def checked_ids(key: str, n_items: int, limit: int, where: str, todo: str, box: Any) -> list[int]:
    """The gallery ids list widget ``key`` holds: ids of a gallery of ``n_items``, each once, at most
    ``limit``; ``where`` names the widget and ``todo`` says what to do in the warning for the rest."""
    return _written_back(key, gallery_ids(st.session_state.get(key, []), n_items, limit), where, IMAGES, todo, box)


def checked_texts(key: str, limit: int, where: str, todo: str, box: Any) -> list[str]:
    """The texts list widget ``key`` holds (:func:`~anchordiv.explorer.widget_values.texts`), as
    :func:`checked_ids`; the page reads each text and names one it cannot use."""
    return _written_back(key, texts(st.session_state.get(key, []), limit), where, "the texts a figure reads", todo,
                         box)


def checked_query_id(source: ex.GallerySource, todo: str, box: Any) -> int:
    """The gallery image the page's query is (``query_id``): the gallery's default query, written
    back, while none is set or in place of a value that is not one of its ids (after a change of
    gallery, or sent by a client), which ``box`` then names, saying ``todo``."""
    state = st.session_state
    given, value = "query_id" in state, state.get("query_id")
    checked = gallery_ids([value], len(source), 1)
    if checked.kept:
        return checked.kept[0]
    state.query_id = source.default_query()
    if given:
        say(f"The query {not_among(value, f'the {len(source):,} images of this gallery')}: the page shows image "
            f"#{state.query_id} instead. {todo}", box)
    return state.query_id


def checked_rank(key: str, count: int, label: str, box: Any) -> int:
    """The rank the menu ``key`` (labelled ``label``) holds, 1 to ``count`` (the neighbours it
    lists); 1, written back and said in ``box``, in place of any other value (a rank past a smaller
    top-k, or a value a client sent)."""
    value = st.session_state.get(key, 1)
    checked = whole_numbers([value], 1, count + 1, 1)
    if checked.kept:
        return checked.kept[0]
    st.session_state[key] = 1
    say(f"“{label}”: {not_among(value, f'the {count} neighbours listed')}; the first is shown instead. Choose "
        "another in the menu.", box)
    return 1
