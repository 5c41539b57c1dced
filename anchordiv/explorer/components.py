"""The browser components' files (``app/components/``, :func:`anchordiv.resources.components_dir`)
as their hosts hand them to a browser: the explorer's page (``app/p_player.py``, Streamlit) and a
notebook (:mod:`anchordiv.widgets`, anywidget). Both load a component's ES module from a text, not
from the folder, so :func:`module_text` makes that text self-contained. Nothing here imports
Streamlit or anywidget.
"""
from __future__ import annotations

import base64
import re

from ..resources import components_dir

# A module's import of another module of components/ ("./p_player_logic.js").
_SIBLING = re.compile(r"""(\bfrom\s*)(["'])\./([\w-]+\.js)\2""")


def component_text(name: str) -> str:
    """The file ``components/<name>`` as written (HTML, CSS or JavaScript)."""
    return (components_dir() / name).read_text(encoding="utf-8")


def module_text(name: str) -> str:
    """The ES module ``components/<name>`` as a host runs it: Streamlit hands an inline module to
    the browser as a ``blob:`` address, and anywidget does the same with a widget's ``_esm``, and
    against such an address no "./" import resolves; so each import of a sibling module becomes
    that module's own text (itself so treated) as a ``data:`` address. Nothing is fetched, and the
    files stay as written: a browser or Node loading them from the folder resolves the same imports
    to the same files."""
    def inline(match: re.Match) -> str:
        encoded = base64.b64encode(module_text(match.group(3)).encode("utf-8")).decode("ascii")
        return f'{match.group(1)}"data:text/javascript;base64,{encoded}"'

    return _SIBLING.sub(inline, component_text(name))
