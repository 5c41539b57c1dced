"""The largest figure that is made, :class:`~anchordiv.explorer.limits.FigureLimits` (kept with the
explorer's other bounds, which its Compare page reads), checked before anything is computed
(:func:`check_figure_request`) and a PNG's dpi and pixels before anything is drawn (:func:`check_png`)."""
from __future__ import annotations

import math

from .._validation import check_positive_int
from ..explorer.limits import DEFAULT_LIMITS, FigureLimits
from .layout import FigureLayout, least_size

PNG_SIDE = 65_535  # matplotlib's Agg draws at most this many pixels on a side

# The logit scales s a geometry is ranked at: a column's s= here, the command line's --scale
# (anchordiv.cli.options.SCALE). Below 0.1 the float32 search ranks by rounding error: every kind's
# divergences shrink as s^2 (to about 1e-6 at s = 0.001, float32's resolution of kappa near log N),
# and on the built-in world the top-10 computed in float32 keep 98-100% of the float64 top-10 at
# s = 0.1 but 90-96% at 0.03, about half at 0.01 and almost none (3-6%) at 0.001 or below.
# CLIP learns 100 and the explorer's slider stops there; 1000 leaves room, and every kind still fits
# and calibrates at it in float32.
SCALE_LOW, SCALE_HIGH = 0.1, 1000.0


def _raise_the_limit(name: str) -> str:
    return f"raise the limit (--max-{name} on the command line)"


def check_figure_request(n_rows: int, n_columns: int, k: int, limits: FigureLimits = DEFAULT_LIMITS, *,
                         dpi: int | None = None, n_geometries: int = 1, n_encoders: int = 0) -> int:
    """Refuse a figure larger than ``limits`` before anything is computed; returns ``k`` checked.

    Parameters
    ----------
    n_rows, n_columns : int
        The figure's query rows and geometry columns.
    k : int
        Its neighbours per cell.
    n_geometries : int
        The anchor geometries it fits (:func:`fitted_geometries`).
    n_encoders : int
        The encoders its columns name (:func:`named_encoders`), each loaded and embedding the gallery.
    limits : FigureLimits
        The bounds; :data:`DEFAULT_LIMITS` unless raised.
    dpi : int, optional
        A PNG's resolution: also checked against ``limits.dpi``, and the figure's pixels (at least
        its width by the height of its rows) against ``limits.pixels``. :func:`render_figure`
        checks the exact pixels again before drawing.

    Returns
    -------
    int
        ``k``, checked to be a positive int.

    Raises
    ------
    ValueError
        Naming the limit, this figure's count and the fix, e.g. "a figure has at most 12 query
        rows (this one has 300); remove rows, or raise the limit (--max-rows on the command line)".
    """
    k = check_positive_int(k, "top-k")
    if n_rows > limits.rows:
        raise ValueError(f"a figure has at most {limits.rows:,} query rows (this one has {n_rows:,}); remove rows, "
                         f"or {_raise_the_limit('rows')}")
    if n_columns > limits.columns:
        raise ValueError(f"a figure has at most {limits.columns:,} geometry columns (this one has {n_columns:,}); "
                         f"remove columns, or {_raise_the_limit('columns')}")
    if k > limits.k:
        raise ValueError(f"a figure shows at most {limits.k:,} neighbours per cell (this one asks for top-{k:,}); "
                         f"lower k, or {_raise_the_limit('k')}")
    if n_rows * n_columns * k > limits.neighbours:
        raise ValueError(f"a figure shows at most {limits.neighbours:,} neighbours in all (this one asks for "
                         f"{n_rows} rows x {n_columns} columns x top-{k} = {n_rows * n_columns * k:,}); lower k, or "
                         f"remove rows or columns, or {_raise_the_limit('neighbours')}")
    if n_geometries > limits.geometries:
        raise ValueError(f"a figure fits at most {limits.geometries} anchor geometries (this one asks for "
                         f"{n_geometries} different models or scales); give fewer columns their own model= or s=, "
                         f"or {_raise_the_limit('geometries')}")
    if n_encoders > limits.encoders:
        encoders = f"{limits.encoders} encoder{'s' if limits.encoders != 1 else ''}"
        raise ValueError(f"a figure's columns name at most {encoders} with encoder=SPEC (this one names "
                         f"{n_encoders}, each loaded and embedding the whole gallery); name fewer encoders, or "
                         f"{_raise_the_limit('encoders')}")
    if dpi is not None:
        check_png(least_size(n_rows, n_columns, k, FigureLayout()), dpi, limits)
    return k


def check_png(size: tuple[float, float], dpi: int, limits: FigureLimits) -> None:
    """Refuse a PNG of ``size`` inches at ``dpi`` past the dpi or pixel limit, or past :data:`PNG_SIDE`;
    the fix names the highest dpi that fits."""
    dpi = check_positive_int(dpi, "dpi")
    if dpi > limits.dpi:
        raise ValueError(f"a PNG figure is drawn at most at {limits.dpi:,} dpi (this one asks for {dpi:,} dpi); "
                         f"lower the dpi, or {_raise_the_limit('dpi')}")
    if _png_fits(size, dpi, limits):
        return
    fits = min(dpi, int(math.sqrt(limits.pixels / (size[0] * size[1]))) + 1, int(PNG_SIDE / max(size)) + 1)
    while fits > 0 and not _png_fits(size, fits, limits):  # a step or two: each side is rounded to whole pixels
        fits -= 1
    lower = f"lower the dpi to {fits:,} or less" if fits else "make it smaller (fewer rows, columns or neighbours)"
    width, height = _png_pixels(size, dpi)
    if max(width, height) > PNG_SIDE:
        raise ValueError(f"at {dpi:,} dpi this figure is {width:,} x {height:,} pixels, and a PNG has at most "
                         f"{PNG_SIDE:,} on a side; {lower}, or draw it as PDF or SVG")
    raise ValueError(f"at {dpi:,} dpi this figure is {width:,} x {height:,} = {width * height:,} pixels, more than "
                     f"the limit of {limits.pixels:,}; {lower}, or {_raise_the_limit('pixels')}")


def _png_fits(size: tuple[float, float], dpi: int, limits: FigureLimits) -> bool:
    width, height = _png_pixels(size, dpi)
    return max(width, height) <= PNG_SIDE and width * height <= limits.pixels


def _png_pixels(size: tuple[float, float], dpi: int) -> tuple[int, int]:
    """A PNG's width and height in pixels, as matplotlib rounds them."""
    return round(size[0] * dpi), round(size[1] * dpi)

