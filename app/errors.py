"""The error box that replaces a traceback: a library error that names its fix is shown as text."""
from __future__ import annotations

from typing import Any, Callable

import streamlit as st

from anchordiv.datasets import ShippedDataError
from anchordiv.explorer.literal import markdown_literal
from anchordiv.models.calibration import NothingToCalibrate, TooFewToCalibrate

# An error message keeps its start (what is wrong) and end (the fix) around a long value it quotes.
ERROR_CHARS = 1200
# The library's ways of saying "the input (or the shipped data) is wrong, and here is the fix".
FIXABLE_ERRORS = (ValueError, ShippedDataError)


def attempt(action: Callable[[], Any], what: str, stop: bool = False) -> Any:
    """Run ``action``; a :data:`FIXABLE_ERRORS` error becomes an error box (its message names the
    fix, shown as text: it may quote a visitor's value) instead of a traceback. ``stop`` halts the
    page after it."""
    try:
        return action()
    except FIXABLE_ERRORS as error:
        st.error(markdown_literal(f"{what}: {in_page_words(error)}", ERROR_CHARS))
        if stop:
            st.stop()
        return None


def in_page_words(error: Exception) -> str:
    """``error``'s message, or where the library's advice names something the page calls otherwise,
    the page's own words for it."""
    if isinstance(error, NothingToCalibrate):
        return (f"anchor sets A and B rank this gallery's images alike (each sampled image has the same top-{error.k} "
                "neighbours under either), so p cannot be calibrated: edit set A or B so that they differ, or choose "
                "Balanced or Literal under “Weights of A and B” in Explore's sidebar (on Compare, under “Weights of A "
                "and B in mix columns”)")
    if isinstance(error, TooFewToCalibrate):
        return (f"this gallery has {error.n_items} image(s), and calibrating p takes at least 3: choose Balanced or "
                "Literal under “Weights of A and B” in Explore's sidebar (on Compare, under “Weights of A and B in mix "
                "columns”), leave set B empty, or use a larger gallery")
    return str(error)
