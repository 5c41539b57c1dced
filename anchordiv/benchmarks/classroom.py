"""A class on one server: ``explorer-bench --browser --class N`` (:func:`class_benchmark`).

What one explorer server holds when a class uses it at once, measured in three parts on the built-in
world:

1. **What each action costs**, one student alone: the server's CPU seconds and the wait (from the
   action until the page is idle again) of a new query (a name typed in "Search by name" and Enter),
   an anchor edit (a new list typed into set A and committed) and a move of ``p`` in the browser
   (three arrow keys, then the player's one release run); and the server's resident memory per
   session (its growth as N more sessions open after the class, over N).
2. **A class of N real browsers** (each a browser context of its own in one headless Chromium, so
   each its own Streamlit session), for some minutes: every student, every 20 to 30 s (uniformly
   drawn), changes the query or edits the anchors, in turn, and then moves ``p``; each action's wait
   is recorded. The browsers share this machine's cores with the server, so the waits are an upper
   bound on what students on their own laptops see.
3. **Larger classes from the measured costs** (:func:`simulate_class`): the same visits, each
   action holding one of ``workers`` workers for the server CPU it took alone (first come, first
   served), the rest of its wait alone adding no load, for 1 to 1,000 students; the same model at N
   is set against the real class's waits, so that a reader can judge it. ``workers`` is 1 (the
   scripts' Python holds one interpreter lock, so runs of several sessions mostly take turns) and
   the machine's cores (the most they could share).

The largest class whose median wait stays under :data:`MEDIAN_WAIT_S` (and its worst) is what
docs/benchmarks.md states.
"""
from __future__ import annotations

import asyncio
import heapq
import logging
import math
import os
import random
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Awaitable, Callable

from ..resources import app_dir
from .browser import (CHROMIUM, EXPLORER_SCRIPT, FIRST_GRIDS, PLAYER_SLIDER, WAIT_S, chromium_browser, cpu_seconds,
                      explorer_env, healthy, streamlit_server, wait_until)
from .browser_sessions import SESSION_VIEWPORT
from .memory import resident_memory
from .page_traffic import PageTraffic

logger = logging.getLogger(__name__)
GAP_S = (20.0, 30.0)  # a student acts every 20 to 30 s (the class: queries and anchor edits)
ARROWS = 3  # p moves by three arrow keys, then the player's release asks for one run
RUN_GRACE_S = 5.0  # how long an action is given to start the run it asks for
ACTION_S = 300.0  # the longest one action may wait before the benchmark gives up on the page
MEDIAN_WAIT_S = 1.0  # the median wait the stated class size keeps under
CLASS_SIZES = (1, 5, 10, 20, 30, 40, 60, 80, 100, 150, 200, 300, 500, 1000)
# What students type: names with matches in the built-in world's gallery, and anchor lists of three
# or four phrases drawn from 12 x 16 (mostly new to the server, as a class's own words are: each new
# text is encoded once).
QUERIES = ("cat", "dog", "car", "tree", "fish", "house", "bird", "apple", "horse", "flower")
ADJECTIVES = ("a red", "a blue", "a green", "a small", "a big", "a smiling", "a sad", "a shiny", "a drawn", "an old",
              "a round", "a dark")
NOUNS = ("dog", "cat", "bird", "car", "tree", "face", "heart", "flower", "house", "moon", "star", "fish", "ball",
         "hand", "train", "book")
KINDS = ("query", "anchors", "p")


@dataclass(frozen=True)
class Action:
    """One action of one student: its ``kind`` (:data:`KINDS`), when it began (seconds from the
    class's start), its ``wait`` (seconds until the page was idle again: its last message or
    request), whether a script run came of it, and the server's CPU seconds over it (``None`` while
    other students act)."""
    kind: str
    start: float
    wait: float
    ran: bool
    server_cpu: float | None = None


class Student:
    """One student's page: what it does (:meth:`act`) and the idle wait after each action."""

    def __init__(self, page, seed: int):
        self.page = page
        self.traffic = PageTraffic(page)
        self.rng = random.Random(seed)
        self.query = ""

    async def _until_idle(self, action: Callable[[], Awaitable]) -> tuple[float, bool]:
        runs, start = self.traffic.runs, time.monotonic()
        await action()
        ran = await self.traffic.wait_idle_async(ACTION_S, since=start, after_runs=runs, run_grace_s=RUN_GRACE_S)
        return max(self.traffic.last, self.traffic.loaded, start) - start, ran

    async def new_query(self) -> tuple[float, bool]:
        box = self.page.locator(".st-key-query_search input")

        async def type_it() -> None:
            # Another name than the last: the same text again changes nothing, so no run would come.
            self.query = self.rng.choice([name for name in QUERIES if name != self.query])
            await box.fill(self.query)
            await box.press("Enter")

        return await self._until_idle(type_it)

    async def edit_anchors(self) -> tuple[float, bool]:
        area = self.page.locator(".st-key-anchors_a textarea")

        async def type_it() -> None:
            await area.fill(", ".join(f"{self.rng.choice(ADJECTIVES)} {self.rng.choice(NOUNS)}"
                                      for _ in range(self.rng.choice((3, 4)))))
            await area.press("Control+Enter")

        return await self._until_idle(type_it)

    async def move_p(self) -> tuple[float, bool]:
        slider = self.page.locator(PLAYER_SLIDER)
        key = self.rng.choice(("ArrowLeft", "ArrowRight"))

        async def press() -> None:
            for _ in range(ARROWS):
                await slider.press(key)

        return await self._until_idle(press)

    async def act(self, kind: str) -> tuple[float, bool]:
        """The wait of one action of ``kind``, and whether a run came of it."""
        return await {"query": self.new_query, "anchors": self.edit_anchors, "p": self.move_p}[kind]()


async def _open_student(browser, url: str, seed: int) -> Student:
    """A student's page of the explorer in a browser context of its own, once its first grids are
    drawn and it is idle (its traffic watched from before it opens)."""
    context = await browser.new_context(viewport=SESSION_VIEWPORT)
    page = await context.new_page()
    page.set_default_timeout(WAIT_S * 1000)  # under load an action may wait past Playwright's 30 s
    student = Student(page, seed)
    await page.goto(url, wait_until="commit")
    await wait_until(page, FIRST_GRIDS)
    await student.traffic.wait_idle_async(ACTION_S)
    return student


async def _open_students(browser, url: str, count: int, first_seed: int) -> list[Student]:
    return list(await asyncio.gather(*(_open_student(browser, url, first_seed + index) for index in range(count))))


async def _alone_costs(student: Student, process, repeats: int) -> list[Action]:
    """Each kind of action ``repeats`` times by one student alone, with the server's CPU over each."""
    actions = []
    for _ in range(repeats):
        for kind in KINDS:
            before, start = cpu_seconds(process), time.monotonic()
            actions.append(Action(kind, start, *await student.act(kind), cpu_seconds(process) - before))
    return actions


async def _attend(student: Student, seconds: float, clock_start: float) -> list[Action]:
    """One student's visit for ``seconds``: after 0 to 30 s (the class does not arrive in step), every
    20 to 30 s a new query or an anchor edit in turn, each followed by a move of p."""
    actions: list[Action] = []
    deadline = clock_start + seconds
    await asyncio.sleep(student.rng.uniform(0.0, GAP_S[1]))
    turn = 0
    while time.monotonic() < deadline:
        for kind in (("query", "anchors")[turn % 2], "p"):
            start = time.monotonic()
            actions.append(Action(kind, start - clock_start, *await student.act(kind)))
        turn += 1
        await asyncio.sleep(student.rng.uniform(*GAP_S))
    return actions


def simulate_class(students: int, costs: dict[str, list[tuple[float, float]]], workers: int,
                   seconds: float = 3600.0, warm_up: float = 600.0, seed: int = 0) -> list[float]:
    """The waits of the actions of ``students`` students on one server of ``workers`` workers asked
    for from ``warm_up`` to ``seconds`` (a class in its steady state: a queue may take minutes to
    build), each visit paced as :func:`_attend` paces it. Each action draws one measured
    ``(server CPU, wait)`` pair of its kind from ``costs`` (one student alone): it holds a worker
    (first come, first served) for its server CPU, and the rest of its wait alone (the messages'
    way and the browser's drawing, on the student's own machine) adds no load. Its wait is its
    queueing plus its wait alone. A student's next action comes when the last has ended (plus the
    gap, after a move of p), as a person's does."""
    rng = random.Random(seed)
    # (when the action is asked for, student, turn, step: 0 the query or anchors, 1 the move of p)
    events = [(rng.uniform(0.0, GAP_S[1]), student, 0, 0) for student in range(students)]
    heapq.heapify(events)
    free_at = [0.0] * workers
    waits = []
    while events:
        asked, student, turn, step = heapq.heappop(events)
        if asked > seconds:
            continue
        cpu, alone = rng.choice(costs["p" if step else ("query", "anchors")[turn % 2]])
        worker = min(range(workers), key=free_at.__getitem__)
        begin = max(asked, free_at[worker])
        free_at[worker] = begin + cpu
        ended = begin + max(alone, cpu)
        if asked >= warm_up:
            waits.append(ended - asked)
        heapq.heappush(events, (ended, student, turn, 1) if step == 0
                       else (ended + rng.uniform(*GAP_S), student, turn + 1, 0))
    return waits


def wait_figures(waits: list[float]) -> dict[str, float]:
    """The median, 90th percentile and worst of ``waits`` (seconds)."""
    ordered = sorted(waits)
    return {"median_s": statistics.median(ordered), "p90_s": ordered[math.ceil(0.9 * len(ordered)) - 1],
            "worst_s": ordered[-1], "actions": len(ordered)}


def largest_class(costs: dict[str, list[tuple[float, float]]], workers: int, median_s: float = MEDIAN_WAIT_S) -> dict:
    """The model's waits at each of :data:`CLASS_SIZES` with ``workers`` workers, and the largest of
    them whose median wait stays within ``median_s``."""
    sizes = {size: wait_figures(simulate_class(size, costs, workers)) for size in CLASS_SIZES}
    held = [size for size, figures in sizes.items() if figures["median_s"] <= median_s]
    return {"sizes": sizes, "largest": max(held) if held else 0}


async def _class_run(students: int, minutes: float, repeats: int, env: dict[str, str], log_path: Path,
                     chromium: str) -> dict:
    with streamlit_server(app_dir() / EXPLORER_SCRIPT, env, log_path) as (url, process, log):
        await healthy(url, process, log)
        async with chromium_browser(chromium) as browser:
            first = await _open_students(browser, url, 1, 0)
            await first[0].move_p()  # the server's first runs of a page, not a student's action
            logger.info("one student alone: %d of each action", repeats)
            alone = await _alone_costs(first[0], process, repeats)
            others = await _open_students(browser, url, students - 1, 1)
            logger.info("%d students for %.1f minutes", students, minutes)
            clock, cpu_before = time.monotonic(), cpu_seconds(process)
            visits = await asyncio.gather(*(_attend(student, minutes * 60, clock) for student in first + others))
            class_cpu, class_wall = cpu_seconds(process) - cpu_before, time.monotonic() - clock
            # What a session adds, once the class has filled every cache the sessions share: as many
            # sessions again, opened one after another.
            before = resident_memory(process.pid)["total"]
            for seed in range(students, 2 * students):
                await _open_student(browser, url, seed)
            after = resident_memory(process.pid)["total"]
    return {"alone": alone, "visits": visits, "class_cpu_s": class_cpu, "class_wall_s": class_wall,
            "session_bytes": (after - before) / students, "server_bytes": after}


def class_benchmark(students: int = 8, minutes: float = 4.0, repeats: int = 5, split: str = "all",
                    limit: int | None = None, chromium: str = CHROMIUM) -> dict:
    """The figures of a class on one server (the module docstring's three parts), logged as lines and
    returned as a dict for ``--json``."""
    logger.info(f"machine: {os.cpu_count()} cores; {students} students in headless Chromium for {minutes:g} min, "
                f"each acting every {GAP_S[0]:.0f}-{GAP_S[1]:.0f} s")
    with tempfile.TemporaryDirectory(prefix="anchordiv-class-bench-") as folder:
        workdir = Path(folder)
        run = asyncio.run(_class_run(students, minutes, repeats, explorer_env(workdir, split, limit),
                                     workdir / "explorer.log", chromium))
    alone = {kind: [action for action in run["alone"] if action.kind == kind] for kind in KINDS}
    costs = {kind: [(action.server_cpu, action.wait) for action in actions] for kind, actions in alone.items()}
    measured = [action for visit in run["visits"] for action in visit]
    figures: dict = {
        "cores": os.cpu_count(), "students": students, "minutes": minutes,
        "alone": {kind: {"median_wait_s": statistics.median(action.wait for action in actions),
                         "median_server_cpu_s": statistics.median(action.server_cpu for action in actions)}
                  for kind, actions in alone.items()},
        "session_mib": run["session_bytes"] / 2**20, "server_mib": run["server_bytes"] / 2**20,
        "class": {"all": wait_figures([action.wait for action in measured]),
                  **{kind: wait_figures([action.wait for action in measured if action.kind == kind])
                     for kind in KINDS if any(action.kind == kind for action in measured)}},
        "class_server_cpu_share": run["class_cpu_s"] / run["class_wall_s"],
        "without_run": {kind: sum(not action.ran for action in [*run["alone"], *measured] if action.kind == kind)
                        for kind in KINDS},
    }
    figures["model"] = {workers: {"at_class_size": wait_figures(simulate_class(students, costs, workers,
                                                                                 seconds=minutes * 60, warm_up=0.0)),
                                  **largest_class(costs, workers)}
                        for workers in sorted({1, os.cpu_count() or 1})}
    for line in class_lines(figures):
        logger.info(line)
    return figures


def class_lines(figures: dict) -> list[str]:
    """The printed lines of :func:`class_benchmark`'s figures."""
    lines = [f"alone, {kind}: wait {values['median_wait_s']:.3f} s, server CPU {values['median_server_cpu_s']:.3f} s "
             "(medians)" for kind, values in figures["alone"].items()]
    lines.append(f"server memory: {figures['session_mib']:.1f} MiB more per session, {figures['students']} more opened "
                 f"after the class ({figures['server_mib']:.0f} MiB resident with {2 * figures['students']} open)")
    for kind, values in figures["class"].items():
        lines.append(f"{figures['students']} students at once, {kind}: wait median {values['median_s']:.3f} s, "
                     f"90% {values['p90_s']:.3f} s, worst {values['worst_s']:.3f} s over {values['actions']} actions")
    lines.append(f"server busy {100 * figures['class_server_cpu_share']:.0f}% of one core over the class; "
                 "actions that asked for a run that did not come: "
                 + ", ".join(f"{kind} {count}" for kind, count in figures["without_run"].items()))
    for workers, model in figures["model"].items():
        at = model["at_class_size"]
        lines.append(f"model, {workers} worker(s), {figures['students']} students: median {at['median_s']:.3f} s, "
                     f"90% {at['p90_s']:.3f} s, worst {at['worst_s']:.3f} s")
        lines.append(f"model, {workers} worker(s): largest class with a median wait within {MEDIAN_WAIT_S:g} s: "
                     f"{model['largest']} students; " + ", ".join(
                         f"{size}: {values['median_s']:.2f}/{values['worst_s']:.1f} s"
                         for size, values in model["sizes"].items()) + " (median/worst)")
    return lines
