"""Captions cut to the room they have, with nothing a renderer refuses: by characters (:func:`clip`)
or by their drawn width (:func:`fit_lines`, given a way to tell whether a line fits)."""
from __future__ import annotations

import textwrap
from typing import Callable, NamedTuple

from ..explorer.literal import DRAWABLE

ELLIPSIS = "…"
# More characters than any line of a figure shows: fitting a whole 10,000-character text is slow.
_FITTED_CHARS = 400


def clip(text: object, width: int, lines: int = 1) -> str:
    """``text`` as at most ``lines`` lines of at most ``width`` characters (long words broken),
    ending in "…" where it was cut, with nothing a renderer refuses
    (:data:`~anchordiv.explorer.literal.DRAWABLE`)."""
    value = str(text).translate(DRAWABLE)
    head = value[:2 * width * lines]  # more than the lines can show: wrapping a whole 10,000-character text is slow
    wrapped = textwrap.wrap(head, width) or [""]
    kept = wrapped[:lines]
    if len(wrapped) > lines or value[len(head):].strip():
        kept[-1] = kept[-1][:width - 1].rstrip() + ELLIPSIS
    return "\n".join(kept)


class Fitted(NamedTuple):
    """A text laid out in lines: ``text`` (lines joined by newlines), ``full`` (the whole text,
    drawable, on one line) and whether ``text`` leaves some of it out (``shortened``)."""

    text: str
    full: str
    shortened: bool


def fit_lines(text: object, fits: Callable[[str], bool], lines: int) -> Fitted:
    """``text`` wrapped at spaces into at most ``lines`` lines that each ``fits`` (a word longer
    than a line is broken), the last ending in "…" where the text goes on.

    Parameters
    ----------
    text : anything; ``str(text)`` is laid out, with nothing a renderer refuses
        (:data:`~anchordiv.explorer.literal.DRAWABLE`) and runs of spaces as one.
    fits : callable
        ``fits(line)``: whether one line is narrow enough. A prefix of a line that fits must fit.
    lines : int
        The most lines.

    Returns
    -------
    Fitted
        The lines, the full text and whether the lines leave some of it out.
    """
    full = " ".join(str(text).translate(DRAWABLE).split())
    words = full[:_FITTED_CHARS].split()
    kept: list[str] = []
    line = ""
    while words and len(kept) < lines:
        word = words.pop(0)
        joined = f"{line} {word}" if line else word
        if fits(joined):
            line = joined
            continue
        if line and fits(word):  # the word starts the next line
            kept.append(line)
            words.insert(0, word)
        else:  # a word wider than a line: as much of it as fits here, the rest on the next line
            cut = _longest_fitting(joined, fits)
            kept.append(joined[:cut].rstrip())
            words.insert(0, joined[cut:].lstrip())
        line = ""
    if line and len(kept) < lines:
        kept.append(line)
    shortened = bool(words) or len(full) > _FITTED_CHARS
    if shortened:
        last = kept[-1] if kept else ""
        kept[-1:] = [last[:_longest_fitting(last, lambda head: fits(head.rstrip() + ELLIPSIS))].rstrip() + ELLIPSIS]
    return Fitted("\n".join(kept), full, shortened)


def _longest_fitting(text: str, fits: Callable[[str], bool]) -> int:
    """The length of the longest prefix of ``text`` that ``fits`` (at least 1, so a line always moves on)."""
    low, high = 1, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if fits(text[:middle]):
            low = middle
        else:
            high = middle - 1
    return low
