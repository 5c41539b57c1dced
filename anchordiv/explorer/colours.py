"""Which label column a map of a gallery is coloured by first: a label (style, object), never a
column that names each image on its own (a path, a file name)."""
from __future__ import annotations

from typing import Sequence

import pandas as pd

# A column with distinct values for at least this share of the rows names images, not groups of them.
NEARLY_UNIQUE = 0.9


def label_colour(labels: pd.DataFrame, columns: Sequence[str], preferred: Sequence[str | None]) -> str:
    """The first of ``preferred`` (then of ``columns``) that is one of ``columns`` and groups the
    ``labels`` rows: more than one distinct value (a map in one colour tells nothing) and fewer
    than :data:`NEARLY_UNIQUE` of the rows (one row, or none: any). ``columns[0]`` when none does.

    Parameters
    ----------
    labels : DataFrame
        A gallery's labels, one row per image.
    columns : sequence of str
        The columns a map may be coloured by.
    preferred : sequence of str or None
        The columns to try first, in order (``None`` entries are skipped): e.g. the style, object
        and name columns.
    """
    rows = len(labels)
    for column in dict.fromkeys([*preferred, *columns]):
        if column in columns and (rows < 2 or 1 < labels[column].nunique() < NEARLY_UNIQUE * rows):
            return column
    return columns[0]
