"""The Compare page's figure on the page: drawn once per content as the SVG download draws it, and
shown readable (its smallest text at :data:`READABLE_TEXT_PX`, scrolling sideways) or fitted to
the page's width, as the visitor chooses."""
from __future__ import annotations

import base64
import hashlib
import re

import numpy as np
import streamlit as st

from anchordiv import figure as fg
from anchordiv.explorer.page_state import PREVIEW_SIZES

# The figure is drawn for print (its neighbours' captions are a few points high); the page shows it
# large enough that that text is this many CSS pixels high, scrolling sideways where it is wider
# than the column, unless the visitor asks for the whole figure at the column's width.
READABLE_TEXT_PX = 10.0


def figure_key(result: fg.CompareResult) -> str:
    """Names ``result``'s content (settings, columns, query vectors and neighbours), for the preview's cache."""
    digest = hashlib.sha256(repr((result.settings, [str(c) for c in result.columns], result.gallery.key)).encode())
    for query in result.queries:
        digest.update(query.caption.encode() + np.ascontiguousarray(query.vector).tobytes())
    digest.update(result.frame().to_csv(index=False).encode())
    return digest.hexdigest()


@st.cache_data(show_spinner="Drawing the figure…", max_entries=16)
def preview_svg(key: str, _result: fg.CompareResult) -> str:
    """The figure as the SVG download draws it: its text stays sharp at whatever width the page
    shows it (a PNG would be scaled to the page's width and blur), and SVG is the quickest format
    to draw. ``_result`` is not hashed: ``key`` names it (:func:`figure_key`)."""
    return fg.render_figure(_result, "svg").decode("utf-8")


def preview_html(svg: str, fit: bool) -> str:
    """The figure ``svg`` as an ``<img>`` (its SVG cannot run script there) in a box that scrolls
    sideways: at the column's width when ``fit``, else at the size where its smallest text is
    :data:`READABLE_TEXT_PX` high."""
    points = float(re.search(r'<svg[^>]*\bwidth="([0-9.]+)pt"', svg).group(1))
    zoom = READABLE_TEXT_PX / (fg.FigureLayout().small_font * 4 / 3)  # 1 pt is 4/3 CSS pixels
    width = "width:100%" if fit else f"width:{points * 4 / 3 * zoom:.0f}px;max-width:none"
    source = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return (f'<div data-anchordiv-figure style="overflow-x:auto"><img alt="The figure as it will download" '
            f'src="data:image/svg+xml;base64,{source}" style="{width};height:auto;display:block"></div>')


def show_preview(result: fg.CompareResult) -> None:
    """The figure on the page, readable by default (:func:`preview_html`)."""
    size = st.radio("Preview", PREVIEW_SIZES, horizontal=True, key="compare_preview_size",
                    help="The downloads are the same either way: this only sets how large the page shows the figure.")
    st.html(preview_html(preview_svg(figure_key(result), result), fit=size == PREVIEW_SIZES[1]))
