"""What an audience sees of the p player's Play, frame by frame: :data:`PLAY_FRAMES_JS` presses
Play on a page, records the anchor-divergence grid as drawn on every animation frame for a while
and presses Pause; :func:`summarise` says how much of that time the grid was settled.

A frame is **settled** when all ``k`` tiles of the grid (``k``: the tiles it shows) are drawn, their
image loaded, at opacity 0.9 or more, and no two drawn rectangles overlap by more than 10% of a
tile, counting a leaving tile's fading copy while it is still visible. A tile is **drawn** when its
image is loaded and its opacity is at least 0.5. The figures: the share of frames settled, the
median length of a settled stretch (from its first frame to the first frame after it, or to the
end of the recording), and the frames with fewer than half the tiles drawn.

Used by the rehearsal (:mod:`anchordiv.benchmarks.rehearsal`) and the browser tests; a page is
driven with ``page.evaluate(PLAY_FRAMES_JS, seconds)`` (Playwright, sync or async).
"""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from typing import Any, Sequence

from .browser import AD_GRID, PLAYER

SETTLED_OPACITY = 0.9
DRAWN_OPACITY = 0.5
VISIBLE_OPACITY = 0.05   # a fading copy of a leaving tile counts in the overlaps down to this
MAX_OVERLAP = 0.1        # of a tile's area

PLAY_FRAMES_JS = f"""async (seconds) => {{
  const grid = document.querySelector({json.dumps(AD_GRID)});
  if (!grid) throw new Error("no anchor-divergence grid on the page");
  const root = grid.closest({json.dumps(PLAYER)});
""" + """  const button = root.querySelector('.adp-play');
  const tileOf = (element) => {
    const rect = element.getBoundingClientRect();
    const image = element.querySelector('img');
    return {x: rect.left, y: rect.top, w: rect.width, h: rect.height,
            o: Number(getComputedStyle(element).opacity),
            loaded: Boolean(image && image.complete && image.naturalWidth > 0),
            ghost: element.classList.contains('adp-ghost')};
  };
  const frames = [];
  button.click();
  await new Promise((done) => {
    let start = null;
    const sample = (now) => {
      if (start === null) start = now;
      frames.push({t: (now - start) / 1000, tiles: [...grid.querySelectorAll('.adp-tile')].map(tileOf)});
      if (now - start < seconds * 1000) requestAnimationFrame(sample);
      else done();
    };
    requestAnimationFrame(sample);
  });
  if (button.getAttribute('aria-pressed') === 'true') button.click();
  return frames;
}"""


@dataclass(frozen=True)
class PlayFrames:
    """The figures of one recording of Play (the module's docstring defines the terms)."""

    frames: int
    seconds: float
    tiles: int
    settled_frames: int
    median_settled_s: float
    settled_stretches: int
    sparse_frames: int

    @property
    def settled_share(self) -> float:
        return self.settled_frames / self.frames

    @property
    def bad_frames(self) -> int:
        """Frames that are not settled."""
        return self.frames - self.settled_frames

    def line(self) -> str:
        return (f"{self.frames} frames in {self.seconds:.1f} s, {self.tiles} tiles: {self.settled_share:.0%} settled "
                f"({self.bad_frames} not), settled stretches {self.median_settled_s:.2f} s on median "
                f"({self.settled_stretches} of them), {self.sparse_frames} frames with under half the tiles drawn")


def _overlap(a: dict[str, Any], b: dict[str, Any]) -> float:
    width = min(a["x"] + a["w"], b["x"] + b["w"]) - max(a["x"], b["x"])
    height = min(a["y"] + a["h"], b["y"] + b["h"]) - max(a["y"], b["y"])
    return max(width, 0.0) * max(height, 0.0)


def frame_state(tiles: Sequence[dict[str, Any]]) -> tuple[bool, int, int]:
    """``(settled, drawn, k)`` of one recorded frame's tiles (dicts ``x, y, w, h, o, loaded, ghost``)."""
    shown = [tile for tile in tiles if not tile["ghost"]]
    drawn = sum(tile["loaded"] and tile["o"] >= DRAWN_OPACITY for tile in shown)
    whole = all(tile["loaded"] and tile["o"] >= SETTLED_OPACITY for tile in shown)
    visible = [tile for tile in tiles if tile["o"] >= VISIBLE_OPACITY and tile["w"] > 0 and tile["h"] > 0]
    area = max((tile["w"] * tile["h"] for tile in shown), default=0.0)
    overlapping = any(_overlap(a, b) > MAX_OVERLAP * area
                      for i, a in enumerate(visible) for b in visible[i + 1:])
    return bool(shown) and whole and not overlapping, drawn, len(shown)


def summarise(frames: Sequence[dict[str, Any]]) -> PlayFrames:
    """The figures of ``frames`` as :data:`PLAY_FRAMES_JS` returns them (``t`` in seconds, ``tiles``)."""
    if not frames:
        raise ValueError("no frame was recorded")
    states = [frame_state(frame["tiles"]) for frame in frames]
    times = [float(frame["t"]) for frame in frames]
    k = max(state[2] for state in states)
    stretches, start = [], None
    for time, (settled, _, _) in zip(times + [times[-1]], states + [(False, 0, 0)]):
        if settled and start is None:
            start = time
        elif not settled and start is not None:
            stretches.append(time - start)
            start = None
    return PlayFrames(frames=len(frames), seconds=times[-1] - times[0], tiles=k,
                      settled_frames=sum(state[0] for state in states),
                      median_settled_s=statistics.median(stretches) if stretches else 0.0,
                      settled_stretches=len(stretches),
                      sparse_frames=sum(state[1] < k / 2 for state in states))
