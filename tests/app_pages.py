"""The explorer opened by a link in Streamlit's AppTest (streamlit.testing), for the test modules
that open its pages: the entry script, each page's script, :func:`open_page` and what a page says
(:func:`messages`)."""
from __future__ import annotations

from pathlib import Path

from markup import plain

#: The explorer's entry script (its pages are under app/views/).
APP = Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py"
#: Each page's script, as AppTest.switch_page takes it (``None``: Explore, the page a link opens).
PAGES = {"explore": None, "compare": "views/compare.py", "learn": "views/learn.py", "report": "views/report.py"}
#: Seconds one run of a page may take before AppTest gives up on it (a first run builds the gallery's
#: geometry and player).
TIMEOUT = 240


def open_page(params: dict | None = None, page: str | None = None, state: dict | None = None,
              timeout: float = TIMEOUT):
    """A new session that opens the link of query ``params`` (a list value: the parameter repeated),
    with session ``state`` set first, on ``page`` (a script of :data:`PAGES`; none: Explore), after
    its first run."""
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(str(APP), default_timeout=timeout)
    app.query_params.update(params or {})
    for key, value in (state or {}).items():
        app.session_state[key] = value
    if page:  # the link opens that page (the Explore page would rewrite the link first)
        app.switch_page(page)
    return app.run()


def messages(app, kinds: tuple[str, ...] = ("error", "warning", "info", "caption")) -> str:
    """What ``app``'s boxes of ``kinds`` say, as plain text (Markdown escapes removed), in one line."""
    return " ".join(plain(str(element.value)) for kind in kinds for element in getattr(app, kind))
