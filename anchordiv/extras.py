"""The optional parts of anchordiv and the one message for a missing one.

``pip install anchordiv`` is the library and its command line. The explorer (Streamlit, Plotly),
its UMAP maps and its browser benchmark come with ``pip install 'anchordiv[explorer]'``; open_clip
models with ``[open-clip]``; Ray with ``[ray]``.
"""
from __future__ import annotations

import importlib.util


class MissingExtra(ValueError):
    """A command or function needs a package that an extra of anchordiv installs."""


def require(module: str, extra: str, what: str) -> None:
    """Nothing when ``module`` is installed; else :class:`MissingExtra` saying which extra brings it."""
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError, AttributeError):  # a module set to None in sys.modules: not importable
        found = False
    if not found:
        raise MissingExtra(f"{what} needs {module}, which anchordiv's {extra} extra installs: "
                           f"pip install 'anchordiv[{extra}]'")
