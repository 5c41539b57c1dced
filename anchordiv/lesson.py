"""A toy world small enough to see whole, for the explorer's Learn page: anchors are directions in
2-D (on the circle) or 3-D (on the sphere), the query is one more direction, and every picture is
computed by the library's own models (docs/design.md §1-§3); nothing here re-implements a formula.

Notation (as in docs/design.md): a direction ``u`` is a unit vector of dimension ``d`` (2 or 3);
``gamma_i`` the ``i``-th anchor; ``s`` the scale and ``eta = s u`` the natural parameter of ``u``;
``kappa(eta) = log E_P[exp(eta . gamma)]`` the anchor model's CGF and
``D(x -> y) = KL(p(.|eta_x) || p(.|eta_y))`` the anchor divergence. Angles are in degrees: on the
circle ``u(theta) = (cos theta, sin theta)``; on the sphere a direction is an azimuth ``phi``
(around the vertical axis, from the x axis) and an elevation ``e`` (above the horizontal plane),
``u(phi, e) = (cos e cos phi, cos e sin phi, sin e)``.

Everything is computed in float64, so the pictures agree with ``model.divergence`` to round-off.
Nothing here imports Streamlit or touches files.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from .explain import TiltedDistribution, tilted_distribution
from .models import AnchorModel, MixtureAnchors, anchor_model_kind, list_anchor_models

DTYPE = torch.float64
# The kinds a toy world can use: the posterior kinds also need a prior set, which the lesson leaves out.
TOY_KINDS: tuple[str, ...] = tuple(name for name in list_anchor_models() if not anchor_model_kind(name).needs_prior)
# What each weighting the toy world offers (of anchordiv.models.mixture.WEIGHTINGS, docs/design.md §3) means.
TOY_WEIGHTING_HELP: dict[str, str] = {
    "balanced": "Balanced: w ∝ p · exp(−mean κ over evenly spread directions), so at p = 0.5 neither set "
                "owns the tilt just for being tighter or smaller.",
    "literal": "Literal: the weights are (p, 1 − p) as they stand.",
}
# Why A's share of a query is one half where it is, under each of TOY_WEIGHTING_HELP.
TOY_SHARE_NOTES: dict[str, str] = {
    "balanced": "Balanced weights take each set's average κ (over evenly spread directions) off its weight, so the "
                "tighter set does not own the query at p = 0.5 just for being tight; the query's own κ still "
                "counts: a query that points at A's anchors is A's from a smaller p.",
    "literal": "Literal weights are (p, 1 − p) as they stand, so a set that explains the query much better (a "
               "larger κ, as a tight set near the query has) owns it for most p.",
}
# Evenly spread directions the balanced weights average kappa over.
REFERENCE_COUNT = 360
# Two anchors closer than this (in degrees) are one direction typed twice.
SAME_DIRECTION_DEG = 1e-6
# Anchors per set of the toy world: one every 5 degrees of the circle is more than a lesson needs.
MAX_TOY_ANCHORS = 72
_SEPARATORS = re.compile(r"[,;\s]+")


# -- typed angles -----------------------------------------------------------------------------------
def _numbers(text: str, name: str, example: str) -> list[float]:
    """The finite numbers in ``text`` (separated by commas, semicolons or spaces)."""
    values = []
    for token in _SEPARATORS.split(str(text).strip()):
        if not token:
            continue
        try:
            value = float(token)
        except ValueError:
            raise ValueError(f"{name}: {token!r} is not a number of degrees; type numbers separated by commas, "
                             f"e.g. {example!r}.") from None
        if not math.isfinite(value):
            raise ValueError(f"{name}: {token!r} is not a finite angle; type numbers of degrees, e.g. {example!r}.")
        values.append(value)
    return values


def _check_distinct(directions: torch.Tensor, labels: Sequence[str], name: str) -> None:
    """Refuse two rows of ``directions`` ``(N, d)`` that point the same way (e.g. 30 and 390 degrees)."""
    cosines = directions @ directions.T
    same = torch.triu(cosines >= math.cos(math.radians(SAME_DIRECTION_DEG)), diagonal=1).nonzero()
    if len(same):
        i, j = (int(k) for k in same[0])
        raise ValueError(f"{name}: {labels[i]} and {labels[j]} are the same direction; remove one (each anchor "
                         "is one direction; to weigh a direction more, add anchors near it).")


def _check_count(count: int, name: str) -> None:
    if count > MAX_TOY_ANCHORS:
        raise ValueError(f"{name} has {count:,} anchors; the toy world takes at most {MAX_TOY_ANCHORS} per set "
                         "(more hide each other on the picture and slow the page for everyone): remove some.")


def parse_angles(text: str, name: str = "angles", allow_empty: bool = False) -> list[float]:
    """Angles in degrees typed as text, e.g. ``"0, 45 120"`` -> ``[0.0, 45.0, 120.0]``.

    ``name`` names the list in errors. A ``ValueError`` (naming the bad entry and the fix) for an
    entry that is not a finite number, for two angles that are the same direction (``30`` and
    ``390``), and for no angle at all unless ``allow_empty``."""
    angles = _numbers(text, name, "0, 45, 120")
    _check_count(len(angles), name)
    if not angles and not allow_empty:
        raise ValueError(f"{name} is empty; type at least one angle in degrees, e.g. '0, 45, 120'.")
    if angles:
        _check_distinct(circle_directions(angles), [f"{angle:g}°" for angle in angles], name)
    return angles


def parse_angle_pairs(text: str, name: str = "directions", allow_empty: bool = False
                      ) -> list[tuple[float, float]]:
    """Directions on the sphere typed as ``azimuth elevation`` pairs in degrees, pairs separated by
    semicolons or new lines, e.g. ``"0 0; 90 30"`` -> ``[(0.0, 0.0), (90.0, 30.0)]``.

    Errors as in :func:`parse_angles`, and for a pair without exactly two numbers or an elevation
    outside ``[-90, 90]``."""
    example = "0 0; 90 30; 200 -20"
    pairs = []
    for entry in (part.strip() for part in re.split(r"[;\n]+", str(text))):
        if not entry:
            continue
        numbers = _numbers(entry, name, example)
        if len(numbers) != 2:
            raise ValueError(f"{name}: {entry!r} is not one azimuth and one elevation; type pairs of degrees "
                             f"separated by semicolons, e.g. {example!r}.")
        if not -90.0 <= numbers[1] <= 90.0:
            raise ValueError(f"{name}: elevation {numbers[1]:g}° in {entry!r} is outside [-90, 90]; 90 is straight "
                             "up and -90 straight down.")
        pairs.append((numbers[0], numbers[1]))
    _check_count(len(pairs), name)
    if not pairs and not allow_empty:
        raise ValueError(f"{name} is empty; type at least one azimuth–elevation pair, e.g. {example!r}.")
    if pairs:
        azimuths, elevations = zip(*pairs)
        _check_distinct(sphere_directions(azimuths, elevations), [f"({a:g}°, {e:g}°)" for a, e in pairs], name)
    return pairs


# -- directions -------------------------------------------------------------------------------------
def circle_directions(angles_deg: Sequence[float] | np.ndarray) -> torch.Tensor:
    """Unit vectors ``u(theta) = (cos theta, sin theta)`` for angles ``theta`` in degrees: ``(N, 2)`` float64."""
    theta = torch.as_tensor(np.radians(np.asarray(angles_deg, dtype=np.float64)).reshape(-1), dtype=DTYPE)
    return torch.stack([torch.cos(theta), torch.sin(theta)], dim=1)


def sphere_directions(azimuth_deg: Sequence[float] | np.ndarray, elevation_deg: Sequence[float] | np.ndarray
                      ) -> torch.Tensor:
    """Unit vectors ``u(phi, e) = (cos e cos phi, cos e sin phi, sin e)`` for azimuths ``phi`` and
    elevations ``e`` in degrees (same length ``N``): ``(N, 3)`` float64."""
    phi = torch.as_tensor(np.radians(np.asarray(azimuth_deg, dtype=np.float64)).reshape(-1), dtype=DTYPE)
    elevation = torch.as_tensor(np.radians(np.asarray(elevation_deg, dtype=np.float64)).reshape(-1), dtype=DTYPE)
    if phi.shape != elevation.shape:
        raise ValueError(f"got {len(phi)} azimuths and {len(elevation)} elevations; give one of each per direction.")
    return torch.stack([torch.cos(elevation) * torch.cos(phi), torch.cos(elevation) * torch.sin(phi),
                        torch.sin(elevation)], dim=1)


def reference_directions(dim: int, count: int = REFERENCE_COUNT) -> torch.Tensor:
    """``count`` directions spread evenly over the circle (``dim=2``: every ``360/count`` degrees) or
    the sphere (``dim=3``: a Fibonacci lattice, equal area per point): ``(count, dim)`` float64."""
    index = np.arange(count) + 0.5
    if dim == 2:
        return circle_directions(360.0 * index / count)
    if dim == 3:
        elevation = np.degrees(np.arcsin(1.0 - 2.0 * index / count))
        return sphere_directions(np.degrees(np.pi * (1.0 + 5.0**0.5) * index) % 360.0, elevation)
    raise ValueError(f"the toy world has directions in 2-D or 3-D; got dimension {dim}.")


def _direction_label(direction: torch.Tensor) -> str:
    """A direction ``(2,)`` as its angle, or ``(3,)`` as its azimuth and elevation, in degrees."""
    azimuth = round(math.degrees(math.atan2(float(direction[1]), float(direction[0]))), 2) % 360.0
    if len(direction) == 2:
        return _degrees(azimuth)
    elevation = math.degrees(math.asin(max(-1.0, min(1.0, float(direction[2])))))
    return f"({_degrees(azimuth)}, {_degrees(elevation)})"


def _degrees(value: float) -> str:
    """An angle as a person types it: ``"30°"``, ``"-12.5°"`` (two decimals at most, no ``-0``)."""
    return f"{round(value, 2) + 0.0:.2f}".rstrip("0").rstrip(".") + "°"


# -- the toy geometry -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ToyGeometry:
    """Anchor sets A (and B) of directions and the anchor model fitted to them.

    ``model`` is set A's model alone when B is empty, else ``MixtureAnchors([P_A, P_B], [p, 1 - p])``;
    ``notes`` what the registry adjusted (in plain words); ``component_anchors`` each set's
    directions ``(N_k, d)``, ``component_texts`` their labels (``"A2 30°"``: set, number, direction;
    unique, so no two bars of a chart merge) and ``component_names``
    ("A", "B"), row-aligned, as :class:`anchordiv.explorer.ExplorerGeometry` has them."""

    model: AnchorModel
    notes: tuple[str, ...]
    component_anchors: tuple[torch.Tensor, ...]
    component_texts: tuple[tuple[str, ...], ...]
    component_names: tuple[str, ...]

    @property
    def is_mixture(self) -> bool:
        return isinstance(self.model, MixtureAnchors)

    def model_at(self, p: float) -> AnchorModel:
        """The model at weights ``[p, 1 - p]`` (same components and weighting); for one set, the model."""
        return self.model.with_weights([_check_p(p), 1.0 - p]) if self.is_mixture else self.model

    def tilt(self, direction: torch.Tensor) -> TiltedDistribution:
        """The tilted distribution ``p(gamma_i | eta)``, ``eta = s u``, of direction ``u`` ``(d,)`` over
        the anchors (:func:`anchordiv.explain.tilted_distribution`; exact for the softmax model)."""
        return tilted_distribution(self.model, self.component_anchors, self.component_texts,
                                   self.component_names, direction)

    def anchor_table(self, direction: torch.Tensor) -> pd.DataFrame:
        """One row per anchor: ``anchor`` (its label), ``set``, its coordinates ``x``, ``y`` (and ``z``
        in 3-D) and ``probability``, its tilted probability for direction ``u`` ``(d,)`` (:meth:`tilt`)."""
        tilt = self.tilt(direction)
        coordinates = torch.cat(self.component_anchors).numpy()
        frame = pd.DataFrame({"anchor": tilt.texts, "set": tilt.components})
        for axis, column in zip("xyz", coordinates.T):
            frame[axis] = column
        frame["probability"] = tilt.probabilities
        return frame


def _check_p(p: float) -> float:
    if isinstance(p, bool) or not (isinstance(p, (int, float)) and 0.0 <= float(p) <= 1.0):
        raise ValueError(f"p={p!r} is the weight of set A; choose a number between 0 and 1.")
    return float(p)


def _anchor_set(anchors: torch.Tensor | None, name: str) -> torch.Tensor:
    """``anchors`` as a float64 ``(N, d)`` tensor of directions (``(0, 0)`` for none)."""
    if anchors is None or len(anchors) == 0:
        return torch.zeros((0, 0), dtype=DTYPE)
    matrix = torch.as_tensor(anchors, dtype=DTYPE)
    if matrix.ndim != 2 or matrix.shape[1] not in (2, 3):
        raise ValueError(f"set {name} must be directions of shape (N, 2) or (N, 3); got shape {tuple(matrix.shape)}. "
                         "Build them with circle_directions or sphere_directions.")
    return matrix


def toy_geometry(anchors_a: torch.Tensor, anchors_b: torch.Tensor | None = None, kind: str = "softmax",
                 scale: float = 5.0, p: float = 0.5, weighting: str = "balanced") -> ToyGeometry:
    """The anchor model ``kind`` (one of :data:`TOY_KINDS`) at scale ``s = scale`` fitted, through the
    registry, to set A ``anchors_a`` ``(N_A, d)`` and, when ``anchors_b`` ``(N_B, d)`` is given and
    not empty, to set B, mixed as ``MixtureAnchors([P_A, P_B], [p, 1 - p])``.

    ``weighting`` (a key of :data:`TOY_WEIGHTING_HELP`): "literal" uses the weights ``w = (p, 1 - p)``;
    "balanced" uses ``w_k ∝ p_k exp(-c_k)``, ``c_k`` the mean of ``kappa_k`` over
    :func:`reference_directions`, which stand in for the gallery of docs/design.md §3."""
    if kind not in TOY_KINDS:
        raise ValueError(f"the toy world offers the anchor models {list(TOY_KINDS)}; got {kind!r}.")
    if weighting not in TOY_WEIGHTING_HELP:
        raise ValueError(f"weighting={weighting!r}; choose one of {list(TOY_WEIGHTING_HELP)}.")
    p = _check_p(p)
    sets = [("A", _anchor_set(anchors_a, "A")), ("B", _anchor_set(anchors_b, "B"))]
    if len(sets[0][1]) == 0:
        raise ValueError("set A is empty; give it at least one direction (set B may be empty).")
    sets = [(name, anchors) for name, anchors in sets if len(anchors)]
    dims = {int(anchors.shape[1]) for _, anchors in sets}
    if len(dims) != 1:
        raise ValueError(f"sets A and B must live in one space; got dimensions {sorted(dims)}. Use circle "
                         "directions for both, or sphere directions for both.")
    models, notes = [], []
    for name, anchors in sets:
        model, model_notes = anchor_model_kind(kind).fit(anchors, scale)
        models.append(model)
        notes.extend(f"Set {name}: {note}" for note in model_notes)
    if len(models) == 1:
        notes.append("Set B is empty, so the model is set A's alone and p changes nothing.")
        model = models[0]
    else:
        mixture = MixtureAnchors(models, [p, 1.0 - p])
        model = mixture.with_balance(reference_directions(dims.pop()) if weighting == "balanced" else None)
    return ToyGeometry(model, tuple(notes), tuple(anchors for _, anchors in sets),
                       tuple(tuple(f"{name}{i} {_direction_label(row)}" for i, row in enumerate(anchors, 1))
                             for name, anchors in sets),
                       tuple(name for name, _ in sets))


# -- what the model says along the circle and over the sphere ---------------------------------------
def _check_dimension(model: AnchorModel, dim: int, use_instead: str) -> None:
    model.check_fitted()
    if model.n_features_in_ != dim:
        raise ValueError(f"this model's anchors have dimension {model.n_features_in_}, not {dim}; use {use_instead}.")


def _profile(model: AnchorModel, query: torch.Tensor, directions: torch.Tensor, reverse: bool) -> dict[str, np.ndarray]:
    """``kappa``, ``divergence``, ``cosine`` and ``cosine_distance`` at ``directions`` ``(n, d)`` for
    the query direction ``query`` ``(1, d)``."""
    cosine = (directions @ query[0]).numpy()
    return {"kappa": model.cgf(directions).numpy(),
            "divergence": model.divergence(query, directions, reverse=reverse)[0].numpy(),
            "cosine": cosine, "cosine_distance": 1.0 - cosine}


def _finite(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name}={value!r} must be a finite number of degrees.")
    return float(value)


def circle_profile(model: AnchorModel, query_angle_deg: float, n: int = 360, reverse: bool = False) -> pd.DataFrame:
    """What a 2-D ``model`` says along the circle, at ``n`` evenly spaced angles ``theta`` (from 0°,
    every ``360/n`` degrees), seen from the query direction ``x = u(query_angle_deg)``.

    Columns: ``angle`` (``theta``, degrees); ``x``, ``y``, the coordinates of ``u(theta)``;
    ``kappa`` = ``kappa(s u(theta))`` (``model.cgf``); ``divergence`` = ``D(x -> u(theta))``
    (``model.divergence``; ``reverse``: ``D(u(theta) -> x)``); ``cosine`` = ``x . u(theta)`` and
    ``cosine_distance`` = ``1 - cosine``."""
    _check_dimension(model, 2, "sphere_profile for directions in 3-D")
    if isinstance(n, bool) or not isinstance(n, int) or n < 4:
        raise ValueError(f"n={n!r} must be a whole number of angles, at least 4; 360 gives one per degree.")
    angles = np.arange(n) * 360.0 / n
    directions = circle_directions(angles)
    query = circle_directions([_finite(query_angle_deg, "query_angle_deg")])
    return pd.DataFrame({"angle": angles, "x": directions[:, 0].numpy(), "y": directions[:, 1].numpy(),
                         **_profile(model, query, directions, reverse)})


def sphere_profile(model: AnchorModel, query_azimuth_deg: float, query_elevation_deg: float, step_deg: float = 5.0,
                   reverse: bool = False) -> pd.DataFrame:
    """What a 3-D ``model`` says over the sphere, on a grid of azimuths ``-180..180`` and elevations
    ``-90..90`` every ``step_deg`` degrees, seen from the query ``x = u(query_azimuth_deg, query_elevation_deg)``.

    Columns ``azimuth``, ``elevation`` and, as in :func:`circle_profile`, ``kappa``, ``divergence``
    (``D(x -> u)``), ``cosine`` and ``cosine_distance``; one row per grid point, azimuth fastest."""
    _check_dimension(model, 3, "circle_profile for directions in 2-D")
    if not 0.0 < float(step_deg) <= 90.0:
        raise ValueError(f"step_deg={step_deg!r} must be in (0, 90]; 5 gives a 73 x 37 grid.")
    elevation = _finite(query_elevation_deg, "query_elevation_deg")
    if not -90.0 <= elevation <= 90.0:
        raise ValueError(f"query_elevation_deg={elevation:g} is outside [-90, 90].")
    query = sphere_directions([_finite(query_azimuth_deg, "query_azimuth_deg")], [elevation])
    grid_azimuth, grid_elevation = np.meshgrid(np.arange(-180.0, 180.0 + 1e-9, step_deg),
                                               np.arange(-90.0, 90.0 + 1e-9, step_deg))
    azimuths, elevations = grid_azimuth.ravel(), grid_elevation.ravel()
    return pd.DataFrame({"azimuth": azimuths, "elevation": elevations,
                         **_profile(model, query, sphere_directions(azimuths, elevations), reverse)})


def equal_size_neighbourhoods(profile: pd.DataFrame, width_deg: float) -> pd.DataFrame:
    """The query's neighbourhood on the circle under each geometry, at one size.

    The cosine neighbourhood is the arc of width ``width_deg`` centred on the query: the directions
    with ``cosine >= cos(width_deg / 2)``. The divergence neighbourhood holds as many directions of
    ``profile`` (a :func:`circle_profile`), those of smallest ``divergence``: the top-``k`` a search
    by each geometry would return, ``k`` being the arc's size. Returns ``profile`` with boolean
    columns ``near_by_cosine`` and ``near_by_divergence``; where the second is longer than the arc
    on one side, the anchors stretch the neighbourhood that way."""
    if not 0.0 < float(width_deg) <= 360.0:
        raise ValueError(f"width_deg={width_deg!r} must be in (0, 360]: the width of the cosine arc in degrees.")
    near_by_cosine = profile["cosine"].to_numpy() >= math.cos(math.radians(width_deg / 2.0)) - 1e-12
    count = max(1, int(near_by_cosine.sum()))
    closest = np.argsort(profile["divergence"].to_numpy(), kind="stable")[:count]
    near_by_divergence = np.zeros(len(profile), dtype=bool)
    near_by_divergence[closest] = True
    return profile.assign(near_by_cosine=near_by_cosine, near_by_divergence=near_by_divergence)


def responsibility_curve(model_at: Callable[[float], AnchorModel], points: Mapping[str, torch.Tensor],
                         ps: Sequence[float] = tuple(np.linspace(0.0, 1.0, 21)),
                         component_names: Sequence[str] = ("A", "B")) -> pd.DataFrame:
    """How the tilt of each point is shared between the mixture's components as ``p`` moves.

    ``model_at(p)`` is the mixture at weight ``p`` (``ToyGeometry.model_at`` or
    ``ExplorerGeometry.model_at``); ``points`` maps a name to a direction or embedding ``(d,)``.
    For each ``p`` in ``ps``, each point ``x`` and each component ``k`` (named by
    ``component_names``), a row ``(p, point, component, responsibility)`` with
    ``responsibility = r_k(s x) = softmax_k(log w_k + kappa_k(s x))`` (:meth:`MixtureAnchors.responsibilities`)."""
    names = list(points)
    stacked = torch.stack([torch.as_tensor(points[name]).reshape(-1) for name in names])
    rows = []
    for p in ps:
        model = model_at(float(p))
        if not isinstance(model, MixtureAnchors):
            raise ValueError("responsibilities need two anchor sets (a mixture); set B is empty, so A has it all.")
        if len(component_names) != len(model.models):
            raise ValueError(f"{len(component_names)} component names for a mixture of {len(model.models)}; "
                             "name each component once.")
        shares = model.responsibilities(stacked).numpy()
        rows.extend((float(p), name, component, float(shares[i, k]))
                    for i, name in enumerate(names) for k, component in enumerate(component_names))
    return pd.DataFrame(rows, columns=["p", "point", "component", "responsibility"])


def share_of_a(model: AnchorModel, point: torch.Tensor) -> float:
    """Set A's share of the tilt of ``point`` ``(d,)`` under the two-set mixture ``model``:
    ``r_A(s x)`` (:meth:`MixtureAnchors.responsibilities`). Raises ``ValueError`` when ``model`` is
    not a mixture of two sets."""
    if not isinstance(model, MixtureAnchors) or len(model.models) != 2:
        raise ValueError("A's share needs two anchor sets (a mixture of A and B); set B is empty, so A has it all.")
    return float(model.responsibilities(torch.as_tensor(point).reshape(1, -1))[0, 0])


def even_share_p(model_at: Callable[[float], AnchorModel], point: torch.Tensor, tolerance: float = 1e-4) -> float:
    """The weight ``p`` at which set A takes half of the tilt of ``point`` ``(d,)``: ``r_A(s x) = 1/2``
    (:func:`share_of_a`), to within ``tolerance``.

    ``model_at(p)`` is the two-set mixture at weight ``p`` (as for :func:`responsibility_curve`).
    Under every weighting ``r_A`` grows with ``p`` from 0 (``w_A = 0`` at ``p = 0``) to 1
    (``w_B = 0`` at ``p = 1``): literal and balanced weights make ``w_A / w_B`` proportional to
    ``p / (1 - p)``, calibrated ones map ``p`` to that log-odds monotonically. So the crossing
    exists and bisection finds it. Where it lies says what ``p`` means under the weighting: the
    weight itself (literal), the weight once each set's average ``kappa`` is taken off (balanced),
    or how far the neighbourhoods have moved from B's to A's (calibrated), not this share.

    Raises ``ValueError`` when ``model_at`` does not give a mixture of two sets."""
    if not 0.0 < tolerance < 0.5:
        raise ValueError(f"tolerance={tolerance!r} must be a small positive number (below 0.5).")
    low, high = 0.0, 1.0
    while high - low > tolerance:
        middle = (low + high) / 2.0
        low, high = (middle, high) if share_of_a(model_at(middle), point) < 0.5 else (low, middle)
    return (low + high) / 2.0
