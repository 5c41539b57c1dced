"""What a widget of the explorer may hold, checked where the app reads it back.

A client sends each widget's value as it likes: a hostile one puts ids out of range, a million of
them, a Markdown text, a float, ``true`` or a nested list where a menu of gallery images holds ids,
and Streamlit hands that to the page as sent. The app reads every such value through
:func:`checked_values` (gallery ids: :func:`gallery_ids`; a menu's ranks: :func:`whole_numbers`;
the Compare figure's specs: :func:`texts`), which keeps what the widget could have held and counts
the rest, and says what it left out in the words of :meth:`Checked.note` or :func:`not_among`.
Nothing here raises on a value, and nothing imports Streamlit.
"""
from __future__ import annotations

import reprlib
from dataclasses import dataclass, replace
from typing import Any, Callable

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
