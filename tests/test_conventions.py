"""The estimator contract every anchor model keeps (docs/design.md §1, §3), checked over every kind
the registry knows (the posterior estimators among them) plus a MixtureAnchors of two registered
kinds in each parametrisation (literal, balanced, calibrated): scikit-learn's clone, get_params,
set_params and repr; NotFittedError before fit; fit returns self and is reproducible; dtype and
device follow the input; ``__init__`` only stores parameters and ``fit`` checks them. Then the
registry's own rules (names, parameters, priors, and how each kind adapts to the anchor count)."""
import re

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

import anchordiv as ad
from anchordiv.models.registry import ANCHORS_PER_COMPONENT, GMM_REG_COVAR, SINGLE_ANCHOR_RIDGE

from conftest import SCALE

MIXTURE = "mixture(softmax, gaussian)"
MIXTURES = {MIXTURE: "literal", "balanced mixture": "balanced", "calibrated mixture": "calibrated"}
POSTERIORS = (ad.PosteriorEmpiricalAnchors, ad.PosteriorGaussianAnchors)
CASES = [*ad.list_anchor_models(), *MIXTURES]


def fit_case(name, data):
    """``(fitted model, what a clone's fit takes to reproduce it)`` for a registry kind or a mixture:
    the positional and keyword arguments of ``fit``."""
    anchors, style = data["anchors"], data["style"]
    if name in MIXTURES:
        objects, _ = ad.fit_anchor_model("softmax", anchors, SCALE)
        styles, _ = ad.fit_anchor_model("gaussian", style, SCALE)
        literal = ad.MixtureAnchors([objects, styles], [0.3, 0.7])
        model = {"literal": literal, "balanced": literal.with_balance(data["gallery"]),
                 "calibrated": literal.with_calibration(data["gallery"], k=5, queries=20, seed=1)}[MIXTURES[name]]
        return model, ([anchors, style],), {"reference": data["gallery"]}
    kind = ad.anchor_model_kind(name)
    if kind.needs_prior:
        model, _ = kind.fit(style, SCALE, prior=anchors)
        return model, (style, anchors), {}
    model, _ = kind.fit(anchors, SCALE)
    return model, (anchors,), {}


@pytest.fixture(scope="module", params=CASES)
def case(request, data):
    model, fit_args, fit_kwargs = fit_case(request.param, data)
    return request.param, model, fit_args, fit_kwargs


def assert_same_params(a, b, path="params"):
    """Parameter values equal: arrays by value, estimators by type and (recursively) parameters."""
    if hasattr(a, "get_params") and not isinstance(a, type):
        assert type(a) is type(b), f"{path}: {type(a).__name__} != {type(b).__name__}"
        assert_same_params(a.get_params(deep=False), b.get_params(deep=False), path)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), f"{path}: keys {sorted(a)} != {sorted(b)}"
        for key in a:
            assert_same_params(a[key], b[key], f"{path}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), f"{path}: {a!r} != {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_params(x, y, f"{path}[{i}]")
    elif isinstance(a, (np.ndarray, torch.Tensor)):
        np.testing.assert_array_equal(np.asarray(b), np.asarray(a), err_msg=path)
    else:
        assert type(a) is type(b) and (a == b or (a != a and b != b)), f"{path}: {a!r} != {b!r}"


# ---- scikit-learn's estimator API --------------------------------------------------------------------

def test_clone_has_the_same_parameters(case):
    _, model, _, _ = case
    copy = clone(model)
    assert type(copy) is type(model)
    assert_same_params(copy.get_params(), model.get_params())
    assert_same_params(copy.get_params(deep=False), model.get_params(deep=False))
    # A clone of the unfitted clone is the same again.
    assert_same_params(clone(copy).get_params(), model.get_params())


def test_repr_shows_every_parameter_and_round_trips(case):
    _, model, _, _ = case
    params = model.get_params(deep=False)
    rebuilt = type(model)(**params)
    assert repr(rebuilt) == repr(model)
    text = repr(model)
    assert text.startswith(type(model).__name__ + "(")
    for name in params:
        assert re.search(rf"\b{name}=", text), f"{name} missing from {text}"


def test_a_clone_is_unfitted_and_says_to_call_fit(case, data):
    _, model, _, _ = case
    check_is_fitted(model)
    copy = clone(model)
    assert not copy.__sklearn_is_fitted__()
    assert issubclass(ad.NotFittedError, ValueError) and issubclass(ad.NotFittedError, AttributeError)
    with pytest.raises(ad.NotFittedError, match=r"\bfit\b"):
        copy.cgf(data["queries"])
    with pytest.raises(ad.NotFittedError, match=r"\bfit\b"):
        copy.divergence(data["queries"], data["gallery"])
    with pytest.raises(ad.NotFittedError, match=r"\bfit\b"):
        copy.check_fitted()
    with pytest.raises(ad.NotFittedError):
        check_is_fitted(copy)
    with pytest.raises(ad.NotFittedError):
        ad.AnchorIndex(copy, data["gallery"])


def test_fit_returns_self_and_reproduces_the_model(case, data):
    _, model, fit_args, fit_kwargs = case
    fresh = clone(model)
    params_before = fresh.get_params()
    assert fresh.fit(*fit_args, **fit_kwargs) is fresh
    assert_same_params(fresh.get_params(), params_before)  # fit never changes a parameter
    check_is_fitted(fresh)
    x, y = data["queries"], data["gallery"]
    for reverse in (False, True):
        np.testing.assert_allclose(fresh.divergence(x, y, reverse=reverse), model.divergence(x, y, reverse=reverse),
                                   rtol=1e-10, atol=1e-10)


def test_set_params_round_trip(case):
    _, model, _, _ = case
    original = model.get_params()
    copy = clone(model)
    if isinstance(copy, ad.MixtureAnchors):
        assert copy.set_params(weights=[0.6, 0.4]) is copy
        assert copy.get_params()["weights"] == [0.6, 0.4]
        components = [clone(component) for component in model.models]
        copy.set_params(models=components)
        assert copy.get_params()["models"] is components
        copy.set_params(weighting="calibrated", calibration_k=3, calibration_queries=9, calibration_seed=2)
        assert "weighting='calibrated'" in repr(copy) and "calibration_seed=2" in repr(copy)
    else:
        assert copy.set_params(scale=3.5) is copy
        assert copy.get_params()["scale"] == 3.5 and copy.scale == 3.5
        assert "scale=3.5" in repr(copy)
    with pytest.raises(ValueError, match=r"bogus"):
        copy.set_params(bogus=1)
    assert_same_params(model.get_params(), original)  # the clone's parameters are its own


def test_float64_numpy_in_float64_numpy_out(case, data):
    _, model, _, _ = case
    x, y = data["queries"], data["gallery"]
    for out in (model.cgf(x), model.grad_cgf(x), model.divergence(x, y)):
        assert isinstance(out, np.ndarray) and out.dtype == np.float64


def check_tensor_outputs(model, x, y):
    for out in (model.cgf(x), model.grad_cgf(x), model.divergence(x, y), model.divergence(x, y, reverse=True)):
        assert isinstance(out, torch.Tensor)
        assert out.dtype == x.dtype and out.device == x.device
        assert bool(torch.isfinite(out).all())


def test_float32_tensor_in_float32_tensor_out_on_the_same_device(case, data):
    _, model, _, _ = case
    x = torch.tensor(data["queries"], dtype=torch.float32)
    y = torch.tensor(data["gallery"], dtype=torch.float32)
    check_tensor_outputs(model, x, y)
    np.testing.assert_allclose(model.divergence(x, y).numpy(), model.divergence(data["queries"], data["gallery"]),
                               rtol=1e-3, atol=1e-3 * np.abs(model.divergence(data["queries"], data["gallery"])).max())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_tensor_in_cuda_tensor_out(case, data):
    _, model, _, _ = case
    for dtype in (torch.float32, torch.float64):
        x = torch.tensor(data["queries"], dtype=dtype, device="cuda")
        y = torch.tensor(data["gallery"], dtype=dtype, device="cuda")
        check_tensor_outputs(model, x, y)
    np.testing.assert_allclose(model.divergence(x, y).cpu().numpy(), model.divergence(data["queries"], data["gallery"]),
                               rtol=1e-9, atol=1e-9)


# ---- __init__ stores, fit checks ---------------------------------------------------------------------

INVALID = [
    (ad.GaussianMixtureAnchors, {"reg_covar": -1}),
    (ad.GaussianMixtureAnchors, {"tol": float("nan")}),
    (ad.GaussianMixtureAnchors, {"max_iter": 0}),
    (ad.GaussianMixtureAnchors, {"n_components": 0}),
    (ad.GaussianMixtureAnchors, {"covariance_type": "bogus"}),
    (ad.GaussianMixtureAnchors, {"random_state": -3}),
    (ad.GaussianMixtureAnchors, {"scale": -1.0}),
    (ad.EmpiricalAnchors, {"scale": 0}),
    (ad.EmpiricalAnchors, {"weights": [1.0, 2.0]}),
    (ad.GaussianAnchors, {"shrinkage": "bogus"}),
    (ad.GaussianAnchors, {"shrinkage": -0.5}),
    (ad.LatentGaussianAnchors, {"rank": 0}),
    (ad.LatentEmpiricalAnchors, {"rank": 2.5}),
    (ad.PosteriorEmpiricalAnchors, {"alpha": -1.0}),
    (ad.PosteriorEmpiricalAnchors, {"scale": 0}),
    (ad.PosteriorGaussianAnchors, {"alpha": float("nan")}),
    (ad.PosteriorGaussianAnchors, {"shrinkage": "bogus"}),
]


@pytest.mark.parametrize("model_class, params", INVALID, ids=lambda v: v.__name__ if isinstance(v, type) else str(v))
def test_init_only_stores_and_fit_names_the_bad_parameter(data, model_class, params):
    (name, value), = params.items()
    model = model_class(**params)  # no check here
    assert model.get_params()[name] is value
    fit_args = (data["style"], data["anchors"]) if issubclass(model_class, POSTERIORS) else (data["anchors"],)
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        model.fit(*fit_args)
    assert not model.__sklearn_is_fitted__()


def test_mixture_weights_are_checked_at_fit(data):
    mixture = ad.MixtureAnchors([ad.EmpiricalAnchors(scale=SCALE), ad.EmpiricalAnchors(scale=SCALE)], [0.2, 0.2])
    assert mixture.get_params()["weights"] == [0.2, 0.2]
    with pytest.raises(ValueError, match=r"\bweights\b.*sum to 1"):
        mixture.fit([data["anchors"], data["style"]])
    assert not any(model.__sklearn_is_fitted__() for model in mixture.models)  # checked before any component fits


def test_mixture_weighting_is_checked_at_fit_and_needs_a_reference(data):
    components = [ad.EmpiricalAnchors(scale=SCALE), ad.EmpiricalAnchors(scale=SCALE)]
    sets = [data["anchors"], data["style"]]
    bogus = ad.MixtureAnchors(components, weighting="bogus")
    assert bogus.get_params()["weighting"] == "bogus"
    with pytest.raises(ValueError, match=r"weighting must be one of 'literal', 'balanced', 'calibrated'"):
        bogus.fit(sets)
    for weighting in ("balanced", "calibrated"):
        with pytest.raises(ValueError, match=rf"weighting='{weighting}' is measured on a reference set.*reference="):
            ad.MixtureAnchors(components, weighting=weighting).fit(sets)
    with pytest.raises(ValueError, match=r"two components"):
        ad.MixtureAnchors([*components, ad.EmpiricalAnchors(scale=SCALE)], weighting="calibrated").fit(
            [*sets, data["anchors"]], reference=data["gallery"])
    assert not any(model.__sklearn_is_fitted__() for model in components)  # checked before any component fits


def test_a_mixture_of_fitted_models_is_fitted_once_its_weighting_is_measured(data):
    fitted = [ad.EmpiricalAnchors(scale=SCALE).fit(data["anchors"]), ad.EmpiricalAnchors(scale=SCALE).fit(data["style"])]
    literal = ad.MixtureAnchors(fitted, [0.4, 0.6])
    check_is_fitted(literal)  # literal weights measure nothing
    unmeasured = ad.MixtureAnchors(fitted, [0.4, 0.6], weighting="balanced")
    assert not unmeasured.__sklearn_is_fitted__()
    with pytest.raises(ad.NotFittedError, match=r"weighting='balanced'.*reference.*with_balance"):
        unmeasured.cgf(data["queries"])
    balanced = literal.with_balance(data["gallery"])
    calibrated = literal.with_calibration(data["gallery"], k=5, queries=20, seed=1)
    for sibling, weighting in ((balanced, "balanced"), (calibrated, "calibrated"), (balanced.with_balance(None), "literal"),
                               (calibrated.with_weights([0.9, 0.1]), "calibrated")):
        check_is_fitted(sibling)
        assert sibling.get_params()["weighting"] == weighting and sibling.models is literal.models
    assert calibrated.get_params(deep=False) == {**literal.get_params(deep=False), "weighting": "calibrated",
                                                 "calibration_k": 5, "calibration_queries": 20, "calibration_seed": 1}
    assert literal.get_params()["weighting"] == "literal"  # the siblings leave it alone
    # Changing the weighting by set_params leaves a model to refit, as for any estimator.
    changed = clone(balanced).fit([data["anchors"], data["style"]], reference=data["gallery"])
    changed.set_params(weighting="calibrated")
    assert not changed.__sklearn_is_fitted__()
    changed.fit([data["anchors"], data["style"]], reference=data["gallery"])
    assert changed.calibration_ is not None and changed.calibrated


# ---- the registry --------------------------------------------------------------------------------------

def test_the_registry_lists_its_kinds_and_hands_out_copies():
    names = ad.list_anchor_models()
    assert names == ["softmax", "gaussian", "gmm", "latent-softmax", "latent-gaussian", "posterior-softmax",
                     "posterior-gaussian"]
    names.append("bogus")
    assert "bogus" not in ad.list_anchor_models()
    for name in ad.list_anchor_models():
        kind = ad.anchor_model_kind(name)
        assert kind.name == name and kind.label and kind.short
        assert kind.needs_prior == name.startswith("posterior-")
        with pytest.raises(TypeError):
            kind.defaults["bogus"] = 1  # read-only


@pytest.mark.parametrize("name", ad.list_anchor_models())
def test_every_kind_fits_at_the_requested_scale_with_its_defaults(data, name):
    kind = ad.anchor_model_kind(name)
    prior = data["anchors"] if kind.needs_prior else None
    target = data["style"] if kind.needs_prior else data["anchors"]
    model, notes = ad.fit_anchor_model(name, target, SCALE, prior=prior)
    assert isinstance(model, ad.AnchorModel) and model.__sklearn_is_fitted__()
    assert model.scale == SCALE and isinstance(notes, list)
    again, _ = kind.fit(target, SCALE, prior=prior, **kind.defaults)
    np.testing.assert_allclose(again.divergence(data["queries"], data["gallery"]),
                               model.divergence(data["queries"], data["gallery"]), rtol=1e-12, atol=1e-12)


def test_unknown_kind_names_the_choices(data):
    with pytest.raises(ValueError, match=r"unknown anchor model 'bogus'") as error:
        ad.anchor_model_kind("bogus")
    for name in ad.list_anchor_models():
        assert repr(name) in str(error.value)
    with pytest.raises(ValueError, match=r"unknown anchor model 'bogus'"):
        ad.fit_anchor_model("bogus", data["anchors"], SCALE)


def test_unknown_parameter_is_named(data):
    with pytest.raises(ValueError, match=r"'gmm' has no parameter\(s\) \['bogus'\].*n_components"):
        ad.fit_anchor_model("gmm", data["anchors"], SCALE, bogus=3)
    with pytest.raises(ValueError, match=r"'softmax' has no parameter\(s\) \['rank'\].*none besides scale"):
        ad.fit_anchor_model("softmax", data["anchors"], SCALE, rank=3)


@pytest.mark.parametrize("name", [name for name in ad.list_anchor_models() if ad.anchor_model_kind(name).needs_prior])
def test_posterior_kinds_need_a_prior(data, name):
    for prior in (None, np.zeros((0, 24))):
        with pytest.raises(ValueError, match=r"needs a prior anchor set"):
            ad.fit_anchor_model(name, data["style"], SCALE, prior=prior)


@pytest.mark.parametrize("n_anchors, requested, expected", [
    (60, 4, 4), (60, 7, 7), (60, 10, 7), (16, 4, 2), (5, 4, 1), (8, 1, 1),
])
def test_gmm_components_follow_the_anchor_count(data, n_anchors, requested, expected):
    assert expected == max(1, min(requested, n_anchors // ANCHORS_PER_COMPONENT))
    model, notes = ad.fit_anchor_model("gmm", data["anchors"][:n_anchors], SCALE, n_components=requested)
    assert model.n_components == expected and tuple(model.means_.shape) == (expected, 24)
    assert model.reg_covar == GMM_REG_COVAR
    if expected == requested:
        assert notes == []
    else:
        assert len(notes) == 1 and f"using {expected}" in notes[0] and str(n_anchors) in notes[0]


@pytest.mark.parametrize("name", ["latent-softmax", "latent-gaussian"])
@pytest.mark.parametrize("n_anchors, requested, expected", [(60, 32, 23), (8, 32, 7), (60, 5, 5), (2, 3, 1)])
def test_latent_rank_is_capped_by_anchors_and_dimension(data, name, n_anchors, requested, expected):
    assert expected == min(requested, n_anchors - 1, 24 - 1)
    model, notes = ad.fit_anchor_model(name, data["anchors"][:n_anchors], SCALE, rank=requested)
    assert model.rank == expected and tuple(model.components_.shape) == (expected, 24)
    if expected == requested:
        assert notes == []
    else:
        assert len(notes) == 1 and f"rank {expected}" in notes[0]


@pytest.mark.parametrize("name", ["latent-softmax", "latent-gaussian"])
def test_latent_kinds_refuse_one_anchor(data, name):
    with pytest.raises(ValueError, match=r"at least two distinct anchors"):
        ad.fit_anchor_model(name, data["anchors"][:1], SCALE)


def test_one_anchor_gets_a_ridge_for_the_gaussians_and_a_note_for_softmax(data):
    one = data["anchors"][:1]
    model, notes = ad.fit_anchor_model("gaussian", one, SCALE)
    assert model.shrinkage == SINGLE_ANCHOR_RIDGE and model.shrinkage_ == SINGLE_ANCHOR_RIDGE
    assert len(notes) == 1 and "ridge" in notes[0]
    np.testing.assert_allclose(model.covariance_.numpy(), SINGLE_ANCHOR_RIDGE * np.eye(24), atol=1e-15)
    # An explicit ridge is used as given, without a note.
    model, notes = ad.fit_anchor_model("gaussian", one, SCALE, shrinkage=0.5)
    assert model.shrinkage == 0.5 and notes == []
    # Two anchors are enough for Ledoit–Wolf.
    assert ad.fit_anchor_model("gaussian", data["anchors"][:2], SCALE)[1] == []
    # The posterior Gaussian's prior gets the same ridge when it has one anchor.
    _, notes = ad.fit_anchor_model("posterior-gaussian", data["style"], SCALE, prior=one)
    assert len(notes) == 1 and "ridge" in notes[0]
    _, notes = ad.fit_anchor_model("softmax", one, SCALE)
    assert len(notes) == 1 and "one anchor" in notes[0].lower()
