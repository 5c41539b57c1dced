"""Shareable views: the explorer's state as URL query parameters and back.

A page declares its state as :class:`LinkField` s (the session-state key of a widget, the URL
parameter that carries it, its default and what values it accepts). :func:`write_link` turns the
current values into parameters, leaving out defaults so links stay short; :func:`read_link` turns a
link's parameters back into values and lists, in plain words, everything it ignored (an unknown
parameter, a malformed or out-of-range value) instead of raising: a bad link opens with defaults.

Anchor lists can be long (a preset of 1,500 object names is 20 kB): a text too long for a URL is
kept server-side in a :class:`LinkedTexts` folder under its content hash, and the link carries
``@`` and the hash. Opening such a link on another server says the text is not there.
"""
from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence
from urllib.parse import quote

from ..cache import atomic_write
from . import limits

if TYPE_CHECKING:
    from ..figure import FigureLimits

# Longer texts go to the server-side store: browsers and proxies cut URLs at 2-8 kB.
MAX_URL_TEXT = 1500
HASH_PREFIX = "@"
HASH_LENGTH = 16


class LinkedTexts:
    """Texts too long for a URL, stored in ``directory`` under the first :data:`HASH_LENGTH` hex
    digits of their sha256 (written atomically; a file whose content does not match its name is
    treated as missing, and written again by :meth:`put`)."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)

    def put(self, text: str) -> str:
        """Store ``text``; its token (``"@"`` + hash) for a link."""
        digest = _digest(text)
        path = self.directory / f"{digest}.txt"
        if self.get(HASH_PREFIX + digest) is None:
            atomic_write(path, lambda out: out.write(text.encode("utf-8")))
        return HASH_PREFIX + digest

    def get(self, token: str) -> str | None:
        """The text stored under ``token``, or ``None`` when this server does not have it."""
        digest = token.removeprefix(HASH_PREFIX)
        if len(digest) != HASH_LENGTH or any(char not in "0123456789abcdef" for char in digest):
            return None
        path = self.directory / f"{digest}.txt"
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        return text if _digest(text) == digest else None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_LENGTH]


@dataclass(frozen=True)
class LinkField:
    """One piece of a page's state in a link.

    ``key`` is the session-state key (the widget's key), ``param`` the URL parameter, ``default``
    the value a link without it means. ``kind`` says what is accepted:

    * ``"number"`` / ``"integer"``: a finite number in ``[low, high]``;
    * ``"choice"``: one of ``choices``, a mapping from the URL word to the state value;
    * ``"flag"``: ``1`` or ``0``;
    * ``"text"``: any text of at most ``max_chars`` characters; with ``texts`` set, one too long
      for a URL goes to that store;
    * ``"list"``: at most ``max_items`` texts of at most ``max_chars`` characters each, as a
      repeated parameter (``rows=a&rows=b``); items starting with ``local_prefix`` (an uploaded
      query, whose bytes stay in the session) are left out.

    A value past a limit is refused whole (the page keeps the default and says the limit): a
    link is read before anything is computed, so a long one costs nothing.
    """

    key: str
    param: str
    default: Any
    kind: str
    low: float = -math.inf
    high: float = math.inf
    choices: Mapping[str, Any] = field(default_factory=dict)
    texts: LinkedTexts | None = None
    local_prefix: str | None = None
    max_chars: int = limits.TEXT_CHARS
    max_items: int = 1

    def read(self, raw: Sequence[str]) -> Any:
        """The state value of the URL values ``raw``; ``ValueError`` saying why it is not accepted."""
        if self.kind == "list":
            if len(raw) > self.max_items:
                raise ValueError(f"{len(raw):,} values, but this page takes at most {self.max_items}")
            return [limits.checked_length(item, self.max_chars) for item in raw]
        text = raw[-1]
        if self.kind in ("number", "integer"):
            return self._read_number(text)
        if self.kind == "choice":
            if text not in self.choices:
                raise ValueError(f"{text!r} is not one of {', '.join(self.choices)}")
            return self.choices[text]
        if self.kind == "flag":
            if text not in ("0", "1"):
                raise ValueError(f"{text!r} is not 0 or 1")
            return text == "1"
        if self.texts is not None and text.startswith(HASH_PREFIX):
            stored = self.texts.get(text)
            if stored is None:
                raise ValueError(f"the text {text} was stored on the server that made the link and is not on this one")
            text = stored
        return limits.checked_length(text, self.max_chars)

    def _read_number(self, text: str) -> float | int:
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a number") from None
        if not math.isfinite(value) or not self.low <= value <= self.high:
            raise ValueError(f"{text!r} is outside {self.low:g}–{self.high:g}")
        if self.kind == "integer":
            if value != int(value):
                raise ValueError(f"{text!r} is not a whole number")
            return int(value)
        return value

    def write(self, value: Any) -> str | list[str] | None:
        """The URL value(s) of the state ``value``; ``None`` for a choice no link can carry (an
        uploaded query)."""
        if self.kind == "list":
            return [str(item) for item in value if not (self.local_prefix and str(item).startswith(self.local_prefix))]
        if self.kind == "choice":
            return next((word for word, choice in self.choices.items() if choice == value), None)
        if self.kind == "flag":
            return "1" if value else "0"
        if self.kind in ("number", "integer"):
            return f"{value:g}" if self.kind == "number" else str(int(value))
        text = str(value)
        if self.texts is not None and len(quote(text)) > MAX_URL_TEXT:
            return self.texts.put(text)
        return text


@dataclass(frozen=True)
class LinkRead:
    """What a link says: ``values`` by session-state key (only those it set, and accepted) and
    ``ignored``, one plain sentence per parameter it did not use."""

    values: dict[str, Any]
    ignored: list[str]


def read_link(params: Mapping[str, Sequence[str]], fields: Iterable[LinkField], known: Iterable[str] = ()) -> LinkRead:
    """The values of ``fields`` that ``params`` (URL parameter → its values) carries.

    A parameter none of ``fields`` reads and not in ``known`` (the parameters other pages or the
    app itself use) is reported as unknown; a value a field does not accept is reported and left
    out, so the page keeps that field's default."""
    fields = list(fields)
    by_param = {item.param: item for item in fields}
    values: dict[str, Any] = {}
    ignored: list[str] = []
    for param, raw in params.items():
        raw = [raw] if isinstance(raw, str) else list(raw)
        item = by_param.get(param)
        if item is None:
            if param not in set(known):
                ignored.append(f"unknown parameter “{param}”")
            continue
        if not raw:
            continue
        try:
            values[item.key] = item.read(raw)
        except ValueError as error:
            ignored.append(f"{param}: {error}")
    return LinkRead(values, ignored)


def write_link(values: Mapping[str, Any], fields: Iterable[LinkField]) -> dict[str, str | list[str]]:
    """URL parameters for the ``values`` (by session-state key) of ``fields``; a value equal to its
    field's default, missing, or one a link cannot carry, is left out."""
    params: dict[str, str | list[str]] = {}
    for item in fields:
        if item.key in values and values[item.key] != item.default:
            written = item.write(values[item.key])
            if written is not None:
                params[item.param] = written
    return params


def gallery_token(gallery_key: str) -> str:
    """A short name for a gallery's content (encoder and data), so that a link made on another
    gallery can say so instead of opening on some other image."""
    return hashlib.sha256(gallery_key.encode("utf-8")).hexdigest()[:10]


# -- the explorer's state ------------------------------------------------------------------------
# The parameters the app itself sets beside the fields (the gallery a link was made on).
GALLERY_PARAM = "gallery"
DIRECTION_WORDS = ("forward", "reverse")


def sidebar_fields(model_kinds: Sequence[str], direction_labels: Sequence[str], texts: LinkedTexts) -> list[LinkField]:
    """The sidebar's geometry settings, shared by every page that ranks the gallery.
    ``direction_labels`` are the direction radio's options, forward first."""
    return [
        LinkField("model_kind", "model", "softmax", "choice", choices={kind: kind for kind in model_kinds}),
        LinkField("scale", "scale", 10.0, "number", low=1.0, high=100.0),
        LinkField("gmm_components", "components", 2, "integer", low=1, high=16),
        LinkField("latent_rank", "rank", 8, "integer", low=1, high=256),
        LinkField("alpha", "alpha", 1.0, "number", low=0.0, high=1e6),
        LinkField("prior_anchors", "prior", "", "text", texts=texts, max_chars=limits.ANCHOR_TEXT_CHARS),
        LinkField("direction", "direction", direction_labels[0], "choice",
                  choices=dict(zip(DIRECTION_WORDS, direction_labels))),
        LinkField("top_k", "k", 10, "integer", low=1, high=limits.TOP_K),
        LinkField("show_iti", "iti", False, "flag"),
    ]


def view_fields(gallery_size: int, default_query: int, presets: Mapping[str, Sequence[str]],
                preset_defaults: tuple[str, str], preset_now: tuple[str, str], query_modes: Sequence[str],
                weightings: Sequence[str], texts: LinkedTexts) -> list[LinkField]:
    """The query, the anchor sets and the weight ``p``: what the explorer's pages show.

    An anchor set equal to its preset's list is left out of the link (the preset names it); so
    its default is the list of the preset chosen now (``preset_now``), not of the default preset.
    ``query_modes`` are the query radio's options: gallery image, upload, text."""
    names = {name: name for name in presets}
    gallery_mode, _, text_mode = query_modes
    fields = [
        LinkField("query_mode", "mode", gallery_mode, "choice", choices={"gallery": gallery_mode, "text": text_mode}),
        LinkField("query_id", "query", default_query, "integer", low=0, high=gallery_size - 1),
        LinkField("query_text", "text", "a dog in watercolor", "text"),
        LinkField("weighting", "weighting", weightings[0], "choice", choices={w: w for w in weightings}),
        LinkField("p", "p", 0.5, "number", low=0.0, high=1.0),
    ]
    for side, default, now in zip("ab", preset_defaults, preset_now):
        fields.append(LinkField(f"preset_{side}", f"preset_{side}", default, "choice", choices=names))
        fields.append(LinkField(f"anchors_{side}", f"anchors_{side}", "\n".join(presets.get(now, ())), "text",
                                texts=texts, max_chars=limits.ANCHOR_TEXT_CHARS))
    return fields


def lesson_fields(defaults: Mapping[str, Any], worlds: Sequence[str], kinds: Sequence[str],
                  weightings: Sequence[str]) -> list[LinkField]:
    """The Learn page's toy world (``defaults`` by session-state key; ``worlds`` the circle's and
    the sphere's labels) and the gallery neighbour it explains. Its parameters start with ``toy_``
    because the page also carries the sidebar's and the Explore page's."""
    def text(key: str, param: str) -> LinkField:
        return LinkField(key, param, defaults[key], "text", max_chars=limits.TOY_TEXT_CHARS)

    def number(key: str, param: str, low: float, high: float, integer: bool = False) -> LinkField:
        return LinkField(key, param, defaults[key], "integer" if integer else "number", low=low, high=high)

    return [
        LinkField("learn_world", "toy_world", defaults["learn_world"], "choice",
                  choices=dict(zip(("circle", "sphere"), worlds))),
        LinkField("learn_kind", "toy_model", defaults["learn_kind"], "choice", choices={kind: kind for kind in kinds}),
        LinkField("learn_weighting", "toy_weighting", defaults["learn_weighting"], "choice",
                  choices={w: w for w in weightings}),
        number("learn_scale", "toy_scale", 0.5, 40.0), number("learn_p", "toy_p", 0.0, 1.0),
        text("learn_anchors_a", "toy_a"), text("learn_anchors_b", "toy_b"),
        number("learn_query", "toy_query", 0, 359, integer=True), number("learn_width", "toy_width", 5, 180, integer=True),
        text("learn_anchors_a_3d", "toy_a3"), text("learn_anchors_b_3d", "toy_b3"),
        number("learn_query_azimuth", "toy_azimuth", -180, 180, integer=True),
        number("learn_query_elevation", "toy_elevation", -90, 90, integer=True),
        LinkField("learn_neighbour", "neighbour", 1, "integer", low=1, high=50),
    ]


def compare_fields(default_rows: Sequence[str], default_columns: Sequence[str], weightings: Sequence[str],
                   figure_limits: "FigureLimits") -> list[LinkField]:
    """The Compare page's figure: its query rows and geometry columns (as the specs of
    :mod:`anchordiv.figure`, as many as ``figure_limits`` allow), the top-k of each cell and the
    weighting of its mix columns."""
    return [
        LinkField("compare_rows", "rows", list(default_rows), "list", local_prefix="upload:",
                  max_items=figure_limits.rows),
        LinkField("compare_columns", "columns", list(default_columns), "list", max_items=figure_limits.columns),
        LinkField("compare_k", "cell_k", 5, "integer", low=1, high=figure_limits.k),
        LinkField("compare_weighting", "mix_weighting", weightings[0], "choice", choices={w: w for w in weightings}),
    ]


# Every parameter some page reads (tests check each page's fields against it): a link that carries
# another page's parameter is not told it is unknown.
ALL_PARAMS = ("model", "scale", "components", "rank", "alpha", "prior", "direction", "k", "iti", "mode", "query",
              "text", "weighting", "p", "preset_a", "anchors_a", "preset_b", "anchors_b", GALLERY_PARAM,
              "rows", "columns", "cell_k", "mix_weighting", "toy_world", "toy_model", "toy_weighting", "toy_scale",
              "toy_p", "toy_a", "toy_b",
              "toy_query", "toy_width", "toy_a3", "toy_b3", "toy_azimuth", "toy_elevation", "neighbour")
