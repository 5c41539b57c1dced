"""The ``p`` player's data: a query's :class:`~anchordiv.slider.SliderPath` (its exact top-``k`` at
every position of the ``p`` slider) as plain, JSON-ready data for the browser component that plays
it without asking the server again. The app adds each image's address (:func:`player_data` leaves
``"src"`` out); the browser sets every text it is given as text, never as markup.

The data is bounded: at most :data:`MAX_PLAYER_STEPS` positions and :data:`MAX_PLAYER_ITEMS`
distinct images, so that a link asking for a large ``k`` cannot make a page send megabytes.
Nothing here imports Streamlit.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..slider import SliderPath
from .neighbours import agreement_text, caption_heads, grid_tiles
from .source import GallerySource

MAX_PLAYER_STEPS = 101
# Distinct images one path may show (about 6 KB each as the grid's 96 px PNGs): a path of k = 50
# over 101 steps shows a few hundred at most in practice; more is refused with a message.
MAX_PLAYER_ITEMS = 600


def player_data(path: SliderPath, source: GallerySource, query_labels: Any, *, key: str, title: str,
                step_notes: Sequence[str], enabled: bool) -> dict[str, Any]:
    """The player's data for ``path`` over ``source``.

    Parameters
    ----------
    path : SliderPath
        ``S`` positions ``p``, and each one's top-``k`` ids and divergences ``(S, k)``.
    source : GallerySource
        Names the items and knows their labels (the ``✓obj`` / ``✓sty`` marks against ``query_labels``).
    query_labels : the query's labels, or ``None`` (an upload or a text: no marks).
    key : str
        Names this path (query, geometry, ``k``, weighting): the browser keeps its own ``p`` while
        the key stays the same.
    title : str
        The grid's heading, with ``{p}`` where the current ``p`` goes.
    step_notes : sequence of str
        One line per step shown under the grid (e.g. what the slider's certificate did), ``S`` of
        them, or none.
    enabled : bool
        ``False`` where ``p`` has no effect (one anchor set): the slider is shown disabled.

    Returns
    -------
    dict
        ``key``, ``p`` ``(S,)``, ``title``, ``enabled``; ``items``: per distinct gallery id shown,
        ascending by id, ``{"id", "name", "line", "marks"}`` (:func:`~.neighbours.grid_tiles`: the
        whole name, the caption's second line, the marks over the image); ``order`` ``(S, k)``:
        each step's items as indices into ``items``, best first; ``heads`` ``(S, k)``: each
        caption's first line (rank, ``d=`` value); ``agreement`` ``(S,)``: each step's agreement with the query's labels; ``notes``
        (the distinct step notes) and ``note`` ``(S,)`` (each step's index into them); ``runs``
        ``(R, 2)``: the first and last step of each run showing the same images
        (:meth:`~anchordiv.slider.SliderPath.ranking_runs`) and ``stops`` ``(R',)``: the step Play
        holds for each (:meth:`~anchordiv.slider.SliderPath.sweep_stops`), as the p sweep's GIF
        and strip do.
    """
    steps, k = path.ids.shape
    if steps > MAX_PLAYER_STEPS:
        raise ValueError(f"a p path of {steps} steps is more than the player takes ({MAX_PLAYER_STEPS})")
    if len(step_notes) not in (0, steps):
        raise ValueError(f"step_notes must hold one note per step ({steps}) or none; got {len(step_notes)}")
    # Each image the path shows, ascending by id, and the first row of the path that shows it.
    items, first = np.unique(path.ids, return_index=True)
    if len(items) > MAX_PLAYER_ITEMS:
        raise ValueError(f"the p path shows {len(items):,} different images, more than the {MAX_PLAYER_ITEMS} one page "
                         f"may send; lower top-k (now {k})")
    table = source.neighbour_table(path.values.ravel(), path.ids.ravel(), query_labels, "divergence")
    table["rank"] = np.tile(np.arange(1, k + 1), steps)
    heads = caption_heads(table, "divergence")
    tiles = grid_tiles(table.iloc[first], source, "divergence")
    notes = list(dict.fromkeys(step_notes))
    return {
        "key": key,
        "p": [round(float(p), 6) for p in path.p],
        "title": title,
        "enabled": bool(enabled),
        "items": [{key: tile[key] for key in ("id", "name", "line", "marks")} for tile in tiles],
        "order": np.searchsorted(items, path.ids).tolist(),
        "heads": [heads[step * k:(step + 1) * k] for step in range(steps)],
        "agreement": [agreement_text(table.iloc[step * k:(step + 1) * k]) for step in range(steps)],
        "notes": notes,
        "note": [notes.index(note) for note in step_notes],
        "runs": path.ranking_runs().tolist(),
        "stops": path.sweep_stops().tolist(),
    }
