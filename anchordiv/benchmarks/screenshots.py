"""The docs' screenshots: each page of the explorer as a newcomer's window shows it, at two sizes.

``python -m anchordiv.benchmarks.screenshots [--out docs/screenshots]`` starts the explorer on the
built-in world with an empty private cache (as ``make demo`` does on a fresh clone), opens each
page in headless Chromium at 1500x1000 and 1000x900, waits until the page has finished its run, and
saves the page from its top, down to at most :data:`MAX_HEIGHT` pixels, as ``{page}-{width}.png``,
reduced to 256 colours to keep the repository small.
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from PIL import Image

from ..resources import app_dir
from .browser import (CHROMIUM, CHROMIUM_ARGS, EXPLORER_SCRIPT, NOT_RUNNING, explorer_env, streamlit_server,
                      wait_healthy)

WINDOWS = ((1500, 1000), (1000, 900))
# Each page: its path, and a text on it once its first run has drawn it.
PAGES = {"explore": ("/", "Neighbours"), "compare": ("/compare", "Green frame"),
         "learn": ("/learn", "On the real gallery"), "report": ("/report", "At a glance")}
WAIT_MS = 240_000
MAX_HEIGHT = 2400
CONTENT_HEIGHT_JS = """() => Math.max(...['stMain', 'stAppViewContainer', 'stMainBlockContainer']
  .map(id => document.querySelector(`[data-testid="${id}"]`)?.scrollHeight || 0))"""


def at_rest(page) -> None:
    """Wait until the page's run has ended and its images have loaded."""
    page.wait_for_timeout(500)
    page.wait_for_function(NOT_RUNNING, timeout=WAIT_MS)
    page.wait_for_function("() => [...document.images].every(image => image.complete)", timeout=WAIT_MS)
    page.wait_for_timeout(800)


def shoot(url: str, out: Path) -> list[Path]:
    """Each page of :data:`PAGES` in each window of :data:`WINDOWS`, saved under ``out``."""
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    saved = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            for width, height in WINDOWS:
                page = browser.new_context(viewport={"width": width, "height": height}).new_page()
                for name, (path, drawn) in PAGES.items():
                    page.goto(url + path)
                    page.get_by_text(drawn).first.wait_for(timeout=WAIT_MS)
                    at_rest(page)
                    target = out / f"{name}-{width}.png"
                    # The page scrolls inside Streamlit's main column: a window as tall as its content
                    # (up to MAX_HEIGHT) shows it all.
                    content = page.evaluate(CONTENT_HEIGHT_JS)
                    page.set_viewport_size({"width": width, "height": max(height, min(MAX_HEIGHT, content))})
                    at_rest(page)
                    page.screenshot(path=str(target))
                    page.set_viewport_size({"width": width, "height": height})
                    Image.open(target).convert("RGB").quantize(256).save(target, optimize=True)
                    saved.append(target)
                page.context.close()
        finally:
            browser.close()
    return saved


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"), help="folder for the PNGs")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        workdir = Path(folder)
        server = streamlit_server(app_dir() / EXPLORER_SCRIPT, explorer_env(workdir), workdir / "streamlit.log")
        with server as (url, process, log):
            wait_healthy(url, process, log, seconds=120)
            for path in shoot(url, args.out):
                print(f"{path}  {path.stat().st_size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
