"""The explorer in a real browser: headless system Chromium driven by Playwright.

Drives the explorer server every browser test shares (``app_url`` in tests/conftest.py:
``streamlit run app/streamlit_app.py`` on a free localhost port, small gallery, private cache):
types anchors, moves the p slider, checks that the neighbour grid changes, and saves screenshots
in the test's own temporary folder. Skipped, with the reason, when Chromium or
the playwright package is missing. Needs: ``apt-get install -y chromium`` and ``pip install playwright``
(never ``playwright install``: the system Chromium is used).
"""
from __future__ import annotations

import re
import time
import weakref
from pathlib import Path

import numpy as np
import pytest

from anchordiv.benchmarks.browser import (AD_GRID, CAPTION, CAPTIONS_AT_LEAST, CAPTIONS_CHANGED, ERROR_BOXES, NAV,
                                          PLAYER_SLIDER, QUERY_CAPTION, REPORTING, SHOWN_P, TILE, TITLED_GRID, VIEWPORT,
                                          explorer_env, streamlit_server, wait_healthy)
from anchordiv.benchmarks.play_frames import PLAY_FRAMES_JS, summarise
from anchordiv.benchmarks.page_traffic import PageTraffic

ROOT = Path(__file__).resolve().parents[1]
STARTUP_SECONDS = 240

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def store_app_url(app_url, tmp_path_factory):
    """A second server, started with a data root that holds one small gallery store (the first has
    no data root: one of its tests checks what a server without one says), on the first's cache."""
    workdir = tmp_path_factory.mktemp("browser-store")
    env = {**explorer_env(app_url[1].parent, split="heldout", limit=96),
           "ANCHORDIV_DATA_ROOTS": str(small_store(workdir / "data", markup_name=True))}
    with streamlit_server(ROOT / "app" / "streamlit_app.py", env, workdir / "streamlit.log") as (url, process, log):
        wait_healthy(url, process, log, seconds=60)
        yield url, log


HOSTILE_NAME = "<img src=x onerror=alert(1)>"


def small_store(root: Path, markup_name: bool = False) -> Path:
    """``root`` with 30 coloured squares (and, with ``markup_name``, one more red square named as
    markup, :data:`HOSTILE_NAME`) in images/, and their store (the built-in model) in stores/shapes."""
    from PIL import Image

    from anchordiv.embeddings import embed_folder_to_store
    from anchordiv.encoders import load_encoder

    for label, colour in (("red", (220, 20, 20)), ("blue", (20, 20, 220)), ("green", (20, 200, 20))):
        (root / "images" / label).mkdir(parents=True)
        for i in range(10):
            Image.new("RGB", (40 + 2 * i, 40), tuple(max(0, c - 12 * i) for c in colour)).save(
                root / "images" / label / f"{label}-{i}.png")
    if markup_name:  # a copy of red-0 named as markup: red-0's nearest neighbour, shown as the characters it is
        Image.new("RGB", (40, 40), (220, 20, 20)).save(root / "images" / "red" / f"{HOSTILE_NAME}.png")
    # Labels for the red squares only (issue 51): the others keep their folder label.
    (root / "images" / "red-styles.csv").write_text(
        "path,style\n" + "".join(f"red/red-{i}.png,{('flat', 'faded')[i % 2]}\n" for i in range(10)))
    embed_folder_to_store(root / "images", load_encoder("builtin", device="cpu"), root / "stores" / "shapes",
                          shard_rows=8)
    return root


def neighbour_captions(page) -> list[str]:
    """Captions of the neighbour grids, the anchor-divergence grid first (the p player draws them
    all, each caption with the hook data-anchordiv-caption)."""
    return page.locator(CAPTION).all_inner_texts()


def player_p(page) -> float:
    """The p the player's slider shows."""
    return page.evaluate(SHOWN_P)


TRAFFIC: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # each page's PageTraffic


def new_page(browser, width: int = VIEWPORT["width"], height: int = VIEWPORT["height"]):
    """A page in a fresh browser context (no cookies, no storage), its websocket watched
    (:func:`traffic`)."""
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    TRAFFIC[page] = PageTraffic(page)
    return page


def traffic(page) -> PageTraffic:
    """The websocket traffic of a page made by :func:`new_page`."""
    return TRAFFIC[page]


def wait_until_idle(page, seconds: float = STARTUP_SECONDS, **options) -> None:
    """Wait until any run the last action asked for (the p player's release included) has come and
    gone (:meth:`~anchordiv.benchmarks.page_traffic.PageTraffic.wait_idle`, with its ``options``);
    a timeout says what the page shows."""
    try:
        traffic(page).wait_idle(seconds, **options)
    except TimeoutError as error:
        raise TimeoutError(f"{error}; it says:\n{page.locator('body').inner_text()[-2000:]}") from None


def wait_for_grids(page, count: int, seconds: float = STARTUP_SECONDS) -> list[str]:
    """Wait until at least ``count`` neighbour captions are drawn: the heading can come before the images."""
    page.wait_for_function(CAPTIONS_AT_LEAST, arg=count, timeout=seconds * 1000)
    return neighbour_captions(page)


def wait_for_change(page, before: list[str], seconds: float = 30) -> list[str]:
    """The captions once the first 10 differ from ``before``'s, or the current ones after ``seconds``
    (they may not move)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(CAPTIONS_CHANGED, arg=before[:10], timeout=seconds * 1000)
    except PlaywrightTimeout:
        pass
    return neighbour_captions(page)


def page_report(page, log_path: Path) -> str:
    """What the page showed and what streamlit logged, for a failing assertion."""
    body = page.locator("body").inner_text()[-3000:]
    log = log_path.read_text(errors="replace")[-3000:] if log_path.is_file() else "(no log)"
    return f"page text:\n{body}\nstreamlit log:\n{log}"


def open_explorer(browser, url: str, log_path: Path):
    """A page in a fresh browser context (:func:`new_page`) on ``url``, once both neighbour grids
    are drawn and the run has ended."""
    from playwright.sync_api import Error as PlaywrightError

    page = new_page(browser)
    page.goto(url)
    try:
        wait_for_grids(page, 20)  # two grids of 10
        wait_until_idle(page)
    except PlaywrightError as error:
        pytest.fail(f"the neighbour grids never appeared ({error})\n{page_report(page, log_path)}")
    return page


def test_browser_types_anchors_moves_p_and_sees_the_grid_change(app_url, browser, tmp_path):
    url, log_path = app_url
    page = open_explorer(browser, url, log_path)
    start = neighbour_captions(page)
    page.screenshot(path=str(tmp_path / "start.png"), full_page=True)

    style_box = page.get_by_role("textbox", name="Anchor set B (style) (one per line)")
    style_box.fill("pixel art\nneon on black\npixel art\n")
    style_box.press("Control+Enter")  # Streamlit's shortcut to apply a text area
    page.get_by_text("2 anchors in use").first.wait_for(timeout=60_000)
    wait_until_idle(page)
    typed = wait_for_change(page, start)

    slider = page.locator(PLAYER_SLIDER)
    slider.focus()
    slider.press("End")  # p = 1: only A
    page.get_by_text("p = 1.00").first.wait_for(timeout=60_000)
    wait_until_idle(page)
    moved = wait_for_change(page, typed)
    assert moved[:10] != typed[:10] or typed[:10] != start[:10], \
        f"the neighbour grid never changed\n{page_report(page, log_path)}"
    assert moved[-10:] == typed[-10:], f"cosine's grid (the last) moved with p\n{page_report(page, log_path)}"
    page.screenshot(path=str(tmp_path / "after.png"), full_page=True)
    assert not page.get_by_text("Traceback").count(), page_report(page, log_path)

    # A run that stops before drawing the anchors (no data folder offered) must not empty
    # them in the browser while the server keeps using them: set A was filled by its preset.
    object_box = page.get_by_role("textbox", name="Anchor set A (object) (one per line)")
    objects = object_box.input_value()
    assert objects.strip(), page_report(page, log_path)
    page.get_by_text("Image folder", exact=True).click()
    page.get_by_text("offers no data folders").first.wait_for(timeout=60_000)
    page.get_by_text("Built-in emoji world", exact=True).click()
    page.get_by_text("2 anchors in use").first.wait_for(timeout=60_000)
    wait_until_idle(page)
    assert object_box.input_value() == objects, page_report(page, log_path)
    assert style_box.input_value().splitlines() == ["pixel art", "neon on black", "pixel art"], \
        page_report(page, log_path)


def test_browser_links_restore_the_view_and_every_page_opens(app_url, browser, tmp_path):
    """Moving p changes the page's URL; that URL in a fresh browser context shows the same p and the
    same neighbour captions; the navigation lists every page, and each opens without a traceback
    and without a request to any host but this machine (the tab's icon included). The Compare
    page's PNG, PDF and SVG downloads open and hold its grid."""
    url, log_path = app_url
    page = open_explorer(browser, url, log_path)
    navigation = page.locator(NAV).inner_text()
    for title in ("Explore", "Compare", "Learn", "Report"):
        assert title in navigation, f"{title} missing from the navigation: {navigation}"

    slider = page.locator(PLAYER_SLIDER)
    slider.focus()
    for _ in range(30):  # 0.5 -> 0.8, then released: the URL follows
        slider.press("ArrowRight")
    page.wait_for_url("**p=0.8*", timeout=60_000)
    wait_until_idle(page)
    shown = neighbour_captions(page)
    link = page.url

    fresh = open_explorer(browser, link, log_path)
    assert player_p(fresh) == 0.8, page_report(fresh, log_path)
    assert neighbour_captions(fresh) == shown, page_report(fresh, log_path)
    fresh.screenshot(path=str(tmp_path / "explore.png"), full_page=True)

    for title, text in (("Learn", "tilted"), ("Report", "reproduction report")):
        fresh.locator(NAV).get_by_text(title, exact=True).click()
        fresh.get_by_text(text).first.wait_for(timeout=120_000)
        wait_until_idle(fresh)
        assert not fresh.get_by_text("Traceback").count(), page_report(fresh, log_path)
        fresh.screenshot(path=str(tmp_path / f"{title.lower()}.png"), full_page=True)
    check_compare_exports(fresh, tmp_path, log_path)
    assert traffic(fresh).off_machine == [], "the pages fetched from elsewhere"


HOSTILE = ("[click me](https://evil.example/phish) ![t](https://evil.example/t.png) www.evil.example "
           "me@evil.example $x^2$ :red[evil] <b>evil</b>")
# What must never be in the page: a link or image to the hostile host, typeset math, a red directive.
MARKUP_JS = """() => [...document.querySelectorAll(
  'a[href*="evil"], img[src*="evil"], [data-testid="stMain"] .katex, [data-testid="stMain"] span[style*="red"]')]
  .map(element => element.outerHTML.slice(0, 120))"""


def test_browser_shows_a_hostile_link_as_text(app_url, browser, tmp_path):
    """A link whose parameter name, values, text query, anchors and Compare rows are Markdown, HTML
    and math: every page shows them as the characters they are, in real Chromium."""
    from urllib.parse import urlencode

    url, log_path = app_url
    explore = urlencode({HOSTILE: "1", "p": HOSTILE, "mode": "text", "text": HOSTILE,
                         "anchors_b": f"{HOSTILE}\nwatercolor painting"})
    compare = urlencode({"rows": [HOSTILE, f"text:{HOSTILE}", "#3"], "columns": [HOSTILE, "A"]}, doseq=True)
    for path, query, ready in (("", explore, "Neighbours"), ("compare", compare, "Download PDF")):
        page = new_page(browser)
        page.goto(f"{url}/{path}?{query}")
        page.get_by_text(ready).first.wait_for(timeout=STARTUP_SECONDS * 1000)
        wait_until_idle(page)
        page.screenshot(path=str(tmp_path / f"hostile-{path or 'explore'}.png"), full_page=True)
        text = page.locator("body").inner_text().replace("\u2060", "")
        assert page.evaluate(MARKUP_JS) == [], page_report(page, log_path)
        assert "[click me](https://evil.example/phish)" in text and "Traceback" not in text, \
            page_report(page, log_path)


def check_compare_exports(page, tmp_path: Path, log_path: Path) -> None:
    """Open Compare, download its PNG, PDF and SVG and check that each opens and holds the grid:
    the default figure is one query row (the Explore page's query) x 4 geometry columns x top-5,
    one image per thumbnail and one per query."""
    import re
    from xml.etree import ElementTree

    from PIL import Image

    page.locator(NAV).get_by_text("Compare", exact=True).click()
    page.get_by_role("button", name="Download PDF").wait_for(timeout=120_000)
    wait_until_idle(page)
    assert not page.get_by_text("Traceback").count(), page_report(page, log_path)
    page.screenshot(path=str(tmp_path / "compare.png"), full_page=True)
    files = {}
    for kind in ("PNG", "PDF", "SVG"):
        with page.expect_download(timeout=120_000) as download:
            page.get_by_role("button", name=f"Download {kind}").click()
        files[kind] = tmp_path / f"figure.{kind.lower()}"
        download.value.save_as(files[kind])
    images = 1 * (4 * 5 + 1)
    with Image.open(files["PNG"]) as png:
        assert png.format == "PNG" and png.width > 1000 and png.height > 400, png.size
    pdf = files["PDF"].read_bytes()
    assert pdf.startswith(b"%PDF") and len(re.findall(rb"/Subtype\s*/Image", pdf)) == images
    svg = ElementTree.parse(files["SVG"]).getroot()
    assert len(svg.findall(".//{http://www.w3.org/2000/svg}image")) == images


def test_browser_opens_a_gallery_store_and_moves_p_on_the_certified_slider(store_app_url, browser, tmp_path):
    """The store offered under the data root opens; its grids come with the slider's certificate,
    its thumbnails are the store's images, and moving p redraws the grid at the new p."""
    url, log_path = store_app_url
    page = open_explorer(browser, url, log_path)
    dialogs = []
    page.on("dialog", lambda dialog: dialogs.append(dialog.message) or dialog.dismiss())
    page.get_by_text("Gallery store", exact=True).first.click()
    page.get_by_text("Choose a gallery store in the sidebar").first.wait_for(timeout=60_000)
    page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').filter(has_text="Gallery store").click()
    page.get_by_role("option").filter(has_text="shapes").first.click()
    page.get_by_text("Certified").first.wait_for(timeout=STARTUP_SECONDS * 1000)
    wait_for_grids(page, 20)
    wait_until_idle(page)
    assert "gallery store 'shapes' (31 items" in page.locator('[data-testid="stSidebar"]').inner_text()
    captions = neighbour_captions(page)
    assert any(".png" in caption for caption in captions), page_report(page, log_path)
    slider = page.locator(PLAYER_SLIDER)
    before = float(re.search(r"\(\w+, p = (\d\.\d\d)\)", page.locator("body").inner_text()).group(1))
    slider.focus()
    slider.press("ArrowLeft")
    slider.press("ArrowLeft")
    expected = f"p = {before - 0.02:.2f}"
    page.get_by_text(expected).first.wait_for(timeout=30_000)
    wait_until_idle(page)
    page.screenshot(path=str(tmp_path / "store.png"), full_page=True)
    text = page.locator("body").inner_text()
    assert "Certified" in text and "Traceback" not in text, page_report(page, log_path)

    # red-0 as the query: its copy named as markup is its nearest neighbour, and the player shows
    # that name as the characters it is (no element made of it, no alert).
    page.get_by_role("textbox", name="Search by name").fill("red-0")
    page.get_by_role("textbox", name="Search by name").press("Enter")
    wait_until_idle(page)
    page.locator('[data-testid="stSelectbox"]').filter(has_text="Matches").click()
    page.get_by_role("option").filter(has_text="red-0.png").first.click()
    page.locator(f'{TILE}[title*="onerror"]').first.wait_for(timeout=60_000)
    wait_until_idle(page)
    names = page.locator(TILE).evaluate_all("tiles => tiles.map(tile => tile.title)")
    assert any(HOSTILE_NAME in name for name in names), names  # the whole name, in the tooltip
    lines = page.locator(CAPTION).all_inner_texts()
    assert any("<img src=x" in line for line in lines), lines  # and its first words under the image
    assert not dialogs and page.locator('img[src="x"]').count() == 0, page_report(page, log_path)


def test_a_labels_csv_for_some_images_leaves_the_others_their_folder_label_in_the_browser(store_app_url, browser,
                                                                                           tmp_path):
    """Issue 51: an image folder whose labels CSV has rows for the red squares only. The page
    draws (no error box), a red square is named with its style, a blue one by its folder alone, in
    the query's caption and the grids' names, and nothing reads "nan" (the neighbour table and the
    map: tests/test_app_gallery_change.py)."""
    url, log_path = store_app_url
    page = new_page(browser)
    page.goto(url)
    page.get_by_text("Neighbours").first.wait_for(timeout=STARTUP_SECONDS * 1000)
    wait_until_idle(page)
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("Image folder", exact=True).click()
    wait_until_idle(page)
    for menu, option in (("Image folder (subfolders are labels)", "images"), ("Labels CSV", "red-styles.csv")):
        sidebar.locator('[data-testid="stSelectbox"]').filter(has_text=menu).click()
        page.get_by_role("option").filter(has_text=option).first.click()
        wait_until_idle(page)
    search = page.get_by_role("textbox", name="Search by name")
    query = page.locator(QUERY_CAPTION)
    titles = "tiles => tiles.map(tile => tile.title)"
    search.fill("red")
    search.press("Enter")
    wait_until_idle(page)
    names = page.locator(TILE).evaluate_all(titles)
    assert any(re.fullmatch(r"red · (flat|faded)", name) for name in names), names  # the CSV's style
    search.fill("blue")
    search.press("Enter")
    wait_until_idle(page)
    assert re.fullmatch(r"#\d+ blue", query.inner_text().strip()), query.inner_text()  # the folder's label alone
    wait_for_grids(page, 20)
    report = page_report(page, log_path)
    assert not page.locator(ERROR_BOXES).count(), report
    names = page.locator(TILE).evaluate_all(titles)
    page.screenshot(path=str(tmp_path / "partial-labels.png"), full_page=True)
    assert "blue" in names and not any("nan" in name.lower() for name in names), names


def details_text(page) -> str:
    """The text of the Explore page's detail expanders (the neighbour table, "why this neighbour?")."""
    return "\n".join(page.locator('[data-testid="stExpander"]').filter(has_text=re.compile(
        "Why this neighbour|Neighbour table")).all_inner_texts())


def shown_ids(page, grid: str = "anchor divergence") -> list[int]:
    """The gallery ids a grid of the player shows, best first."""
    return [int(i) for i in page.locator(f"{TITLED_GRID.format(grid)} {TILE}").evaluate_all(
        "tiles => tiles.map(tile => tile.getAttribute('data-anchordiv-id'))")]


def check_grid_is_the_library_s(page, library, log_path) -> None:
    """The player's grid at the p it shows is the library's top 10 there, up to ties (the page's
    float32 values against the library's float32 search, both s = 10: a few 1e-6 apart)."""
    from test_app import expected_ranking
    from rankings import assert_same_ranking

    p = player_p(page)
    presets = library["presets"]
    values, ids = expected_ranking(library, presets["Gallery object names"], presets["Gallery styles"], p=p)
    shown = np.array(shown_ids(page))
    value_of = dict(zip(ids.tolist(), values.tolist()))
    assert all(item in value_of for item in shown), f"p = {p}: {shown} not in the library's top 20\n{page_report(page, log_path)}"
    assert_same_ranking((np.array([value_of[item] for item in shown]), shown), (values, ids), atol=1e-4, rtol=1e-4,
                        context=f"the player's grid at p = {p:.2f}")


def test_browser_p_player_plays_in_the_browser_and_one_release_is_one_run(app_url, browser, library, tmp_path):
    """Keys and a drag move p with no run; each grid is the library's at its p; a burst of key
    presses is one release and one run, after which the URL and the open "why this neighbour?" follow;
    Play from p = 1 turns back, holding each ranking whole, and Pause reports where it stopped; a reload keeps p. At 1500 x 1000 the
    query, the p control and the first row of the grid are on the first screen."""
    url, log_path = app_url
    page = new_page(browser, height=1000)
    dialogs = []
    page.on("dialog", lambda dialog: dialogs.append(dialog.message) or dialog.dismiss())
    runs = traffic(page)
    page.goto(url)
    wait_for_grids(page, 20)
    wait_until_idle(page)
    slider = page.locator(PLAYER_SLIDER)
    assert slider.get_attribute("aria-label").startswith("p"), page_report(page, log_path)
    first_row = page.locator(f"{AD_GRID} img").first.bounding_box()
    query = page.locator('[data-testid="stImage"] img').first.bounding_box()
    for box, what in ((first_row, "the grid's first row"), (slider.bounding_box(), "the p slider"), (query, "the query")):
        assert box["y"] >= 0 and box["y"] + box["height"] <= 1000, f"{what} is below the fold: {box}"
    check_grid_is_the_library_s(page, library, log_path)

    page.locator('[data-testid="stExpander"] summary').filter(has_text="Why this neighbour?").click()
    page.get_by_text("Query's tilted anchor distribution").first.wait_for(timeout=60_000)
    wait_until_idle(page)
    opened = details_text(page)
    before_runs = runs.runs
    slider.focus()
    for _ in range(4):  # one quick burst: four steps, one release
        slider.press("ArrowRight")
    assert player_p(page) == 0.54
    check_grid_is_the_library_s(page, library, log_path)
    page.wait_for_url("**p=0.54*", timeout=60_000)
    # Any further run would have to be asked for by a message of the page or announced by the player's
    # reporting mark: idle waits out both (and looks at the websocket again after the page has answered).
    wait_until_idle(page)
    assert runs.runs == before_runs + 1, f"{runs.runs - before_runs} runs for one release"
    assert details_text(page) != opened, f"'why this neighbour?' did not follow p\n{page_report(page, log_path)}"

    box = slider.bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.54, y)
    before_runs, before_sent = runs.runs, runs.sent
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.3, y, steps=8)
    # The grid has followed the drag; a report of p would have set the player's reporting mark (its
    # delay before it reports) or sent a message by now.
    page.wait_for_function(f"() => ({SHOWN_P})() < 0.5")
    assert not page.locator(REPORTING).count() and runs.sent == before_sent, \
        "a drag asked for a run before its release"
    assert runs.runs == before_runs, "a drag ran the script before its release"
    dragged = player_p(page)
    assert dragged < 0.5, dragged
    check_grid_is_the_library_s(page, library, log_path)
    page.mouse.up()
    page.wait_for_url(f"**p={dragged:g}*", timeout=60_000)
    wait_until_idle(page)

    slider.press("End")
    page.wait_for_url("**p=1*", timeout=60_000)
    wait_until_idle(page)
    # Play from p = 1 turns back, holds each ranking whole (the figures: at least 75% of the
    # frames settled, settled stretches of 0.4 s on median, never under half the tiles drawn), and
    # PLAY_FRAMES_JS's Pause reports where it stopped.
    played = summarise(page.evaluate(PLAY_FRAMES_JS, 5.0))
    assert played.settled_share >= 0.75 and played.median_settled_s >= 0.4 and played.sparse_frames == 0, played.line()
    paused = player_p(page)
    assert paused < 1.0, "Play from p = 1 did not turn back"
    page.wait_for_url(f"**p={paused:g}*", timeout=60_000)
    wait_until_idle(page)
    check_grid_is_the_library_s(page, library, log_path)
    page.screenshot(path=str(tmp_path / "player.png"))

    page.reload()
    wait_for_grids(page, 20)
    wait_until_idle(page)
    assert player_p(page) == paused, page_report(page, log_path)
    check_grid_is_the_library_s(page, library, log_path)
    assert not dialogs and not page.get_by_text("Traceback").count(), page_report(page, log_path)


def test_a_bare_streamlit_run_shows_visitors_no_deploy_menu(app_url, browser, tmp_path):
    """Started without the explorer's flags (``streamlit run app/streamlit_app.py``), the server takes
    its toolbar setting from the entry script: even the first visitor sees no "Deploy" menu. (It
    reads the cache the shared server has filled, which has no say in the toolbar.)"""
    import subprocess
    import sys

    from anchordiv.benchmarks.browser import free_port

    port = free_port()  # (without Chromium, app_url has skipped this test)
    env = explorer_env(app_url[1].parent, split="heldout", limit=96)
    with open(tmp_path / "bare.log", "w") as log:
        process = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app" / "streamlit_app.py"),
                                    "--server.headless=true", f"--server.port={port}", "--server.address=127.0.0.1"],
                                   cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, process, tmp_path / "bare.log", seconds=60)
        for visit in ("first", "second"):
            page = open_explorer(browser, url, tmp_path / "bare.log")
            assert page.locator('[data-testid="stAppDeployButton"]').count() == 0, f"{visit} visit: Deploy shown"
    finally:
        process.terminate()
        process.wait(timeout=20)


def step_p(page, shown: str) -> None:
    """One step of the player's slider to the right, once its release has put ``p={shown}`` in the
    link and the run it asked for has ended."""
    slider = page.locator(PLAYER_SLIDER)
    slider.focus()
    slider.press("ArrowRight")
    page.wait_for_function(f"() => location.search.includes('p={shown}')", timeout=60_000)
    wait_until_idle(page)


def test_a_page_arrived_at_is_one_history_entry_and_back_returns_to_the_view_left(app_url, browser):
    """Streamlit pushes a new page's bare address and then the page's first run its link: the
    history policy makes the two one entry (Back stopped at the bare address before), and Back
    returns to the view left, its link and its grids; the Learn page's toy world mounts the policy
    there, so a run of moves of its p is one entry too, which Back leaves, the world following."""
    url, log_path = app_url
    page = open_explorer(browser, url, log_path)
    step_p(page, "0.51")
    left, shown, entries = page.url, neighbour_captions(page), page.evaluate("() => history.length")
    page.locator(NAV).get_by_text("Learn", exact=True).click()
    page.wait_for_function("() => location.pathname.endsWith('/learn') && location.search.includes('p=0.51')",
                           timeout=60_000)
    wait_until_idle(page)
    assert page.evaluate("() => history.length") == entries + 1, page_report(page, log_path)
    toy_p = page.locator('[data-anchordiv-toy="p"]')
    for _ in range(3):  # three releases, three runs, each a change of the toy's p alone
        runs = traffic(page).runs
        toy_p.focus()
        toy_p.press("ArrowRight")
        wait_until_idle(page, after_runs=runs)
    assert "toy_p=" in page.url and page.evaluate("() => history.length") == entries + 2, page_report(page, log_path)
    page.go_back()  # to Learn as it was reached: the world's p back at its default, in the world itself
    page.wait_for_function("() => !location.search.includes('toy_p=')", timeout=60_000)
    wait_until_idle(page)
    assert page.locator(".atw-p-value").inner_text() == "0.50", page_report(page, log_path)
    page.go_back()
    page.wait_for_function("left => location.href === left", arg=left, timeout=60_000)
    wait_until_idle(page)
    assert page.url == left, f"after Back's run the link is {page.url}\n{page_report(page, log_path)}"
    assert neighbour_captions(page) == shown, page_report(page, log_path)


def test_steps_of_p_are_one_history_entry_and_a_new_query_another(app_url, browser):
    """Back leaves a run of p steps in one go: Streamlit pushes a history entry for every change of
    the query string, and the player makes a change of the same one parameter replace it; a new
    query (another parameter) still pushes one, Back returns to the view before it and Forward to
    the new query again."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    url, log_path = app_url
    page = open_explorer(browser, url, log_path)
    step_p(page, "0.51")
    entries = page.evaluate("() => history.length")
    for step in ("0.52", "0.53"):
        step_p(page, step)
    assert page.evaluate("() => history.length") == entries, page_report(page, log_path)
    before, shown = page.url, neighbour_captions(page)
    sockets, runs, clicked = traffic(page), traffic(page).runs, time.monotonic()
    page.get_by_role("button", name="Random image").click()  # never draws the query shown
    try:
        page.wait_for_function("before => location.href !== before", arg=before, timeout=60_000)
    except PlaywrightTimeout:
        pytest.fail(f"the link stayed {page.url} after Random image ({sockets.runs - runs} run(s) ended since the "
                    f"click; the page sent a message after it: {sockets.sent > clicked})\n"
                    f"{page_report(page, log_path)}")
    wait_until_idle(page)
    assert page.evaluate("() => history.length") == entries + 1, page_report(page, log_path)
    after, drawn = page.url, neighbour_captions(page)
    page.go_back()
    try:
        page.wait_for_function("before => location.href === before", arg=before, timeout=60_000)
    except PlaywrightTimeout:
        pytest.fail(f"Back left the link at {page.url}, not {before}\n{page_report(page, log_path)}")
    # Back is a run too (Streamlit reruns on popstate): once it has ended, the link is still the old
    # one and the page shows the view it names, not the new query's link published over it.
    wait_until_idle(page)
    assert page.url == before, f"after Back's run the link is {page.url}\n{page_report(page, log_path)}"
    assert neighbour_captions(page) == shown, page_report(page, log_path)
    page.go_forward()  # and Forward returns to the new query
    page.wait_for_function("after => location.href === after", arg=after, timeout=60_000)
    wait_until_idle(page)
    assert (page.url, neighbour_captions(page)) == (after, drawn), page_report(page, log_path)
