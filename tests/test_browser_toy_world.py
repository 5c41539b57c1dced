"""The Learn page's toy world in a real browser (headless Chromium, the explorer server every browser
test shares): dragging the query, then an anchor, round the circle with the mouse redraws every
figure of the toy world (the circle, kappa, D against cosine, the tilt, the responsibilities)
within two animation frames of the pointer's move, as the page itself counts them, with no
Streamlit run during the drag; letting go asks for exactly one run, after which the page's settings
(the typed anchors) and its link hold the released state. A click by the circle adds an anchor,
and two clicks on it remove it, one run each. The world's own sliders are the page's only ones for
the query, s, p and the arc: a burst of arrow keys on one redraws every figure with no run and is
one run once it is over. A link opens the world where it says. A set the library cannot fit (a
latent model of one anchor) keeps the world, with the library's refusal and what the person did.
On the sphere, turning it redraws it and asks for nothing; a drag on a map moves the query, redraws
every picture with no run, and its release runs once. Skipped without Chromium, as
tests/test_browser.py is. That the figures' numbers are the library's is
tests/test_toy_world_math.py's."""
from __future__ import annotations

import math
from urllib.parse import parse_qs, urlparse

import pytest

from anchordiv.explorer.settings import SETTINGS
from test_browser import new_page, page_report, traffic, wait_until_idle

pytestmark = [pytest.mark.slow]

FIGURES = ("world", "kappa", "divergence", "tilt", "share")
# The page, from the next animation frame on, counts frames, notes the frame of the first pointer
# move or key press and the frame at which each figure of the toy world first changes.
PROBE_JS = """(names) => {
  const probe = { frame: 0, moveFrame: null, changed: {} };
  const tick = () => { probe.frame += 1; probe.request = requestAnimationFrame(tick); };
  probe.request = requestAnimationFrame(tick);
  for (const type of ["pointermove", "keydown"]) {
    document.addEventListener(type, () => { if (probe.moveFrame === null) probe.moveFrame = probe.frame; },
                              { capture: true });
  }
  probe.observers = names.map((name) => {
    const observer = new MutationObserver(() => { if (!(name in probe.changed)) probe.changed[name] = probe.frame; });
    observer.observe(document.querySelector(`.atw [data-anchordiv-figure="${name}"]`),
                     { childList: true, subtree: true, attributes: true, characterData: true });
    return observer;
  });
  window.toyProbe = probe;
}"""
# What the probe saw; it stops.
PROBE_READ_JS = """() => {
  const probe = window.toyProbe;
  cancelAnimationFrame(probe.request);
  probe.observers.forEach((observer) => observer.disconnect());
  return { moveFrame: probe.moveFrame, changed: probe.changed, frame: probe.frame };
}"""
# Each figure as drawn.
FIGURES_JS = "(names) => names.map((name) => document.querySelector(`.atw [data-anchordiv-figure=\"${name}\"]`).innerHTML)"
# The circle's centre and radius on the screen (its viewBox is -1.45 .. 1.45 each way).
CIRCLE_JS = """() => { const box = document.querySelector(".atw-world").getBoundingClientRect();
  return { x: box.x + box.width / 2, y: box.y + box.height / 2, r: box.width / 2.9 }; }"""


def open_learn(browser, url: str, log_path, link: str = ""):
    page = new_page(browser, height=1400)
    page.goto(f"{url}/learn{link}")
    try:
        page.locator("[data-anchordiv-query]").wait_for(timeout=240_000)
        wait_until_idle(page)
    except Exception as error:  # noqa: BLE001 - any failure to open is reported with the page and the log
        pytest.fail(f"the toy world never appeared ({error})\n{page_report(page, log_path)}")
    page.locator(".atw-world").scroll_into_view_if_needed()
    return page


def at_angle(page, degrees: float) -> tuple[float, float]:
    """The screen point of the circle at ``degrees``."""
    circle = page.evaluate(CIRCLE_JS)
    theta = math.radians(degrees)
    return circle["x"] + circle["r"] * math.cos(theta), circle["y"] - circle["r"] * math.sin(theta)


def centre_of(page, selector: str) -> tuple[float, float]:
    box = page.locator(selector).bounding_box()
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def drag(page, start: tuple[float, float], path: list[tuple[float, float]], log_path) -> None:
    """Press at ``start``, move along ``path`` and let go: the first move redraws every figure within
    two frames, no move asks for a run, the release asks for exactly one."""
    watched = traffic(page)
    runs, sent = watched.runs, watched.sent
    before = page.evaluate(FIGURES_JS, list(FIGURES))
    page.mouse.move(*start)
    page.mouse.down()
    page.evaluate(PROBE_JS, list(FIGURES))
    page.mouse.move(*path[0])
    page.wait_for_function("(names) => names.every((name) => name in window.toyProbe.changed)", arg=list(FIGURES),
                           timeout=10_000)
    seen = page.evaluate(PROBE_READ_JS)
    lag = {name: frame - seen["moveFrame"] for name, frame in seen["changed"].items()}
    assert all(0 <= frames <= 2 for frames in lag.values()), f"frames from the move to each figure's change: {lag}"
    for point in path[1:]:
        page.mouse.move(*point)
    after = page.evaluate(FIGURES_JS, list(FIGURES))
    assert all(old != new for old, new in zip(before, after)), [name for name, old, new in zip(FIGURES, before, after)
                                                                 if old == new]
    # Nothing went to the server while the pointer moved: no message, and no run within a second.
    assert not watched.wait_idle(30, after_runs=runs, run_grace_s=1.0), "a drag asked the server for a run"
    assert watched.sent == sent, "the page sent the server a message while the pointer moved"
    page.mouse.up()
    assert watched.wait_idle(120, after_runs=runs), f"no run after the release\n{page_report(page, log_path)}"
    assert watched.runs == runs + 1, f"{watched.runs - runs} runs after one release"


def link(page) -> dict[str, str]:
    """The page's link: each parameter's last value."""
    return {name: values[-1] for name, values in parse_qs(urlparse(page.url).query).items()}


def linked(page, key: str) -> str:
    """Setting ``key``'s value as the page's link holds it (a default is left out of a link)."""
    setting = SETTINGS[key]
    return link(page).get(setting.param, f"{setting.default:g}")


def released_query(page) -> int:
    """The query the page's link holds; the world's own slider shows the same."""
    query = int(linked(page, "learn_query"))
    assert int(page.locator(".atw-theta").input_value()) == query
    return query


def set_a(page) -> str:
    return page.locator(".st-key-learn_anchors_a input").input_value()


def figures_change_with_no_run(page, act, names: tuple[str, ...] = FIGURES) -> None:
    """``act()`` changes every figure of ``names`` within two frames of the page's first frame after
    it, and asks for no run while it lasts (a release due at its end is waited for by the caller)."""
    watched = traffic(page)
    before = page.evaluate(FIGURES_JS, list(names))
    page.evaluate(PROBE_JS, list(names))
    runs = watched.runs
    act()
    page.wait_for_function("(names) => names.every((name) => name in window.toyProbe.changed)", arg=list(names),
                           timeout=10_000)
    seen = page.evaluate(PROBE_READ_JS)
    lag = {name: frame - seen["moveFrame"] for name, frame in seen["changed"].items()}
    assert all(0 <= frames <= 2 for frames in lag.values()), f"frames from the first key to each figure's change: {lag}"
    assert watched.runs == runs, "the page ran while the world moved"
    after = page.evaluate(FIGURES_JS, list(names))
    assert all(old != new for old, new in zip(before, after)), [name for name, old, new in zip(names, before, after)
                                                                 if old == new]


def test_dragging_the_query_and_an_anchor_redraws_every_figure_in_the_page_and_a_release_runs_once(
        app_url, browser, tmp_path):
    url, log_path = app_url
    page = open_learn(browser, url, log_path)
    assert released_query(page) == 120 and set_a(page) == "0, 40, 80", page_report(page, log_path)

    drag(page, centre_of(page, "[data-anchordiv-query]"), [at_angle(page, 150), at_angle(page, 200)], log_path)
    assert released_query(page) == 200, page_report(page, log_path)
    assert "the query at 200°" in page.locator(".atw-world-title").inner_text()

    drag(page, centre_of(page, '[data-anchordiv-anchor^="A2 "]'), [at_angle(page, 60), at_angle(page, 100)], log_path)
    assert set_a(page) == "0, 100, 80" and link(page)["toy_a"] == "0, 100, 80", page_report(page, log_path)
    assert page.locator('[data-anchordiv-anchor="A2 100°"]').count() == 1
    page.screenshot(path=str(tmp_path / "dragged.png"), full_page=True)
    assert traffic(page).off_machine == [], "the page fetched from elsewhere"


def test_a_click_by_the_circle_adds_an_anchor_and_two_clicks_remove_it(app_url, browser):
    url, log_path = app_url
    page = open_learn(browser, url, log_path)
    page.locator(".atw-add[data-set='1']").click()  # clicks add to B
    watched = traffic(page)
    runs = watched.runs
    page.mouse.click(*at_angle(page, 300))
    assert watched.wait_idle(120, after_runs=runs) and watched.runs == runs + 1, page_report(page, log_path)
    assert page.locator(".st-key-learn_anchors_b input").input_value() == "160, 250, 300"
    anchor = page.locator('[data-anchordiv-anchor="B3 300°"]')
    anchor.click()
    anchor.click()
    assert watched.wait_idle(120, after_runs=runs + 1) and watched.runs == runs + 2, page_report(page, log_path)
    assert page.locator(".st-key-learn_anchors_b input").input_value() == "160, 250"


# Each of the sphere's pictures as drawn (canvases as their pixels, the charts as their markup).
SPHERE_FIGURES_JS = """() => [...document.querySelectorAll('.atw [data-anchordiv-figure]')]
  .filter((element) => element.getBoundingClientRect().width > 0)
  .map((element) => [element.dataset.anchordivFigure, element.toDataURL ? element.toDataURL() : element.innerHTML])"""


def sphere_query(page) -> tuple[int, int]:
    """The query the page's link holds; the world's own sliders show the same."""
    query = tuple(int(linked(page, f"learn_query_{name}")) for name in ("azimuth", "elevation"))
    assert query == tuple(int(page.locator(f".atw-{name}").input_value()) for name in ("azimuth", "elevation"))
    return query


def test_on_the_sphere_turning_it_asks_for_nothing_and_dragging_on_a_map_moves_the_query(app_url, browser):
    url, log_path = app_url
    page = open_learn(browser, url, log_path)
    page.get_by_text("3-D: directions on a sphere").click()
    page.locator(".atw-sphere").wait_for(state="visible", timeout=120_000)
    wait_until_idle(page)
    page.locator(".atw-sphere").scroll_into_view_if_needed()
    watched = traffic(page)
    runs, start = watched.runs, dict(page.evaluate(SPHERE_FIGURES_JS))
    assert set(start) == {"sphere", "divergence-map", "cosine-map", "tilt", "share"}, sorted(start)

    box = page.locator(".atw-sphere").bounding_box()  # turn it: press near its rim, where no point is drawn
    x, y = box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.88
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 60, y - 20, steps=4)
    page.mouse.up()
    turned = dict(page.evaluate(SPHERE_FIGURES_JS))
    assert turned["sphere"] != start["sphere"] and turned["divergence-map"] == start["divergence-map"]
    assert not watched.wait_idle(30, after_runs=runs, run_grace_s=1.0), "turning the sphere asked for a run"

    drawn = page.locator(".atw-map-divergence").bounding_box()
    page.mouse.move(drawn["x"] + drawn["width"] * 0.2, drawn["y"] + drawn["height"] * 0.7)
    page.mouse.down()
    page.mouse.move(drawn["x"] + drawn["width"] * 0.35, drawn["y"] + drawn["height"] * 0.3, steps=5)
    moved = dict(page.evaluate(SPHERE_FIGURES_JS))
    assert all(moved[name] != turned[name] for name in moved), [name for name in moved if moved[name] == turned[name]]
    assert not watched.wait_idle(30, after_runs=runs, run_grace_s=1.0), "a drag on the map asked for a run"
    page.mouse.up()
    assert watched.wait_idle(120, after_runs=runs) and watched.runs == runs + 1, page_report(page, log_path)
    title = page.locator(".atw-world-title").inner_text()
    azimuth, elevation = sphere_query(page)
    assert f"the query at ({azimuth}°, {elevation}°)" in title, (title, azimuth, elevation)
    assert (azimuth, elevation) != (30, 20), "the query did not move"


def test_a_burst_of_arrow_keys_on_the_worlds_slider_redraws_in_the_page_and_is_one_run(app_url, browser):
    """The page draws no slider of its own for p: the world's is the one, keyboard-driven, and five
    quick presses of an arrow key redraw every figure they move with no run, then are one run (as
    the p player reports a burst), which puts the last p in the link."""
    url, log_path = app_url
    page = open_learn(browser, url, log_path)
    assert page.locator(".st-key-learn_p, .st-key-learn_scale, .st-key-learn_query, .st-key-learn_width").count() == 0
    watched = traffic(page)
    runs = watched.runs
    page.focus(".atw-p")
    figures_change_with_no_run(page, lambda: [page.keyboard.press("ArrowRight") for _ in range(5)],
                               names=("world", "tilt", "share"))
    page.wait_for_function("() => document.querySelector('.atw-p-value').textContent === '0.75'")  # the last press's
    assert watched.wait_idle(120, after_runs=runs) and watched.runs == runs + 1, page_report(page, log_path)
    assert link(page)["toy_p"] == "0.75", page.url
    page.focus(".atw-theta")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    assert watched.wait_idle(120, after_runs=runs + 1) and watched.runs == runs + 2, page_report(page, log_path)
    assert released_query(page) == 118 and "the query at 118°" in page.locator(".atw-world-title").inner_text()


def test_a_link_opens_the_world_where_it_says(app_url, browser):
    url, log_path = app_url
    page = open_learn(browser, url, log_path, "?toy_query=300&toy_a=10%2C%2070&toy_scale=12.5&toy_p=0.2&toy_width=60")
    assert [page.locator(f".atw-{name}").input_value() for name in ("theta", "scale", "p", "width")] == [
        "300", "12.5", "0.2", "60"]
    assert page.locator("[data-anchordiv-anchor]").count() == 4  # A: 10°, 70°; B: the default 160°, 250°
    assert "the query at 300°" in page.locator(".atw-world-title").inner_text()


def test_a_set_the_library_cannot_fit_keeps_the_world_and_says_why(app_url, browser):
    """A latent model needs two anchors: remove one of two and the world stays, with the library's
    refusal, the anchor it has left and the query; the release keeps that set in the page's settings
    and link; an anchor added back fits again."""
    url, log_path = app_url
    page = open_learn(browser, url, log_path, "?toy_model=latent-softmax&toy_a=0%2C%2040")
    watched = traffic(page)
    runs = watched.runs
    anchor = page.locator('[data-anchordiv-anchor="A1 0°"]')
    anchor.click()
    anchor.click()
    assert watched.wait_idle(120, after_runs=runs) and watched.runs == runs + 1, page_report(page, log_path)
    world = page.locator("[data-anchordiv-toy-world]")
    assert world.get_attribute("data-anchordiv-refused") == "", page_report(page, log_path)
    assert page.inner_text(".atw-message") == ("Cannot fit the toy model: a latent model needs at least two distinct "
                                               "anchors; add anchors or choose another model")
    assert page.locator('[data-anchordiv-anchor="A1 40°"]').count() == 1 and page.locator("[data-anchordiv-query]").count()
    assert set_a(page) == "40" and link(page)["toy_a"] == "40", page_report(page, log_path)
    assert not page.locator("[data-testid=stException]").count() and "Cannot read the anchors" not in page.inner_text(
        "body")
    page.mouse.click(*at_angle(page, 200))  # clicks add to A
    assert watched.wait_idle(120, after_runs=runs + 1) and watched.runs == runs + 2, page_report(page, log_path)
    assert world.get_attribute("data-anchordiv-refused") is None and page.inner_text(".atw-message") == ""
    assert set_a(page) == "40, 200" and page.locator(".atw-tilt rect").count() >= 2
