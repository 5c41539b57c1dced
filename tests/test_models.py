"""Anchor models: the identities of docs/design.md §2-3, checked against independent computations."""
import warnings

import numpy as np
import pytest
import torch
from sklearn.covariance import ledoit_wolf
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import GaussianMixture
from sklearn.pipeline import make_pipeline

import anchordiv as ad
from anchordiv.models import ledoit_wolf_covariance

from conftest import MODEL_NAMES, SCALE




def explicit_softmax_kl(anchors, log_weights, x, y, scale):
    """KL(p_x || p_y) from the explicit tilted distributions over the anchors."""
    def log_p(v):
        logits = scale * v @ anchors.T + log_weights
        return logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
    lx, ly = log_p(x), log_p(y)
    return (np.exp(lx)[:, None, :] * (lx[:, None, :] - ly[None, :, :])).sum(axis=2)


def test_empirical_divergence_is_the_explicit_kl(data):
    x, y = data["queries"], data["gallery"]
    for weights in (None, np.random.default_rng(2).uniform(0, 1, len(data["anchors"]))):
        model = ad.EmpiricalAnchors(scale=SCALE, weights=weights).fit(data["anchors"])
        log_w = np.log(np.full(60, 1 / 60) if weights is None else weights / weights.sum())
        expected = explicit_softmax_kl(data["anchors"], log_w, x, y, SCALE)
        np.testing.assert_allclose(model.divergence(x, y), expected, rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(model.divergence(x, y, reverse=True),
                                   explicit_softmax_kl(data["anchors"], log_w, y, x, SCALE).T, rtol=1e-9, atol=1e-10)


def test_latent_empirical_is_the_explicit_kl_over_projected_anchors(data):
    model = ad.LatentEmpiricalAnchors(rank=4, scale=SCALE).fit(data["anchors"])
    centred = data["anchors"] - data["anchors"].mean(0)
    basis = np.linalg.svd(centred, full_matrices=False)[2][:4]
    projected = data["anchors"].mean(0) + centred @ basis.T @ basis
    expected = explicit_softmax_kl(projected, np.full(60, -np.log(60)), data["queries"], data["gallery"], SCALE)
    np.testing.assert_allclose(model.divergence(data["queries"], data["gallery"]), expected, rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("name", ["gaussian", "gaussian-ridge", "latent-gaussian", "posterior-gaussian"])
def test_gaussian_divergence_is_half_mahalanobis_under_the_covariance(models, data, name):
    model = models[name]
    eta_x, eta_y = SCALE * data["queries"], SCALE * data["gallery"]
    cov = model.covariance_.numpy()
    delta = eta_y[None, :, :] - eta_x[:, None, :]
    expected = 0.5 * np.einsum("qgd,de,qge->qg", delta, cov, delta)
    np.testing.assert_allclose(model.divergence(data["queries"], data["gallery"]), expected, rtol=1e-9)
    np.testing.assert_allclose(model.divergence(data["queries"], data["gallery"], reverse=True), expected, rtol=1e-9)


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_grad_cgf_is_autograd_of_cgf(models, data, name):
    model = models[name]
    eta = torch.tensor(SCALE * data["queries"], requires_grad=True)
    model.cgf_eta(eta).sum().backward()
    np.testing.assert_allclose(model.grad_cgf(data["queries"]), eta.grad.numpy(), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_divergence_is_the_bregman_divergence_nonnegative_and_zero_on_the_diagonal(models, data, name):
    model = models[name]
    x, y = data["queries"], data["gallery"]
    kappa_x, kappa_y, grad_x = model.cgf(x), model.cgf(y), model.grad_cgf(x)
    bregman = kappa_y[None, :] - kappa_x[:, None] - np.einsum("qd,qgd->qg", grad_x, SCALE * (y[None] - x[:, None]))
    divergence = model.divergence(x, y)
    np.testing.assert_allclose(divergence, bregman, rtol=1e-8, atol=1e-8)
    assert divergence.min() >= -1e-9
    assert model.divergence(y, y, reverse=True).min() >= -1e-9
    np.testing.assert_allclose(np.diag(model.divergence(x, x)), 0.0, atol=1e-9)


def test_cgf_matches_its_definition_for_a_gaussian(data):
    model = ad.GaussianAnchors(scale=SCALE).fit(data["anchors"])
    eta = SCALE * data["queries"]
    expected = eta @ model.mean_.numpy() + 0.5 * np.einsum("nd,de,ne->n", eta, model.covariance_.numpy(), eta)
    np.testing.assert_allclose(model.cgf(data["queries"]), expected, rtol=1e-12)


def test_ledoit_wolf_equals_scikit_learn(data):
    covariance, shrinkage = ledoit_wolf_covariance(torch.tensor(data["anchors"]))
    expected_cov, expected_shrinkage = ledoit_wolf(data["anchors"])
    assert shrinkage == pytest.approx(expected_shrinkage, rel=1e-10)
    np.testing.assert_allclose(covariance.numpy(), expected_cov, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("covariance_type", ["full", "tied", "diag", "spherical"])
def test_em_fit_equals_scikit_learn_gaussian_mixture(data, covariance_type):
    model = ad.GaussianMixtureAnchors(n_components=3, covariance_type=covariance_type, scale=SCALE,
                                      random_state=0).fit(data["anchors"])
    reference = GaussianMixture(3, covariance_type=covariance_type, random_state=0).fit(data["anchors"])
    dense = {"full": lambda c: c,
             "tied": lambda c: np.broadcast_to(c, (3, 24, 24)),
             "diag": lambda c: np.stack([np.diag(v) for v in c]),
             "spherical": lambda c: c[:, None, None] * np.eye(24)}[covariance_type](reference.covariances_)
    np.testing.assert_allclose(model.weights_.numpy(), reference.weights_, rtol=1e-9)
    np.testing.assert_allclose(model.means_.numpy(), reference.means_, atol=1e-12)
    np.testing.assert_allclose(model.covariances_.numpy(), dense, atol=1e-12)
    assert (model.n_iter_, model.converged_) == (reference.n_iter_, reference.converged_)
    assert model.lower_bound_ == pytest.approx(reference.lower_bound_, rel=1e-10)


@pytest.mark.parametrize("covariance_type", ["full", "tied", "diag", "spherical"])
def test_every_gmm_covariance_type_is_a_valid_geometry(data, covariance_type):
    model = ad.GaussianMixtureAnchors(n_components=2, covariance_type=covariance_type, scale=SCALE).fit(data["anchors"])
    divergence = model.divergence(data["queries"], data["gallery"])
    assert np.isfinite(divergence).all() and divergence.min() >= -1e-9


def test_single_component_gmm_is_the_gaussian_without_shrinkage(data):
    gmm = ad.GaussianMixtureAnchors(n_components=1, scale=SCALE, reg_covar=0.0).fit(data["anchors"])
    gaussian = ad.GaussianAnchors(scale=SCALE, shrinkage=None).fit(data["anchors"])
    np.testing.assert_allclose(gmm.divergence(data["queries"], data["gallery"]),
                               gaussian.divergence(data["queries"], data["gallery"]), rtol=1e-6)


def test_mixture_with_weights_one_zero_is_its_first_model(data):
    first = ad.EmpiricalAnchors(scale=SCALE).fit(data["anchors"])
    second = ad.GaussianAnchors(scale=SCALE).fit(data["style"])
    for mixture in (ad.MixtureAnchors([first, second], [1.0, 0.0]),
                    ad.MixtureAnchors([first, second], [1.0, 0.0]).with_balance(data["gallery"])):
        np.testing.assert_allclose(mixture.divergence(data["queries"], data["gallery"]),
                                   first.divergence(data["queries"], data["gallery"]), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(mixture.cgf(data["queries"]), first.cgf(data["queries"]), rtol=1e-12)
    swapped = ad.MixtureAnchors([first, second], [0.0, 1.0])
    np.testing.assert_allclose(swapped.grad_cgf(data["queries"]), second.grad_cgf(data["queries"]), rtol=1e-10)


def test_mixture_cgf_is_the_log_of_the_weighted_mgf(data):
    first = ad.EmpiricalAnchors(scale=SCALE).fit(data["anchors"])
    second = ad.EmpiricalAnchors(scale=SCALE).fit(data["style"])
    mixture = ad.MixtureAnchors([first, second], [0.25, 0.75])
    expected = np.log(0.25 * np.exp(first.cgf(data["queries"])) + 0.75 * np.exp(second.cgf(data["queries"])))
    np.testing.assert_allclose(mixture.cgf(data["queries"]), expected, rtol=1e-12)
    # The same mixture as one weighted empirical model over the union of anchors.
    union = ad.EmpiricalAnchors(scale=SCALE, weights=np.r_[np.full(60, 0.25 / 60), np.full(8, 0.75 / 8)])
    union.fit(np.vstack([data["anchors"], data["style"]]))
    np.testing.assert_allclose(mixture.divergence(data["queries"], data["gallery"]),
                               union.divergence(data["queries"], data["gallery"]), rtol=1e-9, atol=1e-12)


def test_balanced_weights_subtract_the_mean_cgf_over_the_reference(data):
    first = ad.EmpiricalAnchors(scale=SCALE).fit(data["anchors"])
    second = ad.EmpiricalAnchors(scale=SCALE).fit(data["style"])
    mixture = ad.MixtureAnchors([first, second], [0.5, 0.5]).with_balance(data["gallery"])
    offsets = [first.cgf(data["gallery"]).mean(), second.cgf(data["gallery"]).mean()]
    np.testing.assert_allclose(mixture.kappa_offsets_, offsets, rtol=1e-12)
    expected = np.exp(-np.array(offsets)) / np.exp(-np.array(offsets)).sum()
    np.testing.assert_allclose(mixture.effective_weights_, expected, rtol=1e-12)
    literal = mixture.with_balance(None)
    assert not literal.balanced
    np.testing.assert_allclose(literal.effective_weights_, [0.5, 0.5])
    # The same balance as a parameter, measured by fit on the reference.
    by_parameter = ad.MixtureAnchors([ad.EmpiricalAnchors(scale=SCALE), ad.EmpiricalAnchors(scale=SCALE)], [0.5, 0.5],
                                     weighting="balanced").fit([data["anchors"], data["style"]], reference=data["gallery"])
    np.testing.assert_array_equal(by_parameter.kappa_offsets_, mixture.kappa_offsets_)


def test_posterior_empirical_interpolates_between_target_and_prior(data):
    prior, target, x, y = data["anchors"], data["style"], data["queries"], data["gallery"]
    target_only = ad.EmpiricalAnchors(scale=SCALE).fit(target).divergence(x, y)
    prior_only = ad.EmpiricalAnchors(scale=SCALE).fit(prior).divergence(x, y)
    def posterior(alpha):
        return ad.PosteriorEmpiricalAnchors(alpha=alpha, scale=SCALE).fit(target, prior)
    np.testing.assert_allclose(posterior(0.0).divergence(x, y), target_only, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(posterior(1e-12).divergence(x, y), target_only, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(posterior(1e12).divergence(x, y), prior_only, rtol=1e-6, atol=1e-9)


def test_posterior_gaussian_interpolates_between_target_and_prior(data):
    prior, target, x, y = data["anchors"], data["style"], data["queries"], data["gallery"]
    target_only = ad.GaussianAnchors(scale=SCALE, shrinkage=None).fit(target)
    near_zero = ad.PosteriorGaussianAnchors(alpha=1e-10, scale=SCALE).fit(target, prior)
    np.testing.assert_allclose(near_zero.mean_.numpy(), target_only.mean_.numpy(), atol=1e-9)
    np.testing.assert_allclose(near_zero.divergence(x, y), target_only.divergence(x, y), rtol=1e-6)
    prior_model = ad.GaussianAnchors(scale=SCALE).fit(prior)
    huge = ad.PosteriorGaussianAnchors(alpha=1e10, scale=SCALE).fit(target, prior)
    np.testing.assert_allclose(huge.divergence(x, y), prior_model.divergence(x, y), rtol=1e-6)


def test_posterior_gaussian_is_the_normal_inverse_wishart_update(data):
    prior, target, alpha = data["anchors"], data["style"], 3.0
    mu0 = prior.mean(0)
    sigma0 = ledoit_wolf(prior)[0]
    n, xbar = len(target), target.mean(0)
    scatter = (target - xbar).T @ (target - xbar)
    psi = alpha * sigma0 + scatter + alpha * n / (alpha + n) * np.outer(xbar - mu0, xbar - mu0)
    nu = 24 + 1 + alpha + n
    model = ad.PosteriorGaussianAnchors(alpha=alpha, scale=SCALE).fit(target, prior)
    np.testing.assert_allclose(model.mean_.numpy(), (alpha * mu0 + n * xbar) / (alpha + n), rtol=1e-12)
    np.testing.assert_allclose(model.covariance_.numpy(), psi / (nu - 24 - 1), rtol=1e-9, atol=1e-14)


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_float32_and_float64_agree(models, data, name):
    """float32 inputs are computed in float32; at scale 12 the divergences agree to 1e-3 relative."""
    model = models[name]
    d64 = model.divergence(data["queries"], data["gallery"])
    d32 = model.divergence(data["queries"].astype(np.float32), data["gallery"].astype(np.float32))
    assert d32.dtype == np.float32
    np.testing.assert_allclose(d32, d64, rtol=1e-3, atol=1e-3 * np.abs(d64).max())


@pytest.mark.parametrize("scale", [1.0, 100.0, 1000.0])
@pytest.mark.parametrize("kind", ["empirical", "gaussian", "gmm", "latent-empirical", "latent-gaussian", "mixture"])
def test_large_scales_stay_finite_in_float32(data, scale, kind):
    anchors = data["anchors"].astype(np.float32)
    model = {
        "empirical": lambda: ad.EmpiricalAnchors(scale=scale).fit(anchors),
        "gaussian": lambda: ad.GaussianAnchors(scale=scale).fit(anchors),
        "gmm": lambda: ad.GaussianMixtureAnchors(n_components=2, scale=scale).fit(anchors),
        "latent-empirical": lambda: ad.LatentEmpiricalAnchors(rank=3, scale=scale).fit(anchors),
        "latent-gaussian": lambda: ad.LatentGaussianAnchors(rank=3, scale=scale).fit(anchors),
        "mixture": lambda: ad.MixtureAnchors([ad.EmpiricalAnchors(scale=scale).fit(anchors),
                                              ad.EmpiricalAnchors(scale=scale).fit(data["style"])], [0.5, 0.5]),
    }[kind]()
    x, y = data["queries"].astype(np.float32), data["gallery"].astype(np.float32)
    for values in (model.cgf(x), model.grad_cgf(x), model.divergence(x, y), model.divergence(x, y, reverse=True)):
        assert np.isfinite(values).all()
    assert model.divergence(x, y).min() >= -1e-5 * scale**2


def test_numpy_in_numpy_out_and_tensor_in_tensor_out(data):
    model = ad.EmpiricalAnchors(scale=SCALE).fit(data["anchors"])
    assert isinstance(model.divergence(data["queries"], data["gallery"]), np.ndarray)
    as_tensor = model.divergence(torch.tensor(data["queries"]), torch.tensor(data["gallery"]))
    assert isinstance(as_tensor, torch.Tensor) and as_tensor.dtype == torch.float64


def test_embeddings_are_normalised_inside(data):
    model = ad.EmpiricalAnchors(scale=SCALE).fit(3.0 * data["anchors"])
    reference = ad.EmpiricalAnchors(scale=SCALE).fit(data["anchors"])
    np.testing.assert_allclose(model.divergence(5.0 * data["queries"], 0.1 * data["gallery"]),
                               reference.divergence(data["queries"], data["gallery"]), rtol=1e-10)


def test_blockwise_evaluation_equals_one_block(data, monkeypatch):
    model = ad.GaussianMixtureAnchors(n_components=2, scale=SCALE).fit(data["anchors"])
    whole = model.divergence(data["queries"], data["gallery"])
    monkeypatch.setattr("anchordiv.models.base.BLOCK_ELEMENTS", 100)
    np.testing.assert_allclose(model.divergence(data["queries"], data["gallery"]), whole, rtol=1e-12)


def test_repr_names_the_parameters():
    assert repr(ad.GaussianAnchors(scale=10.0)) == "GaussianAnchors(scale=10.0, shrinkage='ledoit-wolf')"


ESTIMATORS = [ad.EmpiricalAnchors, ad.LatentEmpiricalAnchors, ad.GaussianAnchors, ad.LatentGaussianAnchors,
              ad.GaussianMixtureAnchors, ad.PosteriorEmpiricalAnchors, ad.PosteriorGaussianAnchors, ad.FeedbackAnchors]


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda estimator: estimator.__name__)
def test_parameters_are_keyword_only_and_stored_by_the_base(estimator):
    """``X(10.0)`` cannot mean the scale in one model and another parameter in the next; every
    model's __init__ goes through AnchorModel's, which stores the scale."""
    with pytest.raises(TypeError, match="positional"):
        estimator(10.0)
    model = estimator(scale=7.0)
    assert model.scale == 7.0 and "scale" in model.get_params()
    assert set(model.parameter_constraints) <= set(model.get_params())  # each check is of a parameter
    assert estimator(**model.get_params()).get_params() == model.get_params()  # as sklearn.base.clone rebuilds


@pytest.mark.parametrize("estimator", ESTIMATORS[:5], ids=lambda estimator: estimator.__name__)
def test_fit_takes_scikit_learns_y_and_ignores_it(data, estimator):
    """``fit(X, y)`` as scikit-learn calls it (a pipeline passes ``y`` on): the anchors are ``X``,
    and a ``y`` changes nothing, for a distribution over anchors has no target."""
    x, y = data["queries"], data["gallery"]
    params = {"scale": SCALE, **({"rank": 4} if "rank" in estimator().get_params() else {})}
    direct = estimator(**params).fit(data["anchors"])
    labelled = estimator(**params).fit(data["anchors"], np.arange(len(data["anchors"])) % 3)
    piped = make_pipeline(estimator(**params)).fit(data["anchors"])[-1]
    for model in (labelled, piped):
        assert model.n_features_in_ == direct.n_features_in_ == data["anchors"].shape[1]
        np.testing.assert_array_equal(model.divergence(x, y), direct.divergence(x, y))
    mixture = ad.MixtureAnchors([estimator(**params), ad.EmpiricalAnchors(scale=SCALE)], weighting="balanced")
    assert mixture.fit([data["anchors"], data["style"]], None, reference=data["gallery"]) is mixture


def test_a_mixture_takes_its_components_and_weights_by_position_only():
    first, second = ad.EmpiricalAnchors(scale=SCALE), ad.GaussianAnchors(scale=SCALE)
    assert ad.MixtureAnchors([first, second], [0.3, 0.7]).weights == [0.3, 0.7]
    with pytest.raises(TypeError, match="positional"):
        ad.MixtureAnchors([first, second], [0.3, 0.7], "balanced")


def test_learned_weights_are_an_attribute_not_a_parameter():
    """FeedbackAnchors learns its weights: it shares the empirical model's CGF (DiscreteAnchors) but not
    EmpiricalAnchors' ``weights`` parameter, so clone and get_params see only what it takes."""
    from anchordiv.models.empirical import DiscreteAnchors

    model = ad.FeedbackAnchors(scale=SCALE)
    assert isinstance(model, DiscreteAnchors) and not isinstance(model, ad.EmpiricalAnchors)
    assert "weights" not in model.get_params() and not hasattr(model, "weights")
    assert set(model.parameter_constraints) == set(model.get_params())  # every parameter's check is declared


def test_em_that_stops_early_warns_with_convergence_warning(data):
    model = ad.GaussianMixtureAnchors(n_components=3, max_iter=1, tol=0.0, scale=SCALE)
    with pytest.warns(ConvergenceWarning, match=r"did not converge in max_iter=1") as record:
        assert model.fit(data["anchors"]) is model
    assert model.converged_ is False and model.n_iter_ == 1
    # The warning points at the caller of fit, not at anchordiv's internals.
    assert [entry.filename for entry in record if entry.category is ConvergenceWarning] == [__file__]
    # The fit is still usable: EM's estimates after its one iteration.
    assert np.isfinite(model.divergence(data["queries"], data["gallery"])).all()
    # scikit-learn stops and warns the same way.
    with pytest.warns(ConvergenceWarning):
        reference = GaussianMixture(3, max_iter=1, tol=0, random_state=0).fit(data["anchors"])
    assert (reference.n_iter_, reference.converged_) == (model.n_iter_, model.converged_)


def test_em_that_converges_does_not_warn(data):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        warnings.simplefilter("error", ConvergenceWarning)
        model = ad.GaussianMixtureAnchors(n_components=3, scale=SCALE).fit(data["anchors"])
    assert not [entry for entry in record if issubclass(entry.category, ConvergenceWarning)]
    assert model.converged_ is True and 1 <= model.n_iter_ < model.max_iter
    reference = GaussianMixture(3, random_state=0).fit(data["anchors"])
    assert (reference.n_iter_, reference.converged_) == (model.n_iter_, model.converged_)


def test_refitting_a_balanced_mixture_measures_the_new_components_or_refuses(data):
    mixture = ad.MixtureAnchors([ad.EmpiricalAnchors(scale=SCALE), ad.EmpiricalAnchors(scale=SCALE)],
                                weighting="balanced")
    mixture.fit([data["anchors"], data["style"]], reference=data["gallery"])
    assert mixture.balanced
    offsets = mixture.kappa_offsets_
    # A balance measured on the old components never survives a refit: it is measured again ...
    mixture.fit([data["style"], data["anchors"]], reference=data["gallery"])
    np.testing.assert_array_equal(mixture.kappa_offsets_, offsets[::-1])
    # ... or, without a reference, the refit is refused before any component changes.
    with pytest.raises(ValueError, match=r"weighting='balanced' .*fit\(anchor_sets, reference=.*weighting='literal'"):
        mixture.fit([data["anchors"], data["style"]])
    np.testing.assert_array_equal(mixture.kappa_offsets_, offsets[::-1])
    # Literal weights have no offsets.
    np.testing.assert_array_equal(mixture.with_balance(None).kappa_offsets_, [0.0, 0.0])
