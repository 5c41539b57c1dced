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

    Every number of marks from one to all of the points is learned from: marks spread round the
    circle (all of it, or all but one point) share no direction, and the fit says so with
    ``decided_`` ``False`` and weights spread out, not peaked, rather than with an error. A point
    marked twice counts once.

    Parameters
    ----------
    query_angle : float
        The query's direction in degrees (any finite number; taken modulo 360).
    marked_angles : sequence of float
        The points marked like the query, in degrees, each a point of :func:`toy_points` (modulo 360).
    scale : float
        The scale ``s``.

    Returns
    -------
    FeedbackAnchors
        The fitted learner.

    Raises
    ------
    ValueError
        When the query is not a finite angle, nothing is marked, or a mark is not a toy point; the
        message says what to mark.
    """
    query = _degrees(query_angle)
    if not np.isfinite(query):
        raise ValueError(f"query_angle={query_angle!r} must be a finite number of degrees, e.g. 45.")
    model = FeedbackAnchors(scale=scale, seed=SEED)
    return model.fit(circle_directions(vocabulary_angles()), circle_directions([query]),
                     circle_directions(toy_points()), [marked_points(marked_angles)])


def marked_points(marked_angles: Sequence[float]) -> list[int]:
    """The toy points a person marked, as distinct positions in :func:`toy_points`.

    Parameters
    ----------
    marked_angles : sequence of float
        Angles in degrees, each a point of the toy circle modulo 360; repeats count once.

    Returns
    -------
    list of int
        The points' positions, in the order first marked.

    Raises
    ------
    ValueError
        When nothing is marked, ``marked_angles`` is not a list of angles, or an angle is not a toy
        point; the message names the mark and the points there are.
    """
    if marked_angles is None or isinstance(marked_angles, (str, bytes)) or not hasattr(marked_angles, "__iter__"):
        raise ValueError(f"the marks must be a list of angles in degrees, e.g. [30, 45]; got {marked_angles!r}.")
    points = toy_points()
    ids = []
    for angle in marked_angles:
        degrees = _degrees(angle)
        found = np.flatnonzero(np.isclose(points, degrees % 360.0))
        if not len(found):
            mark = f"{degrees:g}°" if np.isfinite(degrees) else repr(angle)
            raise ValueError(f"{mark} is not a point of the toy circle; mark points every {POINT_STEP:g}°, "
                             f"from 0° to {points[-1]:g}°.")
        ids.append(int(found[0]))
    if not ids:
        raise ValueError("no point is marked; mark two or three points of the circle as like the query, then learn.")
    return list(dict.fromkeys(ids))


def _degrees(angle) -> float:
    """``angle`` as a float; NaN for what is not a number, so that it matches no point and is no
    finite angle."""
    if isinstance(angle, bool):  # True is not 1°
        return float("nan")
    try:
        return float(angle)
    except (TypeError, ValueError):
        return float("nan")


def weight_table(angles: Sequence[float], weights: Sequence[float]) -> pd.DataFrame:
    """One row per anchor: ``anchor`` (its angle, ``"30°"``), ``angle`` and ``weight`` (normalised
    to sum to 1), for a bar chart."""
    values = np.asarray(weights, dtype=np.float64)
    return pd.DataFrame({"anchor": [f"{angle:g}°" for angle in angles], "angle": np.asarray(angles, dtype=np.float64),
                         "weight": values / values.sum()})
