"""scikit-learn's estimator checks (``sklearn.utils.estimator_checks``) over every anchor model, one
small instance each (README: "anchor models are scikit-learn estimators").

A model is fitted on its anchors, ``fit(X, y=None)`` with ``X`` ``(N, d)``: samples are anchors,
features the embedding's ``d`` dimensions. Three kinds are fitted on more than one array (the
mixture, the posteriors, FeedbackAnchors), and every check that fits them on the one ``X`` it
makes fails for that reason, listed below; so does the one check that fits the others on an
all-zero row. Every other check passes, but the array-API one, which scikit-learn skips unless
``SCIPY_ARRAY_API=1`` is set (then the five one-array models pass it). The failures are strict: a
listed check that passes fails this file, so each reason stays true.

The checks call the methods scikit-learn knows (``predict``, ``transform``, ``score``, ...); an
anchor model has none (its outputs are ``cgf``, ``grad_cgf`` and ``divergence``), so what they
test is ``fit``, its validation and the estimator protocol; tests/test_validation.py checks that
the evaluation methods refuse bad input in scikit-learn's words too.
"""
import warnings

from sklearn.utils.estimator_checks import parametrize_with_checks

import anchordiv as ad
import anchordiv.models

SCALE = 10.0

# rank 1 and two components: some checks fit on d = 2 and on 20 anchors.
ESTIMATORS = [
    ad.EmpiricalAnchors(scale=SCALE),
    ad.LatentEmpiricalAnchors(rank=1, scale=SCALE),
    ad.GaussianAnchors(scale=SCALE),
    ad.LatentGaussianAnchors(rank=1, scale=SCALE),
    ad.GaussianMixtureAnchors(n_components=2, scale=SCALE),
    ad.MixtureAnchors([ad.EmpiricalAnchors(scale=SCALE), ad.GaussianAnchors(scale=SCALE)]),
    ad.PosteriorEmpiricalAnchors(scale=SCALE),
    ad.PosteriorGaussianAnchors(scale=SCALE),
    ad.FeedbackAnchors(scale=SCALE),
]

ZERO_ROW = ("casts 3 * uniform(20, 5) to int64 and int32, which truncates a row to zeros: an anchor is a direction "
            "(rows are normalised to unit length) and an all-zero row has none, so fit refuses it by name "
            "(the float32 and float64 fits pass)")

# The checks that fit a model on one 2-D X of the check's own, and use the fit or expect it to succeed.
FIT_ON_ONE_X = [
    "check_fit_score_takes_y", "check_estimators_overwrite_params", "check_dont_overwrite_parameters",
    "check_estimators_fit_returns_self", "check_readonly_memmap_input", "check_n_features_in_after_fitting",
    "check_positive_only_tag_during_fit", "check_estimators_dtypes", "check_dtype_object",
    "check_pipeline_consistency", "check_estimators_nan_inf", "check_estimators_pickle",
    "check_f_contiguous_array_estimator", "check_methods_sample_order_invariance", "check_methods_subset_invariance",
    "check_fit2d_1sample", "check_fit2d_1feature", "check_dict_unchanged", "check_fit_idempotent",
    "check_fit_check_is_fitted", "check_n_features_in", "check_fit2d_predict1d",
    "check_array_api_input",  # skipped by scikit-learn unless SCIPY_ARRAY_API=1 is set
]
# The checks that expect the problem with X itself to be named (complex, empty, sparse): the models
# fitted on several arrays name it, all but the mixture, which first finds one array where it takes a list.
X_NAMED = ["check_complex_data", "check_estimators_empty_data_messages", "check_estimator_sparse_tag",
           "check_estimator_sparse_array", "check_estimator_sparse_matrix"]

MIXTURE = ("MixtureAnchors.fit takes one anchor set per component, a list of K (N_k, d) arrays that each component "
           "is fitted to, not one 2-D X, and refuses a single array by name")
POSTERIOR = ("a posterior is fitted to two anchor sets, the targets X and the prior anchor set (fit's second "
             "argument, prior_anchors); a check passes its 1-D label vector y there, which is refused as the prior")
FEEDBACK = ("FeedbackAnchors.fit learns its weights from marks: besides the anchors X it needs the queries, a gallery "
            "and the items marked like each query (fit's second to fourth arguments), which no check passes")

EXPECTED_FAILURES = {
    ad.EmpiricalAnchors: {"check_estimators_dtypes": ZERO_ROW},
    ad.LatentEmpiricalAnchors: {"check_estimators_dtypes": ZERO_ROW},
    ad.GaussianAnchors: {"check_estimators_dtypes": ZERO_ROW},
    ad.LatentGaussianAnchors: {"check_estimators_dtypes": ZERO_ROW},
    ad.GaussianMixtureAnchors: {"check_estimators_dtypes": ZERO_ROW},
    ad.MixtureAnchors: dict.fromkeys([*FIT_ON_ONE_X, *X_NAMED], MIXTURE),
    ad.PosteriorEmpiricalAnchors: dict.fromkeys(FIT_ON_ONE_X, POSTERIOR),
    ad.PosteriorGaussianAnchors: dict.fromkeys(FIT_ON_ONE_X, POSTERIOR),
    ad.FeedbackAnchors: dict.fromkeys(FIT_ON_ONE_X, FEEDBACK),
}


def expected_failures(estimator) -> dict[str, str]:
    """The checks ``estimator`` fails, with why (strict: each of them must fail)."""
    return EXPECTED_FAILURES[type(estimator)]


with warnings.catch_warnings():
    # Collecting the checks warns that the models do not inherit sklearn.base.BaseEstimator: by
    # design, so that importing anchordiv does not import scikit-learn (anchordiv.models.estimator).
    warnings.filterwarnings("ignore", message=r"Estimator \w+ does not inherit from `sklearn.base.BaseEstimator`")
    CHECKS = parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failures, xfail_strict=True)


@CHECKS
def test_scikit_learn_estimator_check(estimator, check):
    check(estimator)


def test_every_anchor_model_is_checked():
    """Each model the package exports is among the checked, so a new one cannot be left out."""
    exported = {getattr(anchordiv.models, name) for name in anchordiv.models.__all__}
    models = {kind for kind in exported if isinstance(kind, type) and issubclass(kind, ad.AnchorModel)}
    assert models - {ad.AnchorModel} == {type(estimator) for estimator in ESTIMATORS} == set(EXPECTED_FAILURES)
