"""What a widget of the explorer may hold, checked where the app reads it back.

A client sends each widget's value as it likes: a hostile one puts ids out of range, a million of
them, a Markdown text, a float, ``true`` or a nested list where a menu of gallery images holds ids,
and Streamlit hands that to the page as sent. The app reads every such value through
:func:`checked_values` (gallery ids: :func:`gallery_ids`; a menu's ranks: :func:`whole_numbers`;
the Compare figure's specs: :func:`texts`), which keeps what the widget could have held and counts
the rest, and says what it left out in the words of :meth:`Checked.note` or :func:`not_among`.

Every other widget holds one value of a kind its :class:`Allowed` says: one of its options (a radio,
a menu), a number within its bounds (a slider, a number box), a text (a text box) or on or off (a
checkbox). :meth:`Allowed.fit` reads a value as the widget would hold it, or refuses it, and
:func:`refused_note` says what was refused and what the widget keeps instead.
Nothing here raises on a value, and nothing imports Streamlit.
"""
from __future__ import annotations

import math
import reprlib
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

import numpy as np

# How a left-out value is named: its start, whatever it is (a list of a million ids included); a
# note names the first few.
EXAMPLES = 3
_NAMED = reprlib.Repr()
_NAMED.maxlist, _NAMED.maxdict, _NAMED.maxstring, _NAMED.maxother, _NAMED.maxlevel = 4, 4, 60, 60, 2


@dataclass(frozen=True)
class Checked:
    """What :func:`checked_values` kept of a widget's value.

    Attributes
    ----------
    kept : the values the widget could hold, each once, in the order given (at most ``limit``).
    limit : the most values the widget holds.
    foreign : how many values read were not such values.
    unread : how many values came after the ``limit``-th kept one (not read: a client may send a
        million).
    examples : the first :data:`EXAMPLES` of the ``foreign`` values, which a note names.
    """

    kept: list
    limit: int
    foreign: int = 0
    unread: int = 0
    examples: tuple = ()

    def note(self, where: str, what: str, todo: str) -> str:
        """What was left out, as a sentence for the person on the page (empty when nothing was).

        Parameters
        ----------
        where : the widget, as the page labels it (``"“Like the query”"``).
        what : what it holds, plural (``"the images of this gallery"``).
        todo : what to do instead, a sentence.

        Returns
        -------
        str : e.g. "“Like the query” held 2 values that are not among the images of this gallery
            ('**evil**', 2.5) and 999,950 values past the 50 it holds: they are left out. Mark items
            of the grids."
        """
        parts = []
        if self.foreign:
            named = ", ".join(map(_NAMED.repr, self.examples)) + (", …" if self.foreign > len(self.examples) else "")
            parts.append(f"{_values(self.foreign)} that {'is' if self.foreign == 1 else 'are'} not among {what} "
                         f"({named})")
        if self.unread:
            parts.append(f"{_values(self.unread)} past the {self.limit:,} it holds")
        if not parts:
            return ""
        left_out = "it is" if self.foreign + self.unread == 1 else "they are"
        return f"{where} held {' and '.join(parts)}: {left_out} left out. {todo}"


def _values(count: int) -> str:
    return f"{count:,} value{'s' * (count != 1)}"


def checked_values(values: Any, accept: Callable[[Any], bool], limit: int) -> Checked:
    """The values among ``values`` that ``accept`` takes, each once, at most ``limit``.

    Parameters
    ----------
    values : what a widget holds: a list or tuple is read item by item; anything else (a text, a
        number, ``None``, a dict) is one value.
    accept : whether one value is one the widget could hold; never raises, and takes only values
        that can be hashed (numbers, texts).
    limit : the most values kept; reading stops there, and the rest are counted unread.

    Returns
    -------
    Checked : the values kept and how many were not (a value repeated is kept once, not counted).
    """
    items = list(values) if isinstance(values, (list, tuple)) else [values]
    kept: dict = {}
    foreign, examples = 0, []
    for read, value in enumerate(items):
        if len(kept) == limit:
            return Checked(list(kept), limit, foreign, len(items) - read, tuple(examples))
        if accept(value):
            kept.setdefault(value, None)
        else:
            foreign += 1
            if len(examples) < EXAMPLES:
                examples.append(value)
    return Checked(list(kept), limit, foreign, 0, tuple(examples))


def is_whole_in(value: Any, low: int, high: int) -> bool:
    """Whether ``value`` is a whole number (a Python or NumPy integer, never a bool or a float) in
    ``[low, high)``."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and low <= value < high


def whole_numbers(values: Any, low: int, high: int, limit: int) -> Checked:
    """:func:`checked_values` for whole numbers in ``[low, high)`` (a menu's ranks), as ``int``."""
    checked = checked_values(values, lambda value: is_whole_in(value, low, high), limit)
    return replace(checked, kept=[int(value) for value in checked.kept])


def gallery_ids(values: Any, n_items: int, limit: int) -> Checked:
    """:func:`whole_numbers` for the ids of a gallery of ``n_items`` images, ``[0, n_items)``."""
    return whole_numbers(values, 0, n_items, limit)


def texts(values: Any, limit: int) -> Checked:
    """:func:`checked_values` for texts (a Compare figure's row and column specs, which the page
    reads and names one by one)."""
    return checked_values(values, lambda value: isinstance(value, str), limit)


def not_among(value: Any, what: str) -> str:
    """A single value that is not one of ``what`` (plural), named by its start whatever it is:
    e.g. "'**evil**' is not among the 96 images of this gallery". Shown through
    :func:`~anchordiv.explorer.literal.markdown_literal`, it is text."""
    return f"{_NAMED.repr(value)} is not among {what}"


# -- widgets of one value: options, numbers, texts, flags ---------------------------------------------
CHOICE, NUMBER, TEXT, FLAG = "choice", "number", "text", "flag"


class _Refused:
    """What :meth:`Allowed.fit` returns for a value the widget cannot hold (``None`` may be one it can)."""

    def __repr__(self) -> str:
        return "REFUSED"


REFUSED = _Refused()


def same_value(value: Any, option: Any) -> bool:
    """Whether ``value`` is ``option`` as a widget compares them: equal, and a bool only where the
    option is one (``True == 1``, but a menu of ranks holds no ``True``); never raises (a value
    whose comparison fails, or is not a truth value, is not the option)."""
    if isinstance(value, (bool, np.bool_)) != isinstance(option, (bool, np.bool_)):
        return False
    try:
        return bool(value == option)
    except Exception:  # noqa: BLE001 - any value a client sends: an array's ambiguous truth, a failing __eq__
        return False


@dataclass(frozen=True)
class Allowed:
    """What a widget of one value may hold.

    Attributes
    ----------
    kind : :data:`CHOICE` (one of ``options``: a radio, a menu), :data:`NUMBER` (a number in
        ``[low, high]``, whole where ``integer``: a slider, a number box), :data:`TEXT` (a text
        box) or :data:`FLAG` (a checkbox).
    options : a choice's options.
    low, high : a number's bounds.
    integer : whether a number is whole (a Python or NumPy integer, never a bool).
    empty : whether a choice may hold nothing (``None``: a menu with a placeholder).
    """

    kind: str
    options: tuple = ()
    low: float = -math.inf
    high: float = math.inf
    integer: bool = False
    empty: bool = False

    @classmethod
    def choice(cls, options: Sequence, empty: bool = False) -> "Allowed":
        return cls(CHOICE, tuple(options), empty=empty)

    @classmethod
    def number(cls, low: float, high: float, integer: bool = False) -> "Allowed":
        return cls(NUMBER, low=low, high=high, integer=integer)

    @classmethod
    def text(cls) -> "Allowed":
        return cls(TEXT)

    @classmethod
    def flag(cls) -> "Allowed":
        return cls(FLAG)

    def fit(self, value: Any) -> Any:
        """``value`` as the widget holds it (the option it equals; a number as an ``int`` or a
        ``float``; a NumPy bool as a bool), or :data:`REFUSED`. Never raises."""
        if self.kind == CHOICE:
            if value is None:
                return None if self.empty else REFUSED
            return next((option for option in self.options if same_value(value, option)), REFUSED)
        if self.kind == NUMBER:
            return self._number(value)
        if self.kind == TEXT:
            return value if isinstance(value, str) else REFUSED
        if self.kind == FLAG:
            return bool(value) if isinstance(value, (bool, np.bool_)) else REFUSED
        return REFUSED

    def _number(self, value: Any) -> Any:
        if isinstance(value, (bool, np.bool_)):
            return REFUSED
        if isinstance(value, (int, np.integer)):
            number: int | float = int(value)
        elif isinstance(value, (float, np.floating)) and not self.integer and math.isfinite(value):
            number = float(value)
        else:  # a float where a whole number goes (Streamlit would refuse the widget), a text, a list
            return REFUSED
        if not self.low <= number <= self.high:
            return REFUSED
        return number if self.integer else float(number)

    def takes(self, value: Any) -> bool:
        """Whether the widget can hold ``value`` (:meth:`fit` does not refuse it)."""
        return self.fit(value) is not REFUSED

    def wanted(self) -> str:
        """What the widget holds, in words: "one of its choices", "a whole number from 1 to 200"."""
        if self.kind == CHOICE:
            return "one of its choices"
        if self.kind == NUMBER:
            return f"a {'whole ' if self.integer else ''}number from {self.low:g} to {self.high:g}"
        return "a text" if self.kind == TEXT else "on or off"


def named(value: Any) -> str:
    """``value`` named by its start, whatever it is (a 150,000-character text, a list of a million
    ids): as a note quotes a value it refused."""
    return _NAMED.repr(value)


def refused_note(widget: str, value: Any, allowed: Allowed, kept: str, todo: str) -> str:
    """What is said of a value a widget was sent and cannot hold, shown through
    :func:`~anchordiv.explorer.literal.markdown_literal` (it quotes the value).

    Parameters
    ----------
    widget : the widget as the page names it (``"The menu “Preset for A”"``).
    value : what it was sent.
    allowed : what it holds.
    kept : the value it keeps instead, as the widget shows it.
    todo : what to do instead, a sentence.

    Returns
    -------
    str : e.g. "The menu “Preset for A” was sent a value that is not one of its choices
        ('**evil**'): it keeps “Gallery object names”. Choose another in the menu."
    """
    return f"{widget} was sent a value that is not {allowed.wanted()} ({named(value)}): it keeps {kept}. {todo}"
