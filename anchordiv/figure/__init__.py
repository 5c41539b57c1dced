"""The comparison figure (the paper's Figs. 1 and 8, made to order): rows are queries, columns are
geometries, each cell the query's top-``k`` under that geometry, with the neighbours that share the
query's object or style marked.

Three steps, each usable on its own:

* **Specs as text**, so a figure can be written on a command line or put in a URL:
  :func:`parse_query_row` / :class:`QueryRow` (``#12``, ``cat``, ``text:a dog in watercolor``,
  ``random:7``, ``image:PATH``, ``upload:NAME``; module :mod:`.rows`) and
  :func:`parse_geometry_column` / :class:`GeometryColumn` (``cosine``, ``iti``, ``A``, ``B``,
  ``mix p=0.3 model=gaussian s=20 weighting=literal``, and any of them under another encoder:
  ``cosine encoder=open_clip:ViT-B-32 pretrained=laion2b_s34b_b79k``; module :mod:`.columns`).
  ``str()`` of either parses back to an equal object.
* **The neighbours** (:mod:`.comparison`): :func:`compare` resolves the rows, fits each distinct
  (encoder, anchor model, scale) once through :class:`~anchordiv.explorer.geometry.ExplorerGeometry` and
  ranks the gallery for every (row, column): a :class:`CompareResult` of
  :func:`~anchordiv.explorer.neighbours.neighbour_table` tables.
* **The figure** (:mod:`.render`, sizes in :mod:`.layout`): :func:`render_figure` draws it with
  matplotlib as PNG, or as vector PDF or SVG (text kept as text, thumbnails embedded as images)
  with the settings written under it.

Every figure is bounded by one :class:`FigureLimits` (:data:`DEFAULT_LIMITS` unless the caller
raises it; module :mod:`.limits`): query rows, geometry columns, neighbours per cell, fitted
geometries and the encoders columns name are checked by :func:`check_figure_request` before
anything is computed or loaded, a PNG's dpi and pixels before anything is drawn. The drawing time grows with the thumbnails (rows x columns x k), so the
default limits are set by the time the heaviest figure takes to draw.

Every text is drawn as it is written: mathtext and TeX are off (a ``$`` in a query or a label is a
dollar sign), control characters become spaces, and each caption is wrapped to the width it has,
measured in the font every format draws (:mod:`.text`); one that is still too long is shortened
with "…", and an SVG keeps its full text as the <title> (tooltip) of its group.

Nothing here reads or writes files: image rows get their bytes from the caller (the command line
reads ``image:PATH``, the app passes uploads), and the figure comes back as bytes.
"""
from .columns import BASELINES, GeometryColumn, fitted_geometries, named_encoders, parse_geometry_column
from .comparison import (BaselineFactory, ColumnModel, CompareResult, CompareSettings, GeometryFactory, ModelFactory,
                         compare)
from .layout import FigureLayout
from .limits import DEFAULT_LIMITS, PNG_SIDE, FigureLimits, check_figure_request
from .render import (FORMATS, FRAME_COLOUR, OBJECT_COLOUR, STYLE_COLOUR, THUMB_PIXELS, draw_figure, figure_size,
                     render_figure)
from .rows import QUERY_KINDS, ImageEmbedder, Query, QueryRow, TextEmbedder, parse_query_row, resolve_queries
from .text import Fitted, fit_lines

__all__ = [
    "BASELINES", "DEFAULT_LIMITS", "FORMATS", "FRAME_COLOUR", "OBJECT_COLOUR", "PNG_SIDE", "QUERY_KINDS",
    "STYLE_COLOUR", "THUMB_PIXELS", "BaselineFactory", "ColumnModel", "CompareResult", "CompareSettings",
    "FigureLayout", "FigureLimits", "Fitted", "GeometryColumn", "GeometryFactory", "ImageEmbedder", "ModelFactory",
    "Query", "QueryRow", "TextEmbedder",
    "check_figure_request", "compare", "draw_figure", "figure_size", "fit_lines", "fitted_geometries",
    "named_encoders", "parse_geometry_column", "parse_query_row", "render_figure", "resolve_queries",
]
