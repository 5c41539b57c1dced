"""What a page's layout gives a reader at one window size, measured inside the page
(:data:`LAYOUT_JS`, run by Playwright's ``page.evaluate``) and summarised by :func:`layout_problems`.

The measures are the ones a projector or half a laptop squeezes first: the width of the p player's
slider, how many tiles each neighbour grid shows a row and how many lines each grid caption takes,
where the anchor editors are, and every block of text that wraps (or is cut) in a column narrower
than :data:`MIN_TEXT_CHARS` characters of its own font. A text that fits one line is never a
problem, however narrow its box: a button, a short label.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from .browser import CAPTION, GRID, PLAYER_SLIDER, TILE

# The narrowest column a paragraph may wrap in, in characters of its font ("about 25 characters").
MIN_TEXT_CHARS = 25
MIN_P_WIDTH_PX = 240
MIN_TILES_A_ROW = 3
MAX_CAPTION_LINES = 2

LAYOUT_JS = """() => {
  const canvas = document.createElement('canvas').getContext('2d');
  // The font's width of an average character: of a pangram, as running text has every letter.
  const charWidth = element => {
    const style = getComputedStyle(element);
    canvas.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    return canvas.measureText('the quick brown fox jumps over a lazy dog').width / 41;
  };
  const shown = element => { const box = element.getBoundingClientRect(); return box.width > 0 && box.height > 0; };
  // The lines an element's text takes: the distinct tops of its line boxes (a line's inline parts
  // of other sizes sit within half a line of its top).
  const lines = element => {
    const range = document.createRange();
    range.selectNodeContents(element);
    const tops = [...range.getClientRects()].filter(rect => rect.width > 0).map(rect => rect.top).sort((a, b) => a - b);
    const half = (parseFloat(getComputedStyle(element).fontSize) || 14) * 0.6;
    return tops.filter((top, index) => index === 0 || top - tops[index - 1] > half).length;
  };
  const range = document.querySelector(%(slider)s);
  const editors = [...document.querySelectorAll('textarea[aria-label^="Anchor set "]')].map(editor => {
    const box = editor.getBoundingClientRect();
    return {label: editor.getAttribute('aria-label'), top: Math.round(box.top), bottom: Math.round(box.bottom),
            inSidebar: editor.closest('[data-testid="stSidebar"]') !== null};
  });
  const grids = [...document.querySelectorAll(%(grid)s)].map(grid => {
    const tops = [...grid.querySelectorAll(%(tile)s)].map(tile => Math.round(tile.getBoundingClientRect().top));
    const box = grid.getBoundingClientRect();
    return {title: grid.getAttribute('data-anchordiv-grid'), top: Math.round(box.top), firstRow: tops.filter(top => top === tops[0]).length};
  });
  const captions = [...document.querySelectorAll(%(caption)s)].filter(shown)
    .map(caption => [...caption.children].reduce((sum, line) => sum + lines(line), 0));
  const narrow = [];
  const texts = document.querySelectorAll('p, li, h1, h2, h3, summary, label, [data-testid="stCaptionContainer"], '
    + '[data-testid="stImageCaption"], [data-testid="stMetricLabel"], [data-testid="stMetricValue"], '
    + '[data-testid="stSelectbox"] [data-baseweb="select"] div, input[type="text"], textarea');
  for (const element of texts) {
    if (!shown(element) || element.closest(%(grid)s)) continue;
    const isBox = element.tagName === 'INPUT' || element.tagName === 'TEXTAREA';
    const text = (isBox ? (element.value || element.placeholder) : element.innerText || '').trim();
    if (!text) continue;
    const cut = element.scrollWidth > element.clientWidth + 1 && getComputedStyle(element).overflowX !== 'visible';
    const wraps = !isBox && lines(element) > 1;
    const chars = element.clientWidth / charWidth(element);
    if ((cut || wraps) && chars < %(min_chars)d)
      narrow.push({text: text.slice(0, 60), chars: Math.round(chars * 10) / 10, cut});
  }
  return {pWidth: range ? Math.round(range.getBoundingClientRect().width) : null, grids,
          captionLines: captions.length ? Math.max(...captions) : null, editors, narrow,
          viewport: [window.innerWidth, window.innerHeight]};
}""" % {"min_chars": MIN_TEXT_CHARS, "slider": json.dumps(PLAYER_SLIDER), "grid": json.dumps(GRID),
       "tile": json.dumps(TILE), "caption": json.dumps(CAPTION)}


@dataclass(frozen=True)
class Layout:
    """What :data:`LAYOUT_JS` measured on one page at one window size."""

    p_width: int | None
    grids: list[dict]
    caption_lines: int | None
    editors: list[dict]
    narrow: list[dict]
    viewport: tuple[int, int]

    @classmethod
    def from_page(cls, measured: dict) -> "Layout":
        return cls(measured["pWidth"], measured["grids"], measured["captionLines"], measured["editors"],
                   measured["narrow"], tuple(measured["viewport"]))


def layout_problems(layout: Layout, explore: bool) -> list[str]:
    """What falls short on a page (``explore``: the Explore page, whose player, grids and anchor
    editors are measured too): one line each, empty when nothing does.

    On Explore: the slider at least :data:`MIN_P_WIDTH_PX` wide, every grid at least
    :data:`MIN_TILES_A_ROW` tiles a row, no caption over :data:`MAX_CAPTION_LINES` lines, and both
    anchor editors begun on the first screen (in the sidebar, which scrolls on its own, or above
    the window's bottom). On every page: no text wrapping or cut in under :data:`MIN_TEXT_CHARS`
    characters."""
    problems = [f"text in a column of {item['chars']} characters ({'cut' if item['cut'] else 'wraps'}): "
                f"{item['text']!r}" for item in layout.narrow]
    if not explore:
        return problems
    if layout.p_width is None or layout.p_width < MIN_P_WIDTH_PX:
        problems.append(f"the p slider is {layout.p_width} px wide (at least {MIN_P_WIDTH_PX})")
    problems += [f"{grid['title']} shows {grid['firstRow']} tiles a row (at least {MIN_TILES_A_ROW})"
                 for grid in layout.grids if grid["firstRow"] < MIN_TILES_A_ROW]
    if not layout.grids:
        problems.append("no neighbour grid is drawn")
    if layout.caption_lines is None or layout.caption_lines > MAX_CAPTION_LINES:
        problems.append(f"a grid caption takes {layout.caption_lines} lines (at most {MAX_CAPTION_LINES})")
    height = layout.viewport[1]
    if len(layout.editors) != 2:
        problems.append(f"{len(layout.editors)} anchor editors drawn (two: A and B)")
    problems += [f"{editor['label']} begins at {editor['top']} px, below the first screen ({height} px)"
                 for editor in layout.editors if editor["top"] >= height]
    return problems
