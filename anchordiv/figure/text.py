"""Captions cut to the room they have, with nothing a renderer refuses."""
from __future__ import annotations

import textwrap

from ..explorer.literal import DRAWABLE


def clip(text: object, width: int, lines: int = 1) -> str:
    """``text`` as at most ``lines`` lines of at most ``width`` characters (long words broken),
    ending in "…" where it was cut, with nothing a renderer refuses
    (:data:`~anchordiv.explorer.literal.DRAWABLE`)."""
    value = str(text).translate(DRAWABLE)
    head = value[:2 * width * lines]  # more than the lines can show: wrapping a whole 10,000-character text is slow
    wrapped = textwrap.wrap(head, width) or [""]
    kept = wrapped[:lines]
    if len(wrapped) > lines or value[len(head):].strip():
        kept[-1] = kept[-1][:width - 1].rstrip() + "…"
    return "\n".join(kept)

