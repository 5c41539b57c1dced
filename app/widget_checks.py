"""Every widget's value, read back through one check before anything uses it.

A client may send any value for a widget, and Streamlit hands it to the page as sent: a menu's text
that is none of its options, a number where a radio holds a text, a list where a text box holds a
text, ids out of range, a million of them. So the pages draw their widgets through this module,
which reads each value through :mod:`anchordiv.explorer.widget_values` first:

* a widget of one value (a radio or a menu, a slider or a number box, a text box, a checkbox:
  :func:`choice_widget`, :func:`number_widget`, :func:`text_widget`, :func:`flag_widget`) takes
  the widget's own arguments and draws it; a value it cannot hold is replaced by the value it held
  before (or its default), and a warning beside it names the value, shortened, as text
  (:func:`checked_value`);
* the widgets that name gallery images (the query, a match menu's pick, the marks, a neighbour's
  rank, the Compare figure's rows and columns) keep what they could hold and name the rest
  (:func:`checked_ids`, :func:`checked_texts`, :func:`checked_query_id`, :func:`checked_rank`), as
  does a list of fixed options (:func:`checked_choices`);
* a setting read from the session state where its widget is not drawn (Learn reads Explore's p)
  goes through the same check, by the table of settings (:func:`checked_settings`).

What a widget keeps is written back (:func:`replace_value`), so it shows what the page uses. Never
an exception. Streamlit reads a value first, before the page runs (a number box's text, a value
that is not JSON): what it cannot read fails there, where no page code runs (docs/design.md §13).
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

import streamlit as st

from anchordiv import explorer as ex
from anchordiv.app.session_keys import WIDGET_HELD
from anchordiv.app.widget_state import replace_value, say, sent_kind
from anchordiv.explorer.settings import SETTINGS
from anchordiv.explorer.widget_values import (FLAG, NUMBER, REFUSED, TEXT, Allowed, Checked, checked_values,
                                              gallery_ids, named, not_among, refused_note, same_value, texts,
                                              whole_numbers)

IMAGES = "the images of this gallery"
# How a page names a widget of each kind (by the Streamlit function that draws it), and what to do
# with one that was sent a value it cannot hold.
WIDGETS: dict[str, tuple[str, str]] = {
    "selectbox": ("menu", "Choose another in the menu."),
    "radio": ("choice", "Choose another there."),
    "segmented_control": ("choice", "Choose another there."),
    "multiselect": ("list", "Choose others in the list."),
    "slider": ("slider", "Use the slider to change it."),
    "number_input": ("number box", "Type another number there."),
    "text_input": ("text box", "Type the text again there."),
    "text_area": ("text box", "Type the text again there."),
    "checkbox": ("checkbox", "Tick or clear it there."),
}
_MISSING = object()


class _Unreadable:
    def __repr__(self) -> str:
        return "a value this page cannot read"


UNREADABLE = _Unreadable()


def _read(key: str) -> Any:
    try:
        return st.session_state[key]
    except KeyError:
        return _MISSING
    except Exception:  # noqa: BLE001 - a value Streamlit cannot turn into the widget's kind
        return UNREADABLE


def _as_shown(value: Any, allowed: Allowed, shown: Callable[[Any], Any]) -> str:
    """The value a widget keeps, as it shows it: a choice through its ``format_func``."""
    if value is None:
        return "nothing chosen"
    if allowed.kind == FLAG:
        return "on" if value else "off"
    if allowed.kind == NUMBER:
        return f"{value:g}"
    if allowed.kind == TEXT:
        return named(value) if value else "an empty text"
    try:
        return f"“{shown(value)}”"
    except Exception:  # noqa: BLE001 - a format_func that does not take this option: its plain name
        return f"“{value}”"


def checked_value(key: str, allowed: Allowed, widget: str, todo: str, *, default: Any = None,
                  shown: Callable[[Any], Any] = str, box: Any = st) -> Any:
    """The value widget ``key`` holds, as it holds it (:meth:`~anchordiv.explorer.widget_values.Allowed.fit`).

    A value it cannot hold is replaced, written back, by the value it held at its last check (what
    the person last chose) or, failing that, ``default``; ``box`` then says so in a warning naming
    the ``widget`` (``"The menu “Preset for A”"``), the value and what it keeps (shown by
    ``shown``), and ``todo``. The value the widget held at its last check is taken as it is even
    where its options have changed since (a gallery with other presets): the page resolves that.

    Returns
    -------
    the value the widget holds now; ``default`` when it holds none yet (it is drawn with its own).
    """
    value = _read(key)
    if value is _MISSING:
        return default
    held = st.session_state.setdefault(WIDGET_HELD, {})
    fitted = allowed.fit(value)
    if fitted is not REFUSED:
        foreign = allowed.kind == TEXT and sent_kind(key) not in (None, "string_value")
        if foreign or type(fitted) is not type(value) or not same_value(fitted, value):  # 2 for 2.0, an int for NumPy's
            replace_value(key, fitted)
        if foreign:
            say(f"{widget} was sent its text as another kind of value (a chat box's): it is kept as text. {todo}",
                box)
        held[key] = fitted
        return fitted
    if key in held and same_value(value, held[key]) and type(value) is type(held[key]):
        return value
    last = held.get(key, _MISSING)
    kept = allowed.fit(last) if last is not _MISSING and allowed.takes(last) else default
    replace_value(key, kept)
    held[key] = kept
    say(refused_note(widget, value, allowed, _as_shown(kept, allowed, shown), todo), box)
    return kept


def _default(key: str, allowed: Allowed, fallback: Any) -> Any:
    """The table's default for ``key`` where the widget can hold it, else ``fallback``."""
    setting = SETTINGS.get(key)
    if setting is not None and allowed.takes(setting.default):
        return allowed.fit(setting.default)
    return fallback


def checked_widget(kind: str, label: str, key: str, allowed: Allowed, box: Any, fallback: Any = None,
                   shown: Callable[[Any], Any] = str, todo: str | None = None, default: Any = _MISSING) -> Any:
    """:func:`checked_value` for the widget ``key`` that Streamlit's ``kind`` (``"selectbox"``, …)
    draws labelled ``label``: named and told what to do in the page's words (:data:`WIDGETS`, or
    ``todo``), its default ``default`` where given, else the table's, else ``fallback``. For a page
    that reads a widget's value before drawing it (the wrappers below check it as they draw it)."""
    name, what_to_do = WIDGETS.get(kind, ("control", "Set it again there."))
    return checked_value(key, allowed, f"The {name} “{label}”", todo or what_to_do,
                         default=_default(key, allowed, fallback) if default is _MISSING else default, shown=shown,
                         box=box)


def _check_drawn(draw: Callable, label: str, key: str, allowed: Allowed, fallback: Any, shown: Callable[[Any], Any],
                 box: Any) -> None:
    checked_widget(getattr(draw, "__name__", ""), label, key, allowed,
                   box if box is not None else getattr(draw, "__self__", st), fallback, shown)


def choice_widget(draw: Callable, label: str, options: Sequence, *, key: str, box: Any = None, **kwargs: Any) -> Any:
    """``draw(label, options, key=key, **kwargs)`` (``st.radio``, ``column.selectbox``, …: one of
    ``options``; nothing where ``index=None``), its value checked first (:func:`checked_value`,
    the warning in ``box``, by default where the widget is drawn); what it returns."""
    listed = tuple(options)
    index = kwargs.get("index", 0)
    allowed = Allowed.choice(listed, empty=index is None)
    fallback = listed[index] if index is not None and 0 <= index < len(listed) else None
    _check_drawn(draw, label, key, allowed, fallback, kwargs.get("format_func", str), box)
    return draw(label, options, key=key, **kwargs)


def number_widget(draw: Callable, label: str, low: float, high: float, *, key: str, box: Any = None,
                  **kwargs: Any) -> Any:
    """``draw(label, low, high, key=key, **kwargs)`` (a slider or a number box: a number in
    ``[low, high]``, whole where both bounds are), its value checked first (:func:`choice_widget`)."""
    whole = all(isinstance(bound, int) and not isinstance(bound, bool) for bound in (low, high))
    allowed = Allowed.number(low, high, integer=whole)
    _check_drawn(draw, label, key, allowed, kwargs.get("value", low), str, box)
    return draw(label, low, high, key=key, **kwargs)


def text_widget(draw: Callable, label: str, *, key: str, box: Any = None, **kwargs: Any) -> Any:
    """``draw(label, key=key, **kwargs)`` (a text box: a text), its value checked first (:func:`choice_widget`)."""
    _check_drawn(draw, label, key, Allowed.text(), kwargs.get("value", ""), str, box)
    return draw(label, key=key, **kwargs)


def flag_widget(draw: Callable, label: str, *, key: str, box: Any = None, **kwargs: Any) -> Any:
    """``draw(label, key=key, **kwargs)`` (a checkbox: on or off), its value checked first (:func:`choice_widget`)."""
    _check_drawn(draw, label, key, Allowed.flag(), bool(kwargs.get("value", False)), str, box)
    return draw(label, key=key, **kwargs)


def allowed_of(key: str) -> Allowed:
    """What the setting ``key`` of the table holds."""
    setting = SETTINGS[key]
    if setting.kind == "choice":
        return Allowed.choice(setting.options)
    if setting.kind in ("number", "integer"):
        low, high = setting.bounds
        return Allowed.number(low, high, integer=setting.kind == "integer")
    return Allowed.flag() if setting.kind == "flag" else Allowed.text()


def checked_settings(keys: Iterable[str], todo: str, box: Any = st, defaults: Mapping[str, Any] | None = None) -> None:
    """Check the settings ``keys`` as a page reads them from the session state where their widgets
    are not drawn (Learn reads the Explore page's p), each as its widget's value is
    (:func:`checked_value`, by its row of the table: named by its label, a choice kept shown in
    its menu's words; its default ``defaults[key]`` where the gallery gives it, else the table's);
    ``todo`` says where to set one that is refused. The page then reads them, checked, with the
    rest of its part (:func:`~anchordiv.explorer.settings.part_values`)."""
    for key in keys:
        allowed, setting = allowed_of(key), SETTINGS[key]
        default = (defaults or {}).get(key, _MISSING)
        checked_value(key, allowed, f"The setting “{setting.label}”", todo,
                      default=_default(key, allowed, None) if default is _MISSING else default,
                      shown=setting.format_option, box=box)


# -- the widgets that hold lists, and those that name gallery images -----------------------------------
def _written_back(key: str, checked: Checked, where: str, what: str, todo: str, box: Any) -> list:
    """What ``checked`` kept of widget ``key``'s value, written back when that differs (so the widget
    shows it, and a value written back unchanged does not override what the browser holds), and
    what it left out said in ``box``."""
    if _read(key) != checked.kept:
        replace_value(key, checked.kept)
    st.session_state.setdefault(WIDGET_HELD, {})[key] = list(checked.kept)  # what list_kept_as_list restores
    say(checked.note(where, what, todo), box)
    return checked.kept


def checked_choices(key: str, options: Sequence, limit: int, where: str, what: str, todo: str,
                    box: Any) -> tuple[list, bool]:
    """The options list widget ``key`` (a multiselect of ``options``) holds: those among
    ``options``, each once, at most ``limit``; the rest said in ``box`` (:meth:`Checked.note`:
    ``where`` names the widget, or the link that gave the list). Also whether it held an option
    more than once (counted once, said by the caller)."""
    value = _read(key)
    value = [] if value is _MISSING else value
    listed = tuple(options)
    checked = checked_values(value, lambda item: any(same_value(item, option) for option in listed), limit)
    items = value if isinstance(value, (list, tuple)) else [value]
    repeated = not checked.foreign and not checked.unread and len(items) != len(checked.kept)
    return _written_back(key, checked, where, what, todo, box), repeated


def checked_ids(key: str, n_items: int, limit: int, where: str, todo: str, box: Any) -> list[int]:
    """The gallery ids list widget ``key`` holds: ids of a gallery of ``n_items``, each once, at most
    ``limit``; ``where`` names the widget and ``todo`` says what to do in the warning for the rest."""
    value = _read(key)
    return _written_back(key, gallery_ids([] if value is _MISSING else value, n_items, limit), where, IMAGES, todo,
                         box)


def checked_texts(key: str, limit: int, where: str, todo: str, box: Any) -> list[str]:
    """The texts list widget ``key`` holds (:func:`~anchordiv.explorer.widget_values.texts`), as
    :func:`checked_ids`; the page reads each text and names one it cannot use."""
    value = _read(key)
    return _written_back(key, texts([] if value is _MISSING else value, limit), where, "the texts a figure reads",
                         todo, box)


def checked_query_id(source: ex.GallerySource, todo: str, box: Any) -> int:
    """The gallery image the page's query is (``query_id``): the gallery's default query, written
    back, while none is set or in place of a value that is not one of its ids (after a change of
    gallery, or sent by a client), which ``box`` then names, saying ``todo``."""
    value = _read("query_id")
    checked = gallery_ids([value], len(source), 1)
    if checked.kept:
        return checked.kept[0]
    default = source.default_query()
    replace_value("query_id", default)
    if value is not _MISSING:
        say(f"The query {not_among(value, f'the {len(source):,} images of this gallery')}: the page shows image "
            f"#{default} instead. {todo}", box)
    return default


def checked_rank(key: str, count: int, label: str, box: Any) -> int:
    """The rank the menu ``key`` (labelled ``label``) holds, 1 to ``count`` (the neighbours it
    lists); 1, written back and said in ``box``, in place of any other value (a rank past a smaller
    top-k, or a value a client sent)."""
    value = _read(key)
    value = 1 if value is _MISSING else value
    checked = whole_numbers([value], 1, count + 1, 1)
    if checked.kept:
        return checked.kept[0]
    replace_value(key, 1)
    say(f"“{label}”: {not_among(value, f'the {count} neighbours listed')}; the first is shown instead. Choose "
        "another in the menu.", box)
    return 1
