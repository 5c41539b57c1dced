"""Plain helpers behind the Streamlit explorer (``anchordiv.app``, started by ``app/streamlit_app.py``).

The app is a thin front end: every computation it shows is a call into this package (or
:mod:`anchordiv.explain`, :mod:`anchordiv.projection`, :mod:`anchordiv.gallery`) with plain
arguments. Nothing here imports Streamlit. The modules (the names below are re-exported here,
except those of :mod:`.thumbnails`, :mod:`.setting`, :mod:`.settings` and the modules of the last item, which are
imported as modules):

* :mod:`.source`: :class:`GallerySource`, what the Explore page shows a gallery through, with its
  :class:`Capabilities`; :class:`MemorySource` (a :class:`~anchordiv.gallery.Gallery` in memory)
  and :class:`StoreSource` (:mod:`.store_source`, a gallery store on disk) implement it;
* :mod:`.anchors`: anchor text handling, :func:`parse_anchor_text` (strip, dedupe, cap, weights),
  :func:`weighted_anchor_text`, :func:`anchor_file_text` and :func:`anchor_presets`;
* :mod:`.query`: query images, :func:`query_image_from_upload` and :func:`default_query_id`;
* :mod:`.geometry`: :class:`GeometrySpec` names an anchor model of the registry (and fits it,
  :meth:`GeometrySpec.fit`); :class:`ExplorerGeometry` fits it to the two anchor sets A and B,
  indexes a gallery once (in memory, or a store: :meth:`ExplorerGeometry.over_store`) and serves
  every position of the ``p`` slider at once through a query's certified slider
  (:meth:`ExplorerGeometry.p_path`) without changing anything shared;
* :mod:`.neighbours`: results, :func:`search_one`, :func:`neighbour_table`, :func:`agreement`,
  :func:`grid_tiles` and :func:`combined_table` (also the CSV download); over a source,
  :func:`neighbour_grid_png` and :func:`p_sweep` (:mod:`.source`);
* :mod:`.maps`: UMAP maps of a sample, :func:`geometry_projection`, :func:`projection_key`,
  :func:`point_roles` and :func:`with_query_and_neighbours`, placing points outside the sample with
  :func:`map_placer`;
* :mod:`.store_source` and :mod:`.thumbnails`: :class:`NameIndex`, :func:`cosine_top_k`,
  :func:`store_stamp` and the images of a store read for the shown items only;
* :mod:`.settings`: every setting of the pages, declared once as a row (:mod:`.setting`: its
  widget's key, label, help, bounds and options, its URL parameter, its default, when it is
  kept), from which the app draws the widgets and reads each part of a page as one typed value,
  and :mod:`.links` derives the links;
* :mod:`.paths`: :class:`DataRoots`, the folders a shared server may open, decided at launch;
* :mod:`.shared`: :class:`SharedBuilds`, one slow build per key for every visitor, with progress;
  :class:`BackgroundJobs`, jobs (a model's download) that outlive the visit that started them;
* :mod:`.links` (a page's state as URL parameters and back), :mod:`.limits` (what one request may
  ask for), :mod:`.literal` (outside text drawn literally, never as markup), :mod:`.widget_values`
  (what a widget may hold, checked where the app reads it back) and :mod:`.report` (the shipped
  reproduction report, for the Report page).
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
    anchor_file_text,
    anchor_presets,
    parse_anchor_text,
    weighted_anchor_text,
)
from .geometry import WEIGHTING_HELP, ExplorerGeometry, GeometrySpec, baseline_index, calibration_frame
from .maps import (MapPlacer, geometry_projection, map_placer, point_roles, project_rows, projection_key,
                   with_query_and_neighbours)
from .neighbours import (
    agreement,
    agreement_text,
    combined_table,
    grid_tiles,
    neighbour_table,
    search_one,
)
from .paths import DataRoots
from .query import default_query_id, query_image_from_upload
from .shared import BackgroundJobs, SharedBuilds
from .source import Capabilities, GallerySource, MemorySource, neighbour_grid_png, p_sweep
from .store_source import NameIndex, StoreSource, cosine_top_k, store_stamp

__all__ = [
    "ANIMALS", "BACKGROUNDS", "CHEXPERT_PATHOLOGIES", "CLOTHING", "DOG_BREEDS", "FOOD", "GENERIC_STYLES",
    "MAX_ANCHORS", "VEHICLES", "WEIGHTING_HELP", "AnchorText", "Capabilities", "DataRoots", "ExplorerGeometry",
    "GallerySource", "GeometrySpec", "MapPlacer", "MemorySource", "NameIndex", "BackgroundJobs", "SharedBuilds",
    "StoreSource",
    "agreement", "agreement_text", "anchor_file_text", "anchor_presets", "baseline_index", "calibration_frame",
    "combined_table", "cosine_top_k", "default_query_id", "geometry_projection", "grid_tiles", "map_placer",
    "neighbour_grid_png", "neighbour_table", "p_sweep", "parse_anchor_text",
    "point_roles", "project_rows", "projection_key", "query_image_from_upload", "search_one", "store_stamp",
    "weighted_anchor_text", "with_query_and_neighbours",
]
