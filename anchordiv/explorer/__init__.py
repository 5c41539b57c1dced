"""Plain helpers behind the Streamlit explorer (``app/streamlit_app.py``).

The app is a thin front end: every computation it shows is a call into this package (or
:mod:`anchordiv.explain`, :mod:`anchordiv.projection`) with plain arguments. Nothing here imports
Streamlit. The modules, all re-exported here:

* :mod:`.anchors`: anchor text handling, :func:`parse_anchor_text` (strip, dedupe, cap) and
  :func:`anchor_presets`;
* :mod:`.gallery`: :class:`Gallery` from the built-in emoji world (:func:`world_gallery`,
  embeddings cached on disk) or from a folder of images (:func:`folder_gallery`), query images;
* :mod:`.geometry`: :class:`GeometrySpec` names an anchor model; :class:`ExplorerGeometry` fits it
  to the two anchor sets A and B, indexes the gallery once and hands out *per-request* copies at
  any weight ``p`` (:meth:`ExplorerGeometry.index_at`), so a shared, cached geometry is never mutated;
* :mod:`.neighbours`: results, :func:`search_one`, :func:`neighbour_table`, :func:`agreement`,
  :func:`p_sweep`;
* :mod:`.export`: :func:`grid_image`, :func:`grid_png`, :func:`png_bytes`;
* :mod:`.layout`: UMAP layouts, :func:`geometry_layout` and :func:`layout_key`;
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
from .export import grid_image, grid_png, png_bytes
from .gallery import (
    Gallery,
    ProgressCallback,
    default_query_id,
    folder_gallery,
    query_image_from_upload,
    world_gallery,
)
from .geometry import (
    MODEL_KINDS,
    SINGLE_ANCHOR_RIDGE,
    ExplorerGeometry,
    GeometrySpec,
    baseline_index,
    fit_anchor_model,
)
from .layout import geometry_layout, layout_key
from .neighbours import agreement, agreement_text, neighbour_table, p_sweep, search_one
from .speed import benchmark

__all__ = [
    "ANIMALS", "BACKGROUNDS", "CHEXPERT_PATHOLOGIES", "CLOTHING", "DOG_BREEDS", "FOOD", "GENERIC_STYLES",
    "MAX_ANCHORS", "MODEL_KINDS", "SINGLE_ANCHOR_RIDGE", "VEHICLES", "AnchorText", "ExplorerGeometry", "Gallery",
    "GeometrySpec", "ProgressCallback", "agreement", "agreement_text", "anchor_presets", "baseline_index",
    "benchmark", "default_query_id", "fit_anchor_model", "folder_gallery", "geometry_layout", "grid_image",
    "grid_png", "layout_key", "neighbour_table", "p_sweep", "parse_anchor_text", "png_bytes",
    "query_image_from_upload", "search_one", "world_gallery",
]
