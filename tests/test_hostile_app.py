"""Hostile links and names against every page of the explorer (streamlit.testing's AppTest).

A shared demo is opened by strangers' links. Each case opens a page with one kind of hostile text
in every place a link can put text (parameter names, rejected values, a text query, anchors, rows,
columns, the toy world's angles) and checks what came back: no exception, and nothing in any
element that Streamlit renders as Markdown (alerts, captions, image captions, static tables,
expander and tab labels) or in any Plotly chart that would draw as markup (:mod:`markup` judges
that as the renderers do). The text must still be there, as text: a case whose text never
appears proves nothing. The browser test checks a few of these in real Chromium.

Then each limit: a link or input past it is a message that states the limit, and nothing from it
is computed.
"""
from __future__ import annotations

import json
import os

import pytest

from anchordiv.explorer import limits
from app_pages import PAGES, open_page
from helpers import needs_builtin
from hostile_judge import markdown_bodies
from markup import active_markup, plain

streamlit_testing = pytest.importorskip("streamlit.testing.v1")
AppTest = streamlit_testing.AppTest

# The Explore page's lazy expanders open, so that what they show is judged too.
EXPANDERS_OPEN = dict.fromkeys(("explain_open", "neighbour_table_open", "find_open", "sweep_open", "umap_open"), True)

pytestmark = needs_builtin

COMPARE_COLUMNS = ["cosine", "iti", "A", "B", "mix p=0.2", "mix p=0.4", "mix p=0.6", "mix p=0.8"]
# Each holds the word "evil", so that a page that echoes it can be found.
HOSTILE = {
    "markdown link": "[click me](https://evil.example/phish)",
    "markdown image": "![t](https://evil.example/t.png)",
    "bare links": "see https://evil.example/x or www.evil.example",
    "e-mail": "write to me@evil.example",
    "html": '<img src="https://evil.example/i.png"><a href="https://evil.example">evil</a>',
    "math": r"$\frac{1}{0$ costs $5 evil",
    "directives": ":red[evil] :material/home: :smile:",
    "backslashes": r"\[evil\](https://evil.example) \\ \$",
    "right-to-left": "\u202eevil.exe\u202c gnp",
    "zero-width": "evil e\u200bvil\u200d\ufeff",
    "blocks": "# evil heading\n- item\n> quote\n    code",
    "emphasis": "**evil** _it_ ~~gone~~ `code`",
    "long": ("[evil](https://evil.example) " * 40)[:1000],
}


def hostile_link(page: str, text: str) -> dict:
    """A link to ``page`` with ``text`` wherever that page's link may carry text."""
    one_line = " ".join(text.split())
    common = {text: "1", "p": text, "model": text}
    if page == "explore":
        return common | {"mode": "text", "text": one_line, "anchors_b": f"{text}\nwatercolor painting"}
    if page == "compare":
        return common | {"rows": [text, f"text:{one_line}", "#3"], "columns": [text, "A"],
                         "anchors_a": f"{text}\ncat"}
    if page == "learn":
        return common | {"toy_a": text, "toy_b3": text, "anchors_a": f"{text}\ncat", "toy_world": "sphere"}
    return common


def open_link(page: str, params: dict) -> AppTest:
    """``page`` opened by a link of ``params``, with :data:`EXPANDERS_OPEN`."""
    return open_page(params, PAGES[page], EXPANDERS_OPEN)


def plotly_texts(app: AppTest) -> list[str]:
    return [element.proto.spec for element in app.get("plotly_chart")]


def check_page(app: AppTest, page: str) -> list[str]:
    """The problems of ``app``: an exception, markup in a Markdown element or a chart."""
    problems = [f"exception: {exception.message}" for exception in app.exception]
    for where, body in markdown_bodies(app):
        if page == "report" and where in ("markdown", "tab", "expander"):
            continue  # the shipped report's own Markdown, written by us
        problems += [f"{where}: {found}" for found in active_markup(body)]
    for spec in plotly_texts(app):
        lowered = json.loads(spec)
        text = json.dumps(lowered).lower()
        problems += [f"plotly: {tag}" for tag in ("<a ", "<img", "<b>") if tag in text]
    return problems


def echoed(app: AppTest) -> bool:
    return any("evil" in plain(body) for _, body in markdown_bodies(app)) or \
        any("evil" in spec for spec in plotly_texts(app))


@pytest.mark.parametrize("page", ["explore", "compare", "learn"])
@pytest.mark.parametrize("kind", HOSTILE)
def test_a_hostile_link_is_shown_as_text(app_env, page, kind):
    app = open_link(page, hostile_link(page, HOSTILE[kind]))
    assert not check_page(app, page), check_page(app, page)
    assert echoed(app), f"the {page} page never showed the link's text, so this case checks nothing"


def test_the_report_page_names_a_hostile_link(app_env):
    """The report has no settings: it says so of any link to it, the link's text shown literally."""
    app = open_link("report", hostile_link("report", HOSTILE["markdown link"]))
    assert not check_page(app, "report") and app.tabs
    (warning,) = [plain(str(element.value)) for element in app.warning]
    assert warning.startswith("The report page has no settings") and "[click me](https://evil.example/phish)" in warning


# -- limits -------------------------------------------------------------------------------------------
def said(app: AppTest) -> str:
    return " ".join(plain(str(element.value)) for kind in ("warning", "error", "info")
                    for element in getattr(app, kind))


def test_a_link_past_its_length_is_refused_whole(app_env):
    app = open_link("explore", {"p": "0.8", "anchors_b": "x" * (limits.LINK_CHARS + 10)})
    assert f"at most {limits.LINK_CHARS:,}" in said(app) and app.session_state["p"] == 0.5
    assert not app.exception


@pytest.mark.parametrize("params, limit_text", [
    ({"mode": "text", "text": "a" * (limits.TEXT_CHARS + 1)}, f"at most {limits.TEXT_CHARS:,}"),
    ({"k": "51"}, "outside 1–50"),
])
def test_explore_link_values_past_a_limit_keep_the_default(app_env, params, limit_text):
    app = open_link("explore", params)
    assert limit_text in said(app) and not app.exception


@pytest.mark.parametrize("params, limit_text", [
    ({"rows": [f"random:{seed}" for seed in range(300)]}, "at most 12"),  # the 300 rows
    ({"columns": [f"mix p=0.{i:02d}" for i in range(1, 100)]}, "at most 8"),
    ({"rows": [f"random:{seed}" for seed in range(12)], "columns": COMPARE_COLUMNS, "cell_k": "20"},
     "at most 500 neighbours in all (this one asks for 12 rows x 8 columns x top-20 = 1,920)"),
    ({"columns": ["A", "A s=20", "A s=30", "B model=gaussian", "mix p=0.5 model=gmm"]}, "at most 4 anchor geometries"),
])
def test_a_compare_link_past_a_limit_draws_nothing_it_asks_for(app_env, params, limit_text):
    app = open_link("compare", params)
    assert limit_text in said(app) and not app.exception
    figure = [image for image in app.get("imgs") if len(image.proto.imgs) == 1 and not image.proto.imgs[0].caption]
    assert not figure or len(app.session_state["compare_rows"]) <= 2, "the figure the link asked for was drawn"


@pytest.mark.parametrize("angles, limit_text", [
    (", ".join(str(angle * 4) for angle in range(90)), "at most 72 per set"),  # 90 angles, a short link
    (", ".join(str(angle) for angle in range(5000)), f"at most {limits.LINK_CHARS:,}"),  # the 5,000
])
def test_learn_angles_past_the_limit_are_a_message(app_env, angles, limit_text):
    app = open_link("learn", {"toy_a": angles})
    assert limit_text in said(app) and not app.exception


def test_a_folder_whose_name_is_not_utf8_is_offered_with_a_replacement_character(app_env, tmp_path, monkeypatch):
    from drawings import DRAWINGS, distinct_drawings

    root = tmp_path / "data"
    odd = os.fsencode(root) + b"/caf\xe9"
    os.makedirs(odd)
    # Images that differ, so p calibrates on any machine: this test is about the folder's name.
    for number, image in enumerate(distinct_drawings()):
        image.save(os.fsdecode(odd + b"/%d.png" % number))
    monkeypatch.setenv("ANCHORDIV_DATA_ROOTS", str(root))
    app = open_page()
    app.radio(key="gallery_kind").set_value("folder").run()
    menu = app.selectbox(key="folder_choice")
    assert any(option.endswith("caf\ufffd") for option in menu.options), menu.options
    assert not app.exception
    # Chosen, it opens: Streamlit's cache used to fail to hash its name ("surrogates not allowed").
    menu.set_value(next(option for option in menu.options if "caf" in option)).run()
    assert not app.exception and not app.error, [error.value for error in app.error]
    assert f"{DRAWINGS} images" in " ".join(caption.value for caption in app.caption), [c.value for c in app.caption]


@pytest.mark.parametrize("text, expected", [
    ("caf\udce9", "caf\ufffd"),  # a file name that was not UTF-8, as Python keeps it
    ("a\ud800b", "a\ufffdb"),  # a lone surrogate of any other kind
    ("a\nb\u2028c\td", "a b c d"),
    ("\u202eevil", "⟨U+202E⟩evil"),
])
def test_shown_makes_any_text_one_line_of_visible_characters(text, expected):
    from anchordiv.explorer.literal import markdown_literal, shown

    assert shown(text) == expected
    markdown_literal(text).encode("utf-8")  # always encodable, so Streamlit can send it


# -- the weight lesson at its edges ----------------------------------------------------------------------
def lesson_points() -> list[str]:
    """The weight lesson's points as its list of marks names them: "0°" to "345°"."""
    from anchordiv import lesson_weights

    return [f"{angle:g}°" for angle in lesson_weights.toy_points()]


def learned_chart_drawn(app: AppTest) -> bool:
    return any(element.proto.id.endswith("learn_weights_chart_learned") for element in app.get("plotly_chart"))


# Which of the 24 points are marked (the query is at 45°, the fourth point), and what the page says.
@pytest.mark.parametrize("pick, told", [
    (lambda points: [], "No point is marked yet: choose two or three points in *Points like the query* above"),
    (lambda points: ["60°"], None),
    (lambda points: points, "These 24 marks share no one direction with the query"),
    (lambda points: points[:-1], "These 23 marks share no one direction with the query"),
    (lambda points: points[:3] + points[4:], "These 23 marks share no one direction with the query"),
], ids=["none", "one", "all", "all but one", "all but the query's"])
def test_the_weight_lesson_learns_from_one_mark_to_all_or_says_what_to_mark(app_env, pick, told):
    marks = pick(lesson_points())
    app = open_link("learn", {})
    assert app.slider(key="learn_weights_query").value == 45
    app.multiselect(key="learn_weights_marks").set_value(marks).run()
    app.button(key="learn_weights_learn").click().run()
    assert not app.exception and not app.error, [error.value for error in app.error]
    assert learned_chart_drawn(app) == bool(marks)
    if told:
        assert told in said(app), said(app)
    else:
        assert "no one direction" not in said(app), said(app)


def test_a_lesson_link_that_marks_a_point_twice_learns_from_it_once(app_env):
    app = open_link("learn", {"toy_marks": ["30°", "60°", "30°", "60°", "60°"]})
    assert "counts once" in said(app) and app.multiselect(key="learn_weights_marks").value == ["30°", "60°"]
    app.button(key="learn_weights_learn").click().run()
    assert not app.exception and not app.error and learned_chart_drawn(app), said(app)
