"""The rehearsal's steps (:mod:`anchordiv.benchmarks.rehearsal`): the demo walked as a newcomer walks
it, on one page of the explorer in one window, through Playwright's asyncio API.

Each step acts as a person does (clicks, keys, a drag, typing, a file) on the widgets a person
sees, found by their Streamlit keys (``.st-key-<key>``) or the p player's hooks, and says in its
:class:`Outcome` what the page then showed and whether the step's purpose was met: a search
that leaves the query as it was is *no effect*, not a pass. A :class:`Walk` times the actions: from
each action until the page is at rest again (:meth:`Walk.act`), summed over the step's actions.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Awaitable, Callable

from ..explorer.literal import shown, without_joiners
from .browser import (AD_GRID, CAPTION, ERROR_BOXES, FIRST_GRIDS, GRID, ITEM_MARK, MARK, NAV, PLAYER,
                      PLAYER_SLIDER, QUERY_CAPTION, TILE, grids, slider_p, wait_until)
from .filmstrip import Screencast, filmstrip, save_png
from .layout import LAYOUT_JS, Layout, layout_problems
from .page_traffic import PageTraffic
from .play_frames import PLAY_FRAMES_JS, summarise
from .rehearsal_report import PlayResult

STEP_S = 300            # the longest one action may take to come to rest
RUN_GRACE_S = 5.0       # how long an action is given to start the run it asks for
PLAY_S = 5.0            # seconds of Play recorded
SHOWN_S = 10.0          # how long what a step is for may take to show once the page is at rest
KEY_PRESSES = 5
SEARCHED = "cat"
COMMA_ANCHORS = "a dog, a cat, a bird"
MARKS = 3
FILMSTRIP = "play-filmstrip.png"
# An element's top just below Streamlit's header, which covers the window's top (about 60 px).
TO_TOP_JS = """element => {
  element.scrollIntoView({block: 'start'});
  element.closest('[data-testid="stMain"]')?.scrollBy(0, -80);
}"""
# The texts Find anchors writes between its "Learn a geometry" button and the button that offers the
# learned set as anchor set A: the learned weights in words (tables and charts are not text), less
# the buttons' own labels.
LEARNED_TEXT_JS = """section => {
  const learn = section.querySelector('.st-key-find_learn');
  const offered = section.querySelector('.st-key-find_learned_a');
  const after = (mark, block) => Boolean(mark.compareDocumentPosition(block) & Node.DOCUMENT_POSITION_FOLLOWING);
  return [...section.querySelectorAll('[data-testid="stMarkdownContainer"]')]
    .filter(block => after(learn, block) && !(offered && after(offered, block)) && !block.closest('button'))
    .map(block => block.innerText);
}"""
# Explore's expanders: (Streamlit key, the step's words). Find anchors is opened by "learn".
EXPANDERS = (("neighbour_table_open", "neighbour table"), ("explain_open", "why this neighbour"),
             ("save_load_open_a", "templates, save or load A"), ("save_load_open_b", "templates, save or load B"),
             ("sweep_open", "p sweep"), ("umap_open", "UMAP"))
# The other pages: (nav link text, a text on the page once its first run has drawn it).
PAGES = {"Compare": "Green frame", "Learn": "On the real gallery", "Report": "At a glance"}


def quoted(text: object, limit: int = 200) -> str:
    """Text from the page, quoted, on one line and cut to ``limit`` characters (less the word joiners
    the explorer writes into its Markdown: they are invisible on the page)."""
    return f"“{shown(without_joiners(str(text)), limit)}”"


@dataclass(frozen=True)
class Outcome:
    """What a step saw (a note in words) and whether its purpose was met."""
    note: str
    achieved: bool = True


class Walk:
    """One newcomer's page in one window: its :class:`PageTraffic`, the explorer's ``url``, the
    ``folder`` for this window's pictures, the photo to upload; the seconds the current step's
    actions took (:meth:`act`), the script errors the page has raised, and Play's result once
    recorded."""

    def __init__(self, page, url: str, folder: Path, photo: Path):
        self.page, self.url, self.folder, self.photo = page, url, folder, photo
        self.traffic = PageTraffic(page)
        self.script_errors: list[str] = []
        page.on("pageerror", lambda error: self.script_errors.append(str(error)))
        self.seconds = 0.0
        self.play: PlayResult | None = None

    async def act(self, action: Callable[[], Awaitable]) -> bool:
        """Do ``action``, then wait until the page is at rest: every message answered, no request
        under way, nothing on the websocket for a moment, the page's script state back to not
        running and no p player waiting to report p. Every action of the walk asks for a run (a
        release of p, a widget's change, a page), so it is given :data:`RUN_GRACE_S` to start one
        before the page counts as at rest without it. Adds the seconds from the action until the last
        message or request of what it started to :attr:`seconds`; whether a run came."""
        runs, start = self.traffic.runs, time.monotonic()
        await action()
        ran = await self.traffic.wait_idle_async(STEP_S, since=start, after_runs=runs, run_grace_s=RUN_GRACE_S)
        self.seconds += max(self.traffic.last, self.traffic.loaded, start) - start
        return ran

    async def query(self) -> str:
        """The query's caption on Explore ("" when none is shown)."""
        captions = self.page.locator(QUERY_CAPTION)
        return await captions.first.inner_text() if await captions.count() else ""

    async def grid(self) -> list[str]:
        """The anchor-divergence grid's captions."""
        return (await grids(self.page) or [[]])[0]

    async def error_boxes(self) -> list[str]:
        """The texts of the error boxes and exceptions the page shows."""
        return await self.page.locator(ERROR_BOXES).all_inner_texts()


def no_run(ran: bool) -> str:
    return "" if ran else "; no run followed"


async def shown_within(locator, seconds: float = SHOWN_S) -> bool:
    """Whether ``locator`` is (or comes) on the page within ``seconds``: what an action is for may be
    drawn a moment after the run that draws it has ended."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    try:
        await locator.first.wait_for(timeout=seconds * 1000)
        return True
    except PlaywrightTimeout:
        return False


async def open_explorer(walk: Walk) -> Outcome:
    """Open the explorer, until both first grids are drawn and the run is over."""
    async def go() -> None:
        await walk.page.goto(walk.url, wait_until="commit")
        await wait_until(walk.page, FIRST_GRIDS)

    await walk.act(go)
    grid = await walk.grid()
    layout = Layout.from_page(await walk.page.evaluate(LAYOUT_JS))
    problems = layout_problems(layout, explore=True)
    return Outcome(f"query {quoted(await walk.query())}; {len(grid)} tiles in the anchor-divergence grid, the first "
                   f"{quoted(grid[0] if grid else '')}; {layout_text(layout)}"
                   + (f"; falls short: {'; '.join(problems)}" if problems else ""), bool(grid) and not problems)


def layout_text(layout: Layout) -> str:
    """What the first screen gives (:mod:`~anchordiv.benchmarks.layout`), in a few words."""
    tiles = " and ".join(str(grid["firstRow"]) for grid in layout.grids)
    editors = " and ".join(f"{editor['top']} px" for editor in layout.editors)
    return (f"p slider {layout.p_width} px, {tiles} tiles a row, captions of {layout.caption_lines} lines at most, "
            f"the anchor editors at {editors} from the top")


async def keys(walk: Walk) -> Outcome:
    """Arrow keys on the p player's slider."""
    slider = walk.page.locator(PLAYER_SLIDER)
    await slider.scroll_into_view_if_needed()
    before, grid = await slider_p(walk.page, "explorer"), await walk.grid()

    async def press() -> None:
        await slider.focus()
        for _ in range(KEY_PRESSES):
            await slider.press("ArrowRight")

    ran = await walk.act(press)
    after, moved = await slider_p(walk.page, "explorer"), await walk.grid() != grid
    return Outcome(f"p {before:.2f} → {after:.2f} after {KEY_PRESSES} presses of →; the grid "
                   f"{'changed' if moved else 'did not change'}{no_run(ran)}", after != before)


async def drag(walk: Walk) -> Outcome:
    """Drag the slider's thumb about a third of its track (to the right, or left from the right half)."""
    page, slider = walk.page, walk.page.locator(PLAYER_SLIDER)
    await slider.scroll_into_view_if_needed()
    box = await slider.bounding_box()
    value, low, high = [float(text) for text in (await slider.input_value(), await slider.get_attribute("min"),
                                                 await slider.get_attribute("max"))]
    share = (value - low) / (high - low) if high > low else 0.0
    thumb = min(16.0, box["height"])  # Chromium's thumb: its centre runs from thumb/2 to width - thumb/2
    x = box["x"] + thumb / 2 + share * (box["width"] - thumb)
    y = box["y"] + box["height"] / 2
    to = x + (1 if share < 0.6 else -1) * box["width"] / 3
    before, grid = await slider_p(page, "explorer"), await walk.grid()

    async def move() -> None:
        await page.mouse.move(x, y)
        await page.mouse.down()
        await page.mouse.move(to, y, steps=12)
        await page.mouse.up()

    ran = await walk.act(move)
    after, moved = await slider_p(page, "explorer"), await walk.grid() != grid
    return Outcome(f"p {before:.2f} → {after:.2f} by a drag of {abs(to - x):.0f} px; the grid "
                   f"{'changed' if moved else 'did not change'}{no_run(ran)}", after != before)


async def play(walk: Walk) -> Outcome:
    """Play for :data:`PLAY_S` seconds, then Pause: every animation frame's tiles sampled
    (:data:`~anchordiv.benchmarks.play_frames.PLAY_FRAMES_JS`) while Chromium's screencast records
    the same seconds; the filmstrip is cut from the screencast to the player's slider and grid."""
    page = walk.page
    # The player's top at the window's top: its slider and as much of its grid as the window holds.
    await page.locator(PLAYER).evaluate(TO_TOP_JS)
    boxes = [await page.locator(selector).first.bounding_box() for selector in (".adp-controls", AD_GRID)]
    region = (min(b["x"] for b in boxes), min(b["y"] for b in boxes),
              max(b["x"] + b["width"] for b in boxes), max(b["y"] + b["height"] for b in boxes))
    before, cast, frames = await slider_p(page, "explorer"), Screencast(page), []

    async def record() -> None:
        async with cast:
            frames.extend(await page.evaluate(PLAY_FRAMES_JS, PLAY_S))

    ran = await walk.act(record)
    figures, shots = summarise(frames), cast.frames()
    strip = save_png(filmstrip(shots, region), walk.folder / FILMSTRIP) if shots else None
    span = shots[-1].t - shots[0].t if shots else 0.0
    walk.play = PlayResult(figures, len(shots), span, f"{walk.folder.name}/{FILMSTRIP}" if strip else None)
    after = await slider_p(page, "explorer")
    return Outcome(f"p {before:.2f} → {after:.2f}; {figures.line()}; the screencast sent {len(shots)} composited "
                   f"frames in {span:.1f} s{no_run(ran)}", figures.frames > 0 and after != before)


async def search(walk: Walk) -> Outcome:
    """Type a name in "Search by name" and press Enter."""
    box = walk.page.locator(".st-key-query_search input")
    before = await walk.query()

    async def type_it() -> None:
        await box.click()
        await box.press_sequentially(SEARCHED, delay=60)
        await box.press("Enter")

    ran = await walk.act(type_it)
    after = await walk.query()
    menu = await walk.page.locator(".st-key-query_pick input").get_attribute("placeholder")
    changed = after != before
    became = f"became {quoted(after)}" if changed else "did not change"
    return Outcome(f"typed {quoted(SEARCHED)} and Enter: the query {became}; the Matches menu reads {quoted(menu)}"
                   f"{no_run(ran)}", changed)


async def pick(walk: Walk) -> Outcome:
    """Open the Matches menu and pick its second match (Enter took the first)."""
    page = walk.page
    before = await walk.query()
    option = page.get_by_role("option").nth(1)

    async def choose() -> None:
        await page.locator(".st-key-query_pick").click()
        await option.wait_for()
        await option.click()

    ran = await walk.act(choose)
    after = await walk.query()
    return Outcome(f"the query {'became ' + quoted(after) if after != before else 'stayed ' + quoted(after)}"
                   f"{no_run(ran)}", after != before)


async def upload(walk: Walk) -> Outcome:
    """"Upload" under "Query from", then a photo into the file input."""
    page = walk.page
    await walk.act(lambda: page.locator(".st-key-query_mode").get_by_text("Upload", exact=True).click())
    ran = await walk.act(lambda: page.locator('.st-key-query_upload input[type="file"]').set_input_files(walk.photo))
    after = await walk.query()
    notices = await page.locator('[data-testid="stAlert"]').all_inner_texts()
    notice = next((text for text in notices if "emoji" in text), None)
    return Outcome(f"the query {quoted(after)}; "
                   f"{'the notice ' + quoted(notice, 160) if notice else 'no notice about photos'}{no_run(ran)}",
                   walk.photo.name in after)


async def gallery_again(walk: Walk) -> Outcome:
    """"Gallery image" under "Query from": the gallery query picked before comes back."""
    page = walk.page
    ran = await walk.act(lambda: page.locator(".st-key-query_mode").get_by_text("Gallery image", exact=True).click())
    after = await walk.query()
    return Outcome(f"the query {quoted(after)}{no_run(ran)}", after.startswith("#"))


async def comma_anchors(walk: Walk) -> Outcome:
    """Type a comma list into anchor set A (as a newcomer would, on one line) and commit it."""
    area = walk.page.locator(".st-key-anchors_a textarea")
    grid = await walk.grid()

    async def type_it() -> None:
        await area.fill(COMMA_ANCHORS)
        await area.press("Control+Enter")

    ran = await walk.act(type_it)
    summary = walk.page.get_by_text(re.compile(r"anchors? in use")).first
    said = await summary.inner_text() if await summary.count() else "(no count of anchors shown)"
    moved = await walk.grid() != grid
    return Outcome(f"typed {quoted(COMMA_ANCHORS)}: set A says {quoted(said)}; the grid "
                   f"{'changed' if moved else 'did not change'}{no_run(ran)}", said.startswith("3 anchors"))


async def mark(walk: Walk) -> Outcome:
    """Mark three neighbours "like the query", as a person who means its object would: those of
    the query's object (✓obj) first, from the anchor-divergence grid and then the baselines' beside
    it, then the first others."""
    page = walk.page
    tiles = page.locator(f"{GRID} .adp-tile{TILE}")
    found = {}
    for tile in await tiles.all():
        caption = await tile.locator(CAPTION).inner_text()
        marks = await tile.locator(".adp-marks").all_inner_texts()
        found.setdefault(await tile.get_attribute("data-anchordiv-id"), " ".join([caption, *marks]))
    chosen = sorted(found.items(), key=lambda item: "✓obj" not in item[1])[:MARKS]
    for item, _ in chosen:
        await walk.act(lambda item=item: page.locator(f"button{ITEM_MARK.format(item)}").first.click())
    pressed = len({await button.get_attribute("data-anchordiv-mark") for button in
                   await page.locator(f'button{MARK}[aria-pressed="true"]').all()})
    likes = page.locator(".st-key-find_like")
    listed = f"; Find anchors lists {quoted(await likes.inner_text())}" if await likes.count() else ""
    return Outcome(f"marked {', '.join(quoted(caption, 60) for _, caption in chosen)}; {pressed} toggles pressed"
                   f"{listed}", pressed == MARKS)


async def learn(walk: Walk) -> Outcome:
    """Open Find anchors and press "Learn a geometry"; the learned weights' explanation in view."""
    page = walk.page
    await walk.act(lambda: page.locator(".st-key-find_open summary").click())
    await walk.act(lambda: page.locator(".st-key-find_learn button").click())
    # The learned set is offered as anchor set A (the button's key) only when a geometry was learned.
    if not await shown_within(page.locator(".st-key-find_learned_a")):
        said = await page.locator('.st-key-find_open [data-testid="stAlert"]').all_inner_texts()
        return Outcome(f"no learned geometry shown{'; Find anchors says ' + quoted(said[-1], 400) if said else ''}",
                       False)
    await page.locator(".st-key-find_learn").evaluate(TO_TOP_JS)  # the button, then the weights in words
    said = await page.locator(".st-key-find_open").evaluate(LEARNED_TEXT_JS)
    return Outcome(f"learned: {quoted(' '.join(said), 500)}")


def expander_step(key: str) -> Callable[[Walk], Awaitable[Outcome]]:
    """The step that opens Explore's expander ``key`` and brings it to the window's top."""
    async def open_it(walk: Walk) -> Outcome:
        box = walk.page.locator(f".st-key-{key}")
        await walk.act(lambda: box.locator("summary").first.click())
        await box.evaluate(TO_TOP_JS)
        opened = await box.locator("details[open]").count() > 0
        inside = box.locator('[data-testid="stExpanderDetails"]')
        text = (await inside.first.inner_text()).strip() if await inside.count() else ""
        return Outcome(f"{'open' if opened else 'still closed'}: {quoted(text, 240)}", opened)

    return open_it


async def share(walk: Walk) -> Outcome:
    """Open "Share this view" and read its link."""
    page = walk.page
    await walk.act(lambda: page.locator(".st-key-share_popover button").first.click())
    code = page.locator('[data-testid="stPopoverBody"] code')
    link = await code.first.inner_text() if await shown_within(code) else ""
    return Outcome(f"the link {quoted(link, 400)}" if link else "no link shown", link.startswith("http"))


def page_step(name: str) -> Callable[[Walk], Awaitable[Outcome]]:
    """The step that opens the page ``name`` by its link in the sidebar."""
    async def open_page(walk: Walk) -> Outcome:
        page = walk.page
        await page.keyboard.press("Escape")  # a popover left open (Share) would take the click
        await walk.act(lambda: page.locator(f"{NAV} a").filter(has_text=name).click())
        drawn = await shown_within(page.get_by_text(PAGES[name]))
        return Outcome(f"{name} {'shows' if drawn else 'does not show'} {quoted(PAGES[name])}", drawn)

    return open_page


@dataclass(frozen=True)
class Step:
    """A step: its name, what it does, and whether its screenshot is the whole page from its top
    (``tall``, for a page as a whole) or the window as the newcomer sees it after the step."""
    name: str
    run: Callable[[Walk], Awaitable[Outcome]]
    tall: bool = False


STEPS = (Step("open", open_explorer, tall=True), Step("move p by keys", keys), Step("move p by drag", drag),
         Step("Play", play), Step("search a name", search), Step("pick another match", pick),
         Step("upload a photo", upload), Step("back to a gallery query", gallery_again),
         Step("type comma anchors", comma_anchors), Step("mark three neighbours", mark),
         Step("learn a geometry", learn),
         *(Step(f"open {words}", expander_step(key)) for key, words in EXPANDERS),
         Step("share", share), *(Step(name, page_step(name), tall=True) for name in PAGES))
