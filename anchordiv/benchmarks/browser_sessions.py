"""Several sessions on one server, in headless Chromium: ``explorer-bench --browser --sessions N``
(:func:`sessions_benchmark`: N people moving p at once) and ``--isolation``
(:func:`isolation_benchmark`: one session's heaviest request against another's p step).

Each session is a browser context of its own (its own cookies, so its own Streamlit session) in one
Chromium, driven through Playwright's asyncio API, so that their pages move at once from one event
loop; servers and pages are handled by :mod:`anchordiv.benchmarks.browser`.
"""
from __future__ import annotations

import asyncio
import logging
import os
import statistics
import subprocess
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Awaitable, Iterable

from ..resources import app_dir
from .browser import (APPS, CHROMIUM, NOT_RUNNING, VIEWPORT, WAIT_S, RunWatch, Step, as_milliseconds, as_seconds,
                      check_browser, chromium_browser, cpu_seconds, explorer_env, grids, healthy, open_page,
                      plays_in_browser, ratio, ratio_line, slider_p, step_p, streamlit_server, wait_at_rest,
                      wait_drawn, wait_release, wait_until)

logger = logging.getLogger(__name__)
SESSION_VIEWPORT = {"width": 1500, "height": 1400}  # shorter than VIEWPORT, so that 16 pages fit in memory
SESSION_MEASURES = {"median_s": "p step, {sessions} sessions at once -> page at rest, median",
                    "worst_s": "p step, {sessions} sessions at once -> page at rest, worst",
                    "grid_s": "p step, {sessions} sessions at once -> the grid changes, median",
                    "solo_s": "p step, one session alone -> page at rest, median",
                    # The server's CPU over the sessions' walks, per step (and, for the p player,
                    # the run of its release): a step that takes much longer than sessions x this /
                    # cores waited on something else (on a small machine, mostly Chromium drawing
                    # the sessions' pages).
                    "server_cpu_s": "server CPU per p step and its release while {sessions} sessions step at once"}
# A walk of p: its steps, and the p and the first grid's captions each step reached.
Walk = tuple[list[Step], list[tuple[float, list[str]]]]


async def _at_once(coroutines: Iterable[Awaitable]) -> list:
    """The coroutines' results, run at once; the first failure is raised and the others cancelled."""
    tasks = [asyncio.ensure_future(coroutine) for coroutine in coroutines]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def _walk_p(page, watch: RunWatch, name: str, log_path: Path, repeats: int) -> Walk:
    """``repeats`` p steps on ``page``, each as soon as the last is at rest."""
    steps, reached, key = [], [], "ArrowRight"
    for _ in range(repeats):
        step = await step_p(page, watch, name, log_path, key)
        if plays_in_browser(name):  # as a person would: each step released, its run done, before the next
            await wait_release(page, watch, name, step, log_path)
        p = await slider_p(page, name)
        reached.append((p, (await grids(page))[0]))
        steps.append(step)
        key = step.key
    return steps, reached


async def _walk_together(browser, server: tuple[str, subprocess.Popen, Path], name: str, sessions: int,
                         repeats: int) -> tuple[list[Walk], float]:
    """``sessions`` new sessions open the app on ``server`` at once and, once all are at rest and
    drawn (:func:`~.browser.wait_drawn`), all start walking p (:func:`_walk_p`), each in a loop of its own: their walks, and the server's CPU
    seconds while they walked. Their contexts are closed on the way out."""
    url, process, log_path = server
    contexts = await _at_once(browser.new_context(viewport=SESSION_VIEWPORT) for _ in range(sessions))
    try:
        pages = await _at_once(open_page(context, url, name, log_path) for context in contexts)
        await _at_once(wait_at_rest(page, watch, time.perf_counter()) for page, watch, _ in pages)
        await _at_once(wait_drawn(page) for page, _, _ in pages)
        before = cpu_seconds(process)
        walks = await _at_once(_walk_p(page, watch, name, log_path, repeats) for page, watch, _ in pages)
        return walks, cpu_seconds(process) - before
    finally:
        await _at_once(context.close() for context in contexts)


def _mismatches(walks: list[Walk], alone: dict[float, list[str]]) -> list[str]:
    """Each session whose first grid after its last step is not the one a session alone had at that p."""
    found = []
    for session, (_, reached) in enumerate(walks, 1):
        p, grid = reached[-1]
        if grid != alone.get(p):
            found.append(f"session {session} at p = {p:.2f}: {grid[:2]}… where a session alone had "
                         f"{alone[p][:2] if p in alone else 'no grid'}…")
    return found


async def _measure_sessions(browser, name: str, env: dict[str, str], workdir: Path, sessions: int,
                            repeats: int) -> dict:
    """One app's :data:`SESSION_MEASURES` and its sessions' grid mismatches, on a server of its own."""
    with streamlit_server(app_dir() / APPS[name][0], env, workdir / f"{name}.log") as server:
        await healthy(*server)
        # A first walk, not counted, takes the server's first runs and fills what it keeps per p
        # (the explorer's encoded thumbnails), so that the solo walk finds what the sessions will.
        await _walk_together(browser, server, name, 1, repeats)
        [(solo, alone)], _ = await _walk_together(browser, server, name, 1, repeats)
        walks, server_cpu_s = await _walk_together(browser, server, name, sessions, repeats)
    rests = [step.rest_s for walk, _ in walks for step in walk]
    mismatches = _mismatches(walks, dict(alone))
    # Which steps were slowest (session, its step number, seconds to rest): where the worst falls.
    slowest = sorted(((session, number, round(step.rest_s, 3)) for session, (walk, _) in enumerate(walks, 1)
                      for number, step in enumerate(walk, 1)), key=lambda row: row[2])[-3:]
    return {"median_s": statistics.median(rests), "worst_s": max(rests), "slowest_steps": slowest,
            "grid_s": statistics.median(step.grid_s for walk, _ in walks for step in walk),
            "solo_s": statistics.median(step.rest_s for step in solo), "server_cpu_s": server_cpu_s / len(rests),
            "mismatches": len(mismatches), "first_mismatch": mismatches[0] if mismatches else None}


def _report_sessions(results: dict) -> None:
    for key, words in SESSION_MEASURES.items():
        logger.info(ratio_line(words.format(sessions=results["sessions"]), results["explorer"][key],
                               results["reference"][key], as_milliseconds if key == "server_cpu_s" else as_seconds))
    logger.info("first grid after each session's last step against a session alone at that p: "
                + ", ".join(f"{name} {results[name]['mismatches']} mismatches" for name in APPS))
    for name in APPS:
        logger.info(f"  {name}, the three slowest steps (session, its step, s): "
                    + ", ".join(f"{session}, {number}, {seconds:.3f}" for session, number, seconds in
                                results[name]["slowest_steps"]))
    for name in APPS:
        if results[name]["first_mismatch"]:
            logger.info(f"  {name}, the first: {results[name]['first_mismatch']}")


async def _sessions_benchmark(sessions: int, repeats: int, split: str, limit: int | None, chromium: str) -> dict:
    shown = "all" if limit is None else f"the first {limit:,}"
    logger.info(f"machine: {os.cpu_count()} cores; explorer gallery: {shown} images of the '{split}' emoji world; "
        f"{sessions} sessions, {repeats} p steps each")
    results: dict = {"cores": os.cpu_count(), "gallery": {"split": split, "limit": limit}, "repeats": repeats,
                     "sessions": sessions}
    with tempfile.TemporaryDirectory(prefix="anchordiv-sessions-bench-") as folder:
        workdir = Path(folder)
        envs = {"explorer": explorer_env(workdir, split, limit), "reference": dict(os.environ)}
        async with chromium_browser(chromium) as browser:
            for name in APPS:
                results[name] = await _measure_sessions(browser, name, envs[name], workdir, sessions, repeats)
    results["ratio"] = {key: ratio(results["explorer"][key], results["reference"][key]) for key in SESSION_MEASURES}
    _report_sessions(results)
    return results


def sessions_benchmark(sessions: int, repeats: int = 5, split: str = "all", limit: int | None = None,
                       chromium: str = CHROMIUM) -> dict:
    """``sessions`` people moving p at once on one server: the explorer (on ``split``, first
    ``limit`` images, of the built-in world), then the reference app, in headless Chromium.

    For each app, on a server of its own: one session walks p ``repeats`` steps (a warm-up, not
    counted), then another does it alone (the solo walk), then ``sessions`` sessions open the app
    and, once all are at rest with their images drawn, all start walking p together, each in a
    loop of its own: a step is pressed as soon as that session's last one is at rest, as a room of
    people would, not in lockstep with the slowest. Each step is timed as in :func:`~.browser.browser_benchmark`, until
    that session's first grid changes and until its page is at rest. Each session's first grid
    after its last step must be the one the solo walk showed at the same p; mismatches are counted.

    The browser shares the machine with the server: on a small one, drawing many pages at once
    takes more CPU than the server does, so ``server_cpu_s`` says how much of a step was the
    server's.

    Returns ``{"cores", "gallery", "repeats", "sessions", "explorer": {"median_s", "worst_s" (of all
    the sessions' steps, to rest), "grid_s" (their median until the grid changed), "solo_s" (the
    solo walk's median), "server_cpu_s" (the server's CPU seconds over the sessions' walks, per
    step), "mismatches", "first_mismatch" (``None`` without any)}, "reference": {...}, "ratio":
    {measure: explorer / reference}}`` with the measures of :data:`SESSION_MEASURES`.
    """
    if sessions < 2:
        raise ValueError(f"sessions: at least 2 for sessions at once; got {sessions}")
    check_browser(chromium)
    return asyncio.run(_sessions_benchmark(sessions, repeats, split, limit, chromium))


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


async def _steps_until(page, watch: RunWatch, log_path: Path, most: int, until=None,
                       started: list[float] | None = None) -> list[float]:
    """p steps (seconds to rest) of the explorer on ``page`` until the locator ``until`` is on the
    page (never, when ``None``), at most ``most`` of them; ``started`` gets each step's start
    (``perf_counter``)."""
    steps, key = [], "ArrowRight"
    while len(steps) < most and not (until is not None and await until.count()):
        if started is not None:
            started.append(time.perf_counter())
        step = await step_p(page, watch, "explorer", log_path, key)
        steps.append(step.rest_s)
        key = step.key
    return steps


def p_steps() -> int:
    """The Explore slider's steps from p = 0 to 1, from its setting (100 steps of 0.01)."""
    from ..explorer.settings import SETTINGS

    p = SETTINGS["p"]
    return round((p.high - p.low) / p.step)


async def _isolation_benchmark(repeats: int, split: str, limit: int | None, chromium: str) -> dict:
    results: dict = {"cores": os.cpu_count(), "repeats": repeats}
    with tempfile.TemporaryDirectory(prefix="anchordiv-isolation-") as folder:
        async with AsyncExitStack() as stack:
            workdir = Path(folder)
            browser = await stack.enter_async_context(chromium_browser(chromium))
            url, process, log_path = stack.enter_context(streamlit_server(
                app_dir() / APPS["explorer"][0], explorer_env(workdir, split, limit), workdir / "server.log"))
            await healthy(url, process, log_path)
            session_b = await browser.new_context(viewport=VIEWPORT)
            page_b, watch_b, _ = await open_page(session_b, url, "explorer", log_path)
            await wait_at_rest(page_b, watch_b, time.perf_counter())
            await wait_drawn(page_b)
            # Every p of the slider once, there and back, so that alone and loaded steps alike find
            # each p's ranking as a person moving p back and forth would.
            await _steps_until(page_b, watch_b, log_path, 2 * p_steps())
            alone = await _steps_until(page_b, watch_b, log_path, 4 * repeats)

            heavy = await (await browser.new_context(viewport=VIEWPORT)).new_page()
            cpu_before, started = cpu_seconds(process), time.perf_counter()
            await heavy.goto(f"{url}/compare?{heaviest_compare_link(1)}", wait_until="commit")
            drawn = heavy.get_by_role("button", name="Download PDF")
            step_starts: list[float] = []
            loaded = await _steps_until(page_b, watch_b, log_path, 20 * repeats, until=drawn, started=step_starts)
            await drawn.wait_for(timeout=WAIT_S * 1000)
            await wait_until(heavy, NOT_RUNNING)
            results.update(heavy_s=time.perf_counter() - started, heavy_cpu_s=cpu_seconds(process) - cpu_before)
            # When the slowest steps began, in seconds after the heavy link was opened (where they fall
            # in its fits, its cells and its drawing).
            slowest = sorted(range(len(loaded)), key=loaded.__getitem__)[-3:]
            results["slowest_steps"] = [(round(step_starts[i] - started, 1), round(loaded[i], 3)) for i in slowest]

            gone = await browser.new_context(viewport=VIEWPORT)
            await (await gone.new_page()).goto(f"{url}/compare?{heaviest_compare_link(2)}", wait_until="commit")
            await asyncio.sleep(1.0)  # the measured case: a tab that asks for the heaviest figure and is closed 1 s in
            await gone.close()
            cpu_closed = cpu_seconds(process)
            await asyncio.sleep(20.0)  # the window whose server CPU is measured (no signal ends it: it is the figure)
            results["after_close_cpu_s"] = cpu_seconds(process) - cpu_closed
    results.update(alone_s=statistics.median(alone), loaded_s=statistics.median(loaded) if loaded else float("nan"),
                   loaded_max_s=max(loaded, default=float("nan")), alone_max_s=max(alone), loaded_steps=len(loaded))
    results["ratio"] = results["loaded_s"] / results["alone_s"]
    _report_isolation(results, split, limit, len(alone))
    return results


def _report_isolation(results: dict, split: str, limit: int | None, alone_steps: int) -> None:
    logger.info(f"machine: {os.cpu_count()} cores; gallery: {'all' if limit is None else limit} images of the '{split}' world")
    logger.info(f"p step alone: {results['alone_s']:.3f} s (median of {alone_steps})")
    logger.info(f"p step while another session draws the largest Compare figure: {results['loaded_s']:.3f} s "
        f"(median of {results['loaded_steps']}), loaded / alone {results['ratio']:.2f}; slowest step "
        f"{results['loaded_max_s']:.3f} s loaded, {results['alone_max_s']:.3f} s alone")
    logger.info("the three slowest loaded steps (s after the heavy link opened, s): "
        + ", ".join(f"{at:.1f}: {seconds:.3f}" for at, seconds in results["slowest_steps"]))
    logger.info(f"the largest Compare figure: {results['heavy_s']:.1f} s from its link, {results['heavy_cpu_s']:.1f} CPU s")
    logger.info(f"server CPU in the 20 s after a tab asking for it closed (1 s in): {results['after_close_cpu_s']:.1f} CPU s")


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
    check_browser(chromium)
    return asyncio.run(_isolation_benchmark(repeats, split, limit, chromium))
