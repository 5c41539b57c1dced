"""Finding gallery items by name, best first (anchordiv.name_match): one ranking for a gallery in
memory (Gallery.find, the built-in world's and a folder's) and a store's name index (NameIndex.find)."""
from __future__ import annotations

import pandas as pd
import pytest
import torch

from anchordiv import explorer as ex
from anchordiv.gallery import Gallery
from anchordiv.name_match import CONTAINED, EXACT, NO_MATCH, PREFIX, WORD, match_ranks, rank_matches, search_key

NAMES = ["scatter", "black cat", "cat face", "Cat", "bobcat", "cat", "my_cat.jpg", "CATS", "dog"]
# An exact name (by id), the prefixes (the shorter first), the word starts (the shorter first), the rest.
BEST_FIRST = [3, 5, 7, 2, 1, 6, 4, 0]


def named_gallery(names: list[str], styles: list[str] | None = None) -> Gallery:
    """A gallery in memory named ``names`` (its caption ``name · style`` where ``styles`` are given)."""
    labels = pd.DataFrame({"name": names, **({"style": styles} if styles else {})})
    return Gallery(embeddings=torch.zeros(len(names), 2), labels=labels, load=lambda item: None,
                   object_column="name", name_column="name", style_column="style" if styles else None, key="names",
                   description="names")


@pytest.mark.parametrize("find", [lambda names: named_gallery(names).find, lambda names: ex.NameIndex(names).find],
                         ids=["gallery", "store"])
def test_an_exact_name_first_then_prefixes_word_starts_and_the_rest(find):
    search = find(NAMES)
    assert search("cat") == BEST_FIRST
    assert search("  CAT\n") == BEST_FIRST  # case and surrounding white space do not matter
    assert search("cat", limit=1) == [3] and search("cat", limit=3) == BEST_FIRST[:3]
    assert search("cat", limit=0) == [] and search("cat", limit=-5) == []
    assert search("") == [] and search(" \t\n") == [] and search("zebra") == []


@pytest.mark.parametrize("find", [lambda names: named_gallery(names).find, lambda names: ex.NameIndex(names).find],
                         ids=["gallery", "store"])
def test_hostile_search_texts_are_matched_literally(find):
    names = ["a.*b", "(cat", "[x]", "back\\slash", "x" * 5_000, "ünïcode ß name", "a  b"]
    search = find(names)
    assert search(".*") == [0] and search("(") == [1] and search("[") == [2] and search("\\") == [3]
    assert search("x" * 5_000) == [4] and search("x" * 100_000) == []
    assert search("ÜNÏCODE") == [5] and search("ss") == [5]  # case folded: ß reads as ss
    assert search("a b") == [6]  # runs of white space read as one space, in names as in the text
    assert search("\x00") == [] and search("\ud800") == []


def test_ties_go_to_the_shorter_name_then_the_smaller_id():
    names = ["cat · watercolor painting", "cat · google", "cat · google", "cat"]
    assert rank_matches("cat", [0, 1, 2, 3], [search_key(name) for name in names],
                        [search_key(name) for name in names], 10) == [3, 1, 2, 0]
    # The ids given, not their positions, break ties; a candidate that does not match is left out.
    assert rank_matches("cat", [9, 4, 7], ["cat", "cat", "dog"], ["cat", "cat", "dog"], 10) == [4, 9]


def test_how_each_name_matches():
    texts = ["cat", "cat face", "black cat", "my_cat", "scatter", "dog"]
    assert match_ranks("cat", texts, texts).tolist() == [EXACT, PREFIX, WORD, WORD, CONTAINED, NO_MATCH]
    # A caption says more than the name: the name alone being the text is exact.
    assert match_ranks("cat", ["cat"], ["cat · pencil sketch"]).tolist() == [EXACT]
    assert match_ranks("cat", [], []).tolist() == []


def test_the_emoji_world_puts_its_cats_first():
    """Typing "cat" in the built-in world: the images named "cat" (in their every style), then "cat
    face", ahead of "black cat" and "smiling cat face with open mouth"; its captions name the style,
    and a style is found too."""
    from anchordiv.datasets import open_emoji_world

    labels = open_emoji_world("all").labels
    world = named_gallery(labels["name"].tolist(), labels["style"].tolist())
    found = world.find("cat")
    names = labels["name"].iloc[found].tolist()
    assert names[:12] == ["cat"] * 12 and names[12:24] == ["cat face"] * 12
    assert found[:12] == sorted(found[:12]) and names.index("black cat") < names.index("crying cat face")
    assert len(found) == len(set(found)) == (labels["name"].str.contains("cat")).sum()
    assert all(world.caption(item).endswith("pencil sketch") for item in world.find("pencil sketch"))
