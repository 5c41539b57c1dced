"""Shareable views: the explorer's state as URL query parameters and back.

A page's state travels as :class:`LinkField` s (the session-state key of a widget, the URL
parameter that carries it, its default and what values it accepts), each derived from its row in
the table of settings (:mod:`.settings`, :func:`fields_of`). :func:`write_link` turns the current
values into parameters, leaving out defaults so links stay short; :func:`read_link` turns a link's
parameters back into values (a parameter's old name too: links made before a rename still open)
and lists, in plain words, everything it ignored (a malformed or out-of-range value, the values of
a setting given more than once but the last) instead of raising: a bad link opens with defaults.
:func:`page_notes` names what no part of the page reads (another page's setting, an unknown
parameter).

Anchor lists can be long (a preset of 1,500 object names is 20 kB): a text too long for a URL is
kept server-side in a :class:`LinkedTexts` folder under its content hash, and the link carries
``@`` and the hash. Opening such a link on another server says the text is not there.
"""
from __future__ import annotations

import hashlib
import math
import numbers
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence
from urllib.parse import quote, unquote_plus, urlencode

from ..cache import atomic_write
from . import limits
from .setting import Setting
from .settings import COMPARE, LEARN, PAGES, SETTINGS, SIDEBAR, VIEW, anchor_set_key

# Longer texts go to the server-side store: browsers and proxies cut URLs at 2-8 kB.
MAX_URL_TEXT = 1500
# How many values, and characters of each, a note quotes of what a link repeats.
QUOTED_VALUES, QUOTED_CHARS = 3, 40
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

    ``key`` is the session-state key (the widget's key), ``param`` the URL parameter (and
    ``old_params`` the names it had before, read as it is), ``default`` the value a link without
    it means. ``kind`` says what is accepted:

    * ``"number"`` / ``"integer"``: a finite number in ``[low, high]``;
    * ``"choice"``: one of ``choices``, a mapping from the URL word to the state value;
    * ``"flag"``: ``1`` or ``0``;
    * ``"text"``: any text of at most ``max_chars`` characters; with ``texts`` set, one too long
      for a URL goes to that store;
    * ``"list"``: at most ``max_items`` texts of at most ``max_chars`` characters each, as a
      repeated parameter (``rows=a&rows=b``); items starting with ``local_prefix`` (an uploaded
      query, whose bytes stay in the session) are left out.

    A value past a limit is refused whole (the page keeps the default and says the limit): a
    link is read before anything is computed, so a long one costs nothing. Every kind but a list
    holds one value: given more than once, the last is read (as ``st.query_params[name]`` gives it)
    and the others are named (:meth:`unread`, :func:`read_link`).
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
    old_params: tuple[str, ...] = ()

    def read(self, raw: Sequence[str]) -> Any:
        """The state value of the URL values ``raw``; ``ValueError`` saying why it is not accepted."""
        if self.kind == "list":
            self.check_count(len(raw))
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

    def unread(self, raw: Sequence[str]) -> list[str]:
        """The values of ``raw`` that :meth:`read` leaves unread: all but the last for a field of one
        value, none for a list (a repeated parameter is how a list travels)."""
        return [] if self.kind == "list" else list(raw[:-1])

    def check_count(self, count: int) -> None:
        """A ``ValueError`` saying the limit when ``count`` values are more than this list field
        takes (for a list the server did not read, :func:`unread_link`, too)."""
        if self.kind == "list" and count > self.max_items:
            raise ValueError(f"{count:,} values, but this page takes at most {self.max_items}")

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
        """The URL value(s) of the state ``value``; ``None`` for a value no link can carry (an
        uploaded query; a number that is not a finite one, which only a forged widget value can be:
        the page names it where it draws that widget)."""
        if self.kind == "list":
            return [str(item) for item in value if not (self.local_prefix and str(item).startswith(self.local_prefix))]
        if self.kind == "choice":
            return next((word for word, choice in self.choices.items() if choice == value), None)
        if self.kind == "flag":
            return "1" if value else "0"
        if self.kind in ("number", "integer"):
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
                return None
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

    A parameter none of ``fields`` reads and not in ``known`` (the parameters other parts of the
    page read, or all of the link's where the page names the rest, :func:`page_notes`) is reported
    as unknown; a value a field does not accept is reported and left out, so the page keeps that
    field's default. A field of one value given several is read from the last, and the others are
    named with it (:func:`repeated`), an invalid one too. A field's old name is read as its name."""
    fields = list(fields)
    by_param = {param: item for item in fields for param in (*item.old_params, item.param)}
    known = set(known)
    values: dict[str, Any] = {}
    ignored: list[str] = []
    for param, raw in params.items():
        raw = [raw] if isinstance(raw, str) else list(raw)
        item = by_param.get(param)
        if item is None:
            if param not in known:
                ignored.append(f"unknown parameter “{param}”")
            continue
        if not raw:
            continue
        problem = None
        try:
            values[item.key] = item.read(raw)
        except ValueError as error:
            problem = str(error)
        notes = [note for note in (repeated(raw, item.unread(raw)), problem) if note]
        if notes:
            ignored.append(f"{param}: {', and '.join(notes)}")
    return LinkRead(values, ignored)


def quoted(value: str) -> str:
    """``value`` as a note quotes it: ``repr``, cut after :data:`QUOTED_CHARS` characters."""
    if len(value) <= QUOTED_CHARS:
        return repr(value)
    return f"{value[:QUOTED_CHARS]!r} (of {len(value):,} characters)"


def repeated(raw: Sequence[str], unread: Sequence[str]) -> str | None:
    """What is said of a parameter of one value given as ``raw`` (its values in the link's order), of
    which ``unread`` are not read: the count, the one read and the others (the first
    :data:`QUOTED_VALUES` of them); ``None`` where every value is read."""
    if not unread:
        return None
    listed = ", ".join(quoted(value) for value in unread[:QUOTED_VALUES])
    if len(unread) > QUOTED_VALUES:
        listed += f" and {len(unread) - QUOTED_VALUES:,} more"
    return (f"given {len(raw):,} times, and only the last, {quoted(raw[-1])}, is read: {listed} "
            f"{'is' if len(unread) == 1 else 'are'} ignored")


def write_link(values: Mapping[str, Any], fields: Iterable[LinkField]) -> dict[str, str | list[str]]:
    """URL parameters for the ``values`` (by session-state key) of ``fields``; a value equal to its
    field's default, missing, or one a link cannot carry, is left out: so is one its field cannot
    write, such as a text where a number goes (a widget's value as a client sent it, which the page
    checks, and names, where it reads it)."""
    params: dict[str, str | list[str]] = {}
    for item in fields:
        if item.key in values and values[item.key] != item.default:
            try:
                written = item.write(values[item.key])
            except (TypeError, ValueError):
                continue
            if written is not None:
                params[item.param] = written
    return params


def gallery_token(gallery_key: str) -> str:
    """A short name for a gallery's content (encoder and data), so that a link made on another
    gallery can say so instead of opening on some other image."""
    return hashlib.sha256(gallery_key.encode("utf-8")).hexdigest()[:10]


# -- the explorer's state: its link fields, from the one table of page state -----------------------
# The parameter the app itself sets beside the fields (the gallery a link was made on).
GALLERY_PARAM = "gallery"


def _link_field(setting: Setting, texts: LinkedTexts | None = None, **given: Any) -> LinkField:
    """The link field of ``setting`` (one that carries a URL parameter), with ``given`` overriding
    what the gallery shown decides (``default``, ``high``, ``options``); ``texts`` keeps its texts
    too long for a URL, when it has them (``long_texts``)."""
    if setting.param is None:
        raise ValueError(f"the setting {setting.key!r} travels in no link")
    options = given.pop("options", None)
    default = given.pop("default", setting.default)
    return LinkField(setting.key, setting.param, list(default) if isinstance(default, list) else default, setting.kind,
                     low=setting.low, high=given.pop("high", setting.high),
                     choices={str(option): option for option in options} if options is not None else setting.choices,
                     texts=texts if setting.long_texts else None, local_prefix=setting.local_prefix,
                     max_chars=setting.max_chars or limits.TEXT_CHARS, max_items=setting.max_items,
                     old_params=setting.old_params, **given)


def fields_of(part: str, texts: LinkedTexts | None = None,
              given: Mapping[str, Mapping[str, Any]] | None = None) -> list[LinkField]:
    """The fields of one part of a page (``part``: :data:`~.settings.SIDEBAR`, ``VIEW``,
    ``COMPARE`` or ``LEARN``), in the table's order; ``given`` maps a key to its overrides (:func:`_link_field`)."""
    given = given or {}
    return [_link_field(setting, texts, **given.get(key, {}))
            for key, setting in SETTINGS.items() if setting.part == part and setting.param is not None]


def sidebar_fields(texts: LinkedTexts) -> list[LinkField]:
    """The sidebar's geometry settings, shared by every page that ranks the gallery."""
    return fields_of(SIDEBAR, texts)


def view_fields(gallery_size: int, default_query: int, presets: Mapping[str, Sequence[str]],
                preset_now: tuple[str, str], texts: LinkedTexts) -> list[LinkField]:
    """The query, the anchor sets and the weight ``p``: what the explorer's pages show, on a
    gallery of ``gallery_size`` items that opens on ``default_query``.

    An anchor set equal to its preset's list is left out of the link (the preset names it); so
    its default is the list of the preset chosen now (``preset_now``), not of the default preset."""
    given: dict[str, dict[str, Any]] = {"query_id": {"default": default_query, "high": gallery_size - 1}}
    for side, now in zip("ab", preset_now):
        given[anchor_set_key("preset", side)] = {"options": tuple(presets)}
        given[anchor_set_key("anchors", side)] = {"default": "\n".join(presets.get(now, ()))}
    return fields_of(VIEW, texts, given)


def compare_fields(default_rows: Sequence[str]) -> list[LinkField]:
    """The Compare page's figure: its query rows (``default_rows`` name the gallery's first
    queries) and geometry columns (as the specs of :mod:`anchordiv.figure`, as many as its limits
    allow), the top-k of each cell and the weighting of its mix columns."""
    return fields_of(COMPARE, given={"compare_rows": {"default": list(default_rows)}})


def lesson_fields() -> list[LinkField]:
    """The Learn page's toy world and the gallery neighbour it explains."""
    return fields_of(LEARN)


def param_parts() -> dict[str, str]:
    """Every parameter some page reads (a link that carries another page's parameter is not told it
    is unknown), old names included, with the part of a page that reads it (the gallery's token
    goes with the view's query)."""
    return {param: setting.part for setting in SETTINGS.values() if setting.param
            for param in (setting.param, *setting.old_params)} | {GALLERY_PARAM: VIEW}


def page_notes(params: Iterable[str], page: str | None) -> list[str]:
    """What is said of the parameters ``params`` of a link to ``page`` (its URL path, a key of
    :data:`~.settings.PAGES`) that no part of that page reads: another page's settings, by the
    pages that read them (``“rows” is a setting of the Compare page: ignored here``), and unknown
    parameters, each by name. The parts of the page name what is wrong with the rest
    (:func:`read_link`). A page not in that table reads every part: only unknown parameters are named."""
    parts = param_parts()
    here = PAGES[page].parts if page in PAGES else tuple(set(parts.values()))
    elsewhere: dict[tuple[str, ...], list[str]] = {}
    unknown = []
    for param in dict.fromkeys(params):
        part = parts.get(param)
        if part is None:
            unknown.append(f"unknown parameter “{param}”")
        elif part not in here:
            titles = tuple(other.title for other in PAGES.values() if part in other.parts)
            elsewhere.setdefault(titles, []).append(param)
    notes = []
    for titles, names in elsewhere.items():
        pages = titles[0] if len(titles) == 1 else f"{', '.join(titles[:-1])} and {titles[-1]}"
        setting = "is a setting" if len(names) == 1 else "are settings"
        notes.append(f"{', '.join(f'“{name}”' for name in names)} {setting} of the {pages} page"
                     f"{'s' if len(titles) > 1 else ''}: ignored here")
    return notes + unknown


# -- a link the server does not read ----------------------------------------------------------------
# Streamlit drops a query string past its own bounds (1,000 values, 512 Ki characters) before any
# page runs, and says nothing: a link with thousands of values for a list would open with defaults
# without a word. The app has the server put this one parameter in its place (app/url_state.py,
# :func:`unread_link`), which the pages read back (:func:`unread_counts`) and name as they name a
# value they refuse.
UNREAD_PARAM = "unread_link"


@dataclass(frozen=True)
class UnreadLink:
    """A link the server did not read: its length in ``characters``, its ``values`` (``name=value``
    pairs) and, by parameter some page reads, how many values it carried (``params``; empty for a
    link too long to count them in)."""

    characters: int
    values: int
    params: dict[str, int]


def unread_link(query_string: str, most_counted: int) -> str:
    """The query string that stands for ``query_string``, which the server does not read: one
    :data:`UNREAD_PARAM` saying its :class:`UnreadLink` (``"CHARACTERS VALUES NAME:COUNT ..."``). The
    values of each parameter are counted in a string of at most ``most_counted`` characters (past
    that, splitting it would cost more than the server spends on reading a link)."""
    params = {}
    if len(query_string) <= most_counted:
        names = Counter(unquote_plus(pair.partition("=")[0]) for pair in query_string.split("&"))
        params = {name: names[name] for name in param_parts() if names[name]}
    counts = [len(query_string), query_string.count("&") + 1]
    return urlencode({UNREAD_PARAM: " ".join(map(str, counts)) + "".join(f" {name}:{n}" for name, n in params.items())})


def unread_counts(text: str) -> UnreadLink | None:
    """The :class:`UnreadLink` that :data:`UNREAD_PARAM`'s value ``text`` says (:func:`unread_link`);
    ``None`` for any other text (that parameter typed into a link: then it is an unknown one)."""
    words = text.split(" ")
    try:
        characters, values = int(words[0]), int(words[1])
        params = {name: int(count) for name, _, count in (word.rpartition(":") for word in words[2:])}
    except (ValueError, IndexError):
        return None
    return UnreadLink(characters, values, params)


def unread_notes(unread: UnreadLink, fields: Iterable[LinkField]) -> list[str]:
    """What :func:`read_link` would have said of each list of ``fields`` longer than it takes in the
    link ``unread`` stands for."""
    notes = []
    for item in fields:
        try:
            item.check_count(unread.params.get(item.param, 0))
        except ValueError as error:
            notes.append(f"{item.param}: {error}")
    return notes
