"""Every setting of the explorer's pages, declared once: its session-state key (the widget's key),
URL parameter, default, bounds or choices, which link reads it and when its value is kept.

The widgets take their bounds, steps, options and defaults from :data:`SETTINGS`; :mod:`.links`
builds each page's link fields from it (:func:`~anchordiv.explorer.links.fields_of`) and knows
every parameter (:data:`~anchordiv.explorer.links.ALL_PARAMS`); the app keeps the values of
:func:`kept_keys` between pages. Adding a setting is one :class:`Setting` here. What depends on the
gallery shown (the first query, the preset lists) is given when the link is built. Nothing here
imports Streamlit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from ..lesson import TOY_KINDS, TOY_WEIGHTING_HELP
from ..lesson_weights import HAND_ANCHORS, toy_points
from ..models import list_anchor_models
from ..prompts import AUTO, MAX_TEMPLATE_CHARS, MAX_TEMPLATES, PHOTO_TEMPLATE, TEMPLATE_SETS
from ..vocabularies import MAX_TERM_CHARS, list_vocabularies
from . import limits
from .geometry import WEIGHTING_HELP, GeometrySpec
from .limits import DEFAULT_LIMITS
from .vocabulary import FIND_TERMS

# Which part of a page reads a setting from the link (each part reads it on its first run): the
# sidebar's geometry, the Explore view (query, anchors, p; the Learn and Compare pages use it too),
# the Compare figure and the Learn page's toy world. ``None``: a setting no link carries.
SIDEBAR, VIEW, COMPARE, LEARN = "sidebar", "view", "compare", "learn"


@dataclass(frozen=True)
class Page:
    """One page of the explorer: its ``title`` in the navigation and the ``parts`` of a link it
    reads (:data:`SIDEBAR`, ...; none for a page without settings)."""

    title: str
    parts: tuple[str, ...]


# The explorer's pages by the path of their URL (``url_path`` in app/streamlit_app.py; Explore, the
# default page, has none), in the navigation's order. A link's parameter that no part of its page
# reads is named as another page's setting, or as unknown (:func:`~.links.page_notes`).
PAGES: dict[str, Page] = {"": Page("Explore", (SIDEBAR, VIEW)), "compare": Page("Compare", (SIDEBAR, VIEW, COMPARE)),
                          "learn": Page("Learn", (SIDEBAR, LEARN, VIEW)), "report": Page("Report", ())}
# How a widget's value outlives the runs that do not draw it. The sidebar's widgets keep their own
# (PERSISTED: Streamlit's persist_state, app/session_keys.PERSIST). The pages' values are kept by
# the app, which writes them back to their widgets on arriving at a page (ON_ARRIVAL, for widgets
# drawn on every run of their page), or also after a run that did not finish (EVERY_RUN, for
# widgets drawn after the gallery has loaded, which a run that stops early does not draw).
PERSISTED, ON_ARRIVAL, EVERY_RUN = "by its widget", "on arrival", "every run"

WORLD, FOLDER, STORE = "Built-in emoji world", "Image folder", "Gallery store"
# The model menu: the built-in model, an open_clip pretrained tag, an open_clip model on the Hugging
# Face hub, or a checkpoint file (under the data roots, or typed in local mode).
BUILTIN, PRETRAINED, HUB, OPEN_CLIP = ("Built-in (emoji drawings)", "open_clip pretrained",
                                      "open_clip on the Hugging Face hub", "open_clip checkpoint file")
DEFAULT_PRETRAINED = "ViT-B-32/laion2b_s34b_b79k"
# The geometry a page opens with: the sidebar's defaults are its settings.
GEOMETRY = GeometrySpec()
# The direction radio's labels, by the word a link carries; the first (GEOMETRY's) is the default.
DIRECTIONS = {"forward": "Query first: KL(p_query ‖ p_neighbour)", "reverse": "Reverse: KL(p_neighbour ‖ p_query)"}
GALLERY_QUERY, UPLOAD_QUERY, TEXT_QUERY = "Gallery image", "Upload", "Text"
QUERY_MODES = (GALLERY_QUERY, UPLOAD_QUERY, TEXT_QUERY)
PRESET_DEFAULTS = ("Gallery object names", "Gallery styles")
CIRCLE, SPHERE = "2-D: directions on a circle", "3-D: directions on a sphere"
# An anchor set's prompt templates: the model's default first, then the sets of anchordiv.prompts.
TEMPLATE_OPTIONS = (AUTO, *TEMPLATE_SETS)
# Fig. 1: the baseline, each set alone, and their mixture.
DEFAULT_COLUMNS = ("cosine", "A", "B", "mix p=0.5")
# How large the Compare page shows its figure (the downloads are the same either way).
PREVIEW_SIZES = ("Readable (a picture per geometry)", "Fit to the page's width")
# The Find anchors panel's vocabulary menu: the model's default list, the named lists, one's own.
FIND_AUTO, FIND_OWN, FIND_FILE = AUTO, "own list (typed)", "own list (a text file)"
FIND_VOCABULARIES = (FIND_AUTO, *list_vocabularies(), FIND_OWN, FIND_FILE)


@dataclass(frozen=True)
class Setting:
    """One setting of a page.

    ``key`` is the session-state key of its widget; ``param`` the URL parameter that carries it
    (``None``: no link does) and ``link`` the part of a page that reads it (:data:`SIDEBAR`, ...);
    ``default`` the value a link without it means. ``kind`` is what a link accepts, as
    :class:`~anchordiv.explorer.links.LinkField` reads it ("number", "integer", "choice", "flag",
    "text", "list"); ``low``, ``high`` and ``step`` bound a number (and its widget); ``options`` are
    the widget's options and ``words`` maps a link's word to the option it names (by default each
    option names itself; an option without a word, such as an upload, travels in no link).
    ``max_chars`` / ``max_items`` bound a text or a list, ``long_texts`` sends a text too long for
    a URL to the server's store, ``local_prefix`` marks list items a link leaves out. ``kept`` is
    how its value outlives the runs that do not draw its widget (:data:`PERSISTED`,
    :data:`ON_ARRIVAL`, :data:`EVERY_RUN`, or ``None``: not a widget's).
    """

    key: str
    default: Any = None
    param: str | None = None
    link: str | None = None
    kind: str = "text"
    low: float = -math.inf
    high: float = math.inf
    step: float | None = None
    options: tuple = ()
    words: Mapping[str, Any] | None = None
    max_chars: int = limits.TEXT_CHARS
    max_items: int = 1
    long_texts: bool = False
    local_prefix: str | None = None
    kept: str | None = ON_ARRIVAL

    @property
    def bounds(self) -> tuple[Any, Any]:
        """``(low, high)`` as the widget takes them (ints for an integer setting)."""
        if self.kind == "integer":
            return int(self.low), int(self.high)
        return self.low, self.high

    @property
    def choices(self) -> dict[str, Any]:
        """The link's words and the options they name."""
        return dict(self.words) if self.words is not None else {str(option): option for option in self.options}


def _data(key: str, default: Any = None, options: tuple = ()) -> Setting:
    """A data or encoder choice (the sidebar): carried by no link (a path means nothing elsewhere)."""
    return Setting(key, default, options=options, kept=PERSISTED)


def _choice(key: str, param: str, link: str, options: tuple, kept: str = ON_ARRIVAL, **more: Any) -> Setting:
    return Setting(key, more.pop("default", options[0] if options else None), param, link, "choice",
                   options=tuple(options), kept=kept, **more)


def _number(key: str, param: str, link: str, default: float, low: float, high: float, step: float | None = None,
            integer: bool = False, kept: str = ON_ARRIVAL) -> Setting:
    return Setting(key, default, param, link, "integer" if integer else "number", low, high, step, kept=kept)


def _toy_text(key: str, param: str, default: str) -> Setting:
    return Setting(key, default, param, LEARN, max_chars=limits.TOY_TEXT_CHARS)


_TABLE = (
    # -- data and model (the sidebar) --
    _data("gallery_source", WORLD, (WORLD, FOLDER, STORE)),
    _data("folder_path", ""), _data("folder_labels", ""), _data("folder_choice"), _data("folder_labels_choice"),
    _data("store_path", ""), _data("store_choice"),
    _data("encoder_source", BUILTIN, (BUILTIN, PRETRAINED, HUB, OPEN_CLIP)),
    _data("openclip_pretrained", DEFAULT_PRETRAINED), _data("hub_repo", ""), _data("hub_suggestion"),
    _data("openclip_arch", "ViT-B-32"), _data("openclip_checkpoint", ""), _data("checkpoint_choice"),
    # The model as its spec string (anchordiv.encoders.specs), which links carry; a checkpoint
    # file's path travels in none. Written by the sidebar on every run, not a widget.
    Setting("encoder", "builtin", "encoder", SIDEBAR, kept=None),
    Setting("encoder_pretrained", "", "pretrained", SIDEBAR, kept=None),
    # -- the geometry (the sidebar, in every page's link) --
    _choice("anchor_model", "model", SIDEBAR, tuple(list_anchor_models()), PERSISTED, default=GEOMETRY.kind),
    _number("scale", "scale", SIDEBAR, GEOMETRY.scale, 1.0, 100.0, step=1.0, kept=PERSISTED),
    _number("gmm_components", "components", SIDEBAR, GEOMETRY.n_components, 1, 16, integer=True, kept=PERSISTED),
    _number("latent_rank", "rank", SIDEBAR, GEOMETRY.rank, 1, 256, integer=True, kept=PERSISTED),
    _number("alpha", "alpha", SIDEBAR, GEOMETRY.alpha, 0.0, 1e6, kept=PERSISTED),
    Setting("prior_anchors", "", "prior", SIDEBAR, long_texts=True, max_chars=limits.ANCHOR_TEXT_CHARS,
            kept=PERSISTED),
    _choice("direction", "direction", SIDEBAR, tuple(DIRECTIONS.values()), PERSISTED, words=DIRECTIONS),
    _number("top_k", "k", SIDEBAR, 10, 1, limits.TOP_K, integer=True, kept=PERSISTED),
    Setting("show_iti", False, "iti", SIDEBAR, "flag", kept=PERSISTED),
    # -- the Explore view: query, anchors and p (drawn once the gallery has loaded) --
    _choice("query_mode", "mode", VIEW, QUERY_MODES, EVERY_RUN,
            words={"gallery": GALLERY_QUERY, "text": TEXT_QUERY}),
    Setting("query_id", 0, "query", VIEW, "integer", low=0, kept=EVERY_RUN),  # its default and bound: the gallery's
    Setting("query_text", "a dog in watercolor", "text", VIEW, kept=EVERY_RUN),
    Setting("query_search", "", kept=EVERY_RUN),
    _choice("weighting", "weighting", VIEW, tuple(WEIGHTING_HELP), EVERY_RUN),
    _number("p", "p", VIEW, 0.5, 0.0, 1.0, step=0.01, kept=EVERY_RUN),
    # A preset's choices and an anchor set's default (its preset's list) are the gallery's.
    *(setting for side, default in zip("ab", PRESET_DEFAULTS) for setting in (
        _choice(f"preset_{side}", f"preset_{side}", VIEW, (), EVERY_RUN, default=default),
        Setting(f"anchors_{side}", "", f"anchors_{side}", VIEW, long_texts=True, max_chars=limits.ANCHOR_TEXT_CHARS,
                kept=EVERY_RUN),
        _choice(f"templates_{side}", f"templates_{side}", VIEW, TEMPLATE_OPTIONS, EVERY_RUN),
        Setting(f"own_templates_{side}", PHOTO_TEMPLATE, f"own_templates_{side}", VIEW, long_texts=True,
                max_chars=MAX_TEMPLATES * (MAX_TEMPLATE_CHARS + 1), kept=EVERY_RUN))),
    # -- the Explore page's Find anchors (in no link: what it finds travels as set A's or B's text) --
    Setting("find_vocabulary", FIND_AUTO, kind="choice", options=FIND_VOCABULARIES, kept=EVERY_RUN),
    Setting("find_own_terms", "", max_chars=FIND_TERMS * (MAX_TERM_CHARS + 1), kept=EVERY_RUN),
    Setting("find_file", None, kept=EVERY_RUN), Setting("find_file_path", "", kept=EVERY_RUN),
    # -- the Compare figure --
    Setting("compare_rows", [], "rows", COMPARE, "list", local_prefix="upload:", max_items=DEFAULT_LIMITS.rows,
            kept=EVERY_RUN),  # its default names the gallery's first query
    Setting("compare_columns", list(DEFAULT_COLUMNS), "columns", COMPARE, "list", max_items=DEFAULT_LIMITS.columns,
            kept=EVERY_RUN),
    _number("compare_k", "cell_k", COMPARE, 5, 1, DEFAULT_LIMITS.k, integer=True, kept=EVERY_RUN),
    _choice("compare_weighting", "mix_weighting", COMPARE, tuple(WEIGHTING_HELP), EVERY_RUN),
    Setting("compare_search", "", kept=EVERY_RUN), Setting("compare_text", "", kept=EVERY_RUN),
    Setting("compare_preview_size", PREVIEW_SIZES[0], kind="choice", options=PREVIEW_SIZES, kept=EVERY_RUN),
    # -- the Learn page's toy world (its parameters start with toy_: the page also carries the others) --
    _choice("learn_world", "toy_world", LEARN, (CIRCLE, SPHERE), words={"circle": CIRCLE, "sphere": SPHERE}),
    _choice("learn_kind", "toy_model", LEARN, TOY_KINDS),
    _choice("learn_weighting", "toy_weighting", LEARN, tuple(TOY_WEIGHTING_HELP)),
    _number("learn_scale", "toy_scale", LEARN, 5.0, 0.5, 40.0, step=0.5),
    _number("learn_p", "toy_p", LEARN, 0.5, 0.0, 1.0, step=0.05),
    _toy_text("learn_anchors_a", "toy_a", "0, 40, 80"), _toy_text("learn_anchors_b", "toy_b", "160, 250"),
    _number("learn_query", "toy_query", LEARN, 120, 0, 359, integer=True),
    _number("learn_width", "toy_width", LEARN, 40, 5, 180, step=5, integer=True),
    _toy_text("learn_anchors_a_3d", "toy_a3", "0 0; 60 0; 120 0"),
    _toy_text("learn_anchors_b_3d", "toy_b3", "0 60; 180 60"),
    _number("learn_query_azimuth", "toy_azimuth", LEARN, 30, -180, 180, integer=True),
    _number("learn_query_elevation", "toy_elevation", LEARN, 20, -90, 90, integer=True),
    # The lesson on weights (app/learn_weights.py): its query, k and scale, the hand anchors' weights
    # and the points marked like the query (the learned weights need a click: no link carries them).
    _number("learn_weights_query", "toy_wquery", LEARN, 45, 0, 359, integer=True),
    _number("learn_weights_k", "toy_wk", LEARN, 4, 1, 12, integer=True),
    _number("learn_weights_scale", "toy_wscale", LEARN, 10.0, 1.0, 40.0, step=0.5),
    *(_number(f"learn_weights_w{angle:g}", f"toy_w{angle:g}", LEARN, 1.0, 0.0, 1.0, step=0.05)
      for angle in HAND_ANCHORS),
    Setting("learn_weights_marks", [], "toy_marks", LEARN, "list", max_chars=8, max_items=len(toy_points())),
    # The gallery neighbour the Learn page explains: one of the sidebar's top-k.
    _number("learn_neighbour", "neighbour", LEARN, 1, 1, limits.TOP_K, integer=True, kept=EVERY_RUN),
)
SETTINGS: dict[str, Setting] = {setting.key: setting for setting in _TABLE}


def kept_keys(when: str) -> tuple[str, ...]:
    """The keys whose values the app keeps ``when`` (:data:`ON_ARRIVAL` or :data:`EVERY_RUN`)."""
    return tuple(key for key, setting in SETTINGS.items() if setting.kept == when)
