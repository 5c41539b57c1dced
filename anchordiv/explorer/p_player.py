"""The ``p`` player's protocol (docs/design.md §13, "The p player's protocol"): what the server
sends the browser component that plays a query's p path (:class:`PlayerPayload`, built by
:func:`player_payload`) and what the component sends back (:class:`PlayerReply`, read by
:func:`read_reply`). Both are built or read here and nowhere else; the app only mounts the
component (``app/p_player.py``).

The path's part of the payload (:class:`PlayerPath`, :func:`player_data`: the exact top-``k`` at
every position of the ``p`` slider, a :class:`~anchordiv.slider.SliderPath`, as captions and
indices) is the same for every run on the same path, so the app caches it; the rest is the page's
(its ``p``, the baselines' grids, the marks, each image's address).

The payload is bounded: at most :data:`MAX_PLAYER_STEPS` positions and :data:`MAX_PLAYER_ITEMS`
distinct images, so that a link asking for a large ``k`` cannot make a page send megabytes. The
reply comes from a browser, so it is outside input: :func:`read_reply` keeps only what the
component could have sent. Nothing here imports Streamlit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..slider import SliderPath
from .feedback import MAX_MARKS
from .neighbours import agreement_text, caption_heads, grid_tiles
from .source import GallerySource
from .widget_values import Checked, gallery_ids

MAX_PLAYER_STEPS = 101
# Distinct images one path may show (about 6 KB each as the grid's 96 px PNGs): a path of k = 50
# over 101 steps shows a few hundred at most in practice; more is refused with a message.
MAX_PLAYER_ITEMS = 600


@dataclass(frozen=True)
class PlayerTile:
    """One image as the player draws it (:func:`~.neighbours.grid_tiles`): ``id`` (gallery id),
    ``name`` (whole, for the tooltip and alternative text), ``line`` (the caption's second line),
    ``marks`` (``✓obj`` / ``✓sty``), ``head`` (the caption's first line, for a baseline's tile; the
    path's own tiles take theirs per step from :attr:`PlayerPath.heads`, so theirs is ``""``) and
    ``src`` (the image's address, which the app adds: ``""`` until then)."""

    id: int
    name: str
    line: str
    marks: str
    head: str = ""
    src: str = ""

    def as_json(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass(frozen=True)
class BaselinePanel:
    """A baseline's grid (cosine, ITI), which ``p`` does not move: its title, its agreement line
    with the query's labels and its tiles, best first."""

    title: str
    agreement: str
    tiles: tuple[PlayerTile, ...]

    def as_json(self) -> dict[str, Any]:
        return {"title": self.title, "agreement": self.agreement, "tiles": [tile.as_json() for tile in self.tiles]}


@dataclass(frozen=True)
class PlayerMarks:
    """What the "like the query" toggles show: the gallery ids marked (``like``) and whether more
    may be marked (``enabled``)."""

    like: tuple[int, ...]
    enabled: bool


@dataclass(frozen=True)
class PlayerPath:
    """The path's part of the payload (:func:`player_data`), ``S`` steps of top ``k``.

    Attributes
    ----------
    key : names the path (query, geometry, ``k``, weighting): the browser keeps its own ``p``
        while the key stays the same.
    p : ``(S,)`` the slider's positions, ascending.
    title : the grid's heading, with ``{p}`` where the current ``p`` goes.
    enabled : ``False`` where ``p`` has no effect (one anchor set): the slider is shown disabled.
    items : each distinct image the path shows, once, ascending by id (``head`` and ``src`` empty).
    order : ``(S, k)`` each step's images as indices into ``items``, best first.
    heads : ``(S, k)`` each caption's first line (rank, ``d=`` value).
    agreement : ``(S,)`` each step's agreement with the query's labels.
    notes, note : the distinct step notes and ``(S,)`` each step's index into them (no notes: no
        ``note`` either).
    runs : ``(R, 2)`` the first and last step of each run of steps showing the same images
        (:meth:`~anchordiv.slider.SliderPath.ranking_runs`).
    stops : ``(R',)`` the step Play holds for each run
        (:meth:`~anchordiv.slider.SliderPath.sweep_stops`), as the p sweep's GIF and strip do.
    """

    key: str
    p: tuple[float, ...]
    title: str
    enabled: bool
    items: tuple[PlayerTile, ...]
    order: tuple[tuple[int, ...], ...]
    heads: tuple[tuple[str, ...], ...]
    agreement: tuple[str, ...]
    notes: tuple[str, ...]
    note: tuple[int, ...]
    runs: tuple[tuple[int, int], ...]
    stops: tuple[int, ...]


@dataclass(frozen=True)
class PlayerPayload(PlayerPath):
    """Everything the component receives on one run: the path's part (:class:`PlayerPath`, each
    item with its ``src``) and the page's.

    Attributes
    ----------
    p_now : the page's ``p`` as a position of the path (one of ``p``): the slider's on a first
        drawing and whenever it changes (a link, Back).
    label, help : the slider's label and tooltip.
    baselines : the baselines' grids drawn beside the player's.
    marks : what the "like the query" toggles show.
    instance : names this player on the page (its Streamlit key): the browser keeps what it
        remembers of a player (the ``p`` released, the keyboard) under this name, never shared.
    companion_params : the URL parameters the app sets beside another one (the gallery a link was
        made on): the browser's history policy counts a change of one as a change of its own only
        where it was in the address before.
    """

    p_now: float
    label: str
    help: str
    baselines: tuple[BaselinePanel, ...]
    marks: PlayerMarks
    instance: str
    companion_params: tuple[str, ...]

    def as_json(self) -> dict[str, Any]:
        """The payload as the component receives it: one object of these fields, which
        :func:`json.dumps` writes (Streamlit would send ``str(data)`` instead of data it cannot
        write; a tuple is written as a list). Only the dataclasses are copied, never the captions:
        this runs on every run of the player."""
        return {**vars(self), "items": [item.as_json() for item in self.items],
                "baselines": [panel.as_json() for panel in self.baselines], "marks": dict(vars(self.marks))}


@dataclass(frozen=True)
class PlayerReply:
    """What the component sent back (its state), read as outside input by :func:`read_reply`.

    Attributes
    ----------
    p : the ``p`` the visitor released, a finite number clamped to ``[0, 1]``; ``None`` when none
        was reported or what was is not a number.
    marks : the "like the query" marks reported, read as gallery ids of the gallery the player
        showed (:func:`~.widget_values.gallery_ids`: each once, at most
        :data:`~.feedback.MAX_MARKS`, with what was left out counted for a message); ``None`` when
        none were reported.
    """

    p: float | None = None
    marks: Checked | None = None


def player_data(path: SliderPath, source: GallerySource, query_labels: Any, *, key: str, title: str,
                step_notes: Sequence[str], enabled: bool) -> PlayerPath:
    """The path's part of the payload for ``path`` over ``source``.

    Parameters
    ----------
    path : SliderPath
        ``S`` positions ``p``, and each one's top-``k`` ids and divergences ``(S, k)``.
    source : GallerySource
        Names the items and knows their labels (the ``✓obj`` / ``✓sty`` marks against ``query_labels``).
    query_labels : the query's labels, or ``None`` (an upload or a text: no marks).
    key, title, enabled : as :class:`PlayerPath` has them.
    step_notes : sequence of str
        One line per step shown under the grid (e.g. what the slider's certificate did), ``S`` of
        them, or none.

    Returns
    -------
    PlayerPath

    Raises
    ------
    ValueError
        More than :data:`MAX_PLAYER_STEPS` steps or :data:`MAX_PLAYER_ITEMS` distinct images (a
        message asking for a lower top-k), or step notes that are neither one per step nor none.
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
    notes = tuple(dict.fromkeys(step_notes))
    return PlayerPath(
        key=key, p=tuple(round(float(p), 6) for p in path.p), title=title, enabled=bool(enabled),
        items=tuple(PlayerTile(tile["id"], tile["name"], tile["line"], tile["marks"])
                    for tile in grid_tiles(table.iloc[first], source, "divergence")),
        order=tuple(map(tuple, np.searchsorted(items, path.ids).tolist())),
        heads=tuple(tuple(heads[step * k:(step + 1) * k]) for step in range(steps)),
        agreement=tuple(agreement_text(table.iloc[step * k:(step + 1) * k]) for step in range(steps)),
        notes=notes, note=tuple(notes.index(note) for note in step_notes),
        runs=tuple(map(tuple, path.ranking_runs().tolist())), stops=tuple(path.sweep_stops().tolist()))


def baseline_panel(title: str, table: pd.DataFrame, source: GallerySource) -> BaselinePanel:
    """A baseline's grid from its neighbour table of similarities (no addresses yet)."""
    return BaselinePanel(title, agreement_text(table),
                         tuple(PlayerTile(tile["id"], tile["name"], tile["line"], tile["marks"], tile["head"])
                               for tile in grid_tiles(table, source, "similarity")))


def player_payload(path: PlayerPath, *, p: float, address: Callable[[list[int]], list[str]], label: str, help: str,
                   baselines: Sequence[BaselinePanel], marks: PlayerMarks, instance: str,
                   companion_params: Sequence[str]) -> PlayerPayload:
    """The whole payload of one run: ``path`` at the page's ``p`` (its nearest position, the lower
    on a tie, as :meth:`~anchordiv.slider.SliderPath.step_of`), every image given its address by
    ``address`` (gallery ids -> addresses, in order), and the page's parts as
    :class:`PlayerPayload` names them."""

    def addressed(tiles: tuple[PlayerTile, ...]) -> tuple[PlayerTile, ...]:
        sources = address([tile.id for tile in tiles])
        return tuple(PlayerTile(tile.id, tile.name, tile.line, tile.marks, tile.head, src)
                     for tile, src in zip(tiles, sources, strict=True))

    shared = {field.name: getattr(path, field.name) for field in fields(PlayerPath)}
    return PlayerPayload(
        **{**shared, "items": addressed(path.items)}, p_now=position_of(path, p),
        label=label, help=help,
        baselines=tuple(BaselinePanel(panel.title, panel.agreement, addressed(panel.tiles)) for panel in baselines),
        marks=PlayerMarks(tuple(int(item) for item in marks.like), bool(marks.enabled)), instance=instance,
        companion_params=tuple(companion_params))


def position_of(path: PlayerPath, p: float) -> float:
    """The position of ``path`` nearest ``p`` (the lower on a tie, as
    :meth:`~anchordiv.slider.SliderPath.step_of`): the ``p`` a drawing at ``p`` shows."""
    return path.p[int(np.argmin(np.abs(np.asarray(path.p) - p)))]


def released_p(value: Any) -> float | None:
    """A reported ``p`` as the page takes it: a finite number clamped to ``[0, 1]``, else ``None``
    (a bool, a text, a list; a whole number too large for a float is clamped as it is)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return float(min(1, max(0, value)))


def read_reply(sent: Any, n_items: int) -> PlayerReply:
    """What the component sent back (its state: ``{"p": ..., "marks": [...]}``, either or both),
    read for a gallery of ``n_items`` images; anything but a mapping is no reply."""
    if not isinstance(sent, Mapping):
        return PlayerReply()
    marks = sent.get("marks")
    return PlayerReply(released_p(sent.get("p")), None if marks is None else gallery_ids(marks, n_items, MAX_MARKS))
