"""Speed in a real browser: :func:`browser_benchmark` times the explorer against a minimal
reference Streamlit app (``python -m anchordiv explorer-bench --browser``).

Each app runs as ``streamlit run`` on a free localhost port, one app at a time, and headless
system Chromium (driven by Playwright, never ``playwright install``) measures: starting the server
until the first two grids of 10 captions are drawn (with an empty cache for the explorer's first
start, then with the disk cache it left), opening the app on a running server, and one step of the
p slider until the first grid changes and until the script run is over. The reference
(``app/reference_grid.py``) draws the same kind of page with nothing behind it, so the ratio
explorer / reference is the explorer's own cost. Both scripts are found through
:func:`anchordiv.resources.app_dir`, so an installed package runs it from any folder; each figure
is logged at INFO as it is measured.
"""
from __future__ import annotations

import logging
import os
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Callable, Iterator

from ..app.server_settings import EXPLORER_SCRIPT, streamlit_argv
from ..resources import app_dir

logger = logging.getLogger(__name__)
CHROMIUM = os.environ.get("ANCHORDIV_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
APPS = {"explorer": (EXPLORER_SCRIPT, "weight of A"), "reference": ("reference_grid.py", "weight of grid A")}
MEASURES = {"start_s": "start the server, disk cache present -> first grid",
            "open_s": "open the app, server running -> first grid",
            "move_p_grid_s": "move p one step -> the grid changes",
            "move_p_rest_s": "move p one step -> page at rest again"}
FIRST_START = "first start, empty cache -> first grid"
WAIT_S = 180  # per wait in the browser; a first start with a gallery to embed takes longer

# The captions of each st.image grid (an element holding 10 or more), first grid first: the
# explorer also captions its query image, which is not part of any grid.
GRIDS_JS = """() => [...document.querySelectorAll('[data-testid="stElementContainer"]')]
  .filter(box => !box.querySelector('[data-testid="stElementContainer"]'))
  .map(box => [...box.querySelectorAll('[data-testid="stImageCaption"]')].map(c => c.innerText))
  .filter(captions => captions.length >= 10)"""
RUNNING = '[data-testid^="stStatusWidgetRunning"]'


def check_browser(chromium: str = CHROMIUM) -> None:
    """Refuse early, naming what to install, when the browser or its driver is missing."""
    if not Path(chromium).is_file():
        raise ValueError(f"no Chromium at {chromium}; install it (apt-get install -y chromium) or set ANCHORDIV_CHROMIUM")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as error:
        raise ValueError(f"the playwright package is missing ({error}); pip install playwright "
                         "(the system Chromium is used: no `playwright install`)") from error


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


class RunWatch:
    """When each script run finished, read from Streamlit's websocket messages (``script_finished``):
    the status widget alone cannot say, as it shows a running script only after 0.5 s of running."""

    def __init__(self, page):
        self.finished_at: float | None = None
        page.on("websocket", lambda socket: socket.on("framereceived", self._frame))

    def _frame(self, payload) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        # script_finished is a few bytes; skipping the big deltas keeps this handler cheap.
        if not isinstance(payload, bytes) or len(payload) > 256:
            return
        message = ForwardMsg.FromString(payload)
        done = (ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY)
        if message.WhichOneof("type") == "script_finished" and message.script_finished in done:
            self.finished_at = time.perf_counter()


def _grids(page) -> list[list[str]]:
    return page.evaluate(GRIDS_JS)


def _fail(page, name: str, what: str, error: Exception, log_path: Path) -> ValueError:
    body = page.locator("body").inner_text()[-1500:]
    return ValueError(f"{name}: {what} did not happen within {WAIT_S} s ({error}); the page shows:\n{body}\n"
                      f"its streamlit log ends:\n{_log_tail(log_path)}")


def _open(context, url: str, name: str, log_path: Path):
    """A fresh page of the app: seconds from ``goto`` until two grids of 10 captions are drawn."""
    from playwright.sync_api import Error as PlaywrightError

    page = context.new_page()
    watch = RunWatch(page)
    start = time.perf_counter()
    page.goto(url, wait_until="commit")
    try:
        page.wait_for_function(f"() => ({GRIDS_JS})().flat().length >= 20", timeout=WAIT_S * 1000)
    except PlaywrightError as error:
        raise _fail(page, name, "the first grids", error, log_path) from error
    return page, watch, time.perf_counter() - start


def _wait_at_rest(page, watch: RunWatch, start: float) -> float:
    """Seconds from ``start`` until the run has finished and the status widget shows no running script."""
    deadline = time.monotonic() + WAIT_S
    while watch.finished_at is None:
        if time.monotonic() > deadline:
            raise TimeoutError("no script_finished message")
        page.wait_for_timeout(5)
    if page.locator(RUNNING).count():
        page.wait_for_function(f"() => !document.querySelector('{RUNNING}')", timeout=WAIT_S * 1000)
        return time.perf_counter() - start
    return watch.finished_at - start


def _arrow(slider, previous: str) -> str:
    """The key for the next step: on in the same direction (every step a new p), turning at the ends."""
    value, low, high = (float(text) for text in (slider.input_value(), slider.get_attribute("min"),
                                                 slider.get_attribute("max")))
    return "ArrowLeft" if value >= high else "ArrowRight" if value <= low else previous


def _step_p(page, watch: RunWatch, slider_label: str, name: str, log_path: Path,
            previous: str) -> tuple[float, float, str]:
    """One arrow key on the p slider: seconds until the first grid's captions differ, and until
    the page is at rest, and the key pressed."""
    from playwright.sync_api import Error as PlaywrightError

    slider = page.locator('[data-testid="stSlider"]').filter(has_text=slider_label).get_by_role("slider")
    key = _arrow(slider, previous)
    before = _grids(page)[0]
    watch.finished_at = None
    slider.focus()
    start = time.perf_counter()
    slider.press(key)
    try:
        page.wait_for_function(f"before => ({GRIDS_JS})()[0]?.join('\\n') !== before.join('\\n')", arg=before,
                               timeout=WAIT_S * 1000)
        changed = time.perf_counter() - start
        return changed, _wait_at_rest(page, watch, start), key
    except (PlaywrightError, TimeoutError) as error:
        raise _fail(page, name, "a change of the grid after moving p", error, log_path) from error


def _open_and_settle(context, url: str, name: str, log_path: Path) -> float:
    """Open a fresh page of the app: seconds until its first grids are drawn; the page is closed
    once its script run is over (the time to get there is not counted)."""
    page, watch, seconds = _open(context, url, name, log_path)
    _wait_at_rest(page, watch, time.perf_counter())
    page.close()
    return seconds


def _start(context, script: Path, env: dict[str, str], log_path: Path, name: str):
    """Start ``streamlit run script`` and open it: seconds from the launch until the first grids are
    drawn, with the server still running (the caller closes the returned stack)."""
    stack = ExitStack()
    try:
        started = time.perf_counter()
        url, process, log_path = stack.enter_context(streamlit_server(script, env, log_path))
        wait_healthy(url, process, log_path, seconds=WAIT_S)
        until_open = time.perf_counter() - started
        return until_open + _open_and_settle(context, url, name, log_path), url, log_path, stack
    except BaseException:
        stack.close()
        raise


def _measure_app(context, name: str, env: dict[str, str], workdir: Path,
                 repeats: int) -> tuple[dict[str, float], float]:
    """The medians of :data:`MEASURES` for one app, and the seconds of its first start (the
    explorer's with the empty cache of ``env``, which the later starts then find filled)."""
    script = app_dir() / APPS[name][0]
    first, url, log_path, server = _start(context, script, env, workdir / f"{name}-first.log", name)
    logger.info(f"  {name}: first start {first:.2f} s")
    with server:
        opens = [_open_and_settle(context, url, name, log_path) for _ in range(repeats)]
        page, watch, _ = _open(context, url, name, log_path)
        _wait_at_rest(page, watch, time.perf_counter())
        steps, key = [], "ArrowRight"
        for _ in range(repeats):
            *seconds, key = _step_p(page, watch, APPS[name][1], name, log_path, key)
            steps.append(seconds)
        page.close()
    starts = []
    for attempt in range(repeats):
        seconds, _, _, server = _start(context, script, env, workdir / f"{name}-start{attempt}.log", name)
        server.close()
        starts.append(seconds)
    return {"start_s": statistics.median(starts), "open_s": statistics.median(opens),
            "move_p_grid_s": statistics.median(s[0] for s in steps),
            "move_p_rest_s": statistics.median(s[1] for s in steps)}, first


def _report(results: dict) -> None:
    for key, words in MEASURES.items():
        explorer, reference, ratio = results["explorer"][key], results["reference"][key], results["ratio"][key]
        logger.info(f"{words}: explorer {explorer:.3f} s, reference {reference:.3f} s, explorer / reference {ratio:.2f}")
    logger.info(f"{FIRST_START}: explorer {results['first_start_s']:.1f} s")


def browser_benchmark(repeats: int = 5, split: str = "all", limit: int | None = None,
                      chromium: str = CHROMIUM) -> dict:
    """Time the explorer (on ``split``, first ``limit`` images, of the built-in world) and the
    reference app in headless Chromium: medians over ``repeats``, one app at a time.

    Returns ``{"cores", "gallery", "repeats", "first_start_s", "explorer": {measure: s},
    "reference": {...}, "ratio": {measure: explorer / reference}}`` with the measures of
    :data:`MEASURES`; ``first_start_s`` is the explorer's first start with an empty cache.
    """
    from playwright.sync_api import sync_playwright

    check_browser(chromium)
    shown = "all" if limit is None else f"the first {limit:,}"
    logger.info(f"machine: {os.cpu_count()} cores; explorer gallery: {shown} images of the '{split}' emoji world; "
        f"{repeats} repeats, medians")
    results: dict = {"cores": os.cpu_count(), "gallery": {"split": split, "limit": limit}, "repeats": repeats}
    with tempfile.TemporaryDirectory(prefix="anchordiv-browser-bench-") as folder, ExitStack() as stack:
        workdir = Path(folder)
        envs = {"explorer": explorer_env(workdir, split, limit), "reference": dict(os.environ)}
        playwright = stack.enter_context(sync_playwright())
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        stack.callback(browser.close)
        context = browser.new_context(viewport={"width": 1500, "height": 2600})
        for name in APPS:
            results[name], first = _measure_app(context, name, envs[name], workdir, repeats)
            if name == "explorer":
                results["first_start_s"] = first
    results["ratio"] = {key: results["explorer"][key] / results["reference"][key] for key in MEASURES}
    _report(results)
    return results


# -- one session's heaviest request against another's p step --------------------------------------
def heaviest_compare_link(seed: int) -> str:
    """The query string of the costliest Compare figure a link may ask for
    (:data:`~anchordiv.figure.DEFAULT_LIMITS`): as many neighbours in all as allowed, top-k at its
    limit, and as many anchor geometries to fit as allowed, each at a scale no earlier figure used
    (``seed`` picks them, and the rows), so that no cache serves it."""
    from urllib.parse import urlencode

    from ..figure import DEFAULT_LIMITS as LIMITS

    kinds = ("gaussian", "gmm", "latent-softmax", "softmax")
    fitted = [f"mix p=0.5 model={kinds[index % len(kinds)]} s={20 + index + 10 * seed}"
              for index in range(LIMITS.geometries)]
    columns = (fitted + ["cosine", "iti"])[:LIMITS.columns]
    rows = [f"random:{1000 * seed + index}" for index in range(min(LIMITS.rows, LIMITS.neighbours // (LIMITS.k * len(columns))))]
    return urlencode({"rows": rows, "columns": columns, "cell_k": LIMITS.k}, doseq=True)


def _cpu_seconds(process: subprocess.Popen) -> float:
    """User and system CPU seconds of ``process`` so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _steps_while(page, watch: RunWatch, busy: Callable[[], bool], log_path: Path, most: int,
                 started: list[float] | None = None) -> list[float]:
    """p steps (seconds to rest) on ``page`` while ``busy()`` holds, at most ``most`` of them;
    ``started`` gets each step's start (``perf_counter``)."""
    steps, key = [], "ArrowRight"
    while busy() and len(steps) < most:
        if started is not None:
            started.append(time.perf_counter())
        _, rest, key = _step_p(page, watch, APPS["explorer"][1], "explorer", log_path, key)
        steps.append(rest)
    return steps


def p_steps() -> int:
    """The Explore slider's steps from p = 0 to 1, from its setting (20 steps of 0.05)."""
    from ..explorer.page_state import SETTINGS

    p = SETTINGS["p"]
    return round((p.high - p.low) / p.step)


def isolation_benchmark(repeats: int = 5, split: str = "all", limit: int | None = None,
                        chromium: str = CHROMIUM) -> dict:
    """How much one session's heaviest allowed request slows another session's p step, and what a
    request costs once its tab is closed, in headless Chromium on one explorer server.

    Session B opens Explore, moves p over its whole range and back, and steps it ``4 repeats``
    times alone; then session A opens the largest
    Compare figure a link may ask for (:func:`heaviest_compare_link`) and B steps p while A's run
    lasts. Then A opens another such figure and closes its tab after one second: the server's CPU
    seconds in the 20 s after the close, against the CPU seconds the finished figure took.

    Returns ``{"alone_s", "loaded_s" (medians of B's steps to rest), "ratio", "alone_max_s",
    "loaded_max_s" (B's slowest steps), "slowest_steps" ((seconds after the heavy link, seconds) of
    B's three slowest), "loaded_steps",
    "heavy_s" (A's figure, link to drawn), "heavy_cpu_s", "after_close_cpu_s"}``.
    """
    from playwright.sync_api import sync_playwright

    check_browser(chromium)
    results: dict = {"cores": os.cpu_count(), "repeats": repeats}
    with tempfile.TemporaryDirectory(prefix="anchordiv-isolation-") as folder, ExitStack() as stack:
        workdir = Path(folder)
        playwright = stack.enter_context(sync_playwright())
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        stack.callback(browser.close)
        url, process, log_path = stack.enter_context(
            streamlit_server(app_dir() / APPS["explorer"][0], explorer_env(workdir, split, limit), workdir / "server.log"))
        wait_healthy(url, process, log_path, seconds=WAIT_S)
        viewport = {"viewport": {"width": 1500, "height": 2600}}
        page_b, watch_b, _ = _open(browser.new_context(**viewport), url, "explorer", log_path)
        _wait_at_rest(page_b, watch_b, time.perf_counter())
        # Every p of the slider once, there and back, so that alone and loaded steps alike find
        # each p's ranking as a person moving p back and forth would.
        _steps_while(page_b, watch_b, lambda: True, log_path, 2 * p_steps())
        alone = _steps_while(page_b, watch_b, lambda: True, log_path, 4 * repeats)

        heavy = browser.new_context(**viewport).new_page()
        cpu_before, started = _cpu_seconds(process), time.perf_counter()
        heavy.goto(f"{url}/compare?{heaviest_compare_link(1)}", wait_until="commit")
        drawn = heavy.get_by_role("button", name="Download PDF")
        step_starts: list[float] = []
        loaded = _steps_while(page_b, watch_b, lambda: not drawn.count(), log_path, 20 * repeats, step_starts)
        drawn.wait_for(timeout=WAIT_S * 1000)
        heavy.wait_for_function(f"() => !document.querySelector('{RUNNING}')", timeout=WAIT_S * 1000)
        results.update(heavy_s=time.perf_counter() - started, heavy_cpu_s=_cpu_seconds(process) - cpu_before)
        # When the slowest steps began, in seconds after the heavy link was opened (where they fall
        # in its fits, its cells and its drawing).
        slowest = sorted(range(len(loaded)), key=loaded.__getitem__)[-3:]
        results["slowest_steps"] = [(round(step_starts[i] - started, 1), round(loaded[i], 3)) for i in slowest]

        gone = browser.new_context(**viewport)
        gone.new_page().goto(f"{url}/compare?{heaviest_compare_link(2)}", wait_until="commit")
        time.sleep(1.0)
        gone.close()
        cpu_closed = _cpu_seconds(process)
        time.sleep(20.0)
        results["after_close_cpu_s"] = _cpu_seconds(process) - cpu_closed
    results.update(alone_s=statistics.median(alone), loaded_s=statistics.median(loaded) if loaded else float("nan"),
                   loaded_max_s=max(loaded, default=float("nan")), alone_max_s=max(alone), loaded_steps=len(loaded))
    results["ratio"] = results["loaded_s"] / results["alone_s"]
    logger.info(f"machine: {os.cpu_count()} cores; gallery: {'all' if limit is None else limit} images of the '{split}' world")
    logger.info(f"p step alone: {results['alone_s']:.3f} s (median of {len(alone)})")
    logger.info(f"p step while another session draws the largest Compare figure: {results['loaded_s']:.3f} s "
        f"(median of {len(loaded)}), loaded / alone {results['ratio']:.2f}; slowest step {results['loaded_max_s']:.3f} s "
        f"loaded, {results['alone_max_s']:.3f} s alone")
    logger.info("the three slowest loaded steps (s after the heavy link opened, s): "
        + ", ".join(f"{at:.1f}: {seconds:.3f}" for at, seconds in results["slowest_steps"]))
    logger.info(f"the largest Compare figure: {results['heavy_s']:.1f} s from its link, {results['heavy_cpu_s']:.1f} CPU s")
    logger.info(f"server CPU in the 20 s after a tab asking for it closed (1 s in): {results['after_close_cpu_s']:.1f} CPU s")
    return results
