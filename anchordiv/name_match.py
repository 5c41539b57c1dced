"""Finding gallery items by name, best match first: one ranking for every gallery (the built-in
world's and a folder's :meth:`Gallery.find <anchordiv.gallery.Gallery.find>`, a store's
:class:`~anchordiv.explorer.store_source.NameIndex`), so that a search means the same everywhere.

A name matches a search text when it contains it, case-insensitively and with runs of white space
read as one space (:func:`search_key`). Matches are ranked by how they match (:data:`EXACT`, then
:data:`PREFIX`, :data:`WORD`, :data:`CONTAINED`; :func:`rank_matches`), then by the shorter name,
then by the smaller id. So "cat" puts the images named "cat" first, then "cat face", then
"black cat", then "scatter"; and the first of the list is what the explorer takes on Enter.
"""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np
import pandas as pd

# How a name matches, best first (the rank :func:`rank_matches` sorts by); NO_MATCH: it does not.
EXACT, PREFIX, WORD, CONTAINED, NO_MATCH = range(5)


def search_key(text: str) -> str:
    """``text`` as names are compared: case folded, runs of white space (line breaks included) one
    space, none at either end; ``""`` for a blank text."""
    return " ".join(str(text).split()).casefold()


def word_start(needle: str) -> re.Pattern[str]:
    """A pattern for ``needle`` (a :func:`search_key`) where a word starts: at the start of the text
    or after a character that is not a letter or a digit (so ``_``, ``-``, ``/`` and ``.`` part
    words, as in file names). ``needle`` is matched literally, never as a pattern."""
    literal = re.escape(needle)
    # The literal first and the word start checked behind it: a pattern that starts with a literal
    # is found by a fast scan, 20-50 times faster over a store's million names than one that starts
    # with the check.
    return re.compile(f"{literal}(?<=(?<![^\\W_]){literal})")


def match_ranks(needle: str, names: Sequence[str], texts: Sequence[str]) -> np.ndarray:
    """How each item matches ``needle``.

    Parameters
    ----------
    needle : str
        The search text, already a :func:`search_key`.
    names : sequence of str
        Each item's name as a :func:`search_key` (the built-in world's ``"cat"``).
    texts : sequence of str
        Each item's searched text as a :func:`search_key`: its name, or its caption where that says
        more (``"cat · pencil sketch"``).

    Returns
    -------
    numpy.ndarray
        ``(n,)`` int: :data:`EXACT` (the name or the whole text is ``needle``), :data:`PREFIX` (the
        text starts with it), :data:`WORD` (a word of the text does), :data:`CONTAINED`, or
        :data:`NO_MATCH`.
    """
    names, texts = pd.Series(list(names), dtype=object), pd.Series(list(texts), dtype=object)
    if texts.empty:
        return np.zeros(0, dtype=np.int64)
    return np.select([((names == needle) | (texts == needle)).to_numpy(),
                      texts.str.startswith(needle).to_numpy(dtype=bool),
                      texts.str.contains(word_start(needle)).to_numpy(dtype=bool),
                      texts.str.contains(needle, regex=False).to_numpy(dtype=bool)],
                     [EXACT, PREFIX, WORD, CONTAINED], default=NO_MATCH)


def rank_matches(text: str, items: Sequence[int] | np.ndarray, names: Sequence[str], texts: Sequence[str],
                 limit: int) -> list[int]:
    """The ``items`` that match ``text``, best first, at most ``limit``.

    Parameters
    ----------
    text : str
        What was typed; :func:`search_key` reads it (a blank text matches nothing). It is matched
        literally: ``.*`` or ``(`` are characters to find, not a pattern.
    items : sequence of int
        The candidates' ids (each once).
    names, texts : sequence of str
        Each candidate's name and searched text as :func:`search_key` made them (:func:`match_ranks`).
    limit : int
        The most ids returned (none below 1).

    Returns
    -------
    list of int
        The matching ids ordered by :func:`match_ranks`, then by the shorter name, then by id.
    """
    needle = search_key(text)
    if not needle or limit < 1 or len(items) == 0:
        return []
    items = np.asarray(items, dtype=np.int64)
    ranks = match_ranks(needle, names, texts)
    lengths = np.fromiter((len(name) for name in names), dtype=np.int64, count=len(items))
    order = np.lexsort((items, lengths, ranks))  # the last key sorts first
    order = order[ranks[order] < NO_MATCH][:int(limit)]
    return items[order].tolist()
