"""In real headless Chromium: a photo uploaded under the built-in model gets the notice that the
model knows emoji drawings only; an emoji image uploaded as a PNG gets none; the issue's cat photo
then gets it again. One server start;
skipped, with the reason, without Chromium or playwright (see tests/test_browser.py)."""
from __future__ import annotations

import pytest

from helpers import encoded
from test_browser import STARTUP_SECONDS, open_explorer, page_report, wait_until_idle

pytestmark = [pytest.mark.slow]
NOTICE = "knows emoji drawings only"


def test_browser_warns_by_an_uploaded_photo_and_not_by_an_emoji(app_url, browser, tmp_path):
    from PIL import Image

    from anchordiv.builtin.familiarity_study import sample_photos
    from anchordiv.datasets import open_emoji_world

    url, log_path = app_url
    photos = sample_photos()
    photo, cat = tmp_path / "china.jpg", tmp_path / "chelsea.jpg"
    photos["china"].save(photo, format="JPEG", quality=90)
    photos["chelsea"].save(cat, format="JPEG", quality=90)
    emoji = tmp_path / "emoji.png"
    emoji.write_bytes(encoded(Image.fromarray(open_emoji_world("train").image(700))))
    page = open_explorer(browser, url, log_path)
    page.get_by_text("Upload", exact=True).first.click()
    page.get_by_text("Upload an image to use it as the query").first.wait_for(timeout=60_000)
    query_upload(page).set_input_files(str(photo))
    page.get_by_text(NOTICE).first.wait_for(timeout=STARTUP_SECONDS * 1000)
    wait_until_idle(page)
    page.screenshot(path=str(tmp_path / "photo.png"), full_page=True)
    assert "make demo ENCODER=open_clip:ViT-B-32" in page.locator("body").inner_text(), page_report(page, log_path)

    query_upload(page).set_input_files(str(emoji))
    # The photo's notice goes once the emoji is the query (and must not come back when the run ends).
    page.get_by_text(NOTICE).first.wait_for(state="detached", timeout=STARTUP_SECONDS * 1000)
    wait_until_idle(page)
    page.screenshot(path=str(tmp_path / "emoji.png"), full_page=True)
    text = page.locator("body").inner_text()
    assert NOTICE not in text and "Traceback" not in text, page_report(page, log_path)

    query_upload(page).set_input_files(str(cat))
    page.get_by_text(NOTICE).first.wait_for(timeout=STARTUP_SECONDS * 1000)
    wait_until_idle(page)
    assert "Traceback" not in page.locator("body").inner_text(), page_report(page, log_path)


def query_upload(page):
    """The query's file input (the anchor sets have file inputs of their own)."""
    return page.get_by_label("Upload an image (PNG, JPEG or WebP)", exact=True).get_by_test_id("stFileUploaderDropzoneInput")
