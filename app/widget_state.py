"""A widget's value written by the page, and what the page says of it: the small writes every
check of :mod:`anchordiv.app.widget_checks` ends in (:func:`replace_value`, :func:`say`), and the
kind of value a client sent for a widget (:func:`sent_kind`), where a value of the right type sent
in another kind than the widget's own breaks it (:func:`list_kept_as_list` for a multiselect).
"""
from __future__ import annotations

import contextlib
from typing import Any

import streamlit as st

from anchordiv.app.errors import ERROR_CHARS
from anchordiv.app.session_keys import WIDGET_HELD
from anchordiv.explorer.literal import markdown_literal
from anchordiv.explorer.settings import SETTINGS


def say(note: str, box: Any) -> None:
    """``note`` (empty: nothing to say) as a warning in ``box``, drawn as text: it quotes the value."""
    if note:
        box.warning(markdown_literal(note, ERROR_CHARS))


def replace_value(key: str, value: Any) -> None:
    """Widget ``key`` holds ``value`` (before the widget is drawn this run, which then shows it).
    The value it was sent is deleted first: Streamlit keeps the kind of value a client sent (a
    number where a menu holds a text) beside it, and writing another kind over it breaks the
    widget when it is drawn."""
    state = st.session_state
    with contextlib.suppress(KeyError):
        del state[key]
    state[key] = value


def current_value(key: str, default: Any = None) -> Any:
    """What setting ``key`` of the table holds now, as it is (unchecked: the widget's own check
    judges it where it is drawn); ``default`` while it holds nothing."""
    return st.session_state.get(SETTINGS[key].key, default)


def write_values(values: dict[str, Any]) -> None:
    """Each setting of ``values`` (by its key of the table) holds its value, before its widget is
    drawn this run (a launch option, a link's encoder, the sidebar's spec strings)."""
    for key, value in values.items():
        st.session_state[SETTINGS[key].key] = value


def sent_kind(key: str) -> str | None:
    """The kind of value (a ``WidgetState`` field, e.g. ``"string_value"``) a client last sent for
    widget ``key``, as Streamlit recorded it when the value was read; ``None`` where it cannot tell.
    A text sent as a chat box's trigger value is still a text to the page, but Streamlit writes it
    back in the kind it came as, which a text box's value cannot fill: the widget then fails as it
    is drawn. Streamlit's own session state, read defensively (a release that moves it: ``None``)."""
    try:
        from streamlit.runtime.state.session_state_proxy import get_session_state

        state = get_session_state()._state
        widget_id = state._key_id_mapper.get_id_from_key(key)
        sent = state._new_widget_state.states.get(widget_id)
        if hasattr(getattr(sent, "value", None), "WhichOneof"):  # not read yet: as the client sent it
            return sent.value.WhichOneof("value")
        return getattr(state._new_widget_state.widget_metadata.get(widget_id), "value_type", None)
    except Exception:  # noqa: BLE001 - private state: any change of it means only that nothing is known
        return None


def list_kept_as_list(key: str, label: str, box: Any = st) -> None:
    """Before a multiselect ``key`` (labelled ``label``) is read or drawn: a value a client sent as
    anything but a list (a text, which Streamlit would read letter by letter or fail on) keeps what
    the menu held at its last check (else nothing) and is named."""
    if sent_kind(key) in (None, "string_array_value", "int_array_value", "double_array_value"):
        return
    held = st.session_state.get(WIDGET_HELD, {}).get(key, [])
    replace_value(key, list(held) if isinstance(held, (list, tuple)) else [])
    say(f"The menu “{label}” was sent one value where it holds a list: it keeps what it held. Choose again there.",
        box)
