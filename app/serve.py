"""The explorer's launcher: ``python -m anchordiv.app.serve run app/streamlit_app.py [options]``.

Streamlit's own command line (the same arguments as ``streamlit run``), after one thing no page can
do in time: :func:`~anchordiv.app.unread_links.name_unread_links`, so that a link too big for
Streamlit to read is named even when it is a new server's very first request.
:func:`~anchordiv.app.server_settings.streamlit_argv` starts the explorer through this module.
"""
from __future__ import annotations

from streamlit.web import cli

from anchordiv.app.unread_links import name_unread_links


def main() -> None:
    name_unread_links()
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main()
