"""What the explorer's pages share: the cached resources (encoders, galleries, fitted geometries),
the sidebar's data, model and geometry choices, the anchor sets, and the error box that replaces a
traceback. Each page (``app/views/*.py``) calls these with plain values; nothing here computes what
the library computes.

Widgets keep their values for the whole session (:func:`keep_values`), so a choice made on one page
is there on the others and when the user comes back. Shared state lives in
``st.cache_resource`` (never mutated after it is built); what a user changes lives in
``st.session_state``, so two browser sessions never see each other's settings.
"""
from __future__ import annotations

import os
import sys
import threading
from typing import Any, Callable
from urllib.parse import urlencode

import numpy as np
import pandas as pd
import plotly.express as px
import streamlit as st
import torch

from anchordiv import explorer as ex
from anchordiv import projection
from anchordiv.cache import cache_dir
from anchordiv.explorer import limits, links
from anchordiv.explorer.literal import markdown_literal, plotly_literal, shown
from anchordiv.datasets import ShippedDataError
from anchordiv.encoders import load_encoder
from anchordiv.gallery import Gallery, folder_gallery, world_gallery
from anchordiv.images import display_name
from anchordiv.models import anchor_model_kind, list_anchor_models
from anchordiv.text_cache import encode_texts_cached

# Measured by evaluate-builtin on the held-out emoji: softmax with object anchors gives same-emoji
# mAP 0.530 at s = 10 against 0.431 at the learned scale 29.2 (docs/design.md §3: CLIP behaves alike).
DEFAULT_SCALE = 10.0
GRID_WIDTH = 96
QUERY_IMAGE_WIDTH = 160
WORLD, FOLDER, STORE = "Built-in emoji world", "Image folder", "Gallery store"
BUILTIN, OPEN_CLIP = "Built-in", "open_clip (local checkpoint)"
DIRECTIONS = {"Query first: KL(p_query ‖ p_neighbour)": False, "Reverse: KL(p_neighbour ‖ p_query)": True}


# An error message keeps its start (what is wrong) and end (the fix) around a long value it quotes.
ERROR_CHARS = 1200
# The library's ways of saying "the input (or the shipped data) is wrong, and here is the fix".
FIXABLE_ERRORS = (ValueError, ShippedDataError)
# Cached functions take encoders and galleries themselves; Streamlit hashes them by the strings that
# identify their content. It matches hash_funcs on the exact type, so each encoder class is named
# (by its qualified name, which spares importing open_clip at start-up).
BY_IDENTITY = {
    "anchordiv.encoders.builtin.BuiltinEncoder": lambda encoder: encoder.name,
    "anchordiv.encoders.open_clip_encoder.OpenClipEncoder": lambda encoder: encoder.name,
    Gallery: lambda gallery: gallery.key,
    ex.StoreSource: lambda gallery: gallery.key,
}


def attempt(action: Callable[[], Any], what: str, stop: bool = False) -> Any:
    """Run ``action``; a :data:`FIXABLE_ERRORS` error becomes an error box (its message names the
    fix, shown as text: it may quote a visitor's value) instead of a traceback. ``stop`` halts the
    page after it."""
    try:
        return action()
    except FIXABLE_ERRORS as error:
        st.error(markdown_literal(f"{what}: {error}", ERROR_CHARS))
        if stop:
            st.stop()
        return None


# -- shared, cached resources (never mutated after creation) ------------------------------------
@st.cache_resource(show_spinner="Loading the model…", max_entries=4)
def get_encoder(spec: str, pretrained: str | None):
    return load_encoder(spec, pretrained=pretrained or None, device="cpu")


@st.cache_resource(show_spinner=False)
def world_galleries() -> ex.SharedBuilds:
    """Process-wide world galleries. Not a cached function of its own because the first start
    draws a progress bar while embedding, which every visitor arriving meanwhile sees too."""
    return ex.SharedBuilds()


def get_world_gallery(encoder, split: str, limit: int | None, progress) -> Gallery:
    return world_galleries().get((encoder.name, split, limit),
                                 lambda report: world_gallery(encoder, split=split, limit=limit, progress=report),
                                 progress)


def world_slice() -> tuple[str, int | None]:
    """The split and size of the built-in world this server shows (``ANCHORDIV_APP_GALLERY_SPLIT``,
    ``ANCHORDIV_APP_GALLERY_LIMIT``; read on each run, as :func:`data_roots` is)."""
    limit = os.environ.get("ANCHORDIV_APP_GALLERY_LIMIT")
    return os.environ.get("ANCHORDIV_APP_GALLERY_SPLIT", "all"), int(limit) if limit else None


def share_the_cores() -> None:
    """Torch on ``ANCHORDIV_APP_THREADS`` threads (default 1). A server is shared by sessions: with
    one thread a visitor's heaviest figure leaves the other cores to everyone else's p steps
    (``explorer-bench --browser --isolation`` on 2 cores: p steps 1.6 times as slow meanwhile with
    one thread, 2.0 with two, and the figure itself drawn sooner). 0 keeps torch's own count (the
    tests' process, which runs the app in itself, does)."""
    threads = int(os.environ.get("ANCHORDIV_APP_THREADS", "1"))
    if threads and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def data_roots() -> ex.DataRoots:
    """The folders this server may open, from its launch options and environment (fixed for the
    life of the process; read on each run because it is cheap and keeps tests independent)."""
    return ex.DataRoots.from_launch(sys.argv[1:], os.environ)


@st.cache_resource(show_spinner="Embedding the image folder (cached for later starts)…", max_entries=4,
                   hash_funcs=BY_IDENTITY)
def get_folder_gallery(encoder, folder: str, labels_csv: str | None) -> Gallery:
    return folder_gallery(folder, encoder, labels_csv=labels_csv or None)


@st.cache_resource(show_spinner="Opening the gallery store and indexing its names…", max_entries=4)
def get_store_gallery(folder: str, stamp: tuple, encoder_name: str, dim: int, roots: ex.DataRoots) -> ex.StoreSource:
    """``stamp`` (:func:`~anchordiv.explorer.store_stamp`: its files' sizes, times and inodes) opens
    a store written again, or with a file edited in place, afresh."""
    return ex.StoreSource.open(folder, encoder_name, dim, roots)


@st.cache_resource(show_spinner="Encoding the anchors (kept on disk for later starts)…", max_entries=64,
                   hash_funcs=BY_IDENTITY)
def encode_texts(encoder, texts: tuple[str, ...]) -> torch.Tensor:
    return encode_texts_cached(encoder, texts)


@st.cache_resource(show_spinner="Fitting the anchor model and indexing the gallery…", max_entries=16,
                   hash_funcs=BY_IDENTITY)
def get_geometry(gallery: Gallery, encoder, texts_a: tuple[str, ...], texts_b: tuple[str, ...],
                 spec: ex.GeometrySpec, prior_texts: tuple[str, ...]) -> ex.ExplorerGeometry:
    anchors = [encode_texts(encoder, texts) for texts in (texts_a, texts_b)]
    prior = encode_texts(encoder, prior_texts) if anchor_model_kind(spec.kind).needs_prior else None
    return ex.ExplorerGeometry(gallery.embeddings, anchors, [texts_a, texts_b], spec, prior=prior,
                               prior_texts=prior_texts)


@st.cache_resource(show_spinner="Fitting the anchor model and indexing the store (one pass)…", max_entries=4,
                   hash_funcs=BY_IDENTITY)
def get_store_geometry(gallery: ex.StoreSource, encoder, texts_a: tuple[str, ...], texts_b: tuple[str, ...],
                       spec: ex.GeometrySpec, prior_texts: tuple[str, ...]) -> ex.ExplorerGeometry:
    anchors = [encode_texts(encoder, texts) for texts in (texts_a, texts_b)]
    prior = encode_texts(encoder, prior_texts) if anchor_model_kind(spec.kind).needs_prior else None
    return ex.ExplorerGeometry.over_store(gallery.store, anchors, [texts_a, texts_b], spec, prior=prior, prior_texts=prior_texts)


@st.cache_resource(show_spinner=False, max_entries=16, hash_funcs=BY_IDENTITY)
def get_baseline(kind: str, gallery: Gallery, encoder, texts: tuple[str, ...]):
    anchors = encode_texts(encoder, texts) if kind == "iti" else None
    return ex.baseline_index(kind, gallery.embeddings, anchors)


@st.cache_data(show_spinner="Embedding the uploaded image…", max_entries=32, hash_funcs=BY_IDENTITY)
def embed_upload(encoder, data: bytes, name: str) -> np.ndarray:
    image = ex.query_image_from_upload(data, name)
    return encoder.encode_images([image])[0].numpy()


@st.cache_data(show_spinner=False, max_entries=32, hash_funcs=BY_IDENTITY)
def embed_text_query(encoder, text: str) -> np.ndarray:
    return encoder.encode_texts([text])[0].numpy()


@st.cache_resource(show_spinner=False, max_entries=8, hash_funcs=BY_IDENTITY)
def gallery_presets(gallery: Gallery | ex.StoreSource) -> dict[str, tuple[str, ...]]:
    """The preset anchor lists of ``gallery`` or of a store (60 ms for the whole world, and every
    full run of a page needs them several times); shared, never changed by a caller."""
    return gallery.presets() if isinstance(gallery, ex.StoreSource) else ex.anchor_presets(gallery)


@st.cache_resource(show_spinner=False)
def umap_warm_up() -> threading.Thread:
    """Compile UMAP's kernels once per server, in the background, before anyone asks for a projection."""
    thread = threading.Thread(target=projection.warm_up, name="umap-warm-up", daemon=True)
    thread.start()
    return thread


@st.cache_data(show_spinner="Projecting the gallery with UMAP (cached per geometry)…", max_entries=16,
               hash_funcs=BY_IDENTITY)
def get_projection(key: str, method: str, gallery: Gallery, _geometry, p: float, weighting: str,
                   max_points: int) -> tuple[np.ndarray, np.ndarray]:
    """``_geometry`` is not hashed: ``key`` names it (anchors, model, encoder)."""
    return ex.geometry_projection(gallery, method, _geometry, p, weighting, None, max_points, cache_key=key)


# The widget values that outlive a page that does not draw them: every page's link fields and the
# data and model choices. Those after the gallery in a page are drawn only when it loads (a folder
# not chosen yet stops the run before them), so they are kept on every run, not just on arrival.
ALWAYS_DRAWN = (
    "gallery_source", "folder_path", "folder_labels", "folder_choice", "folder_labels_choice", "store_path",
    "store_choice", "model_source",
    "openclip_arch", "openclip_checkpoint", "checkpoint_choice", "model_kind", "scale", "gmm_components",
    "latent_rank", "alpha", "prior_anchors", "direction", "top_k", "show_iti", "learn_world", "learn_kind",
    "learn_weighting", "learn_scale", "learn_p", "learn_anchors_a", "learn_anchors_b", "learn_query", "learn_width",
    "learn_anchors_a_3d", "learn_anchors_b_3d", "learn_query_azimuth", "learn_query_elevation",
)
AFTER_THE_GALLERY = (
    "query_mode", "query_id", "query_text", "query_search", "weighting", "p", "preset_a", "anchors_a", "preset_b",
    "anchors_b", "compare_rows", "compare_columns", "compare_k", "compare_weighting", "compare_search",
    "compare_text", "learn_neighbour",
)


def keep_values(page: str) -> None:
    """Called at the start of every full run, with the page about to run.

    Streamlit forgets a widget's value when a run does not draw the widget (another page, or a run
    that stopped early): the server may drop it, and the browser shows the default when the widget
    comes back. A widget drawn by another page starts from its default too. So a value missing now
    is restored from the copy the last run left, and values are written back, which makes the
    server send them with their widgets: all of them on a page's first run, those after the gallery
    on every run. No more: writing a value back during a run races a person pressing a slider's
    arrow keys (the p slider's own runs are fragment runs, which do not come here).
    """
    state = st.session_state
    kept = state.get("_kept", {})
    arrived = state.get("_page") != page
    for key in ALWAYS_DRAWN + AFTER_THE_GALLERY:
        if key not in state and key in kept:
            state[key] = kept[key]
        elif key in state and (arrived or key in AFTER_THE_GALLERY):
            # Deleted first: the key may still name the last page's widget, which would take the value.
            value = state[key]
            del state[key]
            state[key] = value
    state["_page"] = page
    state["_kept"] = {key: state[key] for key in ALWAYS_DRAWN + AFTER_THE_GALLERY if key in state}


# -- links: every page's state in its URL ---------------------------------------------------------
QUERY_MODES = ("Gallery image", "Upload", "Text")
PRESET_DEFAULTS = ("Gallery object names", "Gallery styles")


def linked_texts() -> links.LinkedTexts:
    """Where this server keeps anchor lists too long for a link."""
    return links.LinkedTexts(cache_dir() / "linked-texts")


def sidebar_fields() -> list[links.LinkField]:
    return links.sidebar_fields(list_anchor_models(), list(DIRECTIONS), linked_texts())


def default_query(gallery: Gallery | ex.StoreSource) -> int:
    """The query a page opens on: a recognisable image of the world or folder, a store's first item."""
    return 0 if isinstance(gallery, ex.StoreSource) else ex.default_query_id(gallery)


def view_fields(gallery: Gallery | ex.StoreSource) -> list[links.LinkField]:
    state = st.session_state
    presets = gallery_presets(gallery)
    now = tuple(state.get(f"preset_{side}", default) for side, default in zip("ab", PRESET_DEFAULTS))
    return links.view_fields(len(gallery), default_query(gallery), presets, PRESET_DEFAULTS, now,
                             QUERY_MODES, list(ex.WEIGHTINGS), linked_texts())


def follow_link(fields: list[links.LinkField], part: str, known: tuple[str, ...] = ()) -> dict[str, Any]:
    """On this session's first run of ``part`` of a page, take the values the page's link carries
    (what it ignores is said by :func:`link_notes`) and return them; then give every field without a
    value its default, so that widgets take their values from the session state alone."""
    state = st.session_state
    flag = f"_link_read_{part}"
    taken: dict[str, Any] = {}
    if flag not in state:
        params = {name: st.query_params.get_all(name) for name in st.query_params}
        length = len(urlencode(params, doseq=True))
        if length > limits.LINK_CHARS:  # refused whole, before any of it is read
            params = {}
            state.setdefault("_link_ignored", []).append(
                f"all of it: the link is {length:,} characters long, and this server takes links of at most "
                f"{limits.LINK_CHARS:,} (the Share box makes short ones: long anchor lists travel as a hash)")
        read = links.read_link(params, fields, known=known)
        taken = read.values
        state.update(taken)
        state.setdefault("_link_ignored", []).extend(read.ignored)
        state[flag] = True
    for item in fields:
        state.setdefault(item.key, item.default)
    return taken


def follow_view_link(gallery: Gallery | ex.StoreSource) -> list[links.LinkField]:
    """:func:`follow_link` for the query and the anchor sets, which need the gallery; the fields,
    for :func:`publish_link`. A link made on another gallery keeps its anchors and p, not its query."""
    state = st.session_state
    fields = view_fields(gallery)
    if "_link_read_view" not in state:
        token = st.query_params.get(links.GALLERY_PARAM)
        if token is not None and token != links.gallery_token(gallery.key):
            fields = [item for item in fields if item.key != "query_id"]
            state.setdefault("_link_ignored", []).append(
                "query: the link was made on another gallery or model, so its query image is not opened")
    taken = follow_link(fields, "view", known=links.ALL_PARAMS)
    presets = gallery_presets(gallery)
    for side in "ab":  # a link that names a preset and not its list means the preset's list
        if f"preset_{side}" in taken and f"anchors_{side}" not in taken:
            state[f"anchors_{side}"] = "\n".join(presets[state[f"preset_{side}"]])
    return view_fields(gallery)


def link_notes() -> None:
    """Say once what the opened link carried that the page could not use."""
    ignored = st.session_state.pop("_link_ignored", None)
    if ignored:
        # Each part of a page reads the link, so a parameter unknown to all of them is named by each.
        notes = "; ".join(markdown_literal(note) for note in dict.fromkeys(ignored))
        st.warning(f"This link opened with defaults for what it could not use: {notes}.")


def link_params(fields: list[links.LinkField], gallery: Gallery | ex.StoreSource | None = None
                ) -> dict[str, str | list[str]]:
    """The URL parameters of the current values of ``fields``, with the gallery's token when they
    name anything (a query id means nothing on another gallery)."""
    params = links.write_link(st.session_state, fields)
    if gallery is not None and params:
        params[links.GALLERY_PARAM] = links.gallery_token(gallery.key)
    return params


def publish_link(fields: list[links.LinkField], gallery: Gallery | ex.StoreSource | None = None) -> None:
    """Put the current values of ``fields`` in the page's URL (only when they changed: each change
    is a message to the browser)."""
    params = link_params(fields, gallery)
    current = {name: st.query_params.get_all(name) for name in st.query_params}
    wanted = {name: value if isinstance(value, list) else [value] for name, value in params.items()}
    if current != wanted:
        st.query_params.from_dict(params)


def share_box(fields: list[links.LinkField], gallery: Gallery | ex.StoreSource | None = None) -> None:
    """The page's link to copy (the copy button is on the code block)."""
    params = link_params(fields, gallery)
    with st.popover("Share this view", icon=":material/link:", key="share_popover"):
        st.code((st.context.url or "") + ("?" + urlencode(params, doseq=True) if params else ""), language=None,
                wrap_lines=True)
        st.caption("Opening this link on a server with the same gallery and model shows the same view. An uploaded "
                   "query cannot travel in a link; long anchor lists are kept on this server under a hash.")


# -- sidebar: data, model, geometry -------------------------------------------------------------
def sidebar() -> dict[str, Any]:
    """Every sidebar choice as plain values. The geometry settings follow the page's link."""
    follow_link(sidebar_fields(), "sidebar", known=links.ALL_PARAMS)
    bar = st.sidebar
    bar.title("⚓ anchordiv explorer")
    choices: dict[str, Any] = {}
    bar.subheader("Data and model")
    roots = attempt(data_roots, "This server's data folders are misconfigured", stop=True)
    choices["source"] = bar.radio("Gallery", [WORLD, FOLDER, STORE], key="gallery_source")
    if choices["source"] == STORE:
        choices["store"] = (bar.text_input("Gallery store folder (holds manifest.json)", key="store_path")
                            if roots.allow_any_path else
                            bar.selectbox("Gallery store", [str(path) for path in roots.stores()], index=None,
                                          key="store_choice", placeholder="choose a store in the data folders",
                                          format_func=display_name))
    if choices["source"] == FOLDER:
        if roots.allow_any_path:
            choices["folder"] = bar.text_input("Image folder (subfolders are labels)", key="folder_path")
            choices["labels_csv"] = bar.text_input("Labels CSV (optional)", key="folder_labels")
        else:
            choices["folder"] = bar.selectbox("Image folder (subfolders are labels)",
                                              [str(path) for path in roots.image_folders()], index=None,
                                              key="folder_choice", placeholder="choose a data folder",
                                              format_func=display_name)
            csvs = (attempt(lambda: roots.labels_csvs(roots.confine(choices["folder"], "image folder")),
                            "Could not use that image folder") or []) if choices["folder"] else []
            choices["labels_csv"] = bar.selectbox("Labels CSV (optional)", [str(path) for path in csvs], index=None,
                                                  key="folder_labels_choice", placeholder="none",
                                                  format_func=display_name)
    choices["model"] = bar.radio("Model", [BUILTIN, OPEN_CLIP], key="model_source")
    if choices["model"] == OPEN_CLIP:
        choices["arch"] = bar.text_input("Architecture", value="ViT-B-32", key="openclip_arch")
        if roots.allow_any_path:
            choices["checkpoint"] = bar.text_input("Checkpoint file or pretrained tag", key="openclip_checkpoint")
        else:
            choices["checkpoint"] = bar.selectbox("Checkpoint file", [str(path) for path in roots.checkpoints()],
                                                  index=None, key="checkpoint_choice",
                                                  placeholder="choose a checkpoint from the data folders",
                                                  format_func=display_name)
    bar.subheader("Geometry")
    # The linked widgets take their values from the session state (follow_link), never a default here.
    choices["kind"] = bar.selectbox("Anchor model", list_anchor_models(), key="model_kind",
                                    format_func=lambda name: anchor_model_kind(name).label)
    kind = anchor_model_kind(choices["kind"])
    choices["scale"] = bar.slider("Scale s (inverse temperature)", 1.0, 100.0, step=1.0, key="scale")
    choices["n_components"] = (bar.number_input("GMM components", 1, 16, key="gmm_components")
                               if "n_components" in kind.defaults else 2)
    choices["rank"] = (bar.number_input("Latent rank", 1, 256, key="latent_rank")
                       if "rank" in kind.defaults else 8)
    choices["alpha"], choices["prior_text"] = 1.0, ""
    if kind.needs_prior:
        choices["prior_text"] = bar.text_area("Prior anchor set (one per line)", key="prior_anchors", height=120,
                                              max_chars=limits.ANCHOR_TEXT_CHARS)
        choices["alpha"] = bar.number_input("alpha (prior pseudo-count)", 0.0, 1e6, key="alpha")
    choices["reverse"] = DIRECTIONS[bar.radio("Direction", list(DIRECTIONS), key="direction")]
    choices["k"] = int(bar.number_input("Top-k", 1, limits.TOP_K, key="top_k"))
    choices["show_iti"] = bar.checkbox("Also show ITI (image → text → image)", key="show_iti")
    return choices


def no_data_folders() -> None:
    st.info("This server offers no data folders. Start it with `--data-root DIR` (after `--` on the "
            "`streamlit run` line) or `ANCHORDIV_DATA_ROOTS=DIR` to offer them, or `--allow-any-path` "
            "for a local session that may open any path.")
    st.stop()


def load_encoder_for(choices: dict[str, Any]):
    if choices["model"] == BUILTIN:
        return attempt(lambda: get_encoder("builtin", None), "Could not load the built-in model", stop=True)
    roots = data_roots()
    if roots.opens_nothing:
        no_data_folders()
    if not choices.get("checkpoint"):
        st.info("Choose an open_clip checkpoint file in the sidebar"
                + (" (or a pretrained tag whose file is on this machine)." if roots.allow_any_path else "."))
        st.stop()

    def load():
        # A free path may also be a pretrained tag, so only confined mode resolves it as a file.
        checkpoint = choices["checkpoint"] if roots.allow_any_path else str(roots.confine(choices["checkpoint"], "checkpoint"))
        return get_encoder(f"open_clip:{choices['arch']}", checkpoint)

    return attempt(load, "Could not load the open_clip model", stop=True)


def load_store_for(choices: dict[str, Any], encoder) -> ex.StoreSource:
    """The chosen gallery store, opened for ``encoder`` (cached per store); an error box naming the
    fix and a stop when it is not a store, is damaged, or was embedded by another model."""
    roots = data_roots()
    if roots.opens_nothing:
        no_data_folders()
    if not choices.get("store"):
        st.info(("Type the folder of" if roots.allow_any_path else "Choose") + " a gallery store in the sidebar "
                "(a folder with a manifest.json, made by `python -m anchordiv embed FOLDER --out STORE`).")
        st.stop()

    def load() -> ex.StoreSource:
        folder = roots.confine(choices["store"], "gallery store")
        return get_store_gallery(str(folder), ex.store_stamp(folder), encoder.name, encoder.dim, roots)

    return attempt(load, "Could not open that gallery store", stop=True)


def load_gallery_for(choices: dict[str, Any], encoder) -> Gallery:
    if choices["source"] == STORE:
        st.info("This page works on galleries held in memory, not on a gallery store: choose the built-in "
                "emoji world or an image folder in the sidebar (the Explore page opens stores).")
        st.stop()
    if choices["source"] == FOLDER:
        roots = data_roots()
        if roots.opens_nothing:
            no_data_folders()
        if not choices.get("folder"):
            st.info(("Type the path of" if roots.allow_any_path else "Choose") + " an image folder in the sidebar.")
            st.stop()

        def load() -> Gallery:
            folder = str(roots.confine(choices["folder"], "image folder"))
            labels = str(roots.confine(choices["labels_csv"], "labels CSV")) if choices.get("labels_csv") else None
            return get_folder_gallery(encoder, folder, labels)

        gallery = attempt(load, "Could not use that image folder", stop=True)
        if gallery.skipped:
            with st.sidebar.expander(f"⚠️ {len(gallery.skipped)} file(s) skipped"):
                st.dataframe(pd.DataFrame(gallery.skipped, columns=["file", "reason"]), hide_index=True)
        if gallery.unlabelled:
            with st.sidebar.expander(f"⚠️ {len(gallery.unlabelled)} image(s) not in the labels CSV"):
                st.caption("They keep their folder's label.")
                st.dataframe(pd.DataFrame({"file": gallery.unlabelled}), hide_index=True)
        return gallery
    progress = st.empty()
    # Shown only while the first start embeds the world; later starts read the disk cache.
    gallery = attempt(lambda: get_world_gallery(encoder, *world_slice(),
                                                lambda fraction, text: progress.progress(fraction, text)),
                      "Could not load the built-in emoji world", stop=True)
    progress.empty()
    return gallery


# -- the query -------------------------------------------------------------------------------------
def caption_of(gallery: Gallery | ex.StoreSource) -> Callable[[int], str]:
    """Item captions for a menu (plain text there, but it must be one line of valid UTF-8)."""
    return lambda item: shown(gallery.caption(item))


NO_QUERY: tuple[None, None, None, None, str] = (None, None, None, None, "")
# (embedding (d,) or None, gallery id or None, labels or None, image or None, description)
Query = tuple[np.ndarray | None, int | None, Any, Any, str]


def choose_query(gallery: Gallery | ex.StoreSource, encoder, from_item: Callable[[int], Query],
                 by_row: bool = False) -> Query:
    """The query the widgets name (:func:`pick_query`). While "Upload" waits for its file, the last
    query stays, so the page keeps its results."""
    state = st.session_state
    query = pick_query(gallery, encoder, from_item, by_row)
    if query[0] is not None:
        state.last_query = (gallery.key, query)
    elif state.get("query_upload") is None and state.get("last_query", (None,))[0] == gallery.key \
            and state.get("query_mode") == "Upload":
        st.caption("Showing the last query's neighbours until an image is uploaded.")
        query = state.last_query[1]
    return query


def pick_query(gallery: Gallery | ex.StoreSource, encoder, from_item: Callable[[int], Query],
               by_row: bool = False) -> Query:
    """The query the widgets name now: an upload, a text, or a gallery item (found by name, drawn
    at random or, ``by_row``, typed by its row number) as ``from_item(item)`` describes it;
    :data:`NO_QUERY` while there is none yet."""
    state = st.session_state
    if "query_id" not in state or state.query_id >= len(gallery):
        state.query_id = default_query(gallery)
    st.subheader("Query")
    mode = st.radio("Query from", QUERY_MODES, horizontal=True, key="query_mode")
    if mode == "Upload":
        return upload_query(encoder)
    if mode == "Text":
        return text_query(encoder)

    search_col, pick_col = st.columns([2, 3])
    needle = search_col.text_input("Search by name", key="query_search", placeholder="e.g. cat, rocket, pizza",
                                   max_chars=limits.TEXT_CHARS)
    options = gallery.find(needle) if needle.strip() else []
    if needle.strip() and not options:
        search_col.caption("No gallery image matches.")

    def picked() -> None:
        if state.get("query_pick") is not None:
            state.query_id = int(state.query_pick)

    pick_col.selectbox("Matches", options, index=None, format_func=caption_of(gallery), key="query_pick",
                       on_change=picked, placeholder=f"{len(options)} match(es)" if options else "search first")

    def draw_random() -> None:
        state.query_id = int(np.random.default_rng().integers(len(gallery)))

    # On its own row: beside the two inputs, the narrow query column squeezed its label to "R.".
    st.button("Random gallery image", key="query_random", on_click=draw_random)
    if by_row:
        def typed() -> None:
            state.query_id = int(state.query_row)

        state.query_row = int(state.query_id)  # follows a pick, a random draw or a link
        st.number_input(f"Row (0 to {len(gallery) - 1:,})", 0, len(gallery) - 1, step=1, key="query_row",
                        on_change=typed)
    return from_item(int(state.query_id))


def upload_query(encoder) -> tuple[np.ndarray | None, None, None, Any, str]:
    """The uploaded query as ``(embedding (d,), None, None, image, description)``; :data:`NO_QUERY`
    while none is uploaded or when it cannot be used (an error box says why)."""
    upload = st.file_uploader("Upload an image (PNG, JPEG or WebP)", key="query_upload")
    if upload is None:
        st.info("Upload an image to use it as the query.")
        return NO_QUERY
    vector = attempt(lambda: embed_upload(encoder, upload.getvalue(), upload.name), "That upload cannot be used")
    if vector is None:
        return NO_QUERY
    image = ex.query_image_from_upload(upload.getvalue(), upload.name)
    return vector, None, None, image, f"upload {upload.name}"


def text_query(encoder) -> tuple[np.ndarray | None, None, None, None, str]:
    """The typed text query as ``(embedding (d,), None, None, None, description)``; :data:`NO_QUERY` while blank."""
    text = st.text_input("Text query", key="query_text", max_chars=limits.TEXT_CHARS).strip()
    if not text:
        st.warning("Type a text query.")
        return NO_QUERY
    return embed_text_query(encoder, text), None, None, None, f"text “{text}”"


# -- anchors and geometry -------------------------------------------------------------------------
def anchor_column(column, name: str, label: str, presets: dict[str, tuple[str, ...]]) -> ex.AnchorText:
    """One anchor set: a preset menu that fills a text area (one anchor per line), and its count.
    Their values come from the session state (:func:`follow_view_link`)."""
    text_key, preset_key = f"anchors_{name}", f"preset_{name}"

    def apply_preset() -> None:
        st.session_state[text_key] = "\n".join(presets[st.session_state[preset_key]])

    column.selectbox(f"Preset for {label}", list(presets), key=preset_key, on_change=apply_preset)
    column.text_area(f"Anchor set {label} (one per line)", key=text_key, height=160, max_chars=limits.ANCHOR_TEXT_CHARS)
    parsed = ex.parse_anchor_text(st.session_state[text_key])
    (column.caption if len(parsed) else column.warning)(parsed.summary())
    return parsed


def anchor_widgets(presets: dict[str, tuple[str, ...]]) -> tuple[ex.AnchorText, ex.AnchorText, str]:
    """The anchors block of the Explore page: sets A and B side by side and the weighting of p;
    ``(parsed A, parsed B, weighting)``."""
    st.subheader("Anchors")
    col_a, col_b = st.columns(2)
    parsed_a = anchor_column(col_a, "a", "A (object)", presets)
    parsed_b = anchor_column(col_b, "b", "B (style)", presets)
    weighting = st.radio("Weights of A and B", list(ex.WEIGHTINGS), horizontal=True, key="weighting",
                         format_func=str.capitalize)
    st.caption(ex.WEIGHTINGS[weighting])
    return parsed_a, parsed_b, weighting


def anchor_texts(gallery: Gallery) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The anchor sets A and B as typed on the Explore page (or its presets), for pages that use
    them without showing them."""
    follow_view_link(gallery)
    return tuple(ex.parse_anchor_text(st.session_state[f"anchors_{side}"]).anchors for side in "ab")


def geometry_spec(choices: dict[str, Any], kind: str | None = None, scale: float | None = None) -> ex.GeometrySpec:
    """The sidebar's geometry, with ``kind`` and ``scale`` overridden when given (an error box and
    a stop when a value is invalid)."""
    return attempt(lambda: ex.GeometrySpec(kind=kind or choices["kind"], scale=float(scale or choices["scale"]),
                                           n_components=int(choices["n_components"]), rank=int(choices["rank"]),
                                           alpha=float(choices["alpha"]), reverse=choices["reverse"]),
                   "Invalid geometry", stop=True)


def geometry_for(choices: dict[str, Any], gallery: Gallery | ex.StoreSource, encoder, texts_a: tuple[str, ...],
                 texts_b: tuple[str, ...], kind: str | None = None, scale: float | None = None
                 ) -> ex.ExplorerGeometry | ex.ExplorerGeometry:
    """The cached geometry of anchor sets A and B under the sidebar's settings (``kind`` and
    ``scale`` override them), over a store through its sharded index; an error
    box and a stop when it cannot be built."""
    spec = geometry_spec(choices, kind, scale)
    prior = ex.parse_anchor_text(choices["prior_text"]).anchors
    build = get_store_geometry if isinstance(gallery, ex.StoreSource) else get_geometry
    geometry = attempt(lambda: build(gallery, encoder, tuple(texts_a), tuple(texts_b), spec, prior),
                       "Cannot build the geometry", stop=True)
    for note in geometry.notes:
        st.info(markdown_literal(note, ERROR_CHARS))
    return geometry


def draw_grid(column, title: str, table: pd.DataFrame, gallery: Gallery | ex.StoreSource, value_name: str,
              images: list | None = None) -> None:
    """A neighbour table as captioned images: ``images`` (one per row), by default the gallery's own."""
    column.markdown(f"**{title}**  \n{ex.agreement_text(table)}")
    column.image(images if images is not None else [gallery.image(item) for item in table["gallery_id"]],
                 caption=[markdown_literal(text) for text in ex.grid_captions(table, gallery, value_name)],
                 width=GRID_WIDTH)


# -- projections ----------------------------------------------------------------------------------
def use_projection_pick(chart_key: str) -> None:
    """on_select callback of a projection chart: the clicked image becomes the query. It runs before
    the page is drawn, so it may still set the query-mode radio."""
    points = st.session_state[chart_key].selection.points
    if points:
        st.session_state.query_id = int(points[0]["customdata"][0])
        st.session_state.query_mode = "Gallery image"


def query_and_anchors(gallery: Gallery | ex.StoreSource, encoder, from_item: Callable[[int], Query],
                      fields: list[links.LinkField], by_row: bool = False
                      ) -> tuple[Query, ex.AnchorText, ex.AnchorText, str]:
    """The top of both Explore pages: the query (shown beside its picker) and anchor sets A and B,
    then the page's link published; ``(query, parsed A, parsed B, weighting)``."""
    query_col, anchor_col = st.columns([1.3, 3])
    with query_col:
        query = choose_query(gallery, encoder, from_item, by_row=by_row)
        vector, _, _, image, text = query
        if image is not None:
            st.image(image, caption=markdown_literal(text), width=QUERY_IMAGE_WIDTH)
        elif vector is not None:
            st.caption(f"Query: {markdown_literal(text)}")
    with anchor_col:
        parsed_a, parsed_b, weighting = anchor_widgets(gallery_presets(gallery))
    publish_link(fields, gallery)
    return query, parsed_a, parsed_b, weighting


def geometry_and_key(choices: dict[str, Any], gallery: Gallery | ex.StoreSource, encoder, parsed_a: ex.AnchorText,
                     parsed_b: ex.AnchorText) -> tuple[ex.ExplorerGeometry | ex.ExplorerGeometry, str]:
    """The cached geometry of A and B under the sidebar's settings, and the key that names it (for
    the projections' caches)."""
    spec = geometry_spec(choices)
    prior = ex.parse_anchor_text(choices["prior_text"]).anchors
    geometry = geometry_for(choices, gallery, encoder, parsed_a.anchors, parsed_b.anchors)
    return geometry, ex.projection_key(gallery.key, encoder.name, parsed_a.anchors, parsed_b.anchors, spec, prior)


def project_at_current_p() -> None:
    st.session_state.umap_p = st.session_state.get("p", 0.5)


def pinned_projection_p(column, show: bool, is_mixture: bool) -> float | None:
    """The "Project at the current p" button in ``column``, and the p a projection is drawn at (pinned
    by that button, so moving the slider never recomputes a projection); ``None`` while ``show`` is off.
    Starts UMAP's warm-up here, after the grids are drawn, so that it never delays them."""
    column.button("Project at the current p", key="umap_use_p", on_click=project_at_current_p,
                  disabled=not (show and is_mixture))
    umap_warm_up()
    if not show:
        return None
    if "umap_p" not in st.session_state:
        project_at_current_p()
    return float(st.session_state.umap_p)


def projection_caption(ids: np.ndarray, query_id: int | None, neighbour_ids: list[int], p: float) -> None:
    """Says at which p the neighbours are marked, and how many of them the sampled projection leaves out."""
    missing = ex.outside_sample(ids, query_id, neighbour_ids)
    st.caption(f"Neighbours marked at p = {p:.2f}; moving p does not re-project (press “Project at the current p”)."
               + (f" {missing} of the query and its neighbours are outside the sampled {len(ids):,} points."
                  if missing else ""))


def plotly_text(frame: pd.DataFrame, *columns: str) -> tuple[pd.DataFrame, ...]:
    """``frame`` with ``columns`` (their names and their text values) as :func:`plotly_literal`, and the new names."""
    renamed = {column: plotly_literal(column) for column in columns}
    frame = frame.assign(**{column: frame[column].map(lambda value: value if pd.isna(value) else plotly_literal(value))
                            for column in dict.fromkeys(columns) if frame[column].dtype == object})
    return (frame.rename(columns=renamed), *renamed.values())


def projection_chart(column, frame: pd.DataFrame, colour: str, name: str, title: str, chart_key: str) -> None:
    """A projection frame (``x``, ``y``, ``role``, ``gallery_id``, ``colour`` and ``name`` columns) as a
    scatter whose query and neighbours stand out; clicking a point makes it the query. Names,
    labels and their column names come from files: Plotly gets them as text."""
    frame, colour, name = plotly_text(frame, colour, name)
    figure = px.scatter(frame, x="x", y="y", color=colour, symbol="role", custom_data=["gallery_id"],
                        hover_data={name: True, "x": False, "y": False},
                        symbol_map={"gallery": "circle", "neighbour": "diamond", "query": "star"},
                        title=title, height=520)
    figure.update_traces(marker={"size": 5, "opacity": 0.7})
    figure.for_each_trace(lambda trace: trace.update(marker={"size": 14, "opacity": 1.0, "line": {"width": 1}})
                          if "query" in trace.name or "neighbour" in trace.name else None)
    column.plotly_chart(figure, key=chart_key, on_select=lambda: use_projection_pick(chart_key),
                        selection_mode="points")
