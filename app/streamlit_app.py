"""anchordiv explorer: one query, two anchor sets, and the neighbourhoods they induce.

Run with ``streamlit run app/streamlit_app.py`` (or ``make demo``). The app is thin: widgets pass
plain arguments to :mod:`anchordiv.explorer`, :mod:`anchordiv.explain`, :mod:`anchordiv.gallery` and
:mod:`anchordiv.projection`, and draw what they return (captions, tables, downloads and plot frames
are built there too). Shared state lives in ``st.cache_resource``
(encoders, galleries, fitted geometries: never mutated after they are built); everything a user
changes lives in ``st.session_state``, so two browser sessions never see each other's settings.

Image folders, labels CSVs and checkpoints are opened only under the data roots given at launch
(``streamlit run app/streamlit_app.py -- --data-root DIR``, or ``ANCHORDIV_DATA_ROOTS``), offered as
menus; typing any path is a local-only mode (``--allow-any-path``). See
:mod:`anchordiv.explorer.paths`.

Environment (for tests and small machines): ``ANCHORDIV_APP_GALLERY_SPLIT`` ("all", "train",
"heldout"; default "all") and ``ANCHORDIV_APP_GALLERY_LIMIT`` (first N images of the world).
"""
from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable

import streamlit as st

st.set_page_config(page_title="anchordiv explorer", page_icon="⚓", layout="wide")
# A new server's first run imports torch, scikit-learn and the library (about 5 s on 2 cores):
# the page says so instead of staying blank. Later runs find them imported and skip past this.
_starting = st.empty()
_starting.caption("Starting: loading torch, scikit-learn and anchordiv…")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import plotly.express as px  # noqa: E402
import torch  # noqa: E402

from anchordiv import explain  # noqa: E402
from anchordiv import explorer as ex  # noqa: E402
from anchordiv import projection  # noqa: E402
from anchordiv.datasets import ShippedDataError  # noqa: E402
from anchordiv.encoders import load_encoder  # noqa: E402
from anchordiv.gallery import Gallery, folder_gallery, world_gallery  # noqa: E402
from anchordiv.models import anchor_model_kind, list_anchor_models  # noqa: E402
from anchordiv.text_cache import encode_texts_cached  # noqa: E402

_starting.empty()

GALLERY_SPLIT = os.environ.get("ANCHORDIV_APP_GALLERY_SPLIT", "all")
GALLERY_LIMIT = int(os.environ["ANCHORDIV_APP_GALLERY_LIMIT"]) if os.environ.get("ANCHORDIV_APP_GALLERY_LIMIT") else None
# Measured by evaluate-builtin on the held-out emoji: softmax with object anchors gives same-emoji
# mAP 0.530 at s = 10 against 0.431 at the learned scale 29.2 (docs/design.md §3: CLIP behaves alike).
DEFAULT_SCALE = 10.0
GRID_WIDTH = 96
WORLD, FOLDER = "Built-in emoji world", "Image folder"
BUILTIN, OPEN_CLIP = "Built-in", "open_clip (local checkpoint)"
DIRECTIONS = {"Query first: KL(p_query ‖ p_neighbour)": False, "Reverse: KL(p_neighbour ‖ p_query)": True}


# The library's ways of saying "the input (or the shipped data) is wrong, and here is the fix".
FIXABLE_ERRORS = (ValueError, ShippedDataError)
# Cached functions take encoders and galleries themselves; Streamlit hashes them by the strings that
# identify their content. It matches hash_funcs on the exact type, so each encoder class is named
# (by its qualified name, which spares importing open_clip at start-up).
BY_IDENTITY = {
    "anchordiv.encoders.builtin.BuiltinEncoder": lambda encoder: encoder.name,
    "anchordiv.encoders.open_clip_encoder.OpenClipEncoder": lambda encoder: encoder.name,
    Gallery: lambda gallery: gallery.key,
}


def attempt(action: Callable[[], Any], what: str, stop: bool = False) -> Any:
    """Run ``action``; a :data:`FIXABLE_ERRORS` error becomes an error box (its message names the
    fix) instead of a traceback. ``stop`` halts the page after it."""
    try:
        return action()
    except FIXABLE_ERRORS as error:
        st.error(f"{what}: {error}")
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


def data_roots() -> ex.DataRoots:
    """The folders this server may open, from its launch options and environment (fixed for the
    life of the process; read on each run because it is cheap and keeps tests independent)."""
    return ex.DataRoots.from_launch(sys.argv[1:], os.environ)


@st.cache_resource(show_spinner="Embedding the image folder (cached for later starts)…", max_entries=4,
                   hash_funcs=BY_IDENTITY)
def get_folder_gallery(encoder, folder: str, labels_csv: str | None) -> Gallery:
    return folder_gallery(folder, encoder, labels_csv=labels_csv or None)


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


# -- sidebar: data, model, geometry -------------------------------------------------------------
def sidebar() -> dict[str, Any]:
    """Every sidebar choice as plain values."""
    bar = st.sidebar
    bar.title("⚓ anchordiv explorer")
    choices: dict[str, Any] = {}
    bar.subheader("Data and model")
    roots = attempt(data_roots, "This server's data folders are misconfigured", stop=True)
    choices["source"] = bar.radio("Gallery", [WORLD, FOLDER], key="gallery_source")
    if choices["source"] == FOLDER:
        if roots.allow_any_path:
            choices["folder"] = bar.text_input("Image folder (subfolders are labels)", key="folder_path")
            choices["labels_csv"] = bar.text_input("Labels CSV (optional)", key="folder_labels")
        else:
            choices["folder"] = bar.selectbox("Image folder (subfolders are labels)",
                                              [str(path) for path in roots.image_folders()], index=None,
                                              key="folder_choice", placeholder="choose a data folder")
            csvs = (attempt(lambda: ex.csv_files(roots.confine(choices["folder"], "image folder")),
                            "Could not use that image folder") or []) if choices["folder"] else []
            choices["labels_csv"] = bar.selectbox("Labels CSV (optional)", [str(path) for path in csvs], index=None,
                                                  key="folder_labels_choice", placeholder="none")
    choices["model"] = bar.radio("Model", [BUILTIN, OPEN_CLIP], key="model_source")
    if choices["model"] == OPEN_CLIP:
        choices["arch"] = bar.text_input("Architecture", value="ViT-B-32", key="openclip_arch")
        if roots.allow_any_path:
            choices["checkpoint"] = bar.text_input("Checkpoint file or pretrained tag", key="openclip_checkpoint")
        else:
            choices["checkpoint"] = bar.selectbox("Checkpoint file", [str(path) for path in roots.checkpoints()],
                                                  index=None, key="checkpoint_choice",
                                                  placeholder="choose a checkpoint from the data folders")
    bar.subheader("Geometry")
    choices["kind"] = bar.selectbox("Anchor model", list_anchor_models(),
                                    format_func=lambda name: anchor_model_kind(name).label, key="model_kind")
    kind = anchor_model_kind(choices["kind"])
    choices["scale"] = bar.slider("Scale s (inverse temperature)", 1.0, 100.0, DEFAULT_SCALE, 1.0, key="scale")
    choices["n_components"] = (bar.number_input("GMM components", 1, 16, 2, key="gmm_components")
                               if "n_components" in kind.defaults else 2)
    choices["rank"] = (bar.number_input("Latent rank", 1, 256, 8, key="latent_rank")
                       if "rank" in kind.defaults else 8)
    choices["alpha"], choices["prior_text"] = 1.0, ""
    if kind.needs_prior:
        choices["prior_text"] = bar.text_area("Prior anchor set (one per line)", key="prior_anchors", height=120)
        choices["alpha"] = bar.number_input("alpha (prior pseudo-count)", 0.0, 1e6, 1.0, key="alpha")
    choices["reverse"] = DIRECTIONS[bar.radio("Direction", list(DIRECTIONS), key="direction")]
    choices["k"] = int(bar.number_input("Top-k", 1, 50, 10, key="top_k"))
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


def load_gallery_for(choices: dict[str, Any], encoder) -> Gallery:
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
    gallery = attempt(lambda: get_world_gallery(encoder, GALLERY_SPLIT, GALLERY_LIMIT,
                                                lambda fraction, text: progress.progress(fraction, text)),
                      "Could not load the built-in emoji world", stop=True)
    progress.empty()
    return gallery


# -- query ----------------------------------------------------------------------------------------
def choose_query(gallery: Gallery, encoder) -> tuple[np.ndarray | None, int | None, pd.Series | None, Any, str]:
    """The query as ``(embedding (d,), gallery id or None, labels or None, image or None, description)``.
    While "Upload" waits for its file, the last query stays, so the page keeps its results."""
    state = st.session_state
    query = pick_query(gallery, encoder)
    if query[0] is not None:
        state.last_query = (gallery.key, query)
    elif state.get("query_upload") is None and state.get("last_query", (None,))[0] == gallery.key \
            and state.get("query_mode") == "Upload":
        st.caption("Showing the last query's neighbours until an image is uploaded.")
        query = state.last_query[1]
    return query


def pick_query(gallery: Gallery, encoder) -> tuple[np.ndarray | None, int | None, pd.Series | None, Any, str]:
    """The query the widgets name now (``None`` embedding when there is none yet)."""
    state = st.session_state
    if "query_id" not in state or state.query_id >= len(gallery):
        state.query_id = ex.default_query_id(gallery)
    st.subheader("Query")
    mode = st.radio("Query from", ["Gallery image", "Upload", "Text"], horizontal=True, key="query_mode")
    if mode == "Upload":
        upload = st.file_uploader("Upload an image (PNG, JPEG or WebP)", key="query_upload")
        if upload is None:
            st.info("Upload an image to use it as the query.")
            return None, None, None, None, ""
        vector = attempt(lambda: embed_upload(encoder, upload.getvalue(), upload.name),
                         "That upload cannot be used")
        if vector is None:
            return None, None, None, None, ""
        image = ex.query_image_from_upload(upload.getvalue(), upload.name)
        return vector, None, None, image, f"upload {upload.name}"
    if mode == "Text":
        text = st.text_input("Text query", value="a dog in watercolor", key="query_text").strip()
        if not text:
            st.warning("Type a text query.")
            return None, None, None, None, ""
        return embed_text_query(encoder, text), None, None, None, f"text “{text}”"

    search_col, pick_col = st.columns([2, 3])
    needle = search_col.text_input("Search by name", key="query_search", placeholder="e.g. cat, rocket, pizza")
    options = gallery.find(needle) if needle.strip() else []
    if needle.strip() and not options:
        search_col.caption("No gallery image matches.")

    def picked() -> None:
        if state.get("query_pick") is not None:
            state.query_id = int(state.query_pick)

    pick_col.selectbox("Matches", options, index=None, format_func=gallery.caption, key="query_pick",
                       on_change=picked, placeholder=f"{len(options)} match(es)" if options else "search first")

    def draw_random() -> None:
        state.query_id = int(np.random.default_rng().integers(len(gallery)))

    # On its own row: beside the two inputs, the narrow query column squeezed its label to "R.".
    st.button("Random gallery image", key="query_random", on_click=draw_random)
    item = int(state.query_id)
    return (gallery.embeddings[item].numpy(), item, gallery.labels.iloc[item], gallery.image(item),
            f"#{item} {gallery.caption(item)}")


# -- anchors --------------------------------------------------------------------------------------
def anchor_column(column, name: str, label: str, presets: dict[str, tuple[str, ...]], default: str) -> ex.AnchorText:
    """One anchor set: a preset menu that fills a text area (one anchor per line), and its count."""
    text_key, preset_key = f"anchors_{name}", f"preset_{name}"
    if text_key not in st.session_state:
        st.session_state[text_key] = "\n".join(presets[default])

    def apply_preset() -> None:
        st.session_state[text_key] = "\n".join(presets[st.session_state[preset_key]])

    column.selectbox(f"Preset for {label}", list(presets), index=list(presets).index(default), key=preset_key,
                     on_change=apply_preset)
    column.text_area(f"Anchor set {label} (one per line)", key=text_key, height=160)
    parsed = ex.parse_anchor_text(st.session_state[text_key])
    (column.caption if len(parsed) else column.warning)(parsed.summary())
    return parsed


# -- results --------------------------------------------------------------------------------------
def draw_grid(column, title: str, table: pd.DataFrame, gallery: Gallery, value_name: str) -> None:
    column.markdown(f"**{title}**  \n{ex.agreement_text(table)}")
    column.image([gallery.image(item) for item in table["gallery_id"]],
                 caption=ex.grid_captions(table, gallery, value_name), width=GRID_WIDTH)


# The page widgets whose values must survive a run that stops before drawing them (a folder not
# chosen yet, a model that failed to load): the anchor sets, which the presets fill from code. Only
# these: writing a value back makes the server send it to the browser again, which would race a
# person pressing a slider's arrow keys.
KEPT_WIDGETS = ("anchors_a", "anchors_b")


def keep_widget_values() -> None:
    """Streamlit forgets, in the browser, the value of a widget that one run did not draw, while the
    server keeps it: the anchors would show empty yet stay in use. Writing each value back before
    the widgets are drawn makes the server send it again."""
    for key in KEPT_WIDGETS:
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]


@dataclass(frozen=True)
class View:
    """What the sections below the anchors draw from: everything but ``p``, which the results
    fragment owns (so moving it reruns only that fragment)."""

    gallery: Gallery
    encoder: Any
    geometry: ex.ExplorerGeometry
    geometry_key: str
    weighting: str
    query: np.ndarray
    query_id: int | None
    query_labels: pd.Series | None
    query_text: str
    k: int
    baselines: dict[str, pd.DataFrame]


def main() -> None:
    keep_widget_values()
    choices = sidebar()
    encoder = load_encoder_for(choices)
    gallery = load_gallery_for(choices, encoder)
    st.sidebar.caption(f"{gallery.description} · {encoder.name} (d = {encoder.dim}, logit scale "
                       f"{encoder.logit_scale:.1f}) on CPU")

    query_col, anchor_col = st.columns([1.3, 3])
    with query_col:
        query, query_id, query_labels, query_image, query_text = choose_query(gallery, encoder)
        if query_image is not None:
            st.image(query_image, caption=query_text, width=160)
        elif query is not None:
            st.caption(f"Query: {query_text}")

    presets = ex.anchor_presets(gallery)
    with anchor_col:
        st.subheader("Anchors")
        col_a, col_b = st.columns(2)
        parsed_a = anchor_column(col_a, "a", "A (object)", presets, "Gallery object names")
        parsed_b = anchor_column(col_b, "b", "B (style)", presets, "Gallery styles")
        weighting = st.radio("Weights of A and B", list(ex.WEIGHTINGS), horizontal=True, key="weighting",
                             format_func=str.capitalize)
        st.caption(ex.WEIGHTINGS[weighting])
    if query is None:
        return
    spec = attempt(lambda: ex.GeometrySpec(kind=choices["kind"], scale=float(choices["scale"]),
                                           n_components=int(choices["n_components"]), rank=int(choices["rank"]),
                                           alpha=float(choices["alpha"]), reverse=choices["reverse"]),
                   "Invalid geometry", stop=True)
    prior = ex.parse_anchor_text(choices["prior_text"]).anchors
    geometry = attempt(lambda: get_geometry(gallery, encoder, parsed_a.anchors, parsed_b.anchors, spec, prior),
                       "Cannot build the geometry", stop=True)
    for note in geometry.notes:
        st.info(note)
    baselines = baseline_tables(gallery, encoder, query, query_id, query_labels, choices["k"],
                                parsed_a.anchors + parsed_b.anchors if choices["show_iti"] else None)
    view = View(gallery, encoder, geometry,
                ex.projection_key(gallery.key, encoder.name, parsed_a.anchors, parsed_b.anchors, spec, prior),
                weighting, query, query_id, query_labels, query_text, choices["k"], baselines)
    results_section(view)
    sweep_section(view)
    umap_section(view)


@st.fragment
def results_section(view: View) -> None:
    """The p slider and everything that depends on it: a fragment, so that moving p reruns only this."""
    geometry, gallery = view.geometry, view.gallery
    p = st.slider("p: weight of A against B (p = 1: only A, p = 0: only B)", 0.0, 1.0, 0.5, 0.05, key="p",
                  disabled=not geometry.is_mixture)
    if not geometry.is_mixture:
        st.caption(f"Only set {geometry.component_names[0]} has anchors, so p has no effect.")
    tables = neighbour_tables(view, p)
    anchor_table = tables["anchor divergence"]

    st.subheader("Neighbours")
    st.caption("✓obj: same object as the query · ✓sty: same style · d = anchor divergence (lower is closer), "
               "s = similarity (higher is closer)")
    grid_cols = st.columns(len(tables))
    titles = {"anchor divergence": f"Anchor divergence ({anchor_model_kind(geometry.spec.kind).short}, p = {p:.2f})",
              "cosine": "Cosine similarity", "iti": "ITI (our reading: cosine of anchor profiles)"}
    for column, (method, table) in zip(grid_cols, tables.items()):
        draw_grid(column, titles[method], table, gallery, "divergence" if method == "anchor divergence" else "similarity")

    combined = ex.combined_table(tables)
    with st.expander("Neighbour table"):
        st.dataframe(combined, hide_index=True)
    down_csv, down_png = st.columns(2)
    # Built when clicked (on a server thread), not on every move of p.
    down_csv.download_button("Download neighbour table (CSV)", lambda: combined.to_csv(index=False).encode(),
                             "neighbours.csv", "text/csv", key="download_csv")
    title = f"Query: {view.query_text} · p = {p:.2f}"
    down_png.download_button("Download neighbour grid (PNG)",
                             lambda: ex.neighbour_grid_png(anchor_table, gallery, title=title),
                             "neighbours.png", "image/png", key="download_png")
    explain_section(view, p, anchor_table)


def neighbour_tables(view: View, p: float) -> dict[str, pd.DataFrame]:
    """The query's top-k for the anchor divergence at ``p``, then the baselines', by method."""
    index = view.geometry.index_at(p, view.weighting)
    result = attempt(lambda: ex.search_one(index, view.query, view.k, exclude=view.query_id), "Cannot rank the gallery",
                     stop=True)
    return {"anchor divergence": ex.neighbour_table(*result, view.gallery, view.query_labels, "divergence"),
            **view.baselines}


def baseline_tables(gallery: Gallery, encoder, query: np.ndarray, query_id: int | None, query_labels: pd.Series | None,
                    k: int, iti_texts: tuple[str, ...] | None) -> dict[str, pd.DataFrame]:
    """The query's top-k under cosine and (with ``iti_texts``) ITI: they do not depend on p."""
    indexes = {"cosine": get_baseline("cosine", gallery, encoder, ())}
    if iti_texts is not None:
        indexes["iti"] = attempt(lambda: get_baseline("iti", gallery, encoder, iti_texts), "ITI")
    return {method: ex.neighbour_table(*ex.search_one(index, query, k, exclude=query_id), gallery, query_labels,
                                       "similarity")
            for method, index in indexes.items() if index is not None}


@st.fragment
def explain_section(view: View, p: float, table: pd.DataFrame) -> None:
    """A fragment of its own: choosing another neighbour reruns only this."""
    gallery = view.gallery
    st.subheader("Why this neighbour?")
    rank = st.selectbox("Neighbour", table["rank"].tolist(), key="explain_rank",
                        format_func=lambda r: f"{r}. {gallery.caption(table.gallery_id.iloc[r - 1])}")
    neighbour = int(table.gallery_id.iloc[rank - 1])
    geometry = view.geometry
    query_tilt, neighbour_tilt, divergence, shown = explain.explain_pair(
        geometry.model_at(p, view.weighting), geometry.component_anchors, geometry.component_texts,
        geometry.component_names, torch.as_tensor(view.query), gallery.embeddings[neighbour],
        reverse=geometry.spec.reverse)
    left, middle, right = st.columns([2, 1, 2])
    left.markdown("**Query's tilted anchor distribution**")
    # Static tables: eight rows need no scrolling or sorting, and they draw faster on every move of p.
    left.table(tilt_table(query_tilt))
    right.markdown(f"**Neighbour {rank}'s tilted anchor distribution**")
    right.table(tilt_table(neighbour_tilt))
    middle.image(gallery.image(neighbour), width=96)
    middle.metric("Anchor divergence (model)", f"{divergence:.4f}")
    if query_tilt.exact:
        middle.caption("Exact tilted distributions p(anchor | x) ∝ w · exp(s γ·x); their KL equals the divergence.")
    else:
        middle.metric("KL of the shown tilts", f"{shown:.4f}")
        middle.caption("This model is not supported on the anchors: the tables show the empirical tilt over the "
                       "anchors in use (a stand-in); the divergence above is the model's own.")


def tilt_table(tilt: explain.TiltedDistribution) -> pd.DataFrame:
    """The eight most probable anchors, by anchor, probabilities to 4 decimals (as shown)."""
    return tilt.top(8).set_index("anchor").round({"probability": 4})


@st.cache_data(show_spinner=False, max_entries=64, hash_funcs=BY_IDENTITY)
def get_p_sweep(geometry_key: str, _geometry: ex.ExplorerGeometry, query: np.ndarray, k: int, gallery: Gallery,
                query_labels: pd.Series, query_id: int | None, weighting: str) -> pd.DataFrame:
    """The p sweep does not depend on where p is, so moving p reuses it (``geometry_key`` names ``_geometry``)."""
    return ex.p_sweep(_geometry, torch.as_tensor(query), k, gallery, query_labels, exclude=query_id, weighting=weighting)


def sweep_section(view: View) -> None:
    """Agreement with the query's object and style across p (outside the results fragment: it does
    not depend on where p is)."""
    st.subheader("p sweep")
    if not view.geometry.is_mixture or view.query_labels is None:
        st.caption("Needs both anchor sets and a query from the gallery (whose labels are known).")
        return
    sweep = get_p_sweep(view.geometry_key, view.geometry, view.query, view.k, view.gallery, view.query_labels,
                        view.query_id, view.weighting)
    long = sweep.rename(columns={"object": "same object", "style": "same style"}).melt(
        id_vars="p", var_name="shared with the query", value_name="fraction")
    # A Vega-Lite spec rather than st.line_chart: the same picture without building an Altair chart on
    # every rerun, and a fixed 0-1 axis (no "infinite extent" when a curve is flat).
    st.vega_lite_chart(long, {
        "mark": {"type": "line", "point": True}, "height": 240,
        "encoding": {"x": {"field": "p", "type": "quantitative", "title": "p (weight of A)"},
                     "y": {"field": "fraction", "type": "quantitative", "title": "agreement",
                           "scale": {"domain": [0, 1]}},
                     "color": {"field": "shared with the query", "type": "nominal"}}}, width="stretch")
    st.caption(f"Agreement: the fraction of the top-{view.k} that shares the query's object or style "
               f"({view.weighting} weights).")
    calibration_section(view)


def calibration_section(view: View) -> None:
    """The calibration curve behind the calibrated weights: how far the gallery's neighbourhoods have
    moved from B's to A's at each log-odds, measured without labels (docs/design.md §3)."""
    frame = ex.calibration_frame(view.geometry)
    if frame is None:
        return
    with st.expander("How calibrated p is made: the calibration curve"):
        st.vega_lite_chart(frame, {
            "mark": {"type": "line", "point": True}, "height": 220,
            "encoding": {"x": {"field": "log-odds", "type": "quantitative", "title": "log(w_A / w_B)"},
                         "y": {"field": "moved", "type": "quantitative", "title": "fraction moved from B to A",
                               "scale": {"domain": [0, 1]}},
                         "color": {"field": "curve", "type": "nominal"}}}, width="stretch", key="calibration_chart")
        st.caption("On a fixed sample of gallery images, each side counts the neighbours that have left B's "
                   "neighbourhood in that set's own divergence (A's side: closer to A's; B's side: farther from "
                   "B's). p is the slower side: calibrated p = 0.5 uses the weights where it reaches one half. "
                   "No labels are used.")


def use_projection_pick(chart_key: str) -> None:
    """on_select callback of a projection chart: the clicked image becomes the query. It runs before
    the page is drawn, so it may still set the query-mode radio."""
    points = st.session_state[chart_key].selection.points
    if points:
        st.session_state.query_id = int(points[0]["customdata"][0])
        st.session_state.query_mode = "Gallery image"


def project_at_current_p() -> None:
    st.session_state.umap_p = st.session_state.get("p", 0.5)


@st.fragment
def umap_section(view: View) -> None:
    """A fragment: its controls rerun only this. It projects the geometry at a p the user pins
    (``umap_p``), so moving the slider never recomputes a projection."""
    gallery, geometry = view.gallery, view.geometry
    st.subheader("UMAP of the geometry")
    controls = st.columns(5)
    show = controls[0].checkbox("Show the projection", key="umap_show",
                                help="UMAP of the anchor-divergence kNN graph; computed once per geometry and cached.")
    max_points = int(controls[1].number_input("Points (fixed sample)", 10, 20_000, min(len(gallery), 4000),
                                              step=500, key="umap_points"))
    colour_columns = [c for c in gallery.labels.columns if gallery.labels[c].nunique() < 200] or [gallery.name_column]
    colour = controls[2].selectbox("Colour by", colour_columns, key="umap_colour",
                                   index=colour_columns.index(gallery.style_column) if gallery.style_column in colour_columns else 0)
    with_cosine = controls[3].checkbox("Cosine projection beside it", key="umap_cosine")
    controls[4].button("Project at the current p", key="umap_use_p", on_click=project_at_current_p,
                       disabled=not (show and geometry.is_mixture))
    umap_warm_up()  # started here, after the grids are drawn, so that it never delays them
    if not show:
        return
    if "umap_p" not in st.session_state:
        project_at_current_p()
    p = float(st.session_state.umap_p)
    projections = [("anchor", f"Anchor divergence at p = {p:.2f} ({view.weighting})",
                    ex.projection_key(view.geometry_key, round(p, 4), view.weighting))]
    if with_cosine:
        projections.append(("cosine", "Cosine", ex.projection_key(gallery.key, view.encoder.name)))
    neighbour_ids = neighbour_tables(view, p)["anchor divergence"].gallery_id.tolist()
    for column, (method, title, key) in zip(st.columns(len(projections)), projections):
        ids, xy = attempt(lambda: get_projection(key, method, gallery, geometry, p, view.weighting, max_points),
                          "Cannot project the gallery") or (None, None)
        if ids is None:
            return
        frame = ex.projection_frame(gallery, ids, xy, view.query_id, neighbour_ids, colour)
        figure = px.scatter(frame, x="x", y="y", color=colour, symbol="role", custom_data=["gallery_id"],
                            hover_data={gallery.name_column: True, "x": False, "y": False},
                            symbol_map={"gallery": "circle", "neighbour": "diamond", "query": "star"},
                            title=title, height=520)
        figure.update_traces(marker={"size": 5, "opacity": 0.7})
        figure.for_each_trace(lambda trace: trace.update(marker={"size": 14, "opacity": 1.0, "line": {"width": 1}})
                              if "query" in trace.name or "neighbour" in trace.name else None)
        chart_key = f"umap_chart_{method}"
        column.plotly_chart(figure, key=chart_key, on_select=lambda chart_key=chart_key: use_projection_pick(chart_key),
                            selection_mode="points")
    missing = ex.outside_sample(ids, view.query_id, neighbour_ids)
    st.caption(f"Neighbours marked at p = {p:.2f}; moving p does not re-project (press “Project at the current p”)."
               + (f" {missing} of the query and its neighbours are outside the sampled {len(ids):,} points."
                  if missing else ""))


main()
