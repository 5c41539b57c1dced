"""A CLIP-style model picked by name in a real browser: headless Chromium drives the explorer, which
downloads a tiny open_clip model from a loopback hub (tests/loopback_hub.py, sending slowly so that
the progress bar can be seen), embeds an image folder with it and ranks it. Skipped without
Chromium, as tests/test_browser.py is."""
from __future__ import annotations

import pytest
import torch

from anchordiv.benchmarks.browser import explorer_env, streamlit_server, wait_healthy
from anchordiv.explorer.settings import ENCODER_KIND_LABELS, HUB
from loopback_hub import TINY_REPO, WEIGHTS_NAME, serve_tiny_hub, tiny_hub_files
from test_app_models import colour_folder
from test_browser import ROOT, new_page, page_report, wait_for_grids, wait_until_idle

pytestmark = [pytest.mark.slow]


def test_a_hub_model_is_chosen_downloaded_with_progress_and_ranks_a_folder(browser, tmp_path):
    folder = colour_folder(tmp_path / "images")
    # float32 weights (14 MB): huggingface_hub reports progress after each 10 MB chunk it reads.
    (tmp_path / "weights").mkdir()
    files = tiny_hub_files(tmp_path / "weights", dtype=torch.float32)
    with serve_tiny_hub(tmp_path / "hub", files=files) as hub:
        hub.throttle = 3e6  # about five seconds for the weights
        env = {**explorer_env(tmp_path, split="heldout", limit=48), **hub.env(), "HF_HUB_CACHE": str(tmp_path / "hf"),
               "ANCHORDIV_ALLOW_DOWNLOAD": "1", "ANCHORDIV_ALLOW_ANY_PATH": "1"}
        with streamlit_server(ROOT / "app" / "streamlit_app.py", env, tmp_path / "streamlit.log") as (url, process, log):
            wait_healthy(url, process, log, seconds=60)
            page = new_page(browser, 1400, 1000)
            page.goto(url)
            wait_for_grids(page, 10)
            page.get_by_text("Image folder", exact=True).click()
            box = page.get_by_label("Image folder (subfolders are labels)")
            box.fill(str(folder))
            box.press("Enter")
            wait_until_idle(page)
            page.get_by_text(ENCODER_KIND_LABELS[HUB], exact=True).click()
            repo = page.get_by_label("Hugging Face repo (ORG/REPO)")
            repo.fill(TINY_REPO)
            repo.press("Enter")
            page.get_by_role("button", name="Download and load").click()
            # Under way: bytes of the whole, speed and time left (the first report has no speed yet).
            progress = page.locator('[data-testid="stProgress"]').filter(has_text=WEIGHTS_NAME).filter(
                has_text="/s")
            progress.wait_for(timeout=60_000)
            shown = progress.inner_text()
            page.screenshot(path=str(tmp_path / "downloading.png"))
            assert " of 13." in shown and "MB/s" in shown and "left" in shown, shown
            captions = wait_for_grids(page, 10)
            wait_until_idle(page)
            page.screenshot(path=str(tmp_path / "ranked.png"), full_page=True)
            body = page.locator("body").inner_text()
            assert "Encoding on CPU" in body and TINY_REPO in body, page_report(page, log)
            assert any(name in " ".join(captions) for name in ("red", "blue", "green")), page_report(page, log)
        assert len(hub.gets(WEIGHTS_NAME)) == 1
