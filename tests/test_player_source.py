"""The p player's image-source check (``safeSource`` in app/components/p_player.js), run in Node:
it keeps the server's own addresses and inline PNG data and turns every other address, one a
browser would fetch from another host included, into "" (no image)."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

PLAYER_JS = Path(__file__).resolve().parents[1] / "app" / "components" / "p_player.js"
# Imports the player's module as it is (from its text, so the .js needs no package of its own) and
# prints what safeSource makes of each case.
RUN = """
import { readFileSync } from "node:fs";
const [path, cases] = process.argv.slice(1);
const player = await import("data:text/javascript," + encodeURIComponent(readFileSync(path, "utf8")));
process.stdout.write(JSON.stringify(JSON.parse(cases).map((src) => player.safeSource(src))));
"""

KEPT = [
    "/media/3f2a9c0d1e.png",  # what Streamlit's media files are served as
    "/media/3f2a9c0d1e.png?v=2#top",
    "./media/a.png",
    "../media/a.png",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAE=",
]
REFUSED = [
    "//evil.example/x.png",  # protocol-relative: another host
    "/\\evil.example/x.png",  # a browser reads the backslash as "/"
    "\\\\evil.example/x.png",
    "/\t/evil.example/x.png",  # a browser drops the tab: "//evil.example"
    "/\n/evil.example/x.png",
    "/\r\n/evil.example/x.png",
    " //evil.example/x.png",
    "\t/media/a.png",
    "/media/a.png\n",
    "/media/a b.png",
    "/\u2028/evil.example",
    "\uff0f\uff0fevil.example",  # full-width solidi
    ".//evil.example",
    "http://evil.example/x.png",
    "HTTPS://evil.example/x.png",
    "https:evil.example",
    "javascript:alert(1)",
    "JaVaScRiPt:alert(1)",
    "java\tscript:alert(1)",
    "data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=",
    "data:text/html,<script>alert(1)</script>",
    "data:image/png;base64,<script>",
    "data:image/png,rawbytes",
    "blob:https://evil.example/1",
    "media/a.png",  # no path of the server's has no leading "/"
    "",
]


def safe_sources(cases: list) -> list:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed")
    done = subprocess.run([node, "--input-type=module", "-e", RUN, str(PLAYER_JS), json.dumps(cases)],
                          capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout)


def test_the_servers_own_addresses_and_png_data_are_kept():
    assert safe_sources(KEPT) == KEPT


def test_any_other_address_is_no_image():
    results = safe_sources(REFUSED)
    assert {case: result for case, result in zip(REFUSED, results) if result} == {}


def test_what_is_not_text_is_no_image():
    assert safe_sources([None, 42, {"src": "/media/a.png"}, ["/media/a.png"], True]) == [""] * 5
