"""Shareable views (anchordiv.explorer.links): state to URL parameters and back, bad links, long texts."""
from __future__ import annotations

import re
from urllib.parse import quote

import pytest

from anchordiv.explorer import links
from anchordiv.explorer.settings import PAGES, REVERSE, TEXT_QUERY, UPLOAD_QUERY
PRESETS = {"objects": ("cat", "dog"), "styles": ("sketch", "photo"), "long": tuple(f"object {i}" for i in range(400))}


@pytest.fixture
def texts(tmp_path):
    return links.LinkedTexts(tmp_path / "linked")


def fields(texts, preset_now=("objects", "styles")):
    return links.sidebar_fields(texts) + links.view_fields(50, 7, PRESETS, preset_now, texts)


def defaults(texts) -> dict:
    return {item.key: item.default for item in fields(texts)}


def test_defaults_make_an_empty_link(texts):
    assert links.write_link(defaults(texts), fields(texts)) == {}


def test_a_view_round_trips(texts):
    state = defaults(texts) | {"p": 0.35, "anchor_model": "gaussian", "scale": 22.0, "top_k": 5, "direction": REVERSE,
                               "query_id": 49, "weighting": "literal", "show_iti": True, "preset_b": "long",
                               "anchors_a": "a cat\na dog in a hat", "query_mode": TEXT_QUERY, "query_text": "a red fox"}
    written_with = fields(texts, ("objects", "long"))
    params = links.write_link(state, written_with)
    assert params["p"] == "0.35" and params["direction"] == "reverse" and params["anchor_model"] == "gaussian"
    assert params["mode"] == "text"
    read = links.read_link(params, fields(texts))
    assert read.ignored == []
    assert read.values == {item.key: state[item.key] for item in written_with if state[item.key] != item.default}


def test_an_anchor_set_equal_to_its_preset_is_left_out(texts):
    state = defaults(texts) | {"preset_b": "long", "anchors_b": "\n".join(PRESETS["long"])}
    params = links.write_link(state, fields(texts, ("objects", "long")))
    assert params == {"preset_b": "long"}


def test_long_anchor_lists_travel_as_a_hash(texts, tmp_path):
    long_text = "\n".join(f"a hand-typed anchor number {i}" for i in range(200))
    assert len(quote(long_text)) > links.MAX_URL_TEXT
    params = links.write_link(defaults(texts) | {"anchors_a": long_text}, fields(texts))
    token = params["anchors_a"]
    assert token.startswith("@") and len(token) == 1 + links.HASH_LENGTH
    assert links.read_link(params, fields(texts)).values["anchors_a"] == long_text
    # another server: the text is not there, and the link says so instead of opening on nothing
    elsewhere = links.LinkedTexts(tmp_path / "elsewhere")
    read = links.read_link(params, fields(elsewhere))
    assert "anchors_a" not in read.values
    assert read.ignored and "not on this one" in read.ignored[0]


def test_a_damaged_stored_text_is_not_used(texts):
    token = texts.put("x" * 3000)
    path = texts.directory / f"{token[1:]}.txt"
    path.write_text("tampered")
    assert texts.get(token) is None
    assert texts.put("x" * 3000) == token and texts.get(token) == "x" * 3000  # written again
    assert texts.get("@../../etc/passwd") is None


@pytest.mark.parametrize("params, reason", [
    ({"p": "1.5"}, "outside"), ({"p": "nan"}, "outside"), ({"p": "half"}, "not a number"),
    ({"k": "2.5"}, "whole number"), ({"k": "0"}, "outside"), ({"query": "50"}, "outside"),
    ({"anchor_model": "transformer"}, "not one of"), ({"model": "transformer"}, "not one of"),
    ({"weighting": ""}, "not one of"), ({"iti": "yes"}, "0 or 1"),
    ({"colour": "red"}, "unknown parameter"), ({"preset_a": "nope"}, "not one of"),
])
def test_bad_values_are_ignored_and_named(texts, params, reason):
    read = links.read_link(params, fields(texts))
    assert read.values == {}
    assert len(read.ignored) == 1 and reason in read.ignored[0] and next(iter(params)) in read.ignored[0]


def test_other_pages_parameters_are_not_unknown(texts):
    read = links.read_link({"rows": ["#1", "#2"], "p": "0.2"}, fields(texts), known=links.param_parts())
    assert read.values == {"p": 0.2} and read.ignored == []


def test_every_explorer_parameter_is_known(texts):
    assert {item.param for item in fields(texts)} <= set(links.param_parts())


def test_a_parameters_old_name_is_read_and_the_link_is_written_with_the_new_one(texts):
    """Links made before a setting's parameter was renamed (model= for the anchor model,
    components= for the GMM's) open as they did; the page writes them back with today's names."""
    read = links.read_link({"model": "gmm", "components": "3", "k": "7"}, fields(texts))
    assert read.ignored == [] and read.values == {"anchor_model": "gmm", "n_components": 3, "top_k": 7}
    assert links.write_link(defaults(texts) | read.values, fields(texts)) == {
        "anchor_model": "gmm", "n_components": "3", "k": "7"}
    assert {"model", "components"} <= set(links.param_parts())  # another page's link names neither as unknown


def test_an_uploaded_query_is_not_written(texts):
    params = links.write_link(defaults(texts) | {"query_mode": UPLOAD_QUERY}, fields(texts))
    assert "mode" not in params


def test_gallery_token_names_the_content():
    assert links.gallery_token("world:a") == links.gallery_token("world:a") != links.gallery_token("world:b")


def test_compare_rows_and_columns_travel_but_uploads_do_not():
    fields = links.compare_fields(["#1", "random:1"])
    state = {"compare_rows": ["#4", "upload:cat.png", "text:a dog"], "compare_columns": ["mix p=0.3 model=gaussian"],
             "compare_k": 5, "compare_weighting": "literal"}
    params = links.write_link(state, fields)
    assert params == {"rows": ["#4", "text:a dog"], "columns": ["mix p=0.3 model=gaussian"], "mix_weighting": "literal"}
    assert links.read_link(params, fields).values == {"compare_rows": ["#4", "text:a dog"],
                                                      "compare_columns": ["mix p=0.3 model=gaussian"],
                                                      "compare_weighting": "literal"}
    assert {item.param for item in fields} <= set(links.param_parts())


# -- a parameter of one value given more than once: the last is read, every other is named -----------------
def every_field(texts) -> list[links.LinkField]:
    """The link fields of every page: the sidebar's, the view's, the Compare figure's and the lesson's."""
    return fields(texts) + links.compare_fields(["#1"]) + links.lesson_fields()


def test_every_field_of_one_value_read_twice_names_the_value_left_unread(texts):
    single = [item for item in every_field(texts) if item.kind != "list"]
    assert {item.kind for item in single} == {"number", "integer", "choice", "flag", "text"}
    for item in single:
        written = item.write(item.default)
        if written is None:  # a choice no link can carry
            continue
        other = next((word for word in item.choices if word != written), "0" if item.kind == "flag" else written)
        read = links.read_link({item.param: [other, written]}, [item])
        assert read.values == {item.key: item.default}, item.param
        assert read.ignored == [f"{item.param}: given 2 times, and only the last, {written!r}, is read: "
                                f"{other!r} is ignored"], item.param


@pytest.mark.parametrize("raw, value, said", [
    (["3", "20"], 20, ["given 2 times", "'20', is read", "'3' is ignored"]),
    (["abc", "3"], 3, ["'abc' is ignored"]),  # an invalid value left unread is named too
    (["3", "abc"], None, ["'3' is ignored", "'abc' is not a number"]),  # the last is read, and refused
    (["3", "4", "5", "6", "7", "20"], 20, ["given 6 times", "'3', '4', '5' and 2 more are ignored"]),
])
def test_a_repeated_k_reads_the_last_value_and_names_the_others(texts, raw, value, said):
    read = links.read_link({"k": raw, "p": ["0.2", "0.9"]}, fields(texts))
    assert read.values.get("top_k") == value and read.values["p"] == 0.9
    k_notes = [note for note in read.ignored if note.startswith("k: ")]
    assert len(read.ignored) == 2 and len(k_notes) == 1, read.ignored
    assert all(part in k_notes[0] for part in said), k_notes


def test_long_repeated_values_are_quoted_short(texts):
    read = links.read_link({"text": ["x" * 400] * 1000 + ["a dog"]}, fields(texts))
    assert read.values["query_text"] == "a dog"
    (note,) = read.ignored
    assert "given 1,001 times" in note and "(of 400 characters)" in note and "997 more" in note and len(note) < 400


def test_a_list_repeats_its_parameter_unnamed():
    read = links.read_link({"rows": ["#1", "#2", "#3"], "columns": ["A", "B"]}, links.compare_fields(["#1"]))
    assert read.ignored == [] and read.values["compare_rows"] == ["#1", "#2", "#3"]


# -- what no part of a page reads: another page's settings and unknown parameters ------------------------
def test_the_learn_page_names_the_compare_pages_settings():
    assert links.page_notes(["rows", "cell_k", "zzz", "toy_query", "k", "p", "gallery"], "learn") == [
        "“rows”, “cell_k” are settings of the Compare page: ignored here", "unknown parameter “zzz”"]


@pytest.mark.parametrize("page, params, notes", [
    ("", ["k", "p", "query", "gallery", "model"], []),
    ("", ["toy_query", "rows"], ["“toy_query” is a setting of the Learn page: ignored here",
                                 "“rows” is a setting of the Compare page: ignored here"]),
    ("compare", ["rows", "columns", "cell_k", "k", "anchors_a", "gallery"], []),
    ("compare", ["toy_a", "nonsense"], ["“toy_a” is a setting of the Learn page: ignored here",
                                        "unknown parameter “nonsense”"]),
    ("report", ["k", "foo", "p", "rows", "k"], [
        "“k”, “p” are settings of the Explore, Compare and Learn pages: ignored here",
        "“rows” is a setting of the Compare page: ignored here", "unknown parameter “foo”"]),
    ("report", [], []),
    (None, ["k", "rows", "toy_a", "zzz"], ["unknown parameter “zzz”"]),  # a page not in the table: all parts
])
def test_page_notes_name_what_no_part_of_the_page_reads(page, params, notes):
    assert links.page_notes(params, page) == notes


def test_every_parameter_belongs_to_a_page_and_every_page_of_the_app_is_known():
    from pathlib import Path

    for param, part in links.param_parts().items():
        assert any(part in page.parts for page in PAGES.values()), param
    # The entry's pages, by title and URL path (a name there stands for its constant; the default page has none).
    entry = (Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py").read_text(encoding="utf-8")
    constants = dict(re.findall(r'^([A-Z_]+) = "([^"]*)"', entry, re.MULTILINE))
    pages = {}
    for arguments in re.findall(r"st\.Page\((.*)\)", entry):
        title = re.search(r'title="([^"]*)"', arguments).group(1)
        path = re.search(r'url_path=("([^"]*)"|[A-Z_]+)', arguments)
        pages[title] = "" if path is None else path.group(2) if path.group(2) is not None else constants[path.group(1)]
    assert len(pages) == 4 and pages == {page.title: path for path, page in PAGES.items()}, pages


def test_a_number_no_link_can_carry_is_left_out_of_the_link():
    """Only a forged widget value can be an infinite or non-numeric number: the link leaves it out
    (the page names it where it draws the widget) rather than fail to write."""
    import numpy as np

    whole = links.LinkField("learn_neighbour", "neighbour", 1, "integer", 1, 100)
    real = links.LinkField("p", "p", 0.5, "number", 0.0, 1.0)
    for field in (whole, real):
        for value in (float("inf"), float("-inf"), float("nan"), "3", None, True):
            assert field.write(value) is None, (field.param, value)
    assert whole.write(np.int64(7)) == "7" and real.write(np.float64(0.25)) == "0.25"
