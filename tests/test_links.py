"""Shareable views (anchordiv.explorer.links): state to URL parameters and back, bad links, long texts."""
from __future__ import annotations

from urllib.parse import quote

import pytest

from anchordiv.explorer import links
from anchordiv.explorer.page_state import DIRECTIONS as DIRECTION_LABELS

DIRECTIONS = tuple(DIRECTION_LABELS.values())
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
    state = defaults(texts) | {"p": 0.35, "anchor_model": "gaussian", "scale": 22.0, "top_k": 5, "direction": DIRECTIONS[1],
                               "query_id": 49, "weighting": "literal", "show_iti": True, "preset_b": "long",
                               "anchors_a": "a cat\na dog in a hat", "query_mode": "Text", "query_text": "a red fox"}
    written_with = fields(texts, ("objects", "long"))
    params = links.write_link(state, written_with)
    assert params["p"] == "0.35" and params["direction"] == "reverse" and params["model"] == "gaussian"
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
    ({"model": "transformer"}, "not one of"), ({"weighting": ""}, "not one of"), ({"iti": "yes"}, "0 or 1"),
    ({"colour": "red"}, "unknown parameter"), ({"preset_a": "nope"}, "not one of"),
])
def test_bad_values_are_ignored_and_named(texts, params, reason):
    read = links.read_link(params, fields(texts))
    assert read.values == {}
    assert len(read.ignored) == 1 and reason in read.ignored[0] and next(iter(params)) in read.ignored[0]


def test_other_pages_parameters_are_not_unknown(texts):
    read = links.read_link({"rows": ["#1", "#2"], "p": "0.2"}, fields(texts), known=links.ALL_PARAMS)
    assert read.values == {"p": 0.2} and read.ignored == []


def test_every_explorer_parameter_is_known(texts):
    assert {item.param for item in fields(texts)} <= set(links.ALL_PARAMS)


def test_an_uploaded_query_is_not_written(texts):
    params = links.write_link(defaults(texts) | {"query_mode": "Upload"}, fields(texts))
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
    assert {item.param for item in fields} <= set(links.ALL_PARAMS)
