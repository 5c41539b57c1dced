"""Export: a grid of images with captions as a PNG (:func:`grid_png`)."""
from __future__ import annotations

import io
from typing import Sequence

from PIL import Image, ImageDraw


def grid_png(images: Sequence[Image.Image], captions: Sequence[str], columns: int = 5, cell: int = 128,
             title: str | None = None) -> bytes:
    """A PNG of ``images`` in a grid, each ``cell`` pixels wide with its caption below."""
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
    buffer = io.BytesIO()
    canvas.save(buffer, format="PNG")
    return buffer.getvalue()
