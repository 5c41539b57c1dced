"""The explorer's settings, declared once: one :class:`~.setting.Setting` row each in
:data:`SETTINGS`, which gives its widget's arguments (key, Streamlit function, label, help, bounds,
options as stable keys and the words shown for them), its link (parameter, old names still read,
what it accepts) and how its value is kept; and the pages (:data:`PAGES`) and the parts of them
(:data:`SIDEBAR`, ...) that draw the settings.

The app draws each widget from its row (``anchordiv.app.setting_widgets``) and reads each part of
a page as one frozen, typed value of its rows (:func:`part_values`); :mod:`.links` builds the link
fields from the rows. Adding a setting is one row here plus the lines that use its value. What
depends on the gallery shown (the first query, the preset lists) is given when the link is built.
Nothing here imports Streamlit.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..lesson import TOY_KINDS, TOY_WEIGHTING_HELP
from ..lesson_weights import HAND_ANCHORS, toy_points
from ..models import anchor_model_kind, list_anchor_models
from ..prompts import AUTO, MAX_TEMPLATE_CHARS, MAX_TEMPLATES, PHOTO_TEMPLATE, TEMPLATE_SETS
from ..vocabularies import MAX_TERM_CHARS, list_vocabularies
from . import limits
from .geometry import WEIGHTING_HELP, GeometrySpec
from .limits import DEFAULT_LIMITS
from .maps import ASK_FIRST_SECONDS, MAX_MAP_POINTS
from .setting import EVERY_RUN, PERSISTED, Setting, read_values
from .vocabulary import FIND_TERMS

# The parts of a page that draw settings. The sidebar's data and encoder (DATA: no link carries a
# path) and its geometry (SIDEBAR, in every page's link); the Explore view (VIEW: query, anchors,
# p; the Learn and Compare pages use it too) and the rest of the Explore page (EXPLORE); the
# Compare figure and the Learn page's lessons. A link's parameter is read by the part of its row.
DATA, SIDEBAR, VIEW, EXPLORE, COMPARE, LEARN = "data", "sidebar", "view", "explore", "compare", "learn"
SIDEBAR_PARTS = (DATA, SIDEBAR)  # read together as the sidebar's state (sidebar_state.SidebarState)


@dataclass(frozen=True)
class Page:
    """One page of the explorer: its ``title`` in the navigation and the ``parts`` it draws
    (:data:`SIDEBAR`, ...; none for a page without settings), in the order it reads their links."""

    title: str
    parts: tuple[str, ...]


# The explorer's pages by the path of their URL (``url_path`` in app/streamlit_app.py; Explore, the
# default page, has none), in the navigation's order. A link's parameter that no part of its page
# reads is named as another page's setting, or as unknown (:func:`~.links.page_notes`).
PAGES: dict[str, Page] = {"": Page("Explore", (DATA, SIDEBAR, VIEW, EXPLORE)),
                          "compare": Page("Compare", (DATA, SIDEBAR, VIEW, COMPARE)),
                          "learn": Page("Learn", (DATA, SIDEBAR, LEARN, VIEW)), "report": Page("Report", ())}

# -- the options of the menus: stable keys, which the session state and links hold, and their words --
WORLD, FOLDER, STORE = "world", "folder", "store"
GALLERY_KIND_LABELS = {WORLD: "Built-in emoji world", FOLDER: "Image folder", STORE: "Gallery store"}
# The encoder menu: the built-in model, an open_clip pretrained tag, an open_clip model on the
# Hugging Face hub, or a checkpoint file (under the data roots, or typed in local mode).
BUILTIN, PRETRAINED, HUB, CHECKPOINT = "builtin", "pretrained", "hub", "checkpoint"
ENCODER_KIND_LABELS = {BUILTIN: "Built-in (emoji drawings)", PRETRAINED: "open_clip pretrained",
                       HUB: "open_clip on the Hugging Face hub", CHECKPOINT: "open_clip checkpoint file"}
DEFAULT_PRETRAINED = "ViT-B-32/laion2b_s34b_b79k"
# The geometry a page opens with: the sidebar's defaults are its settings.
GEOMETRY = GeometrySpec()
FORWARD, REVERSE = "forward", "reverse"
DIRECTION_LABELS = {FORWARD: "Query first: KL(p_query ‖ p_neighbour)", REVERSE: "Reverse: KL(p_neighbour ‖ p_query)"}
GALLERY_QUERY, UPLOAD_QUERY, TEXT_QUERY = "gallery", "upload", "text"
QUERY_MODE_LABELS = {GALLERY_QUERY: "Gallery image", UPLOAD_QUERY: "Upload", TEXT_QUERY: "Text"}
PRESET_DEFAULTS = ("Gallery object names", "Gallery styles")
# The anchor sets as the pages label them.
SET_LABELS = {"a": "A (object)", "b": "B (style)"}
CIRCLE, SPHERE = "circle", "sphere"
TOY_WORLD_LABELS = {CIRCLE: "2-D: directions on a circle", SPHERE: "3-D: directions on a sphere"}
# An anchor set's prompt templates: the model's default first, then the sets of anchordiv.prompts.
TEMPLATE_OPTIONS = (AUTO, *TEMPLATE_SETS)
# Fig. 1: the baseline, each set alone, and their mixture; and the columns the Compare menu offers.
DEFAULT_COLUMNS = ("cosine", "A", "B", "mix p=0.5")
COMMON_COLUMNS = ("cosine", "iti", "A", "B", "mix p=0.25", "mix p=0.5", "mix p=0.75")
# How large the Compare page shows its figure (the downloads are the same either way).
READABLE, FIT = "readable", "fit"
PREVIEW_SIZE_LABELS = {READABLE: "Readable (a picture per geometry)", FIT: "Fit to the page's width"}
# The Find anchors panel's vocabulary menu: the model's default list, the named lists, one's own.
FIND_AUTO, FIND_OWN, FIND_FILE = AUTO, "own", "file"
FIND_VOCABULARIES = (FIND_AUTO, *list_vocabularies(), FIND_OWN, FIND_FILE)
FIND_VOCABULARY_LABELS = {FIND_OWN: "own list (typed)", FIND_FILE: "own list (a text file)"}
# The lesson on weights' gallery: points of the circle, by the words its menu shows.
POINT_LABELS = {f"{angle:g}°": float(angle) for angle in toy_points()}


def capitalised(text: str) -> str:
    """``text`` with its first letter upper case (a menu entry), the rest as it is ("GMM" stays)."""
    return text[:1].upper() + text[1:]


def anchor_model_menu(names: Iterable[str]) -> dict[str, Any]:
    """An anchor-model menu's short entries (whole at any width) and the help that spells each out."""
    kinds = [anchor_model_kind(name) for name in names]
    return {"options": tuple(kind.name for kind in kinds),
            "option_labels": {kind.name: capitalised(kind.short) for kind in kinds},
            "help": "  \n".join(f"{capitalised(kind.short)}: {kind.label}" for kind in kinds)}


def _capitalised_menu(options: Iterable[str]) -> dict[str, Any]:
    options = tuple(options)
    return {"options": options, "option_labels": {option: option.capitalize() for option in options}}


# -- the rows' shapes ------------------------------------------------------------------------------
def _data(key: str, label: str, widget: str, default: Any = None, **more: Any) -> Setting:
    """A data or encoder choice of the sidebar: carried by no link (a path means nothing elsewhere)."""
    kind = more.pop("kind", "choice" if widget in ("radio", "selectbox") else "text")
    return Setting(key, default, DATA, kind, label, widget=widget, max_chars=more.pop("max_chars", None),
                   kept=PERSISTED, **more)


def _menu(key: str, part: str, label: str, widget: str, options: tuple = (), **more: Any) -> Setting:
    """A choice among ``options`` (or those in ``more``), its first the default unless given."""
    options = more.pop("options", options)
    return Setting(key, more.pop("default", options[0] if options else None), part, "choice", label, widget=widget,
                   options=tuple(options), **more)


def _number(key: str, part: str, label: str, default: float, low: float, high: float, step: float | None = None,
            integer: bool = False, widget: str | None = "number_input", **more: Any) -> Setting:
    return Setting(key, default, part, "integer" if integer else "number", label, widget=widget, low=low, high=high,
                   step=step, **more)


def _text(key: str, part: str, label: str, default: str = "", widget: str = "text_input", **more: Any) -> Setting:
    return Setting(key, default, part, "text", label, widget=widget, **more)


def _toy_text(key: str, param: str, label: str, default: str, help: str) -> Setting:
    return _text(key, LEARN, label, default, param=param, help=help, max_chars=limits.TOY_TEXT_CHARS)


def anchor_set_key(name: str, side: str) -> str:
    """The key of anchor set ``side``'s (``"a"`` or ``"b"``) setting ``name`` (``"anchors"``,
    ``"preset"``, ``"templates"``, ``"own_templates"``, ``"upload_anchors"``)."""
    return SETTINGS[f"{name}_{side}"].key


def toy_set_key(side: str, sphere: bool) -> str:
    """The key of the Learn page's toy set ``side`` (``"a"`` or ``"b"``) on the circle or the sphere."""
    return SETTINGS[f"learn_anchors_{side}{'_3d' if sphere else ''}"].key


def hand_weight_key(angle: float) -> str:
    """The key of the lesson on weights' slider for the hand anchor at ``angle`` degrees."""
    return SETTINGS[f"learn_weights_w{angle:g}"].key


_ANCHORS_HELP = ("A line of an anchor, a tab and a number gives the anchor a weight (a positive number; the weights are "
                 "normalised to sum to 1): then every line needs one, and the set is the empirical model with those "
                 "weights, whatever the sidebar's kind.")
_TEMPLATES_HELP = ("Each anchor is encoded through these templates, and the unit embeddings averaged and normalised, as "
                   "CLIP zero-shot does. auto: none for the built-in model (its own captions), 'a photo of a {}.' for "
                   "CLIP models.")


def _anchor_set(side: str, label: str, default_preset: str) -> tuple[Setting, ...]:
    """Anchor set ``side``'s settings: its preset, its text, its templates and its file."""
    return (
        # A preset's choices and the set's default (its preset's list) are the gallery's.
        _menu(f"preset_{side}", VIEW, f"Preset for {label}", "selectbox", default=default_preset,
              param=f"preset_{side}", kept=EVERY_RUN),
        _text(f"anchors_{side}", VIEW, f"Anchor set {label} (one per line)", widget="text_area",
              help=_ANCHORS_HELP, display={"height": 120}, param=f"anchors_{side}", long_texts=True,
              max_chars=limits.ANCHOR_TEXT_CHARS, kept=EVERY_RUN),
        _menu(f"templates_{side}", VIEW, f"Prompt templates for {label}", "selectbox", TEMPLATE_OPTIONS,
              option_labels=TEMPLATE_SETS, help=_TEMPLATES_HELP, param=f"templates_{side}", kept=EVERY_RUN),
        _text(f"own_templates_{side}", VIEW, f"Own templates for {label} (one per line, {{}} where the anchor goes)",
              PHOTO_TEMPLATE, widget="text_area", display={"height": 100}, param=f"own_templates_{side}",
              long_texts=True, max_chars=MAX_TEMPLATES * (MAX_TEMPLATE_CHARS + 1), kept=EVERY_RUN),
        Setting(f"upload_anchors_{side}", None, EXPLORE, "file", f"Load set {side.upper()} from a file",
                widget="file_uploader", display={"type": ["tsv", "txt"]}, kept=None,
                help="UTF-8 text: one anchor per line, or on every line an anchor, a tab and its weight (as the "
                     "download writes)."),
    )


_TOY_CIRCLE_HELP = "Angles in degrees, separated by commas: add, remove or change one to move the anchors."
_TOY_SPHERE_HELP = "Azimuth and elevation in degrees, pairs separated by semicolons, e.g. '0 0; 90 30'."
_SEARCH_HELP = ("Enter takes the best match: an exact name first, then names that start with the text, then names "
                "with a word that does, then any that contain it.")
_POINTS_HELP = ("UMAP of the anchor-divergence kNN graph of a fixed sample; computed once per geometry and cached. A "
                f"new map estimated at over {ASK_FIRST_SECONDS:.0f} s shows its estimate and waits for a click; at most "
                f"{MAX_MAP_POINTS:,} points.")
_CUSTOM_COLUMN_HELP = (
    "cosine, iti, A, B or mix p=…; A, B and mix take model=KIND and s=SCALE, mix also weighting=NAME. Models: "
    f"{', '.join(list_anchor_models())}. Any column may take encoder=SPEC (builtin, open_clip:ARCH pretrained=TAG, "
    "open_clip:hf-hub:ORG/REPO): the same images and anchors under that encoder, for image rows.")

_TABLE = (
    # -- data and encoder (the sidebar) --
    _data("gallery_kind", "Gallery", "radio", WORLD, options=tuple(GALLERY_KIND_LABELS),
          option_labels=GALLERY_KIND_LABELS),
    _data("store_path", "Gallery store folder (holds manifest.json)", "text_input", ""),
    _data("store_choice", "Gallery store", "selectbox", display={"index": None,
                                                               "placeholder": "choose a store in the data folders"}),
    _data("folder_path", "Image folder (subfolders are labels)", "text_input", ""),
    _data("folder_labels", "Labels CSV (optional)", "text_input", ""),
    _data("folder_choice", "Image folder (subfolders are labels)", "selectbox",
          display={"index": None, "placeholder": "choose a folder of images"}),
    _data("folder_labels_choice", "Labels CSV (optional)", "selectbox", display={"index": None, "placeholder": "none"}),
    _data("encoder_kind", "Model", "radio", BUILTIN, options=tuple(ENCODER_KIND_LABELS),
          option_labels=ENCODER_KIND_LABELS),
    _data("openclip_pretrained", "Architecture and pretrained tag", "selectbox", DEFAULT_PRETRAINED),
    _data("hub_suggestion", "Suggested repos", "selectbox",
          display={"index": None, "placeholder": "SigLIP, MobileCLIP, …"}),
    _data("hub_repo", "Hugging Face repo (ORG/REPO)", "text_input", "", max_chars=limits.TEXT_CHARS,
          display={"placeholder": "ORG/REPO"}),
    _data("openclip_arch", "Architecture", "text_input", "ViT-B-32"),
    _data("openclip_checkpoint", "Checkpoint file", "text_input", ""),
    _data("checkpoint_choice", "Checkpoint file", "selectbox",
          display={"index": None, "placeholder": "choose a checkpoint from the data folders"}),
    # The encoder as its spec string (anchordiv.encoders.specs), which links carry; a checkpoint
    # file's path travels in none. Written by the sidebar on every run, not a widget.
    Setting("encoder", "builtin", SIDEBAR, param="encoder", kept=None),
    Setting("encoder_pretrained", "", SIDEBAR, param="pretrained", kept=None),
    # -- the geometry (the sidebar, in every page's link), in the order the sidebar draws it --
    _menu("anchor_model", SIDEBAR, "Anchor model", "selectbox", default=GEOMETRY.kind, param="anchor_model",
          old_params=("model",), kept=PERSISTED, **anchor_model_menu(list_anchor_models())),
    _number("scale", SIDEBAR, "Scale s (inverse temperature)", GEOMETRY.scale, 1.0, 100.0, step=1.0,
            widget="slider", param="scale", kept=PERSISTED),
    _number("n_components", SIDEBAR, "GMM components", GEOMETRY.n_components, 1, 16, integer=True,
            param="n_components", old_params=("components",), kept=PERSISTED),
    _number("rank", SIDEBAR, "Latent rank", GEOMETRY.rank, 1, 256, integer=True, param="rank", kept=PERSISTED),
    _text("prior_anchors", SIDEBAR, "Prior anchor set (one per line)", widget="text_area", display={"height": 120},
          param="prior", long_texts=True, max_chars=limits.ANCHOR_TEXT_CHARS, kept=PERSISTED),
    _number("alpha", SIDEBAR, "alpha (prior pseudo-count)", GEOMETRY.alpha, 0.0, 1e6, param="alpha", kept=PERSISTED),
    _menu("direction", SIDEBAR, "Direction", "radio", tuple(DIRECTION_LABELS), option_labels=DIRECTION_LABELS,
          param="direction", kept=PERSISTED),
    _number("top_k", SIDEBAR, "Top-k", 10, 1, limits.TOP_K, integer=True, param="k", kept=PERSISTED),
    Setting("show_iti", False, SIDEBAR, "flag", "Also show ITI (image → text → image)", widget="checkbox",
            param="iti", kept=PERSISTED),
    # -- the Explore view: query, anchors and p (drawn once the gallery has loaded) --
    _menu("query_mode", VIEW, "Query from", "radio", tuple(QUERY_MODE_LABELS), option_labels=QUERY_MODE_LABELS,
          unlinked=(UPLOAD_QUERY,), display={"horizontal": True}, param="mode", kept=EVERY_RUN),
    # The gallery image the query is: its default and bound are the gallery's; written by the query's widgets.
    Setting("query_id", 0, VIEW, "integer", "Query", low=0, param="query", kept=EVERY_RUN),
    _text("query_text", VIEW, "Text query", "a dog in watercolor", param="text", kept=EVERY_RUN),
    _menu("weighting", VIEW, "Weights of A and B", "radio", display={"horizontal": True}, param="weighting",
          kept=EVERY_RUN, **_capitalised_menu(WEIGHTING_HELP)),
    # p is the p player's (no widget of Streamlit's: the page writes what the player reports).
    _number("p", VIEW, "p: weight of A against B", 0.5, 0.0, 1.0, step=0.01, widget=None, param="p",
            kept=EVERY_RUN, help="p = 1: only set A's anchors, p = 0: only set B's. Moves the anchor-divergence "
                                 "neighbours only: cosine and ITI do not depend on the anchor weights. Arrow keys "
                                 "step p, Home and End go to the ends, Space plays."),
    *(setting for side, default in zip(SET_LABELS, PRESET_DEFAULTS)
      for setting in _anchor_set(side, SET_LABELS[side], default)),
    # -- the rest of the Explore page: the query's search and pick, Find anchors, the UMAP map --
    _text("query_search", EXPLORE, "Search by name", help=_SEARCH_HELP,
          display={"placeholder": "e.g. cat, rocket, pizza"}, kept=EVERY_RUN),
    Setting("query_pick", None, EXPLORE, "integer", "Matches", widget="selectbox", low=0, kept=None),
    Setting("query_row", 0, EXPLORE, "integer", "Row", widget="number_input", low=0, step=1, kept=None),
    Setting("query_upload", None, EXPLORE, "file", "Upload an image (PNG, JPEG or WebP)", widget="file_uploader",
            kept=None),
    # Find anchors travels in no link: what it finds travels as set A's or B's text.
    _menu("find_vocabulary", EXPLORE, "Vocabulary", "selectbox", FIND_VOCABULARIES, default=FIND_AUTO,
          option_labels=FIND_VOCABULARY_LABELS, kept=EVERY_RUN,
          help=f"The terms to suggest anchors from and to learn a geometry over (at most {FIND_TERMS:,})."),
    _text("find_own_terms", EXPLORE, "Your terms (one per line)", widget="text_area", display={"height": 120},
          max_chars=FIND_TERMS * (MAX_TERM_CHARS + 1), kept=EVERY_RUN),
    _menu("find_file", EXPLORE, "Text file of terms under the data folders", "selectbox", default=None,
          display={"index": None, "placeholder": "choose a .txt file"}, kept=EVERY_RUN),
    _text("find_file_path", EXPLORE, "Text file of terms (one per line)", kept=EVERY_RUN),
    Setting("find_like", [], EXPLORE, "list", "Like the query", widget="multiselect",
            display={"placeholder": "items of the grids above"}, kept=None),
    Setting("find_unlike", [], EXPLORE, "list", "Not like it (optional)", widget="multiselect",
            display={"placeholder": "items of the grids above"}, kept=None),
    Setting("explain_rank", 1, EXPLORE, "integer", "Neighbour", widget="selectbox", low=1, high=limits.TOP_K,
            kept=None),
    _number("umap_points", EXPLORE, "Points (fixed sample)", None, 10, MAX_MAP_POINTS, step=500, integer=True,
            help=_POINTS_HELP, kept=None),  # its default: the source's sample size
    _menu("umap_colour", EXPLORE, "Colour by", "selectbox", kept=None),  # the source's columns
    Setting("umap_cosine", False, EXPLORE, "flag", "Cosine projection beside it", widget="checkbox", kept=None),
    # The p a map is drawn at, pinned by its button ("Project at the current p"): no widget's.
    _number("umap_p", EXPLORE, "p of the map", None, 0.0, 1.0, widget=None, kept=None),
    # -- the Compare figure --
    Setting("compare_rows", [], COMPARE, "list", "Queries (rows, top to bottom)", widget="multiselect",
            help="A gallery id (#12), a name (the first image whose caption contains it), text:…, random or "
                 f"random:SEED; ✕ removes a row. At most {DEFAULT_LIMITS.rows} rows.",
            display={"accept_new_options": True, "max_selections": DEFAULT_LIMITS.rows,
                     "placeholder": "type a row: #12, cat, text:a dog in watercolor, random:7"},
            param="rows", local_prefix="upload:", max_items=DEFAULT_LIMITS.rows,
            kept=EVERY_RUN),  # its default names the gallery's first query
    Setting("compare_columns", list(DEFAULT_COLUMNS), COMPARE, "list", "Geometries (columns, left to right)",
            widget="multiselect", options=COMMON_COLUMNS,
            display={"accept_new_options": True, "max_selections": DEFAULT_LIMITS.columns,
                     "placeholder": "choose or type a column"},
            param="columns", max_items=DEFAULT_LIMITS.columns, kept=EVERY_RUN),
    _number("compare_k", COMPARE, "Top-k per cell", 5, 1, DEFAULT_LIMITS.k, integer=True, param="cell_k",
            kept=EVERY_RUN),
    _menu("compare_weighting", COMPARE, "Weights of A and B in mix columns", "radio", display={"horizontal": True},
          param="mix_weighting", kept=EVERY_RUN, **_capitalised_menu(WEIGHTING_HELP)),
    _text("compare_search", COMPARE, "Find a gallery image by name", display={"placeholder": "e.g. kissing, halo"},
          kept=EVERY_RUN),
    Setting("compare_pick", None, COMPARE, "integer", "Add a match", widget="selectbox", low=0, kept=None),
    _text("compare_text", COMPARE, "Text query", display={"placeholder": "a dog in watercolor"}, kept=EVERY_RUN),
    Setting("compare_upload", None, COMPARE, "file", "Upload a query image (PNG, JPEG or WebP)",
            widget="file_uploader", display={"type": ["png", "jpg", "jpeg", "webp"]}, kept=None),
    _text("compare_custom", COMPARE, "Add a custom column", help=_CUSTOM_COLUMN_HELP,
          display={"placeholder": "e.g. mix p=0.3 model=gaussian s=20 weighting=literal"}, kept=None),
    _menu("compare_preview_size", COMPARE, "Preview", "radio", tuple(PREVIEW_SIZE_LABELS),
          option_labels=PREVIEW_SIZE_LABELS, display={"horizontal": True}, kept=EVERY_RUN,
          help="The downloads are the same either way: this only sets how large the page shows the figure."),
    # -- the Learn page's toy world (its parameters start with toy_: the page also carries the others) --
    _menu("learn_world", LEARN, "World", "radio", tuple(TOY_WORLD_LABELS), option_labels=TOY_WORLD_LABELS,
          param="toy_world"),
    _menu("learn_kind", LEARN, "Toy anchor model", "selectbox", param="toy_model", **anchor_model_menu(TOY_KINDS)),
    _menu("learn_weighting", LEARN, "Toy weights of A and B", "radio", display={"horizontal": True},
          param="toy_weighting", **_capitalised_menu(TOY_WEIGHTING_HELP)),
    _number("learn_scale", LEARN, "Toy scale s (inverse temperature)", 5.0, 0.5, 40.0, step=0.5, widget="slider",
            param="toy_scale"),
    _number("learn_p", LEARN, "Toy p: weight of A against B", 0.5, 0.0, 1.0, step=0.05, widget="slider",
            param="toy_p"),
    _toy_text("learn_anchors_a", "toy_a", "Set A", "0, 40, 80", _TOY_CIRCLE_HELP),
    _toy_text("learn_anchors_b", "toy_b", "Set B (may be empty)", "160, 250", _TOY_CIRCLE_HELP),
    _number("learn_query", LEARN, "Query direction θ (degrees)", 120, 0, 359, integer=True, widget="slider",
            param="toy_query"),
    _number("learn_width", LEARN, "Neighbourhood size: width of the cosine arc (degrees)", 40, 5, 180, step=5,
            integer=True, widget="slider", param="toy_width"),
    _toy_text("learn_anchors_a_3d", "toy_a3", "Set A", "0 0; 60 0; 120 0", _TOY_SPHERE_HELP),
    _toy_text("learn_anchors_b_3d", "toy_b3", "Set B (may be empty)", "0 60; 180 60", _TOY_SPHERE_HELP),
    _number("learn_query_azimuth", LEARN, "Query azimuth φ (degrees)", 30, -180, 180, integer=True, widget="slider",
            param="toy_azimuth"),
    _number("learn_query_elevation", LEARN, "Query elevation (degrees)", 20, -90, 90, integer=True, widget="slider",
            param="toy_elevation"),
    # The lesson on weights (app/learn_weights.py): its query, k and scale, the hand anchors' weights
    # and the points marked like the query (the learned weights need a click: no link carries them).
    _number("learn_weights_query", LEARN, "Query direction θ of this lesson (degrees)", 45, 0, 359, integer=True,
            widget="slider", param="toy_wquery"),
    _number("learn_weights_k", LEARN, "Neighbourhood size k (points)", 4, 1, 12, integer=True, widget="slider",
            param="toy_wk"),
    _number("learn_weights_scale", LEARN, "Scale s of this lesson", 10.0, 1.0, 40.0, step=0.5, widget="slider",
            param="toy_wscale"),
    *(_number(f"learn_weights_w{angle:g}", LEARN, f"Weight of the anchor at {angle:g}°", 1.0, 0.0, 1.0, step=0.05,
              widget="slider", param=f"toy_w{angle:g}") for angle in HAND_ANCHORS),
    Setting("learn_weights_marks", [], LEARN, "list", "Points like the query", widget="multiselect",
            options=tuple(POINT_LABELS), display={"max_selections": len(POINT_LABELS)}, param="toy_marks",
            max_chars=8, max_items=len(POINT_LABELS)),
    # The gallery neighbour the Learn page explains: one of the sidebar's top-k.
    Setting("learn_neighbour", 1, LEARN, "integer", "Neighbour", widget="selectbox", low=1, high=limits.TOP_K,
            param="neighbour", kept=EVERY_RUN),
)
SETTINGS: dict[str, Setting] = {setting.key: setting for setting in _TABLE}


def rows_of(*parts: str) -> list[Setting]:
    """The rows of ``parts``, in the table's order."""
    return [setting for setting in SETTINGS.values() if setting.part in parts]


def kept_keys(when: str) -> tuple[str, ...]:
    """The keys whose values the app keeps ``when`` (:data:`ON_ARRIVAL` or :data:`EVERY_RUN`)."""
    return tuple(key for key, setting in SETTINGS.items() if setting.kept == when)


def part_values(parts: tuple[str, ...], values: Mapping[str, Any]) -> Any:
    """The settings of ``parts`` (:attr:`~.setting.Setting.is_setting`: not a widget's passing value)
    in ``values`` (the session state), as one frozen value with a typed attribute per key
    (:func:`~.setting.read_values`): what a page reads of them, once per run."""
    name = "".join(part.capitalize() for part in parts) + "Settings"
    return read_values(name, [row for row in rows_of(*parts) if row.is_setting], values)
