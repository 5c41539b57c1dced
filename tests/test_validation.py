"""Bad input raises ValueError naming the problem and the fix."""
import numpy as np
import pytest
import scipy.sparse
import torch

import anchordiv as ad


@pytest.fixture
def fitted(data):
    return ad.EmpiricalAnchors(scale=10.0).fit(data["anchors"])


def test_empty_anchor_set():
    with pytest.raises(ValueError, match=r"anchors is empty .*at least one row"):
        ad.EmpiricalAnchors().fit(np.zeros((0, 8)))


def test_non_2d_input(fitted, data):
    with pytest.raises(ValueError, match=r"anchors must be 2-D .*got shape \(24,\).*\[None, :\]"):
        ad.EmpiricalAnchors().fit(data["anchors"][0])
    with pytest.raises(ValueError, match=r"x must be 2-D"):
        fitted.divergence(data["queries"][0], data["gallery"])
    with pytest.raises(ValueError, match=r"queries must be 2-D"):
        ad.AnchorIndex(fitted, data["gallery"]).search(np.zeros((2, 3, 24)), 1)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_or_inf_anywhere(fitted, data, bad):
    broken = data["gallery"].copy()
    broken[3, 5] = bad
    with pytest.raises(ValueError, match=r"anchors has NaN or infinite values in 1 row\(s\) \(first: \[3\]\)"):
        ad.GaussianAnchors().fit(broken)
    with pytest.raises(ValueError, match=r"gallery has NaN or infinite"):
        ad.AnchorIndex(fitted, broken)
    with pytest.raises(ValueError, match=r"queries has NaN or infinite"):
        ad.CosineIndex(data["gallery"]).search(broken, 2)
    with pytest.raises(ValueError, match=r"y has NaN"):
        fitted.divergence(data["queries"], broken)


def test_zero_rows_have_no_direction(fitted, data):
    zeros = data["gallery"].copy()
    zeros[7] = 0
    with pytest.raises(ValueError, match=r"1 all-zero row\(s\) \(first: \[7\]\).*drop them"):
        fitted.cgf(zeros)


def test_dimension_mismatch(fitted, data):
    with pytest.raises(ValueError, match=r"x has dimension 12 but the anchors have dimension 24; embed"):
        fitted.cgf(data["queries"][:, :12])
    with pytest.raises(ValueError, match=r"queries has dimension 12"):
        ad.AnchorIndex(fitted, data["gallery"]).search(data["queries"][:, :12], 1)
    with pytest.raises(ValueError, match=r"gallery has dimension 12"):
        ad.ITIIndex(data["anchors"], data["gallery"][:, :12])
    with pytest.raises(ValueError, match=r"target_anchors has dimension 12"):
        ad.PosteriorEmpiricalAnchors().fit(data["style"][:, :12], data["anchors"])


def test_k_larger_than_the_gallery(fitted, data):
    index = ad.AnchorIndex(fitted, data["gallery"])
    with pytest.raises(ValueError, match=r"k=71 must be an integer from 1 to 70 .*lower k"):
        index.search(data["queries"], 71)
    with pytest.raises(ValueError, match=r"k=70 must be an integer from 1 to 69 .*1 excluded per query"):
        index.search(data["queries"], 70, exclude=np.arange(9))
    with pytest.raises(ValueError, match=r"k=0"):
        ad.CosineIndex(data["gallery"]).search(data["queries"], 0)


@pytest.mark.parametrize("scale", [-1.0, 0.0, np.nan, np.inf, "big", 10**400])
def test_bad_scale(data, scale):
    with pytest.raises(ValueError, match=r"scale must be a finite positive number"):
        ad.EmpiricalAnchors(scale=scale).fit(data["anchors"])
    with pytest.raises(ValueError, match=r"scale must be a finite positive number"):
        ad.GaussianAnchors(scale=scale).fit(data["anchors"])


@pytest.mark.parametrize("weights, message", [
    ([-0.5, 1.5], r"finite and non-negative; got \[-0.5, 1.5\]"),
    ([0.5, 0.6], r"must sum to 1; got \[0.5, 0.6\] \(sum 1.1\).*\[p, 1 - p\]"),
    ([1.0], r"must have 2 entries"),
    ([np.nan, 1.0], r"finite and non-negative"),
])
def test_bad_mixture_weights(data, weights, message):
    """Like a scikit-learn estimator, the mixture stores its weights as given and checks them where
    they are first used: at fit, at evaluation, or in with_weights."""
    models = [ad.EmpiricalAnchors().fit(data["anchors"]), ad.EmpiricalAnchors().fit(data["style"])]
    with pytest.raises(ValueError, match=message):
        ad.MixtureAnchors(models, weights).cgf(data["queries"])
    with pytest.raises(ValueError, match=message):
        ad.MixtureAnchors([ad.EmpiricalAnchors(), ad.EmpiricalAnchors()], weights).fit([data["anchors"], data["style"]])
    mixture = ad.MixtureAnchors(models, [0.5, 0.5])
    with pytest.raises(ValueError, match=message):
        mixture.with_weights(weights)
    assert mixture.effective_weights_.tolist() == [0.5, 0.5]  # a refused update changes nothing


def test_mixture_components_must_share_scale_and_dimension(data):
    mixed_scales = ad.MixtureAnchors([ad.EmpiricalAnchors(scale=10).fit(data["anchors"]),
                                      ad.EmpiricalAnchors(scale=20).fit(data["style"])])
    with pytest.raises(ValueError, match=r"share one scale; got \[10.0, 20.0\]"):
        mixed_scales.cgf(data["queries"])
    mixed_dims = ad.MixtureAnchors([ad.EmpiricalAnchors().fit(data["anchors"]),
                                    ad.EmpiricalAnchors().fit(data["style"][:, :10])])
    with pytest.raises(ValueError, match=r"share one dimension"):
        mixed_dims.cgf(data["queries"])
    with pytest.raises(ValueError, match=r"at least one component"):
        ad.MixtureAnchors([]).fit([])
    with pytest.raises(ValueError, match=r"at least one component"):
        ad.MixtureAnchors([]).cgf(data["queries"])


def test_one_anchor_for_a_gaussian_needs_a_ridge(data):
    one = data["anchors"][:1]
    with pytest.raises(ValueError, match=r"at least 2 anchors.*shrinkage=<ridge>"):
        ad.GaussianAnchors().fit(one)
    with pytest.raises(ValueError, match=r"at least 2 anchors for a covariance, or a ridge > 0"):
        ad.GaussianAnchors(shrinkage=0.0).fit(one)
    # With a ridge, Sigma = ridge * I: a scaled squared Euclidean distance between unit embeddings.
    model = ad.GaussianAnchors(scale=10.0, shrinkage=0.5).fit(one)
    x, y = data["queries"], data["gallery"]
    expected = 0.5 * 0.5 * 100.0 * ((x[:, None, :] - y[None, :, :]) ** 2).sum(axis=2)
    np.testing.assert_allclose(model.divergence(x, y), expected, rtol=1e-10)


def test_one_anchor_for_the_empirical_model_is_a_point_mass(data):
    model = ad.EmpiricalAnchors().fit(data["anchors"][:1])
    np.testing.assert_allclose(model.divergence(data["queries"], data["gallery"]), 0.0, atol=1e-9)


def test_bad_shrinkage_rank_components_and_weights(data):
    with pytest.raises(ValueError, match=r"shrinkage must be 'ledoit-wolf' or a ridge >= 0"):
        ad.GaussianAnchors(shrinkage=-1.0).fit(data["anchors"])
    with pytest.raises(ValueError, match=r"rank=30 needs more anchors: N=8 .*rank <= 7"):
        ad.LatentGaussianAnchors(rank=30).fit(data["style"])
    with pytest.raises(ValueError, match=r"rank must be an integer >= 1"):
        ad.LatentEmpiricalAnchors(rank=0).fit(data["anchors"])
    with pytest.raises(ValueError, match=r"n_components=9 exceeds the 8 anchors"):
        ad.GaussianMixtureAnchors(n_components=9).fit(data["style"])
    with pytest.raises(ValueError, match=r"covariance_type must be one of"):
        ad.GaussianMixtureAnchors(covariance_type="banana").fit(data["anchors"])
    with pytest.raises(ValueError, match=r"weights has 3 entries but there are 60 anchors"):
        ad.EmpiricalAnchors(weights=[1, 2, 3]).fit(data["anchors"])
    with pytest.raises(ValueError, match=r"not all zero"):
        ad.EmpiricalAnchors(weights=np.zeros(60)).fit(data["anchors"])
    with pytest.raises(ValueError, match=r"alpha .* must be finite and >= 0"):
        ad.PosteriorGaussianAnchors(alpha=-1).fit(data["style"], data["anchors"])


def test_unfitted_model(data):
    with pytest.raises(ValueError, match=r"not fitted yet; call fit\(anchors\)"):
        ad.GaussianAnchors().divergence(data["queries"], data["gallery"])


def test_exclude_must_match_the_queries(fitted, data):
    with pytest.raises(ValueError, match=r"exclude must hold one row of gallery ids per query, shape \(9,\)"):
        ad.AnchorIndex(fitted, data["gallery"]).search(data["queries"], 3, exclude=np.arange(4))


def test_bad_device():
    with pytest.raises(ValueError, match=r"device='gpu0' is not a device torch knows"):
        ad.CosineIndex(np.eye(3), device="gpu0")


# ---- scikit-learn's words (its estimator checks match them: tests/test_sklearn_checks.py) --------------

def test_bad_anchors_are_refused_in_our_words_and_scikit_learns(data):
    """The checks fit on bad X and match substrings of check_array's messages; ours keep their own
    wording (what is wrong, and the fix) and hold those substrings too."""
    anchors = data["anchors"]
    cases = [
        (np.zeros((0, 24)), r"anchors is empty \(no rows\): found array with 0 sample\(s\) \(shape=\(0, 24\)\) while "
                            r"a minimum of 1 is required; pass at least one row"),
        (np.zeros((12, 0)), r"anchors is empty \(no columns\): found array with 0 feature\(s\) \(shape=\(12, 0\)\)"),
        (anchors + 1j, r"anchors must be embeddings.*Complex data not supported: got complex values.*x\.real"),
        (anchors[0], r"got shape \(24,\): expected 2D array, got 1D array instead\. Reshape your data: use "
                     r"anchors\[None, :\]"),
        (scipy.sparse.csr_matrix(anchors), r"sparse data was passed for anchors, but dense data is required\. Use "
                                           r"anchors\.toarray\(\)"),
        (scipy.sparse.csr_array(anchors), r"Use anchors\.toarray\(\)"),
        (torch.as_tensor(anchors).to_sparse(), r"sparse data was passed for anchors.*anchors\.to_dense\(\)"),
    ]
    for bad, message in cases:
        with pytest.raises(ValueError, match=message):
            ad.EmpiricalAnchors().fit(bad)


def test_objects_that_are_numbers_are_read_and_others_refused_as_both_type_and_value_errors(data):
    as_objects = data["anchors"].astype(object)
    np.testing.assert_array_equal(ad.GaussianAnchors().fit(as_objects).mean_.numpy(),
                                  ad.GaussianAnchors().fit(data["anchors"]).mean_.numpy())
    as_objects[0, 0] = {"foo": "bar"}
    with pytest.raises(TypeError, match=r"dtype object holding items that are not numbers \(float\(\) argument must "
                                        r"be a string or a real number, not 'dict'\)"):
        ad.EmpiricalAnchors().fit(as_objects)
    as_objects[0, 0] = None  # NumPy would read None as NaN
    with pytest.raises(ValueError, match=r"not numbers \(None\)\. Pass a float array"):
        ad.EmpiricalAnchors().fit(as_objects)
    as_objects[0, 0] = "0.5"
    with pytest.raises(ValueError, match=r"not text; encode the texts"):
        ad.EmpiricalAnchors().fit(as_objects)


def test_evaluation_refuses_other_dimensions_in_scikit_learns_words_too(fitted, data):
    with pytest.raises(ValueError, match=r"x has dimension 12 but the anchors have dimension 24; embed images and "
                                         r"anchor texts with the same model \(x has 12 features, but EmpiricalAnchors "
                                         r"is expecting 24 features as input\)\.$"):
        fitted.cgf(data["queries"][:, :12])
    with pytest.raises(ValueError, match=r"y has 3 features, but EmpiricalAnchors is expecting 24"):
        fitted.divergence(data["queries"], data["gallery"][:, :3])
    with pytest.raises(ValueError, match=r"Reshape your data"):
        fitted.grad_cgf(data["queries"][0])
    with pytest.raises(ValueError, match=r"sparse data was passed for x"):
        fitted.cgf(scipy.sparse.csr_matrix(data["queries"]))


def test_one_sample_or_one_feature_too_few_is_said_in_scikit_learns_words_too(data):
    with pytest.raises(ValueError, match=r"got 1 \(n_samples=1\)"):
        ad.GaussianAnchors().fit(data["anchors"][:1])
    with pytest.raises(ValueError, match=r"got 1 anchor \(n_samples=1\)"):
        ad.GaussianAnchors(shrinkage=0.0).fit(data["anchors"][:1])
    with pytest.raises(ValueError, match=r"got 5, all identical \(in d=1, n_features=1, every anchor normalises"):
        ad.GaussianAnchors().fit(np.arange(1.0, 6.0)[:, None])
    with pytest.raises(ValueError, match=r"rank=1 needs more anchors: N=1 anchors \(n_samples=1\) in d=24 "
                                         r"\(n_features=24\) span at most 0 .*at least two anchors in d >= 2"):
        ad.LatentEmpiricalAnchors(rank=1).fit(data["anchors"][:1])
    with pytest.raises(ValueError, match=r"rank=3 needs more dimensions: N=60 anchors \(n_samples=60\) in d=2 "
                                         r"\(n_features=2\) span at most 1 principal directions \(< d\); "
                                         r"use rank <= 1\.$"):
        ad.LatentGaussianAnchors(rank=3).fit(data["anchors"][:, :2])


def test_fits_of_more_than_one_array_name_what_is_missing(data):
    with pytest.raises(ValueError, match=r"a list of 2 \(N_k, d\) arrays; got one array of shape \(60, 24\)"):
        ad.MixtureAnchors([ad.EmpiricalAnchors(), ad.EmpiricalAnchors()]).fit(data["anchors"])
    with pytest.raises(ValueError, match=r"needs a prior anchor set besides the targets"):
        ad.PosteriorEmpiricalAnchors().fit(data["style"])
    # The first argument's faults are named before what is missing.
    with pytest.raises(ValueError, match=r"target_anchors is empty"):
        ad.PosteriorGaussianAnchors().fit(np.zeros((0, 24)))
    with pytest.raises(ValueError, match=r"anchors has NaN"):
        ad.FeedbackAnchors().fit(np.full((3, 24), np.nan))
    # A mixture's anchor sets may come as one (K, N, d) array.
    stacked = np.stack([data["anchors"][:8], data["style"]])
    mixture = ad.MixtureAnchors([ad.EmpiricalAnchors(), ad.EmpiricalAnchors()]).fit(stacked)
    assert mixture.n_features_in_ == 24
