"""The p player as a notebook widget: :class:`PPlayer`, an ``anywidget.AnyWidget``.

The widget is the server of the p player's protocol (docs/design.md §13): it computes the query's
whole p path once, as the explorer does (:meth:`~anchordiv.explorer.ExplorerGeometry.p_path` for two
anchor sets, :func:`~anchordiv.slider.query_path` for a fitted mixture), builds the payload with
:func:`~anchordiv.explorer.p_player.player_payload` (each image a ``data:`` address of its 96 px PNG)
and reads what the browser sends with :func:`~anchordiv.explorer.p_player.read_reply`'s checks.

Its browser side is ``app/components/p_player_widget.js``, a thin adapter over the drawing code the
explorer's page runs (``p_player.js``'s ``mountPlayer``), given to anywidget as one module text
with its sibling modules inlined (:func:`~anchordiv.explorer.components.module_text`): anywidget
loads ``_esm`` from a ``blob:`` address, against which no "./" import resolves.
"""
from __future__ import annotations

import base64
import json
import uuid
import warnings
from typing import Any, Sequence

import anywidget
import numpy as np
import torch
import traitlets

from .._validation import check_positive_int
from ..explorer.components import component_text, module_text
from ..explorer.feedback import MAX_MARKS
from ..explorer.geometry import GeometrySpec
from ..explorer.limits import TOP_K
from ..explorer.p_player import PlayerMarks, PlayerPath, baseline_panel, player_data, player_payload, position_of, read_reply
from ..explorer.settings import SETTINGS
from ..explorer.source import MemorySource
from ..explorer.thumbnails import png_bytes
from ..gallery import Gallery
from ..models import MixtureAnchors
from ..models.registry import anchor_model_kind
from ..search import AnchorIndex
from ..slider import DEFAULT_PATH_STEPS, SliderPath, query_path

LABEL = SETTINGS["p"].label
# The explorer's help for p (SETTINGS["p"].help) names ITI, which a notebook's player does not show.
HELP = ("p = 1: only set A's anchors, p = 0: only set B's. Moves the anchor-divergence neighbours only: cosine "
        "does not depend on the anchor weights. Arrow keys step p, Home and End go to the ends, Space plays.")
COSINE_TITLE = "Cosine similarity"
# The PNG bytes one widget sends its notebook (each image at most 96 px, at most MAX_PLAYER_ITEMS of
# them): a notebook keeps a widget's state in its output, so a path of large photos is refused
# with a message asking for a lower top-k rather than making the notebook megabytes heavier.
MAX_IMAGE_BYTES = 8 * 2**20


class Unread(traitlets.Any):
    """A trait that takes any value, ``None`` included, to its validator: what the kernel receives
    from a browser is read there, never before (:class:`traitlets.Any` lets ``None`` through unread)."""

    allow_none = False


class PPlayer(anywidget.AnyWidget):
    """The p player of a query over a gallery, in a notebook: a query's top-``k`` anchor-divergence
    neighbours at every ``p`` from 0 (anchor set B alone) to 1 (A alone), played in the browser with
    no request to the kernel per step (Play, the slider, arrow keys, Home, End, Space), beside the
    cosine neighbours, which ``p`` does not move. Each image has a "like the query" toggle.

    Parameters
    ----------
    gallery : Gallery or MemorySource
        The images ranked: ``G`` embeddings ``(G, d)`` with labels and a way to show each image.
    query : int or array of shape (d,)
        A gallery item (left out of its own neighbours; its labels give the ``✓obj`` / ``✓sty``
        marks) or an embedding.
    anchors : pair of tensors of shapes (N_A, d) and (N_B, d), optional
        Anchor sets A and B, fitted as the explorer fits them (each by ``spec``'s kind, the mixture
        balanced and calibrated on the gallery). Give this or ``mixture``.
    mixture : MixtureAnchors, optional
        A fitted two-component mixture (A first), moved by ``with_weights([p, 1 - p])`` in its own
        weighting (literal, balanced or calibrated).
    texts : pair of sequences of str, optional
        The anchors' texts, row-aligned with ``anchors`` (kept with the geometry; default: ``"A 1"``,
        ``"A 2"``, ... and ``"B 1"``, ...).
    k : int
        Neighbours per grid, 1 to :data:`~anchordiv.explorer.limits.TOP_K` (50).
    p : float
        Where the player starts (a number in ``[0, 1]``, read as a released ``p`` is).
    spec : GeometrySpec
        The anchor model fitted to each set and its scale (with ``anchors``).
    weighting : str
        How ``p`` becomes the mixture's weights with ``anchors``: ``"calibrated"`` (the explorer's
        default), ``"balanced"`` or ``"literal"``.
    steps : int
        Positions of the slider, evenly spaced from 0 to 1 (at most 101).
    cosine : bool
        Whether the cosine neighbours are drawn beside the player's.
    **kwargs
        Passed to :class:`anywidget.AnyWidget` (``layout``, ...).

    Attributes
    ----------
    p : float
        The ``p`` the player shows when released (one of the path's positions). Set it to move the
        player: a number is clamped to ``[0, 1]`` and taken to the nearest position (the lower on a
        tie); anything else (a text, NaN, a bool) is a :class:`traitlets.TraitError`.
    marks : list of int
        The gallery ids marked "like the query", each once, at most
        :data:`~anchordiv.explorer.feedback.MAX_MARKS`; set it to mark from Python. What is not such
        an id is left out with a warning that says so.
    path : SliderPath
        The path played: ``S`` positions ``p`` ``(S,)``, and ``values`` and ``ids`` ``(S, k)``.

    Raises
    ------
    ValueError
        Neither or both of ``anchors`` and ``mixture``; an empty anchor set; a mixture not of two
        components; ``k`` outside ``1 .. TOP_K``; a path of more steps or distinct images than the
        protocol's limits, or images of more than :data:`MAX_IMAGE_BYTES` (lower ``k``).
    """

    _esm = module_text("p_player_widget.js")
    _css = component_text("p_player.css") + component_text("p_player_widget.css")
    # The component's markup, as the explorer's page is given it (p_player.html, shipped).
    _html = traitlets.Unicode(component_text("p_player.html")).tag(sync=True)
    # The protocol's payload (PlayerPayload as JSON), sent once: p and marks travel as their own traits.
    _payload = traitlets.Dict().tag(sync=True)
    # Each read by the protocol's reader (the validators below), whether Python or the browser set it.
    p = Unread(0.5).tag(sync=True)
    marks = Unread([]).tag(sync=True)
    _marks_open = traitlets.Bool(True).tag(sync=True)

    def __init__(self, gallery: Gallery | MemorySource, query: int | Any, anchors: Sequence[torch.Tensor] | None = None,
                 *, mixture: MixtureAnchors | None = None, texts: Sequence[Sequence[str]] | None = None, k: int = 10,
                 p: float = 0.5, spec: GeometrySpec = GeometrySpec(), weighting: str = "calibrated",
                 steps: int = DEFAULT_PATH_STEPS, cosine: bool = True, **kwargs: Any):
        source = gallery if isinstance(gallery, MemorySource) else MemorySource(gallery)
        k = check_positive_int(k, "k")
        if k > TOP_K:
            raise ValueError(f"k={k} is more neighbours than the player shows (at most {TOP_K}); lower k")
        if (anchors is None) == (mixture is None):
            raise ValueError("give the anchor sets (anchors=(A, B)) or a fitted two-component mixture (mixture=...), "
                             "one of the two")
        if isinstance(query, (int, np.integer)) and not isinstance(query, bool):
            exclude = check_item(query, len(source))
            vector, query_labels = source.vector(exclude), source.labels_of(exclude)
        else:
            exclude, vector, query_labels = None, np.asarray(query, dtype=np.float32).reshape(-1), None
        if anchors is not None:
            self.path = anchor_path(source, anchors, texts, spec, weighting, vector, k, exclude, steps)
            title = f"Anchor divergence ({anchor_model_kind(spec.kind).short}, p = {{p}})"
        else:
            self.path = mixture_path(source, mixture, vector, k, exclude, steps)
            title = "Anchor divergence (p = {p})"
        self._n_items = len(source)  # what the validators read, before any trait is set
        self._player_path = player_data(self.path, source, query_labels, key="path", title=title, step_notes=(),
                                        enabled=True)
        baselines = []
        if cosine:
            table = source.neighbour_table(*source.cosine_top_k(vector, k, exclude), query_labels, "similarity")
            baselines.append(baseline_panel(COSINE_TITLE, table, source))
        start = self._read_p({"value": p})
        payload = player_payload(self._player_path, p=start, address=ImageAddresses(source), label=LABEL, help=HELP,
                                 baselines=baselines, marks=PlayerMarks((), True),
                                 instance=f"p_player-{uuid.uuid4().hex[:12]}", companion_params=())
        # Plain JSON (tuples as lists), as the notebook keeps it.
        super().__init__(_payload=json.loads(json.dumps(payload.as_json())), p=start, marks=[], **kwargs)

    @traitlets.validate("p")
    def _read_p(self, proposal: dict) -> float:
        """A ``p`` from Python or the browser, read as the protocol reads a released one, at the path's
        position nearest it."""
        value = proposal["value"]
        # A NumPy scalar from Python (the browser sends JSON) is read as the number it holds.
        p = read_reply({"p": value.item() if isinstance(value, np.generic) else value}, self._n_items).p
        if p is None:
            raise traitlets.TraitError(f"p must be a finite number in [0, 1]; got {proposal['value']!r}")
        return position_of(self._player_path, p)

    @traitlets.validate("marks")
    def _read_marks(self, proposal: dict) -> list[int]:
        """Marks from Python or the browser, read as the protocol reads reported ones: ids of the
        gallery, each once, at most MAX_MARKS; what was left out is named in a warning."""
        checked = read_reply({"marks": proposal["value"]}, self._n_items).marks
        note = checked.note("The marks", f"the {self._n_items:,} images of this gallery",
                            "Mark gallery ids (whole numbers from 0).")
        if note:
            warnings.warn(note, stacklevel=2)
        return checked.kept

    @traitlets.observe("marks")
    def _close_marks(self, change: dict) -> None:
        # Past MAX_MARKS the toggles of unmarked images are disabled, as on the explorer's page.
        self._marks_open = len(change["new"]) < MAX_MARKS


def check_item(item: int, n_items: int) -> int:
    """``item`` as a gallery id of a gallery of ``n_items`` images, else a ``ValueError``."""
    if not 0 <= int(item) < n_items:
        raise ValueError(f"query={int(item)} is not an item of this gallery of {n_items:,} images (0 to {n_items - 1})")
    return int(item)


def anchor_path(source: MemorySource, anchors: Sequence[torch.Tensor], texts: Sequence[Sequence[str]] | None,
                spec: GeometrySpec, weighting: str, query: np.ndarray, k: int, exclude: int | None,
                steps: int) -> SliderPath:
    """The query's p path between anchor sets A and B ``(N_A, d)``, ``(N_B, d)``, fitted and
    calibrated on ``source`` as the explorer fits them (:meth:`MemorySource.fit_geometry`)."""
    if len(anchors) != 2 or any(len(anchors_) == 0 for anchors_ in anchors):
        raise ValueError("anchors must be two non-empty anchor sets (A, B), each a tensor of shape (N, d)")
    sets = [torch.as_tensor(anchors_, dtype=torch.float32) for anchors_ in anchors]
    if texts is None:
        texts = [[f"{name} {row + 1}" for row in range(len(set_))] for name, set_ in zip("AB", sets)]
    geometry = source.fit_geometry(sets, [list(set_texts) for set_texts in texts], spec)
    return geometry.p_path(query, k, exclude, weighting, steps)


def mixture_path(source: MemorySource, mixture: MixtureAnchors, query: np.ndarray, k: int, exclude: int | None,
                 steps: int) -> SliderPath:
    """The query's p path under a fitted two-component ``mixture`` over ``source``, through its
    certified slider (:func:`~anchordiv.slider.query_path`)."""
    if not isinstance(mixture, MixtureAnchors) or len(mixture.models) != 2:
        raise ValueError(f"mixture must be a fitted MixtureAnchors of two components (A, B); got {mixture!r}")
    index = AnchorIndex(mixture, source.gallery.embeddings, device=source.device)
    return query_path(index, query, k, exclude, steps)


class ImageAddresses:
    """Each image's address in the payload: its thumbnail (at most 96 px) as a ``data:`` address of
    PNG data, made once per item; ``ValueError`` once they pass :data:`MAX_IMAGE_BYTES`."""

    def __init__(self, source: MemorySource):
        self._source = source
        self._made: dict[int, str] = {}
        self._bytes = 0

    def __call__(self, ids: list[int]) -> list[str]:
        missing = [item for item in dict.fromkeys(ids) if item not in self._made]
        for item, image in zip(missing, self._source.thumbnails(missing)):
            png = png_bytes(image)
            self._bytes += len(png)
            if self._bytes > MAX_IMAGE_BYTES:
                raise ValueError(f"the p path's images take more than {MAX_IMAGE_BYTES // 2**20} MB as PNG, more than "
                                 "one widget sends a notebook; lower k")
            self._made[item] = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        return [self._made[item] for item in ids]
