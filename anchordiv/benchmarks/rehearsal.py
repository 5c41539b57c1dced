"""A rehearsal of the demo: ``python -m anchordiv.benchmarks.rehearsal`` starts the explorer on the
built-in world with an empty private cache (as ``make demo`` does on a fresh clone) and walks the
demo as a newcomer would, in headless system Chromium, in windows of 1500x1000, 1280x720 and
1000x800 (one fresh session each, one after another, on the one server): open, move p by keys and
by a drag, Play, search a name, pick another match, upload a photo, back to a gallery query, type comma
anchors, mark three neighbours, learn a geometry, open each expander, share, then the Compare,
Learn and Report pages (:data:`~anchordiv.benchmarks.rehearsal_steps.STEPS`).

It writes, in ``--out`` (a new temporary folder unless given; printed at the end):

* ``{size}/{NN}-{step}.png``: a screenshot after every step (the window as the newcomer sees it;
  for the pages as a whole, the page from its top, down to at most :data:`MAX_HEIGHT` pixels),
  256 colours;
* ``{size}/play-filmstrip.png``: Play from the frames Chromium composited (its screencast, not the
  DOM), cut to the player's slider and grid;
* ``rehearsal.md`` and ``rehearsal.json``: seconds per step and size, each step's note, and Play's
  frame figures (:mod:`~anchordiv.benchmarks.rehearsal_report`).

A step that fails is recorded with its error and a screenshot, and the walk goes on; a step that
runs but misses its purpose is recorded as *no effect*. ``--docs`` writes into ``docs/rehearsal/``
and refreshes ``docs/screenshots/{explore,compare,learn,report}-{1500,1000}.png`` from its page
shots (run it from the repository's root). The whole walk is bounded by ``--minutes``.
"""
from __future__ import annotations

import argparse
import asyncio
import io
import os
import shutil
import subprocess
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from PIL import Image

from ..resources import app_dir
from .browser import (CHROMIUM, EXPLORER_SCRIPT, check_browser, chromium_browser, explorer_env, streamlit_server,
                      wait_drawn, wait_healthy)
from .filmstrip import save_png
from .rehearsal_report import SizeResult, StepResult, markdown, write_report
from .rehearsal_steps import STEP_S, STEPS, Step, Walk

SIZES = ((1500, 1000), (1280, 720), (1000, 800))
MAX_HEIGHT = 2400
DRAWN_S = 20  # the longest a screenshot waits for the page's images and fonts
CONTENT_HEIGHT_JS = """() => Math.max(...['stMain', 'stAppViewContainer', 'stMainBlockContainer']
  .map(id => document.querySelector(`[data-testid="${id}"]`)?.scrollHeight || 0))"""
TO_TOP_JS = """() => ['stMain', 'stAppViewContainer']
  .forEach(id => document.querySelector(`[data-testid="${id}"]`)?.scrollTo(0, 0))"""
# Once the window is ``height`` tall and two frames have been drawn since: the layout of the first
# follows the new size, the second shows it.
LAID_OUT_JS = """height => new Promise(done => {
  const look = () => window.innerHeight === height ? requestAnimationFrame(() => requestAnimationFrame(done))
    : requestAnimationFrame(look);
  look();
})"""
# docs/screenshots/{page}-{width}.png: the step whose shot each page's picture is, and the widths kept.
DOCS_PAGES = {"open": "explore", "Compare": "compare", "Learn": "learn", "Report": "report"}
DOCS_WIDTHS = (1500, 1000)
DOCS_OUT, DOCS_SCREENSHOTS = Path("docs/rehearsal"), Path("docs/screenshots")


def size_name(width: int, height: int) -> str:
    return f"{width}x{height}"


def shot_name(number: int, step: Step) -> str:
    """``NN-step`` (the step's words in lower case, joined by hyphens): the screenshot's file stem."""
    words = "".join(char if char.isalnum() else " " for char in step.name.lower()).split()
    return f"{number:02d}-{'-'.join(words)}"


async def drawn(page, height: int | None = None) -> None:
    """Once the window is ``height`` tall (when given) and laid out again (:data:`LAID_OUT_JS`), and
    then :func:`~anchordiv.benchmarks.browser.wait_drawn`: for at most :data:`DRAWN_S` in all."""
    async def wait() -> None:
        if height is not None:
            await page.evaluate(LAID_OUT_JS, height)
        await wait_drawn(page)

    try:
        await asyncio.wait_for(wait(), DRAWN_S)
    except TimeoutError:
        pass  # an image that never loads is part of what the picture should show


async def screenshot(page, path: Path, tall: bool) -> None:
    """The window, or (``tall``) the page from its top in a window as tall as its content (at most
    :data:`MAX_HEIGHT`; Streamlit scrolls inside its main column, so a taller window shows more),
    saved with 256 colours."""
    await drawn(page)
    viewport = page.viewport_size
    if tall:
        await page.evaluate(TO_TOP_JS)
        content = await page.evaluate(CONTENT_HEIGHT_JS)
        height = max(viewport["height"], min(MAX_HEIGHT, content))
        await page.set_viewport_size({**viewport, "height": height})
        await drawn(page, height)  # the layout has followed the taller window, and what it shows more of is loaded
    try:
        picture = await page.screenshot()
    finally:
        await page.set_viewport_size(viewport)
    save_png(Image.open(io.BytesIO(picture)), path)


def error_text(error: BaseException) -> str:
    """The error's first line (Playwright's carry a call log after it)."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"


async def run_step(walk: Walk, number: int, step: Step, deadline: float) -> StepResult:
    """One step, timed, with its screenshot; a failure (or running out of time) is recorded with its
    error and the walk goes on."""
    left = deadline - time.monotonic()
    if left <= 0:
        return StepResult(step.name, "not run", note="the rehearsal's time was up")
    walk.seconds, seen = 0.0, len(walk.script_errors)
    try:
        outcome = await asyncio.wait_for(step.run(walk), min(left, 3 * STEP_S))
        result = StepResult(step.name, "ok" if outcome.achieved else "no effect", round(walk.seconds, 3), outcome.note)
    except Exception as error:  # noqa: BLE001 - every failure is the step's result, and the walk goes on
        result = StepResult(step.name, "failed", note=error_text(error))
    boxes = await walk.error_boxes()
    extra = [f"the page shows an error: “{box.strip()[:200]}”" for box in boxes[:2]]
    extra += [f"a script error in the page: “{error[:200]}”" for error in walk.script_errors[seen:seen + 2]]
    result.note = "; ".join([result.note, *extra]) if extra else result.note
    path = walk.folder / f"{shot_name(number, step)}.png"
    try:
        await screenshot(walk.page, path, step.tall)
        result.screenshot = f"{walk.folder.name}/{path.name}"
    except Exception as error:  # noqa: BLE001 - a page that cannot be shot is said, not raised
        result.note += f"; no screenshot ({error_text(error)})"
    return result


async def rehearse(url: str, out: Path, photo: Path, sizes: Sequence[tuple[int, int]] = SIZES,
                   steps: Sequence[str] | None = None, minutes: float = 40, chromium: str = CHROMIUM
                   ) -> list[SizeResult]:
    """Walk :data:`~anchordiv.benchmarks.rehearsal_steps.STEPS` (or those named in ``steps``) on the
    explorer at ``url`` in each window size, a fresh session each, within ``minutes`` in all; the
    pictures go to ``out/{size}/``. Each result lists the steps in order."""
    deadline = time.monotonic() + 60 * minutes
    results = []
    async with chromium_browser(chromium) as browser:
        for width, height in sizes:
            size = SizeResult(size_name(width, height))
            folder = out / size.size
            shutil.rmtree(folder, ignore_errors=True)  # no picture of an earlier run is left beside this one's
            folder.mkdir(parents=True)
            context = await browser.new_context(viewport={"width": width, "height": height})
            page = await context.new_page()
            page.set_default_timeout(STEP_S * 1000)
            walk = Walk(page, url, folder, photo)
            for number, step in enumerate(STEPS, 1):
                if steps is None or step.name in steps:
                    size.steps.append(await run_step(walk, number, step, deadline))
                    print(f"{size.size}  {size.steps[-1].step}: {size.steps[-1].status}, "
                          f"{size.steps[-1].seconds} s", flush=True)
            size.play = walk.play
            results.append(size)
            await context.close()
    return results


def cat_photo(folder: Path) -> Path:
    """scikit-image's photo of a cat (Chelsea), 300 px wide, as a PNG in ``folder``: the photo uploaded."""
    import skimage.data

    image = Image.fromarray(skimage.data.chelsea())
    image.thumbnail((300, 300))
    path = folder / "chelsea.png"
    image.save(path)
    return path


def refresh_docs(results: Sequence[SizeResult], out: Path, screenshots: Path = DOCS_SCREENSHOTS) -> list[Path]:
    """Copy the page shots of the sizes :data:`DOCS_WIDTHS` wide to ``screenshots/{page}-{width}.png``."""
    copied = []
    for size in results:
        width = int(size.size.split("x")[0])
        for step in size.steps:
            if width in DOCS_WIDTHS and step.step in DOCS_PAGES and step.screenshot:
                target = screenshots / f"{DOCS_PAGES[step.step]}-{width}.png"
                shutil.copyfile(out / step.screenshot, target)
                copied.append(target)
    return copied


def version() -> str:
    """The checkout's commit (``git describe --always --dirty``), or "unknown" outside a checkout."""
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True, timeout=10,
                              check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def parse_size(text: str) -> tuple[int, int]:
    width, _, height = text.lower().partition("x")
    return int(width), int(height)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="folder for the pictures and tables (default: a new temporary folder)")
    parser.add_argument("--docs", action="store_true",
                        help=f"write into {DOCS_OUT}/ and refresh {DOCS_SCREENSHOTS}/ (run from the repository's root)")
    parser.add_argument("--sizes", nargs="+", type=parse_size, default=list(SIZES), metavar="WxH",
                        help=f"window sizes (default: {' '.join(size_name(*size) for size in SIZES)})")
    parser.add_argument("--steps", nargs="+", choices=[step.name for step in STEPS], metavar="STEP",
                        help="only these steps (default: all)")
    parser.add_argument("--url", help="rehearse an explorer already running there (default: start one, empty cache)")
    parser.add_argument("--minutes", type=float, default=40, help="the whole walk's time limit (default: 40)")
    parser.add_argument("--chromium", default=CHROMIUM, help="the system Chromium (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.docs and (args.out or not DOCS_SCREENSHOTS.is_dir()):
        parser.error(f"--docs writes into {DOCS_OUT}/ (no --out) and needs {DOCS_SCREENSHOTS}/: run it from the "
                     "repository's root")
    check_browser(args.chromium)
    out = DOCS_OUT if args.docs else args.out or Path(tempfile.mkdtemp(prefix="anchordiv-rehearsal-"))
    started = datetime.now(timezone.utc)
    with tempfile.TemporaryDirectory(prefix="anchordiv-rehearsal-server-") as folder:
        workdir = Path(folder)
        photo = cat_photo(workdir)
        if args.url:
            results = asyncio.run(rehearse(args.url, out, photo, args.sizes, args.steps, args.minutes, args.chromium))
        else:
            server = streamlit_server(app_dir() / EXPLORER_SCRIPT, explorer_env(workdir), workdir / "streamlit.log")
            with server as (url, process, log):
                wait_healthy(url, process, log, seconds=120)
                results = asyncio.run(rehearse(url, out, photo, args.sizes, args.steps, args.minutes, args.chromium))
    settings = {"date": started.strftime("%Y-%m-%d %H:%M UTC"), "commit": version(), "cores": os.cpu_count(),
                "explorer": args.url or "started by the rehearsal on the whole built-in world, its cache empty",
                "sizes": [size.size for size in results]}
    about = (f"Run {settings['date']} at {settings['commit']} on a machine of {settings['cores']} cores; the explorer: "
             f"{settings['explorer']}; one fresh browser session per window size, one after another (the first "
             "size's first step is the server's first page). Command: `python -m anchordiv.benchmarks.rehearsal"
             f"{' --docs' if args.docs else ''}`.")
    write_report(out, results, "A rehearsal of the demo", about, settings)
    if args.docs:
        for path in refresh_docs(results, out):
            print(f"{path}  {path.stat().st_size / 1024:.0f} KiB")
    text = markdown(results, "A rehearsal of the demo", about)
    print(text[:text.index("## Notes")])
    print(f"Pictures and tables in {out}")


if __name__ == "__main__":
    main()
