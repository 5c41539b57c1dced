"""Weighted anchor sets (issue 25): the text format (``term<TAB>weight``), the geometry of a weighted
set (the empirical model with those weights, whatever the sidebar's kind), and the app's parts:
neighbours, links, export and reload."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from anchordiv import explorer as ex
from anchordiv.explorer import AnchorText, parse_anchor_text, weighted_anchor_text
from anchordiv.models import EmpiricalAnchors, MixtureAnchors
from anchordiv.search import AnchorIndex
from anchordiv.store import GalleryStore
from conftest import object_style_world
from rankings import assert_same_ranking


# -- the text format ---------------------------------------------------------------------------
def test_weighted_lines_give_weights_and_repeats_keep_the_first():
    parsed = parse_anchor_text("pencil sketch\t0.3127\n\n  oil   painting \t 2\npencil sketch\t5\n")
    assert parsed.anchors == ("pencil sketch", "oil painting")
    assert parsed.weights == (0.3127, 2.0)
    assert (parsed.blank_lines, parsed.duplicates) == (1, 1)
    assert parsed.summary() == "2 weighted anchors in use (1 duplicate, 1 blank line ignored)"


def test_lines_without_a_tab_are_unweighted():
    parsed = parse_anchor_text("dog\ncat\t\nbird")  # a tab with nothing after it is no weight
    assert parsed.anchors == ("dog", "cat", "bird") and parsed.weights is None
    assert parsed.summary() == "3 anchors in use"


def test_the_cap_cuts_weights_with_their_anchors():
    parsed = parse_anchor_text("\n".join(f"term {i}\t{i + 1}" for i in range(5)), max_anchors=3)
    assert parsed.anchors == ("term 0", "term 1", "term 2") and parsed.weights == (1.0, 2.0, 3.0)
    assert parsed.truncated == 2


def test_a_weighted_set_needs_a_weight_on_every_line():
    with pytest.raises(ValueError, match=r"lines 2, 4: no weight, but other lines have one"):
        parse_anchor_text("a\t1\nb\nc\t2\nd")


@pytest.mark.parametrize("weight", ["0", "-1", "nan", "inf", "-inf", "heavy", "1e999"])
def test_a_weight_that_is_not_positive_and_finite_is_refused(weight):
    with pytest.raises(ValueError, match=rf"line 2: a weight must be a positive finite number .*'{weight}'"):
        parse_anchor_text(f"a\t1\nb\t{weight}")


def test_a_weight_without_an_anchor_is_refused():
    with pytest.raises(ValueError, match="line 1: a weight without an anchor"):
        parse_anchor_text("\t0.5\na\t1")


def test_a_long_list_of_bad_lines_is_named_briefly():
    with pytest.raises(ValueError, match=r"lines 2, 3, 4, 5, 6 and 5 more: no weight"):
        parse_anchor_text("a\t1\n" + "\n".join(f"term {i}" for i in range(10)))


def test_the_formatter_round_trips_to_four_significant_digits():
    terms, weights = ["pencil sketch", "a watercolor painting", "neon on black"], [0.312749, 1.5e-5, 12.0]
    text = weighted_anchor_text(terms, weights)
    assert text == "pencil sketch\t0.3127\na watercolor painting\t1.5e-05\nneon on black\t12"
    parsed = parse_anchor_text(text)
    assert parsed.anchors == tuple(terms)
    assert all(math.isclose(got, want, rel_tol=5e-4) for got, want in zip(parsed.weights, weights))
    assert parsed.text() == text


def test_the_formatter_leaves_out_terms_of_weight_zero():
    assert weighted_anchor_text(["a", "b", "c"], [0.5, 0.0, 0.25]) == "a\t0.5\nc\t0.25"


@pytest.mark.parametrize("term", ["two\tcolumns", "two\nlines", "carriage\rreturn", "line\u2028separator", "  "])
def test_the_formatter_refuses_terms_a_line_cannot_carry(term):
    with pytest.raises(ValueError, match="tab or a line break|blank"):
        weighted_anchor_text(["fine", term], [1.0, 1.0])


@pytest.mark.parametrize("weights, message", [([1.0], "2 terms but 1 weights"), ([1.0, -0.1], "non-negative"),
                                              ([1.0, math.nan], "non-negative"), ([0.0, 0.0], "every weight is 0")])
def test_the_formatter_refuses_weights_a_set_cannot_use(weights, message):
    with pytest.raises(ValueError, match=message):
        weighted_anchor_text(["a", "b"], weights)


def test_an_unweighted_set_is_its_lines():
    assert AnchorText(("a", "b")).text() == "a\nb"


# -- the geometry ------------------------------------------------------------------------------
# The geometry and the reference below rank the same float32 rows with the same empirical model through
# AnchorIndex: they can differ only where the blocked search rounds differently (a few ulps of values
# of order 1 at s = 12), so ties are judged at 1e-5.
SAME_ROUTE = dict(rtol=1e-5, atol=1e-6)
# The sharded search over a float32 store against AnchorIndex over its rows (as tests/test_store_view.py
# states: float32 rounding at s = 12, d = 24 is within 7e-6 of float64).
STORE_ROUTE = dict(rtol=1e-4, atol=1e-5)
SCALE = 12.0


@pytest.fixture(scope="module")
def world():
    """A small object x style world (images (96, 24)), its object and style anchors, and uneven
    weights on the objects (one object far heavier)."""
    images, rows, objects, styles = object_style_world(5, 6, 4, 4, 24, 0.6, 0.3)
    weights = [8.0, 1.0, 0.5, 2.0, 1.0, 0.25]
    return images, objects, styles, weights


def rankings(index, images, queries=range(0, 96, 7), k=10):
    return [ex.search_one(index, images[query], k, exclude=query) for query in queries]


@pytest.mark.parametrize("kind", ["softmax", "gaussian", "latent-softmax", "posterior-gaussian"])
def test_a_weighted_set_is_the_empirical_model_with_its_weights_whatever_the_kind(world, kind):
    images, objects, styles, weights = world
    texts = [f"object {i}" for i in range(len(objects))]
    spec = ex.GeometrySpec(kind=kind, scale=SCALE, rank=3)
    geometry = ex.ExplorerGeometry(images, [objects, torch.zeros((0, 24))], [texts, []], spec,
                                   prior=styles, prior_texts=["s"] * len(styles), anchor_weights=[weights, None])
    reference = AnchorIndex(EmpiricalAnchors(SCALE, weights=weights).fit(objects), images)
    for got, expected in zip(rankings(geometry.index_at(0.5), images), rankings(reference, images, k=20)):
        assert_same_ranking(got, expected, **SAME_ROUTE)
    assert geometry.component_texts == [texts] and geometry.component_anchors[0] is objects  # no prior mixed in
    assert ("Set A has weights: the empirical model with those weights is used; the sidebar's kind applies to "
            "unweighted sets.") in geometry.notes
    uniform = AnchorIndex(EmpiricalAnchors(SCALE).fit(objects), images)
    assert [ids.tolist() for _, ids in rankings(uniform, images)] != [ids.tolist() for _, ids in
                                                                      rankings(reference, images)]  # weights matter


def test_beside_an_unweighted_set_the_weighted_one_is_a_component_of_the_mixture(world):
    images, objects, styles, weights = world
    spec = ex.GeometrySpec(kind="gaussian", scale=SCALE)
    geometry = ex.ExplorerGeometry(images, [objects, styles], [["o"] * len(objects), ["s"] * len(styles)], spec,
                                   anchor_weights=[weights, None])
    mixture = MixtureAnchors([EmpiricalAnchors(SCALE, weights=weights).fit(objects), spec.fit(styles)[0]], [0.5, 0.5])
    for p in (0.2, 0.7):
        expected = mixture.with_balance(images).with_weights([p, 1 - p])
        for got, want in zip(rankings(geometry.index_at(p, "balanced"), images),
                             rankings(AnchorIndex(expected, images), images, k=20)):
            assert_same_ranking(got, want, **SAME_ROUTE, context=f"p = {p}")
    assert [note for note in geometry.notes if "has weights" in note] == [
        "Set A has weights: the empirical model with those weights is used; the sidebar's kind applies to "
        "unweighted sets."]


def test_a_store_source_fits_the_weights_too(world, tmp_path):
    images, objects, styles, weights = world
    folder = tmp_path / "store"
    GalleryStore.from_array(images, folder, shard_rows=40, encoder="test-encoder@1", dtype="float32")
    source = ex.StoreSource.open(folder, "test-encoder@1", 24)
    geometry = source.fit_geometry([objects, torch.zeros((0, 24))], [["o"] * len(objects), []],
                                   ex.GeometrySpec(kind="gaussian", scale=SCALE), anchor_weights=[weights, None])
    reference = AnchorIndex(EmpiricalAnchors(SCALE, weights=weights).fit(objects), source.rows(np.arange(len(source))))
    for got, expected in zip(rankings(geometry.index_at(0.5), images), rankings(reference, images, k=20)):
        assert_same_ranking(got, expected, **STORE_ROUTE)
