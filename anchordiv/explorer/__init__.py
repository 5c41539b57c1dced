"""Plain helpers behind the Streamlit explorer (``app/streamlit_app.py``).

The app is a thin front end: every computation it shows is a call into this package (or
:mod:`anchordiv.explain`, :mod:`anchordiv.projection`, :mod:`anchordiv.gallery`) with plain
arguments. Nothing here imports Streamlit. The modules, all re-exported here:

* :mod:`.anchors`: anchor text handling, :func:`parse_anchor_text` (strip, dedupe, cap) and
  :func:`anchor_presets`;
* :mod:`.query`: query images, :func:`query_image_from_upload` and :func:`default_query_id`;
* :mod:`.geometry`: :class:`GeometrySpec` names an anchor model of the registry;
  :class:`ExplorerGeometry` fits it to the two anchor sets A and B, indexes the gallery once and
  serves any weight ``p`` (:meth:`ExplorerGeometry.index_at`) without changing anything shared;
* :mod:`.neighbours`: results, :func:`search_one`, :func:`neighbour_table`, :func:`agreement`,
  :func:`grid_captions`, :func:`combined_table` (also the CSV download), :func:`neighbour_grid_png`, and
  :func:`p_sweep`;
* :mod:`.projection`: UMAP projections, :func:`geometry_projection`, :func:`projection_key` and
  :func:`projection_frame`;
* :mod:`.store_view`: the explorer on a gallery store, :class:`StoreGallery` (with its
  :class:`NameIndex`), :class:`StoreGeometry` (sharded index and certified slider),
  :func:`cosine_top_k`, :func:`store_thumbnails` and :func:`store_projection`;
* :mod:`.paths`: :class:`DataRoots`, the folders a shared server may open, decided at launch;
* :mod:`.shared`: :class:`SharedBuilds`, one slow build per key for every visitor, with progress;
* :mod:`.speed`: :func:`benchmark`, behind ``python -m anchordiv explorer-bench``.
"""
from .anchors import (
    ANIMALS,
    BACKGROUNDS,
    CHEXPERT_PATHOLOGIES,
    CLOTHING,
    DOG_BREEDS,
    FOOD,
    GENERIC_STYLES,
    MAX_ANCHORS,
    VEHICLES,
    AnchorText,
    anchor_presets,
    parse_anchor_text,
)
from .geometry import WEIGHTINGS, ExplorerGeometry, GeometrySpec, baseline_index, calibration_frame, fit_anchor_model
from .neighbours import (
    agreement,
    agreement_text,
    combined_table,
    grid_captions,
    neighbour_grid_png,
    neighbour_table,
    p_sweep,
    search_one,
)
from .paths import DataRoots
from .projection import geometry_projection, outside_sample, project_rows, projection_frame, projection_key
from .query import default_query_id, query_image_from_upload
from .shared import SharedBuilds
from .speed import benchmark
from .store_view import (
    NameIndex,
    StoreGallery,
    StoreGeometry,
    cosine_top_k,
    neighbours_at,
    store_neighbour_table,
    store_presets,
    store_projection,
    store_projection_frame,
    store_stamp,
    store_thumbnails,
)

__all__ = [
    "ANIMALS", "BACKGROUNDS", "CHEXPERT_PATHOLOGIES", "CLOTHING", "DOG_BREEDS", "FOOD", "GENERIC_STYLES",
    "MAX_ANCHORS", "VEHICLES", "WEIGHTINGS", "AnchorText", "DataRoots", "ExplorerGeometry", "GeometrySpec", "NameIndex",
    "SharedBuilds", "StoreGallery", "StoreGeometry",
    "agreement", "agreement_text", "anchor_presets", "baseline_index", "benchmark", "calibration_frame",
    "combined_table", "cosine_top_k",
    "default_query_id", "fit_anchor_model", "geometry_projection", "grid_captions", "neighbour_grid_png",
    "neighbour_table", "neighbours_at", "outside_sample", "p_sweep", "parse_anchor_text", "project_rows",
    "projection_frame", "projection_key", "query_image_from_upload", "search_one", "store_neighbour_table",
    "store_presets", "store_projection", "store_projection_frame", "store_stamp", "store_thumbnails",
]
