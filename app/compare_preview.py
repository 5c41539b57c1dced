"""The Compare page's figure on the page: drawn once per content as the SVG download draws it, and
shown readable (its smallest text at :data:`READABLE_TEXT_PX`, each geometry column its own
picture, side by side where the page is wide enough and one under another where not) or fitted to
the page's width, as the visitor chooses."""
from __future__ import annotations

import base64
import hashlib
import re

import numpy as np
import streamlit as st

from anchordiv import figure as fg
from anchordiv.app.setting_widgets import setting_widget
from anchordiv.explorer.settings import FIT

# The figure is drawn for print (its neighbours' captions are a few points high); the page shows it
# large enough that that text is this many CSS pixels high, a column at a time (four columns at that
# size are twice as wide as a 1500 px window's page), unless the visitor asks for the whole figure
# at the column's width.
READABLE_TEXT_PX = 10.0


def figure_key(result: fg.CompareResult) -> str:
    """Names ``result``'s content (settings, columns, query vectors and neighbours), for the preview's cache."""
    digest = hashlib.sha256(repr((result.settings, [str(c) for c in result.columns], result.gallery.key)).encode())
    for query in result.queries:
        digest.update(query.caption.encode() + np.ascontiguousarray(query.vector).tobytes())
    digest.update(result.frame().to_csv(index=False).encode())
    return digest.hexdigest()


@st.cache_data(show_spinner="Drawing the figure…", max_entries=64)
def preview_svg(key: str, column: int | None, _result: fg.CompareResult) -> str:
    """The figure as the SVG download draws it, or its ``column`` alone (the legend and settings
    under the last column only): its text stays sharp at whatever width the page shows it (a PNG
    would be scaled to the page's width and blur), and SVG is the quickest format to draw.
    ``_result`` is not hashed: ``key`` names it (:func:`figure_key`)."""
    if column is None:
        return fg.render_figure(_result, "svg").decode("utf-8")
    last = column == len(_result.columns) - 1
    return fg.render_figure(_result.column(column), "svg", footer=last).decode("utf-8")


def readable_width(svg: str) -> float:
    """The CSS width in pixels at which ``svg``'s smallest text is :data:`READABLE_TEXT_PX` high."""
    points = float(re.search(r'<svg[^>]*\bwidth="([0-9.]+)pt"', svg).group(1))
    zoom = READABLE_TEXT_PX / (fg.FigureLayout().small_font * 4 / 3)  # 1 pt is 4/3 CSS pixels
    return points * 4 / 3 * zoom


def image_html(svg: str, style: str) -> str:
    """``svg`` as an ``<img>`` (its SVG cannot run script there) styled ``style``."""
    source = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return (f'<img alt="The figure as it will download" src="data:image/svg+xml;base64,{source}" '
            f'style="{style};height:auto;display:block">')


def preview_html(svgs: list[str], fit: bool) -> str:
    """The figure as ``svgs``: the whole figure at the column's width when ``fit``; else each of its
    columns at the size where its smallest text is :data:`READABLE_TEXT_PX` high, wrapping onto the
    next line where the page is too narrow for the next (each still scrolls sideways on a page
    narrower than one)."""
    if fit:
        return f'<div data-anchordiv-figure style="overflow-x:auto">{image_html(svgs[0], "width:100%")}</div>'
    pictures = "".join(f'<div style="overflow-x:auto;max-width:100%">'
                       f'{image_html(svg, f"width:{readable_width(svg):.0f}px;max-width:none")}</div>' for svg in svgs)
    return f'<div data-anchordiv-figure style="display:flex;flex-wrap:wrap;gap:12px">{pictures}</div>'


def show_preview(result: fg.CompareResult) -> None:
    """The figure on the page, readable by default (:func:`preview_html`)."""
    key, fit = figure_key(result), setting_widget(st, "compare_preview_size") == FIT
    columns = [None] if fit else range(len(result.columns))
    st.html(preview_html([preview_svg(key, column, result) for column in columns], fit))
