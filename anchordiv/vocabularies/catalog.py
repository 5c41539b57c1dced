"""Word lists to draw anchors from: the shipped and computed vocabularies, and a person's own file.

:func:`load_vocabulary` takes a name of :func:`list_vocabularies` or a path to a text file; every
list, shipped or not, goes through the same reading rules (:func:`parse_vocabulary`): one term per
line, runs of whitespace collapsed, blank lines and repeats dropped (first occurrence kept, order
kept), at most :data:`MAX_TERMS` terms of at most :data:`MAX_TERM_CHARS` characters each. The
shipped files lie in this package's folder; ``SOURCES.md`` beside them gives each one's source and
licence.
"""
from __future__ import annotations

import os
import unicodedata
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

FOLDER = Path(__file__).resolve().parent
MAX_TERMS = 5000
MAX_TERM_CHARS = 200
# A file larger than this cannot hold MAX_TERMS terms of MAX_TERM_CHARS characters plus a fair share
# of blank lines and repeats; it is refused before it is read.
MAX_FILE_BYTES = 8 * 1024 * 1024

# Shipped files: vocabulary name -> (file name, what it is).
SHIPPED: dict[str, tuple[str, str]] = {
    "imagenet-1k": ("imagenet-1k.txt", "the ImageNet-1k class names as CLIP's authors cleaned them"),
    "places365": ("places365.txt", "the 365 Places365 scene categories"),
    "coco-80": ("coco-80.txt", "the 80 COCO object categories"),
    "dtd-47": ("dtd-47.txt", "the 47 texture categories of the Describable Textures Dataset"),
    "art-styles": ("art-styles.txt", "art styles and media (anchordiv's own list)"),
    "colours": ("colours.txt", "basic colour terms and common colour names"),
}


def _chexpert() -> list[str]:
    from ..datasets.layouts import CHEXPERT_CONDITIONS

    return list(CHEXPERT_CONDITIONS)


def _world_names() -> list[str]:
    from ..datasets.shipped import read_shipped

    return list(read_shipped().index["name"])


def _world_styles() -> list[str]:
    from ..datasets.styles import RENDITIONS

    # The vendors' own drawings (google, twitter) are where the renditions start, not styles a
    # picture can be in: their names describe no look (issue 50).
    return list(RENDITIONS)


# Computed vocabularies: name -> (how to compute it, what it is). Never a shipped copy.
COMPUTED: dict[str, tuple[Callable[[], list[str]], str]] = {
    "chexpert-14": (_chexpert, "the 14 CheXpert observations (\"No Finding\" included)"),
    "builtin-world-names": (_world_names, "the names of the built-in world's emoji"),
    "builtin-world-styles": (_world_styles, "the built-in world's drawing styles (not the vendors' names)"),
    "builtin-world": (lambda: _world_names() + _world_styles(), "the built-in world's names, then its styles"),
}


# The kinds of the computed vocabularies' terms (what each term describes), in the lists' order;
# a vocabulary not named here is one kind.
KINDS: dict[str, Callable[[], list[str]]] = {
    "builtin-world-names": lambda: ["object"] * len(_world_names()),
    "builtin-world-styles": lambda: ["style"] * len(_world_styles()),
    "builtin-world": lambda: ["object"] * len(_world_names()) + ["style"] * len(_world_styles()),
}


def vocabulary_kinds(name: str) -> list[str] | None:
    """What each term of the vocabulary ``name`` describes (``"object"``, ``"style"``), in its
    order, for the lists whose terms come in kinds; ``None`` for any other name or a path."""
    return KINDS[name]() if isinstance(name, str) and name in KINDS else None


def list_vocabularies() -> list[str]:
    """The names :func:`load_vocabulary` accepts besides a path, sorted."""
    return sorted([*SHIPPED, *COMPUTED])


def vocabulary_description(name: str) -> str:
    """What the vocabulary ``name`` of :func:`list_vocabularies` is, in a few words."""
    if name in SHIPPED:
        return SHIPPED[name][1]
    if name in COMPUTED:
        return COMPUTED[name][1]
    raise ValueError(_unknown(name))


def load_vocabulary(name: str | os.PathLike) -> list[str]:
    """The terms of a vocabulary: a name of :func:`list_vocabularies`, or a path to a text file.

    A text file is UTF-8 with one term per line, read by :func:`parse_vocabulary` (blank lines and
    repeats dropped; at most :data:`MAX_TERMS` terms of at most :data:`MAX_TERM_CHARS` characters,
    else :class:`ValueError`). A name of the list wins over a file of that name in the working
    folder (write ``./colours`` for the file). Order is the list's own (class order for ImageNet
    and COCO); a shipped list with repeated names gives each once (``imagenet-1k`` has 998
    distinct names: "missile" and "sunglasses" name two classes each). Returns a new list.
    """
    if isinstance(name, str) and name in SHIPPED:
        return list(_shipped(name))
    if isinstance(name, str) and name in COMPUTED:
        return list(_computed(name))
    if isinstance(name, os.PathLike) or (isinstance(name, str) and _looks_like_path(name)):
        return read_vocabulary_file(name)
    raise ValueError(_unknown(name))


def read_vocabulary_file(path: str | os.PathLike) -> list[str]:
    """The terms of the UTF-8 text file ``path``, by :func:`parse_vocabulary`; :class:`ValueError`
    when it is not a readable file, not UTF-8, larger than :data:`MAX_FILE_BYTES` or out of bounds."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"vocabulary file {str(path)!r} does not exist or is not a file; give the path of a text "
                         "file with one term per line")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ValueError(f"vocabulary file {str(path)!r} has {size:,} bytes; at most {MAX_FILE_BYTES:,} are read: keep "
                         "the terms that matter, or split the file")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(f"vocabulary file {str(path)!r} is not UTF-8 text ({error.reason} at byte "
                         f"{error.start:,}); save it as UTF-8, one term per line") from None
    except OSError as error:
        raise ValueError(f"vocabulary file {str(path)!r} cannot be read ({error.strerror or error}); give a file "
                         "this user can read") from None
    return parse_vocabulary(text, source=str(path))


def parse_vocabulary(text: str, source: str = "the list") -> list[str]:
    """Terms from ``text``, one per line: each line stripped and its inner runs of whitespace made
    one space; blank lines and repeats dropped, first occurrence and order kept.

    Raises :class:`ValueError` (naming ``source`` and the line) for a term over
    :data:`MAX_TERM_CHARS` characters, a control character (a binary file's bytes) or more than
    :data:`MAX_TERMS` distinct terms.
    """
    terms: dict[str, None] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        term = " ".join(line.split())
        if not term or term in terms:
            continue
        control = control_character(term)
        if control is not None:
            raise ValueError(f"{source}: line {number:,} holds the control character U+{ord(control):04X}, as a "
                             "binary file does; give plain text, one term per line")
        if len(term) > MAX_TERM_CHARS:
            raise ValueError(f"{source}: line {number:,} has a term of {len(term):,} characters; "
                             f"at most {MAX_TERM_CHARS} are allowed")
        if len(terms) == MAX_TERMS:
            raise ValueError(f"{source}: more than {MAX_TERMS:,} distinct terms (line {number:,} is one too "
                             "many); split the list or keep the terms that matter")
        terms[term] = None
    return list(terms)


def control_character(text: str) -> str | None:
    """The first control character in ``text`` other than tabs and line ends (what a binary file's
    bytes decode to), or ``None``."""
    return next((char for char in text if unicodedata.category(char) == "Cc" and char not in "\t\n\r"), None)


@lru_cache(maxsize=None)
def _shipped(name: str) -> tuple[str, ...]:
    return tuple(read_vocabulary_file(FOLDER / SHIPPED[name][0]))


@lru_cache(maxsize=None)
def _computed(name: str) -> tuple[str, ...]:
    return tuple(parse_vocabulary("\n".join(COMPUTED[name][0]()), source=name))


def _looks_like_path(name: str) -> bool:
    return os.sep in name or "/" in name or name.endswith(".txt") or Path(name).is_file()


def _unknown(name: object) -> str:
    return (f"unknown vocabulary {name!r}: give one of {', '.join(list_vocabularies())} "
            "or a path to a text file with one term per line")
