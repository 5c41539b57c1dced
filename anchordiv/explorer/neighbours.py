"""Results: the top-``k`` of one query (:func:`search_one`), its table of neighbours with label
agreement (:func:`neighbour_table`, :func:`agreement`), and what the page shows and a user downloads
(:func:`grid_tiles`, :func:`combined_table`). Over a gallery source: the neighbour grid as a
PNG and agreement as ``p`` moves (:mod:`.source`)."""
from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pandas as pd
import torch

from .._validation import as_matrix, check_positive_int
from ..grids import readable_value, shown_divergences
from ..search import Index

if TYPE_CHECKING:
    from ..gallery import Gallery

# A grid caption's item name: one line under the page's 96 px images, cut after a whole word with
# "…" (the whole name is the tile's tooltip and in the neighbour table), so that a caption is two
# lines at most. The player draws it in 13 px Source Sans, about 6.5 px a letter (spaces less).
GRID_CAPTION_LINES = 1
GRID_CAPTION_LINE_CHARS = 15


def search_one(index: Index, query: torch.Tensor, k: int, exclude: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` of one query ``(d,)`` or ``(1, d)``: ``(values (k,), ids (k,))`` as numpy, best first.
    ``exclude`` is a gallery id to skip (the query itself when it comes from the gallery)."""
    vector = as_matrix(torch.as_tensor(query).reshape(1, -1) if isinstance(query, torch.Tensor)
                       else np.asarray(query).reshape(1, -1), "query").to(torch.float32)
    k = check_positive_int(k, "top-k")
    available = len(index) - (exclude is not None)
    if available < 1:
        raise ValueError("the gallery holds no image but the query's own, so there is nothing to rank it against; "
                         "use a gallery of more images")
    if k > available:
        raise ValueError(f"top-k={k} is larger than the {available} gallery images available; lower k")
    excluded = None if exclude is None else torch.tensor([int(exclude)])
    values, ids = index.search(vector, k, exclude=excluded)
    return values[0].cpu().numpy(), ids[0].cpu().numpy()


def neighbour_table(values: np.ndarray, ids: np.ndarray, gallery: Gallery, query_labels: pd.Series | None,
                    value_name: str) -> pd.DataFrame:
    """One row per neighbour: rank, gallery id, labels, ``value_name`` (divergence or similarity),
    and ``same_object`` / ``same_style`` against ``query_labels`` (``None`` when unknown)."""
    ids = np.asarray(ids).astype(int)
    arrays = gallery.label_arrays
    table = {"rank": np.arange(1, len(ids) + 1), "gallery_id": ids}
    for column in dict.fromkeys([gallery.name_column, gallery.object_column] +
                                ([gallery.style_column] if gallery.style_column else [])):
        table[column] = arrays[column][ids]
    table[value_name] = np.asarray(values, dtype=np.float64)
    for flag, column in (("same_object", gallery.object_column), ("same_style", gallery.style_column)):
        if query_labels is not None and column is not None:
            table[flag] = arrays[column][ids] == query_labels[column]
        else:
            table[flag] = pd.array([pd.NA] * len(ids), dtype="boolean")
    return pd.DataFrame(table)


def agreement(table: pd.DataFrame) -> dict[str, tuple[int, int] | None]:
    """``{"object": (hits, k), "style": (hits, k)}`` from a :func:`neighbour_table`; ``None`` where unknown."""
    result: dict[str, tuple[int, int] | None] = {}
    for name in ("object", "style"):
        column = table[f"same_{name}"]
        result[name] = None if column.isna().any() else (int(column.sum()), len(column))
    return result


def agreement_text(table: pd.DataFrame) -> str:
    """E.g. ``"7/10 same object · 3/10 same style"``."""
    parts = [f"{hits}/{k} same {name}" for name, value in agreement(table).items() if value is not None
             for hits, k in [value]]
    return " · ".join(parts) if parts else "query labels unknown"


class Captioned(Protocol):
    """What names a gallery's items: a :class:`~anchordiv.explorer.source.GallerySource` (the
    page's) or a :class:`~anchordiv.gallery.Gallery`."""

    def caption(self, item: int) -> str: ...


def grid_tiles(table: pd.DataFrame, source: Captioned, value_name: str,
               line_chars: int = GRID_CAPTION_LINE_CHARS) -> list[dict[str, object]]:
    """What the page's neighbour grid writes on each row of a :func:`neighbour_table` of ``source``:
    a caption of two lines and the marks drawn over the image.

    Parameters
    ----------
    table : DataFrame
        A :func:`neighbour_table` (``rank``, ``gallery_id``, ``value_name``, ``same_object``, ``same_style``).
    source : Captioned
        What names the items: a :class:`~anchordiv.explorer.source.GallerySource` or a gallery.
    value_name : str
        The value column (``"divergence"`` or ``"similarity"``), shown by its first letter.
    line_chars : int
        Characters that fit one line under a grid image.

    Returns
    -------
    list of dict
        One per row, plain text each: ``id``; ``head``, the caption's first line (rank and value,
        :func:`caption_heads`); ``line``, its second (the item's name as it fits one line,
        :func:`grid_name`); ``name``, the whole name (for the image's alternative text and a
        tooltip); ``marks``, ``"✓obj"`` / ``"✓sty"`` where the item shares the query's object /
        style (:func:`agreement_marks`).
    """
    ids = [int(item) for item in table["gallery_id"].tolist()]
    return [{"id": item, "head": head, "line": grid_name(source, item, line_chars), "name": source.caption(item),
             "marks": marks}
            for item, head, marks in zip(ids, caption_heads(table, value_name), agreement_marks(table))]


def caption_heads(table: pd.DataFrame, value_name: str) -> list[str]:
    """The first line of each grid caption (:func:`grid_tiles`): rank and value, e.g. ``"3. d=0.21"``."""
    rows = zip(table["rank"].tolist(), table[value_name].tolist())
    return [f"{rank}. {value_name[0]}={readable_value(value, divergence=value_name == 'divergence')}"
            for rank, value in rows]


def agreement_marks(table: pd.DataFrame) -> list[str]:
    """Per row of a :func:`neighbour_table`: ``"✓obj"`` where it shares the query's object,
    ``"✓sty"`` its style, both, or ``""`` (plain text: emoji glyphs are missing from many
    systems' fonts)."""
    rows = zip(table["same_object"].tolist(), table["same_style"].tolist())
    return [" ".join(mark for mark, same in (("✓obj", same_object), ("✓sty", same_style)) if same is True)
            for same_object, same_style in rows]


def grid_name(source: Captioned, item: int, line_chars: int = GRID_CAPTION_LINE_CHARS) -> str:
    """An item's name as it fits one line under a grid image (:func:`fit_lines`)."""
    return fit_lines(source.caption(item), line_chars, GRID_CAPTION_LINES)


def fit_lines(text: str, line_chars: int, lines: int) -> str:
    """``text`` (its runs of white space as one space) whole where it wraps into ``lines`` lines of
    ``line_chars`` characters, as a browser wraps it (at spaces and hyphens); otherwise its words up
    to the last that fits there with ``…`` after it. Only a word longer than a line, which a browser breaks
    inside anyway, may be cut inside (to what fits)."""
    words = text.split()
    whole = " ".join(words)
    if _wrapped_lines(whole, line_chars) <= lines:
        return whole
    kept: list[str] = []
    for word in words:
        if _wrapped_lines(" ".join([*kept, word]) + "…", line_chars) > lines:
            if len(word) > line_chars:
                kept.append(_fitting_start(kept, word, line_chars, lines))
            break
        kept.append(word)
    while kept and not any(char.isalnum() for char in kept[-1]):
        kept.pop()  # a separator ("·") is not left dangling before the ellipsis
    return " ".join(part for part in kept if part) + "…"


def _fitting_start(kept: list[str], word: str, line_chars: int, lines: int) -> str:
    """The longest start of ``word`` that still fits after ``kept`` and before ``…``."""
    fitting = (length for length in range(len(word), 0, -1)
               if _wrapped_lines(" ".join([*kept, word[:length]]) + "…", line_chars) <= lines)
    return word[:next(fitting, 0)]


def _wrapped_lines(text: str, line_chars: int) -> int:
    """How many lines of ``line_chars`` characters ``text`` takes, wrapped as a browser wraps it: at
    spaces and after hyphens (a longer word broken)."""
    return len(textwrap.wrap(text, line_chars, break_long_words=True, break_on_hyphens=True))


def combined_table(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The neighbour tables of several methods (``{method: table}``) as one, with a ``method``
    column: the explorer's neighbour table, and as CSV its "Download neighbour table"."""
    combined = pd.concat([table.assign(method=name) for name, table in tables.items()], ignore_index=True)
    if "divergence" in combined.columns:  # a KL within rounding of 0 is 0 (anchordiv.grids.DIVERGENCE_ZERO)
        known = combined["divergence"].notna()
        combined.loc[known, "divergence"] = shown_divergences(combined.loc[known, "divergence"])
    return combined
