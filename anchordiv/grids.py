"""Image grids with captions (:func:`grid_image`), as PNG bytes (:func:`grid_png`, :func:`png_bytes`): the
neighbour grids of the explorer's downloads and of the reproduction report."""
from __future__ import annotations

import io
from typing import Any, Sequence

import numpy as np
from PIL import Image, ImageDraw

CAPTION_LINES = 3  # lines of caption under each image
LINE_HEIGHT = 13   # pixels a line of PIL's default font takes
ELLIPSIS = "…"


def grid_image(images: Sequence[Image.Image], captions: Sequence[str], columns: int = 5, cell: int = 128,
               title: str | None = None) -> Image.Image:
    """``images`` in a grid, each ``cell`` pixels wide with its caption below (:func:`caption_lines`:
    at most :data:`CAPTION_LINES` lines, broken between words), under ``title``."""
    columns = max(1, min(columns, len(images) or 1))
    rows = -(-len(images) // columns) if images else 0
    text_height, top = CAPTION_LINES * LINE_HEIGHT + 4, 24 if title else 0
    canvas = Image.new("RGB", (columns * cell, top + rows * (cell + text_height)), "white")
    draw = ImageDraw.Draw(canvas)
    if title:
        draw.text((4, 4), title, fill="black")
    for i, (image, caption) in enumerate(zip(images, captions)):
        x, y = (i % columns) * cell, top + (i // columns) * (cell + text_height)
        canvas.paste(image.convert("RGB").resize((cell - 8, cell - 8)), (x + 4, y + 4))
        for line_no, line in enumerate(caption_lines(draw, str(caption), cell - 8)):
            draw.text((x + 4, y + cell + line_no * LINE_HEIGHT), line, fill="black")
    return canvas


def caption_lines(draw: ImageDraw.ImageDraw, caption: str, width: float, most: int = CAPTION_LINES) -> list[str]:
    """``caption`` as at most ``most`` lines of ``draw``'s font, each at most ``width`` pixels wide.

    Lines break between words and at the caption's own line breaks. Where the whole caption needs
    more lines, its first part (the name, before the first line break) is cut so that the parts after
    it (a rank's value) stay whole: it ends after its last whole word that fits, with "…". Only a
    word wider than a whole line is cut inside (it has no word boundary to cut at).
    """
    parts = [wrapped for wrapped in (_wrap(draw, part, width) for part in caption.split("\n")) if wrapped]
    if not parts:
        return []
    room = max(1, most - sum(len(part) for part in parts[1:]))
    if len(parts[0]) > room:
        parts[0] = [*parts[0][:room - 1], _words_with_ellipsis(draw, parts[0][room - 1], width)]
    lines = [line for part in parts for line in part]
    if len(lines) <= most:
        return lines
    return [*lines[:most - 1], _words_with_ellipsis(draw, lines[most - 1], width)]


def _wrap(draw: ImageDraw.ImageDraw, text: str, width: float) -> list[str]:
    """``text`` broken between words into lines of at most ``width`` pixels (a word wider than a line
    is cut to fit, with "…")."""
    lines: list[str] = []
    line: list[str] = []
    for word in text.split():
        if line and draw.textlength(" ".join([*line, word])) > width:
            lines.append(" ".join(line))
            line = []
        line.append(word)
    if line:
        lines.append(" ".join(line))
    return [line if draw.textlength(line) <= width else _cut_with_ellipsis(draw, line, width) for line in lines]


def _words_with_ellipsis(draw: ImageDraw.ImageDraw, line: str, width: float) -> str:
    """The first words of ``line`` and "…", as many as fit ``width`` (a single word cut to fit)."""
    words = line.removesuffix(ELLIPSIS).split()
    while len(words) > 1 and draw.textlength(" ".join(words) + ELLIPSIS) > width:
        words.pop()
    while len(words) > 1 and not any(char.isalnum() for char in words[-1]):
        words.pop()  # no separator ("·") dangling before the ellipsis
    kept = " ".join(words)
    return kept + ELLIPSIS if draw.textlength(kept + ELLIPSIS) <= width else _cut_with_ellipsis(draw, kept, width)


def _cut_with_ellipsis(draw: ImageDraw.ImageDraw, text: str, width: float) -> str:
    """The longest start of ``text`` that fits ``width`` with "…" after it."""
    end = len(text)
    while end > 1 and draw.textlength(text[:end] + ELLIPSIS) > width:
        end -= 1
    return text[:end] + ELLIPSIS


def grid_png(images: Sequence[Image.Image], captions: Sequence[str], columns: int = 5, cell: int = 128,
             title: str | None = None) -> bytes:
    """:func:`grid_image` encoded as PNG bytes."""
    return png_bytes(grid_image(images, captions, columns, cell, title))


# A KL divergence is never negative, and the float32 search puts one within about 2 d u s ||g|| of
# its value (docs/design.md §9: up to 6e-4 at d = 512, s = 10); one below this is shown as 0.
DIVERGENCE_ZERO = 1e-4


def readable_value(value: float, divergence: bool = False) -> str:
    """``value`` as people read it: 3 significant digits, never in scientific notation (1,234 for a
    thousand and more, 0 for a magnitude below 1e-4); a ``divergence`` below
    :data:`DIVERGENCE_ZERO` (a negative one included: only rounding makes it) is 0."""
    value = float(value)
    if (divergence and value < DIVERGENCE_ZERO) or abs(value) < 1e-4:
        return "0"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def shown_divergences(values: Any) -> np.ndarray:
    """Divergences as a table shows them: those below :data:`DIVERGENCE_ZERO` as 0."""
    values = np.asarray(values, dtype=np.float64)
    return np.where(values < DIVERGENCE_ZERO, 0.0, values)


def ranked_captions(names: Sequence[str], values: Sequence[float], value_name: str) -> list[str]:
    """Captions of a ranked grid: ``"1. name"`` and, on a line of its own (kept whole by
    :func:`caption_lines`), the value as ``"d=0.123"`` (``value_name`` then ``=``;
    :func:`readable_value`, a divergence for ``"d"``)."""
    return [f"{rank}. {name}\n{value_name}={readable_value(value, value_name == 'd')}"
            for rank, (name, value) in enumerate(zip(names, values), 1)]


def png_bytes(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
