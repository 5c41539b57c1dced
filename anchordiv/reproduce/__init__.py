"""``python -m anchordiv reproduce``: the paper's experiments on the built-in world or a user's data.

* :mod:`.study`: what a run is about, a labelled embedded gallery with its anchor texts
  (:func:`world_study`, :func:`layout_study`);
* :mod:`.estimates`: per-query AP for a fixed query sample and two-way bootstrap estimates;
* :mod:`.experiments`: one function per figure or table of the paper, and :class:`Settings`
  (``quick`` and ``full``);
* :mod:`.verdicts`: whether each result shows the paper's direction of effect, in words;
* :mod:`.figures`: matplotlib plots; :mod:`.run`: runs them all and writes the report.
"""
from .experiments import Settings
from .run import run_reproduction
from .study import Study, layout_study, make_study, world_study

__all__ = ["Settings", "Study", "layout_study", "make_study", "run_reproduction", "world_study"]
