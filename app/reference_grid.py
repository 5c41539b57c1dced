"""A minimal Streamlit app shaped like the explorer's result view: the yardstick of
``python -m anchordiv explorer-bench --browser``.

A p slider (key "p", 0..1, step 0.05) and two ``st.image`` grids of 10 captioned 96x96 images,
side by side: as plain as Streamlit allows. The solid-colour tiles are drawn and encoded as PNG
once per server (``st.cache_resource``), so a run only picks ten of them for each grid, builds
their captions and hands Streamlit the bytes; its timings are what Streamlit itself costs for this
page, and the explorer's excess over them is its own. p turns both grids' hues (grid A one way,
grid B the other), so the tiles and captions change whenever p moves.

Each run is timed by :mod:`step_clock` (app "reference"), as the explorer's are, when the
benchmark starts the server with ``ANCHORDIV_STEP_LOG``.
"""
from __future__ import annotations

import colorsys
import io

import streamlit as st
from PIL import Image, ImageDraw

# From this script's own folder, which `streamlit run` makes importable: as
# anchordiv.app.step_clock it would first import anchordiv, and torch with it (nearly 4 s on 2
# cores), which this app's start would then count.
import step_clock

TILE = 96  # the explorer's GRID_WIDTH
HUES = 40  # tiles around the colour wheel; one step of p turns each grid by one tile
LABEL = "p: weight of grid A (reference)"


def tile_png(hue_step: int) -> bytes:
    """A solid tile of hue ``hue_step / HUES`` with a disc of the opposite colour, as PNG: a
    stand-in for an emoji image."""
    red, green, blue = (round(255 * c) for c in colorsys.hsv_to_rgb(hue_step / HUES, 0.6, 0.9))
    image = Image.new("RGB", (TILE, TILE), (red, green, blue))
    inset = 12 + 3 * (hue_step % 5)
    ImageDraw.Draw(image).ellipse((inset, inset, TILE - inset, TILE - inset), fill=(255 - red, 255 - green, 255 - blue))
    png = io.BytesIO()
    image.save(png, format="PNG")
    return png.getvalue()


@st.cache_resource
def tiles() -> list[bytes]:
    """Every tile as PNG, indexed by hue step: drawn and encoded once per server."""
    return [tile_png(hue_step) for hue_step in range(HUES)]


def draw_grid(column, title: str, turn: int, pngs: list[bytes]) -> None:
    """Ten tiles a tenth of the wheel apart, starting ``turn`` hue steps round."""
    hue_steps = [(turn + i * HUES // 10) % HUES for i in range(10)]
    with step_clock.stage("captions and tables"):
        captions = [f"{i + 1}. hue {hue_step / HUES:.3f}" for i, hue_step in enumerate(hue_steps)]
    column.markdown(f"**{title}**")
    with step_clock.stage("image encoding"):
        # PNG as given: with the default "auto" Streamlit would re-encode each tile as JPEG.
        column.image([pngs[hue_step] for hue_step in hue_steps], caption=captions, width=TILE, output_format="PNG")


with step_clock.timed_run("reference"):
    st.set_page_config(page_title="anchordiv reference grid", layout="wide")
    st.title("Reference grid")
    p = st.slider(LABEL, 0.0, 1.0, 0.5, 0.05, key="p")
    turn = round(p * HUES / 2)  # half a turn over p's range, as the hue offset p / 2
    left, right = st.columns(2)
    draw_grid(left, "Grid A", turn, tiles())
    draw_grid(right, "Grid B", -turn, tiles())
