"""The Learn page's lesson on anchor weights (issue 25): on the circle, how moving weight between
anchors reshapes a query's neighbourhood, and what :class:`anchordiv.FeedbackAnchors` learns from
points a person marks as like the query.

Notation as in :mod:`anchordiv.lesson`: directions ``u(theta) = (cos theta, sin theta)`` with
``theta`` in degrees, anchors ``gamma_i`` with weights ``w_i >= 0`` summing to 1, scale ``s``. The
weighted empirical model is ``kappa_w(eta) = log sum_i w_i exp(eta . gamma_i)``, so the tilt is
``p_w(i | s x) ∝ w_i exp(s gamma_i . x)`` and ``D_w(x -> y) = KL(p_w(.|s x) || p_w(.|s y))``
(docs/design.md §3). The toy gallery is :data:`POINT_STEP`-spaced points of the circle; every
number comes from the library's models. Nothing here imports Streamlit or touches files.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from .lesson import circle_directions
from .models import EmpiricalAnchors, FeedbackAnchors

# The few anchors whose weights a person moves by hand (degrees).
HAND_ANCHORS: tuple[float, ...] = (0.0, 90.0, 180.0, 270.0)
# The toy gallery: one point every POINT_STEP degrees (24 points).
POINT_STEP = 15.0
# The learner's vocabulary: one direction every VOCABULARY_STEP degrees (24 anchors).
VOCABULARY_STEP = 15.0
# FeedbackAnchors' seed: the lesson's fit is the same on every run.
SEED = 0


def toy_points() -> np.ndarray:
    """The toy gallery's angles ``(24,)`` in degrees: 0, 15, ..., 345."""
    return np.arange(0.0, 360.0, POINT_STEP)


def vocabulary_angles() -> np.ndarray:
    """The learner's vocabulary of directions ``(24,)`` in degrees: 0, 15, ..., 345."""
    return np.arange(0.0, 360.0, VOCABULARY_STEP)


def weighted_model(angles: Sequence[float], weights: Sequence[float] | None, scale: float) -> EmpiricalAnchors:
    """The empirical model on the anchors ``u(angles)`` ``(N, 2)`` with ``weights`` ``(N,)``
    (normalised to sum to 1; ``None``: uniform) at scale ``s``; a ``ValueError`` for weights that are
    negative, all zero, or not one per anchor."""
    return EmpiricalAnchors(scale=scale, weights=None if weights is None else list(weights)).fit(
        circle_directions(angles))


def nearest_points(model: EmpiricalAnchors, query_angle: float, k: int) -> pd.DataFrame:
    """The toy points seen from the query ``x = u(query_angle)``: one row per point with ``angle``,
    ``x``, ``y``, ``divergence`` = ``D_w(x -> u(angle))`` and ``near``, whether it is among the ``k``
    of smallest divergence (ties by angle), the query's neighbourhood a search would return."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= len(toy_points()):
        raise ValueError(f"k={k!r} must be a whole number of points from 1 to {len(toy_points())}.")
    angles = toy_points()
    directions = circle_directions(angles)
    divergence = model.divergence(circle_directions([float(query_angle)]), directions)[0].numpy()
    near = np.zeros(len(angles), dtype=bool)
    near[np.argsort(divergence, kind="stable")[:k]] = True
    return pd.DataFrame({"angle": angles, "x": directions[:, 0].numpy(), "y": directions[:, 1].numpy(),
                         "divergence": divergence, "near": near})


def learn_from_marks(query_angle: float, marked_angles: Sequence[float], scale: float) -> FeedbackAnchors:
    """:class:`anchordiv.FeedbackAnchors` at scale ``s`` (its defaults otherwise, seed :data:`SEED`)
    fitted on the vocabulary ``u(vocabulary_angles())``, the query ``u(query_angle)`` and the toy
    gallery ``u(toy_points())``, with the marked points as the query's positives: the weight goes
    to the anchors that the query and every marked point hold more than the circle's points do on
    average (a soft minimum of their standardised scores), so the anchors between them, not those
    only the query holds. The anchors are one kind (directions), so the weights are never refused
    for leaning on the wrong kind; ``decided_`` still says whether the points agree on a direction.

    Raises ``ValueError`` when nothing is marked or a mark is not a toy point."""
    marks = [float(angle) for angle in marked_angles]
    if not marks:
        raise ValueError("no point is marked; mark two or three points of the circle as like the query, then learn.")
    points = toy_points()
    ids = []
    for angle in marks:
        found = np.flatnonzero(np.isclose(points, angle % 360.0))
        if not len(found):
            raise ValueError(f"{angle:g}° is not a point of the toy circle; mark points every {POINT_STEP:g}°.")
        ids.append(int(found[0]))
    model = FeedbackAnchors(scale=scale, seed=SEED)
    return model.fit(circle_directions(vocabulary_angles()), circle_directions([float(query_angle)]),
                     circle_directions(points), [ids])


def weight_table(angles: Sequence[float], weights: Sequence[float]) -> pd.DataFrame:
    """One row per anchor: ``anchor`` (its angle, ``"30°"``), ``angle`` and ``weight`` (normalised
    to sum to 1), for a bar chart."""
    values = np.asarray(weights, dtype=np.float64)
    return pd.DataFrame({"anchor": [f"{angle:g}°" for angle in angles], "angle": np.asarray(angles, dtype=np.float64),
                         "weight": values / values.sum()})
