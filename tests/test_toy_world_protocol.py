"""The toy world's protocol (anchordiv.explorer.toy_world; docs/design.md, "The toy world's
protocol"): the payload the Learn page's component receives (JSON-ready, its sets as the page
parsed them, a GMM's k-means labels the library's EM starts from) and the release it sends back, a
browser's outside input: read only when every field is one the component could have sent, within
the page's bounds, and written back as texts the page's parsing reads as the same sets. In Node
(skipped without it): the module as Streamlit runs it loads with its siblings inlined, and the
browser code reads every field of the payload and no other."""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from anchordiv import lesson
from anchordiv.explorer.components import component_text, module_text
from anchordiv.explorer.toy_world import (CIRCLE, SPHERE, Bounds, ToyState, check_set, read_field, read_released,
                                          slider_bounds, toy_payload)

BOUNDS = {"theta": Bounds(0, 359, 1), "azimuth": Bounds(-180, 180, 1), "elevation": Bounds(-90, 90, 1),
          "scale": Bounds(0.5, 40.0, 0.5), "p": Bounds(0.0, 1.0, 0.05), "width": Bounds(5, 180, 5)}
CIRCLE_STATE = ToyState(CIRCLE, 120.0, (0.0, 40.0, 80.0), (160.0, 250.0), 5.0, 0.5, 40.0)
SPHERE_STATE = ToyState(SPHERE, (30.0, 20.0), ((0.0, 0.0), (60.0, 0.0)), (), 7.5, 0.25, 40.0)
RELEASE = {"world": "circle", "query": 334, "a": [0, 40, 80], "b": [160, 250], "scale": 5, "p": 0.5, "width": 40}


def test_the_payload_is_json_and_carries_the_page_state_and_bounds():
    payload = json.loads(json.dumps(toy_payload(CIRCLE_STATE, "softmax", "balanced", BOUNDS)))
    assert payload["sets"] == [[0.0, 40.0, 80.0], [160.0, 250.0]] and payload["query"] == 120.0
    assert payload["controls"]["scale"] == {"min": 0.5, "max": 40.0, "step": 0.5}
    assert set(payload["controls"]) == set(BOUNDS)  # the query's sliders too: the page draws no other
    assert payload["labels"] is None and payload["max_anchors"] == lesson.MAX_TOY_ANCHORS
    sphere = json.loads(json.dumps(toy_payload(SPHERE_STATE, "softmax", "literal", BOUNDS)))
    assert sphere["sets"] == [[[0.0, 0.0], [60.0, 0.0]], []] and sphere["query"] == [30.0, 20.0]


def test_the_sliders_bounds_are_the_learn_pages_settings():
    assert slider_bounds() == BOUNDS


def test_a_gmm_payload_carries_each_sets_k_means_labels():
    many = tuple(float(angle) for angle in range(0, 340, 17))  # 20 anchors: two components
    payload = toy_payload(ToyState(CIRCLE, 10.0, many, (), 5.0, 0.5, 40.0), "gmm", "balanced", BOUNDS)
    labels, none = payload["labels"]
    assert none is None and len(labels) == len(many) and set(labels) == {0, 1}


def test_a_release_is_read_and_its_sets_written_as_the_page_parses_them():
    state = read_released(RELEASE, CIRCLE, BOUNDS)
    assert state == ToyState(CIRCLE, 334.0, (0.0, 40.0, 80.0), (160.0, 250.0), 5.0, 0.5, 40.0)
    text_a, text_b = state.set_texts()
    assert lesson.parse_angles(text_a) == list(state.a) and lesson.parse_angles(text_b) == list(state.b)
    sphere = read_released({**RELEASE, "world": "sphere", "query": [-40, 89], "a": [[0, 0], [60, -90]], "b": []},
                           SPHERE, BOUNDS)
    assert sphere.query == (-40.0, 89.0)
    assert lesson.parse_angle_pairs(sphere.set_texts()[0]) == list(sphere.a) and sphere.set_texts()[1] == ""


@pytest.mark.parametrize("change", [
    {"world": "sphere"}, {"query": 360}, {"query": 359.5}, {"query": -1}, {"query": "120"}, {"query": True}, {"query": float("nan")},
    {"a": "0, 40"}, {"a": [0, "40"]}, {"a": [0, None]}, {"b": [float("inf")]}, {"a": list(range(73))},
    {"scale": 0.1}, {"scale": 41}, {"p": 1.5}, {"p": None}, {"width": 2}, {"width": "40"},
    # a whole number too large for a float, as a forged JSON release may hold
    {"scale": 10**400}, {"query": 10**400}, {"a": [0, 10**400]},
])
def test_a_release_the_component_could_not_have_sent_is_no_release(change):
    assert read_released({**RELEASE, **change}, CIRCLE, BOUNDS) is None


def test_a_field_is_read_alone_as_in_a_release_and_a_set_checked_as_typed():
    """The notebook's widget reads each trait so (anchordiv.widgets.ToyWorld)."""
    assert read_field("query", 334, CIRCLE, BOUNDS) == 334.0 and read_field("query", [0, 91], SPHERE, BOUNDS) is None
    assert read_field("b", [[0, 0], [60, -90]], SPHERE, BOUNDS) == ((0.0, 0.0), (60.0, -90.0))
    assert read_field("p", 0.25, CIRCLE, BOUNDS) == 0.25 and read_field("width", 4, CIRCLE, BOUNDS) is None
    check_set(CIRCLE, (0.0, 40.0), "Set A", allow_empty=False)
    check_set(SPHERE, (), "Set B", allow_empty=True)
    with pytest.raises(ValueError, match="Set A: 10° and 370° are the same direction"):
        check_set(CIRCLE, (10.0, 370.0), "Set A", allow_empty=False)
    with pytest.raises(ValueError, match="Set A is empty"):
        check_set(SPHERE, (), "Set A", allow_empty=False)


@pytest.mark.parametrize("sent", [None, [], "released", {"world": "sphere", "query": [0, 91], "a": [[0, 0]], "b": [],
                                                          "scale": 5, "p": 0.5, "width": 40},
                                  {"world": "sphere", "query": [0, 0], "a": [[0, 0, 0]], "b": [], "scale": 5, "p": 0.5,
                                   "width": 40}])
def test_no_mapping_or_a_bad_sphere_release_is_no_release(sent):
    assert read_released(sent, SPHERE, BOUNDS) is None


def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.skip("Node.js is not installed")
    return found


def test_the_module_streamlit_runs_loads_with_its_siblings_inlined(tmp_path):
    """What the app registers (:func:`~anchordiv.explorer.components.module_text`) imports the math,
    the drawing, the page's history policy and the p player's release rule (one report a burst) as
    ``data:`` addresses and loads with no file beside it."""
    text = module_text("toy_world.js")
    assert "./toy_world_" not in text and "./p_player" not in text and "./page_history" not in text
    assert text.count('from "data:text/javascript;base64,') == 4
    entry = tmp_path / "entry.mjs"
    entry.write_text(text, encoding="utf-8")
    done = subprocess.run([node(), "--input-type=module", "-e",
                           "const m = await import(process.argv[1]); process.stdout.write(typeof m.default);",
                           entry.as_uri()], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "function"), done.stderr


def test_the_browser_code_reads_the_payloads_fields_and_only_those():
    payload = toy_payload(CIRCLE_STATE, "gmm", "balanced", BOUNDS)
    read = set(re.findall(r"\bdata\.(\w+)", component_text("toy_world.js")))
    assert read == set(payload), (sorted(read - set(payload)), sorted(set(payload) - read))
