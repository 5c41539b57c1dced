"""The plain helpers behind the Explore page's "Find anchors": the vocabulary's bounds and files, the
gallery sample, the training data made from marks (and what it refuses), the fit on a sample of the
gallery, and the sentence that explains a learned geometry."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import anchordiv as ad
from anchordiv.explorer.feedback import (MAX_MARKED_QUERIES, MAX_MARKS, LearnedAnchors, QueryMarks, explanation,
                                         learn_weights, marks_key, too_few_to_tell, training_set)
from anchordiv.explorer.literal import SHOWN_CHARS, markdown_literal, shown
from anchordiv.explorer.paths import DataRoots
from anchordiv.explorer.vocabulary import (FIND_TERMS, bounded_terms, default_vocabulary, file_terms, gallery_sample,
                                           typed_terms, vocabulary_files)
from conftest import object_style_world


def marks(query_id=0, like=(), unlike=(), d=4) -> QueryMarks:
    return QueryMarks(np.ones(d, np.float32), query_id, f"#{query_id}", tuple(like), tuple(unlike))


def test_the_default_vocabulary_follows_the_model():
    assert default_vocabulary("builtin@74b873ccaa25") == "builtin-world"
    assert default_vocabulary("open_clip:ViT-B-32/laion2b_s34b_b79k") == "imagenet-1k"
    assert set(map(default_vocabulary, ("builtin", "open_clip:x"))) <= set(ad.list_vocabularies())


def test_a_vocabulary_is_bounded():
    assert typed_terms("pixel art\n\n  pixel   art\noil painting") == ("pixel art", "oil painting")
    with pytest.raises(ValueError, match="no terms"):
        typed_terms(" \n\t\n")
    with pytest.raises(ValueError, match=f"at most {FIND_TERMS:,}"):
        bounded_terms([f"term {i}" for i in range(FIND_TERMS + 1)], "your list")
    assert len(bounded_terms([f"term {i}" for i in range(FIND_TERMS)], "your list")) == FIND_TERMS


def test_vocabulary_files_are_the_text_files_inside_the_roots(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "lists").mkdir(parents=True)
    outside.mkdir()
    (root / "lists" / "mine.txt").write_text("red\nblue\n")
    (root / "notes.csv").write_text("a,b\n")
    (outside / "secret.txt").write_text("hidden\n")
    (root / "lists" / "link.txt").symlink_to(outside / "secret.txt")
    roots = DataRoots((root.resolve(),))
    assert [path.name for path in vocabulary_files(roots)] == ["mine.txt"]
    assert file_terms(roots, root / "lists" / "mine.txt") == ("red", "blue")
    with pytest.raises(ValueError, match="outside the data folders"):
        file_terms(roots, outside / "secret.txt")
    assert vocabulary_files(DataRoots()) == []


def test_the_gallery_sample_is_all_rows_or_a_fixed_draw():
    assert gallery_sample(5, size=10).tolist() == [0, 1, 2, 3, 4]
    drawn = gallery_sample(1000, size=50)
    assert drawn.size == 50 and np.all(np.diff(drawn) > 0) and drawn.max() < 1000
    assert np.array_equal(drawn, gallery_sample(1000, size=50)) and not np.array_equal(drawn, gallery_sample(1000, 50, 1))


def test_marks_are_kept_by_gallery_id_or_by_embedding():
    vector = np.arange(4, dtype=np.float32)
    assert marks_key(3, vector) == "#3"
    assert marks_key(None, vector) == marks_key(None, vector.copy()) != marks_key(None, vector + 1)


def test_the_training_set_takes_the_marked_queries():
    data = training_set([marks(0, like=(3, 1), unlike=(5,)), marks(9), marks(2, like=(4,))], n_items=10)
    assert data.queries.shape == (2, 4)
    assert data.positives == [[3, 1], [4]] and data.negatives == [[5], []]
    assert data.marked_ids.tolist() == [1, 3, 4, 5]


@pytest.mark.parametrize("query, message", [
    (marks(0, unlike=(3,)), "none 'like the query'"),
    (marks(2, like=(2, 3)), "its own neighbour"),
    (marks(0, like=(3, 4), unlike=(4,)), "#4 both"),
    (marks(0, like=(120,)), "outside this gallery"),
    (marks(0, like=tuple(range(1, MAX_MARKS + 2))), f"at most {MAX_MARKS}"),
])
def test_marks_that_cannot_be_learned_from_are_named(query, message):
    with pytest.raises(ValueError, match=message):
        training_set([query], n_items=100)


def test_no_marks_and_too_many_queries_are_refused():
    with pytest.raises(ValueError, match="no gallery item is marked"):
        training_set([marks(0), marks(1)], n_items=10)
    with pytest.raises(ValueError, match=f"at most {MAX_MARKED_QUERIES}"):
        training_set([marks(i, like=(i + 1,)) for i in range(MAX_MARKED_QUERIES + 1)], n_items=100)


def style_world():
    """Object-style images and anchors: the style anchors are what the marked items share."""
    images, rows, objects, styles = object_style_world(0, n_objects=6, n_styles=4, copies=2, d=16, style_weight=0.6,
                                                     noise=0.05)
    terms = [f"object {i}" for i in range(len(objects))] + [f"style {j}" for j in range(len(styles))]
    return images, rows, torch.cat([objects, styles]), terms


def test_learning_on_a_sample_renumbers_the_marks_and_matches_the_whole_gallery_fit():
    images, rows, anchors, terms = style_world()
    query = 0
    same = [i for i in range(len(images)) if rows[i][1] == rows[query][1] and rows[i][0] != rows[query][0]][:3]
    data = training_set([QueryMarks(images[query].numpy(), query, "q", tuple(same))], len(images))
    whole = learn_weights(anchors, terms, data, np.arange(len(images)), images, scale=10.0)
    order = np.random.default_rng(1).permutation(len(images))  # the same rows in another order
    shuffled = learn_weights(anchors, terms, data, order, images[order], scale=10.0)
    direct = ad.FeedbackAnchors(scale=10.0, seed=0).fit(anchors, images[[query]], images, [same])
    expected = {terms[i]: w for i, w in enumerate(direct.weights_) if w > 0}
    assert dict(zip(whole.terms, whole.weights)) == pytest.approx(expected)
    assert dict(zip(shuffled.terms, shuffled.weights)) == pytest.approx(expected, abs=1e-6)
    assert np.all(np.diff(whole.weights) <= 0) and whole.weights.sum() == pytest.approx(1.0)
    assert whole.table().columns.tolist() == ["term", "weight"]


def test_with_kinds_the_weight_goes_to_the_kind_the_marks_share():
    images, rows, anchors, terms = style_world()
    kinds = ["object" if term.startswith("object") else "style" for term in terms]
    query = 0

    def learned_from(like) -> LearnedAnchors:
        data = training_set([QueryMarks(images[query].numpy(), query, "q", tuple(like))], len(images))
        return learn_weights(anchors, terms, data, np.arange(len(images)), images, scale=10.0, kinds=kinds)

    same_style = [i for i in range(len(images)) if rows[i][1] == rows[query][1] and rows[i][0] != rows[query][0]][:3]
    same_object = [i for i in range(len(images)) if rows[i][0] == rows[query][0] and rows[i][1] != rows[query][1]][:3]
    by_style, by_object = learned_from(same_style), learned_from(same_object)
    assert by_style.decided and by_style.kind == "style" and by_style.terms[0] == f"style {rows[query][1]}"
    assert all(term.startswith("style") for term in by_style.terms)
    assert by_object.decided and by_object.kind == "object" and by_object.terms[0] == f"object {rows[query][0]}"
    assert by_object.kinds == ("object", "style")
    # marks at odds (one of each): nothing is shared by all, so the page is told it cannot tell
    at_odds = learned_from([same_style[0], same_object[0]])
    assert not at_odds.decided


def test_learning_refuses_one_term_and_a_sample_without_the_marks():
    images, rows, anchors, terms = style_world()
    data = training_set([QueryMarks(images[0].numpy(), 0, "q", (5,))], len(images))
    with pytest.raises(ValueError, match="nothing to weigh"):
        learn_weights(anchors[:1], terms[:1], data, np.arange(len(images)), images, scale=10.0)
    with pytest.raises(ValueError, match=r"marked items \[5\]"):
        learn_weights(anchors, terms, data, np.arange(5), images[:5], scale=10.0)


@pytest.mark.parametrize("weights, kind, sentence", [
    ([0.5, 0.5], "term", "What your marks share with the query: a. All of the weight is on 2 terms: a, b."),
    ([1.0], "style", "What your marks share with the query: a (a style). All of the weight is on 1 style term: a."),
    ([0.5, 0.3, 0.2], "object", "What your marks share with the query: a (an object). Most of the weight (80%) is on "
                                "2 object terms: a, b."),
    ([0.6, 0.12, 0.1, 0.1, 0.08], "term", "What your marks share with the query: a. Most of the weight (72%) is on "
                                          "2 terms: a, b."),
])
def test_the_explanation_names_the_shared_term_and_the_terms_that_hold_most_of_the_weight(weights, kind, sentence):
    learned = LearnedAnchors(tuple("abcde"[:len(weights)]), np.asarray(weights), 1, kind)
    assert explanation(learned) == sentence


def test_a_spread_geometry_says_it_is_spread():
    learned = LearnedAnchors(tuple(f"t{i}" for i in range(40)), np.full(40, 1 / 40), 1)
    assert "The weight is spread over 40 terms; the top 10 hold 25%" in explanation(learned)


@pytest.mark.parametrize("term_chars", [12, 40, 120, 200])
def test_the_explanation_is_never_cut_inside_a_term(term_chars):
    """Long terms (the issue's "face with open … (59 characters left out) …"): the sentence fits what
    the page shows uncut, and names whole terms only, counting those it leaves out."""
    terms = tuple(f"{i:02d} " + "face with open mouth "[: term_chars - 3].ljust(term_chars - 3, "x") for i in range(30))
    learned = LearnedAnchors(terms, np.full(30, 1 / 30), 1, "object", ("object", "style"))
    text = explanation(learned)
    assert len(text) <= SHOWN_CHARS and shown(text) == text and "left out" not in markdown_literal(text)
    named = text.split(": ", 2)[-1].removesuffix(".").split(", ")
    more = named.pop() if named[-1].startswith("and ") else ""
    assert all(term in terms for term in named) and (more == f"and {10 - len(named)} more" if more else len(named) == 10)


def test_too_few_to_tell_says_so_and_what_to_mark():
    learned = LearnedAnchors(("a", "b"), np.asarray([0.6, 0.4]), 1, "object", ("object", "style"), decided=False)
    said = too_few_to_tell(learned)
    assert "too few" in said and "no geometry is offered" in said and "(its object or its style)" in said


def test_the_table_shows_small_weights_to_four_significant_digits():
    learned = LearnedAnchors(("a", "b", "c"), np.asarray([0.9998, 1.2345678e-4, 7.5e-5]), 1)
    assert learned.table()["weight"].tolist() == [0.9998, 1.235e-4, 7.5e-5]
