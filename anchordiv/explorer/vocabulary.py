"""The vocabulary of the Explore page's "Find anchors" panel and the gallery rows it works on: the
default list for a model, the text files under the data roots a person may choose, the panel's bound
on a list's size, and the bounded, seeded sample of a gallery that the panel contrasts a
neighbourhood with and learns a geometry on."""
from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Sequence

import numpy as np

from ..projection import sample_ids
from ..vocabularies import load_vocabulary, parse_vocabulary, read_vocabulary_file, vocabulary_kinds
from .literal import without_joiners
from .paths import MENU_LIMIT, SCAN_LIMIT, DataRoots

# The panel's vocabularies: the budget is a fit over 2,000 terms on the whole world in 2 s.
FIND_TERMS = 2_000
# Gallery rows the panel reads: the whole built-in world (19,728) fits; a larger store is sampled.
GALLERY_ROWS = 20_000
SAMPLE_SEED = 0
VOCABULARY_SUFFIX = ".txt"


def default_vocabulary(encoder_name: str) -> str:
    """The list the panel opens on: the built-in world's names and styles for the built-in model
    (the words its captions use), the ImageNet-1k class names for every other (CLIP models)."""
    return "builtin-world" if str(encoder_name).startswith("builtin") else "imagenet-1k"


def panel_vocabulary(name: str) -> tuple[tuple[str, ...], tuple[str, ...] | None]:
    """The terms of the named list (:func:`~anchordiv.vocabularies.load_vocabulary`) and what kind
    each one is (:func:`~anchordiv.vocabularies.vocabulary_kinds`: ``None`` for a list of one
    kind), as the panel learns over them (a person's own list is one kind)."""
    kinds = vocabulary_kinds(name)
    return tuple(load_vocabulary(name)), None if kinds is None else tuple(kinds)


def bounded_terms(terms: Sequence[str], source: str) -> tuple[str, ...]:
    """``terms`` as a tuple; a ``ValueError`` naming ``source`` when there are none or more than
    :data:`FIND_TERMS` (the panel encodes, ranks and learns over every one)."""
    if not terms:
        raise ValueError(f"{source} has no terms; give one term per line")
    if len(terms) > FIND_TERMS:
        raise ValueError(f"{source} has {len(terms):,} terms; this panel takes at most {FIND_TERMS:,} "
                         "(keep the terms that matter, or choose a shorter list)")
    return tuple(terms)


def typed_terms(text: str) -> tuple[str, ...]:
    """A person's own list, one term per line (:func:`~anchordiv.vocabularies.parse_vocabulary`),
    bounded by :func:`bounded_terms`."""
    return bounded_terms(parse_vocabulary(without_joiners(text), source="your list"), "your list")


def file_terms(roots: DataRoots, path: str | os.PathLike) -> tuple[str, ...]:
    """The terms of the text file ``path``, which must lie inside the data ``roots``
    (:meth:`~anchordiv.explorer.DataRoots.confine`), bounded by :func:`bounded_terms`."""
    confined = roots.confine(path, "vocabulary file")
    return bounded_terms(read_vocabulary_file(confined), f"vocabulary file {Path(path).name!r}")


def vocabulary_files(roots: DataRoots) -> list[Path]:
    """The ``.txt`` files directly in the data roots' folders (:meth:`~anchordiv.explorer.DataRoots.image_folders`)
    that resolve inside a root: at most :data:`~anchordiv.explorer.paths.MENU_LIMIT`, each folder read
    for at most :data:`~anchordiv.explorer.paths.SCAN_LIMIT` entries."""
    found: list[Path] = []
    for folder in roots.image_folders():
        try:
            with os.scandir(folder) as scan:
                names = sorted(entry.path for entry in itertools.islice(scan, SCAN_LIMIT)
                               if entry.name.endswith(VOCABULARY_SUFFIX) and not entry.name.startswith("."))
        except OSError:
            continue
        for name in names:
            try:
                if roots.confine(name, "vocabulary file").is_file():
                    found.append(Path(name))
            except ValueError:
                continue  # a link out of the roots: not offered
            if len(found) == MENU_LIMIT:
                return found
    return found


def gallery_sample(n_items: int, size: int = GALLERY_ROWS, seed: int = SAMPLE_SEED) -> np.ndarray:
    """The gallery rows the panel reads, sorted: all ``n_items`` when there are at most ``size``,
    else ``size`` rows drawn without replacement by ``numpy.random.default_rng(seed)``
    (:func:`anchordiv.projection.sample_ids`). ``(n,)`` int64."""
    return sample_ids(n_items, size, seed).astype(np.int64)
