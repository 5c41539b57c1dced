"""The hostile corpus of the surfaces added since the last hostile round: model names and tags,
downloads, prompt templates, vocabularies and set files, weighted sets, marks, and the photo notice.

Each case sends one hostile input where it enters: a link to a page (streamlit.testing's AppTest),
a hub download (the real huggingface_hub against a loopback hub, tests/loopback_hub.py), the bytes
an uploader hands the page, a file under the data roots. :mod:`hostile_judge`, written apart from
the code under test, judges what came back: no traceback; a refusal names the input and says what
to do; no live markup; no hang; no connection the case does not allow; no read outside the data
roots. Where an input is taken, the case checks that what was made of it is right (nothing lost,
nothing silently wrong). ``test_the_corpus_covers_every_kind`` counts the cases per kind.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from PIL import Image

from anchordiv import explorer as ex
from anchordiv.explorer.anchors import MAX_ANCHOR_FILE_BYTES
from anchordiv.explorer.feedback import MAX_MARKS
from anchordiv.explorer.settings import BUILTIN, CHECKPOINT, HUB, SETTINGS
from anchordiv.explorer.paths import DataRoots
from anchordiv.explorer.vocabulary import FIND_TERMS, file_terms
from anchordiv.images import MAX_BYTES
from anchordiv.vocabularies.catalog import MAX_FILE_BYTES
from app_pages import open_page
from helpers import encoded, needs_weights
from hostile_judge import Outcome, call, judge, page_outcome
from loopback_hub import CONFIG_NAME, TINY_REPO, TINY_SPEC as HUB_SPEC, WEIGHTS_NAME, serve_tiny_hub, tiny_hub_files

pytest.importorskip("streamlit.testing.v1")

pytestmark = needs_weights


@dataclass(frozen=True)
class Case:
    """One hostile input: ``refused`` (must be refused, with ``names`` in the message) or taken
    (then ``check(result)`` lists what is wrong with what was made of it)."""

    name: str
    value: Any
    refused: bool = True
    names: tuple[str, ...] = ()
    check: Callable[[Any], list[str]] | None = None
    extra: dict = field(default_factory=dict)

    def __str__(self) -> str:
        return self.name


def verdict(case: Case, outcome: Outcome, hosts: frozenset = frozenset()) -> list[str]:
    """What :func:`~hostile_judge.judge` finds, and for a call that should take its input, a refusal."""
    problems = judge(outcome, refused=case.refused, names=case.names, hosts=hosts)
    if not case.refused and outcome.said and not outcome.markdown:  # a call (a page says other things too)
        problems.append(f"taken, yet refused: {outcome.said}")
    if case.check is not None and outcome.result is not None:
        problems += case.check(outcome.result)
    return problems


@pytest.fixture(scope="module")
def outside(tmp_path_factory) -> Path:
    """A folder outside every data root, with a file no case may read."""
    folder = tmp_path_factory.mktemp("outside-the-roots")
    (folder / "secret.txt").write_text("secret\n")
    (folder / "secret.pt").write_bytes(b"not a checkpoint")
    return folder


# -- model names and tags, in a link ------------------------------------------------------------------
def model_cases(outside: Path) -> list[Case]:
    secret = str(outside / "secret.pt")
    return [
        Case("unknown architecture", {"encoder": "open_clip:NoSuchNet-evil"}, names=("NoSuchNet-evil",)),
        Case("hf-hub with ..", {"encoder": "open_clip:hf-hub:../../evil"}, names=("../../evil",)),
        Case("hf-hub with .. inside", {"encoder": "open_clip:hf-hub:org/../evil"}, names=("org/../evil",)),
        Case("absolute path", {"encoder": f"open_clip:{secret}"}, names=(secret,)),
        Case("URL", {"encoder": "open_clip:https://evil.example/evil.pt"}, names=("https://evil.example/evil.pt",)),
        Case("1,000 characters", {"encoder": "open_clip:" + "evil" * 250}, names=("encoder",)),
        Case("Markdown", {"encoder": "[evil](https://evil.example)"}, names=("[evil](https://evil.example)",)),
        # The architecture is kept, the pretrained left out: its checkpoint is chosen from the server's menu.
        Case("pretrained a path", {"encoder": "open_clip:ViT-B-32", "pretrained": secret}, names=(secret,),
             extra={"source": CHECKPOINT}),
        Case("pretrained a URL", {"encoder": "open_clip:ViT-B-32", "pretrained": "https://evil.example/w.pt"},
             names=("https://evil.example/w.pt",), extra={"source": CHECKPOINT}),
        Case("pretrained Markdown", {"encoder": "open_clip:ViT-B-32", "pretrained": "**evil** $x$"},
             names=("**evil** $x$",), extra={"source": CHECKPOINT}),
        Case("pretrained for the built-in model", {"encoder": "builtin", "pretrained": "evil"}, names=("evil",)),
        Case("a download on a server that downloads nothing", {"encoder": "open_clip:hf-hub:evil-org/evil-repo"},
             names=("evil-org/evil-repo",), extra={"source": HUB}),
    ]


@pytest.mark.parametrize("case", model_cases(Path("/outside")), ids=str)
def test_model_names_and_tags_in_a_link(app_env, outside, tmp_path, monkeypatch, case):
    case = next(built for built in model_cases(outside) if built.name == case.name)
    monkeypatch.delenv("ANCHORDIV_ALLOW_DOWNLOAD", raising=False)
    with serve_tiny_hub(tmp_path) as hub:  # a hub this server may not use: nothing may reach it
        hub.patch_endpoint(monkeypatch)
        outcome, app = page_outcome(lambda: open_page(case.value), forbidden=(outside,))
        problems = verdict(case, outcome)
        if hub.requests:
            problems.append(f"the hub was asked {len(hub.requests)} times")
    if app.session_state["encoder_kind"] != case.extra.get("source", BUILTIN):
        problems.append(f"the page's model is {app.session_state['encoder_kind']!r}")
    if app.session_state.get("openclip_checkpoint") or app.session_state.get("checkpoint_choice"):
        problems.append("a checkpoint file was taken from the link")
    assert not problems, problems


# -- downloads from a loopback hub -------------------------------------------------------------------
@pytest.fixture
def hubs(tmp_path, monkeypatch):
    """The hub (this process's huggingface_hub pointed at it) and another host serving other bytes."""
    monkeypatch.setenv("ANCHORDIV_CACHE", str(tmp_path / "anchordiv-cache"))
    with serve_tiny_hub(tmp_path / "hub") as hub, \
            serve_tiny_hub(tmp_path / "other", files=tiny_hub_files(tmp_path / "other-files", seed=1)) as other:
        hub.patch_endpoint(monkeypatch)
        yield hub, other
        hub.throttle = other.throttle = None  # an abandoned transfer's thread finishes


def fetch(cache: Path) -> list[Path]:
    """What the explorer's download button and ``anchordiv fetch-model`` run."""
    from anchordiv.encoders import fetch_model

    return fetch_model(HUB_SPEC, cache_dir=cache)


def plain_url(hub, data: bytes, cache: Path) -> Path:
    """A plain-URL download (how OpenAI's weights come), checked against the digest in its URL."""
    import hashlib

    from anchordiv.encoders.url_client import url_file

    return url_file(hub.serve_plain("w.bin", data), cache / "w.bin", sha256=hashlib.sha256(data).hexdigest())


def whole(hub, cache: Path) -> Callable[[Any], list[str]]:
    def check(paths) -> list[str]:
        weights = [path for path in paths if path.name == WEIGHTS_NAME]
        return [] if weights and weights[0].read_bytes() == hub.files[WEIGHTS_NAME] else \
            ["the weights on disk are not the hub's"]
    return check


DOWNLOADS = ["wrong hash", "truncated", "far larger than announced", "slow drip", "404", "500",
             "redirect to another host", "redirect to file://", "two at once", "cut mid-file",
             "no such repository", "url: wrong hash", "url: far larger than announced", "url: 500",
             "url: redirect to file://", "url: truncated",
             # found by a second corpus run apart from this one (then added here)
             "a tag that is a path", "a tag that is not a hash", "a size of 400 digits", "a negative size",
             "no size announced", "a revision that is a path", "a config nested too deep",
             "url: a size of 400 digits", "url: no size announced"]


@pytest.mark.parametrize("name", DOWNLOADS)
def test_downloads_from_a_hostile_hub(hubs, tmp_path, outside, monkeypatch, name):
    hub, other = hubs
    cache = tmp_path / "hf"
    url = name.startswith("url: ")
    target = "w.bin" if url else WEIGHTS_NAME
    hosts = frozenset({("127.0.0.1", int(server.endpoint.rsplit(":", 1)[1])) for server in (hub, other)})
    action: Callable[[], Any] = (lambda: plain_url(hub, hub.files[WEIGHTS_NAME], cache)) if url else (lambda: fetch(cache))
    case = Case(name, None, names=(target, TINY_REPO) if not url else ("w.bin",))
    kind = name.removeprefix("url: ")
    if kind == "wrong hash":
        hub.corrupt.add(target)
    elif kind == "truncated":
        hub.truncate.add(target)
    elif kind == "far larger than announced":
        hub.oversize.add(target)
    elif kind == "slow drip":
        from anchordiv.encoders import transfers

        monkeypatch.setattr(transfers, "STALL_WINDOW", 1.0)  # the deadline, shortened: 1 s under 8 kB/s
        monkeypatch.setattr(transfers, "SLOWEST_RATE", 8_000)
        hub.throttle = 200.0
    elif kind in ("404", "500"):
        hub.fail_with[target] = int(kind)
    elif kind == "redirect to another host":
        hub.redirect[target] = other.url(WEIGHTS_NAME)
    elif kind == "redirect to file://":
        hub.redirect[target] = (outside / "secret.txt").as_uri()
    elif kind in ("a tag that is a path", "a tag that is not a hash"):
        etag = f"../../../../../../../..{outside}/escaped" if kind == "a tag that is a path" else "hello"
        hub.override[target] = {"X-Linked-Etag": f'"{etag}"', "ETag": f'"{etag}"'}
    elif kind in ("a size of 400 digits", "a negative size"):
        size = "9" * 400 if "400" in kind else "-5"
        hub.override[target] = {"Content-Length": size} if url else {"X-Linked-Size": size}
    elif kind == "no size announced":
        hub.override[target] = {"Content-Length": None} if url else {"X-Linked-Size": None, "Content-Length": None}
    elif kind == "a revision that is a path":
        hub.override[target] = {"X-Repo-Commit": "../../evil"}
    elif kind == "a config nested too deep":
        saved_config = hub.files[CONFIG_NAME]
        hub.files[CONFIG_NAME] = b"[" * 100_000 + b"]" * 100_000

        def action():  # fetched as any file; the load, which reads it, refuses it
            from anchordiv.encoders import load_encoder

            return load_encoder(HUB_SPEC, allow_download=True, cache_dir=cache, device="cpu")
        case = Case(name, None, names=(CONFIG_NAME,), extra={"restore": saved_config})
    elif kind == "no such repository":
        action = lambda: __import__("anchordiv.encoders", fromlist=["fetch_model"]).fetch_model(  # noqa: E731
            "open_clip:hf-hub:evil-org/no-such-repo", cache_dir=cache)
        case = Case(name, None, names=("evil-org/no-such-repo",))
    elif kind == "cut mid-file":
        hub.cut_once(target, 100_000)
        case = Case(name, None, refused=False, check=whole(hub, cache))
    elif kind == "two at once":
        hub.hold_gets, hub.held = threading.Event(), {WEIGHTS_NAME}
        results: list = []
        threading.Timer(1.0, hub.hold_gets.set).start()

        def action():
            threads = [threading.Thread(target=lambda: results.append(fetch(cache))) for _ in range(2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(25)
            return results

        def check(found) -> list[str]:
            if len(found) != 2 or found[0] != found[1]:
                return [f"the two callers got {found}"]
            return whole(hub, cache)(found[0]) + ([] if len(hub.gets(WEIGHTS_NAME)) == 1 else
                                                   [f"{len(hub.gets(WEIGHTS_NAME))} transfers of one file"])
        case = Case(name, None, refused=False, check=check)
    outcome = call(action, forbidden=(outside,))
    problems = verdict(case, outcome, hosts=hosts)
    size = len(hub.files[WEIGHTS_NAME])
    if kind == "far larger than announced" and not url and hub.sent.get(target, 0) > 3 * size:
        problems.append(f"read {hub.sent[target]:,} bytes of a file announced as {size:,}")
    if (outside / "escaped").exists():
        problems.append("a file was written outside the cache")
    if case.refused and not outcome.crash:  # nothing damaged is kept, and a healthy hub then works
        hub.corrupt.clear(), hub.truncate.clear(), hub.oversize.clear(), hub.fail_with.clear(), hub.redirect.clear()
        hub.override.clear()
        if "restore" in case.extra:
            hub.files[CONFIG_NAME] = case.extra["restore"]
            for stale in cache.glob("**/open_clip_config.json"):  # the damaged config the hub served
                stale.unlink()
        hub.throttle = None
        if kind != "no such repository":
            again = call(lambda: plain_url(hub, hub.files[WEIGHTS_NAME], cache) if url else fetch(cache))
            problems += [f"after the refusal: {text}" for text in again.said] + ([again.crash] if again.crash else [])
            if not url and not again.crash and not again.said:
                problems += whole(hub, cache)(again.result)
    assert not problems, problems


# -- prompt templates, in a link and typed -----------------------------------------------------------
TEMPLATES = [
    Case("attribute access", "{0.__class__}", names=("{0.__class__}",)),
    Case("attribute access beside a slot", "a {} {0.__class__.__init__.__globals__}", refused=False),
    Case("two slots", "{}{}", names=("{}{}",)),
    Case("no slot", "a photo of evil", names=("a photo of evil",)),
    Case("a brace alone", "{", names=("'{'",)),
    Case("a format spec", "{:>100000000}", names=("{:>100000000}",)),
    Case("10,000 lines", "\n".join(f"a {{}} {number}" for number in range(10_000)), names=("10,000 lines",)),
    Case("Markdown and math", "**evil** {} $x^2$ [evil](https://evil.example)", refused=False),
    Case("a control character", "a {} \x00 evil", names=("U+0000",)),
]


@pytest.mark.parametrize("case", TEMPLATES, ids=str)
def test_prompt_templates(app_env, case):
    # Typed into the text area (no link carries 10,000 lines): the state the widget would hold.
    outcome, app = page_outcome(lambda: open_page({"templates_a": "custom"}, state={"own_templates_a": case.value}))
    problems = verdict(case, outcome)
    if app.session_state["own_templates_a"] != case.value:
        problems.append("the typed templates were not kept")
    if not case.refused and any("templates are not used" in text for text in outcome.said):
        problems.append(f"refused: {outcome.said}")
    assert not problems, problems


def test_prompt_templates_in_a_link_keep_their_markup_inert(app_env):
    case = next(case for case in TEMPLATES if case.name == "Markdown and math")
    outcome, app = page_outcome(lambda: open_page({"templates_a": "custom", "own_templates_a": case.value}))
    assert not verdict(case, outcome) and app.session_state["own_templates_a"] == case.value


# -- anchor set files (the bytes the uploader hands the page) and vocabulary files -------------------
def one_anchor(text) -> list[str]:
    return [] if ex.parse_anchor_text(text).anchors == ("evil cat",) else [f"read as {text!r}"]


SET_FILES = [
    Case("binary", bytes(range(256)) * 4, names=("UTF-8",)),
    Case("binary that is UTF-8", b"evil\x00cat\x01\n", names=("U+0000",)),
    Case("not UTF-8", "café evil\n".encode("latin-1"), names=("UTF-8",)),
    Case("one byte over the cap", b"evil cat\n" * (MAX_ANCHOR_FILE_BYTES // 9) + b"x" * (MAX_ANCHOR_FILE_BYTES % 9 + 1),
         names=(f"{MAX_ANCHOR_FILE_BYTES:,}",)),
    Case("one character over the cap", ("e" * (SETTINGS["anchors_a"].max_chars + 1)).encode(),
         names=(f"{SETTINGS['anchors_a'].max_chars:,}",)),
    Case("5,000 weighted terms", "".join(f"term {n}\t0.{n % 9 + 1}\n" for n in range(5000)).encode(), refused=False,
         check=lambda text: [] if len(ex.parse_anchor_text(text).weights) == 5000 else ["the weights were cut"]),
    Case("empty", b"", names=("no anchor",)),
    Case("all one term", b"evil cat\n" * 100, refused=False, check=one_anchor),
    Case("a weight of NaN", b"evil cat\tnan\ndog\t1\n", names=("'nan'",)),
]


@pytest.mark.parametrize("case", SET_FILES, ids=str)
def test_anchor_set_files(case):
    outcome = call(lambda: ex.anchor_file_text(case.value, SETTINGS["anchors_a"].max_chars))
    assert not verdict(case, outcome), verdict(case, outcome)


def vocabulary_cases(root: Path, outside: Path) -> list[Case]:
    files = {
        "binary": bytes(range(256)) * 4, "binary that is UTF-8": b"evil\x00cat\n", "not UTF-8": "café\n".encode("latin-1"),
        "one byte over the cap": b"x" * (MAX_FILE_BYTES + 1),
        "one term over the count cap": "".join(f"evil {n}\n" for n in range(FIND_TERMS + 1)).encode(),
        "empty": b"", "all one term": b"evil cat\n" * 500,
    }
    cases = [Case(name, root / f"{name}.txt", names=(f"{name}.txt",), refused=name != "all one term",
                  check=(lambda terms: [] if terms == ("evil cat",) else [f"read as {terms}"])
                  if name == "all one term" else None) for name in files]
    for case in cases:
        case.value.write_bytes(files[case.name])
    (root / "link-out.txt").symlink_to(outside / "secret.txt")
    return cases + [
        Case("a name with ../", root / ".." / outside.name / "secret.txt", names=("secret.txt",)),
        Case("an absolute path outside", outside / "secret.txt", names=("secret.txt",)),
        Case("a link out of the roots", root / "link-out.txt", names=("link-out.txt",)),
        Case("a missing file", root / "gone.txt", names=("gone.txt",)),
    ]


VOCABULARY_NAMES = ["binary", "binary that is UTF-8", "not UTF-8", "one byte over the cap",
                    "one term over the count cap", "empty", "all one term", "a name with ../",
                    "an absolute path outside", "a link out of the roots", "a missing file"]


@pytest.mark.parametrize("name", VOCABULARY_NAMES)
def test_vocabulary_files_under_the_data_roots(tmp_path_factory, outside, name):
    root = tmp_path_factory.mktemp("data-root")
    case = next(case for case in vocabulary_cases(root, outside) if case.name == name)
    roots = DataRoots((str(root),))
    outcome = call(lambda: file_terms(roots, str(case.value)), forbidden=(outside,))
    assert not verdict(case, outcome), verdict(case, outcome)


TYPED_VOCABULARIES = [
    Case("empty", "", names=("your list",)),
    Case("one term over the count cap", "\n".join(f"evil {n}" for n in range(FIND_TERMS + 1)), names=("2,001",)),
    Case("control characters", "evil\x00cat\ndog", names=("U+0000",)),
    Case("all one term", "evil cat\n" * 50, refused=False),
    Case("Markdown", "**evil** [evil](https://evil.example)\n$x$ evil\n:red[evil]", refused=False),
]


@pytest.mark.parametrize("case", TYPED_VOCABULARIES, ids=str)
def test_typed_vocabularies(app_env, case):
    state = {"find_open": True, "find_vocabulary": "own", "find_own_terms": case.value}
    outcome, app = page_outcome(lambda: open_page({}, state=state))
    problems = verdict(case, outcome)
    if app.session_state["find_own_terms"] != case.value:
        problems.append("the typed terms were not kept")
    assert not problems, problems


# -- weighted sets, in a link ------------------------------------------------------------------------
WEIGHTED = [
    Case("weight 0", "evil cat\t0\ndog\t1", names=("'0'",)),
    Case("negative weight", "evil cat\t-1\ndog\t1", names=("'-1'",)),
    Case("NaN", "evil cat\tnan\ndog\t1", names=("'nan'",)),
    Case("1e309", "evil cat\t1e309\ndog\t1", names=("'1e309'",)),
    Case("a missing tab", "evil cat\t1\ndog 1", names=("line 2",)),
    Case("a tab inside the term", "evil\tcat\t1\ndog\t1", names=("line 1",)),
    Case("a weight without an anchor", "\t1\ndog\t1", names=("line 1",)),
]


@pytest.mark.parametrize("case", WEIGHTED, ids=str)
def test_weighted_sets_in_a_link(app_env, case):
    outcome, app = page_outcome(lambda: open_page({"anchors_b": case.value}))
    problems = verdict(case, outcome)
    if app.session_state["anchors_b"] != case.value:
        problems.append("set B's text was not kept as the link gave it")
    assert not problems, problems


# -- marks: in the Learn page's link, from the p player, and learning from few -----------------------
LEARN = "views/learn.py"
LINK_MARKS = [
    Case("out of range", ["999°"], names=("'999°'",)),
    Case("negative", ["-15°"], names=("'-15°'",)),
    Case("repeated", ["30°", "30°"], names=("once",)),
    Case("Markdown", ["**evil**"], names=("'**evil**'",)),
    # 900: past Streamlit's own bound (1,000 parameters) the server drops the whole query string unread.
    Case("900 of them", [f"{n}°" for n in range(900)], names=("the link is",)),
]


@pytest.mark.parametrize("case", LINK_MARKS, ids=str)
def test_marks_in_a_link(app_env, case):
    outcome, app = page_outcome(lambda: open_page({"toy_marks": case.value}, page=LEARN))
    problems = verdict(case, outcome)
    marks = app.session_state["learn_weights_marks"]
    if len(marks) != len(set(marks)) or any(not mark.endswith("°") or not 0 <= float(mark[:-1]) < 360 for mark in marks):
        problems.append(f"the lesson kept marks {marks}")
    assert not problems, problems


PLAYER_MARKS = [
    Case("out of range", [10**9], refused=False), Case("negative", [-1], refused=False),
    Case("repeated", "repeat", refused=False), Case("10^6 of them", list(range(10**6)), refused=False),
    Case("text and Markdown", ["**evil**", "7", True, 2.5, None], refused=False),
]


@pytest.mark.parametrize("case", PLAYER_MARKS, ids=str)
def test_marks_from_the_p_player(app_env, library, case):
    """What a client may send as the player's marks: gallery ids of this query only, each once, at
    most MAX_MARKS; anything else is dropped (no person typed it: the player sends ids it shows)."""
    from player import player_data, report_state

    app = open_page({}, state={"find_open": True})
    grid = [item["id"] for item in player_data(app)["items"]]
    sent = [grid[0], grid[0], grid[1]] if case.value == "repeat" else case.value
    outcome, app = page_outcome(lambda: report_state(app, marks=sent))
    problems = verdict(case, outcome)
    like = app.session_state["find_like"]
    expected = [grid[0], grid[1]] if case.value == "repeat" else \
        list(range(min(MAX_MARKS, len(library["gallery"])))) if len(sent) == 10**6 else []
    if like != expected:
        problems.append(f"the marks became {like}, not {expected}")
    assert not problems, problems


@pytest.mark.parametrize("count", [0, 1])
def test_learning_from_few_marks(app_env, count):
    from player import player_data, report_state

    app = open_page({}, state={"find_open": True})
    if count:
        report_state(app, marks=[player_data(app)["items"][0]["id"]])

    def learn():
        app.button(key="find_learn").click()
        return app.run()

    outcome, app = page_outcome(learn)
    case = Case(f"{count} marks", None, refused=count == 0, names=("marked",))
    problems = verdict(case, outcome)
    if count and app.session_state["find_like"] != [player_data(app)["items"][0]["id"]]:
        problems.append("the mark was lost")
    assert not problems, problems


def test_a_weighted_set_of_5000_terms_in_a_link_is_refused_whole(app_env):
    text = "".join(f"term {n}\t0.5\n" for n in range(5000))
    outcome, app = page_outcome(lambda: open_page({"anchors_a": text}))
    case = Case("use as A with 5,000 weighted terms", text, names=("characters",))
    problems = verdict(case, outcome)
    if "term 4999" in app.session_state["anchors_a"]:
        problems.append("the 5,000 terms were taken")
    assert not problems, problems


# -- widget values a client forges (issue 52): the query, picks, ranks, marks, rows, columns, clicks -
# A client may send any value for a widget; Streamlit hands it to the page as sent. Each is read
# through one check (anchordiv.explorer.widget_values): what no widget of the page could hold is left
# out and named, never an exception. The state is forged as a session's own before a run (the value
# the page reads), or sent as the browser sends it (a map click, the player's marks).
COMPARE = "views/compare.py"
EVIL = "**evil** [x](https://evil.example)"
MILLION = list(range(10**6))
# A value of each kind where a widget holds one gallery id or rank, and what a message names it by.
FORGED_ONE = [
    Case("out of range", 10**9, names=("1000000000",)),
    Case("a million", MILLION, names=("[0, 1, 2, 3, ...]",)),
    Case("Markdown", EVIL, names=(EVIL,)),
    Case("a float", 2.5, names=("2.5",)),
    Case("a bool", True, names=("True",)),
    Case("nested", [[3]], names=("[[3]]",)),
]
# The widgets that hold one: (session-state key, page, state that draws it, the value it holds once
# the forged one is left out: a gallery id, nothing picked, the first rank).
ONE_VALUE = {
    "the query": ("query_id", None, {}, "an id"), "the query on Learn": ("query_id", LEARN, {}, "an id"),
    "the query on Compare": ("query_id", COMPARE, {}, "an id"), "a match menu": ("query_pick", None, {}, None),
    "Compare's match menu": ("compare_pick", COMPARE, {}, None),
    "the neighbour explained": ("explain_rank", None, {"explain_open": True}, 1),
    "Learn's neighbour": ("learn_neighbour", LEARN, {}, 1),
}


def is_gallery_id(value: Any) -> bool:
    from conftest import APP_LIMIT

    return type(value) is int and 0 <= value < APP_LIMIT


@pytest.mark.parametrize("case", FORGED_ONE, ids=str)
@pytest.mark.parametrize("widget", ONE_VALUE)
def test_a_forged_gallery_id_or_rank_is_named_and_left_out(app_env, widget, case):
    key, page, drawn, expected = ONE_VALUE[widget]
    outcome, app = page_outcome(lambda: open_page({}, page=page, state={**drawn, key: case.value}))
    problems = verdict(case, outcome)
    held = app.session_state[key]
    if not (is_gallery_id(held) if expected == "an id" else held == expected and type(held) is type(expected)):
        problems.append(f"{key} holds {str(held)[:60]} after the run")
    assert not problems, problems


# A list of each kind where a widget holds a list (a plain text stands for one value).
FORGED_LISTS = [
    Case("out of range", [3, 10**9], names=("1000000000",)),
    Case("a million", MILLION, names=(f"{10**6 - MAX_MARKS:,} values past the {MAX_MARKS}",)),
    Case("Markdown", [EVIL], names=(EVIL,)),
    Case("a float", [2.5], names=("2.5",)),
    Case("a bool", [True], names=("True",)),
    Case("nested", [[3], [[4]]], names=("[3], [[4]]",)),
    Case("text, float, bool and None", [EVIL, "7", 2.5, True, None], names=(EVIL,)),
    Case("not a list", EVIL, names=(EVIL,)),
]


def kept_marks(case: Case) -> list[int]:
    """What is kept of a list of :data:`FORGED_LISTS`: its gallery ids, at most MAX_MARKS."""
    return list(range(MAX_MARKS)) if case.value is MILLION else [3] if case.name == "out of range" else []


@pytest.mark.parametrize("case", FORGED_LISTS, ids=str)
@pytest.mark.parametrize("key", ["find_like", "find_unlike"])
def test_forged_marks_are_named_and_left_out(app_env, key, case):
    """The marks' menus hold gallery ids of this gallery, at most MAX_MARKS; the forged list is read
    on a run that keeps the menus' state (the marks are those of the query they were made for)."""
    from anchordiv.app.session_keys import FIND_MARKS_OF

    shown_for = open_page({}, state={"find_open": True}).session_state[FIND_MARKS_OF]
    state = {"find_open": True, FIND_MARKS_OF: shown_for, "find_like": [], "find_unlike": [], key: case.value}
    outcome, app = page_outcome(lambda: open_page({}, state=state))
    problems = verdict(case, outcome)
    marks = app.session_state[key]
    if marks != kept_marks(case):
        problems.append(f"{key} holds {str(marks)[:60]}, not {str(kept_marks(case))[:60]}")
    assert not problems, problems


FORGED_SPECS = [
    Case("out of range", ["cosine", 10**9], names=("1000000000",)),
    Case("a million", [f"evil {n}" for n in range(10**6)], names=("values past the",)),
    Case("Markdown", [EVIL], names=(EVIL,)),  # a text, so a spec: named as one that does not parse
    Case("a float", [2.5], names=("2.5",)),
    Case("a bool", [True], names=("True",)),
    Case("nested", [["A"]], names=("['A']",)),
    Case("not a list", 10**9, names=("1000000000",)),
]


@pytest.mark.parametrize("case", FORGED_SPECS, ids=str)
@pytest.mark.parametrize("key", ["compare_rows", "compare_columns"])
def test_forged_compare_rows_and_columns_are_named_and_left_out(app_env, key, case):
    outcome, app = page_outcome(lambda: open_page({}, page=COMPARE, state={key: case.value}))
    problems = verdict(case, outcome)
    specs = app.session_state[key]
    most = SETTINGS[key].max_items
    if not isinstance(specs, list) or len(specs) > most or not all(isinstance(spec, str) for spec in specs):
        problems.append(f"{key} holds {str(specs)[:60]}")
    assert not problems, problems


def test_forged_map_clicks_are_named(app_env):
    """A click on the UMAP map, as the browser sends it (the selection's JSON): its point's id, any value."""
    import json

    from streamlit.proto.WidgetStates_pb2 import WidgetState

    app = open_page({}, state={"umap_open": True})
    chart = next(element for element in app.get("plotly_chart") if element.proto.id.endswith("umap_chart_anchor"))
    problems = []
    for case in FORGED_ONE:
        def click():
            states = app._tree.get_widget_states()  # AppTest's own run step: it cannot click a chart
            event = {"selection": {"points": [{"customdata": [case.value]}], "point_indices": [0], "box": [],
                                   "lasso": []}}
            states.widgets.append(WidgetState(id=chart.proto.id, string_value=json.dumps(event)))
            return app._run(states)

        outcome, app = page_outcome(click)
        problems += [f"{case}: {problem}" for problem in verdict(case, outcome)]
        if not is_gallery_id(app.session_state["query_id"]):
            problems.append(f"{case}: the query is {str(app.session_state['query_id'])[:60]}")
    assert not problems, problems


@pytest.mark.parametrize("case", FORGED_LISTS, ids=str)
def test_the_p_players_forged_marks_are_named_and_left_out(app_env, case):
    """The marks as the player sends them (test_marks_from_the_p_player: what is kept of them)."""
    from player import report_state

    app = open_page({}, state={"find_open": True})
    outcome, app = page_outcome(lambda: report_state(app, marks=case.value))
    problems = verdict(case, outcome)
    like = app.session_state["find_like"]
    if like != kept_marks(case):
        problems.append(f"the marks became {str(like)[:60]}, not {str(kept_marks(case))[:60]}")
    assert not problems, problems


# -- option widgets, numbers, texts and flags a client forges (hostile round 52: F1, F9, F10) ----------
# Every widget of one value is read through one check (app/widget_checks.py) before the page uses
# it: a value it cannot hold (none of its choices, a number where a menu holds a text, a list where
# a text box holds a text, a number outside its bounds) is named in a warning and the widget keeps
# the value it held. Sent as the browser sends it (a widget state of the run), or forced into the
# session's state before a run (what the page reads, for the values no client can send as such).
WIDGET_KINDS = ("radio", "selectbox", "multiselect", "slider", "number_input", "text_input", "text_area", "checkbox")
LONG = "y" * 150_000


def widget_of(app, key: str):
    """The widget of ``app``'s last run whose key is ``key`` (``None``: not drawn)."""
    return next((element for kind in WIDGET_KINDS for element in app.get(kind)
                 if getattr(element, "key", None) == key), None)


def sent(app, key: str, field: str, value: Any):
    """``app`` rerun as a browser sends a change of widget ``key``: its state's ``field`` holding
    ``value`` (a list for an ``*_array_value``), every other widget as it was."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState, WidgetStates

    widget = widget_of(app, key)
    states = WidgetStates()
    states.widgets.extend(state for state in app._tree.get_widget_states().widgets if state.id != widget.id)
    forged = WidgetState(id=widget.id)
    if field.endswith("_array_value"):
        getattr(forged, field).data.extend(value)
    else:
        setattr(forged, field, value)
    states.widgets.append(forged)
    return app._run(states)


def forged_widget(case: Case, key: str, page: str | None, state: dict | None = None) -> list[str]:
    """What is wrong after the widget ``key`` of ``page`` is sent ``case``: the value must be named,
    and the widget drawn again holding what it held."""
    app = open_page({}, page=page, state=state)
    held = app.session_state[key]
    outcome, app = page_outcome(lambda: sent(app, key, case.extra["field"], case.value))
    problems = verdict(case, outcome)
    if app.session_state[key] != held:
        problems.append(f"{key} holds {str(app.session_state[key])[:60]}, not {str(held)[:60]}")
    if widget_of(app, key) is None:
        problems.append(f"{key}: the widget is not drawn after the forged value")
    return problems


def test_what_a_widget_of_one_value_takes():
    """The one check's rule (anchordiv.explorer.widget_values.Allowed): a value as the widget holds
    it, or refused; never an exception, whatever the value."""
    from anchordiv.explorer.widget_values import REFUSED, Allowed

    menu, ranks = Allowed.choice(("a", "b")), Allowed.choice((1, 2, 3))
    top_k, scale = Allowed.number(1, 200, integer=True), Allowed.number(1.0, 100.0)
    taken = [(menu, "b", "b"), (menu, None, REFUSED), (Allowed.choice(("a",), empty=True), None, None),
             (ranks, 2.0, 2), (ranks, True, REFUSED), (ranks, np.int64(3), 3), (menu, np.array(["a", "b"]), REFUSED),
             (top_k, 10, 10), (top_k, np.int64(10), 10), (top_k, 2.5, REFUSED), (top_k, 10**300, REFUSED),
             (top_k, -3, REFUSED), (top_k, True, REFUSED), (top_k, "10", REFUSED), (scale, 20, 20.0),
             (scale, float("nan"), REFUSED), (scale, float("inf"), REFUSED), (scale, 1e300, REFUSED),
             (Allowed.text(), "x", "x"), (Allowed.text(), b"x", REFUSED), (Allowed.text(), ["x"], REFUSED),
             (Allowed.flag(), np.bool_(True), True), (Allowed.flag(), "yes", REFUSED), (Allowed.flag(), 1, REFUSED)]
    wrong = {f"{allowed.kind} {value!r}": got for allowed, value, fit in taken
             if (got := allowed.fit(value)) is not fit and (got != fit or type(got) is not type(fit))}
    assert not wrong, wrong


FORGED_CHOICE = [
    Case("an unknown text", EVIL, names=(EVIL,), extra={"field": "string_value"}),
    Case("a whole number", -3, names=("-3",), extra={"field": "int_value"}),
    Case("a float", 2.5, names=("2.5",), extra={"field": "double_value"}),
]
# The option widgets of hostile round 52 (F1, F10): key -> the page that draws it.
OPTION_WIDGETS = {
    "preset_a": None, "preset_b": None, "templates_a": None, "weighting": None, "query_mode": None,
    "gallery_kind": None, "encoder_kind": None, "anchor_model": None, "direction": None,
    "compare_weighting": COMPARE, "compare_preview_size": COMPARE,
    "learn_world": LEARN, "learn_kind": LEARN, "learn_weighting": LEARN,
}


@pytest.mark.parametrize("case", FORGED_CHOICE, ids=str)
@pytest.mark.parametrize("key", OPTION_WIDGETS)
def test_a_forged_option_is_named_and_the_widget_keeps_its_choice(app_env, key, case):
    problems = forged_widget(case, key, OPTION_WIDGETS[key])
    assert not problems, problems


@pytest.mark.parametrize("key", ["preset_a", "preset_b"])
def test_a_preset_menu_sent_150000_characters_names_their_start(app_env, key):
    case = Case("150,000 characters", LONG, names=("'yyyyyyyyyy",), extra={"field": "string_value"})
    problems = forged_widget(case, key, None)
    assert not problems, problems


def test_a_forged_option_keeps_the_choice_made_before_it(app_env):
    app = open_page({})
    app.radio(key="weighting").set_value("balanced").run()
    outcome, app = page_outcome(lambda: sent(app, "weighting", "string_value", EVIL))
    problems = verdict(Case("an unknown text", EVIL, names=("keeps “Balanced”",)), outcome)
    if app.session_state["weighting"] != "balanced":
        problems.append(f"the weighting became {app.session_state['weighting']}")
    assert not problems, problems


@pytest.mark.parametrize("key, page", [("query_pick", None), ("compare_pick", COMPARE)])
def test_a_match_menu_sent_a_huge_number_names_it(app_env, key, page):
    """A number the menu's own callback takes for an id (a match menu holds gallery ids), sent as
    an integer of the wire: named, as an id past the gallery, and the menu is drawn again empty."""
    app = open_page({}, page=page)
    outcome, app = page_outcome(lambda: sent(app, key, "int_value", 2**62))
    problems = verdict(Case("2**62", 2**62, names=(str(2**62),)), outcome)
    if app.session_state[key] is not None or widget_of(app, key) is None:
        problems.append(f"{key} holds {app.session_state[key]!r} after the run")
    assert not problems, problems


FORGED_TEXT = [
    Case("bytes", b"\xff\x00evil", names=("b'\\xff\\x00evil'",), extra={"field": "bytes_value"}),
    Case("a list", ["evil", "list"], names=("['evil', 'list']",), extra={"field": "string_array_value"}),
]
TEXT_WIDGETS = {"query_search": None, "anchors_a": None, "compare_text": COMPARE, "learn_anchors_a": LEARN}


@pytest.mark.parametrize("case", FORGED_TEXT, ids=str)
@pytest.mark.parametrize("key", TEXT_WIDGETS)
def test_a_text_box_sent_something_else_is_named_and_keeps_its_text(app_env, key, case):
    problems = forged_widget(case, key, TEXT_WIDGETS[key])
    assert not problems, problems


def sent_as(app, key: str, field: str, value: Any):
    """``app`` rerun as a client sends widget ``key`` a value of another kind than its own: ``field``
    of its state (a message with ``data``, as a chat box's trigger value, or a plain field)."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState, WidgetStates

    widget = widget_of(app, key)
    states = WidgetStates()
    states.widgets.extend(state for state in app._tree.get_widget_states().widgets if state.id != widget.id)
    forged = WidgetState(id=widget.id)
    if field == "string_trigger_value":
        forged.string_trigger_value.data = value
    else:
        setattr(forged, field, value)
    states.widgets.append(forged)
    return app._run(states)


@pytest.mark.parametrize("key", TEXT_WIDGETS)
def test_a_text_box_sent_a_chat_boxs_kind_of_value_keeps_it_as_its_text(app_env, key):
    """A text sent as a chat box's trigger value is a text to the page, but Streamlit would write it
    back in that kind and fail: it is named and kept as the box's own text."""
    app = open_page({}, page=TEXT_WIDGETS[key])
    outcome, app = page_outcome(lambda: sent_as(app, key, "string_trigger_value", "**evil**"))
    problems = verdict(Case("a chat box's value", "**evil**", names=("another kind of value",)), outcome)
    if app.session_state[key] != "**evil**" or widget_of(app, key) is None:
        problems.append(f"{key} holds {app.session_state[key]!r}")
    assert not problems, problems


@pytest.mark.parametrize("value", ["", "#1", EVIL], ids=["empty", "a row", "markdown"])
@pytest.mark.parametrize("key, page", [("compare_rows", COMPARE), ("compare_columns", COMPARE),
                                       ("learn_weights_marks", LEARN)])
def test_a_list_menu_sent_one_text_keeps_its_list(app_env, key, page, value):
    """One text where a multiselect holds a list (Streamlit would read it letter by letter, or fail
    on an empty one): named, and the menu keeps the list it held."""
    app = open_page({}, page=page)
    held = app.session_state[key]
    outcome, app = page_outcome(lambda: sent_as(app, key, "string_value", value))
    problems = verdict(Case("one text", value, names=("was sent one value where it holds a list",)), outcome)
    if app.session_state[key] != held or widget_of(app, key) is None:
        problems.append(f"{key} holds {str(app.session_state[key])[:60]}, not {str(held)[:60]}")
    assert not problems, problems


# Values no client can send as such (Streamlit turns a widget's value into its kind first: a number
# box's out-of-range number into its minimum), forced into the state the page reads: each named,
# and the setting keeps its default. (page, key, value, what names it, what it keeps)
FORCED_STATE = [
    (None, "top_k", 10**9, "1000000000", 10), (None, "top_k", -3, "-3", 10), (None, "top_k", 1e300, "1e+300", 10),
    (None, "top_k", 2.5, "2.5", 10), (None, "scale", "x", "'x'", 10.0), (None, "show_iti", "yes", "'yes'", False),
    (None, "p", EVIL, EVIL, 0.5), (None, "weighting", None, "None", "calibrated"),
    (None, "query_mode", EVIL, EVIL, "gallery"), (None, "direction", 5, "5", SETTINGS["direction"].default),
    (None, "templates_a", ["auto"], "['auto']", "auto"), (None, "anchor_model", "evil", "'evil'", "softmax"),
    (LEARN, "p", EVIL, EVIL, 0.5), (LEARN, "weighting", 3, "3", "calibrated"),
    (LEARN, "learn_weights_k", 10**6, "1000000", 4),
    (COMPARE, "query_text", ["a"], "['a']", SETTINGS["query_text"].default),
    (COMPARE, "compare_k", -1, "-1", 5),
]


@pytest.mark.parametrize("page, key, value, names, kept", FORCED_STATE,
                         ids=[f"{page or 'explore'}-{key}-{str(value)[:12]}"
                              for page, key, value, _, _ in FORCED_STATE])
def test_a_forced_setting_is_named_and_keeps_its_default(app_env, page, key, value, names, kept):
    outcome, app = page_outcome(lambda: open_page({}, page=page, state={key: value}))
    problems = verdict(Case(key, value, names=(names,)), outcome)
    held = app.session_state[key]
    if held != kept or type(held) is not type(kept):
        problems.append(f"{key} holds {held!r}, not {kept!r}")
    assert not problems, problems


def test_a_forced_anchor_set_keeps_its_preset_list(app_env, library):
    outcome, app = page_outcome(lambda: open_page({}, state={"anchors_a": 7}))
    problems = verdict(Case("anchors_a", 7, names=("(7)",)), outcome)
    if app.session_state["anchors_a"] != "\n".join(library["presets"]["Gallery object names"]):
        problems.append(f"set A holds {str(app.session_state['anchors_a'])[:60]}")
    assert not problems, problems


# -- the weight lesson: all four hand weights at 0, and marks sent to its menu (F9, F10) ----------------
ZERO_WEIGHTS = {f"toy_w{angle}": "0" for angle in (0, 90, 180, 270)}


@pytest.mark.parametrize("how", ["link", "sliders"])
def test_all_four_hand_weights_at_0_are_said_in_the_page_s_words(app_env, how):
    def run():
        if how == "link":
            return open_page(ZERO_WEIGHTS, page=LEARN)
        app = open_page({}, page=LEARN)
        for angle in (0, 90, 180, 270):
            app.slider(key=f"learn_weights_w{angle}").set_value(0.0)
        return app.run()

    outcome, app = page_outcome(run)
    case = Case("all four weights 0", None, names=("All the weights are 0",))
    problems = verdict(case, outcome)
    if any("Cannot weigh the anchors" in text or "non-negative" in text for text in outcome.said):
        problems.append(f"the library's words: {outcome.said}")
    if [app.slider(key=f"learn_weights_w{angle}").value for angle in (0, 90, 180, 270)] != [0.0] * 4:
        problems.append("the weight sliders are not drawn at 0")
    assert not problems, problems


def test_marks_sent_to_the_lesson_s_menu_are_named_as_the_menu_s(app_env):
    app = open_page({}, page=LEARN)
    marks = [f"evil{n}" for n in range(5000)]
    outcome, app = page_outcome(lambda: sent(app, "learn_weights_marks", "string_array_value", marks))
    problems = verdict(Case("5,000 marks", marks, names=("“Points like the query” held 5,000 values",)), outcome)
    if any("The link's marks" in text for text in outcome.said):
        problems.append(f"named as the link's: {outcome.said}")
    if app.session_state["learn_weights_marks"] != []:
        problems.append(f"the marks became {app.session_state['learn_weights_marks'][:5]}")
    linked, _ = page_outcome(lambda: open_page({"toy_marks": ["evil"]}, page=LEARN))
    if not any("The link's marks" in text for text in linked.said):
        problems.append(f"a link's marks are not named as the link's: {linked.said}")
    assert not problems, problems


# -- a link with thousands of values (issue 52): past Streamlit's own bound, named like a bad value ----
@pytest.mark.parametrize("page, params, names", [
    (COMPARE, {"rows": [f"#{n}" for n in range(5000)]}, ("rows: 5,000 values, but this page takes at most 12",)),
    (LEARN, {"toy_marks": [f"{n}°" for n in range(3000)]}, ("toy_marks: 3,000 values",)),
    (None, {"p": ["0.7"] * 2000}, ("the link holds 2,000 values",)),  # short, yet past 1,000 values
], ids=["5,000 rows", "3,000 marks", "2,000 values of p"])
def test_a_link_with_thousands_of_values_is_named(app_env, page, params, names):
    """Streamlit drops a query string of over 1,000 values before the page runs; the app's wrapper of
    that check (set up by a server's first run, here the first page opened) leaves a word in its place."""
    open_page({})
    outcome, app = page_outcome(lambda: open_page(params, page=page))
    problems = verdict(Case("thousands of values", params, names=names), outcome)
    if app.session_state.get("p") not in (None, 0.5):
        problems.append(f"p is {app.session_state['p']}: the link was read")
    assert not problems, problems


# -- photo-notice inputs: the uploaded bytes the query and the notice see ----------------------------
def upright_picture() -> np.ndarray:
    """40 x 24 pixels, red in the top-left corner and blue in the bottom-right one: any rotation shows."""
    pixels = np.full((24, 40, 3), 255, np.uint8)
    pixels[:8, :12] = (255, 0, 0)
    pixels[-8:, -12:] = (0, 0, 255)
    return pixels


def same_picture(expected: np.ndarray, tolerance: float = 8.0) -> Callable[[Any], list[str]]:
    """The query and the notice saw ``expected``: the mean absolute difference of their pixels at most
    ``tolerance`` (JPEG's own blur; a turned or miscoloured picture is far off)."""
    def check(images) -> list[str]:
        problems = []
        for where, image in zip(("the query", "the notice"), images):
            seen = np.asarray(image)
            if seen.shape != expected.shape or np.abs(seen.astype(int) - expected).mean() > tolerance:
                problems.append(f"{where} saw a {seen.shape} picture unlike the upright one")
        return problems
    return check


def photo_cases() -> list[Case]:
    rng = np.random.default_rng(0)
    frames = [Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)) for _ in range(3)]
    upright = upright_picture()
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90° clockwise to view": stored turned a quarter anticlockwise
    gray16 = (np.arange(24 * 40).reshape(24, 40) * 60).astype(np.uint16)
    cmyk = Image.fromarray(upright).convert("CMYK")
    return [
        Case("1 x 1", encoded(Image.new("RGB", (1, 1), (200, 10, 10)), format="PNG"), refused=False,
             check=same_picture(np.array([[[200, 10, 10]]], np.uint8), tolerance=0)),
        Case("a decompression bomb", encoded(Image.new("1", (20_000, 20_000)), format="PNG"), names=("evil.png",)),
        Case("an animated GIF", encoded(frames[0], format="GIF", save_all=True, append_images=frames[1:]),
             names=("evil.png",)),
        Case("an animated PNG", encoded(frames[0], format="PNG", save_all=True, append_images=frames[1:]),
             refused=False, check=same_picture(np.asarray(frames[0]), tolerance=0)),
        Case("a CMYK JPEG", encoded(cmyk, format="JPEG", quality=95), refused=False,
             check=same_picture(np.asarray(cmyk.convert("RGB")))),
        Case("a 16-bit PNG", encoded(Image.fromarray(gray16), format="PNG"), refused=False,
             check=same_picture(np.repeat((gray16 / 257).round().astype(np.uint8)[..., None], 3, axis=2), tolerance=1)),
        Case("an EXIF-rotated JPEG", encoded(Image.fromarray(np.rot90(upright, 1).copy()), format="JPEG",
                                              exif=exif.tobytes(), quality=95), refused=False,
             check=same_picture(upright)),
        Case("cut off", encoded(Image.fromarray(upright), format="JPEG")[:300], names=("evil.png",)),
        Case("over the byte cap", b"\x89PNG" + bytes(MAX_BYTES), names=("evil.png",)),
        Case("a 1 x 1,000,000 strip", encoded(Image.new("L", (1, 1_000_000)), format="PNG"), names=("evil.png",)),
    ]


@pytest.mark.parametrize("case", photo_cases(), ids=str)
def test_photo_notice_inputs(case, monkeypatch):
    """An upload goes to the query (``query_image_from_upload``) and to the photo notice, which must
    see the same upright picture."""
    from anchordiv.app import photo_notice
    from anchordiv.encoders import load_encoder
    from anchordiv.explorer import query_image_from_upload

    encoder = load_encoder("builtin", device="cpu")
    noticed = []
    real = photo_notice.images_outside_world
    monkeypatch.setattr(photo_notice, "images_outside_world",
                        lambda model, images: noticed.extend(images) or real(model, images))
    name = "evil.png"  # the upload's name, as the uploader gives it

    def upload():
        query = query_image_from_upload(case.value, name)
        photo_notice.upload_outside_world.__wrapped__(encoder, case.value, name)  # the notice, uncached
        return [query, *noticed]

    outcome = call(upload)
    problems = verdict(case, outcome)
    if not case.refused and not outcome.crash and len(outcome.result) != 2:
        problems.append("the notice did not look at the upload")
    assert not problems, problems


# -- the corpus's size -------------------------------------------------------------------------------
def test_the_corpus_covers_every_kind(tmp_path, outside):
    sizes = {"model names and tags": len(model_cases(outside)), "downloads": len(DOWNLOADS),
             "prompt templates": len(TEMPLATES) + 1,
             "vocabularies and set files": len(SET_FILES) + len(VOCABULARY_NAMES) + len(TYPED_VOCABULARIES),
             "weighted sets": len(WEIGHTED), "marks": len(LINK_MARKS) + len(PLAYER_MARKS) + 3,
             "photo-notice inputs": len(photo_cases()),
             "forged widget values": len(FORGED_ONE) * len(ONE_VALUE) + 2 * len(FORGED_LISTS) + 2 * len(FORGED_SPECS)
             + len(FORGED_ONE) + len(FORGED_LISTS),
             "forged options, numbers, texts and flags": len(FORGED_CHOICE) * len(OPTION_WIDGETS) + 3
             + len(FORGED_TEXT) * len(TEXT_WIDGETS) + len(FORCED_STATE) + 4 + 3}  # + the weight lesson's
    assert all(size >= 5 for size in sizes.values()), sizes
    assert len(vocabulary_cases(tmp_path, outside)) == len(VOCABULARY_NAMES)


# -- a model the server may not fetch, in the page's words -------------------------------------------
def test_a_model_that_needs_a_download_is_refused_in_the_page_s_words(app_env, tmp_path, monkeypatch):
    """On a server that downloads nothing: a link's pretrained tag whose weights are absent, and an
    architecture whose load fetches a tokenizer (a SigLIP checkpoint file). Each refusal says what
    to do on the page (another model) or to ask of whoever runs the server, never the library's
    advice to its callers (``allow_download=True``)."""
    monkeypatch.delenv("ANCHORDIV_ALLOW_DOWNLOAD", raising=False)
    monkeypatch.setenv("ANCHORDIV_ALLOW_ANY_PATH", "1")  # the checkpoint file is typed
    checkpoint = tmp_path / "siglip.pt"
    checkpoint.write_bytes(b"never read: the tokenizer is refused first")
    cases = [(Case("a tag whose weights are absent", None, names=("laion2b_s34b_b79k",)),
              lambda: open_page({"encoder": "open_clip:ViT-B-32", "pretrained": "laion2b_s34b_b79k"})),
             (Case("an architecture that fetches its tokenizer", None, names=("ViT-B-16-SigLIP",)),
              lambda: open_page({}, state={"encoder_kind": CHECKPOINT, "openclip_arch": "ViT-B-16-SigLIP",
                                           "openclip_checkpoint": str(checkpoint)}))]
    problems = []
    for case, run in cases:
        outcome, _ = page_outcome(run)
        said = " ".join(outcome.said)
        problems += [f"{case}: {problem}" for problem in verdict(case, outcome)]
        if "allow_download=True" in said or "anchordiv demo --allow-download" not in said or \
                "Choose another model under Model in the sidebar" not in said:
            problems.append(f"{case}: not in the page's words: {said}")
    assert not problems, problems


# -- the 80-template ensemble over a whole anchor set ------------------------------------------------
def test_an_ensemble_too_long_to_encode_is_refused_at_once_and_a_cached_one_is_read(app_env, library, monkeypatch):
    """A link asking for the 80 ImageNet templates over every gallery name, on a server slower than
    the bound allows (the bound shrunk, so the gallery's few names stand for the world's 1,644): a
    refusal within seconds saying how many texts and what to choose, not a spinner past the minute.
    The same encode, once in the text cache, is read, never refused."""
    from anchordiv import prompts

    monkeypatch.setattr(prompts, "ENCODE_SECONDS", 0.05)
    case = Case("templates_a=imagenet80 over every gallery name", None, names=("80 templates",))
    outcome, _ = page_outcome(lambda: open_page({"templates_a": "imagenet80"}))
    problems = verdict(case, outcome)
    if not any("choose fewer anchors" in text for text in outcome.said):
        problems.append(f"no count of anchors that fit: {outcome.said}")
    names = list(library["presets"]["Gallery object names"][:4])
    eighty = prompts.TemplateChoice(prompts.IMAGENET80)
    encoded = prompts.encode_anchors(library["encoder"], names, eighty, max_seconds=float("inf"))
    read = call(lambda: prompts.encode_anchors(library["encoder"], names, eighty))
    if read.crash or read.said or not np.array_equal(read.result.numpy(), encoded.numpy()):
        problems.append(f"the cached encode was not read: {read.said or read.crash}")
    assert not problems, problems


# -- a client value that is not JSON -----------------------------------------------------------------
def test_a_player_value_that_is_not_json_breaks_only_the_session_that_sent_it(app_env):
    """Streamlit parses a component's JSON state before the page's script runs, where no app code
    can catch it (docs/design.md §13, "Client values that are not JSON"): the forging session gets
    Streamlit's error box; every other session, and the server, go on. Should Streamlit come to
    refuse such a value itself, this test says so, and design.md's paragraph is to be revised."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    from player import player_element

    forger, other = open_page({}), open_page({})
    states = forger._tree.get_widget_states()
    states.widgets.append(WidgetState(id=player_element(forger).proto.id, json_value="not json {"))
    forger._run(states)
    assert forger.exception and "Expecting value" in forger.exception[0].message
    other.run()
    assert not other.exception and player_element(other)
