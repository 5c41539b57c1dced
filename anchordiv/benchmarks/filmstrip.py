"""Play as the screen showed it: the frames Chromium composited while Play ran, taken from its
DevTools screencast (:class:`Screencast`: what was painted, not what the DOM said), cut to the p
player's region and laid out in time order as one picture (:func:`filmstrip`).

The screencast sends a frame only when the screen changed, so the frame on screen at a time is the
last one sent at or before it (:func:`on_screen`). Pictures are saved with 256 colours
(:func:`save_png`) to keep the repository small.
"""
from __future__ import annotations

import asyncio
import base64
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from PIL import Image, ImageDraw, ImageFont

FRAMES_SHOWN = 14
MAX_WIDTH = 2400        # px of the whole strip; frames wrap onto a new row beyond it
FRAME_HEIGHT = 480      # px of each frame in the strip at most (taller crops are scaled down)
LABEL_HEIGHT = 26
GAP = 8
# (left, top, right, bottom) in CSS pixels of the viewport, as Playwright's bounding boxes give them.
Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class Frame:
    """One composited frame: its screencast timestamp (seconds), the whole viewport as painted (device
    pixels) and the viewport's width in CSS pixels (to map a CSS box onto the picture)."""
    t: float
    image: Image.Image
    css_width: float


class Screencast:
    """Chromium's screencast of ``page`` while the ``async with`` block runs (JPEG frames, each
    acknowledged at once so that the next comes); :meth:`frames` decodes what came."""

    def __init__(self, page, quality: int = 85):
        self.page, self.quality = page, quality
        self.session = None
        self.raw: list[tuple[dict, str]] = []  # (metadata, base64 JPEG) per frame, in arrival order
        self._acks: list[asyncio.Future] = []

    async def __aenter__(self) -> "Screencast":
        self.session = await self.page.context.new_cdp_session(self.page)
        self.session.on("Page.screencastFrame", self._frame)
        await self.session.send("Page.startScreencast", {"format": "jpeg", "quality": self.quality})
        return self

    def _frame(self, event: dict) -> None:
        self.raw.append((event["metadata"], event["data"]))
        self._acks.append(asyncio.ensure_future(
            self.session.send("Page.screencastFrameAck", {"sessionId": event["sessionId"]})))

    async def __aexit__(self, *exc) -> None:
        try:
            await self.session.send("Page.stopScreencast")
            # An acknowledgement may fail once the screencast has stopped; the frame is kept anyway.
            await asyncio.gather(*self._acks, return_exceptions=True)
        finally:
            await self.session.detach()

    def frames(self) -> list[Frame]:
        """The frames received, decoded, in time order."""
        decoded = [Frame(float(meta["timestamp"]), Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB"),
                         float(meta["deviceWidth"])) for meta, data in self.raw]
        return sorted(decoded, key=lambda frame: frame.t)


def on_screen(frames: Sequence[Frame], count: int) -> list[tuple[float, Frame]]:
    """``(time, frame)``: the frame on screen at each of ``count`` evenly spaced times from the first
    frame to the last (the last frame sent at or before the time; a frame may be on screen at
    several)."""
    if not frames:
        raise ValueError("no frame was captured")
    start, end = frames[0].t, frames[-1].t
    times = [start + (end - start) * i / max(count - 1, 1) for i in range(count)]
    picked, index = [], 0
    for time in times:
        while index + 1 < len(frames) and frames[index + 1].t <= time:
            index += 1
        picked.append((time, frames[index]))
    return picked


def crop(frame: Frame, box: Box) -> Image.Image:
    """The part of ``frame`` inside ``box`` (CSS pixels), clipped to the viewport."""
    scale = frame.image.width / frame.css_width
    left, top, right, bottom = (round(value * scale) for value in box)
    width, height = frame.image.size
    clipped = (max(left, 0), max(top, 0), min(right, width), min(bottom, height))
    if clipped[0] >= clipped[2] or clipped[1] >= clipped[3]:
        raise ValueError(f"the box {box} lies outside the viewport ({frame.css_width:.0f} CSS px wide)")
    return frame.image.crop(clipped)


def filmstrip(frames: Sequence[Frame], box: Box, count: int = FRAMES_SHOWN, max_width: int = MAX_WIDTH,
              frame_height: int = FRAME_HEIGHT) -> Image.Image:
    """The frames on screen at ``count`` even times (:func:`on_screen`), cut to ``box``, each under
    its time since the first frame, left to right and then row by row (within ``max_width`` pixels).

    Parameters
    ----------
    frames : the screencast's frames, in time order.
    box : the region to show, in CSS pixels of the viewport (the same in every frame: the page
        is not scrolled while Play runs).
    count : how many frames the strip shows.
    max_width : the widest the strip may be; frames wrap onto further rows.
    frame_height : the tallest a frame is shown; taller crops are scaled down.

    Returns
    -------
    PIL.Image.Image : the strip, RGB on white.
    """
    picked = on_screen(frames, count)
    start = frames[0].t
    cuts = [crop(frame, box) for _, frame in picked]
    scale = min(1.0, frame_height / max(cut.height for cut in cuts),
                (max_width - 2 * GAP) / max(cut.width for cut in cuts))
    cuts = [cut.resize((max(1, round(cut.width * scale)), max(1, round(cut.height * scale)))) for cut in cuts]
    cell_w, cell_h = max(cut.width for cut in cuts) + GAP, max(cut.height for cut in cuts) + LABEL_HEIGHT + GAP
    columns = max(1, min(len(cuts), (max_width - GAP) // cell_w))
    rows = -(-len(cuts) // columns)
    strip = Image.new("RGB", (GAP + columns * cell_w, GAP + rows * cell_h), "white")
    draw, font = ImageDraw.Draw(strip), ImageFont.load_default(size=LABEL_HEIGHT - 8)
    for index, ((time, _), cut) in enumerate(zip(picked, cuts)):
        x, y = GAP + (index % columns) * cell_w, GAP + (index // columns) * cell_h
        draw.text((x, y), f"+{time - start:.2f} s", fill="black", font=font)
        strip.paste(cut, (x, y + LABEL_HEIGHT))
        draw.rectangle((x - 1, y + LABEL_HEIGHT - 1, x + cut.width, y + LABEL_HEIGHT + cut.height), outline="grey")
    return strip


def save_png(image: Image.Image, path: Path) -> Path:
    """``image`` as a PNG of 256 colours at ``path`` (its folder made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    image.convert("RGB").quantize(256).save(path, optimize=True)
    return path
