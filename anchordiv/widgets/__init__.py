"""anchordiv in a notebook (Jupyter, JupyterLab, VS Code, marimo, Colab): widgets built on anywidget,
installed by ``pip install 'anchordiv[notebook]'``.

Each widget is a thin host of a browser component that the explorer's page draws too: the same
plain JavaScript (``app/components/``, shipped in the package and loaded from it, nothing fetched),
the same protocol, built and read by :mod:`anchordiv.explorer`:

* :class:`PPlayer` (:mod:`.p_player`): a query's neighbours as ``p`` moves from anchor set B
  (``p = 0``) to A (``p = 1``), with Play, keys and "like the query" marks; the released ``p`` and
  the marks are its traits ``p`` and ``marks``.
* :class:`ToyWorld` (:mod:`.toy_world`): the Learn page's toy world, anchors and a query on a
  circle or a sphere, every figure computed in the browser as they are dragged; the query, the sets,
  ``s`` and ``p`` let go are its traits ``query``, ``a``, ``b``, ``scale`` and ``p`` (and ``width``).
"""
from ..extras import require

require("anywidget", "notebook", "anchordiv's notebook widgets")

# After the check, so that a missing anywidget is named with the extra that installs it.
from .p_player import PPlayer
from .toy_world import ToyWorld

__all__ = ["PPlayer", "ToyWorld"]
