"""The names a menu of gallery items shows (anchordiv.explorer.query.distinct_captions): items whose
captions read the same are told apart by the labels that differ and their id, put first (a narrow menu
cuts an option's end), the others are not touched."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image

from anchordiv import explorer as ex
from anchordiv.explorer.query import another_item, distinct_captions
from anchordiv.gallery import Gallery


def labelled_source(names: list[str], sources: list[str]) -> ex.MemorySource:
    """A tiny gallery in memory named ``names``, whose ``source`` label column is ``sources``."""
    count = len(names)
    return ex.MemorySource(Gallery(
        embeddings=torch.nn.functional.normalize(torch.rand(count, 4), dim=1),
        labels=pd.DataFrame({"name": names, "source": sources, "split": ["train"] * count}),
        load=lambda item: Image.new("RGB", (4, 4)), object_column="name", name_column="name", style_column=None,
        key="tiny", description="tiny"))


def test_items_sharing_a_caption_get_the_differing_labels_and_their_id():
    source = labelled_source(["dog face", "dog face", "cat face", "dog face"], ["google", "twitter", "google", "google"])
    shown = distinct_captions(source, [0, 1, 2, 3])
    assert shown == ["source google, #0: dog face", "source twitter, #1: dog face", "cat face",
                     "source google, #3: dog face"]
    assert len(set(shown)) == len(shown)


def test_captions_that_read_the_same_once_drawn_are_told_apart():
    """A line break is drawn as a space, so "dog\\nface" and "dog face" read the same in a menu."""
    from anchordiv.explorer.literal import shown

    source = labelled_source(["dog\nface", "dog face"], ["google", "google"])
    menu = [shown(text) for text in distinct_captions(source, [1, 0])]
    assert menu[0].endswith("#1: dog face") and menu[1].endswith("#0: dog face")


def test_a_menu_without_shared_captions_is_left_as_it_is():
    source = labelled_source(["dog face", "cat face"], ["google", "google"])
    assert distinct_captions(source, [1, 0]) == ["cat face", "dog face"]
    assert distinct_captions(source, []) == []


def test_the_emoji_worlds_duplicate_names_name_their_vendor(library):
    source = ex.MemorySource(library["gallery"])
    items = source.find("pencil sketch")
    shown = distinct_captions(source, items)
    assert len(set(shown)) == len(shown) == len(items)
    repeated = [text for item, text in zip(items, shown) if f"#{item}" in text]
    assert repeated and all("source " in text for text in repeated)


def test_a_match_clicked_after_a_new_search_is_read_back_from_its_label(monkeypatch):
    """A person clicks a match of the last search while the run for a new search is on its way:
    Streamlit hands back the clicked label, which the new options do not hold (eight visitors on one
    server crashed the page this way). The menu remembers the labels it showed."""
    import streamlit as st

    from anchordiv.app import query_inputs

    source = labelled_source(["dog face", "cat face", "rocket"], ["google", "google", "twitter"])
    state: dict = {}
    monkeypatch.setattr(st, "session_state", state)
    monkeypatch.setattr(query_inputs.st, "session_state", state)

    class Column:
        def selectbox(self, *args, **kwargs):
            pass

    query_inputs.match_menu(Column(), "Matches", source, [0, 1], key="query_pick", on_change=None, placeholder="")
    query_inputs.match_menu(Column(), "Matches", source, [2], key="query_pick", on_change=None, placeholder="")
    state["query_pick"] = "cat face"  # the label of a pick from the first search's menu
    assert query_inputs.picked_item("query_pick") == 1
    state["query_pick"] = 2
    assert query_inputs.picked_item("query_pick") == 2
    for unknown in ("no such label", True, None, 2.5):
        state["query_pick"] = unknown
        assert query_inputs.picked_item("query_pick") is None


def test_a_random_draw_is_never_the_query_shown_and_reaches_every_other_item():
    """"Random image" always changes the query (a draw of the query itself looked like a dead click)."""
    rng = np.random.default_rng(0)
    draws = [another_item(5, 2, rng) for _ in range(400)]
    assert set(draws) == {0, 1, 3, 4}
    assert np.bincount(draws, minlength=5)[[0, 1, 3, 4]].min() > 60  # about 100 each
    assert another_item(1, 0, rng) == 0  # one item: nothing else to draw
    assert set(another_item(3, None, rng) for _ in range(100)) == {0, 1, 2}  # no query yet: any
    assert set(another_item(3, 7, rng) for _ in range(100)) == {0, 1, 2}  # out of range (a stale id): any
    with pytest.raises(ValueError, match="at least one"):
        another_item(0, None, rng)
