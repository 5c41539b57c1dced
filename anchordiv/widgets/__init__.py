"""anchordiv in a notebook (Jupyter, JupyterLab, VS Code, marimo, Colab): widgets built on anywidget,
installed by ``pip install 'anchordiv[notebook]'``.

Each widget is a thin host of a browser component that the explorer's page draws too: the same
plain JavaScript (``app/components/``, shipped in the package and loaded from it, nothing fetched),
the same protocol, built and read by :mod:`anchordiv.explorer`:

* :class:`PPlayer` (:mod:`.p_player`): a query's neighbours as ``p`` moves from anchor set B
  (``p = 0``) to A (``p = 1``), with Play, keys and "like the query" marks; the released ``p`` and
  the marks are its traits ``p`` and ``marks``.

The Learn page's toy world (its lesson computed in the page) is to be the next widget: a module of
its own beside :mod:`.p_player`, over the Learn page's component, exported here.
"""
from ..extras import require

require("anywidget", "notebook", "anchordiv's notebook widgets")

# After the check, so that a missing anywidget is named with the extra that installs it.
from .p_player import PPlayer

__all__ = ["PPlayer"]
