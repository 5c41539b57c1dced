"""A minimal Streamlit app shaped like the explorer's result view: the yardstick of
``python -m anchordiv explorer-bench --browser``.

A p slider (key "p", 0..1, step 0.05) and two ``st.image`` grids of 10 captioned 96x96 images,
side by side. Nothing is cached or computed beyond drawing the solid-colour tiles, so its
timings are what Streamlit itself costs for this page; the explorer's excess over them is its own.
The colours and captions depend on p, so the grids change whenever p moves.
"""
from __future__ import annotations

import colorsys

import streamlit as st
from PIL import Image, ImageDraw

TILE = 96  # the explorer's GRID_WIDTH
LABEL = "p: weight of grid A (reference)"


def tile(hue: float, mark: int) -> Image.Image:
    """A solid tile with a lighter disc, its hue from ``hue``: a stand-in for an emoji image."""
    red, green, blue = (round(255 * c) for c in colorsys.hsv_to_rgb(hue % 1.0, 0.6, 0.9))
    image = Image.new("RGB", (TILE, TILE), (red, green, blue))
    inset = 12 + 3 * (mark % 5)
    ImageDraw.Draw(image).ellipse((inset, inset, TILE - inset, TILE - inset), fill=(255 - red, 255 - green, 255 - blue))
    return image


def draw_grid(column, title: str, p: float, offset: float) -> None:
    hues = [offset + i / 10 + p / 2 for i in range(10)]
    column.markdown(f"**{title}**")
    column.image([tile(hue, i) for i, hue in enumerate(hues)],
                 caption=[f"{i + 1}. hue {hue % 1.0:.3f}" for i, hue in enumerate(hues)], width=TILE)


st.set_page_config(page_title="anchordiv reference grid", layout="wide")
st.title("Reference grid")
p = st.slider(LABEL, 0.0, 1.0, 0.5, 0.05, key="p")
left, right = st.columns(2)
draw_grid(left, "Grid A", p, 0.0)
draw_grid(right, "Grid B", 1.0 - p, 0.5)
