"""The error box that replaces a traceback: a library error that names its fix is shown as text."""
from __future__ import annotations

from typing import Any, Callable

import streamlit as st

from anchordiv.datasets import ShippedDataError
from anchordiv.explorer.literal import markdown_literal

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
        st.error(markdown_literal(f"{what}: {error}", ERROR_CHARS))
        if stop:
            st.stop()
        return None
