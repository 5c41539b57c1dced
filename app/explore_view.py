"""What the Explore page's sections draw from (:class:`ExploreView`), and the rankings they show:
the anchor divergence at every ``p`` of the slider, computed once per query (its p path, through
the query's certified slider; the exact search where none applies), and the baselines, which do not
depend on ``p``."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from anchordiv import explorer as ex
from anchordiv.app import cached
from anchordiv.app.errors import attempt
from anchordiv.slider import SliderPath


@dataclass(frozen=True)
class ExploreView:
    """Everything below the anchors but ``p``, which the p player owns (a release of ``p`` reruns
    only the results fragment)."""

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
    link_fields: list  # the page's link, which the results fragment updates on each release of p


def p_path(view: ExploreView) -> SliderPath:
    """The query's exact top-``k`` at every position of the p slider (cached per query and geometry)."""
    return attempt(lambda: cached.get_p_path(view.geometry_key, view.geometry, view.query, view.k, view.query_id,
                                             view.weighting), "Cannot rank the gallery", stop=True)


def path_key(view: ExploreView) -> str:
    """What names the query's p path: its geometry, query, ``k`` and weighting."""
    query = hashlib.sha256(np.ascontiguousarray(view.query, dtype=np.float32).tobytes()).hexdigest()[:16]
    return f"{view.geometry_key}|{query}|{view.query_id}|{view.k}|{view.weighting}"


def neighbours(view: ExploreView, p: float, path: SliderPath | None = None) -> pd.DataFrame:
    """The anchor-divergence neighbour table at ``p``: the step nearest to it of ``path`` (the
    query's p path, :func:`p_path`, fetched when not given)."""
    path = p_path(view) if path is None else path
    step = path.step_of(p)
    return view.source.neighbour_table(path.values[step], path.ids[step], view.query_labels, "divergence")


def step_certified(view: ExploreView, path: SliderPath, step: int) -> bool | None:
    """Whether the slider certified ``step`` of the query's path (``None``: no slider applies, the
    exact search ran)."""
    return bool(path.certified[step]) if view.geometry.has_slider else None


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
