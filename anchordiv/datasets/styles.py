"""Styles of the emoji world: the two vendor drawings and renditions made from them.

Every renderer maps one RGBA sprite, uint8 (S, S, 4), to an RGB image, uint8 (S, S, 3), of the
same size (the shipped sprites are 64 x 64). Renditions draw all their randomness from the
``numpy.random.Generator`` they are given, so a fixed seed gives the same bytes on every run
(with the same numpy and Pillow). Internally colours are float32 in [0, 1].
"""
from __future__ import annotations

import hashlib
from typing import Callable

import numpy as np
from PIL import Image, ImageDraw

from .shipped import VENDORS

# Bump when any renderer's output changes, so cached renderings are rebuilt.
RENDERER_VERSION = 1

Renderer = Callable[[np.ndarray, np.random.Generator], np.ndarray]

WHITE = np.ones(3, np.float32)
LUMA = np.array([0.299, 0.587, 0.114], np.float32)


def render(style: str, sprite: np.ndarray, seed: int) -> np.ndarray:
    """``sprite`` (S, S, 4) uint8 RGBA drawn in ``style``, as (S, S, 3) uint8 RGB; deterministic in ``seed``."""
    try:
        renderer = RENDITIONS[style]
    except KeyError:
        if style in VENDORS:
            return _to_uint8(composite(sprite, WHITE))
        raise ValueError(f"unknown style {style!r}; choose from {list(STYLES)}") from None
    return _to_uint8(renderer(sprite, np.random.default_rng(seed)))


def style_seed(emoji_id: str, source: str, style: str) -> int:
    """A seed fixed by what is drawn, so one image never depends on which others are rendered."""
    return int.from_bytes(hashlib.sha256(f"{emoji_id}|{source}|{style}".encode()).digest()[:8], "little")


def composite(sprite: np.ndarray, background: np.ndarray) -> np.ndarray:
    """``sprite`` (S, S, 4) uint8 over ``background`` (3,) or (S, S, 3) float, as (S, S, 3) float32."""
    rgb, alpha = _split(sprite)
    return rgb * alpha + background * (1.0 - alpha)


def pencil_sketch(sprite: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Graphite lines and hatching on grainy off-white paper, no colour.

    Lines come from a colour-dodge of the grey image with its blurred negative (the usual
    photo-to-sketch trick); hatching at 45 degrees, crossed in the darkest areas, gives tone.
    """
    size = sprite.shape[0]
    grey = composite(sprite, WHITE) @ LUMA
    lines = np.clip(grey / np.maximum(1.0 - _blur(1.0 - grey, 2.0), 1e-3), 0.0, 1.0) ** 4
    tone = _blur(grey, 1.0)
    y, x = np.mgrid[0:size, 0:size]
    wobble = 1.5 * _smooth_noise(rng, size, 4)
    hatch = ((x + y + wobble + rng.integers(4)) % 4 < 1.2) * np.clip((0.85 - tone) * 1.6, 0.0, 0.8)
    cross = ((x - y + wobble + rng.integers(4)) % 4 < 1.2) * np.clip((0.5 - tone) * 2.0, 0.0, 0.8)
    graphite = lines * (1.0 - hatch) * (1.0 - cross)
    paper = np.array([0.97, 0.96, 0.92], np.float32) * (1.0 - 0.05 * np.abs(rng.standard_normal((size, size, 1))))
    pencil = np.array([0.22, 0.22, 0.26], np.float32)
    return paper * graphite[..., None] + pencil * (1.0 - graphite[..., None])


def pixel_art(sprite: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A 16 x 16 sprite with a hard outline and a few flat colours, blown up 4x on a flat backdrop."""
    size = sprite.shape[0]
    grid = 16
    small = np.asarray(Image.fromarray(sprite, "RGBA").resize((grid, grid), Image.BOX))
    inside = small[..., 3] >= 128
    # A 12-colour median-cut palette without dithering: the flat colours of game sprites.
    colours = Image.fromarray(np.ascontiguousarray(small[..., :3])).quantize(12, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    flat = np.asarray(colours.convert("RGB"), np.float32) / 255.0
    ring = _dilate(inside) & ~inside
    backdrop = _PIXEL_BACKDROPS[rng.integers(len(_PIXEL_BACKDROPS))]
    out = np.where(inside[..., None], flat, backdrop)
    out[ring] = (0.1, 0.07, 0.16)
    return np.repeat(np.repeat(out, size // grid, axis=0), size // grid, axis=1)


def oil_painting(sprite: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Thick, directional brush strokes over a painted ground, lit from the top left like impasto.

    Strokes follow the edges (perpendicular to the luminance gradient) and take the colour
    under their centre, so shapes survive while the surface reads as paint.
    """
    size = sprite.shape[0]
    scale = 4  # strokes are drawn 4x larger and shrunk, which anti-aliases them
    ground = _OIL_GROUNDS[rng.integers(len(_OIL_GROUNDS))] * (1.0 + 0.15 * _smooth_noise(rng, size, 3)[..., None])
    source = _blur(composite(sprite, ground), 0.7)
    luma = _blur(source @ LUMA, 1.5)
    gy, gx = np.gradient(luma)
    angle = np.arctan2(gy, gx) + np.pi / 2
    flat = np.hypot(gx, gy) < 0.01
    angle[flat] = np.pi / 4 + 0.6 * _smooth_noise(rng, size, 3)[flat]
    canvas = Image.fromarray(_to_uint8(_blur(source, 2.0))).resize((size * scale, size * scale), Image.BILINEAR)
    draw = ImageDraw.Draw(canvas)
    count = size * size // 4
    ys, xs = rng.uniform(0, size - 1, (2, count))
    rows, cols = np.rint(ys).astype(int), np.rint(xs).astype(int)
    reach = rng.uniform(2.0, 4.5, count)
    dx, dy = np.cos(angle[rows, cols]) * reach, np.sin(angle[rows, cols]) * reach
    ends = (np.stack([xs - dx, ys - dy, xs + dx, ys + dy], axis=1) * scale).tolist()
    colours = _to_uint8(source[rows, cols] + rng.normal(0.0, 0.035, (count, 3))).tolist()
    widths = rng.integers(scale, 3 * scale, count).tolist()
    for end, colour, width in zip(ends, colours, widths):
        draw.line(end, fill=tuple(colour), width=width)
    painted = np.asarray(canvas.resize((size, size), Image.LANCZOS), np.float32) / 255.0
    # Relief: light from the top left on the paint's own luminance ridges.
    relief = painted @ LUMA
    slope = np.diff(relief, axis=0, prepend=relief[:1]) + np.diff(relief, axis=1, prepend=relief[:, :1])
    light = 1.0 + 1.6 * slope
    saturated = luma_mix(painted, 1.35)
    return saturated * np.clip(light, 0.7, 1.3)[..., None]


def neon_on_black(sprite: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Glowing neon tubes tracing the outline (one colour) and inner edges (another) on a dark wall."""
    size = sprite.shape[0]
    rgb, alpha = _split(sprite)
    alpha = alpha[..., 0]
    outline = _edges(_blur(alpha, 0.6))
    inner = _edges(_blur((rgb @ LUMA) * alpha, 0.6)) * _erode(alpha > 0.5, 2)
    tube_a, tube_b = rng.choice(len(_NEON), 2, replace=False)
    light = (np.clip(outline * 2.5, 0, 1)[..., None] * _NEON[tube_a]
             + np.clip(inner * 2.0, 0, 1)[..., None] * _NEON[tube_b])
    core = np.clip(np.max(light, axis=2) - 0.75, 0.0, 1.0)[..., None] * 2.5
    glow = 1.1 * _blur(light, 1.5) + 0.9 * _blur(light, 4.0)
    wall = np.array([0.03, 0.02, 0.06], np.float32) * (1.0 + 0.5 * _smooth_noise(rng, size, 4)[..., None])
    return wall + light + glow + core


def watercolor_painting(sprite: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Soft, see-through washes with wobbly bleeding edges, pigment pooled at the rims, on textured paper.

    Colour is blurred and pushed through a smooth random displacement (the bleed), lightened
    (the washes are transparent), darkened where washes meet (pigment collects at a drying
    edge) and speckled by the paper grain.
    """
    size = sprite.shape[0]
    paper_tone = np.array([1.0, 0.99, 0.96], np.float32)
    y, x = np.mgrid[0:size, 0:size].astype(np.float32)
    shift_y, shift_x = 1.1 * _smooth_noise(rng, size, 6), 1.1 * _smooth_noise(rng, size, 6)
    bled = _sample(_blur(_premultiplied(sprite), 1.0), y + shift_y, x + shift_x)
    alpha = np.clip(bled[..., 3:] * 1.2, 0.0, 1.0)
    colour = bled[..., :3] / np.maximum(bled[..., 3:], 1e-3)
    # Uneven pigment density inside each wash: the blotchiness of wet-in-wet painting.
    density = 0.62 * (1.0 + 0.22 * _smooth_noise(rng, size, 5))[..., None]
    wash = 1.0 - density * (1.0 - luma_mix(colour, 1.3))
    rims = np.clip(_edges(_blur(wash @ LUMA, 0.7)) * 4.0 + _edges(alpha[..., 0]) * 1.2, 0.0, 1.0)
    pigment = wash * (1.0 - 0.5 * rims[..., None])
    grain = 1.0 - 0.05 * np.abs(_blur(rng.standard_normal((size, size)).astype(np.float32), 0.6))[..., None]
    paper = paper_tone * (1.0 - 0.015 * _smooth_noise(rng, size, 8)[..., None])
    return (pigment * alpha + paper * (1.0 - alpha)) * grain


def luma_mix(rgb: np.ndarray, saturation: float) -> np.ndarray:
    """``rgb`` (..., 3) with its saturation scaled by ``saturation`` around its own luminance."""
    grey = (rgb @ LUMA)[..., None]
    return grey + saturation * (rgb - grey)


def _split(sprite: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """RGB (S, S, 3) and alpha (S, S, 1) of a uint8 RGBA sprite, as float32 in [0, 1]."""
    values = sprite.astype(np.float32) / 255.0
    return values[..., :3], values[..., 3:]


def _premultiplied(sprite: np.ndarray) -> np.ndarray:
    """RGBA (S, S, 4) float32 with colour multiplied by alpha, so blurring does not bleed hidden colour."""
    rgb, alpha = _split(sprite)
    return np.concatenate([rgb * alpha, alpha], axis=2)


def _sample(image: np.ndarray, y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Bilinear lookup of ``image`` (S, S, C) at float coordinates ``y``, ``x`` (S, S), clamped to the border."""
    size = image.shape[0]
    y, x = np.clip(y, 0, size - 1.001), np.clip(x, 0, size - 1.001)
    y0, x0 = y.astype(int), x.astype(int)
    fy, fx = (y - y0)[..., None], (x - x0)[..., None]
    top = image[y0, x0] * (1 - fx) + image[y0, x0 + 1] * fx
    bottom = image[y0 + 1, x0] * (1 - fx) + image[y0 + 1, x0 + 1] * fx
    return top * (1 - fy) + bottom * fy


def _to_uint8(image: np.ndarray) -> np.ndarray:
    """Float image in [0, 1] (clipped) to uint8, rounding to nearest."""
    return (np.clip(image, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


def _blur(image: np.ndarray, sigma: float) -> np.ndarray:
    """Separable Gaussian blur (sigma in pixels) over the first two axes, edges reflected."""
    radius = max(1, int(np.ceil(3 * sigma)))
    taps = np.exp(-0.5 * (np.arange(-radius, radius + 1) / sigma) ** 2).astype(np.float32)
    taps /= taps.sum()
    out = image.astype(np.float32)
    for axis in (0, 1):
        pad = [(0, 0)] * out.ndim
        pad[axis] = (radius, radius)
        padded = np.pad(out, pad, mode="reflect")
        length = out.shape[axis]
        out = sum(w * np.take(padded, np.arange(i, i + length), axis=axis) for i, w in enumerate(taps))
    return out


def _edges(image: np.ndarray) -> np.ndarray:
    """Sobel gradient magnitude of a (S, S) image, roughly in [0, 1] for a 0-to-1 step."""
    padded = np.pad(image, 1, mode="edge")
    gx = (padded[:-2, 2:] + 2 * padded[1:-1, 2:] + padded[2:, 2:] - padded[:-2, :-2] - 2 * padded[1:-1, :-2] - padded[2:, :-2]) / 4
    gy = (padded[2:, :-2] + 2 * padded[2:, 1:-1] + padded[2:, 2:] - padded[:-2, :-2] - 2 * padded[:-2, 1:-1] - padded[:-2, 2:]) / 4
    return np.hypot(gx, gy)


def _dilate(mask: np.ndarray) -> np.ndarray:
    """``mask`` grown by one pixel in the four axis directions."""
    grown = mask.copy()
    grown[1:] |= mask[:-1]
    grown[:-1] |= mask[1:]
    grown[:, 1:] |= mask[:, :-1]
    grown[:, :-1] |= mask[:, 1:]
    return grown


def _erode(mask: np.ndarray, steps: int) -> np.ndarray:
    """``mask`` shrunk by ``steps`` pixels, as float32 0/1."""
    for _ in range(steps):
        mask = ~_dilate(~mask)
    return mask.astype(np.float32)


def _smooth_noise(rng: np.random.Generator, size: int, cells: int) -> np.ndarray:
    """Smooth random field of shape (size, size), about unit scale, varying over ``size / cells`` pixels."""
    coarse = rng.standard_normal((cells + 1, cells + 1)).astype(np.float32)
    return np.asarray(Image.fromarray(coarse, "F").resize((size, size), Image.BICUBIC))


_PIXEL_BACKDROPS = np.array([(0.55, 0.78, 0.95), (0.62, 0.88, 0.62), (0.98, 0.85, 0.55), (0.85, 0.75, 0.95)], np.float32)
_OIL_GROUNDS = np.array([(0.55, 0.42, 0.28), (0.25, 0.38, 0.45), (0.42, 0.48, 0.30), (0.55, 0.30, 0.25)], np.float32)
_NEON = np.array([(0.1, 0.95, 1.0), (1.0, 0.15, 0.85), (0.45, 1.0, 0.15), (1.0, 0.55, 0.1), (0.55, 0.35, 1.0)], np.float32)

RENDITIONS: dict[str, Renderer] = {
    "pencil sketch": pencil_sketch,
    "pixel art": pixel_art,
    "oil painting": oil_painting,
    "neon on black": neon_on_black,
    "watercolor painting": watercolor_painting,
}
STYLES: tuple[str, ...] = VENDORS + tuple(RENDITIONS)
