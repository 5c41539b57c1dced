"""The explorer's shared, cached resources: encoders, gallery sources, fitted geometries, a query's
slider and baselines, embeddings of uploads and texts, projections. Built once per server (or per
argument) and never changed by a caller; what a user changes lives in ``st.session_state``, so two
browser sessions never see each other's settings. Also the server's data roots and its torch threads.
"""
from __future__ import annotations

import hashlib
import os
import sys

import numpy as np
import pandas as pd
import streamlit as st
import torch

from anchordiv import explorer as ex
from anchordiv.cache import cache_dir
from anchordiv.device import resolve_device
from anchordiv.encoders import load_encoder, model_catalog
from anchordiv.explorer.launch import LaunchOptions
from anchordiv.explorer.p_player import PlayerPath, player_data
from anchordiv.explorer.thumbnails import EncodedThumbnails
from anchordiv.gallery import Gallery, folder_gallery, world_gallery
from anchordiv.models import anchor_model_kind
from anchordiv import prompts
from anchordiv.prompts import AS_TYPED, TemplateChoice
from anchordiv.slider import SliderPath

# Cached functions take encoders and sources themselves; Streamlit hashes them by the strings that
# identify their content, and texts by their bytes. It matches hash_funcs on the exact type, so
# each encoder class is named (by its qualified name, which spares importing open_clip at start-up).
BY_IDENTITY = {
    "anchordiv.encoders.builtin.BuiltinEncoder": lambda encoder: encoder.name,
    "anchordiv.encoders.open_clip_encoder.OpenClipEncoder": lambda encoder: encoder.name,
    Gallery: lambda gallery: gallery.key,
    ex.MemorySource: lambda source: source.key,
    ex.StoreSource: lambda source: source.key,
    # Streamlit hashes a str as UTF-8, which a path whose name was not UTF-8 (held with lone
    # surrogates, as Python decodes it) cannot be; surrogatepass keeps distinct texts distinct.
    str: lambda text: text.encode("utf-8", "surrogatepass"),
}


def share_the_cores() -> None:
    """Torch on ``ANCHORDIV_APP_THREADS`` threads (default 1). A server is shared by sessions: with
    one thread a visitor's heaviest figure leaves the other cores to everyone else's p steps
    (``explorer-bench --browser --isolation`` on 2 cores: p steps 1.6 times as slow meanwhile with
    one thread, 2.0 with two, and the figure itself drawn sooner). 0 keeps torch's own count (the
    tests' process, which runs the app in itself, does)."""
    threads = int(os.environ.get("ANCHORDIV_APP_THREADS", "1"))
    if threads and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def launch_options() -> LaunchOptions:
    """What this server was started with: its data roots, whether it may download models, the
    model and folder it opens on (fixed for the life of the process; read on each run because it
    is cheap and keeps tests independent)."""
    return LaunchOptions.from_launch(sys.argv[1:], os.environ)


def server_device() -> torch.device:
    """Where this server encodes, fits, ranks and lays out maps: ``--device`` at launch, else CUDA
    when available, else the CPU (:func:`anchordiv.device.resolve_device`)."""
    return resolve_device(launch_options().device, "--device")


def data_roots() -> ex.DataRoots:
    """The folders this server may open (:func:`launch_options`)."""
    return launch_options().roots


def world_slice() -> tuple[str, int | None]:
    """The split and size of the built-in world this server shows (``ANCHORDIV_APP_GALLERY_SPLIT``,
    ``ANCHORDIV_APP_GALLERY_LIMIT``; read on each run, as :func:`data_roots` is)."""
    limit = os.environ.get("ANCHORDIV_APP_GALLERY_LIMIT")
    return os.environ.get("ANCHORDIV_APP_GALLERY_SPLIT", "all"), int(limit) if limit else None


# -- models and galleries ----------------------------------------------------------------------------
@st.cache_resource(show_spinner="Loading the model…", max_entries=4)
def get_encoder(spec: str, pretrained: str | None, allow_download: bool = False):
    """The encoder ``spec`` names, on the server's device (CUDA when available, else CPU), from
    files on this machine (:func:`encoder_downloads` fetches the weights first); ``allow_download``
    lets a model whose tokenizer lives on the hub fetch it."""
    return load_encoder(spec, pretrained=pretrained or None, allow_download=allow_download, device=server_device())


@st.cache_resource(show_spinner="Listing open_clip's models…", ttl=60)
def encoder_menu() -> list:
    """The encoders the sidebar offers (:func:`~anchordiv.encoders.model_catalog`), with their
    download sizes (estimated from the counts that ship with anchordiv). Listed again after a
    minute, so that a model downloaded since shows as on disk."""
    return model_catalog()


@st.cache_resource(show_spinner=False)
def encoder_downloads() -> ex.BackgroundJobs:
    """The server's encoder downloads: one per model however many visitors ask, each in a thread of
    its own (a visitor who moves on does not stop it), its progress shown to each who waits."""
    return ex.BackgroundJobs()


@st.cache_resource(show_spinner=False)
def world_galleries() -> ex.SharedBuilds:
    """Process-wide world galleries. Not a cached function of its own because the first start
    draws a progress bar while embedding, which every visitor arriving meanwhile sees too."""
    return ex.SharedBuilds()


def get_world_gallery(encoder, split: str, limit: int | None, progress) -> Gallery:
    return world_galleries().get((encoder.name, split, limit),
                                 lambda report: world_gallery(encoder, split=split, limit=limit, progress=report),
                                 progress)


@st.cache_resource(show_spinner="Embedding the image folder (cached for later starts)…", max_entries=4,
                   hash_funcs=BY_IDENTITY)
def get_folder_gallery(encoder, folder: str, labels_csv: str | None) -> Gallery:
    return folder_gallery(folder, encoder, labels_csv=labels_csv or None)


@st.cache_resource(show_spinner=False, max_entries=4, hash_funcs=BY_IDENTITY)
def memory_source(gallery: Gallery) -> ex.MemorySource:
    """The source of a gallery in memory, one per gallery, so that its cosine index is built once
    and every later query and page shares it."""
    return ex.MemorySource(gallery, device=str(server_device()))


@st.cache_resource(show_spinner="Opening the gallery store and indexing its names…", max_entries=4,
                   hash_funcs=BY_IDENTITY)
def get_store_source(folder: str, stamp: tuple, encoder_name: str, dim: int, roots: ex.DataRoots) -> ex.StoreSource:
    """``stamp`` (:func:`~anchordiv.explorer.store_stamp`: its files' sizes, times and inodes) opens
    a store written again, or with a file edited in place, afresh; ``roots``, where its thumbnails
    may be read."""
    return ex.StoreSource.open(folder, encoder_name, dim, roots, stamp, device=str(server_device()))


@st.cache_resource(show_spinner=False, max_entries=8, hash_funcs=BY_IDENTITY)
def encoded_thumbnails(source: ex.GallerySource) -> EncodedThumbnails:
    """``source``'s thumbnails, each encoded once for every page and visitor of this server (a move
    of p sends the kept bytes of the items it shows rather than encoding images again). A gallery
    in memory also keeps them on disk under its key, which names its content, so that a later start
    shows its first page without rendering; a store's images are files already, read when shown."""
    folder = None
    if isinstance(source, ex.MemorySource):
        folder = cache_dir() / "thumbnails" / hashlib.sha256(source.key.encode()).hexdigest()[:24]
    return EncodedThumbnails(source.thumbnails, folder=folder)


@st.cache_resource(show_spinner=False, max_entries=8, hash_funcs=BY_IDENTITY)
def source_presets(source: ex.GallerySource) -> dict[str, tuple[str, ...]]:
    """The preset anchor lists of ``source`` (60 ms for the whole world, and every full run of a
    page needs them several times); shared, never changed by a caller."""
    return source.presets()


# -- geometries and rankings -------------------------------------------------------------------------
@st.cache_resource(show_spinner="Encoding the anchors (kept on disk for later starts)…", max_entries=64,
                   hash_funcs=BY_IDENTITY)
def encode_texts(encoder, texts: tuple[str, ...], templates: TemplateChoice = AS_TYPED) -> torch.Tensor:
    """``texts`` through ``templates``, refused past :data:`~anchordiv.prompts.ENCODE_SECONDS` (a spinner meanwhile)."""
    return prompts.encode_anchors(encoder, texts, templates, max_seconds=prompts.ENCODE_SECONDS)


@st.cache_resource(show_spinner="Fitting the anchor model and indexing the gallery (one pass)…", max_entries=16,
                   hash_funcs=BY_IDENTITY)
def get_geometry(source: ex.GallerySource, encoder, texts_a: tuple[str, ...], texts_b: tuple[str, ...],
                 spec: ex.GeometrySpec, prior_texts: tuple[str, ...],
                 templates: tuple[TemplateChoice, TemplateChoice] = (AS_TYPED, AS_TYPED),
                 prior_templates: TemplateChoice = AS_TYPED,
                 weights: tuple[tuple[float, ...] | None, tuple[float, ...] | None] = (None, None)
                 ) -> ex.ExplorerGeometry:
    """Sets A and B encoded through ``templates`` (one choice each), the prior set through
    ``prior_templates``; a set with ``weights`` (its :attr:`~anchordiv.explorer.AnchorText.weights`)
    is the empirical model with them."""
    anchors = [encode_texts(encoder, texts, choice) for texts, choice in zip((texts_a, texts_b), templates)]
    prior = encode_texts(encoder, prior_texts, prior_templates) if anchor_model_kind(spec.kind).needs_prior else None
    return source.fit_geometry(anchors, [texts_a, texts_b], spec, prior=prior, prior_texts=prior_texts,
                               anchor_weights=weights)


@st.cache_resource(show_spinner="Ranking the gallery at every p (one pass)…", max_entries=32)
def get_p_path(geometry_key: str, _geometry: ex.ExplorerGeometry, query: np.ndarray, k: int, exclude: int | None,
               weighting: str) -> SliderPath:
    """The query's exact top-``k`` at every position of the p slider (never changed by a caller);
    ``geometry_key`` names ``_geometry``."""
    return _geometry.p_path(query, k, exclude, weighting)


@st.cache_resource(show_spinner=False, max_entries=32, hash_funcs=BY_IDENTITY)
def get_player_data(path_key: str, _path: SliderPath, source: ex.GallerySource, query_labels, title: str,
                    step_notes: tuple[str, ...], enabled: bool) -> PlayerPath:
    """:func:`~anchordiv.explorer.p_player.player_data` of the path ``path_key`` names (shared, and
    frozen: a run builds its payload beside it)."""
    return player_data(_path, source, query_labels, key=path_key, title=title, step_notes=step_notes,
                       enabled=enabled)


@st.cache_data(show_spinner="Ranking the gallery by cosine…", max_entries=64, hash_funcs=BY_IDENTITY)
def get_cosine_table(source: ex.GallerySource, query: np.ndarray, k: int, exclude: int | None,
                     query_labels) -> pd.DataFrame:
    return source.neighbour_table(*source.cosine_top_k(query, k, exclude), query_labels, "similarity")


@st.cache_resource(show_spinner=False, max_entries=16, hash_funcs=BY_IDENTITY)
def get_baseline(kind: str, source: ex.MemorySource, encoder,
                 sets: tuple[tuple[tuple[str, ...], TemplateChoice], ...] = ()):
    """A baseline index over every row of a source held in memory: ITI over the anchor sets
    ``sets`` (each ``(texts, templates)``, encoded as the geometry encodes them), or the source's
    own cosine index (built once per source)."""
    if kind == "cosine":
        return source.cosine_index
    parts = [encode_texts(encoder, texts, templates) for texts, templates in sets if texts]
    return ex.baseline_index(kind, source.gallery.embeddings, torch.cat(parts) if parts else None,
                             device=source.device)


@st.cache_data(show_spinner=False, max_entries=64, hash_funcs=BY_IDENTITY)
def get_p_sweep(geometry_key: str, _geometry: ex.ExplorerGeometry, query: np.ndarray, k: int,
                source: ex.GallerySource, query_labels, query_id: int | None, weighting: str) -> pd.DataFrame:
    """The p sweep does not depend on where p is, so moving p reuses it (``geometry_key`` names ``_geometry``)."""
    return ex.p_sweep(_geometry, torch.as_tensor(query), k, source, query_labels, exclude=query_id,
                      weighting=weighting)


@st.cache_resource(show_spinner="Placing the points outside the sample: the sample's nearest neighbours under "
                                "this geometry, then UMAP's transform…", max_entries=8)
def get_map_placer(key: str, sampled: int, _source: ex.GallerySource, _ids: np.ndarray, _xy: np.ndarray, method: str,
                   _geometry: ex.ExplorerGeometry, _p: float, _weighting: str) -> ex.MapPlacer:
    """What places points outside the sample of ``sampled`` points on the map ``key`` names (its
    geometry, ``p`` and weighting; laid out by ``method``) by UMAP's ``transform``: built once,
    then kept while the map is."""
    return ex.map_placer(_source, _ids, _xy, method, _geometry, _p, _weighting)


# -- queries ----------------------------------------------------------------------------------------
@st.cache_data(show_spinner="Embedding the uploaded image…", max_entries=32, hash_funcs=BY_IDENTITY)
def embed_upload(encoder, data: bytes, name: str) -> np.ndarray:
    image = ex.query_image_from_upload(data, name)
    return encoder.encode_images([image])[0].numpy()


@st.cache_data(show_spinner=False, max_entries=32, hash_funcs=BY_IDENTITY)
def embed_text_query(encoder, text: str) -> np.ndarray:
    return encoder.encode_texts([text])[0].numpy()


# -- finding anchors (the Explore page's "Find anchors" and the pull/push terms of "why this neighbour?") --
@st.cache_resource(show_spinner="Reading the gallery rows the vocabulary is contrasted with…", max_entries=4,
                   hash_funcs=BY_IDENTITY)
def vocabulary_gallery(source: ex.GallerySource) -> tuple[np.ndarray, torch.Tensor]:
    """The sorted gallery ids (all, or a seeded sample of a large store:
    :func:`~anchordiv.explorer.vocabulary.gallery_sample`) and their embeddings ``(n, d)``, read once."""
    from anchordiv.explorer.vocabulary import gallery_sample

    ids = gallery_sample(len(source))
    return ids, source.rows(ids)


@st.cache_data(show_spinner="Ranking the vocabulary for the query…", max_entries=32, hash_funcs=BY_IDENTITY)
def suggested_terms(encoder, terms: tuple[str, ...], query: np.ndarray, k: int) -> pd.DataFrame:
    """:func:`~anchordiv.suggest_anchors`: ``term`` and ``probability``, most probable first."""
    from anchordiv import suggest_anchors

    top, probabilities = suggest_anchors(encoder, query, terms, k)
    return pd.DataFrame({"term": top, "probability": probabilities})


@st.cache_data(show_spinner="Finding the terms that set the neighbourhood apart…", max_entries=32,
               hash_funcs=BY_IDENTITY)
def separating_terms(encoder, terms: tuple[str, ...], source: ex.GallerySource, neighbour_ids: tuple[int, ...],
                     k: int) -> pd.DataFrame:
    """:func:`~anchordiv.separating_terms` of the rows ``neighbour_ids`` against :func:`vocabulary_gallery`:
    ``term`` and ``score``, highest first."""
    from anchordiv import separating_terms as separating

    top, scores = separating(encoder, source.rows(np.asarray(neighbour_ids)), None, terms, k,
                             gallery_tilt=vocabulary_gallery_tilt(encoder, terms, source))
    return pd.DataFrame({"term": top, "score": scores})


@st.cache_resource(show_spinner="Weighing the vocabulary over the gallery (once per vocabulary)…", max_entries=8,
                   hash_funcs=BY_IDENTITY)
def vocabulary_gallery_tilt(encoder, terms: tuple[str, ...], source: ex.GallerySource) -> np.ndarray:
    """:func:`~anchordiv.suggest.gallery_mean_tilt` of :func:`vocabulary_gallery`'s rows: the
    gallery's side of every query's separating terms, computed once (never changed by a caller)."""
    from anchordiv.suggest import gallery_mean_tilt

    return gallery_mean_tilt(encoder, vocabulary_gallery(source)[1], terms)


@st.cache_data(show_spinner="Weighing the vocabulary for this pair (the first time, encoding its terms too)…",
               max_entries=64, hash_funcs=BY_IDENTITY)
def pair_terms(encoder, terms: tuple[str, ...], query: np.ndarray, neighbour: np.ndarray, scale: float, k: int):
    """:func:`~anchordiv.pair_terms` of the query and a neighbour over ``terms`` at ``scale``."""
    from anchordiv import pair_terms as pair

    return pair(encoder, query, neighbour, terms, k, scale=scale)
