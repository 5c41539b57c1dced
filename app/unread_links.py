"""A link Streamlit drops unread, named instead: its check of a query string wrapped, once per process.

Light on purpose (Streamlit's runtime and :mod:`anchordiv.explorer.links`, no page code): the
explorer's launcher :mod:`anchordiv.app.serve` installs it before the server takes its first
request, and the explorer's entry installs it too when started by a bare ``streamlit run``.
"""
from __future__ import annotations

from streamlit.runtime import app_session
from streamlit.runtime.state import query_params as streamlit_query_params

from anchordiv.explorer import links

# Streamlit's own bounds on a link: past either it drops the whole query string, before the page runs
# (its 1.67 values, where a release no longer names them).
STREAMLIT_VALUES = getattr(streamlit_query_params, "CLIENT_STATE_QUERY_STRING_MAX_FIELDS", 1000)
STREAMLIT_CHARS = getattr(streamlit_query_params, "CLIENT_STATE_QUERY_STRING_MAX_LENGTH", 512 * 1024)


def name_unread_links() -> bool:
    """Have the server put :data:`~anchordiv.explorer.links.UNREAD_PARAM` in place of a query string
    it drops unread (past :data:`STREAMLIT_VALUES` values or :data:`STREAMLIT_CHARS` characters), so
    that the page names what the link held instead of opening on defaults without a word.

    Streamlit reads the query string before any page runs and offers no hook: its check is wrapped
    where the server and the query parameters call it. Installed before the server starts
    (:mod:`anchordiv.app.serve`) it covers every link; installed by a page's run, every link after
    that run's own. Returns whether the check is wrapped now (``False``: a Streamlit without this
    check, where such a link is dropped unsaid and the page still runs)."""
    streamlit_check = getattr(streamlit_query_params, "sanitize_query_string", None)
    if streamlit_check is None or not hasattr(app_session, "sanitize_query_string"):
        return False
    if getattr(streamlit_check, "names_unread", False):
        return True

    def checked(query_string: str) -> str:
        kept = streamlit_check(query_string)
        return kept if kept or not query_string else links.unread_link(query_string, STREAMLIT_CHARS)

    checked.names_unread = True  # type: ignore[attr-defined]
    streamlit_query_params.sanitize_query_string = app_session.sanitize_query_string = checked
    return True
