"""The comparison figure's layout, measured from the drawn figure (anchordiv.figure.draw_figure):
with deliberately long neighbour captions no caption runs into another text or past its thumbnail,
a shortened caption keeps its full text in the SVG (as the <title> of its group), and the footer
names only what the figure shows (ITI only with an ITI column).

Runs on a small slice of the built-in world (the `library` fixture of conftest.py)."""
from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ElementTree

import pytest

from anchordiv import figure as fg
from helpers import SVG, needs_builtin

pytestmark = needs_builtin
COLUMNS = ["cosine", "iti", "A", "B", "mix p=0.3 model=gmm s=20"]
# Long captions of every kind: many short words, one word longer than a thumbnail, words and a long word.
LONG_NAMES = ["new moon with face and a rather long description of it",
              "balance_scale_drawn_as_one_very_long_file_name.png",
              "smiling face with open mouth and smiling eyes", "ok", "kissing face with closed eyes and a heart"]
CAPTION = re.compile(r"^\d+\. ")  # a neighbour's caption starts with its rank


def with_long_captions(result: fg.CompareResult) -> fg.CompareResult:
    """``result`` whose neighbours are named by :data:`LONG_NAMES` (by their rank in the cell)."""
    name = result.gallery.name_column
    tables = [[table.assign(**{name: LONG_NAMES[:len(table)]}) for table in row] for row in result.tables]
    return dataclasses.replace(result, tables=tables)


@pytest.fixture(scope="module")
def long_result(library, preset_texts):
    """Three queries x five geometries, top-5, every neighbour named by a long caption."""
    result = fg.compare(library["gallery"], library["encoder"], ["#0", "#40", "text:a dog in watercolor"], COLUMNS,
                        *preset_texts, k=5)
    return with_long_captions(result)


def window_boxes(figure) -> list[tuple[str, object]]:
    """Every non-empty text of ``figure`` with its box on the page (pixels), as drawn."""
    renderer = figure.canvas.get_renderer()
    found = figure.findobj(lambda artist: hasattr(artist, "get_text") and hasattr(artist, "get_window_extent"))
    return [(text.get_text(), text.get_window_extent(renderer)) for text in found
            if text.get_visible() and text.get_text().strip()]


def thumbnail_boxes(figure) -> list[object]:
    renderer = figure.canvas.get_renderer()
    return [image.get_window_extent(renderer) for image in figure.axes[0].get_images()]


def overlap(one, other) -> bool:
    """Whether two boxes share more than a hairline (a tenth of a pixel)."""
    return (min(one.x1, other.x1) - max(one.x0, other.x0) > 0.1
            and min(one.y1, other.y1) - max(one.y0, other.y0) > 0.1)


@pytest.mark.parametrize("dpi", [100, 200])  # matplotlib's default and the PNG download's: glyphs hinted to each
def test_no_caption_overlaps_another_text_or_leaves_its_thumbnail(long_result, dpi):
    figure = fg.draw_figure(long_result)
    figure.set_dpi(dpi)
    boxes = window_boxes(figure)
    captions = [(text, box) for text, box in boxes if CAPTION.match(text)]
    assert len(captions) == 3 * 5 * 5
    thumbnails = thumbnail_boxes(figure)
    for text, box in captions:
        others = [other for other in boxes if other[1] is not box]
        assert not [other for other, other_box in others if overlap(box, other_box)], f"{text!r} runs into a text"
        # Its thumbnail is the image right above it that starts where it starts.
        above = [thumb for thumb in thumbnails if abs(thumb.x0 - box.x0) < 2 and thumb.y0 >= box.y1 - 0.1]
        assert above, f"{text!r} is under no thumbnail"
        thumb = min(above, key=lambda thumb: thumb.y0 - box.y1)
        assert box.x1 <= thumb.x1 + 0.5, \
            f"{text!r} is wider than its thumbnail ({box.width:.1f} > {thumb.width:.1f} px)"


def test_a_shortened_caption_keeps_its_full_text_in_the_svg(long_result):
    root = ElementTree.fromstring(fg.render_figure(long_result, "svg"))
    titled = {}
    for group in root.iter(f"{SVG}g"):
        title = group.find(f"{SVG}title")
        if title is not None:
            titled[title.text] = " ".join("".join(text.itertext()) for text in group.iter(f"{SVG}text"))
    drawn = " ".join(" ".join("".join(text.itertext()) for text in root.iter(f"{SVG}text")).split())
    shortened = [name for name in LONG_NAMES if name not in drawn]
    assert shortened, "no caption was shortened: the test has no long caption"
    for rank, name in enumerate(LONG_NAMES, start=1):
        if name in shortened:
            full = f"{rank}. {name}"
            assert full in titled, f"the full caption {full!r} is not in the SVG"
            assert titled[full].endswith("…")


@pytest.mark.parametrize("text, lines, expected, shortened", [
    ("new moon with face", 2, "new moon\nwith face", False),
    ("balance_scale_drawn", 2, "balance_sc\nale_drawn", False),  # a word wider than a line is broken
    ("3. balance_scale_drawn_as_a_file", 2, "3. balance\n_scale_dr…", True),  # ... from where the line has room
    ("one two three four five", 1, "one two…", True), ("  spaced \n\t out ", 1, "spaced out", False),
])
def test_a_text_is_fitted_in_lines_that_each_fit(text, lines, expected, shortened):
    fitted = fg.fit_lines(text, lambda line: len(line) <= 10, lines)
    assert fitted == (expected, " ".join(text.split()), shortened)


def footer_text(result: fg.CompareResult) -> str:
    root = ElementTree.fromstring(fg.render_figure(result, "svg"))
    return " ".join("".join(text.itertext()) for text in root.iter(f"{SVG}text"))


@pytest.mark.parametrize("columns, iti", [(["cosine", "A", "mix p=0.5"], False), (["cosine", "iti"], True),
                                          (["B"], False)])
def test_the_footer_mentions_iti_only_with_an_iti_column(library, preset_texts, columns, iti):
    result = fg.compare(library["gallery"], library["encoder"], ["#3"], columns, *preset_texts, k=2)
    assert any("ITI" in line for line in result.settings.lines()) == iti
    assert ("ITI over" in footer_text(result)) == iti
