"""The p player's protocol (docs/design.md §13, "The p player's protocol") and its browser code. In
Node (each such test skips itself where Node is not installed):

* its JavaScript unit tests, ``tests/js/*.test.mjs`` under Node's own test runner (``node --test``;
  no npm package). They run here, so that ``make test`` (through pytest) and plain pytest both run
  them, once;
* the image-source check (``safeSource`` in app/components/p_player_logic.js): it keeps the
  server's own addresses and inline PNG data and turns every other address, one a browser would
  fetch from another host included, into "" (no image);
* the component's module as Streamlit hands it to the browser (its sibling modules inlined,
  app/p_player.py) loads, and reads only the payload's fields, each of which it reads.

In Python: the payload as the component receives it, and the reply as the page reads it (a
browser's reply is outside input).
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import fields
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMPONENTS = ROOT / "app" / "components"
JS_TESTS = sorted((ROOT / "tests" / "js").glob("*.test.mjs"))
# Prints what safeSource makes of each case.
RUN = """
import { pathToFileURL } from "node:url";
const [path, cases] = process.argv.slice(1);
const logic = await import(pathToFileURL(path).href);
process.stdout.write(JSON.stringify(JSON.parse(cases).map((src) => logic.safeSource(src))));
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


def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.skip("Node.js is not installed")
    return found


def run_node(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([node(), *args], capture_output=True, text=True, timeout=120, cwd=ROOT)


def safe_sources(cases: list) -> list:
    done = run_node("--input-type=module", "-e", RUN, str(COMPONENTS / "p_player_logic.js"), json.dumps(cases))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_js_unit_tests_pass():
    """Each file is named (not the folder): Node 20 reads a folder as the tests in it, later Nodes
    read their arguments as patterns."""
    assert JS_TESTS, "no tests/js/*.test.mjs"
    done = run_node("--test", *map(str, JS_TESTS))
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert re.search(r"^# fail 0$", done.stdout, flags=re.MULTILINE), done.stdout[-2000:]


def test_the_servers_own_addresses_and_png_data_are_kept():
    assert safe_sources(KEPT) == KEPT


def test_any_other_address_is_no_image():
    results = safe_sources(REFUSED)
    assert {case: result for case, result in zip(REFUSED, results) if result} == {}


def test_what_is_not_text_is_no_image():
    assert safe_sources([None, 42, {"src": "/media/a.png"}, ["/media/a.png"], True]) == [""] * 5


def test_the_module_streamlit_runs_loads_with_its_siblings_inlined(tmp_path):
    """Streamlit gives the browser the component's module as a ``blob:`` address, against which
    "./p_player_logic.js" would not resolve: what the app registers imports its siblings as
    ``data:`` addresses, and loads with no file beside it."""
    from anchordiv.explorer.components import module_text

    text = module_text("p_player.js")
    assert "./p_player_" not in text and text.count('from "data:text/javascript;base64,') == 2
    entry = tmp_path / "entry.mjs"
    entry.write_text(text, encoding="utf-8")
    done = run_node("--input-type=module", "-e",
                    "const m = await import(process.argv[1]); process.stdout.write(typeof m.default);",
                    entry.as_uri())
    assert (done.returncode, done.stdout) == (0, "function"), done.stderr


def test_the_browser_code_reads_the_payloads_fields_and_only_those():
    """The fields the JavaScript reads of the data (``data.x``) are the payload's
    (:class:`~anchordiv.explorer.p_player.PlayerPayload`), and none is sent that nothing reads."""
    from anchordiv.explorer.p_player import PlayerPayload

    read = set()
    for path in COMPONENTS.glob("p_player*.js"):
        read |= set(re.findall(r"\bdata\.([a-z_]+)", path.read_text(encoding="utf-8")))
    assert read == {field.name for field in fields(PlayerPayload)}


# -- the protocol's Python side: the payload as the component receives it, the reply as the page reads it
def small_path():
    from anchordiv.explorer.p_player import PlayerPath, PlayerTile

    return PlayerPath(key="q1", p=(0.0, 0.5, 1.0), title="Anchor divergence (p = {p})", enabled=True,
                      items=(PlayerTile(3, "cat", "cat", "✓obj"), PlayerTile(8, "dog", "dog", "")),
                      order=((0, 1), (1, 0), (1, 0)), heads=(("1. d=0.1", "2. d=0.2"),) * 3, agreement=("", "", ""),
                      notes=(), note=(), runs=((0, 0), (1, 2)), stops=(0, 2))


def test_the_payload_is_one_json_object_with_every_image_addressed_and_p_at_a_position():
    from anchordiv.explorer.p_player import BaselinePanel, PlayerMarks, PlayerTile, player_payload

    baseline = BaselinePanel("Cosine", "2 of 2 share the object", (PlayerTile(8, "dog", "dog", "", "1. s=0.9"),))
    payload = player_payload(small_path(), p=0.74, address=lambda ids: [f"/media/{item}.png" for item in ids],
                             label="p", help="help", baselines=[baseline], marks=PlayerMarks((3,), True),
                             instance="p_player", companion_params=["gallery"])
    sent = json.loads(json.dumps(payload.as_json()))
    assert sent["p_now"] == 0.5 and sent["p"][1] == sent["p_now"]
    assert [item["src"] for item in sent["items"]] == ["/media/3.png", "/media/8.png"]
    assert sent["baselines"] == [{"title": "Cosine", "agreement": "2 of 2 share the object",
                                  "tiles": [{"id": 8, "name": "dog", "line": "dog", "marks": "", "head": "1. s=0.9",
                                             "src": "/media/8.png"}]}]
    assert sent["marks"] == {"like": [3], "enabled": True} and sent["companion_params"] == ["gallery"]
    assert sent["order"] == [[0, 1], [1, 0], [1, 0]] and sent["instance"] == "p_player"
    # p exactly half way between two positions: the lower, as SliderPath.step_of
    assert player_payload(small_path(), p=0.25, address=lambda ids: [""] * len(ids), label="", help="", baselines=[],
                          marks=PlayerMarks((), False), instance="x", companion_params=()).p_now == 0.0


@pytest.mark.parametrize(("sent", "p"), [
    ({"p": 0.25}, 0.25), ({"p": 1}, 1.0), ({"p": -3.5}, 0.0), ({"p": 7}, 1.0),
    ({"p": 10 ** 400}, 1.0),  # JSON's whole numbers have no bound; this one has no float
    ({"p": float("inf")}, None), ({"p": float("nan")}, None), ({"p": True}, None), ({"p": "0.5"}, None),
    ({"p": [0.5]}, None), ({}, None), (None, None), ("p", None), ([0.5], None),
])
def test_a_reported_p_is_a_number_in_0_1_or_none(sent, p):
    from anchordiv.explorer.p_player import read_reply

    assert read_reply(sent, 10).p == p


def test_reported_marks_are_ids_of_the_gallery_each_once_and_the_rest_counted():
    from anchordiv.explorer.feedback import MAX_MARKS
    from anchordiv.explorer.p_player import read_reply

    assert read_reply({"p": 0.5}, 10).marks is None
    marks = read_reply({"marks": [3, 3, 12, -1, "4", True, 2.0, 5]}, 10).marks
    assert (marks.kept, marks.foreign) == ([3, 5], 5)
    assert read_reply({"marks": "**evil**"}, 10).marks.examples == ("**evil**",)
    many = read_reply({"marks": list(range(10 ** 6))}, 10 ** 6).marks
    assert (len(many.kept), many.unread) == (MAX_MARKS, 10 ** 6 - MAX_MARKS)
