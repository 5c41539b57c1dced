"""What one request to the explorer may ask for. A demo server is shared by link with strangers,
so every page bounds what a link or an input can make it compute; past a limit the page says the
limit and computes nothing. The pages and :mod:`.links` read these; the Compare page's figure
takes :data:`DEFAULT_LIMITS` (query rows, geometry columns, top-k per cell; :mod:`anchordiv.figure`
checks a figure against its :class:`FigureLimits`), the Learn page's toy world
:data:`anchordiv.lesson.MAX_TOY_ANCHORS` angles per set.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from .._validation import check_positive_int
from .anchors import MAX_ANCHORS

# The query string of a link. A long anchor list travels as a hash of the text kept on the server
# (links.LinkedTexts), so a view's link is short; a full Compare figure (12 rows and 8 columns of
# long specs) still fits.
LINK_CHARS = 16_000
# One short text: a text query, a Compare row or column, a name to search for.
TEXT_CHARS = 500
# An anchor set's text area: MAX_ANCHORS anchors of a few words each.
ANCHOR_TEXT_CHARS = 40 * MAX_ANCHORS
# A set of the Learn page's toy world, typed as angles.
TOY_TEXT_CHARS = 2_000
# Neighbours per list on the Explore page.
TOP_K = 50


def checked_length(text: str, most: int = TEXT_CHARS) -> str:
    """``text``, or a ``ValueError`` saying its length and ``most`` when it is longer: the one rule
    for a link's values and a page's typed specs alike."""
    if len(text) > most:
        raise ValueError(f"a text of {len(text):,} characters, but this page takes at most {most:,}")
    return text


@dataclass(frozen=True)
class FigureLimits:
    """The largest figure :func:`~anchordiv.figure.compare` and :func:`~anchordiv.figure.render_figure` make.

    Parameters
    ----------
    rows : int
        The most query rows.
    columns : int
        The most geometry columns.
    k : int
        The most neighbours per cell (the Compare page offers 1 to 20).
    neighbours : int
        The most neighbours in all, rows x columns x k: what drawing costs.
    geometries : int
        The most anchor geometries fitted for one figure: the distinct (encoder, anchor model,
        scale) of its A, B and mix columns (:func:`~anchordiv.figure.fitted_geometries`), the
        figure's own included. Each is a fit over the gallery (3-10 s of CPU on the built-in
        world); once fitted, the app keeps it for every later figure.
    encoders : int
        The most encoders a figure's columns name with ``encoder=SPEC`` (distinct spec and
        pretrained, :func:`~anchordiv.figure.named_encoders`); the figure's own encoder is not
        counted unless a column names it. Each is a model loaded and the whole gallery embedded
        by it (minutes on a CPU for a CLIP model over a large folder), so two beside the figure's
        own is plenty for a side-by-side.
    dpi : int
        The highest resolution of a PNG (vector PDF and SVG do not depend on it).
    pixels : int
        The most pixels of a PNG, width x height at its dpi.

    Drawing costs CPU per thumbnail (rows x columns x k of them; most of it for the captions), so the
    defaults (:data:`DEFAULT_LIMITS`) allow 500 in all, in any shape up to 12 rows and 8 columns (the
    Compare page offers seven common columns: cosine, ITI, A, B and three mixes), which keeps the
    heaviest figure within seconds on two cores (docs/benchmarks.md). Each field has a command-line
    option (``--max-rows`` ...) to raise it.
    """

    rows: int = 12
    columns: int = 8
    k: int = 20
    neighbours: int = 500
    geometries: int = 4
    encoders: int = 2
    dpi: int = 600
    pixels: int = 40_000_000

    def __post_init__(self) -> None:
        for field in fields(self):
            check_positive_int(getattr(self, field.name), f"FigureLimits.{field.name}")


DEFAULT_LIMITS = FigureLimits()
