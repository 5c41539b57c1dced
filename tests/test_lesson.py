"""The Learn page's toy world (anchordiv.lesson) and per-anchor KL terms (anchordiv.explain.kl_terms),
checked against the models themselves: every number the lesson draws is one a model computes."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import anchordiv as ad
from anchordiv import explain, lesson

ANCHORS_A, ANCHORS_B = [0.0, 40.0, 80.0], [160.0, 250.0]


def world(kind: str = "softmax", scale: float = 5.0, p: float = 0.5, weighting: str = "balanced"):
    return lesson.toy_geometry(lesson.circle_directions(ANCHORS_A), lesson.circle_directions(ANCHORS_B),
                               kind=kind, scale=scale, p=p, weighting=weighting)


@pytest.mark.parametrize("kind", lesson.TOY_KINDS)
@pytest.mark.parametrize("reverse", [False, True])
def test_circle_profile_is_the_models_divergence_kappa_and_cosine(kind, reverse):
    model = world(kind).model
    profile = lesson.circle_profile(model, 120.0, n=72, reverse=reverse)
    sampled = profile.iloc[[0, 7, 30, 55, 71]]
    directions = lesson.circle_directions(sampled["angle"].to_numpy())
    query = lesson.circle_directions([120.0])
    expected = model.divergence(query, directions, reverse=reverse)[0].numpy()
    np.testing.assert_allclose(sampled["divergence"], expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sampled["kappa"], model.cgf(directions).numpy(), rtol=1e-12)
    np.testing.assert_allclose(sampled["cosine"], (directions @ query[0]).numpy(), atol=1e-15)
    np.testing.assert_allclose(sampled["cosine_distance"], 1.0 - sampled["cosine"], atol=1e-15)
    assert profile["angle"].tolist() == [5.0 * i for i in range(72)]


def test_sphere_profile_is_the_models_divergence():
    model = lesson.toy_geometry(lesson.sphere_directions([0, 60, 120], [0, 0, 0]),
                                lesson.sphere_directions([0, 180], [60, 60]), scale=5.0).model
    profile = lesson.sphere_profile(model, 30.0, 20.0, step_deg=15.0)
    assert len(profile) == 25 * 13
    sampled = profile.iloc[[0, 40, 170, 324]]
    directions = lesson.sphere_directions(sampled["azimuth"].to_numpy(), sampled["elevation"].to_numpy())
    expected = model.divergence(lesson.sphere_directions([30.0], [20.0]), directions)[0].numpy()
    np.testing.assert_allclose(sampled["divergence"], expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sampled["kappa"], model.cgf(directions).numpy(), rtol=1e-12)


def test_directions_are_unit_vectors_at_the_typed_angles():
    circle = lesson.circle_directions([0, 90, 180])
    np.testing.assert_allclose(circle.numpy(), [[1, 0], [0, 1], [-1, 0]], atol=1e-15)
    sphere = lesson.sphere_directions([0, 90, 45], [0, 0, 90])
    np.testing.assert_allclose(sphere.numpy(), [[1, 0, 0], [0, 1, 0], [0, 0, 1]], atol=1e-15)
    for dim in (2, 3):
        reference = lesson.reference_directions(dim, 200)
        np.testing.assert_allclose(reference.norm(dim=1).numpy(), 1.0, atol=1e-12)
        # Evenly spread: their mean is (nearly) the origin.
        assert float(reference.mean(dim=0).norm()) < 0.02


def test_the_toy_mixture_is_the_registrys_models_mixed_by_p():
    literal = world("gaussian", p=0.3, weighting="literal")
    assert literal.is_mixture and literal.component_names == ("A", "B")
    np.testing.assert_allclose(literal.model.effective_weights_, [0.3, 0.7])
    fitted, _ = ad.anchor_model_kind("gaussian").fit(lesson.circle_directions(ANCHORS_A), 5.0)
    np.testing.assert_allclose(literal.model.models[0].covariance_.numpy(), fitted.covariance_.numpy())
    balanced = world(p=0.3)
    assert balanced.model.balanced and balanced.model_at(0.8).balanced
    np.testing.assert_allclose(balanced.model_at(0.8).weights, [0.8, 0.2])
    single = lesson.toy_geometry(lesson.circle_directions(ANCHORS_A), None, p=0.3)
    assert not single.is_mixture and single.model_at(0.9) is single.model
    assert any("Set B is empty" in note for note in single.notes)
    assert single.component_texts == (("A1 0°", "A2 40°", "A3 80°"),)


def test_anchor_table_is_the_tilted_distribution_for_softmax():
    toy = world(scale=4.0)
    query = lesson.circle_directions([30.0])
    table = toy.anchor_table(query[0])
    np.testing.assert_allclose(table[["x", "y"]].to_numpy(), torch.cat(toy.component_anchors).numpy())
    # Softmax mixture: p(anchor_i | x) ∝ w_k(i) / N_k(i) * exp(s gamma_i . x), from the fitted weights.
    anchors = torch.cat(toy.component_anchors)
    log_mass = np.concatenate([np.full(len(a), np.log(w / len(a))) for w, a in
                               zip(toy.model.effective_weights_, toy.component_anchors)])
    logits = log_mass + 4.0 * (anchors @ query[0]).numpy()
    expected = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    np.testing.assert_allclose(table["probability"], expected, rtol=1e-5)


def test_neighbourhood_stretches_within_an_anchors_pull_and_shrinks_between_anchors():
    """Two anchors at 0° and 90°: a direction on an anchor tilts to it whatever small step it takes,
    while the direction half-way between them is where the tilt changes fastest."""
    model = lesson.toy_geometry(lesson.circle_directions([0.0, 90.0]), scale=10.0).model
    on_anchor = lesson.circle_profile(model, 0.0).set_index("angle")["divergence"]
    between = lesson.circle_profile(model, 45.0).set_index("angle")["divergence"]
    # The same 10° step (the same cosine distance) costs far more between the anchors.
    assert between[55.0] > 50 * on_anchor[10.0]
    # So at one size the divergence neighbourhood is wider than the cosine arc on an anchor...
    around_anchor = lesson.equal_size_neighbourhoods(lesson.circle_profile(model, 0.0), 30.0)
    assert around_anchor["near_by_cosine"].sum() == around_anchor["near_by_divergence"].sum() == 31
    reach = around_anchor.loc[around_anchor["near_by_divergence"], "cosine"].min()
    assert reach < np.cos(np.radians(30.0))
    # ...and between the anchors it is narrower, and takes in the antipode, which tilts alike.
    around_middle = lesson.equal_size_neighbourhoods(lesson.circle_profile(model, 45.0), 30.0)
    near = around_middle.loc[around_middle["near_by_divergence"], "angle"]
    assert 225.0 in set(near) and not {35.0, 55.0} & set(near)
    assert between[225.0] == pytest.approx(0.0, abs=1e-12)


def test_on_the_sphere_the_direction_no_anchor_varies_in_is_ignored():
    """Anchors on the equator: moving a query at the anchors' bisector straight up changes nothing
    the anchors see, so its divergence is 0, while the same step along the equator is not."""
    model = lesson.toy_geometry(lesson.sphere_directions([0.0, 90.0], [0.0, 0.0]), scale=8.0).model
    profile = lesson.sphere_profile(model, 45.0, 0.0, step_deg=15.0).set_index(["azimuth", "elevation"])
    assert profile.loc[(45.0, 30.0), "divergence"] == pytest.approx(0.0, abs=1e-12)
    assert profile.loc[(75.0, 0.0), "divergence"] > 0.5
    assert profile.loc[(45.0, 30.0), "cosine"] == pytest.approx(profile.loc[(75.0, 0.0), "cosine"])


@pytest.mark.parametrize("kind", ["softmax", "gaussian"])
def test_responsibilities_sum_to_one_and_rise_with_p(kind):
    toy = world(kind)
    points = {"query": lesson.circle_directions([120.0])[0], "other": lesson.circle_directions([200.0])[0]}
    curve = lesson.responsibility_curve(toy.model_at, points, np.linspace(0.0, 1.0, 11))
    totals = curve.groupby(["p", "point"])["responsibility"].sum()
    np.testing.assert_allclose(totals, 1.0, atol=1e-12)
    for _, shares in curve[curve["component"] == "A"].groupby("point"):
        values = shares.sort_values("p")["responsibility"].to_numpy()
        assert values[0] == 0.0 and values[-1] == 1.0
        assert np.all(np.diff(values) > 0)


def test_mixture_responsibilities_weigh_each_components_kappa():
    toy = world(p=0.3, weighting="literal")
    x = lesson.circle_directions([10.0, 130.0, 300.0])
    kappas = np.stack([component.cgf(x).numpy() for component in toy.model.models], axis=1)
    terms = kappas + np.log([0.3, 0.7])
    expected = np.exp(terms - terms.max(axis=1, keepdims=True))
    np.testing.assert_allclose(toy.model.responsibilities(x).numpy(), expected / expected.sum(axis=1, keepdims=True),
                               rtol=1e-12)


@pytest.mark.parametrize("weighting", ["balanced", "literal"])
def test_the_even_share_p_is_where_as_share_of_the_query_crosses_one_half(weighting):
    toy = world(weighting=weighting)
    query = lesson.circle_directions([120.0])[0]
    crossing = lesson.even_share_p(toy.model_at, query, tolerance=1e-6)
    assert 0.0 < crossing < 1.0
    assert lesson.share_of_a(toy.model_at(crossing - 1e-3), query) < 0.5 < lesson.share_of_a(
        toy.model_at(crossing + 1e-3), query)
    curve = lesson.responsibility_curve(toy.model_at, {"query": query}, [crossing])
    assert curve.loc[curve["component"] == "A", "responsibility"].item() == pytest.approx(0.5, abs=1e-4)


def test_a_share_needs_two_anchor_sets():
    with pytest.raises(ValueError, match="two anchor sets"):
        lesson.share_of_a(world().model.models[0], lesson.circle_directions([10.0])[0])


@pytest.mark.parametrize("p", [0.0, 0.4, 1.0])
def test_kl_terms_sum_to_the_kl_and_to_the_softmax_divergence(p):
    toy = world(p=p, scale=6.0)
    x, y = lesson.circle_directions([30.0, 200.0])
    query_tilt, neighbour_tilt, divergence, shown = explain.explain_pair(
        toy.model, toy.component_anchors, toy.component_texts, toy.component_names, x, y)
    terms = explain.kl_terms(query_tilt, neighbour_tilt)
    assert list(terms.columns) == ["anchor", "set", "p", "q", "term"]
    assert sorted(terms["anchor"]) == sorted(query_tilt.texts)
    assert terms["term"].is_monotonic_decreasing
    assert terms["term"].sum() == pytest.approx(shown, rel=1e-12)
    # The tilts are exact for softmax, so the terms add up to the model's divergence (float32 tilts).
    assert terms["term"].sum() == pytest.approx(divergence, rel=1e-4, abs=1e-6)
    leaning = terms[terms["p"] > 0]
    np.testing.assert_allclose(leaning["term"], leaning["p"] * np.log(leaning["p"] / leaning["q"]), rtol=1e-9)
    assert (terms.loc[terms["p"] == 0, "term"] == 0).all()


def test_kl_terms_refuse_distributions_over_other_anchors():
    toy, other = world(), lesson.toy_geometry(lesson.circle_directions([10.0]))
    x = lesson.circle_directions([30.0])[0]
    with pytest.raises(ValueError, match="same anchors"):
        explain.kl_terms(toy.tilt(x), other.tilt(x))


@pytest.mark.parametrize("text, message", [
    ("", "empty"), ("10, north", "'north' is not a number"), ("nan", "not a finite"), ("inf", "not a finite"),
    ("30, 390", "30° and 390° are the same direction"), ("0,,0", "same direction"),
])
def test_bad_angles_name_the_problem(text, message):
    with pytest.raises(ValueError, match=message):
        lesson.parse_angles(text, "set A")


def test_angles_parse_with_any_separator():
    assert lesson.parse_angles(" 0, 45;120  -30 ") == [0.0, 45.0, 120.0, -30.0]
    assert lesson.parse_angles("  ", allow_empty=True) == []
    assert lesson.parse_angle_pairs("0 0; 90, 30\n200 -20") == [(0.0, 0.0), (90.0, 30.0), (200.0, -20.0)]


@pytest.mark.parametrize("text, message", [
    ("", "empty"), ("10", "not one azimuth and one elevation"), ("0 95", "outside \\[-90, 90\\]"),
    ("0 90; 120 90", "same direction"), ("a b", "'a' is not a number"),
])
def test_bad_sphere_directions_name_the_problem(text, message):
    with pytest.raises(ValueError, match=message):
        lesson.parse_angle_pairs(text, "set A")


@pytest.mark.parametrize("call, message", [
    (lambda: lesson.toy_geometry(torch.zeros((0, 2))), "set A is empty"),
    (lambda: lesson.toy_geometry(lesson.circle_directions([0]), lesson.sphere_directions([0], [0])), "one space"),
    (lambda: lesson.toy_geometry(lesson.circle_directions([0]), kind="posterior-softmax"), "offers the anchor models"),
    (lambda: lesson.toy_geometry(lesson.circle_directions([0]), p=1.5), "p=1.5"),
    (lambda: lesson.toy_geometry(lesson.circle_directions([0]), weighting="calibrated"), "weighting="),
    (lambda: lesson.toy_geometry(lesson.circle_directions([0]), scale=-1.0), "scale"),
    (lambda: lesson.circle_profile(world().model, float("nan")), "query_angle_deg"),
    (lambda: lesson.sphere_profile(world().model, 0.0, 0.0), "use circle_profile"),
    (lambda: lesson.equal_size_neighbourhoods(lesson.circle_profile(world().model, 0.0), 0.0), "width_deg"),
    (lambda: lesson.responsibility_curve(lesson.toy_geometry(lesson.circle_directions([0])).model_at,
                                         {"q": lesson.circle_directions([0])[0]}), "set B is empty"),
])
def test_bad_toy_settings_name_the_problem(call, message):
    with pytest.raises(ValueError, match=message):
        call()
