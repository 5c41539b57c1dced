"""Speed in a real browser: :func:`browser_benchmark` times the explorer against a minimal
reference Streamlit app (``python -m anchordiv explorer-bench --browser``).

Each app runs as ``streamlit run`` on a free localhost port, one app at a time, and headless
system Chromium (driven by Playwright, never ``playwright install``) measures: starting the server
until the first two grids of 10 captions are drawn (with an empty cache for the explorer's first
start, then with the disk cache it left), opening the app on a running server, and one step of the
p slider until the first grid changes and until the page is at rest (the script run is over and
the page has taken in its end), both read by the page's own clock. The reference
(``app/reference_grid.py``) draws the same kind of page with nothing behind it, so the ratio
explorer / reference is the explorer's own cost. Each p step also counts the server's CPU time,
split by the stages of :mod:`anchordiv.app.step_clock` from the lines the server's script runs log.
Both scripts are found through :func:`anchordiv.resources.app_dir`, so an installed package runs it
from any folder; each figure is logged at INFO as it is measured.

The browser is driven through Playwright's asyncio API, so that several pages can be driven at once
(:mod:`anchordiv.benchmarks.browser_sessions`); each benchmark is a plain function that runs its
own event loop.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request
from contextlib import ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import AsyncIterator, Callable, Iterable, Iterator

from ..app.server_settings import EXPLORER_SCRIPT, streamlit_argv
from ..app.step_clock import STAGES
from ..extras import require
from ..resources import app_dir

logger = logging.getLogger(__name__)
CHROMIUM = os.environ.get("ANCHORDIV_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1500, "height": 2600}
# Each app's script and its p slider: a Streamlit slider by its label, or (None) the explorer's p
# player, a browser component that plays p without the server (found by its data-anchordiv-p hook).
APPS = {"explorer": (EXPLORER_SCRIPT, None), "reference": ("reference_grid.py", "weight of grid A")}

# -- what is found on the explorer's page: one spelling for the benchmarks, the rehearsal and the tests --
PLAYER = "[data-anchordiv-player]"  # the p player's root
PLAYER_SLIDER = "[data-anchordiv-p]"  # the p player's range input (aria-valuetext "p = 0.53")
REPORTING = "[data-anchordiv-reporting]"  # the player's slider while it waits to report p (and ask for a run)
GRID = "[data-anchordiv-grid]"  # a grid of the p player
TITLED_GRID = '[data-anchordiv-grid="{}"]'  # .format(title): the grid of that title ("cosine", ...)
AD_GRID = TITLED_GRID.format("anchor divergence")  # the player's own grid, first
TILE = "[data-anchordiv-id]"  # a tile of a grid (the gallery id as the value, the full name as its title)
CAPTION = "[data-anchordiv-caption]"  # the caption under a tile
MARK = "[data-anchordiv-mark]"  # a tile's "like the query" toggle (aria-pressed says whether it is on)
ITEM_MARK = '[data-anchordiv-mark="{}"]'  # .format(gallery id): that item's toggles
QUERY_CAPTION = ".st-key-query_caption"  # what names the query on Explore, under its picture
NAV = '[data-testid="stTopNav"]'  # the pages' links in the top bar
ERROR_BOXES = '[data-testid="stException"], [data-testid="stAlertContentError"]'

MEASURES = {"start_s": "start the server, disk cache present -> first grid",
            "open_s": "open the app, server running -> first grid",
            "move_p_grid_s": "move p one step -> the grid changes",
            "move_p_rest_s": "move p one step -> page at rest again",
            "release_s": "move p one step -> the run its release starts has finished (URL, details)"}
FIRST_START = "first start, empty cache -> first grid"
# The server's CPU per p step: in all, in each stage of the logged script runs, the rest of those
# runs, and the rest of the server: Streamlit outside the script thread (sending the messages,
# serving the images), and any run not wrapped in step_clock.timed_run.
CPU_FIGURES = ("in all", *STAGES, "other script work", "Streamlit outside the script")
CPU_WORDS = "server CPU per p step"
RELEASE_CPU_WORDS = "server CPU per release of p (one run)"
STEP_LOG = "ANCHORDIV_STEP_LOG"  # the variable app/step_clock.py reads
SETTLE_S = 0.05  # after a step is at rest, for the server's event loop to finish sending
WAIT_S = 180  # per wait in the browser; a first start with a gallery to embed takes longer

# The captions of each grid of 10 or more, first grid first: the p player's grids (its own, then
# the baselines' beside it), then each st.image grid (the explorer also captions its query image,
# which is not part of any grid).
GRIDS_JS = f"""() => [
  ...[...document.querySelectorAll('{GRID}')]
    .map(grid => [...grid.querySelectorAll('{CAPTION}')].map(c => c.innerText)),
  ...[...document.querySelectorAll('[data-testid="stElementContainer"]')]
    .filter(box => !box.querySelector('[data-testid="stElementContainer"]'))
    .map(box => [...box.querySelectorAll('[data-testid="stImageCaption"]')].map(c => c.innerText))]
  .filter(captions => captions.length >= 10)"""
# A step of the p player is at rest once its grids' images are all loaded (no run is involved).
PLAYER_AT_REST = f"() => [...document.querySelectorAll('{GRID} img')].every(image => image.complete)"
RUNNING = '[data-testid^="stStatusWidgetRunning"]'
FIRST_GRIDS = f"() => ({GRIDS_JS})().flat().length >= 20"
GRID_CHANGED = f"before => ({GRIDS_JS})()[0]?.join('\\n') !== before.join('\\n')"
NOT_RUNNING = f"() => !document.querySelector('{RUNNING}')"
# The page itself has taken in the run's end: its script state (set as the page handles Streamlit's
# messages, after the elements before them) is back to not running and no status widget shows. A
# page under load may handle its messages seconds after they reached the browser.
PAGE_AT_REST = ("() => document.querySelector('[data-testid=\"stApp\"]')?.getAttribute('data-test-script-state')"
                f" === 'notRunning' && ({NOT_RUNNING})()")
# At least ``count`` captions drawn (the headings can come before the images).
CAPTIONS_AT_LEAST = f"count => document.querySelectorAll('{CAPTION}').length >= count"
# The first ``before.length`` captions differ from ``before`` (their innerText, as Playwright's all_inner_texts).
CAPTIONS_CHANGED = (f"before => [...document.querySelectorAll('{CAPTION}')].slice(0, before.length)"
                    ".map(caption => caption.innerText).join('\\n') !== before.join('\\n')")
# The p the player shows (NaN without a player).
SHOWN_P = (f"() => Number(document.querySelector('{PLAYER_SLIDER}')?.getAttribute('aria-valuetext')"
           "?.replace('p = ', ''))")
# The p the player shows is the p of the page's link: the server has had the player's last release
# (the run a release starts writes p into the URL).
P_IN_LINK = f"""() => {{
  const linked = new URLSearchParams(location.search).get('p');
  return linked !== null && Math.abs(({SHOWN_P})() - Number(linked)) < 1e-9;
}}"""


def check_browser(chromium: str = CHROMIUM) -> None:
    """Refuse early, naming what to install, when the browser or its driver is missing."""
    if not Path(chromium).is_file():
        raise ValueError(f"no Chromium at {chromium}; install it (apt-get install -y chromium) or set ANCHORDIV_CHROMIUM")
    for module in ("playwright", "streamlit"):  # the driver, and the servers it times
        require(module, "explorer", "The browser benchmark (the system Chromium, never `playwright install`)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _log_tail(path: Path, chars: int = 2000) -> str:
    return path.read_text(errors="replace")[-chars:] if path.is_file() else "(no log)"


def wait_healthy(url: str, process: subprocess.Popen, log_path: Path, seconds: float) -> None:
    """Return once streamlit answers its health check; fail with its log when it exits or never answers."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ValueError(f"streamlit ({log_path.stem}) exited with code {process.returncode} before answering "
                             f"at {url}; its log ends:\n{_log_tail(log_path)}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.25)
    raise ValueError(f"streamlit ({log_path.stem}) did not answer at {url}/_stcore/health within {seconds:.0f} s "
                     f"(a busy machine? retry when it is quieter); its log ends:\n{_log_tail(log_path)}")


@contextmanager
def streamlit_server(script: Path, env: dict[str, str], log_path: Path) -> Iterator[tuple[str, subprocess.Popen, Path]]:
    """``streamlit run script`` with the explorer's server settings on a free localhost port, run from
    the folder of ``log_path``: its URL, process and log file; always terminated on the way out."""
    port = free_port()
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            streamlit_argv(script, port=port, extra=["--server.address=127.0.0.1", "--server.fileWatcherType=none"]),
            cwd=log_path.parent, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            yield f"http://127.0.0.1:{port}", process, log_path
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def healthy(url: str, process: subprocess.Popen, log_path: Path) -> None:
    """:func:`wait_healthy` in a thread, so that the browser's messages go on being read meanwhile."""
    await asyncio.to_thread(wait_healthy, url, process, log_path, WAIT_S)


def explorer_env(workdir: Path, split: str = "all", limit: int | None = None) -> dict[str, str]:
    """The explorer's environment on ``split`` (first ``limit`` images) of the built-in world, with
    an empty private cache in ``workdir`` (so that the user's cache stays untouched and the first
    start is a first start)."""
    from ..builtin.weights import ASSETS_DIR, WEIGHTS_NAME

    if not (ASSETS_DIR / WEIGHTS_NAME).is_file():
        raise ValueError(f"the built-in model weights are missing ({ASSETS_DIR / WEIGHTS_NAME}); "
                         "run `python -m anchordiv train-builtin` first")
    cache = workdir / "cache"
    cache.mkdir(exist_ok=True)
    env = {**os.environ, "ANCHORDIV_CACHE": str(cache), "ANCHORDIV_APP_GALLERY_SPLIT": split}
    env.pop("ANCHORDIV_APP_GALLERY_LIMIT", None)
    return env if limit is None else {**env, "ANCHORDIV_APP_GALLERY_LIMIT": str(limit)}


@asynccontextmanager
async def chromium_browser(chromium: str = CHROMIUM) -> AsyncIterator:
    """Headless system Chromium with :data:`CHROMIUM_ARGS`, closed on the way out."""
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            await browser.close()


class RunWatch:
    """Whether a script run has finished, read from Streamlit's websocket messages
    (``script_finished``) as they reach the browser: the page's script state alone cannot say,
    as it reads "not running" too before the page has handled the run's first message."""

    def __init__(self, page):
        self._finished = asyncio.Event()
        self.finished_at = None  # perf_counter() when the run's end reached the browser
        page.on("websocket", lambda socket: socket.on("framereceived", self._frame))

    def reset(self) -> None:
        """Forget the runs so far: :meth:`finished` waits for the next one."""
        self._finished.clear()

    async def finished(self) -> None:
        """Return once the first run since :meth:`reset` has finished."""
        try:
            await asyncio.wait_for(self._finished.wait(), WAIT_S)
        except TimeoutError:
            raise TimeoutError(f"no script_finished message within {WAIT_S} s") from None

    def _frame(self, payload) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        # script_finished is a few bytes; skipping the big deltas keeps this handler cheap.
        if not isinstance(payload, bytes) or len(payload) > 256 or self._finished.is_set():
            return
        message = ForwardMsg.FromString(payload)
        done = (ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY)
        if message.WhichOneof("type") == "script_finished" and message.script_finished in done:
            self.finished_at = time.perf_counter()
            self._finished.set()


async def wait_until(page, condition: str, arg=None) -> float:
    """Once the page function ``condition`` holds for ``arg``, when it came to hold: ``perf_counter``
    seconds, read from the page's own clock at the change that made it hold (or at the check, when
    it held already), so that a busy event loop here or a slow reply from the browser adds nothing.
    :class:`TimeoutError` after :data:`WAIT_S`. It is checked at each change of the page (a
    MutationObserver), not polled at every frame as ``wait_for_function`` does: with many pages
    open, polling would load the very machine being measured."""
    held_at_ms = await page.evaluate(f"""arg => new Promise(resolve => {{
      const holds = () => ({condition})(arg);
      if (holds()) return resolve(Date.now());
      const observer = new MutationObserver(() => {{ if (holds()) {{ stop(); resolve(Date.now()); }} }});
      const timer = setTimeout(() => {{ stop(); resolve(null); }}, {WAIT_S * 1000});
      const stop = () => {{ observer.disconnect(); clearTimeout(timer); }};
      observer.observe(document, {{childList: true, subtree: true, characterData: true, attributes: true}});
    }})""", arg)
    if held_at_ms is None:
        raise TimeoutError(f"{condition[:60]}… did not hold")
    # The page's Date.now() and time.time() read the same system clock.
    return held_at_ms / 1000 - (time.time() - time.perf_counter())


async def wait_drawn(page) -> None:
    """Return once the page's images and fonts are loaded and its main thread has had a moment idle:
    a page that shows its captions may still be fetching, decoding and laying out its images."""
    await page.evaluate("""async () => {
      await document.fonts.ready;
      await Promise.all([...document.images].filter(image => !image.complete).map(
        image => new Promise(done => { image.addEventListener('load', done); image.addEventListener('error', done); })));
      await new Promise(done => requestIdleCallback(done));
    }""")


async def grids(page) -> list[list[str]]:
    """The captions of the page's image grids, first grid first."""
    return await page.evaluate(GRIDS_JS)


async def _fail(page, name: str, what: str, error: Exception, log_path: Path) -> ValueError:
    body = (await page.locator("body").inner_text())[-1500:]
    return ValueError(f"{name}: {what} did not happen within {WAIT_S} s ({error!r}); the page shows:\n{body}\n"
                      f"its streamlit log ends:\n{_log_tail(log_path)}")


async def open_page(context, url: str, name: str, log_path: Path):
    """A fresh page of the app and its :class:`RunWatch`: seconds from ``goto`` until two grids of
    10 captions are drawn."""
    from playwright.async_api import Error as PlaywrightError

    page = await context.new_page()
    page.set_default_timeout(WAIT_S * 1000)  # under load (many sessions) an action may wait past Playwright's 30 s
    watch = RunWatch(page)
    start = time.perf_counter()
    await page.goto(url, wait_until="commit")
    try:
        drawn_at = await wait_until(page, FIRST_GRIDS)
    except (PlaywrightError, TimeoutError) as error:
        raise await _fail(page, name, "the first grids", error, log_path) from error
    return page, watch, drawn_at - start


async def wait_at_rest(page, watch: RunWatch, start: float) -> float:
    """Seconds from ``start`` until the run has finished (its last message reached the browser) and
    the page has taken it in (:data:`PAGE_AT_REST`, by the page's clock)."""
    await watch.finished()
    return await wait_until(page, PAGE_AT_REST) - start


def plays_in_browser(name: str) -> bool:
    """Whether app ``name``'s p is the explorer's p player (no server run per step)."""
    return APPS[name][1] is None


def p_slider(page, name: str):
    """App ``name``'s p slider: the p player's range input, or the Streamlit slider by its label."""
    label = APPS[name][1]
    if label is None:
        return page.locator(PLAYER_SLIDER)
    return page.locator('[data-testid="stSlider"]').filter(has_text=label).get_by_role("slider")


async def slider_p(page, name: str) -> float:
    """The p app ``name``'s slider shows (the player's range counts steps; its text says p)."""
    slider = p_slider(page, name)
    if plays_in_browser(name):
        return float((await slider.get_attribute("aria-valuetext")).removeprefix("p = "))
    return float(await slider.input_value())


async def _arrow(slider, previous: str) -> str:
    """The key for the next step: on in the same direction (every step a new p), turning at the ends."""
    value, low, high = [float(text) for text in (await slider.input_value(), await slider.get_attribute("min"),
                                                 await slider.get_attribute("max"))]
    return "ArrowLeft" if value >= high else "ArrowRight" if value <= low else previous


@dataclass(frozen=True)
class Step:
    """One arrow key on the p slider: seconds until the first grid's captions differed and until the
    page was at rest, the key pressed (the next step goes on the same way) and when it was pressed
    (``perf_counter``)."""
    grid_s: float
    rest_s: float
    key: str
    started: float


async def step_p(page, watch: RunWatch, name: str, log_path: Path, previous: str = "ArrowRight") -> Step:
    """One step of app ``name``'s p slider on ``page``, on in the direction of ``previous``."""
    from playwright.async_api import Error as PlaywrightError

    slider = p_slider(page, name)
    try:
        key = await _arrow(slider, previous)
        before = (await grids(page))[0]
        watch.reset()
        await slider.focus()
        start = time.perf_counter()
        await slider.press(key)
        changed = await wait_until(page, GRID_CHANGED, before) - start
        rest = (await wait_until(page, PLAYER_AT_REST) - start if plays_in_browser(name)
                else await wait_at_rest(page, watch, start))
        return Step(changed, rest, key, start)
    except (PlaywrightError, TimeoutError) as error:
        raise await _fail(page, name, "a step of p until the grid changed", error, log_path) from error


async def wait_release(page, watch: RunWatch, name: str, step: Step, log_path: Path) -> float:
    """For the p player: seconds from ``step``'s key press until the run its release starts has
    finished and the page is at rest (its URL and open details then show the new p)."""
    from playwright.async_api import Error as PlaywrightError

    try:
        await watch.finished()
        await wait_until(page, PAGE_AT_REST)
        return watch.finished_at - step.started
    except (PlaywrightError, TimeoutError) as error:
        raise await _fail(page, name, "the run of a release of p", error, log_path) from error


async def _open_and_settle(context, url: str, name: str, log_path: Path) -> float:
    """Open a fresh page of the app: seconds until its first grids are drawn; the page is closed
    once its script run is over (the time to get there is not counted)."""
    page, watch, seconds = await open_page(context, url, name, log_path)
    await wait_at_rest(page, watch, time.perf_counter())
    await page.close()
    return seconds


async def _start(context, script: Path, env: dict[str, str], log_path: Path, name: str):
    """Start ``streamlit run script`` and open it: seconds from the launch until the first grids are
    drawn, the server's ``(url, process, log_path)``, still running, and the stack that stops it."""
    stack = ExitStack()
    try:
        started = time.perf_counter()
        url, process, log_path = server = stack.enter_context(streamlit_server(script, env, log_path))
        await healthy(url, process, log_path)
        until_open = time.perf_counter() - started
        return until_open + await _open_and_settle(context, url, name, log_path), server, stack
    except BaseException:
        stack.close()
        raise


def cpu_seconds(process: subprocess.Popen) -> float:
    """CPU seconds of ``process`` so far, user and system, of all its threads (ended ones too), to
    the nanosecond: its Linux process CPU-time clock (``clock_getcpuclockid``). ``/proc/PID/stat``
    counts 10 ms ticks, about what a whole p step of the reference costs."""
    return time.clock_gettime((~process.pid << 3) | 2)  # the kernel's MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)


def _runs_logged(step_log: Path, offset: int) -> list[dict]:
    """The script runs :mod:`~anchordiv.app.step_clock` logged after byte ``offset`` of ``step_log``."""
    if not step_log.is_file():
        return []
    with open(step_log, "rb") as log:
        log.seek(offset)
        return [json.loads(line) for line in log.read().decode().splitlines() if line.strip()]


def step_cpu(server_s: float, runs: list[dict]) -> dict[str, float | None]:
    """One step's :data:`CPU_FIGURES`, from the server's CPU seconds and the runs it logged; without
    any logged run (a script not wrapped in ``step_clock.timed_run``) only the server's are known."""
    if not runs:
        return {figure: server_s if figure == "in all" else None for figure in CPU_FIGURES}
    script_s = sum(run["cpu_s"] for run in runs)
    stages = {stage: sum(run["stages"].get(stage, 0.0) for run in runs) for stage in STAGES}
    return {"in all": server_s, **stages, "other script work": script_s - sum(stages.values()),
            "Streamlit outside the script": server_s - script_s}


def median_known(values: Iterable[float | None]) -> float | None:
    """The median of the values that are not ``None``; ``None`` when none is."""
    known = [value for value in values if value is not None]
    return statistics.median(known) if known else None


async def _steps_with_cpu(page, watch: RunWatch, name: str, process: subprocess.Popen, log_path: Path,
                          step_log: Path, repeats: int
                          ) -> tuple[list[Step], dict[str, float | None], dict[str, float | None] | None, list[int],
                                     list[float]]:
    """``repeats`` p steps; the medians over them of the server's CPU per step and per release
    (:data:`CPU_FIGURES`; ``None`` for an app whose steps have no release); each step's runs; and
    the seconds from each key press until its release's run finished (empty for such an app)."""
    steps, cpu, released, release_cpu, step_runs, key = [], [], [], [], [], "ArrowRight"
    for _ in range(repeats):
        offset = step_log.stat().st_size if step_log.is_file() else 0
        # Counted: the server's CPU from just before the key press (the grid read and focus before
        # it cost the server nothing) until SETTLE_S after the page is at rest, so that the event
        # loop's sending of the last messages and the browser's image requests are in; its idle
        # ticking over that time (a few ms) is too. The runs are those whose lines were written
        # meanwhile: a line is written as its run ends, before Streamlit says the run finished.
        before = cpu_seconds(process)
        step = await step_p(page, watch, name, log_path, key)
        await asyncio.sleep(SETTLE_S)
        runs = _runs_logged(step_log, offset)
        cpu.append(step_cpu(cpu_seconds(process) - before, runs))
        step_runs.append(len(runs))
        if plays_in_browser(name):  # then the run of its release, counted apart
            offset, before = step_log.stat().st_size if step_log.is_file() else 0, cpu_seconds(process)
            released.append(await wait_release(page, watch, name, step, log_path))
            await asyncio.sleep(SETTLE_S)
            release_cpu.append(step_cpu(cpu_seconds(process) - before, _runs_logged(step_log, offset)))
        steps.append(step)
        key = step.key
    medians = {figure: median_known(step[figure] for step in cpu) for figure in CPU_FIGURES}
    release = {figure: median_known(step[figure] for step in release_cpu) for figure in CPU_FIGURES} if release_cpu else None
    return steps, medians, release, step_runs, released


async def _measure_app(context, name: str, env: dict[str, str], workdir: Path, repeats: int) -> tuple[dict, float]:
    """The medians of :data:`MEASURES` for one app and, under ``"cpu"``, of :data:`CPU_FIGURES`; and
    the seconds of its first start (the explorer's with the empty cache of ``env``, which the later
    starts then find filled)."""
    script = app_dir() / APPS[name][0]
    first, (url, process, log_path), server = await _start(context, script, env, workdir / f"{name}-first.log", name)
    logger.info(f"  {name}: first start {first:.2f} s")
    with server:
        opens = [await _open_and_settle(context, url, name, log_path) for _ in range(repeats)]
        page, watch, _ = await open_page(context, url, name, log_path)
        await wait_at_rest(page, watch, time.perf_counter())
        await wait_drawn(page)
        steps, cpu, release_cpu, step_runs, released = await _steps_with_cpu(page, watch, name, process, log_path,
                                                                             Path(env[STEP_LOG]), repeats)
        await page.close()
    starts = []
    for attempt in range(repeats):
        seconds, _, server = await _start(context, script, env, workdir / f"{name}-start{attempt}.log", name)
        server.close()
        starts.append(seconds)
    return {"start_s": statistics.median(starts), "open_s": statistics.median(opens),
            "move_p_grid_s": statistics.median(step.grid_s for step in steps),
            "move_p_rest_s": statistics.median(step.rest_s for step in steps),
            "release_s": statistics.median(released) if released else None, "cpu": cpu, "release_cpu": release_cpu,
            "runs_per_step": max(step_runs)}, first


def ratio(explorer: float | None, reference: float | None) -> float | None:
    """explorer / reference; ``None`` when either is unknown or the reference is 0."""
    return None if explorer is None or not reference else explorer / reference


def as_seconds(value: float) -> str:
    return f"{value:.3f} s"


def as_milliseconds(value: float) -> str:
    return f"{1000 * value:.1f} ms"


def ratio_line(words: str, explorer: float | None, reference: float | None,
               shown: Callable[[float], str] = as_seconds) -> str:
    """``words: explorer …, reference …, explorer / reference …``, "n/a" for what is unknown."""
    def text(value: float | None) -> str:
        return "n/a" if value is None else shown(value)

    share = ratio(explorer, reference)
    return (f"{words}: explorer {text(explorer)}, reference {text(reference)}, "
            f"explorer / reference {'n/a' if share is None else f'{share:.2f}'}")


def _report(results: dict) -> None:
    for key, words in MEASURES.items():
        logger.info(ratio_line(words, results["explorer"][key], results["reference"][key]))
    logger.info(f"{FIRST_START}: explorer {results['first_start_s']:.1f} s")
    for figure in CPU_FIGURES:
        logger.info(ratio_line(f"{CPU_WORDS}, {figure}", results["explorer"]["cpu"][figure],
                               results["reference"]["cpu"][figure], as_milliseconds))
    for name in APPS:
        logger.info(f"  {name}: at most {results[name]['runs_per_step']} script run(s) during a p step")
        if results[name]["runs_per_step"] and results[name]["cpu"][STAGES[0]] is None:
            logger.info(f"  {name}: its runs logged no lines (its script is not wrapped in step_clock.timed_run): "
                        "only its CPU in all is known")
    release = results["explorer"]["release_cpu"]
    if release is not None:
        for figure in CPU_FIGURES:
            value = release[figure]
            logger.info(f"{RELEASE_CPU_WORDS}, {figure}: explorer {'n/a' if value is None else as_milliseconds(value)}")


async def _browser_benchmark(repeats: int, split: str, limit: int | None, chromium: str) -> dict:
    shown = "all" if limit is None else f"the first {limit:,}"
    logger.info(f"machine: {os.cpu_count()} cores; explorer gallery: {shown} images of the '{split}' emoji world; "
        f"{repeats} repeats, medians")
    results: dict = {"cores": os.cpu_count(), "gallery": {"split": split, "limit": limit}, "repeats": repeats}
    with tempfile.TemporaryDirectory(prefix="anchordiv-browser-bench-") as folder:
        workdir = Path(folder)
        envs = {"explorer": explorer_env(workdir, split, limit), "reference": dict(os.environ)}
        async with chromium_browser(chromium) as browser:
            context = await browser.new_context(viewport=VIEWPORT)
            for name in APPS:
                env = {**envs[name], STEP_LOG: str(workdir / f"{name}-steps.jsonl")}
                results[name], first = await _measure_app(context, name, env, workdir, repeats)
                if name == "explorer":
                    results["first_start_s"] = first
    results["ratio"] = {key: ratio(results["explorer"][key], results["reference"][key]) for key in MEASURES}
    results["cpu_ratio"] = {figure: ratio(results["explorer"]["cpu"][figure], results["reference"]["cpu"][figure])
                            for figure in CPU_FIGURES}
    _report(results)
    return results


def browser_benchmark(repeats: int = 5, split: str = "all", limit: int | None = None,
                      chromium: str = CHROMIUM) -> dict:
    """Time the explorer (on ``split``, first ``limit`` images, of the built-in world) and the
    reference app in headless Chromium: medians over ``repeats``, one app at a time.

    Returns ``{"cores", "gallery", "repeats", "first_start_s", "explorer": {measure: s, "cpu":
    {figure: CPU s}}, "reference": {...}, "ratio": {measure: explorer / reference}, "cpu_ratio":
    {figure: explorer / reference}}`` with the measures of :data:`MEASURES` and the figures of
    :data:`CPU_FIGURES` (medians of the server's CPU per p step); ``first_start_s`` is the
    explorer's first start with an empty cache. A CPU figure is ``None`` where it is unknown: the
    stages of an app whose runs logged no lines, and a ratio with such a figure.
    """
    check_browser(chromium)
    return asyncio.run(_browser_benchmark(repeats, split, limit, chromium))
