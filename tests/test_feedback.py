"""FeedbackAnchors (a geometry learned from marked neighbours) and suggest_anchors (issue 25)."""
import numpy as np
import pytest
import torch
from sklearn.base import clone

import anchordiv
from anchordiv import AnchorIndex, EmpiricalAnchors, FeedbackAnchors, MixtureAnchors, suggest_anchors
from anchordiv.prompts import AS_TYPED
from helpers import unit

SCALE = 10.0


def make_world():
    """Items of one of 4 styles (an axis each) times one of 30 objects (an axis each), in d = 40.

    The anchors are the 4 style axes and the 30 object axes; marking items of the query's style
    (other objects) should rank the query's other same-style items first."""
    rng = np.random.default_rng(0)
    d, n_styles, n_objects = 40, 4, 30
    basis = np.eye(d)
    styles = np.repeat(np.arange(n_styles), n_objects * 2)
    objects = np.tile(np.repeat(np.arange(n_objects), 2), n_styles)
    gallery = unit(basis[styles] + basis[n_styles + objects] + 0.15 * rng.normal(size=(len(styles), d)))
    anchors = unit(basis[: n_styles + n_objects] + 0.02 * rng.normal(size=(n_styles + n_objects, d)))
    return {"gallery": gallery, "anchors": anchors, "styles": styles, "objects": objects, "n_styles": n_styles}


@pytest.fixture(scope="module")
def world():
    return make_world()


def marked_style(world, query, count=5, seed=0):
    rng = np.random.default_rng(seed)
    styles, objects = world["styles"], world["objects"]
    same = np.flatnonzero((styles == styles[query]) & (objects != objects[query]))
    return rng.choice(same, size=count, replace=False).tolist()


def kinds(world):
    return ["style"] * world["n_styles"] + ["object"] * (len(world["anchors"]) - world["n_styles"])


def fitted(world, query=3, with_kinds=False, **params):
    model = FeedbackAnchors(scale=SCALE, **params)
    return model.fit(world["anchors"], world["gallery"][[query]], world["gallery"], [marked_style(world, query)],
                     kinds=kinds(world) if with_kinds else None)


def test_the_weights_lie_on_the_simplex_and_those_below_the_threshold_are_zero(world):
    model = fitted(world, threshold=0.5)
    w = model.weights_
    assert w.shape == (world["anchors"].shape[0],)
    assert np.all(w >= 0) and np.isclose(w.sum(), 1.0)
    assert np.count_nonzero(w == 0) > 0 and model.support_.tolist() == np.flatnonzero(w > 0).tolist()
    # what survives the threshold was at least half the largest before renormalising, and still is
    assert w[w > 0].min() >= 0.5 * w.max() * (1 - 1e-6)


def test_marked_items_of_one_style_put_the_weight_on_the_styles_and_rank_their_style_first(world):
    query = 3
    model = fitted(world, query, with_kinds=True)
    w = model.weights_
    style = world["styles"][query]
    assert model.kind_ == "style" and model.decided_
    assert w[world["n_styles"]:].sum() == 0 and int(np.argmax(w)) == style
    # the learned geometry ranks the query's other same-style items above the rest
    keep = np.ones(len(world["gallery"]), bool)
    keep[[query, *marked_style(world, query)]] = False
    scores = -model.divergence(world["gallery"][[query]], world["gallery"])[0][keep]
    relevant = (world["styles"] == style)[keep]
    assert anchordiv.average_precision(scores, relevant) > 0.95


def test_a_term_only_the_query_holds_scores_low_and_one_all_members_hold_scores_high(world):
    """The shared score is a soft minimum over the query and its marks: the query's own object, which
    no marked item (other objects) has, scores below the style they all have."""
    query = 3
    model = fitted(world, query)
    own_object = world["n_styles"] + world["objects"][query]
    assert model.shared_[world["styles"][query]] > model.shared_[own_object] + 1.0
    assert model.kind_ == "term" and set(model.agreement_) == {"term"}


def test_an_item_marked_not_like_it_lowers_what_it_holds(world):
    query = 3
    style = world["styles"][query]
    unlike = [int(np.flatnonzero((world["styles"] == style) & (world["objects"] != world["objects"][query]))[-1])]
    plain = fitted(world, query)
    model = FeedbackAnchors(scale=SCALE).fit(world["anchors"], world["gallery"][[query]], world["gallery"],
                                             [marked_style(world, query)], [unlike])
    assert model.shared_[style] < plain.shared_[style] - 1.0


def test_the_divergence_is_the_kl_of_the_tilted_distributions_under_the_learned_weights(world):
    model = fitted(world)
    x, y = world["gallery"][:3], world["gallery"][10:15]
    w, a = model.weights_.astype(np.float64), world["anchors"]

    def tilt(rows):
        with np.errstate(divide="ignore"):
            logits = SCALE * unit(rows) @ a.T + np.log(w)
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(axis=1, keepdims=True)

    px, py = tilt(x), tilt(y)
    support = w > 0
    expected = np.array([[np.sum(p[support] * np.log(p[support] / q[support])) for q in py] for p in px])
    np.testing.assert_allclose(model.divergence(x, y), expected, rtol=1e-8, atol=1e-10)
    direct = EmpiricalAnchors(scale=SCALE, weights=w).fit(a)
    np.testing.assert_allclose(model.divergence(x, y), direct.divergence(x, y), rtol=1e-8, atol=1e-10)


def test_the_fit_is_deterministic_for_a_seed_and_clone_keeps_the_parameters(world):
    first, second = fitted(world, seed=3), fitted(world, seed=3)
    np.testing.assert_array_equal(first.weights_, second.weights_)
    copy = clone(first)
    assert copy.get_params() == first.get_params() and not hasattr(copy, "weights_")


def test_a_fitted_model_works_in_an_index_and_in_a_mixture(world):
    model = fitted(world)
    gallery = torch.as_tensor(world["gallery"], dtype=torch.float32)
    index = AnchorIndex(model, gallery)
    values, ids = index.search(gallery[:2], k=5)
    expected = model.divergence(gallery[:2], gallery)
    torch.testing.assert_close(values, torch.sort(expected, dim=1).values[:, :5], rtol=1e-4, atol=1e-4)
    other = EmpiricalAnchors(scale=SCALE).fit(world["anchors"])
    mixture = MixtureAnchors([model, other], [0.5, 0.5])
    divergence = mixture.divergence(gallery[:2], gallery)
    assert divergence.shape == (2, len(gallery)) and torch.isfinite(divergence).all()
    values, _ = AnchorIndex(mixture, gallery).search(gallery[:2], k=3)
    assert values.shape == (2, 3)


def test_negatives_are_taken_and_several_queries_fit_together(world):
    g = world["gallery"]
    positives = [marked_style(world, 3), marked_style(world, 70, seed=1)]
    negatives = [[int(np.flatnonzero(world["styles"] != world["styles"][3])[0])], []]
    model = FeedbackAnchors(scale=SCALE).fit(world["anchors"], g[[3, 70]], g, positives, negatives, kinds=kinds(world))
    assert np.isclose(model.weights_.sum(), 1.0)
    # two queries of two styles, each with marks of its own style: the weight is on both styles
    assert model.kind_ == "style" and set(np.argsort(-model.weights_)[:2]) == {world["styles"][3], world["styles"][70]}


@pytest.mark.parametrize("change, message", [
    (dict(positives=[[]]), "empty"),
    (dict(positives=[[10_000]]), "outside the gallery"),
    (dict(positives=[[-1]]), "outside the gallery"),
    (dict(positives=[[1], [2]]), "2 lists for 1 queries"),
    (dict(positives=[[1.5]]), "whole gallery ids"),
    (dict(positives=None), "positives"),
    (dict(negatives=[[1]], positives=[[1]]), "both positive and negative"),
    (dict(queries=np.ones((1, 7))), "dimension 7"),
    (dict(gallery=np.ones((5, 7))), "dimension 7"),
    (dict(queries=np.ones(40)), "queries"),
    (dict(kinds=["style"] * 3), "kinds must name the kind of each of the 34 terms"),
    (dict(kinds="style"), "kinds must name"),
])
def test_bad_input_is_refused_with_a_clear_message(world, change, message):
    arguments = dict(anchors=world["anchors"], queries=world["gallery"][[0]], gallery=world["gallery"],
                     positives=[[1, 2]], negatives=None, kinds=None)
    arguments.update(change)
    with pytest.raises(ValueError, match=message):
        FeedbackAnchors(scale=SCALE).fit(**arguments)


@pytest.mark.parametrize("params, message", [
    (dict(softness=0), "softness"), (dict(agreement_sharpness=0), "agreement_sharpness"),
    (dict(weight_sharpness=-1), "weight_sharpness"), (dict(threshold=1.0), "threshold"),
    (dict(n_reference=0), "n_reference"), (dict(n_reference=1.5), "n_reference"), (dict(scale=0), "scale"),
    (dict(min_agreement=0), "min_agreement"), (dict(min_agreement=1.5), "min_agreement"),
    (dict(min_margin=-1), "min_margin"),
])
def test_bad_parameters_are_refused_at_fit(world, params, message):
    with pytest.raises(ValueError, match=message):
        FeedbackAnchors(**{"scale": SCALE, **params}).fit(world["anchors"], world["gallery"][[0]], world["gallery"],
                                                           [[1]])


def test_an_unfitted_model_says_so(world):
    with pytest.raises(anchordiv.NotFittedError):
        FeedbackAnchors().divergence(world["gallery"][:1], world["gallery"][:2])


class FakeEncoder:
    """Texts are embedded as fixed directions (bare words only, hence templates=AS_TYPED); enough for
    suggest_anchors' contract."""

    name, dim, logit_scale = "fake-suggest", 3, 5.0
    table = {"red": [1.0, 0, 0], "green": [0, 1.0, 0], "blue": [0, 0, 1.0], "reddish": [0.9, 0.1, 0]}

    def encode_texts(self, texts):
        return torch.tensor([self.table[text] for text in texts], dtype=torch.float32)


def test_suggest_anchors_ranks_terms_by_the_tilted_distribution(cache):
    encoder = FakeEncoder()
    terms = ["green", "red", "blue"]
    query = np.array([0.8, 0.6, 0.0])
    top, probabilities = suggest_anchors(encoder, query, terms, k=2, templates=AS_TYPED)
    logits = 5.0 * (query / np.linalg.norm(query)) @ np.eye(3)[[1, 0, 2]].T
    expected = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    assert top == ["red", "green"]
    np.testing.assert_allclose(probabilities, np.sort(expected)[::-1][:2], rtol=1e-6)
    all_terms, all_p = suggest_anchors(encoder, query, terms, k=10, templates=AS_TYPED)
    assert len(all_terms) == 3 and np.isclose(all_p.sum(), 1.0)
    text_terms, _ = suggest_anchors(encoder, "reddish", terms, k=1, templates=AS_TYPED)
    assert text_terms == ["red"]


@pytest.mark.parametrize("query, terms, k, message", [
    (np.ones(4), ["red"], 1, "dimension 4"), (np.ones(3), [], 1, "empty"), (np.ones(3), "red", 1, "list of strings"),
    (np.ones(3), ["red"], 0, "k must be"), ("  ", ["red"], 1, "empty text"), (np.ones(3), ["red", ""], 1, "non-empty"),
])
def test_suggest_anchors_refuses_bad_input(cache, query, terms, k, message):
    with pytest.raises(ValueError, match=message):
        suggest_anchors(FakeEncoder(), query, terms, k=k, templates=AS_TYPED)


def test_the_benchmark_vocabulary_is_2000_distinct_world_terms_with_their_kinds_and_no_vendor_style():
    from anchordiv.benchmarks.feedback import world_vocabulary
    from anchordiv.datasets import open_emoji_world

    terms, kinds = world_vocabulary(open_emoji_world("all").labels)
    assert len(terms) == 2000 == len(set(terms)) == len(kinds) and set(kinds) == {"object", "style", "other"}
    styled = {term for term, kind in zip(terms, kinds) if kind == "style"}
    assert len(styled) == 10 and "watercolor painting style" in styled and "pixel art" in styled
    assert not {"google", "twitter", "google style", "twitter style"} & set(terms)
    assert kinds[terms.index("dog face")] == "object" == kinds[terms.index("a grinning face")]


def test_the_names_are_exported():
    assert {"FeedbackAnchors", "suggest_anchors"} <= set(anchordiv.__all__)
    assert anchordiv.models.FeedbackAnchors is FeedbackAnchors
