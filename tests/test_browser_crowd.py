"""Eight visitors at once on one server each see their own page (issue 40): in real headless
Chromium, eight sessions each pick a gallery query by name, type their own style anchors and step
p with the arrow keys, twice over, without waiting for one another or (after the matches have
come) for the page to settle between steps; then each one's page (query caption, p, neighbour captions) must be the one the
same steps give a visitor alone on a server: the crowd's, once it has gone, or its twin (the same app
on the same cache, started as the crowd comes; two visitors alone at a time, one per server). Skipped
without Chromium, as tests/test_browser.py is."""
from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from anchordiv.benchmarks.page_traffic import PAGE_IDLE_JS, PageTraffic

pytestmark = [pytest.mark.slow]

STYLES = ("pixel art", "neon on black", "watercolor painting", "oil painting", "pencil sketch")
ROUNDS = 2
RUNNING = '[data-testid^="stStatusWidgetRunning"]'
CAPTIONS_JS = "() => [...document.querySelectorAll('[data-anchordiv-caption]')].map(c => c.textContent)"
WAIT_MS = 180_000
# The visitor alone gives the reference pages, so it keeps the pace it has always passed at (0.5 s of
# quiet, not the 0.25 s of the other browser tests): at the faster pace, one full run saw a reference
# lose its pick of a new query (2026-12-04, not yet traced).
ALONE_QUIET_S = 0.5


def plans(names: list[str]) -> list[list[tuple[str, str, int]]]:
    """Per visitor, per round: (the name searched, set B's text, arrow presses): all different."""
    return [[(names[(2 * visitor + round_) % len(names)],
              "\n".join((STYLES[(visitor + round_) % 5], STYLES[(visitor + round_ + 2) % 5])), 1 + (visitor + round_) % 3)
             for round_ in range(ROUNDS)] for visitor in range(8)]


async def settled(page, traffic: PageTraffic | None) -> None:
    """Once the runs the last step asked for have come and gone. A visitor alone (``traffic``)
    waits for a quiet websocket (:mod:`anchordiv.benchmarks.page_traffic`); the crowd (``None``) keeps fixed pauses
    around the running icon, the pace it has passed at. Under load this test found a page blanked
    by the frontend error "Bad delta path index 2" (two releases of p queued behind a full run, and
    a fragment nested in the results fragment: docs/design.md, "Runs and fragments") and presses
    of p lost to a redraw of the player (its protocol, same section); both are mended."""
    if traffic is None:
        await page.wait_for_timeout(400)
        await page.wait_for_function(f"() => !document.querySelector('{RUNNING}')", timeout=WAIT_MS)
        await page.wait_for_timeout(400)
        return
    since = time.monotonic()
    while not (traffic.quiet_since(since) and await page.evaluate(PAGE_IDLE_JS)):
        if time.monotonic() - since > WAIT_MS / 1000:
            raise TimeoutError(f"the page was not at rest within {WAIT_MS / 1000:.0f} s ({traffic.pending()})")
        await page.wait_for_timeout(50)


async def one_round(page, traffic: PageTraffic | None, name: str, styles: str, presses: int) -> dict:
    """The round's steps as a person makes them: each as soon as what it needs is on the page (the
    matches of the new search; then the anchors are typed and p stepped while runs are on their way)."""
    search = page.get_by_role("textbox", name="Search by name")
    await search.fill(name)
    await search.press("Enter")
    # The person waits for the new matches (the last search's stay until they come) and picks the name.
    await settled(page, traffic)
    await page.get_by_role("combobox", name="Matches").click()
    await page.get_by_role("option").filter(has_text=name).first.click(timeout=WAIT_MS)
    box = page.get_by_role("textbox", name="Anchor set B (style) (one per line)")
    await box.fill(styles)
    await box.press("Control+Enter")
    try:
        await page.get_by_text("2 anchors in use").first.wait_for(timeout=WAIT_MS)
    except Exception as error:
        raise AssertionError(f"set B never took {styles!r} (it holds {await box.input_value()!r}); the page says:\n"
                             f"{(await page.locator('body').inner_text())[:2000]}") from error
    slider = page.locator("[data-anchordiv-p]")
    await slider.focus()
    for _ in range(presses):
        await slider.press("ArrowRight")
    if traffic is None:
        await page.wait_for_timeout(1000)  # the player reports p once keys rest (300 ms)
    await settled(page, traffic)
    return {"query": await page.locator(".st-key-query_caption").first.text_content(),
            "anchors": await box.input_value(),
            "p": await slider.input_value(),
            "neighbours": (await page.evaluate(CAPTIONS_JS))[:20]}


async def visit(browser, url: str, plan: list[tuple[str, str, int]], shot: Path, alone: bool) -> list[dict]:
    context = await browser.new_context(viewport={"width": 1500, "height": 2600})
    page = await context.new_page()
    traffic = PageTraffic(page, quiet_s=ALONE_QUIET_S) if alone else None
    problems = []  # what the browser said went wrong: script errors, console errors, lost connections
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("console", lambda message: problems.append(f"console: {message.text}") if message.type == "error" else None)
    page.on("websocket", lambda socket: socket.on("close", lambda *_: problems.append(f"websocket closed: {socket.url}")))
    try:
        await page.goto(url)
        await page.wait_for_function("() => document.querySelectorAll('[data-anchordiv-caption]').length >= 20",
                                     timeout=WAIT_MS)
        seen = []
        for step in plan:
            try:
                seen.append(await one_round(page, traffic, *step))
            except Exception as error:
                body = (await page.locator("body").inner_text())[-2500:]
                markup = await page.evaluate("() => document.body.innerHTML.length")
                await page.screenshot(path=str(shot), full_page=True)
                raise AssertionError(f"round {len(seen)} {step!r} stopped ({error!r:.300}) at {page.url} "
                                     f"({markup:,} characters of markup; {shot.name}); the browser said {problems[-8:]}; "
                                     f"the page says:\n{body}") from error
        return seen
    finally:
        await context.close()


async def crowd_and_alone(url: str, twin: tuple[Path, Path], visitors: list[list[tuple[str, str, int]]],
                          shots: Path) -> tuple[list, list]:
    """The crowd on ``url``, then each visitor alone on a server: ``url`` again or its twin
    (``(script, workdir)``: the same app on the same cache), started as the crowd comes so that its
    start is not waited for. The two servers take the visitors in turn from one queue, each visitor
    the only one on its server."""
    from anchordiv.benchmarks.browser import chromium_browser, explorer_env, healthy, streamlit_server

    script, workdir = twin
    with streamlit_server(script, explorer_env(workdir, split="heldout", limit=96),
                          shots / "twin.log") as (twin_url, process, log_path):
        async with chromium_browser() as browser:
            twin_up = asyncio.create_task(healthy(twin_url, process, log_path))
            together = await asyncio.gather(*(visit(browser, url, plan, shots / f"crowd-{number}.png", alone=False)
                                              for number, plan in enumerate(visitors)))
            waiting, alone = list(range(len(visitors))), [None] * len(visitors)

            async def take_turns(server_url: str) -> None:
                while waiting:
                    number = waiting.pop(0)
                    alone[number] = await visit(browser, server_url, visitors[number], shots / f"alone-{number}.png",
                                                alone=True)

            await twin_up
            await asyncio.gather(take_turns(url), take_turns(twin_url))
    return together, alone


def test_eight_visitors_at_once_each_see_the_page_their_own_steps_give(app_url, tmp_path):
    from anchordiv.encoders.builtin import load_builtin_encoder
    from anchordiv.gallery import world_gallery

    url, log_path = app_url
    gallery = world_gallery(load_builtin_encoder(), "heldout", limit=96)  # the server's gallery
    names = list(dict.fromkeys(gallery.labels["name"].astype(str)))[:16]
    visitors = plans(names)
    twin = (Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py", log_path.parent)
    together, alone = asyncio.run(crowd_and_alone(url, twin, visitors, tmp_path))
    for visitor, (crowded, single, plan) in enumerate(zip(together, alone, visitors)):
        for round_, (seen, expected, (name, styles, presses)) in enumerate(zip(crowded, single, plan)):
            where = f"visitor {visitor}, round {round_} ({name!r}, {presses} presses)"
            assert name in expected["query"] and expected["anchors"] == styles, f"{where}: alone {expected}"
            assert expected["p"] != "50", f"{where}: the arrow keys did not move p alone"
            assert seen == expected, f"{where}:\nwith seven others {seen}\nalone {expected}"
    for log in (log_path, tmp_path / "twin.log"):
        assert "Traceback" not in log.read_text(errors="replace"), log
