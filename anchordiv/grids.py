"""Image grids with captions (:func:`grid_image`), as PNG bytes (:func:`grid_png`, :func:`png_bytes`): the
neighbour grids of the explorer's downloads and of the reproduction report."""
from __future__ import annotations

import io
from typing import Sequence

from PIL import Image, ImageDraw


def grid_image(images: Sequence[Image.Image], captions: Sequence[str], columns: int = 5, cell: int = 128,
               title: str | None = None) -> Image.Image:
    """``images`` in a grid, each ``cell`` pixels wide with its caption below, under ``title``."""
    columns = max(1, min(columns, len(images) or 1))
    rows = -(-len(images) // columns) if images else 0
    text_height, top = 30, 24 if title else 0
    canvas = Image.new("RGB", (columns * cell, top + rows * (cell + text_height)), "white")
    draw = ImageDraw.Draw(canvas)
    if title:
        draw.text((4, 4), title, fill="black")
    for i, (image, caption) in enumerate(zip(images, captions)):
        x, y = (i % columns) * cell, top + (i // columns) * (cell + text_height)
        canvas.paste(image.convert("RGB").resize((cell - 8, cell - 8)), (x + 4, y + 4))
        for line_no, line in enumerate(str(caption).split("\n")[:2]):
            draw.text((x + 4, y + cell + line_no * 13), line[: cell // 6], fill="black")
    return canvas


def grid_png(images: Sequence[Image.Image], captions: Sequence[str], columns: int = 5, cell: int = 128,
             title: str | None = None) -> bytes:
    """:func:`grid_image` encoded as PNG bytes."""
    return png_bytes(grid_image(images, captions, columns, cell, title))


def png_bytes(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
