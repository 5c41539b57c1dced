"""What one request to the explorer may ask for. A demo server is shared by link with strangers,
so every page bounds what a link or an input can make it compute; past a limit the page says the
limit and computes nothing. The pages and :mod:`.links` read these; the Compare page's figure
takes :data:`anchordiv.figure.DEFAULT_LIMITS` (query rows, geometry columns, top-k per cell), the
Learn page's toy world :data:`anchordiv.lesson.MAX_TOY_ANCHORS` angles per set.
"""
from __future__ import annotations

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
