"""Word lists shipped with anchordiv (and computed from its data), to draw anchors from.

:func:`list_vocabularies` names them; :func:`load_vocabulary` gives a list's terms, or the terms
of a person's own text file. ``SOURCES.md`` in this folder gives each shipped list's source and
licence; :mod:`.sources` holds the writers that made the files.
"""
from .catalog import (
    MAX_TERM_CHARS,
    MAX_TERMS,
    list_vocabularies,
    load_vocabulary,
    parse_vocabulary,
    read_vocabulary_file,
    vocabulary_description,
    vocabulary_kinds,
)

__all__ = ["MAX_TERMS", "MAX_TERM_CHARS", "list_vocabularies", "load_vocabulary", "parse_vocabulary",
           "read_vocabulary_file", "vocabulary_description", "vocabulary_kinds"]
