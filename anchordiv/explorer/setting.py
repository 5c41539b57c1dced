"""One setting of the explorer's pages (:class:`Setting`: a row of the table in :mod:`.settings`),
and the frozen, typed values of a part of a page read from it (:func:`read_values`).

A row says everything the app needs to draw its widget (the Streamlit function, label, help,
bounds, options as stable keys and the words shown for each), to carry it in a link (parameter,
what it accepts, the old names still read) and to keep its value (:data:`PERSISTED`,
:data:`ON_ARRIVAL`, :data:`EVERY_RUN`). Nothing here imports Streamlit.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from . import limits

# How a widget's value outlives the runs that do not draw it. The sidebar's widgets keep their own
# (PERSISTED: Streamlit's persist_state). The pages' values are kept by the app, which writes them
# back to their widgets on arriving at a page (ON_ARRIVAL, for widgets drawn on every run of their
# page), or also after a run that did not finish (EVERY_RUN, for widgets drawn after the gallery has
# loaded, which a run that stops early does not draw). None: a widget's passing value (a pick from a
# menu of matches, an upload), kept by no one.
PERSISTED, ON_ARRIVAL, EVERY_RUN = "by its widget", "on arrival", "every run"
# What a setting holds: a number (whole for "integer"), one of its options, a flag, a text, a list of
# texts, or a file a person uploads (which no link carries).
KINDS = ("number", "integer", "choice", "flag", "text", "list", "file")


@dataclass(frozen=True)
class Setting:
    """One setting of a page: a row of :data:`~.settings.SETTINGS`.

    ``key`` is the session-state key of its widget and the attribute of the part's values
    (:func:`read_values`); ``part`` the part of a page that draws it (:data:`~.settings.SIDEBAR`,
    ...); ``default`` its value until one is chosen, and what a link without it means.

    Its widget: ``widget`` names the Streamlit function that draws it (``"radio"``, ``"slider"``,
    ...; ``None``: the page writes the value itself, as the p player does), with ``label``,
    ``help`` and ``display`` (how it looks: a text box's ``height``, a radio's ``horizontal``, a
    ``placeholder``). ``options`` are a choice's stable keys (what the session state and links
    hold) and ``option_labels`` the words shown for each (:meth:`format_option`); ``low``, ``high``
    and ``step`` bound a number; ``max_chars`` a text (``None``: a path, not bounded).

    Its link: ``param`` is the URL parameter (``None``: no link carries it) and ``old_params`` the
    names it had before, still read; ``unlinked`` the options no link carries (an upload).
    ``max_items`` bounds a list, ``long_texts`` sends a text too long for a URL to the server's
    store, ``local_prefix`` marks list items a link leaves out.

    ``kept``: how its value outlives the runs that do not draw its widget (:data:`PERSISTED`,
    :data:`ON_ARRIVAL`, :data:`EVERY_RUN`, or ``None``).
    """

    key: str
    default: Any = None
    part: str | None = None
    kind: str = "text"
    label: str = ""
    help: str | None = None
    widget: str | None = None
    display: Mapping[str, Any] = field(default_factory=dict)
    options: tuple = ()
    option_labels: Mapping[Any, str] = field(default_factory=dict)
    low: float = -math.inf
    high: float = math.inf
    step: float | None = None
    max_chars: int | None = limits.TEXT_CHARS
    max_items: int = 1
    param: str | None = None
    old_params: tuple[str, ...] = ()
    unlinked: tuple = ()
    long_texts: bool = False
    local_prefix: str | None = None
    kept: str | None = ON_ARRIVAL

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"setting {self.key!r}: unknown kind {self.kind!r}; use one of {', '.join(KINDS)}")

    @property
    def bounds(self) -> tuple[Any, Any]:
        """``(low, high)`` as the widget takes them (ints for an integer setting)."""
        if self.kind == "integer":
            return int(self.low), int(self.high)
        return self.low, self.high

    @property
    def choices(self) -> dict[str, Any]:
        """The link's words and the options they name: each option that travels names itself."""
        return {str(option): option for option in self.options if option not in self.unlinked}

    @property
    def is_setting(self) -> bool:
        """Whether its value is a setting of the page (a link carries it, or it is kept between
        pages), not a widget's passing value (a pick, an upload): the part's values hold it."""
        return self.param is not None or self.kept is not None

    def format_option(self, option: Any) -> str:
        """The words a menu shows for ``option`` (its own name where the row gives none)."""
        return self.option_labels.get(option, str(option))

    def read(self, value: Any) -> Any:
        """``value`` as this setting's type (a whole number, a number, a flag, a tuple of texts); the
        default for a value of no such type. Never raises: the widgets check and name what a client
        sends (``anchordiv.app.widget_checks``), this only types what they kept."""
        if value is None or self.kind in ("choice", "text", "file"):
            return value
        try:
            if self.kind == "integer":
                return int(value) if float(value) == int(value) else self.default
            if self.kind == "number":
                number = float(value)
                return number if math.isfinite(number) else self.default
        except (TypeError, ValueError, OverflowError):
            return self.default
        if self.kind == "flag":
            return bool(value)
        return tuple(value if isinstance(value, (list, tuple)) else self.default or ())

    @property
    def value_type(self) -> type:
        """The type :meth:`read` gives (a choice or text: ``str``; a file: any)."""
        return {"number": float, "integer": int, "flag": bool, "list": tuple, "file": object}.get(self.kind, str)


def _values_class(name: str, rows: tuple[Setting, ...]) -> type:
    return dataclasses.make_dataclass(name, [(row.key, row.value_type | None) for row in rows], frozen=True)


_CLASSES: dict[tuple, type] = {}


def values_class(name: str, rows: Iterable[Setting]) -> type:
    """The frozen dataclass ``name`` with one typed field per row of ``rows`` (by key), made once
    per set of rows: adding a row to the table adds its field."""
    rows = tuple(rows)
    identity = (name, *(id(row) for row in rows))
    if identity not in _CLASSES:
        _CLASSES[identity] = _values_class(name, rows)
    return _CLASSES[identity]


def read_values(name: str, rows: Iterable[Setting], values: Mapping[str, Any]) -> Any:
    """The values of ``rows`` in ``values`` (by key; a missing one reads as its default), each as
    its row types it (:meth:`Setting.read`), as one frozen :func:`values_class` ``name``."""
    rows = tuple(rows)
    return values_class(name, rows)(**{row.key: row.read(values.get(row.key, row.default)) for row in rows})
