"""The Learn page's toy world as a notebook widget: :class:`ToyWorld`, an ``anywidget.AnyWidget``.

The widget is the server of the toy world's protocol (docs/design.md, "The toy world's protocol"):
it builds the payload with :func:`~anchordiv.explorer.toy_world.toy_payload` (for a Gaussian
mixture, the k-means labels the library's EM starts from) and reads what the browser reports with
the :func:`~anchordiv.explorer.toy_world.read_field`, field by field, as the Learn page reads a
release; its sets also as the page reads typed ones (:func:`~anchordiv.explorer.toy_world.check_set`).

Its browser side is ``app/components/toy_world_widget.js``, a thin adapter over the code the
Learn page runs (``toy_world.js``'s ``mountToyWorld``, which fits and draws everything in the
browser), given to anywidget as one module text with its sibling modules inlined
(:func:`~anchordiv.explorer.components.module_text`), as :class:`~anchordiv.widgets.PPlayer`'s is.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

import anywidget
import numpy as np
import traitlets

from .. import lesson
from ..explorer.components import component_text, module_text
from ..explorer.settings import CIRCLE, SETTINGS, SPHERE
from ..explorer.toy_world import FIELDS, ToyState, check_set, read_field, slider_bounds, toy_payload
from .p_player import Unread

# What a value a field cannot take is told, by field (the Learn page's names of them).
_FIELD_WORDS = {
    "query": {CIRCLE: "an angle in degrees from 0 to 359", SPHERE: "an (azimuth, elevation) pair in degrees, azimuth "
              "from -180 to 180 and elevation from -90 to 90"},
    "a": {CIRCLE: "a list of angles in degrees", SPHERE: "a list of (azimuth, elevation) pairs in degrees"},
}
_FIELD_WORDS["b"] = _FIELD_WORDS["a"]


def _plain(value: Any) -> Any:
    """``value`` with NumPy scalars and arrays and tuples as the JSON a browser sends (numbers and
    lists), so that Python's values are read as the browser's are."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, list, np.ndarray)):
        return [_plain(item) for item in value]
    return value


class ToyWorld(anywidget.AnyWidget):
    """The Learn page's toy world in a notebook: anchors and a query as directions on a circle (or a
    sphere), two anchor sets A and B mixed by ``p``, and every figure of the page (the anchors sized
    by the query's tilted probability, its cosine and divergence neighbourhoods, kappa along the
    circle, the divergence against cosine, the sphere's maps, the tilt and A's and B's shares as
    ``p`` moves), computed and drawn in the browser at every move with no request to the kernel.
    Drag the query or an anchor, click by the circle to add an anchor, click one twice to remove it,
    turn the sphere, move the query, ``s``, ``p`` and the arc with the sliders or arrow keys; what is
    let go comes back as the traits below.

    Parameters
    ----------
    a : sequence
        Set A: angles in degrees (the circle) or ``(azimuth, elevation)`` pairs (the sphere), at least
        one, at most :data:`~anchordiv.lesson.MAX_TOY_ANCHORS`, no direction twice.
    b : sequence
        Set B, as ``a``; may be empty (then ``p`` changes nothing).
    query : float or pair of float
        The query: an angle in ``[0, 359]`` degrees, or an ``(azimuth, elevation)`` pair.
    world : str
        ``"circle"`` or ``"sphere"``.
    kind : str
        The anchor model fitted to each set, one of :data:`~anchordiv.lesson.TOY_KINDS`.
    weighting : str
        How ``p`` becomes the sets' weights: ``"balanced"`` or ``"literal"``
        (:data:`~anchordiv.lesson.TOY_WEIGHTING_HELP`).
    scale, p, width : float
        The scale ``s`` (0.5 to 40), the weight ``p`` of A (0 to 1) and the cosine arc's width in
        degrees (5 to 180), within the Learn page's sliders' bounds.
    **kwargs
        Passed to :class:`anywidget.AnyWidget` (``layout``, ...).

    Attributes
    ----------
    query, a, b, scale, p, width
        The world's state as last let go in the browser, or set from Python (which draws the world
        again): each read as the Learn page reads a release, a set also as it reads a typed one;
        anything else is a :class:`traitlets.TraitError` saying what the field takes, and the trait
        keeps its value. On the circle the query is a float and a set a list of floats; on the
        sphere, lists of two floats.

    Raises
    ------
    ValueError
        An unknown ``world``, ``kind`` or ``weighting``.
    traitlets.TraitError
        A field's value it cannot take (as for the attributes).
    """

    _esm = module_text("toy_world_widget.js")
    # p_player_widget.css themes .adp-notebook (the adapter's element) with the notebook's colours.
    _css = component_text("toy_world.css") + component_text("p_player_widget.css")
    # The component's markup, as the Learn page is given it (toy_world.html, shipped).
    _html = traitlets.Unicode(component_text("toy_world.html")).tag(sync=True)
    # The protocol's payload, built again from the traits below whenever one changes.
    _payload = traitlets.Dict().tag(sync=True)
    query = Unread(0.0).tag(sync=True)
    a = Unread([]).tag(sync=True)
    b = Unread([]).tag(sync=True)
    scale = Unread(1.0).tag(sync=True)
    p = Unread(0.5).tag(sync=True)
    width = Unread(40.0).tag(sync=True)

    def __init__(self, a: Sequence = (0, 40, 80), b: Sequence = (160, 250), query: Any = 120, *,
                 world: str = CIRCLE, kind: str = "softmax", weighting: str = "balanced",
                 scale: float = SETTINGS["learn_scale"].default, p: float = SETTINGS["learn_p"].default,
                 width: float = SETTINGS["learn_width"].default, **kwargs: Any):
        if world not in (CIRCLE, SPHERE):
            raise ValueError(f"world={world!r}; choose {CIRCLE!r} or {SPHERE!r}")
        if kind not in lesson.TOY_KINDS:
            raise ValueError(f"kind={kind!r}; the toy world offers the anchor models {list(lesson.TOY_KINDS)}")
        if weighting not in lesson.TOY_WEIGHTING_HELP:
            raise ValueError(f"weighting={weighting!r}; choose one of {list(lesson.TOY_WEIGHTING_HELP)}")
        self.world, self.kind, self.weighting = world, kind, weighting  # what the validators read
        self._bounds = slider_bounds()
        super().__init__(query=query, a=a, b=b, scale=scale, p=p, width=width, **kwargs)
        self._draw()

    def state(self) -> ToyState:
        """The world's state as the traits hold it."""
        sphere = self.world == SPHERE
        sets = (tuple(map(tuple, angles)) if sphere else tuple(angles) for angles in (self.a, self.b))
        return ToyState(self.world, tuple(self.query) if sphere else self.query, *sets, self.scale, self.p, self.width)

    @traitlets.validate(*FIELDS)
    def _read(self, proposal: dict) -> Any:
        """A field from Python or the browser, read as the Learn page reads a release (a set also as
        it reads a typed one: no direction twice, A not empty)."""
        name = proposal["trait"].name
        read = read_field(name, _plain(proposal["value"]), self.world, self._bounds)
        if read is None:
            bounds = self._bounds.get(name)
            takes = _FIELD_WORDS[name][self.world] if name in _FIELD_WORDS else \
                f"a number from {bounds.low:g} to {bounds.high:g}"
            raise traitlets.TraitError(f"{name} must be {takes}; got {proposal['value']!r}")
        if name in ("a", "b"):
            try:
                check_set(self.world, read, f"Set {name.upper()}", allow_empty=name == "b")
            except ValueError as error:
                raise traitlets.TraitError(str(error)) from None
            return [list(pair) for pair in read] if self.world == SPHERE else list(read)
        return list(read) if isinstance(read, tuple) else read

    @traitlets.observe(*FIELDS)
    def _redraw(self, change: dict) -> None:
        if self._payload:  # __init__ draws once its traits are all set
            self._draw()

    def _draw(self) -> None:
        """The payload of the traits as they are (for a GMM, the library's k-means labels of the sets)."""
        # Plain JSON (tuples as lists), as the notebook keeps it.
        self._payload = json.loads(json.dumps(toy_payload(self.state(), self.kind, self.weighting, self._bounds)))
