"""What a demo audience sees, in a real browser at two window widths (1500 and 1000 px): on the
Explore (with "Why this neighbour?" and Find anchors open), Compare and Learn pages no text, menu
value or metric is clipped without a way to read it, and nothing runs past
the page's column or makes the page scroll sideways. (The Report page has its own such test in
tests/test_report_page.py.) Skipped without Chromium, as tests/test_browser.py is."""
from __future__ import annotations

import re

import pytest

from test_browser import new_page, page_report, wait_for_grids, wait_until_idle
from test_report_page import PAST_THE_COLUMN_JS

pytestmark = [pytest.mark.slow]

WIDTHS = (1500, 1000)
# Each page: its path, and a text that is on it once its first run has drawn it.
PAGES = {"explore": ("/", "Neighbours"), "compare": ("/compare", "Green frame"),
         "learn": ("/learn", "On the real gallery")}

# Text boxes whose content is cut off by their own box (overflow other than visible, and more content
# than room): captions, Markdown, widget labels, headings, a metric's value, and the value a menu
# shows (the element inside the menu that ends in an ellipsis when cut).
CLIPPED_JS = """() => {
  const clipped = [];
  const menus = [...document.querySelectorAll('[data-testid="stSelectbox"] [data-baseweb="select"] *')]
    .filter(element => getComputedStyle(element).textOverflow === 'ellipsis');
  // A menu drawn as a text box (Streamlit's searchable select) shows its value in an input, which
  // cuts whatever is wider than itself.
  for (const input of document.querySelectorAll('[data-testid="stSelectbox"] input[role="combobox"]')) {
    if (input.getBoundingClientRect().width > 0 && input.scrollWidth > input.clientWidth + 1)
      clipped.push(`menu value: ${input.value.slice(0, 60)}`);
  }
  const boxes = [...document.querySelectorAll(
    '[data-testid="stImageCaption"], [data-anchordiv-caption], [data-testid="stMarkdownContainer"], '
    + '[data-testid="stCaptionContainer"], [data-testid="stMetricValue"], [data-testid="stMetricValue"] *, '
    + '[data-testid="stWidgetLabel"], h1, h2, h3, [data-testid="stExpander"] summary'), ...menus];
  for (const box of boxes) {
    const rect = box.getBoundingClientRect();
    if (rect.width === 0 || rect.height === 0) continue;  // not shown
    const style = getComputedStyle(box);
    const cuts = style.overflowX !== 'visible' || style.overflowY !== 'visible' || style.textOverflow === 'ellipsis';
    if (cuts && (box.scrollWidth > box.clientWidth + 1 || box.scrollHeight > box.clientHeight + 1))
      clipped.push(`${box.getAttribute('data-testid') || box.tagName}: ${box.innerText.slice(0, 60)}`);
  }
  return clipped;
}"""
SIDEWAYS_JS = "() => document.documentElement.scrollWidth - window.innerWidth"
# The top of each neighbour grid's first image (a grid: a list of ten or more captioned images).
# Each grid of the player: its top, its bottom and how many tiles its first row holds.
GRIDS_JS = """() => [...document.querySelectorAll('[data-anchordiv-grid]')].map(grid => {
  const tops = [...grid.querySelectorAll('[data-anchordiv-id]')].map(tile => Math.round(tile.getBoundingClientRect().top));
  const box = grid.getBoundingClientRect();
  return {top: box.top, bottom: box.bottom, firstRow: tops.filter(top => top === tops[0]).length};
})"""


@pytest.mark.parametrize("width", WIDTHS)
def test_no_page_clips_its_text_or_runs_past_its_column(app_url, browser, width, tmp_path):
    url, log_path = app_url
    page = new_page(browser, width, 1400)
    for name, (path, drawn) in PAGES.items():
        page.goto(url.rstrip("/") + path)
        page.get_by_text(drawn).first.wait_for(timeout=180_000)
        wait_until_idle(page)
        if name == "explore":
            wait_for_grids(page, 20)
            for section in ("Why this neighbour?", "Find anchors: suggested terms"):  # their values too
                page.get_by_text(section).first.click()
                wait_until_idle(page)
            page.get_by_text("Anchor divergence", exact=True).first.wait_for(timeout=60_000)
            page.get_by_text("Suggested anchors").first.wait_for(timeout=60_000)
            # Each grid shows at least three tiles a row: cosine's beside the anchor divergence's,
            # level with it, where both fit (1500 px), else below it (1000 px).
            grids = page.evaluate(GRIDS_JS)
            report = f"grids {grids}\n{page_report(page, log_path)}"
            assert len(grids) == 2 and min(grid["firstRow"] for grid in grids) >= 3, report
            beside = abs(grids[0]["top"] - grids[1]["top"]) <= 2
            assert beside == (width == 1500) and (beside or grids[1]["top"] >= grids[0]["bottom"]), report
        page.screenshot(path=str(tmp_path / f"{name}-{width}.png"), full_page=True)
        report = f"{name} at {width} px\n{page_report(page, log_path)}"
        assert page.evaluate(SIDEWAYS_JS) <= 1, report
        assert not page.evaluate(PAST_THE_COLUMN_JS), report
        assert not page.evaluate(CLIPPED_JS), f"{page.evaluate(CLIPPED_JS)}\n{report}"
        assert not page.get_by_text("Traceback").count(), report


# The map's legend entries (Plotly draws one per colour and symbol: "style, role").
LEGEND_JS = """() => [...document.querySelectorAll('.js-plotly-plot .legendtext')].map(text => text.textContent)"""


def test_a_newcomer_types_a_comma_list_and_sees_the_query_on_the_map(app_url, browser, tmp_path):
    """Issue 39's items 2 to 4 where a newcomer meets them, in a 1000 px window: a typed comma list
    becomes anchors with a note and the preset menu says "Your own"; the style preset holds no
    emoji vendor; every divergence reads as a plain non-negative number; the map shows the query
    and its neighbours, coloured by a column with more than one value."""
    url, log_path = app_url
    page = new_page(browser, 1000, 1400)
    page.goto(url)
    wait_for_grids(page, 20)
    wait_until_idle(page)
    styles = page.get_by_role("textbox", name="Anchor set B (style) (one per line)").input_value().splitlines()
    assert styles and not {"google", "twitter"} & set(styles), styles

    objects = page.get_by_role("textbox", name="Anchor set A (object) (one per line)")
    objects.fill("cat, dog, rocket, coffee cup")
    objects.press("Control+Enter")
    page.get_by_text("4 anchors in use").first.wait_for(timeout=60_000)
    wait_until_idle(page)
    report = page_report(page, log_path)
    assert page.get_by_text("split at its commas").count(), report
    preset = page.get_by_role("combobox", name="Preset for A (object)").input_value()
    assert "Your own" in preset, f"{preset}\n{report}"
    captions = " ".join(page.evaluate("() => [...document.querySelectorAll('[data-anchordiv-caption]')]"
                                      ".map(caption => caption.textContent)"))
    assert "d=" in captions and "d=-" not in captions and not re.search(r"\de[-+]\d", captions), captions

    page.get_by_text("UMAP of the geometry").first.click()  # opening it draws the map
    page.wait_for_function(f"() => ({LEGEND_JS})().length > 0", timeout=240_000)
    wait_until_idle(page, 240)
    legend = page.evaluate(LEGEND_JS)
    page.screenshot(path=str(tmp_path / "map-1000.png"), full_page=True)
    report = f"legend {legend}\n{page_report(page, log_path)}"
    assert any(entry.endswith("query") for entry in legend), report  # in the sample, or added as "your query"
    assert any("neighbour" in entry for entry in legend), report
    assert len({entry.split(",")[0] for entry in legend if "gallery" in entry}) > 1, report  # colours
    assert not page.get_by_text("Traceback").count(), report
