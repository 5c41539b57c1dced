"""The notebook widgets (anchordiv.widgets, anywidget): the p player (PPlayer) and the Learn page's
toy world (ToyWorld) a notebook shows.

In Python, each widget as the kernel holds it: the player's path (the explorer's), its traits ``p``
and ``marks`` read by the protocol's reader (docs/design.md §13) whether Python or the browser sets
them, and a payload within the protocol's bounds, its images small inline PNGs; the toy world's
payload (the Learn page's protocol, built from its traits) and its traits ``query``, ``a``, ``b``,
``scale``, ``p`` and ``width``, read as the Learn page reads a release and a typed set.

In real headless Chromium, the widget's actual ``_esm``, loaded as anywidget loads it (a ``blob:``
module) and rendered against a stand-in of anywidget's model (get, set, on, off, save_changes,
send): the one double here, since no Jupyter kernel runs in the test. Its state is the real
widget's (``get_state``), what the browser saves goes back through the real widget's ``set_state``
(what a kernel does with a front end's update) and what the kernel then holds comes back as a
change event, as the kernel's update would.
"""
from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image

from anchordiv.explorer.components import module_text
from anchordiv.explorer.feedback import MAX_MARKS
from anchordiv.gallery import Gallery
from conftest import object_style_world

ROOT = Path(__file__).resolve().parents[1]
K = 6
QUERY = 7


def world(copies: int = 4, size: int = 40, seed: int = 0) -> tuple[Gallery, tuple[torch.Tensor, torch.Tensor]]:
    """A labelled gallery of 6 objects x 5 styles x ``copies`` (d = 16), each image a ``size`` px
    square coloured by its object and style; and the object and style anchors (A, B)."""
    embeddings, rows, objects, styles = object_style_world(seed, 6, 5, copies, 16, 0.8, 0.15)
    labels = pd.DataFrame({"obj": [f"object {o}" for o, _ in rows], "sty": [f"style {s}" for _, s in rows]})

    def load(item: int) -> Image.Image:
        o, s = rows[item]
        return Image.new("RGB", (size, size), (40 * o, 50 * s, 90))

    gallery = Gallery(embeddings=embeddings, labels=labels, load=load, object_column="obj", name_column="obj",
                      style_column="sty", key=f"widget-test-{copies}-{size}-{seed}", description="test world")
    return gallery, (objects, styles)


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """The geometry's calibration is kept in the anchordiv cache: this test's own, empty."""
    monkeypatch.setenv("ANCHORDIV_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def small_world():
    return world()


@pytest.fixture
def player(small_world):
    from anchordiv.widgets import PPlayer

    gallery, anchors = small_world
    return PPlayer(gallery, QUERY, anchors, k=K, p=0.5)


def shown(widget, step: int) -> list[int]:
    """The gallery ids the payload shows at ``step``."""
    payload = widget._payload
    return [payload["items"][index]["id"] for index in payload["order"][step]]


# -- the kernel's side ----------------------------------------------------------------------------------
def test_the_player_plays_the_explorers_path_of_the_query(player, small_world):
    from anchordiv.explorer import GeometrySpec, MemorySource

    gallery, anchors = small_world
    geometry = MemorySource(gallery).fit_geometry(list(anchors), [["a"] * 6, ["b"] * 5], GeometrySpec())
    expected = geometry.p_path(gallery.embeddings[QUERY].numpy(), K, QUERY, "calibrated")
    assert np.array_equal(player.path.ids, expected.ids) and len(player.path) == 101
    assert QUERY not in player.path.ids
    assert all(shown(player, step) == player.path.ids[step].tolist() for step in range(len(player.path)))
    assert player.path.ids[0].tolist() != player.path.ids[-1].tolist()  # p moves the neighbours
    payload = player._payload
    assert payload["p"][50] == 0.5 == player.p and payload["enabled"]
    assert [panel["title"] for panel in payload["baselines"]] == ["Cosine similarity"]
    assert [tile["id"] for tile in payload["baselines"][0]["tiles"]] == gallery_cosine(gallery, QUERY, K)


def gallery_cosine(gallery: Gallery, query: int, k: int) -> list[int]:
    similarities = gallery.embeddings @ gallery.embeddings[query]
    similarities[query] = -np.inf
    return torch.topk(similarities, k).indices.tolist()


def test_a_fitted_mixture_is_played_at_each_p_as_its_exact_search():
    import anchordiv as ad
    from anchordiv.widgets import PPlayer

    gallery, (objects, styles) = world(seed=1)
    mixture = ad.MixtureAnchors([ad.EmpiricalAnchors(scale=10.0).fit(objects),
                                 ad.EmpiricalAnchors(scale=10.0).fit(styles)], [0.5, 0.5])
    widget = PPlayer(gallery, 3, mixture=mixture, k=K, steps=11, cosine=False)
    assert widget._payload["baselines"] == [] and len(widget.path) == 11
    index = ad.AnchorIndex(mixture, gallery.embeddings)
    for step, p in enumerate(widget.path.p):
        _, ids = index.with_model(mixture.with_weights([p, 1 - p])).search(gallery.embeddings[3:4], k=K, exclude=[3])
        assert shown(widget, step) == ids[0].tolist(), p


def test_a_query_may_be_an_embedding_and_then_nothing_is_left_out(small_world):
    from anchordiv.widgets import PPlayer

    gallery, anchors = small_world
    widget = PPlayer(gallery, gallery.embeddings[QUERY].numpy(), anchors, k=K, steps=5, cosine=False)
    assert QUERY in widget.path.ids[:, 0]  # the image itself is its own nearest
    assert all(tile["marks"] == "" for tile in widget._payload["items"])  # no labels to compare with


@pytest.mark.parametrize(("given", "p"), [
    (0.5, 0.5), (0.333, 0.33), (0.999, 1.0), (1, 1.0), (7, 1.0), (-3.5, 0.0), (10 ** 400, 1.0), (np.float32(0.25), 0.25),
])
def test_p_set_from_python_is_read_as_a_released_p_at_the_paths_nearest_position(player, given, p):
    player.p = given
    assert player.p == p and isinstance(player.p, float)


@pytest.mark.parametrize("given", [float("nan"), float("inf"), True, "0.5", [0.5], None])
def test_a_p_that_is_not_a_finite_number_is_refused_and_p_stays(player, given):
    import traitlets

    player.p = 0.2
    with pytest.raises(traitlets.TraitError, match=r"finite number in \[0, 1\]"):
        player.p = given
    assert player.p == 0.2


def test_a_p_from_the_browser_goes_through_the_same_reader(player):
    """``set_state`` is what the kernel does with a front end's update."""
    player.set_state({"p": 4})
    assert player.p == 1.0
    with pytest.raises(Exception, match="finite number"):
        player.set_state({"p": "evil"})
    assert player.p == 1.0


def test_marks_are_read_as_ids_of_the_gallery_each_once_and_the_rest_named(player):
    with pytest.warns(UserWarning, match=r"4 values that are not among the 120 images of this gallery"):
        player.set_state({"marks": [3, 3, 12, -1, "4", True, 2.0, 5]})
    assert player.marks == [3, 12, 5] and player._marks_open
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        player.marks = [np.int64(9)]
    assert player.marks == [9] and type(player.marks[0]) is int
    with pytest.warns(UserWarning, match=rf"past the {MAX_MARKS} it holds"):
        player.marks = list(range(120)) * 1000
    assert player.marks == list(range(MAX_MARKS)) and not player._marks_open


def test_a_big_gallery_sends_only_the_paths_images_each_a_small_png():
    """5,040 images of 300 px: the payload holds the images the path shows (at most
    MAX_PLAYER_ITEMS, a few dozen here), each as a PNG of at most 96 px."""
    from anchordiv.explorer.p_player import MAX_PLAYER_ITEMS
    from anchordiv.widgets import PPlayer

    gallery, anchors = world(copies=168, size=300)
    widget = PPlayer(gallery, QUERY, anchors, k=20)
    payload = widget._payload
    tiles = payload["items"] + payload["baselines"][0]["tiles"]
    assert len(gallery) == 5_040 and len(payload["items"]) == len(np.unique(widget.path.ids)) <= MAX_PLAYER_ITEMS
    for tile in tiles:
        assert tile["src"].startswith("data:image/png;base64,")
        with Image.open(io.BytesIO(base64.b64decode(tile["src"].split(",", 1)[1]))) as image:
            assert image.format == "PNG" and max(image.size) <= 96
    assert len(json.dumps(payload)) < 2 * 2**20


def test_past_the_protocols_bounds_the_widget_is_refused_with_what_to_lower(small_world, monkeypatch):
    from anchordiv.explorer import p_player as protocol
    from anchordiv.widgets import PPlayer
    from anchordiv.widgets import p_player as widget_module

    gallery, anchors = small_world
    with pytest.raises(ValueError, match="at most 50"):
        PPlayer(gallery, QUERY, anchors, k=51)
    with pytest.raises(ValueError, match=r"102 steps is more than the player takes \(101\)"):
        PPlayer(gallery, QUERY, anchors, k=K, steps=102)
    monkeypatch.setattr(protocol, "MAX_PLAYER_ITEMS", 5)
    with pytest.raises(ValueError, match="lower top-k"):
        PPlayer(gallery, QUERY, anchors, k=K)
    monkeypatch.undo()
    monkeypatch.setattr(widget_module, "MAX_IMAGE_BYTES", 1_000)
    with pytest.raises(ValueError, match="lower k"):
        PPlayer(gallery, QUERY, anchors, k=K)


def three_components(anchors):
    import anchordiv as ad

    return ad.MixtureAnchors([ad.EmpiricalAnchors(scale=10.0).fit(anchors[0]) for _ in range(3)], [0.3, 0.3, 0.4])


@pytest.mark.parametrize(("arguments", "message"), [
    (lambda anchors: {}, "one of the two"),
    (lambda anchors: {"anchors": anchors, "mixture": three_components(anchors)}, "one of the two"),
    (lambda anchors: {"anchors": anchors[:1]}, "two non-empty anchor sets"),
    (lambda anchors: {"anchors": (anchors[0], anchors[1][:0])}, "two non-empty anchor sets"),
    (lambda anchors: {"mixture": three_components(anchors)}, "two components"),
    (lambda anchors: {"anchors": anchors, "query": 10_000}, "not an item of this gallery of 120 images"),
    (lambda anchors: {"anchors": anchors, "query": -1}, "not an item of this gallery of 120 images"),
])
def test_what_is_not_a_player_is_refused_in_words(small_world, arguments, message):
    from anchordiv.widgets import PPlayer

    gallery, anchors = small_world
    given = {"query": QUERY, **arguments(anchors)}
    with pytest.raises(ValueError, match=message):
        PPlayer(gallery, k=K, **given)


def test_the_widget_needs_no_other_extra_than_notebook(tmp_path):
    """``pip install 'anchordiv[notebook]'`` brings anywidget and traitlets beside the library: a
    player is built with the explorer's and the other extras' packages unimportable."""
    blocked = ("streamlit", "plotly", "umap", "playwright", "open_clip", "ray", "skimage")
    script = (f"import sys\nsys.modules.update(dict.fromkeys({blocked!r}))\n"
              "from test_widgets import world\nfrom anchordiv.widgets import PPlayer\n"
              "gallery, anchors = world()\nprint(PPlayer(gallery, 3, anchors, k=4, steps=5).path.ids.shape)")
    env = {**os.environ, "ANCHORDIV_CACHE": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert (done.returncode, done.stdout.strip()) == (0, "(5, 4)"), done.stderr


def test_without_anywidget_the_import_names_the_extra(monkeypatch):
    import importlib

    from anchordiv.extras import MissingExtra

    monkeypatch.setitem(sys.modules, "anywidget", None)
    monkeypatch.delitem(sys.modules, "anchordiv.widgets", raising=False)
    with pytest.raises(MissingExtra, match=r"pip install 'anchordiv\[notebook\]'"):
        importlib.import_module("anchordiv.widgets")


# -- the widget's module: one drawing code for both hosts ------------------------------------------------
def inlined_modules(text: str) -> dict[str, str]:
    """The modules a module text imports as ``data:`` addresses: the first line of each, decoded."""
    found = re.findall(r'from "data:text/javascript;base64,([A-Za-z0-9+/=]+)"', text)
    return {base64.b64decode(encoded).decode("utf-8").splitlines()[0]: base64.b64decode(encoded).decode("utf-8")
            for encoded in found}


def test_the_widgets_module_is_the_explorers_drawing_code_with_its_own_adapter(player):
    """The ESM anywidget gets (``_esm``) is p_player_widget.js importing p_player.js's very text (as
    the Streamlit component's module runs it), with no "./" import left and no address elsewhere."""
    esm = player._esm
    assert esm.startswith("// The p player in a notebook") and "./p_player" not in esm
    assert sorted(inlined_modules(esm).values()) == sorted([module_text("notebook_markup.js"), module_text("p_player.js")])
    assert not re.search(r"https?://|esm\.sh|cdn", esm, flags=re.IGNORECASE)
    assert "mountHistory(" not in esm.split("data:", 1)[0]  # the adapter mounts no history policy


def test_the_widgets_module_loads_in_node_with_nothing_beside_it(tmp_path, player):
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed")
    entry = tmp_path / "widget.mjs"
    entry.write_text(player._esm, encoding="utf-8")
    done = subprocess.run([node, "--input-type=module", "-e",
                           "const m = await import(process.argv[1]); process.stdout.write(typeof m.default.render);",
                           entry.as_uri()], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "function"), done.stderr


# -- the widget's module in real Chromium, against a stand-in of anywidget's model ----------------------
PAGE_URL = "http://notebook.test/"
# anywidget's model API as the widget's module uses it, with Backbone's semantics: set fires
# "change:<name>" at once when the value changes; save_changes sends what was set since the last.
# fromKernel is an update from the kernel: the new values, then their change events.
RENDER = """
async ({ esm, css, state }) => {
  class StandInModel {
    constructor(state) {
      Object.assign(this, { state: structuredClone(state), listeners: {}, sets: [], saves: [], unsaved: {}, sent: [] });
    }
    get(name) { return this.state[name]; }
    set(name, value) {
      this.sets.push([name, value]);
      this.unsaved[name] = value;
      this.change(name, value);
    }
    change(name, value) {
      const same = JSON.stringify(this.state[name]) === JSON.stringify(value);
      this.state[name] = value;
      if (!same) for (const callback of [...(this.listeners[`change:${name}`] ?? [])]) callback(this, value);
    }
    save_changes() {
      this.saves.push(this.unsaved);
      this.unsaved = {};
    }
    on(event, callback) { (this.listeners[event] ??= []).push(callback); }
    off(event, callback) { this.listeners[event] = (this.listeners[event] ?? []).filter((c) => c !== callback); }
    send(message) { this.sent.push(message); }
    fromKernel(changes) { for (const [name, value] of Object.entries(changes)) this.change(name, value); }
  }
  const style = document.createElement("style");
  style.textContent = css;
  document.head.append(style);
  window.model = new StandInModel(state);
  // As anywidget loads a widget's _esm: a blob: module.
  const url = URL.createObjectURL(new Blob([esm], { type: "text/javascript" }));
  const widget = (await import(url)).default;
  URL.revokeObjectURL(url);
  window.unmount = await widget.render({ model: window.model, el: document.getElementById("output") });
}
"""
GRID = """() => [...document.querySelectorAll('[data-anchordiv-grid="anchor divergence"] > [data-anchordiv-id]')]
              .map((tile) => Number(tile.getAttribute("data-anchordiv-id")))"""
SAVES = "() => window.model.saves"


PLAYER_STATE = ["p", "marks", "_marks_open"]


def rendered(browser, widget, synced: list[str]):
    """A page of the notebook's output with ``widget`` rendered in it from its state (``_payload``,
    ``_html`` and ``synced``), its requests recorded (only the page itself is served: the widget's
    code and images are inline)."""
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    page.route(PAGE_URL, lambda route: route.fulfill(
        status=200, content_type="text/html", body='<!doctype html><html><body><div id="output"></div></body></html>'))
    page.goto(PAGE_URL)
    state = widget.get_state(["_payload", "_html", *synced])
    page.evaluate(RENDER, {"esm": widget._esm, "css": widget._css, "state": state})
    page.requests = requests
    return page


@pytest.fixture
def page(browser, player):
    return rendered(browser, player, PLAYER_STATE)


def kernel_round_trip(page, widget, echoed: list[str] = PLAYER_STATE) -> dict:
    """What the browser saved last, taken by the widget as a kernel takes it; then what the widget
    holds of ``echoed`` sent back (the kernel's echo). Returns what was saved."""
    saved = page.evaluate(SAVES)[-1]
    widget.set_state(saved)
    page.evaluate("(state) => window.model.fromKernel(state)", widget.get_state(echoed))
    return saved


def test_the_widget_draws_its_tiles_with_their_images_and_fetches_nothing(page, player):
    assert page.evaluate(GRID) == shown(player, 50)
    cosine = page.evaluate(GRID.replace("anchor divergence", "Cosine similarity"))
    assert cosine == [tile["id"] for tile in player._payload["baselines"][0]["tiles"]]
    page.wait_for_function("() => [...document.querySelectorAll('.adp-img')].every((image) => image.complete)")
    sizes = page.evaluate("() => [...document.querySelectorAll('.adp-tile:not(.adp-ghost) .adp-img')]"
                          ".map((image) => image.naturalWidth)")
    assert len(sizes) == 2 * K and all(width == 40 for width in sizes)  # the player's grid and cosine's
    assert page.inner_text(".adp-value") == "0.50" and page.inner_text(".adp-label") == "p: weight of A against B"
    assert page.evaluate("() => window.anchordivHistory === undefined")  # no history policy in a notebook
    assert [url for url in page.requests if not url.startswith("data:")] == [PAGE_URL]


def test_a_key_on_the_slider_sets_p_saves_it_and_the_kernel_reads_it(page, player):
    page.focus("[data-anchordiv-p]")
    page.keyboard.press("ArrowRight")
    assert page.evaluate(GRID) == shown(player, 51)  # drawn at once, from the payload
    page.wait_for_function("() => window.model.saves.length > 0")  # reported once the burst is over
    assert page.evaluate("() => window.model.sets") == [["p", 0.51]]
    assert kernel_round_trip(page, player) == {"p": 0.51}
    assert player.p == 0.51 and page.evaluate(GRID) == shown(player, 51)


def test_after_a_release_python_may_set_p_back_to_where_it_was(page, player):
    """The release is carried back to the player as the kernel's p, so a later p from Python is a
    change, even the p the player started at (else the player's memory of the release would win)."""
    page.focus("[data-anchordiv-p]")
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("() => window.model.saves.length > 0")
    assert kernel_round_trip(page, player) == {"p": 0.49}
    player.p = 0.5
    page.evaluate("(state) => window.model.fromKernel(state)", player.get_state(["p"]))
    assert page.evaluate(GRID) == shown(player, 50) and page.inner_text(".adp-value") == "0.50"


def test_a_drag_of_the_slider_sets_p_on_release(page, player):
    page.evaluate("""() => {
      const range = document.querySelector("[data-anchordiv-p]");
      for (const step of [60, 70, 80]) {
        range.value = String(step);
        range.dispatchEvent(new Event("input", { bubbles: true }));
      }
      range.dispatchEvent(new Event("change", { bubbles: true }));
    }""")
    page.wait_for_function("() => window.model.saves.length > 0")
    assert kernel_round_trip(page, player) == {"p": 0.8}
    assert player.p == 0.8 and page.evaluate(GRID) == shown(player, 80)


def test_play_then_pause_releases_the_stop_it_shows(page, player):
    page.click(".adp-play")
    assert page.inner_text(".adp-play") == "Pause"
    page.click(".adp-play")
    page.wait_for_function("() => window.model.saves.length > 0")
    saved = kernel_round_trip(page, player)
    stops = [player._payload["p"][stop] for stop in player._payload["stops"]]
    assert saved["p"] in stops and saved["p"] > 0.5 and player.p == saved["p"]


def test_p_set_in_python_moves_the_drawing(page, player):
    for p, step in ((0.1, 10), (1.0, 100), (0.37, 37)):
        player.p = p
        page.evaluate("(state) => window.model.fromKernel(state)", player.get_state(["p"]))
        assert page.evaluate(GRID) == shown(player, step)
        assert page.inner_text(".adp-value") == f"{player._payload['p'][step]:.2f}"
    assert page.evaluate(SAVES) == []  # a move from the kernel is not reported back


def test_a_toggle_marks_an_image_and_marks_set_in_python_are_drawn(page, player):
    first = shown(player, 50)[0]
    page.click(f'[data-anchordiv-grid="anchor divergence"] [data-anchordiv-mark="{first}"]')
    page.wait_for_function("() => window.model.saves.length > 0")
    assert kernel_round_trip(page, player) == {"marks": [first]} and player.marks == [first]
    other = shown(player, 50)[1]
    player.marks = [other]
    page.evaluate("(state) => window.model.fromKernel(state)", player.get_state(["marks"]))
    pressed = page.evaluate("""() => [...document.querySelectorAll('[data-anchordiv-mark][aria-pressed="true"]')]
                               .map((button) => Number(button.getAttribute("data-anchordiv-mark")))""")
    assert pressed and set(pressed) == {other}  # its toggle in every grid that shows it


# -- the toy world: the kernel's side -------------------------------------------------------------------
TOY_STATE = ["query", "a", "b", "scale", "p", "width"]


@pytest.fixture
def toy():
    from anchordiv.widgets import ToyWorld

    return ToyWorld(a=[0, 40, 80], b=[160, 250], query=120, scale=5.0, p=0.5)


def test_the_toy_worlds_payload_is_the_learn_pages_for_its_traits(toy):
    from anchordiv.explorer.toy_world import ToyState, slider_bounds, toy_payload

    assert (toy.query, toy.a, toy.b, toy.scale, toy.p, toy.width) == (120.0, [0.0, 40.0, 80.0], [160.0, 250.0], 5.0,
                                                                     0.5, 40.0)
    state = ToyState("circle", 120.0, (0.0, 40.0, 80.0), (160.0, 250.0), 5.0, 0.5, 40.0)
    assert toy._payload == json.loads(json.dumps(toy_payload(state, "softmax", "balanced", slider_bounds())))
    toy.p, toy.a, toy.query = 0.2, [10, 70], 300
    assert (toy._payload["p"], toy._payload["sets"], toy._payload["query"]) == (0.2, [[10.0, 70.0], [160.0, 250.0]],
                                                                                300.0)
    assert len(json.dumps(toy._payload)) < 4_000  # the world's state and bounds: the browser computes the rest


def test_a_gmm_toy_world_carries_the_librarys_k_means_labels_for_its_sets_as_they_are():
    from anchordiv.explorer.toy_world import gmm_labels
    from anchordiv.widgets import ToyWorld

    many = list(range(0, 340, 17))  # 20 anchors: two components
    widget = ToyWorld(a=many, b=[], query=10, kind="gmm")
    assert widget._payload["labels"] == gmm_labels(widget.state(), "gmm", "balanced") and widget._payload["labels"][0]
    widget.a = many[:16]
    assert widget._payload["labels"] == gmm_labels(widget.state(), "gmm", "balanced")
    assert len(widget._payload["labels"][0]) == 16


def test_the_toy_world_on_the_sphere_takes_pairs():
    from anchordiv.widgets import ToyWorld

    widget = ToyWorld(a=[(0, 0), (60, 0)], b=np.array([[0, 60]]), query=(np.int64(30), 20.0), world="sphere")
    assert widget.query == [30.0, 20.0] and widget.a == [[0.0, 0.0], [60.0, 0.0]] and widget.b == [[0.0, 60.0]]
    assert widget._payload["world"] == "sphere" and widget._payload["query"] == [30.0, 20.0]


@pytest.mark.parametrize(("name", "value", "message"), [
    ("query", 400, r"query must be an angle in degrees from 0 to 359; got 400"),
    ("query", "120", r"query must be an angle"),
    ("query", float("nan"), r"query must be an angle"),
    ("a", [], r"Set A is empty"),
    ("a", [0, 360], r"Set A: 0° and 360° are the same direction"),
    ("a", [0, "north"], r"a must be a list of angles in degrees"),
    ("b", list(range(73)), r"b must be a list of angles"),
    ("scale", 0.1, r"scale must be a number from 0.5 to 40"),
    ("p", 1.5, r"p must be a number from 0 to 1"),
    ("p", True, r"p must be a number"),
    ("width", None, r"width must be a number from 5 to 180"),
])
def test_a_toy_trait_it_cannot_take_is_refused_in_words_and_the_trait_stays(toy, name, value, message):
    import traitlets

    before = getattr(toy, name), toy._payload
    with pytest.raises(traitlets.TraitError, match=message):
        setattr(toy, name, value)
    assert (getattr(toy, name), toy._payload) == before


def test_a_toy_release_from_the_browser_goes_through_the_same_reader(toy):
    """``set_state`` is what the kernel does with a front end's update."""
    toy.set_state({"query": 200, "a": [0, 100, 80], "p": 0.75})
    assert (toy.query, toy.a, toy.p) == (200.0, [0.0, 100.0, 80.0], 0.75) and toy._payload["query"] == 200.0
    with pytest.raises(Exception, match="query must be an angle"):
        toy.set_state({"query": [1, 2]})
    assert toy.query == 200.0


@pytest.mark.parametrize(("arguments", "message"), [
    ({"world": "torus"}, "choose 'circle' or 'sphere'"),
    ({"kind": "posterior"}, "the toy world offers the anchor models"),
    ({"weighting": "calibrated"}, "choose one of"),
])
def test_what_is_not_a_toy_world_is_refused_in_words(arguments, message):
    from anchordiv.widgets import ToyWorld

    with pytest.raises(ValueError, match=message):
        ToyWorld(**arguments)


def test_the_toy_worlds_module_is_the_learn_pages_drawing_code_with_its_own_adapter(toy):
    esm = toy._esm
    assert esm.startswith("// The toy world in a notebook") and "./toy_world" not in esm and "./notebook" not in esm
    assert sorted(inlined_modules(esm).values()) == sorted([module_text("notebook_markup.js"),
                                                            module_text("toy_world.js")])
    assert not re.search(r"https?://|esm\.sh|cdn", esm, flags=re.IGNORECASE)


# -- the toy world's module in real Chromium, against the same stand-in ---------------------------------
CIRCLE_AT_JS = """(degrees) => { const box = document.querySelector(".atw-world").getBoundingClientRect();
  const r = box.width / 2.9, theta = degrees * Math.PI / 180;
  return [box.x + box.width / 2 + r * Math.cos(theta), box.y + box.height / 2 - r * Math.sin(theta)]; }"""
WORLD_TITLE = ".atw-world-title"


@pytest.fixture
def toy_page(browser, toy):
    page = rendered(browser, toy, TOY_STATE)
    page.locator("[data-anchordiv-query]").wait_for()
    return page


def test_the_toy_world_draws_in_the_notebook_and_fetches_nothing(toy_page):
    assert "the query at 120°" in toy_page.inner_text(WORLD_TITLE)
    assert toy_page.locator("[data-anchordiv-anchor]").count() == 5
    assert toy_page.evaluate("() => document.querySelector('.atw-tilt').childElementCount") > 0
    assert [url for url in toy_page.requests if not url.startswith("data:")] == [PAGE_URL]


def test_a_drag_of_the_query_sets_the_traits_by_save_changes_once(toy_page, toy):
    start = toy_page.evaluate(CIRCLE_AT_JS, 120)
    toy_page.mouse.move(*start)
    toy_page.mouse.down()
    for degrees in (150, 180, 200):
        toy_page.mouse.move(*toy_page.evaluate(CIRCLE_AT_JS, degrees))
    toy_page.wait_for_function("() => document.querySelector('.atw-world-title').textContent.includes('at 200°')")
    assert toy_page.evaluate(SAVES) == []
    toy_page.mouse.up()
    toy_page.wait_for_function("() => window.model.saves.length > 0")
    saved = kernel_round_trip(toy_page, toy, ["_payload"])
    assert saved == {"query": 200, "a": [0, 40, 80], "b": [160, 250], "scale": 5, "p": 0.5, "width": 40}
    assert toy.query == 200.0 and toy._payload["query"] == 200.0
    assert "the query at 200°" in toy_page.inner_text(WORLD_TITLE) and len(toy_page.evaluate(SAVES)) == 1


def test_a_burst_of_keys_and_a_new_anchor_each_save_once(toy_page, toy):
    toy_page.focus(".atw-p")
    for _ in range(4):
        toy_page.keyboard.press("ArrowLeft")
    toy_page.wait_for_function("() => document.querySelector('.atw-p-value').textContent === '0.30'")  # next frame
    toy_page.wait_for_function("() => window.model.saves.length > 0")
    assert kernel_round_trip(toy_page, toy, ["_payload"])["p"] == pytest.approx(0.3) and toy.p == pytest.approx(0.3)
    toy_page.click(".atw-add[data-set='1']")
    toy_page.mouse.click(*toy_page.evaluate(CIRCLE_AT_JS, 300))
    toy_page.wait_for_function("() => window.model.saves.length > 1")
    assert kernel_round_trip(toy_page, toy, ["_payload"])["b"] == [160, 250, 300] and toy.b == [160.0, 250.0, 300.0]
    assert len(toy_page.evaluate(SAVES)) == 2


def test_traits_set_in_python_redraw_the_toy_world(toy_page, toy):
    toy.query, toy.a, toy.p = 45, [0, 90], 0.9
    toy_page.evaluate("(state) => window.model.fromKernel(state)", toy.get_state(["_payload"]))
    toy_page.wait_for_function("() => document.querySelector('.atw-world-title').textContent.includes('at 45°')")
    assert toy_page.locator("[data-anchordiv-anchor]").count() == 4
    assert toy_page.inner_text(".atw-p-value") == "0.90" and toy_page.input_value(".atw-theta") == "45"
    assert toy_page.evaluate(SAVES) == []  # a move from the kernel is not reported back
