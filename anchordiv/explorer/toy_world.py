"""The toy world's protocol (docs/design.md, "The toy world's protocol"): what the server sends the
Learn page's toy-world component (:func:`toy_payload`) and what it sends back on a release
(:class:`ToyState`, read by :func:`read_released`). The component computes every figure itself
(app/components/toy_world_math.js, anchordiv.lesson's numbers); the server only hands it the
page's settings and, for a Gaussian mixture, the k-means labels the library's EM starts from, so
that the page's fit is the library's. The app mounts it (``app/toy_world.py``).

A release comes from a browser, so it is outside input: :func:`read_released` keeps a state only
when every field is one the component could have sent, within the page's bounds, and else none.
Nothing here imports Streamlit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .. import lesson
from ..models import MixtureAnchors
from ..models.em import initial_labels
from ..models.mixture_of_gaussians import GaussianMixtureAnchors
from .settings import CIRCLE, SETTINGS, SPHERE

# What the page says under the controls, per world.
HINTS = {CIRCLE: "Drag the black query or any anchor round the circle; click near the circle to add an anchor to "
                 "the chosen set; click an anchor twice to remove it; move the query, s, p and the arc with the "
                 "sliders (or their arrow keys). The figures follow as you move; the page keeps the state when you "
                 "let go.",
         SPHERE: "Drag the sphere to turn it, the black query or an anchor to move it; click the sphere to add an "
                 "anchor to the chosen set; click an anchor twice to remove it; press or drag on a map to move the "
                 "query there; move the query, s and p with the sliders (or their arrow keys)."}
# The component's sliders (each with its Bounds in the payload's "controls"), by the Learn page's
# setting each moves and takes its bounds from: the query's angle on the circle (theta) and on the
# sphere (azimuth, elevation), the scale, p and the cosine arc's width.
SLIDER_SETTINGS = {"theta": "learn_query", "azimuth": "learn_query_azimuth", "elevation": "learn_query_elevation",
                   "scale": "learn_scale", "p": "learn_p", "width": "learn_width"}
SLIDERS = tuple(SLIDER_SETTINGS)


@dataclass(frozen=True)
class Bounds:
    """A slider's ``low``, ``high`` and ``step``, as the page's setting has them."""

    low: float
    high: float
    step: float

    def as_json(self) -> dict[str, float]:
        return {"min": self.low, "max": self.high, "step": self.step}

    def holds(self, value: Any) -> bool:
        return _number(value) and self.low <= value <= self.high


def slider_bounds() -> dict[str, Bounds]:
    """Each of the component's sliders' bounds, as the Learn page's setting has them (a whole
    number of degrees steps by one)."""
    return {name: Bounds(SETTINGS[key].low, SETTINGS[key].high, SETTINGS[key].step or 1)
            for name, key in SLIDER_SETTINGS.items()}


@dataclass(frozen=True)
class ToyState:
    """The toy world's state: ``world`` (:data:`CIRCLE` or :data:`SPHERE`), the ``query`` (an
    angle, or an ``(azimuth, elevation)`` pair, in degrees), the sets ``a`` and ``b`` (angles or
    pairs), the scale ``s``, the weight ``p`` and the cosine arc's ``width`` in degrees."""

    world: str
    query: float | tuple[float, float]
    a: tuple
    b: tuple
    scale: float
    p: float
    width: float

    def set_texts(self) -> tuple[str, str]:
        """Sets A and B as the page's text boxes hold them (:func:`set_text`)."""
        return set_text(self.world, self.a), set_text(self.world, self.b)


def set_text(world: str, angles: Sequence) -> str:
    """A set of ``world`` as the Learn page's text box holds it: ``"0, 40, 80"`` on the circle,
    ``"0 0; 60 0"`` on the sphere."""
    if world == CIRCLE:
        return ", ".join(f"{angle:g}" for angle in angles)
    return "; ".join(f"{azimuth:g} {elevation:g}" for azimuth, elevation in angles)


def check_set(world: str, angles: Sequence, name: str, allow_empty: bool) -> None:
    """A ``ValueError`` in the library's words (:func:`~anchordiv.lesson.parse_angles`,
    :func:`~anchordiv.lesson.parse_angle_pairs`) for a set (angles, or pairs) the Learn page would
    refuse typed: one direction twice, too many anchors, none where ``allow_empty`` is false.
    ``name`` names it ("Set A")."""
    parse = lesson.parse_angles if world == CIRCLE else lesson.parse_angle_pairs
    parse(set_text(world, angles), name, allow_empty)


def _number(value: Any) -> bool:
    """Whether ``value`` is a finite number as a float (a bool is not; a whole number too large for
    a float, which a forged report can send as JSON, is not either)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # math.isfinite converts an int to a float first
        return False


def _directions(world: str, angles: Sequence) -> Any:
    if world == CIRCLE:
        return lesson.circle_directions(list(angles))
    return lesson.sphere_directions([a for a, _ in angles], [e for _, e in angles])


def gmm_labels(state: ToyState, kind: str, weighting: str) -> list[list[int] | None] | None:
    """For a Gaussian mixture (``kind`` ``"gmm"``), each set's k-means labels ``(N_k,)`` as the
    library's EM starts from them (:func:`~anchordiv.models.em.initial_labels` with the fitted
    model's component count and seed; ``None`` for an empty B); ``None`` for other kinds, and for
    sets the library refuses to fit (the component refuses them too, in the library's words)."""
    if kind != "gmm":
        return None
    try:
        toy = lesson.toy_geometry(_directions(state.world, state.a), _directions(state.world, state.b), kind,
                                  state.scale, state.p, weighting)
    except ValueError:  # the sets are refused: the component says so in the library's words, and needs no labels
        return None
    models = toy.model.models if isinstance(toy.model, MixtureAnchors) else [toy.model]
    labels: list[list[int] | None] = []
    for model, anchors in zip(models, toy.component_anchors):
        assert isinstance(model, GaussianMixtureAnchors)
        labels.append([int(label) for label in initial_labels(anchors, model.n_components, model.random_state)])
    return labels + [None] * (2 - len(labels))


def toy_payload(state: ToyState, kind: str, weighting: str, bounds: Mapping[str, Bounds],
                companion_params: Sequence[str] = ()) -> dict[str, Any]:
    """What the component receives: the state, the anchor model ``kind`` and ``weighting`` (the
    page's menus), the sliders' ``bounds`` (each of :data:`SLIDERS`), the most anchors a
    set takes, the hint for the world and, for a GMM, the k-means labels (:func:`gmm_labels`); and
    for the page's history policy, which the Streamlit host mounts, the URL parameters the app sets
    beside another one (``companion_params``, as the p player's payload has them; none in a
    notebook). JSON-ready; at most :data:`~anchordiv.lesson.MAX_TOY_ANCHORS` anchors a set, as the
    page's parsing already enforces."""
    return {"world": state.world, "query": state.query, "sets": [list(map(_json_angles, state.a)),
                                                                 list(map(_json_angles, state.b))],
            "kind": kind, "weighting": weighting, "scale": state.scale, "p": state.p, "width": state.width,
            "labels": gmm_labels(state, kind, weighting), "max_anchors": lesson.MAX_TOY_ANCHORS,
            "controls": {name: bounds[name].as_json() for name in SLIDERS}, "hint": HINTS[state.world],
            "companion_params": list(companion_params)}


def _json_angles(angles: Any) -> Any:
    return list(angles) if isinstance(angles, tuple) else angles


def _sphere_pair(value: Any) -> tuple[float, float] | None:
    if not isinstance(value, (list, tuple)) or len(value) != 2 or not all(map(_number, value)):
        return None
    azimuth, elevation = float(value[0]), float(value[1])
    return (azimuth, elevation) if -180 <= azimuth <= 180 and -90 <= elevation <= 90 else None


def _query(value: Any, world: str, bounds: Mapping[str, Bounds]) -> float | tuple[float, float] | None:
    if world == CIRCLE:
        return float(value) if bounds["theta"].holds(value) else None
    pair = _sphere_pair(value)
    return pair if pair is not None and bounds["azimuth"].holds(pair[0]) and bounds["elevation"].holds(pair[1]) \
        else None


def _anchor_list(value: Any, world: str) -> tuple | None:
    """Angles (or pairs) the component can send for a set, or ``None`` for anything else."""
    if not isinstance(value, list) or len(value) > lesson.MAX_TOY_ANCHORS:
        return None
    read = [(float(angle) if _number(angle) else None) if world == CIRCLE else _sphere_pair(angle) for angle in value]
    return None if any(angle is None for angle in read) else tuple(read)


# The fields of a release, in ToyState's order after the world.
FIELDS = ("query", "a", "b", "scale", "p", "width")


def read_field(name: str, value: Any, world: str, bounds: Mapping[str, Bounds]) -> Any:
    """Field ``name`` (one of :data:`FIELDS`) of a state the component reports, read for the
    ``world`` and sliders' ``bounds``: the query (an angle on the theta slider, or an ``(azimuth,
    elevation)`` pair on theirs), a set (a tuple of finite angles, or of pairs on the sphere, at
    most :data:`~anchordiv.lesson.MAX_TOY_ANCHORS`), a number on its slider; ``None`` for anything
    the component could not have sent."""
    if name == "query":
        return _query(value, world, bounds)
    if name in ("a", "b"):
        return _anchor_list(value, world)
    return float(value) if bounds[name].holds(value) else None


def read_released(sent: Any, world: str, bounds: Mapping[str, Bounds]) -> ToyState | None:
    """The state a release reported (``{"world", "query", "a", "b", "scale", "p", "width"}``), read
    for the page's ``world`` and sliders' ``bounds`` (:func:`read_field`); ``None`` for anything the
    component could not have sent (another world, a query off its sliders, an anchor that is not a
    finite angle, a set longer than :data:`~anchordiv.lesson.MAX_TOY_ANCHORS`, a number off its
    slider). Whether the sets can be fitted (A empty, one direction twice) is the page's to say, as
    for typed sets."""
    if not isinstance(sent, Mapping) or sent.get("world") != world:
        return None
    read = [read_field(name, sent.get(name), world, bounds) for name in FIELDS]
    return None if any(value is None for value in read) else ToyState(world, *read)
