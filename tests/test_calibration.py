"""Calibrated p (anchordiv.models.calibration): ends exact, monotone, deterministic, label-free, and
half-way at p = 1/2 on a world built here, where objects and styles are known."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.base import clone

import anchordiv as ad
from anchordiv.models.calibration import NothingToCalibrate, neighbourhood_size

from conftest import object_style_world
from rankings import assert_same_ranking

SCALE = 10.0
WORLD = (3, 12, 4, 5, 24, 0.9, 0.35)  # object_style_world's seed, objects, styles, copies, d, style weight, noise


@pytest.fixture(scope="module")
def world():
    """240 images: 12 objects x 4 styles x 5 noisy copies; A names the objects, B the styles."""
    images, rows, object_anchors, style_anchors = object_style_world(*WORLD)
    a = ad.EmpiricalAnchors(scale=SCALE).fit(object_anchors)
    b = ad.EmpiricalAnchors(scale=SCALE).fit(style_anchors)
    return images, ad.MixtureAnchors([a, b], [0.5, 0.5]), np.array(rows)


def top_k(model, images, k=10):
    own = torch.arange(len(images))
    return ad.AnchorIndex(model, images, device="cpu").search(images, k, exclude=own)


def top_ids(model, images, k=10):
    return top_k(model, images, k)[1].numpy()


def agreement(ids, labels, column):
    return float((labels[ids, column] == labels[:, None, column]).mean())


def test_ends_are_a_and_b_exactly(world):
    images, mixture, _ = world
    calibrated = mixture.with_calibration(images)
    # The mixture at w = (1, 0) is A's model itself, computed through the mixture's float32 terms:
    # round-off of a few float32 ulps of values of size s = 10.
    for weights, component in (([1.0, 0.0], mixture.models[0]), ([0.0, 1.0], mixture.models[1])):
        assert_same_ranking(top_k(calibrated.with_weights(weights), images), top_k(component, images, 20),
                            atol=1e-5, context=f"weights {weights}")


def test_the_map_is_monotone_and_the_curve_spans_b_to_a(world):
    images, mixture, _ = world
    curve = mixture.with_calibration(images).calibration_
    assert np.all(np.diff(curve.progress) >= 0) and np.all(np.diff(curve.log_odds) > 0)
    assert curve.progress[0] < 0.05 and curve.progress[-1] > 0.95
    grid = np.linspace(0, 1, 41)
    log_odds = [curve.log_odds_at(p) for p in grid]
    assert log_odds[0] == -np.inf and log_odds[-1] == np.inf and np.all(np.diff(log_odds) >= 0)


def test_half_way_at_one_half_and_object_agreement_never_falls(world):
    """Labels are used here only to judge the calibration, which never sees them."""
    images, mixture, labels = world
    calibrated = mixture.with_calibration(images)
    grid = np.linspace(0, 1, 11)
    same_object = [agreement(top_ids(calibrated.with_weights([p, 1 - p]), images), labels, 0) for p in grid]
    same_style = [agreement(top_ids(calibrated.with_weights([p, 1 - p]), images), labels, 1) for p in grid]
    assert np.all(np.diff(same_object) >= -0.02)
    for values in (same_object, same_style):
        fraction = (values[5] - values[0]) / (values[-1] - values[0])
        assert 0.3 <= fraction <= 0.7, (same_object, same_style)
    balanced = mixture.with_balance(images).with_weights([0.5, 0.5])
    assert agreement(top_ids(balanced, images), labels, 0) < same_object[5]  # what calibration is for


def test_deterministic_pure_and_label_free(world):
    images, mixture, _ = world
    first, second = mixture.with_calibration(images), mixture.with_calibration(images)
    np.testing.assert_array_equal(first.calibration_.progress, second.calibration_.progress)
    np.testing.assert_array_equal(first.with_weights([0.3, 0.7]).log_weights_, second.with_weights([0.3, 0.7]).log_weights_)
    assert not mixture.calibrated and mixture.calibration_ is None  # with_calibration leaves it alone
    assert first.with_weights([0.2, 0.8]).calibrated  # the parametrisation travels with the weights
    assert not first.with_balance(images).calibrated and not first.with_balance(None).calibrated
    switched = ad.MixtureAnchors(mixture.models, [0.5, 0.5]).with_balance(images).with_calibration(images)
    assert switched.calibrated and not switched.balanced
    assert not switched.with_balance(images).calibrated
    np.testing.assert_array_equal(switched.calibration_.progress, first.calibration_.progress)


def test_the_calibration_is_a_parameter_and_a_refit_reproduces_it(world):
    images, mixture, _ = world
    calibrated = mixture.with_calibration(images, k=8, queries=64, seed=3)
    params = calibrated.get_params(deep=False)
    assert (params["weighting"], params["calibration_k"], params["calibration_queries"],
            params["calibration_seed"]) == ("calibrated", 8, 64, 3)
    assert params["models"] is mixture.models  # the components are shared, not copied
    _, _, object_anchors, style_anchors = object_style_world(*WORLD)
    refit = clone(calibrated).fit([object_anchors, style_anchors], reference=images)
    np.testing.assert_array_equal(refit.calibration_.progress, calibrated.calibration_.progress)
    np.testing.assert_array_equal(refit.with_weights([0.3, 0.7]).log_weights_,
                                  calibrated.with_weights([0.3, 0.7]).log_weights_)
    with pytest.raises(ValueError, match=r"weighting='calibrated' .*reference="):
        clone(calibrated).fit([object_anchors, style_anchors])
    # Other calibration settings are another model: unfitted until measured with them.
    changed = clone(calibrated).fit([object_anchors, style_anchors], reference=images).set_params(calibration_seed=4)
    assert not changed.__sklearn_is_fitted__()
    with pytest.raises(ad.NotFittedError, match=r"reference"):
        changed.cgf(images)


def test_calibration_refuses_what_it_cannot_do(world):
    images, mixture, _ = world
    three = ad.MixtureAnchors([*mixture.models, mixture.models[0]])
    with pytest.raises(ValueError, match="two components"):
        three.with_calibration(images)
    for few in (1, 2):  # a query, a neighbour and one more: nothing smaller can move (0 rows: refused as empty)
        with pytest.raises(ValueError, match=f"calibrating p between anchor sets A and B needs at least 3 images .*; "
                                             f"got {few}"):
            mixture.with_calibration(images[:few])
    twins = ad.MixtureAnchors([mixture.models[0], mixture.models[0]])
    with pytest.raises(NothingToCalibrate, match="same top-10 neighbours, so there is nothing to calibrate"):
        twins.with_calibration(images)


@pytest.mark.parametrize("n_items", [3, 4, 5, 11])
def test_a_small_reference_is_calibrated_with_as_many_neighbours_as_it_allows(world, n_items):
    """Fewer than k + 2 items (issue 52, F2: a folder of a few images): each query ranks by its top
    n - 2, the most that leaves one item out of its neighbourhood, exactly as if that k was asked for."""
    images, mixture, _ = world
    # Object o in style o % 4 (rows run object, style, copy): A and B rank these apart.
    reference = images[[o * 20 + (o % 4) * 5 for o in range(n_items)]]
    curve = mixture.with_calibration(reference).calibration_
    asked = mixture.with_calibration(reference, k=n_items - 2).calibration_
    assert curve.k == asked.k == n_items - 2 and curve.queries == n_items
    np.testing.assert_array_equal(curve.log_odds, asked.log_odds)
    np.testing.assert_array_equal(curve.progress, asked.progress)
    assert np.all(np.diff(curve.progress) >= 0)
    assert neighbourhood_size(10, n_items) == n_items - 2


def test_a_reference_of_k_plus_2_items_or_more_keeps_its_k(world):
    """The adaptation changes nothing where the reference allows k: at 12 items and more, k = 10."""
    images, mixture, _ = world
    assert [neighbourhood_size(10, n) for n in (12, 13, 240)] == [10, 10, 10]
    assert mixture.with_calibration(images[:12]).calibration_.k == 10
    assert mixture.with_calibration(images).calibration_.k == 10


def test_a_gallery_of_three_images_builds_the_explorers_geometry():
    """The explorer's geometry (balanced and calibrated on its gallery) over a gallery of 3 images;
    over 2, the balanced path is served and the calibrated one refused, naming the 3 needed."""
    from anchordiv.explorer import ExplorerGeometry, GeometrySpec

    images, _, object_anchors, style_anchors = object_style_world(*WORLD)
    texts = [[f"object {i}" for i in range(len(object_anchors))], [f"style {i}" for i in range(len(style_anchors))]]
    spec = GeometrySpec(kind="softmax", scale=SCALE)
    geometry = ExplorerGeometry(images[[0, 61, 122]], [object_anchors, style_anchors], texts, spec, device="cpu")
    assert geometry.calibrated_model.calibration_.k == 1
    two = ExplorerGeometry(images[[0, 61]], [object_anchors, style_anchors], texts, spec, device="cpu")
    assert two.p_path(images[0].numpy(), 1, 0, "balanced").ids.tolist() == [[1]] * 101
    with pytest.raises(ValueError, match="calibrating p between anchor sets A and B needs at least 3 images .*; got 2"):
        two.p_path(images[0].numpy(), 1, 0, "calibrated")


def test_a_geometry_whose_sets_rank_alike_serves_every_weighting_but_the_calibrated_one():
    """A and B that rank the gallery alike cannot be calibrated: the geometry is still built, the
    balanced and literal paths are served, and only the calibrated one is refused, naming why."""
    from anchordiv.explorer import ExplorerGeometry, GeometrySpec, calibration_frame

    images, _, object_anchors, _ = object_style_world(*WORLD)
    texts = [[f"object {i}" for i in range(len(object_anchors))]] * 2
    geometry = ExplorerGeometry(images, [object_anchors, object_anchors.clone()], texts,
                                GeometrySpec(kind="softmax", scale=SCALE), device="cpu")
    assert geometry.calibrated_model is None and calibration_frame(geometry) is None
    for weighting in ("balanced", "literal"):
        path = geometry.p_path(images[3].numpy(), 5, 3, weighting)
        assert path.ids.shape == (101, 5)
    with pytest.raises(NothingToCalibrate, match="same top-10 neighbours"):
        geometry.p_path(images[3].numpy(), 5, 3, "calibrated")


def test_a_gallery_of_the_query_alone_says_there_is_nothing_to_rank():
    from anchordiv.explorer.neighbours import search_one

    index = ad.CosineIndex(torch.nn.functional.normalize(torch.randn(1, 4), dim=1))
    with pytest.raises(ValueError, match="holds no image but the query's own, so there is nothing to rank it against"):
        search_one(index, torch.ones(4), 5, exclude=0)
