"""The values a page's widgets keep between pages and between runs that do not draw them: those the
table of settings (:data:`anchordiv.explorer.settings.SETTINGS`) marks kept, restored and written
back at the start of every full run (:func:`keep_values`), with the end of a run that drew its
whole page marked (:func:`run_finished`).
"""
from __future__ import annotations

import streamlit as st

from anchordiv.app.session_keys import KEPT, PAGE, RUN_FINISHED
from anchordiv.explorer.setting import EVERY_RUN, ON_ARRIVAL
from anchordiv.explorer.settings import kept_keys


def keep_values(page: str) -> None:
    """Called at the start of every full run, with the page about to run.

    Streamlit forgets a widget's value when a run does not draw the widget (another page, or a run
    that stopped early): the server may drop it, and the browser shows the default when the widget
    comes back. A widget drawn by another page starts from its default too. So a value missing now
    is restored from the copy the last run left, and values are written back, which makes the
    server send them with their widgets: all of them on a page's first run, and those after the
    gallery when the last full run did not finish (:func:`run_finished`), so may not have drawn
    them. No more: a value written back replaces what the browser's widget holds, and a person
    typing or stepping p while a run is on its way would lose it (on a busy server, typed anchors
    were overwritten this way by the run a query pick had started: tests/test_browser_crowd.py).
    """
    state = st.session_state
    kept = state.get(KEPT, {})
    arrived = state.get(PAGE) != page
    whole = state.pop(RUN_FINISHED, False)
    # The page widgets' values that outlive a page that does not draw them (the sidebar's widgets
    # keep their own: PERSISTED). Those drawn after the gallery (a folder not chosen yet stops the
    # run before them) are written back on every run that follows an unfinished one, the others
    # when a page is arrived at.
    every_run = kept_keys(EVERY_RUN)
    keys = kept_keys(ON_ARRIVAL) + every_run
    for key in keys:
        if key not in state and key in kept:
            state[key] = kept[key]
        elif key in state and (arrived or (key in every_run and not whole)):
            # Deleted first: the key may still name the last page's widget, which would take the value.
            value = state[key]
            del state[key]
            state[key] = value
    state[PAGE] = page
    state[KEPT] = {key: state[key] for key in keys if key in state}


def run_finished() -> None:
    """Called at the end of a full run that drew its whole page (one stopped early, by an error or
    a rerun, never gets here): the next run need not write back what this one drew."""
    st.session_state[RUN_FINISHED] = True
