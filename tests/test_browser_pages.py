"""What a demo audience sees, in a real browser at the window sizes people present at (1500×1000,
1280×720 and a projector's 1000×800): on the Explore page the p slider at least 240 px wide,
every neighbour grid three tiles a row or more, captions of two lines at most and both anchor
editors on the first screen (:mod:`anchordiv.benchmarks.layout`); on every page no text wrapping in
a column under about 25 characters; on the Explore (with "Why this neighbour?" and Find anchors
open), Compare and Learn pages no text, menu value or metric clipped without a way to read it, and
nothing running past the page's column or making the page scroll sideways. (The Report page has
its own such test of its columns in tests/test_report_page.py.) Skipped without Chromium, as
tests/test_browser.py is."""
from __future__ import annotations

import re

import pytest

from anchordiv.benchmarks.browser import CAPTION
from anchordiv.benchmarks.layout import LAYOUT_JS, Layout, layout_problems
from test_browser import new_page, page_report, wait_for_grids, wait_until_idle
from test_report_page import PAST_THE_COLUMN_JS

pytestmark = [pytest.mark.slow]

SIZES = ((1500, 1000), (1280, 720), (1000, 800))
# Each page: its path, and a text that is on it once its first run has drawn it.
PAGES = {"explore": ("/", "Neighbours"), "compare": ("/compare", "Green frame"),
         "learn": ("/learn", "On the real gallery"), "report": ("/report", "At a glance")}

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
    '[data-testid="stImageCaption"], """ + CAPTION + """, [data-testid="stMarkdownContainer"], '
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


@pytest.mark.parametrize("width,height", SIZES)
def test_every_page_keeps_its_text_readable_and_explore_its_first_screen(app_url, browser, width, height, tmp_path):
    url, log_path = app_url
    page = new_page(browser, width, height)
    for name, (path, drawn) in PAGES.items():
        page.goto(url.rstrip("/") + path)
        page.get_by_text(drawn).first.wait_for(timeout=180_000)
        wait_until_idle(page)
        if name == "explore":
            wait_for_grids(page, 20)
        layout = Layout.from_page(page.evaluate(LAYOUT_JS))  # the first screen, before anything is opened
        page.screenshot(path=str(tmp_path / f"{name}-{width}x{height}.png"))
        report = f"{name} at {width}×{height}: {layout}\n{page_report(page, log_path)}"
        assert not layout_problems(layout, explore=name == "explore"), f"{layout_problems(layout, name == 'explore')}\n{report}"
        if name == "report":
            continue  # its columns: tests/test_report_page.py
        if name == "explore":
            # Cosine's grid beside the anchor divergence's, level with it, where both fit with a p
            # slider of 240 px (1500 px), else below it.
            grids = layout.grids
            assert len(grids) == 2, report
            assert (abs(grids[0]["top"] - grids[1]["top"]) <= 2) == (width == 1500), report
            for section in ("Why this neighbour?", "Find anchors: suggested terms"):  # their values too
                page.get_by_text(section).first.click()
                wait_until_idle(page)
            page.get_by_text("Anchor divergence", exact=True).first.wait_for(timeout=60_000)
            page.get_by_text("Suggested anchors").first.wait_for(timeout=60_000)
        page.screenshot(path=str(tmp_path / f"{name}-{width}x{height}-whole.png"), full_page=True)
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
    captions = " ".join(page.locator(CAPTION).all_text_contents())
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
