"""The p sweep as files, from the same p path the explorer's player plays
(:class:`~anchordiv.slider.SliderPath`): a strip of neighbour rows (a PNG, like the paper's Fig. 3,
right) and an animation that moves ``p`` from 0 to 1 and back (a GIF). Both show, as the player's
Play does, one ranking per change of the top ``k``'s images
(:meth:`~anchordiv.slider.SliderPath.sweep_stops`); the strip may be given its own ``p`` instead.
Drawn with Pillow (:func:`~anchordiv.grids.grid_image`); the caller says how items look
(``images``) and are named (``caption``). Nothing here imports Streamlit or writes a file.
"""
from __future__ import annotations

import io
from typing import Callable, Sequence

import numpy as np
from PIL import Image, ImageDraw

from ..grids import grid_image, png_bytes, ranked_captions
from ..slider import SliderPath

MAX_SWEEP_K = 10        # neighbours per row or frame
MAX_STRIP_ROWS = 25
FRAME_MS = 1250         # one ranking, as the player's Play holds it; the ends twice as long
CELL = 128              # pixels of one image and its caption's width (grid_image's cell)

Images = Callable[[list[int]], list[Image.Image]]


def sweep_strip_png(path: SliderPath, images: Images, caption: Callable[[int], str], *,
                    p_values: Sequence[float] | None = None, k: int = 5, title: str = "") -> bytes:
    """One row of the top ``k`` per ranking of the sweep, or per ``p`` of ``p_values``, under
    ``title``, as PNG bytes.

    Parameters
    ----------
    path : SliderPath
        A query's exact top-``k`` at every slider position; each row shows the step nearest its ``p``.
    images : callable
        ``images(ids) -> list of PIL images``, one per gallery id.
    caption : callable
        ``caption(id) -> str``, an item's name.
    p_values : sequence of float, optional
        The rows' ``p`` (at most :data:`MAX_STRIP_ROWS`), in ``[0, 1]``. By default one row per
        change of the top ``k``'s images (:meth:`~anchordiv.slider.SliderPath.sweep_stops`), the
        rankings the player's Play and :func:`sweep_gif` show; when there are more than
        :data:`MAX_STRIP_ROWS`, that many of them, evenly spread, the title saying so.
    k : int
        Neighbours per row, at most :data:`MAX_SWEEP_K` and the path's ``k``.
    title : str
        The figure's first line (e.g. the query and the anchor sets).
    """
    _check_k(k, path)
    if p_values is None:
        stops = path.sweep_stops(k)
        steps = stops[np.unique(np.round(np.linspace(0, len(stops) - 1, min(len(stops), MAX_STRIP_ROWS))).astype(int))]
        if len(steps) < len(stops):
            title = f"{title}  ({len(steps)} of its {len(stops)} rankings)".strip()
        steps = steps.tolist()
    elif not 1 <= len(p_values) <= MAX_STRIP_ROWS:
        raise ValueError(f"a strip takes 1 to {MAX_STRIP_ROWS} values of p; got {len(p_values)}")
    else:
        steps = [path.step_of(p) for p in p_values]
    shown = _images(path, steps, k, images)
    rows = [grid_image([shown[item] for item in path.ids[step, :k]], _captions(path, step, k, caption), columns=k,
                       cell=CELL, title=f"p = {path.p[step]:.2f}") for step in steps]
    band = 24 if title else 0
    strip = Image.new("RGB", (rows[0].width, band + sum(row.height for row in rows)), "white")
    if title:
        ImageDraw.Draw(strip).text((4, 4), title, fill="black")
    top = band
    for row in rows:
        strip.paste(row, (0, top))
        top += row.height
    return png_bytes(strip)


def sweep_gif(path: SliderPath, images: Images, caption: Callable[[int], str], *, k: int = 5, title: str = "",
              frame_ms: int = FRAME_MS) -> bytes:
    """The top ``k`` as ``p`` moves from 0 to 1 and back, as an animated GIF (looping).

    One frame per change of the top ``k``'s images (:meth:`~anchordiv.slider.SliderPath.sweep_stops`,
    the rankings the player's Play holds), ``frame_ms`` milliseconds each, the two ends twice as
    long; each frame is titled ``title`` and its ``p``, with a bar under the title as long as ``p``.
    ``images`` and ``caption`` as for :func:`sweep_strip_png`.
    """
    _check_k(k, path)
    if isinstance(frame_ms, bool) or not isinstance(frame_ms, (int, np.integer)) or frame_ms < 20:
        raise ValueError(f"frame_ms={frame_ms!r}: a frame lasts a whole number of milliseconds, at least 20")
    forward = path.sweep_stops(k).tolist()
    order = forward + forward[-2:0:-1]
    shown = _images(path, forward, k, images)
    frames, durations = [], []
    for number, step in enumerate(order):
        frame = grid_image([shown[item] for item in path.ids[step, :k]], _captions(path, step, k, caption), columns=k,
                           cell=CELL, title=f"{title}  p = {path.p[step]:.2f}".strip())
        ImageDraw.Draw(frame).rectangle((4, 20, 4 + round(path.p[step] * (frame.width - 8)), 22), fill="black")
        frames.append(frame.quantize(colors=255, method=Image.Quantize.MEDIANCUT))
        durations.append(2 * frame_ms if number in (0, len(forward) - 1) else frame_ms)
    buffer = io.BytesIO()
    frames[0].save(buffer, format="GIF", save_all=True, append_images=frames[1:], duration=durations, loop=0)
    return buffer.getvalue()


def _check_k(k: int, path: SliderPath) -> None:
    most = min(MAX_SWEEP_K, path.ids.shape[1])
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= most:
        raise ValueError(f"k={k!r}: a sweep file shows 1 to {most} neighbours per row")


def _images(path: SliderPath, steps: list[int], k: int, images: Images) -> dict[int, Image.Image]:
    """Every image the chosen steps show, read once."""
    ids = sorted({int(item) for step in steps for item in path.ids[step, :k]})
    return dict(zip(ids, images(ids)))


def _captions(path: SliderPath, step: int, k: int, caption: Callable[[int], str]) -> list[str]:
    return ranked_captions([caption(int(item)) for item in path.ids[step, :k]], path.values[step, :k], "d")
