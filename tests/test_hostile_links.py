"""Hostile links to every page (streamlit.testing's AppTest): a setting given more than once, another
page's settings, and links to the report, which has no settings.

A link is read once per session and part of a page (app/url_state.py); what it holds that the page
does not use is named in one warning. Here: a parameter of one value given several times is read
from its last value and every other value is named, an invalid one too, on every page; a parameter
that only another page reads is named with that page; the report names everything a link to it
holds, in its own words, and still draws. :mod:`hostile_judge` judges each page as the hostile
corpus does (no exception, no live markup, a refusal names the input and says what to do).
"""
from __future__ import annotations

from urllib.parse import parse_qs

import pytest

from anchordiv.explorer import limits, links
from anchordiv.explorer.literal import SHOWN_CHARS
from app_pages import PAGES, open_page
from helpers import needs_builtin
from hostile_judge import judge, page_outcome, page_said
from markup import plain

streamlit_testing = pytest.importorskip("streamlit.testing.v1")
AppTest = streamlit_testing.AppTest

pytestmark = needs_builtin


def opened(page: str, params: dict, names: tuple[str, ...]) -> tuple[AppTest, str]:
    """``page`` opened by ``params``, judged as a refusal naming ``names``; the app and its one warning."""
    outcome, app = page_outcome(lambda: open_page(params, PAGES[page]))
    assert not judge(outcome, refused=True, names=names), judge(outcome, refused=True, names=names)
    (warning,) = warnings(app)  # one warning for the whole link
    return app, warning


def warnings(app: AppTest) -> list[str]:
    return [plain(str(element.value)) for element in app.warning]


# -- a parameter of one value, given more than once -------------------------------------------------------
@pytest.mark.parametrize("page, params, read, said", [
    ("explore", {"k": ["3", "20"], "p": ["0.2", "0.9"], "query": ["5", "6"]},
     {"top_k": 20, "p": 0.9, "query_id": 6},
     ["k: given 2 times, and only the last, '20', is read: '3' is ignored",
      "p: given 2 times, and only the last, '0.9', is read: '0.2' is ignored",
      "query: given 2 times, and only the last, '6', is read: '5' is ignored"]),
    # An invalid value left unread is named: it used to vanish without a word.
    ("explore", {"k": ["abc", "3"]}, {"top_k": 3},
     ["k: given 2 times, and only the last, '3', is read: 'abc' is ignored"]),
    # The last value is the one read, even when it is refused: the setting keeps its default.
    ("explore", {"k": ["3", "abc"]}, {"top_k": 10}, ["'3' is ignored, and 'abc' is not a number"]),
    ("compare", {"cell_k": ["3", "4"]}, {"compare_k": 4},
     ["cell_k: given 2 times, and only the last, '4', is read: '3' is ignored"]),
    ("learn", {"toy_query": ["10", "20"]}, {"learn_query": 20},
     ["toy_query: given 2 times, and only the last, '20', is read: '10' is ignored"]),
    ("learn", {"toy_world": ["sphere", "circle", "nope"], "toy_wk": ["3", "3"]}, {"learn_weights_k": 3},
     ["toy_world: given 3 times, and only the last, 'nope', is read: 'sphere', 'circle' are ignored, "
      "and 'nope' is not one of",
      "toy_wk: given 2 times, and only the last, '3', is read: '3' is ignored"]),
])
def test_a_repeated_setting_reads_the_last_value_and_names_the_others(app_env, page, params, read, said):
    app, warning = opened(page, params, names=tuple(params))
    for key, value in read.items():
        assert app.session_state[key] == value, key
    for sentence in said:
        assert sentence in warning, warning


def test_a_repeated_gallery_token_is_named(app_env):
    app, warning = opened("explore", {"gallery": ["0000000000", "1111111111"], "query": "5"}, names=("gallery",))
    assert "gallery: given 2 times, and only the last, '1111111111', is read: '0000000000' is ignored" in warning
    assert "another gallery" in warning and app.session_state["query_id"] != 5


def test_a_list_repeats_its_parameter_without_a_word(app_env):
    app = open_page({"rows": ["#1", "#2"], "columns": ["cosine", "A"]}, PAGES["compare"])
    assert not app.exception and not app.warning, page_said(app)
    assert app.session_state["compare_rows"] == ["#1", "#2"]


# -- another page's settings ------------------------------------------------------------------------------
@pytest.mark.parametrize("page, params, said", [
    ("learn", {"rows": "#1", "cell_k": "3", "zzz": "1"},
     ["“rows”, “cell_k” are settings of the Compare page: ignored here", "unknown parameter “zzz”"]),
    ("explore", {"toy_query": "10", "columns": "A"},
     ["“toy_query” is a setting of the Learn page: ignored here",
      "“columns” is a setting of the Compare page: ignored here"]),
    ("compare", {"toy_a": "1", "nonsense": "x"},
     ["“toy_a” is a setting of the Learn page: ignored here", "unknown parameter “nonsense”"]),
])
def test_another_pages_settings_are_named_with_that_page(app_env, page, params, said):
    app, warning = opened(page, params, names=tuple(params))
    for sentence in said:
        assert sentence in warning, warning


def test_the_pages_own_link_is_not_named(app_env):
    """Each part of a page reads its own parameters and no part names another's: a link the Compare
    page wrote (sidebar, view and figure) opens on Compare without a word."""
    app = open_page({"k": "5", "p": "0.3", "rows": ["#2"], "cell_k": "4", "anchor_model": "gaussian"}, PAGES["compare"])
    assert not app.exception and not app.warning, page_said(app)
    assert app.session_state["compare_k"] == 4 and app.session_state["p"] == 0.3


def test_the_learn_page_reads_the_views_part_of_its_link(app_env):
    """The Learn page writes its link before its gallery part reads the view's query, anchors and p:
    those wait in the URL until it has, so they are used (they were dropped without a word), and a
    bad one is named there."""
    app = open_page({"p": "0.3", "query": "5", "weighting": "literal", "toy_query": "20"}, PAGES["learn"])
    assert not app.exception and not app.warning, page_said(app)
    state = app.session_state
    assert (state["p"], state["query_id"], state["weighting"]) == (0.3, 5, "literal")
    assert app.session_state["learn_query"] == 20 and app.query_params["p"] == "0.3"
    app = open_page({"p": ["0.2", "7"]}, PAGES["learn"])
    assert not app.exception and app.session_state["p"] == 0.5
    assert any("p: given 2 times, and only the last, '7', is read: '0.2' is ignored, and '7' is outside 0–1" in said
               for said in warnings(app)), page_said(app)


# -- the report: no settings, so everything a link holds is named -----------------------------------------
REPORT_WORDS = "The report page has no settings, so this link is not used"


@pytest.mark.parametrize("params, said", [
    ({"k": "3", "foo": "bar", "p": "0.3"},
     ["“k”, “p” are settings of the Explore, Compare and Learn pages: ignored here", "unknown parameter “foo”"]),
    # What the server puts in place of a link of 1,200 values, which Streamlit drops unread
    # (app/unread_links.py).
    (parse_qs(links.unread_link("&".join(["k=3"] * 1200), 512 * 1024)),
     ["all of it: the link holds 1,200 values, and this server reads links of at most 1,000 values"]),
    ({"text": "y" * 20_000}, [f"the link is 20,005 characters long, and this server takes links of at most "
                              f"{limits.LINK_CHARS:,}"]),
    ({"rows": "#1", "toy_a": "0, 90"}, ["“rows” is a setting of the Compare page: ignored here",
                                        "“toy_a” is a setting of the Learn page: ignored here"]),
], ids=["settings and an unknown one", "1,200 values", "20,000 characters", "other pages' settings"])
def test_the_report_names_what_a_link_to_it_holds(app_env, params, said):
    app, warning = opened("report", params, names=("all of it",) if len(params) == 1 else tuple(params))
    assert warning.startswith(REPORT_WORDS)
    assert "choose the settings on the Explore, Compare or Learn page" in warning
    for sentence in said:
        assert sentence in warning, warning
    assert app.tabs and app.title, "the report was not drawn"
    app.run()  # said once per session, not on every run
    assert not app.warning and app.tabs


def test_a_hostile_link_to_the_report_is_named_literally_and_shortened(app_env):
    """The hostile corpus's link to the report (tests/test_hostile_app.py): its text as a parameter's
    name, shown as text, cut to the length a note shows; the report drawn as always."""
    text = ("[evil](https://evil.example) " * 40)[:1000]
    outcome, app = page_outcome(lambda: open_page({text: "1", "p": text, "model": text}, PAGES["report"]))
    assert not judge(outcome, refused=True, names=("evil",)), judge(outcome, refused=True, names=("evil",))
    (warning,) = warnings(app)
    assert warning.startswith(REPORT_WORDS)
    assert "“p”, “model” are settings of the Explore, Compare and Learn pages: ignored here" in warning
    assert f"unknown parameter “{text[:150]}" in warning and "characters left out" in warning
    assert len(warning) < 2 * SHOWN_CHARS + len(REPORT_WORDS) + 200
    assert app.tabs and not app.exception


def test_a_session_that_opens_the_report_bare_is_told_nothing(app_env):
    app = open_page({}, PAGES["report"])
    assert not app.warning and not app.exception and app.tabs
