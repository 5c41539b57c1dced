"""Two replicas of the explorer behind real nginx (scripts/serve-replicas, docs/serving.md): four
browsers (headless Chromium, fresh contexts) open the page through nginx, each sees its grids with
every image loaded, searches a new query and releases p; nginx's access log shows that every request
of a browser (the page, its assets, the websocket, the images at /media/) went to one replica, and
that new browsers were dealt to the replicas in turn, two each; every response the browser got
names the replica its cookie names. Stopping the script stops nginx and both replicas. Skipped,
with the reason, without nginx (`make system` installs it, as root), Chromium or the weights."""
from __future__ import annotations

import asyncio
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from anchordiv.benchmarks.browser import (CAPTION, CAPTIONS_AT_LEAST, P_IN_LINK, PLAYER_SLIDER, QUERY_CAPTION, TILE,
                                          VIEWPORT, WAIT_S, explorer_env, wait_healthy)
from anchordiv.benchmarks.page_traffic import PageTraffic

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "serve-replicas"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
BROWSERS = 4
WAIT_MS = WAIT_S * 1000
# Every image of the page that Streamlit serves from the session's replica has loaded (none still
# loading); the broken ones are counted after.
MEDIA_IMAGES = "[...document.images].filter(image => new URL(image.src).pathname.startsWith('/media/'))"
MEDIA_LOADED = f"() => {MEDIA_IMAGES}.length >= 20 && {MEDIA_IMAGES}.every(image => image.complete)"
MEDIA_BROKEN = f"() => {MEDIA_IMAGES}.filter(image => !image.naturalWidth).map(image => image.src)"
# A line of the access log (scripts/nginx-explorer.conf.template's log_format).
LOG_LINE = re.compile(r'browser=(?P<browser>\S+) upstream=(?P<upstream>\S+) status=(?P<status>\d+) '
                      r'"(?P<method>\S+) (?P<path>\S+)')


def free_port_run(count: int) -> int:
    """The first of ``count`` consecutive free ports of 127.0.0.1."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            first = probe.getsockname()[1]
        if first + count <= 65536 and all(port_is_free(port) for port in range(first, first + count)):
            return first
    raise RuntimeError(f"found no {count} consecutive free ports")


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def answers(port: int) -> bool:
    """Whether anything accepts a connection on ``port`` of 127.0.0.1."""
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


async def visit(browser, url: str, shot: Path) -> dict:
    """One visitor: opens the page, waits for the grids and their images, searches another query by
    its name and releases p one step up; what the browser saw."""
    context = await browser.new_context(viewport=VIEWPORT)
    page = await context.new_page()
    traffic = PageTraffic(page)
    replicas_named = []  # the X-Anchordiv-Replica header of every response that came through nginx
    page.on("response", lambda response: replicas_named.append(response.headers.get("x-anchordiv-replica"))
            if response.url.startswith(url) else None)
    try:
        await page.goto(url)
        await page.wait_for_function(CAPTIONS_AT_LEAST, arg=20, timeout=WAIT_MS)
        await traffic.wait_idle_async(WAIT_S)
        await page.wait_for_function(MEDIA_LOADED, timeout=WAIT_MS)
        broken = await page.evaluate(MEDIA_BROKEN)

        name = await page.locator(TILE).nth(3).get_attribute("title")  # a neighbour becomes the query
        runs = traffic.runs
        search = page.get_by_role("textbox", name="Search by name")
        await search.fill(name)
        await search.press("Enter")  # Enter takes the best match at once
        await traffic.wait_idle_async(WAIT_S, after_runs=runs)
        query = await page.locator(QUERY_CAPTION).first.text_content()

        slider = page.locator(PLAYER_SLIDER)
        await slider.focus()
        runs = traffic.runs
        await slider.press("ArrowRight")
        await traffic.wait_idle_async(WAIT_S, after_runs=runs, also=P_IN_LINK)
        await page.wait_for_function(MEDIA_LOADED, timeout=WAIT_MS)
        broken += await page.evaluate(MEDIA_BROKEN)
        cookies = {cookie["name"]: cookie["value"] for cookie in await context.cookies()}
        await page.screenshot(path=str(shot), full_page=True)
        return {"name": name, "query": query, "p": await slider.input_value(), "broken": broken,
                "captions": await page.locator(CAPTION).count(), "cookie": cookies.get("anchordiv_replica", ""),
                "replicas_named": replicas_named, "off_machine": traffic.off_machine}
    except Exception as error:
        body = (await page.locator("body").inner_text())[-2000:]
        raise AssertionError(f"a visitor through nginx stopped ({error!r:.400}); the page says:\n{body}") from error
    finally:
        await context.close()


async def class_of_four(url: str, shots: Path) -> list[dict]:
    from anchordiv.benchmarks.browser import chromium_browser

    async with chromium_browser() as browser:
        return await asyncio.gather(*(visit(browser, url, shots / f"visitor-{number}.png")
                                      for number in range(BROWSERS)))


def requests_by_browser(access_log: Path, browsers: int) -> dict[str, list[dict]]:
    """The access log's requests per browser, once ``browsers`` websockets are in it (nginx writes a
    websocket's line when it closes)."""
    deadline = time.monotonic() + 30
    while True:
        lines = [match.groupdict() for match in map(LOG_LINE.search, access_log.read_text().splitlines()) if match]
        sockets = sum(line["path"] == "/_stcore/stream" for line in lines)
        if sockets >= browsers or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    grouped = defaultdict(list)
    for line in lines:
        grouped[line["browser"]].append(line)
    # A browser opens the page's websocket; the script's and Streamlit's health checks are no browsers.
    return {browser: seen for browser, seen in grouped.items() if any(line["path"] == "/_stcore/stream" for line in seen)}


def stop(process: subprocess.Popen) -> None:
    """The script's own way out (SIGTERM, as Ctrl-C): it stops nginx and the replicas."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_two_replicas_behind_nginx_keep_each_browser_on_one_and_share_the_class(chromium_and_weights, tmp_path):
    if not Path(NGINX).is_file():
        pytest.skip(f"nginx is not installed (no {NGINX}); `make system` installs it as root "
                    "(apt-get install -y nginx-light)")
    env = explorer_env(tmp_path, split="heldout", limit=96)
    env.pop("ANCHORDIV_APP_THREADS", None)  # the server's own default, as a class gets it
    env["PYTHON"] = sys.executable
    port = free_port_run(3)
    run = tmp_path / "run"
    output = tmp_path / "serve-replicas.log"
    url = f"http://127.0.0.1:{port}"
    with open(output, "w") as log:
        process = subprocess.Popen(["sh", str(SCRIPT), "--replicas", "2", "--port", str(port), "--dir", str(run)],
                                   env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_healthy(url, process, output, seconds=180)
        seen = asyncio.run(class_of_four(url + "/", tmp_path))
    finally:
        stop(process)
    replica_ports = (port + 1, port + 2)
    assert process.returncode == 143, output.read_text()
    assert not any(answers(each) for each in (port, *replica_ports)), "a replica or nginx outlived the script"

    for number, visitor in enumerate(seen):
        where = f"visitor {number}"
        assert not visitor["broken"], f"{where}: images that did not load {visitor['broken'][:5]}"
        assert visitor["name"] in visitor["query"], f"{where}: picked {visitor['name']!r}, shows {visitor['query']!r}"
        assert visitor["p"] != "50" and visitor["captions"] >= 20, f"{where}: {visitor}"
        assert not visitor["off_machine"], f"{where}: requests off the machine {visitor['off_machine'][:5]}"
        replica = visitor["cookie"].partition(".")[0]
        assert replica in ("replica_1", "replica_2"), f"{where}: cookie {visitor['cookie']!r}"
        assert set(visitor["replicas_named"]) == {replica}, \
            f"{where}: responses from {set(visitor['replicas_named'])}, its cookie names {replica}"

    browsers = requests_by_browser(run / "access.log", BROWSERS)
    assert len(browsers) == BROWSERS, f"{len(browsers)} browsers opened a websocket, not {BROWSERS}"
    upstreams = {}
    for browser, requests in browsers.items():
        answered_by = {line["upstream"] for line in requests}
        assert len(answered_by) == 1, f"browser {browser}: requests went to {answered_by}"
        paths = [line["path"] for line in requests if line["status"] in ("101", "200")]
        assert "/" in paths and "/_stcore/stream" in paths and any(path.startswith("/media/") for path in paths), \
            f"browser {browser}: {paths[:40]}"
        upstreams[browser] = answered_by.pop()
    assert {visitor["cookie"].partition(".")[2] for visitor in seen} == set(browsers), "the log's browsers are not the test's"
    spread = sorted(list(upstreams.values()).count(f"127.0.0.1:{each}") for each in replica_ports)
    assert spread == [2, 2], f"new browsers were not dealt in turn: {upstreams}"
    for number in (1, 2):
        assert "Traceback" not in (run / f"replica-{number}.log").read_text(errors="replace")
