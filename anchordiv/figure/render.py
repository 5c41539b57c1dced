"""Drawing a :class:`~anchordiv.figure.comparison.CompareResult` with matplotlib as PNG, or as vector
PDF or SVG (text kept as text, thumbnails embedded as images), the settings written under it."""
from __future__ import annotations

import functools
import io
from typing import TYPE_CHECKING, Callable
from xml.sax.saxutils import escape

import numpy as np
import pandas as pd

from ..explorer.neighbours import agreement_text
from .comparison import CompareResult
from .layout import FigureLayout, figure_inches, figure_width
from .limits import DEFAULT_LIMITS, FigureLimits, check_png
from .rows import Query
from .text import Fitted, fit_lines

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from PIL import Image


FORMATS = ("png", "pdf", "svg")
OBJECT_COLOUR, STYLE_COLOUR = "#1b9e77", "#d95f02"  # colour-blind-safe pair (ColorBrewer Dark2)
FRAME_COLOUR = "#bbbbbb"  # every image's thin outline, under the marks


THUMB_PIXELS = 128  # thumbnails are embedded at most this size, so a PDF of large photos stays small
FONT_FAMILY = "DejaVu Sans"  # matplotlib's own font: every format draws and measures the same glyphs
# A line is fitted to this share of its room: the PNG's hinted glyphs are up to a few percent wider
# than the font's outlines that PDF and SVG are measured by.
_FITTED_SHARE = 0.95


def figure_size(result: CompareResult, layout: FigureLayout = FigureLayout(),
                footer: bool = True) -> tuple[float, float]:
    """``(width, height)`` of :func:`render_figure`'s figure in inches (PNG pixels: times ``dpi``)."""
    return figure_inches(len(result.queries), len(result.columns), result.settings.k, _header_height(result, layout),
                         len(_settings_lines(result, layout)) if footer else 0, layout, footer)


@functools.lru_cache(maxsize=4096)
def _text_width(text: str, size: float, weight: str = "normal", style: str = "normal") -> float:
    """The drawn width of one line of ``text`` in inches, at ``size`` points in :data:`FONT_FAMILY`
    of that ``weight`` and ``style`` (the font's own metrics, as PDF and SVG lay it out; no figure
    needed)."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import text_to_path

    width, _, _ = text_to_path.get_text_width_height_descent(
        text, FontProperties(family=FONT_FAMILY, size=size, weight=weight, style=style), ismath=False)
    return width / 72


def _fitted(text: object, width: float, lines: int, size: float, weight: str = "normal",
            style: str = "normal") -> Fitted:
    """``text`` in at most ``lines`` lines, each at most ``width`` inches wide when drawn at ``size``
    points in that ``weight`` and ``style`` (:func:`~anchordiv.figure.text.fit_lines`)."""
    return fit_lines(text, lambda line: _text_width(line, size, weight, style) <= width * _FITTED_SHARE, lines)


def _settings_lines(result: CompareResult, layout: FigureLayout) -> list[str]:
    """The settings, wrapped to the figure's width, each setting in at most three lines (a
    gallery's folder name can be as long as a path)."""
    width = figure_width(len(result.columns), result.settings.k, layout) - 2 * layout.margin
    return [wrapped for line in result.settings.lines()
            for wrapped in _fitted(line, width, 3, layout.font - 0.5).text.split("\n")]


def _headers(result: CompareResult, layout: FigureLayout) -> list[Fitted]:
    """Each column's label, each of its lines wrapped to the cell's width in at most three lines."""
    width = layout.cell_width(result.settings.k)
    headers = []
    for column in result.columns:
        parts = [_fitted(line, width, 3, layout.font + 1, "bold") for line in column.label.split("\n")]
        headers.append(Fitted("\n".join(part.text for part in parts), " · ".join(part.full for part in parts),
                              any(part.shortened for part in parts)))
    return headers


def _header_height(result: CompareResult, layout: FigureLayout) -> float:
    """Room for the tallest header (``layout.header`` holds two lines)."""
    lines = max(header.text.count("\n") + 1 for header in _headers(result, layout))
    return layout.header * max(2, lines) / 2


def render_figure(result: CompareResult, format: str = "png", dpi: int = 200,
                  layout: FigureLayout = FigureLayout(), limits: FigureLimits = DEFAULT_LIMITS,
                  footer: bool = True) -> bytes:
    """The figure of ``result`` as ``format`` bytes: ``"png"`` (at ``dpi``), ``"pdf"`` or ``"svg"``
    (vector: text as text, each thumbnail an embedded image; no timestamps, so the same result
    gives the same bytes). Rows are the queries (image and caption at the left), columns the
    geometries (header: the column's label); a neighbour sharing the query's object has a green
    frame and "obj", one sharing its style an orange frame inside that and "sty"; under each cell
    its agreement counts, under the grid a legend and the settings (:meth:`CompareSettings.lines`).
    Every text is wrapped to its room, measured in the font every format draws; one still too long
    is shortened with "…", and an SVG keeps its full text as its group's <title> (the tooltip).

    Parameters
    ----------
    result : CompareResult
        What to draw: ``len(result.queries)`` rows x ``len(result.columns)`` columns of ``k`` thumbnails.
    format : {"png", "pdf", "svg"}
        The file format.
    dpi : int
        A PNG's resolution (PDF and SVG do not depend on it).
    layout : FigureLayout
        The sizes in inches.
    limits : FigureLimits
        A PNG's highest dpi and most pixels.
    footer : bool
        Whether the legend and the settings are drawn under the grid (a page showing a figure's
        columns one at a time, :meth:`CompareResult.column`, draws them under the last only).

    Returns
    -------
    bytes
        The file's content.

    Raises
    ------
    ValueError
        Before drawing, for an unknown format and a PNG past ``limits.dpi`` or ``limits.pixels``
        (the message names the highest dpi that fits).
    """
    if format not in FORMATS:
        raise ValueError(f"unknown figure format {format!r}; use one of {', '.join(FORMATS)}")
    if format == "png":
        check_png(figure_size(result, layout, footer), dpi, limits)
    import matplotlib

    with matplotlib.rc_context(_rc(layout)):
        page = _drawn(result, layout, footer)
        buffer = io.BytesIO()
        # zlib's fastest level: half the encoding time of a large PNG, for a sixth more bytes.
        options = {"png": {"metadata": {"Software": None}, "pil_kwargs": {"compress_level": 1}},
                   "pdf": {"metadata": {"CreationDate": None, "Producer": None}},
                   "svg": {"metadata": {"Date": None}}}[format]
        page.figure.savefig(buffer, format=format, dpi=dpi, facecolor="white", **options)
    return _with_titles(buffer.getvalue(), page.titles) if format == "svg" else buffer.getvalue()


def _with_titles(svg: bytes, titles: dict[str, str]) -> bytes:
    """``svg`` with each shortened text's full text as the <title> of its group (``titles``: by the
    group's id), which a browser shows as its tooltip and a reader or a search finds."""
    text = svg.decode("utf-8")
    for gid, full in titles.items():
        group = f'<g id="{gid}">'
        text = text.replace(group, f"{group}\n   <title>{escape(full)}</title>", 1)
    return text.encode("utf-8")


def _rc(layout: FigureLayout) -> dict[str, object]:
    """The matplotlib settings of every format: text stays text (TrueType in PDF, <text> in SVG)
    and is drawn as written: no mathtext, no TeX, for every Text made here (each keeps the setting
    it was made with, through savefig); each thumbnail stays its own image (matplotlib would merge
    the images of one axes); fixed SVG ids, so equal figures give equal bytes. One font everywhere:
    PNG and PDF draw (PDF embeds) :data:`FONT_FAMILY`, and an SVG names it first, then the generic
    sans-serif, so a viewer without it draws a sans-serif font, not its default serif one."""
    return {"pdf.fonttype": 42, "svg.fonttype": "none", "svg.hashsalt": "anchordiv", "image.composite_image": False,
            "font.size": layout.font, "font.family": [FONT_FAMILY, "sans-serif"], "font.sans-serif": [FONT_FAMILY],
            "text.parse_math": False, "text.usetex": False}


def draw_figure(result: CompareResult, layout: FigureLayout = FigureLayout()) -> Figure:
    """The matplotlib figure :func:`render_figure` saves (on an Agg canvas, so its texts can be
    measured with ``figure.canvas.get_renderer()``), drawn under its settings."""
    return _drawn(result, layout).figure


def _drawn(result: CompareResult, layout: FigureLayout, footer: bool = True) -> _Page:
    """The drawn page: its figure and the full texts of what it shortened."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with matplotlib.rc_context(_rc(layout)):
        figure = Figure(figsize=figure_size(result, layout, footer))
        FigureCanvasAgg(figure)
        page = _Page(figure)
        _draw(page, result, layout, footer)
        page.add_frames()
    return page


class _Page:
    """The whole figure as one axes whose data coordinates are inches from the top-left corner
    (one axes, not one per thumbnail: creating axes was most of the drawing time). ``titles``
    holds the full text of each shortened text, by the id of its group in an SVG."""

    def __init__(self, figure):
        self.figure = figure
        self.width, self.height = figure.get_size_inches()
        self.axes = figure.add_axes((0, 0, 1, 1))
        self.axes.set_axis_off()
        self.axes.set_xlim(0, self.width)
        self.axes.set_ylim(self.height, 0)
        self.axes.set_autoscale_on(False)
        self.frames: dict[tuple[str, float], list[tuple[float, float, float]]] = {}
        self.titles: dict[str, str] = {}

    def image(self, array: np.ndarray, left: float, top: float, side: float) -> None:
        self.axes.imshow(array, extent=(left, left + side, top + side, top), interpolation="none", aspect="auto")

    def frame(self, left: float, top: float, side: float, colour: str, width: float) -> None:
        """A square outline, drawn by :meth:`add_frames` (over every image, in the order of the first
        frame of each colour)."""
        self.frames.setdefault((colour, width), []).append((left, top, side))

    def add_frames(self) -> None:
        """The frames, one collection per colour and width (one patch per frame was a third of the
        drawing time of a large figure)."""
        from matplotlib.collections import PolyCollection

        for (colour, width), squares in self.frames.items():
            corners = [[(left, top), (left + side, top), (left + side, top + side), (left, top + side)]
                       for left, top, side in squares]
            self.axes.add_collection(PolyCollection(corners, facecolors="none", edgecolors=colour, linewidths=width),
                                     autolim=False)

    def text(self, left: float, top: float, text: str, **style) -> None:
        self.axes.text(left, top, text, **{"va": "top", **style})

    def fitted(self, left: float, top: float, fitted: Fitted, **style) -> None:
        """``fitted``'s lines; where they leave some of the text out, the full text goes to :attr:`titles`."""
        gid = None
        if fitted.shortened:
            gid = f"anchordiv-shortened-{len(self.titles)}"
            self.titles[gid] = fitted.full
        self.text(left, top, fitted.text, gid=gid, **style)


def _draw(page: _Page, result: CompareResult, layout: FigureLayout, footer: bool) -> None:
    k = result.settings.k
    # A neighbour often recurs across the columns of its row; each is loaded and shrunk once.
    thumbnail = functools.cache(lambda item: _thumbnail(result.gallery.image(item)))
    left0 = layout.margin + layout.query + layout.column_gap
    column_left = [left0 + c * (layout.cell_width(k) + layout.column_gap) for c in range(len(result.columns))]
    page.text(layout.margin, layout.margin, "Query", fontweight="bold", fontsize=layout.font + 1)
    for left, header in zip(column_left, _headers(result, layout)):
        page.fitted(left + layout.cell_width(k) / 2, layout.margin, header, ha="center", fontweight="bold",
                    fontsize=layout.font + 1)
    top = layout.margin + _header_height(result, layout)
    for query, tables in zip(result.queries, result.tables):
        _draw_query(page, query, layout.margin, top, layout)
        for left, table in zip(column_left, tables):
            _draw_cell(page, table, result.gallery.name_column, thumbnail, left, top, layout)
        top += layout.row_height()
    if not footer:
        return
    _draw_legend(page, top, layout)
    for line in _settings_lines(result, layout):
        top += layout.settings_line
        page.text(layout.margin, top, line, fontsize=layout.font - 0.5, color="#333333")


def _draw_query(page: _Page, query: Query, left: float, top: float, layout: FigureLayout) -> None:
    if query.image is not None:
        page.image(_thumbnail(query.image), left, top, layout.query)
    else:  # a text query: its words stand where an image would
        words = _fitted(query.row.value, layout.query - 2 * layout.gap, 6, layout.font, style="italic")
        page.fitted(left + layout.query / 2, top + layout.query / 2, words, ha="center", va="center", style="italic")
    page.frame(left, top, layout.query, FRAME_COLOUR, 0.5)
    page.fitted(left, top + layout.query + 0.03, _fitted(query.caption, layout.query, 2, layout.font - 1),
                fontsize=layout.font - 1)


def _draw_cell(page: _Page, table: pd.DataFrame, name_column: str, thumbnail: Callable[[int], np.ndarray],
               left: float, top: float, layout: FigureLayout) -> None:
    small = layout.small_font
    marks = top + layout.thumb + layout.caption - layout.mark_line  # under the caption's lines
    inset = 0.035  # the style frame sits inside the object frame, so both show when both are shared
    for position, row in enumerate(table.itertuples(index=False)):
        x = left + position * (layout.thumb + layout.gap)
        page.image(thumbnail(row.gallery_id), x, top, layout.thumb)
        page.frame(x, top, layout.thumb, FRAME_COLOUR, 0.5)
        if row.same_object is True:
            page.frame(x, top, layout.thumb, OBJECT_COLOUR, 1.8)
            page.text(x, marks, "obj", fontsize=small, color=OBJECT_COLOUR, fontweight="bold")
        if row.same_style is True:
            page.frame(x + inset, top + inset, layout.thumb - 2 * inset, STYLE_COLOUR, 1.8)
            page.text(x + layout.thumb / 3, marks, "sty", fontsize=small, color=STYLE_COLOUR,
                      fontweight="bold")
        caption = _fitted(f"{row.rank}. {getattr(row, name_column)}", layout.thumb, layout.caption_lines, small)
        page.fitted(x, top + layout.thumb + 0.025, caption, fontsize=small)
    page.text(left, top + layout.thumb + layout.caption, agreement_text(table), fontsize=small, color="#333333")


def _draw_legend(page: _Page, top: float, layout: FigureLayout) -> None:
    from matplotlib.patches import Patch

    handles = [Patch(fill=False, edgecolor=OBJECT_COLOUR, linewidth=1.8, label="obj: same object as the query"),
               Patch(fill=False, edgecolor=STYLE_COLOUR, linewidth=1.8, label="sty: same style as the query")]
    page.figure.legend(handles=handles, loc="upper left", ncols=2, frameon=False, fontsize=layout.font - 0.5,
                       bbox_to_anchor=(layout.margin / page.width, 1 - (top + 0.02) / page.height), borderaxespad=0,
                       borderpad=0, handlelength=1.2)


def _thumbnail(image: Image.Image) -> np.ndarray:
    """``image`` as an RGB array at most :data:`THUMB_PIXELS` on a side."""
    small = image.convert("RGB")
    small.thumbnail((THUMB_PIXELS, THUMB_PIXELS))
    return np.asarray(small)

