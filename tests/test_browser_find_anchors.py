"""Find anchors in a real browser: headless Chromium marks five neighbours of one style (a click on
each image's toggle in the p player), learns a
geometry, uses it as anchor set A and sees the grid change; the page's link, opened in a fresh
browser context, shows the same grid. Skipped without Chromium, as tests/test_browser.py is."""
from __future__ import annotations

import pytest

from anchordiv.benchmarks.browser import GRID, MARK, TILE
from test_browser import neighbour_captions, open_explorer, page_report, wait_for_change, wait_until_idle

pytestmark = [pytest.mark.slow]

QUERY, K, STYLE = 7, 20, "oil painting"  # smiling face with halo, an oil painting


def mark(page, text: str, count: int, log_path) -> None:
    """Click the "like the query" toggle on ``count`` images of the player's grids whose names hold
    ``text`` (a tile's tooltip: its caption may cut the name; one run each); Find anchors' "Like the
    query" box then lists them."""
    for _ in range(count):
        toggle = page.locator(f'{MARK}[aria-pressed="false"]')
        tile = page.locator(f'{GRID} {TILE}[title*="{text}"]').filter(has=toggle).first
        tile.locator(MARK).click()
        wait_until_idle(page)
    marked = page.locator(f'{MARK}[aria-pressed="true"]').evaluate_all(
        "buttons => new Set(buttons.map(button => button.getAttribute('data-anchordiv-mark'))).size")
    chosen = page.locator(".st-key-find_like").inner_text()
    assert marked == count and chosen.count(text) >= count, f"{marked}: {chosen}\n{page_report(page, log_path)}"


def test_browser_learns_a_geometry_from_marks_uses_it_as_a_and_its_link_reopens_it(app_url, browser, tmp_path):
    url, log_path = app_url
    page = open_explorer(browser, f"{url}/?query={QUERY}&k={K}", log_path)
    page.get_by_text("Find anchors: suggested terms").first.click()  # collapsed until opened
    page.get_by_text("Suggested anchors").first.wait_for(timeout=60_000)
    mark(page, STYLE, 5, log_path)
    page.locator(".st-key-find_learn button").click()
    page.get_by_text("Learned from the marks of 1 query").first.wait_for(timeout=120_000)
    wait_until_idle(page)
    body = page.locator("body").inner_text()
    explanation = body[body.index("Clear all marks"):body.index("Learned from the marks")]
    assert "weight" in explanation and STYLE in explanation, page_report(page, log_path)
    page.screenshot(path=str(tmp_path / "learned.png"), full_page=True)

    before = neighbour_captions(page)
    page.locator(".st-key-find_learned_a button").click()
    page.wait_for_url("**anchors_a=*", timeout=60_000)
    wait_until_idle(page)
    after = wait_for_change(page, before)
    assert after[:K] != before[:K], f"the grid never changed\n{page_report(page, log_path)}"
    box = page.get_by_role("textbox", name="Anchor set A (object) (one per line)")
    assert f"\n{STYLE}\t" in "\n" + box.input_value(), page_report(page, log_path)
    assert not page.get_by_text("Traceback").count(), page_report(page, log_path)
    link = page.url

    fresh = open_explorer(browser, link, log_path)
    assert fresh.get_by_role("textbox", name="Anchor set A (object) (one per line)").input_value() == \
        box.input_value(), page_report(fresh, log_path)
    assert neighbour_captions(fresh)[:K] == after[:K], page_report(fresh, log_path)
    fresh.screenshot(path=str(tmp_path / "reopened.png"), full_page=True)
