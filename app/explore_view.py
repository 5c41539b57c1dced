"""What the Explore page's sections draw from (:class:`ExploreView`), and the rankings they show:
the anchor divergence at ``p`` through the query's certified slider (the exact search where none
applies), and the baselines, which do not depend on ``p``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from anchordiv import explorer as ex
from anchordiv.app import cached
from anchordiv.app.errors import attempt
from anchordiv.explorer.page_state import SETTINGS


@dataclass(frozen=True)
class ExploreView:
    """Everything below the anchors but ``p``, which the results fragment owns (so moving it reruns
    only that fragment)."""

    source: ex.GallerySource
    encoder: Any
    geometry: ex.ExplorerGeometry
    geometry_key: str
    weighting: str
    query: np.ndarray
    query_id: int | None
    query_labels: Any
    query_text: str
    k: int
    baselines: dict[str, pd.DataFrame]
    link_fields: list  # the page's link, which the results fragment updates as p moves


def neighbours(view: ExploreView, p: float) -> tuple[pd.DataFrame, bool | None]:
    """The anchor-divergence neighbour table at ``p`` and whether the slider certified it (``None``:
    no slider, the exact search ran)."""
    def rank() -> tuple[np.ndarray, np.ndarray, bool | None]:
        slider = cached.get_slider(view.geometry_key, view.geometry, view.query, view.k, view.query_id,
                                   view.weighting)
        return ex.neighbours_at(view.geometry, slider, view.query, view.k, p, view.weighting, view.query_id)

    values, ids, certified = attempt(rank, "Cannot rank the gallery", stop=True)
    return view.source.neighbour_table(values, ids, view.query_labels, "divergence"), certified


def prepare_p_steps(view: ExploreView) -> None:
    """The images every step of the p slider can show, encoded now (at the end of a full run, after
    everything is drawn), so that moving p sends kept bytes (:func:`~anchordiv.app.cached.slider_thumbnails`)."""
    setting = SETTINGS["p"]
    steps = round((setting.high - setting.low) / setting.step)
    p_values = tuple(round(setting.low + i * setting.step, 10) for i in range(steps + 1))
    attempt(lambda: cached.slider_thumbnails(view.geometry_key, view.geometry, view.query, view.k, view.query_id,
                                             view.weighting, view.source, p_values), "Cannot prepare the p slider")


def baseline_tables(source: ex.GallerySource, encoder, query: np.ndarray, query_id: int | None, query_labels: Any,
                    k: int, iti_sets: tuple | None) -> dict[str, pd.DataFrame]:
    """The query's top-k under cosine and (with ``iti_sets``, each anchor set's ``(texts, templates)``,
    where the source offers ITI) ITI: they do not depend on p."""
    tables = {"cosine": attempt(lambda: cached.get_cosine_table(source, query, k, query_id, query_labels),
                                "Cannot rank the gallery by cosine", stop=True)}
    if iti_sets is not None and source.capabilities.iti:
        index = attempt(lambda: cached.get_baseline("iti", source, encoder, iti_sets), "ITI")
        if index is not None:
            tables["iti"] = source.neighbour_table(*ex.search_one(index, query, k, exclude=query_id), query_labels,
                                                   "similarity")
    return tables


def certificate_text(view: ExploreView, certified: bool | None) -> str:
    """What the slider did for this move of ``p``."""
    if certified:
        return ("✓ Certified: the slider's candidates provably hold the exact top-k at this p, so no pass over the "
                "store was needed.")
    if certified is False:
        return "Not certified at this p: the exact search ran over the whole store (the same answer, one pass)."
    if not view.geometry.is_mixture:
        return "One anchor set: the exact sharded search (p has no effect)."
    return ("Reverse direction: the certified slider is for the query-first direction, so this is the exact "
            "sharded search.")
