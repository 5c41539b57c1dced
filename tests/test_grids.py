"""Captions of the PNG neighbour grids (explorer downloads, the reproduction report): broken between
words into lines that fit the cell, never cut inside a word that a line could hold."""
from __future__ import annotations

import pytest
from PIL import Image, ImageDraw

from anchordiv.grids import CAPTION_LINES, LINE_HEIGHT, caption_lines, grid_image

WIDTH = 120  # a 128 px cell's text width


@pytest.fixture(scope="module")
def draw():
    return ImageDraw.Draw(Image.new("RGB", (8, 8)))


def words_of(lines: list[str]) -> list[str]:
    return " ".join(lines).split()


def test_a_caption_that_fits_is_whole_and_every_line_fits(draw):
    caption = "neighbours of smiling face with halo · google"
    lines = caption_lines(draw, caption, WIDTH)
    assert len(lines) > 1 and words_of(lines) == caption.split()
    assert all(draw.textlength(line) <= WIDTH for line in lines)


def test_a_long_name_ends_at_a_whole_word_and_its_value_line_stays(draw):
    name = "3. smiling face with open mouth and tightly-closed eyes · watercolor painting"
    lines = caption_lines(draw, f"{name}\nd=0.23", WIDTH)
    assert len(lines) == CAPTION_LINES and lines[-1] == "d=0.23"
    shown = words_of(lines[:-1])
    assert shown[-1].endswith("…")
    kept = [*shown[:-1], shown[-1].removesuffix("…")]
    assert kept == name.split()[:len(kept)], "cut inside a word"
    assert all(draw.textlength(line) <= WIDTH for line in lines)


def test_only_a_word_wider_than_a_line_is_cut_inside(draw):
    [line] = caption_lines(draw, "x" * 60, WIDTH)
    assert line.endswith("…") and set(line[:-1]) == {"x"} and draw.textlength(line) <= WIDTH


def test_the_grid_leaves_room_for_every_caption_line():
    image = Image.new("RGB", (20, 20), "red")
    canvas = grid_image([image] * 3, ["a caption long enough to take three lines under the image"] * 3, columns=3)
    assert canvas.size == (3 * 128, 128 + CAPTION_LINES * LINE_HEIGHT + 4)


@pytest.mark.parametrize("value, divergence, shown", [
    (-9.54e-07, True, "0"), (3e-5, True, "0"), (-0.02, True, "0"), (0.000123, True, "0.000123"),
    (0.5, True, "0.5"), (12.3456, True, "12.3"), (1234.5, True, "1,234"), (-0.25, False, "-0.25"),
    (2e-5, False, "0"), (0.98765, False, "0.988"),
])
def test_values_read_as_people_read_them(value, divergence, shown):
    from anchordiv.grids import readable_value, shown_divergences

    assert readable_value(value, divergence) == shown and "e" not in shown
    if divergence:
        assert shown_divergences([value])[0] == (0.0 if shown == "0" else value)
