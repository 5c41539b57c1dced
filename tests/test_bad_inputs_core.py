"""A corpus of bad (and extreme) input for the math core: models of every registry kind, the three
indexes, the metrics and the explanations. Each case states its expected outcome: a ``ValueError``
whose message matches a pattern naming the problem (and the fix), or a finite, correct result.
Nothing may come back silently wrong (issue 12)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import anchordiv as ad
from anchordiv import explain, projection
from anchordiv._validation import unit_rows
from anchordiv.metrics import average_precision, mean_average_precision, retrieval_average_precision
from rankings import assert_same_ranking

KINDS = ad.list_anchor_models()
GAUSSIAN_KINDS = {"gaussian", "gmm", "latent-gaussian", "posterior-gaussian"}
SCALE = 12.0
OVERFLOW = r"overflowed to NaN or infinity at scale=1e\+20; use a smaller scale .* or float64 input \(this ran in float32\)"


@pytest.fixture(scope="module")
def small():
    """float64 anchors (two sets), queries and gallery in d=8: quick to fit for every kind."""
    rng = np.random.default_rng(3)
    centres = rng.standard_normal((4, 8))

    def cloud(n, spread=0.6):
        points = centres[rng.integers(0, 4, n)] + spread * rng.standard_normal((n, 8))
        return points / np.linalg.norm(points, axis=1, keepdims=True)

    return {"anchors": cloud(40), "style": cloud(10, 0.3), "queries": cloud(5), "gallery": cloud(30)}


def fit_kind(name, small, anchors=None, scale=SCALE, dtype=np.float64, **params):
    """A registry kind fitted to ``anchors`` (default: the small anchors; the style set as targets
    for the posterior kinds, with the anchors as their prior)."""
    kind = ad.anchor_model_kind(name)
    if anchors is None:
        anchors = small["style"] if kind.needs_prior else small["anchors"]
    prior = small["anchors"].astype(dtype) if kind.needs_prior else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return kind.fit(np.asarray(anchors).astype(dtype) if not isinstance(anchors, list) else anchors,
                        scale, prior=prior, **params)


def index_matches_brute_force(model, queries, gallery, k=5):
    """The AnchorIndex's top-k equals the k smallest brute-force divergences; every value finite."""
    divergences = model.divergence(queries, gallery)
    values, ids = ad.AnchorIndex(model, gallery, device="cpu").search(queries, k)
    assert np.all(np.isfinite(divergences)) and np.all(np.isfinite(values))
    np.testing.assert_allclose(values, np.sort(divergences, axis=1)[:, :k], rtol=1e-4,
                               atol=1e-6 * np.abs(divergences).max())
    np.testing.assert_allclose(np.take_along_axis(divergences, ids, axis=1), values, rtol=1e-4,
                               atol=1e-6 * np.abs(divergences).max())
    return True


# ---- every registry kind ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", KINDS)
def test_text_anchors_are_told_to_go_through_an_encoder(small, name):
    with pytest.raises(ValueError, match=r"anchors must be embeddings: real numbers of shape \(n, d\), not text; "
                                         r"encode the texts with an encoder first"):
        fit_kind(name, small, anchors=["dog", "cat", "bird"])


@pytest.mark.parametrize("name", KINDS)
def test_dimension_mismatch_is_named(small, name):
    model, _ = fit_kind(name, small)
    with pytest.raises(ValueError, match=r"x has dimension 5 but the anchors have dimension 8; embed"):
        model.divergence(small["queries"][:, :5], small["gallery"])
    with pytest.raises(ValueError, match=r"gallery has dimension 5 but the anchors have dimension 8"):
        ad.AnchorIndex(model, small["gallery"][:, :5], device="cpu")


@pytest.mark.parametrize("name", KINDS)
def test_nan_queries_are_refused(small, name):
    model, _ = fit_kind(name, small)
    broken = small["queries"].copy()
    broken[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"queries has NaN or infinite values in 1 row\(s\) \(first: \[2\]\)"):
        ad.AnchorIndex(model, small["gallery"], device="cpu").search(broken, 3)
    with pytest.raises(ValueError, match=r"y has NaN or infinite values .*remove or re-embed"):
        model.divergence(small["queries"], broken, reverse=True)


@pytest.mark.parametrize("name", KINDS)
def test_a_huge_float32_scale_is_finite_and_exact_or_refused(small, name):
    """At s = 1e20 in float32 the Gaussian CGFs (quadratic in s) overflow and are refused, naming the
    scale; the softmax CGFs (linear in s) stay finite, and the index still agrees with brute force."""
    queries, gallery = small["queries"].astype(np.float32), small["gallery"].astype(np.float32)
    if name in GAUSSIAN_KINDS:
        model, _ = fit_kind(name, small, scale=1e20, dtype=np.float32)
        with pytest.raises(ValueError, match=OVERFLOW):
            model.divergence(queries, gallery)
        with pytest.raises(ValueError, match=OVERFLOW):
            ad.AnchorIndex(model, gallery, device="cpu")
    else:
        model, _ = fit_kind(name, small, scale=1e20, dtype=np.float32)
        assert index_matches_brute_force(model, queries, gallery)


@pytest.mark.parametrize("name", KINDS)
def test_one_anchor_is_handled_or_refused(small, name):
    one = small["anchors"][:1]
    if name.startswith("latent"):
        with pytest.raises(ValueError, match=r"latent model needs at least two distinct anchors"):
            fit_kind(name, small, anchors=one)
        return
    model, notes = fit_kind(name, small, anchors=one)
    divergences = model.divergence(small["queries"], small["gallery"])
    assert np.all(np.isfinite(divergences))
    if name == "softmax":
        np.testing.assert_allclose(divergences, 0.0, atol=1e-9)  # a point mass: documented in the note
        assert "ranking is arbitrary" in notes[0]


@pytest.mark.parametrize("name", KINDS)
def test_copies_of_one_anchor_are_handled_like_one_anchor(small, name):
    copies = np.repeat(small["anchors"][:1], 20, axis=0)
    if name.startswith("latent"):
        with pytest.raises(ValueError, match=r"latent model needs at least two distinct anchors"):
            fit_kind(name, small, anchors=copies)
        return
    model, notes = fit_kind(name, small, anchors=copies)
    if name.startswith("posterior"):  # copies of a target weigh against the prior's pseudo-count alpha
        assert np.all(np.isfinite(model.divergence(small["queries"], small["gallery"])))
        return
    reference, _ = fit_kind(name, small, anchors=small["anchors"][:1])
    np.testing.assert_allclose(model.divergence(small["queries"], small["gallery"]),
                               reference.divergence(small["queries"], small["gallery"]), rtol=1e-9, atol=1e-12)


# ---- models, class by class ------------------------------------------------------------------------------

CLASS_CASES = {
    "text x": (lambda s, m: m.divergence("abc", s["queries"]), r"x must be embeddings.*not text; encode the texts"),
    "object array": (lambda s, m: ad.EmpiricalAnchors().fit(np.array([[1.0, None], [2.0, 3.0]], dtype=object)),
                     r"anchors must be embeddings.*dtype object .*np.asarray\(rows, dtype=np.float32\)"),
    "None": (lambda s, m: ad.GaussianAnchors().fit(None), r"anchors must be embeddings.*dtype object"),
    "ragged": (lambda s, m: ad.EmpiricalAnchors().fit([[1.0, 2.0], [3.0]]), r"could not read it as one array.*same length"),
    "complex": (lambda s, m: ad.EmpiricalAnchors().fit(s["anchors"] + 1j), r"complex values.*x.real"),
    "complex tensor": (lambda s, m: m.cgf(torch.ones(2, 8, dtype=torch.complex64)), r"x must be embeddings.*complex"),
    "booleans": (lambda s, m: ad.EmpiricalAnchors().fit(s["anchors"] > 0), r"got booleans\. Cast to float"),
    "bool tensor": (lambda s, m: m.grad_cgf(torch.ones(2, 8, dtype=torch.bool)), r"x must be embeddings.*booleans"),
    "empty": (lambda s, m: ad.GaussianAnchors().fit(np.zeros((0, 8))), r"anchors is empty .*at least one row"),
    "1-D": (lambda s, m: m.cgf(s["queries"][0]), r"x must be 2-D .*\[None, :\]"),
    "zero row": (lambda s, m: m.cgf(np.vstack([s["queries"], np.zeros(8)])), r"1 all-zero row\(s\) \(first: \[5\]\).*drop"),
    "bool scale": (lambda s, m: ad.EmpiricalAnchors(scale=True).fit(s["anchors"]), r"scale must be a finite positive number"),
    "text scale": (lambda s, m: ad.GaussianAnchors(scale="100").fit(s["anchors"]), r"scale must be a finite positive number"),
    "float rank": (lambda s, m: ad.LatentGaussianAnchors(rank=2.0).fit(s["anchors"]), r"rank must be an integer >= 1; got 2.0"),
    "text rank (registry)": (lambda s, m: ad.fit_anchor_model("latent-softmax", s["anchors"], SCALE, rank="3"),
                             r"rank must be an integer >= 1; got '3'"),
    "bool n_components (registry)": (lambda s, m: ad.fit_anchor_model("gmm", s["anchors"], SCALE, n_components=True),
                                     r"n_components must be an integer >= 1; got True"),
    "inf ridge": (lambda s, m: ad.GaussianAnchors(shrinkage=np.inf).fit(s["anchors"]), r"ridge >= 0 \(a finite number"),
    "text weights": (lambda s, m: ad.EmpiricalAnchors(weights=["a"] * 40).fit(s["anchors"]), r"weights must be real numbers, not text"),
    "text alpha": (lambda s, m: ad.PosteriorEmpiricalAnchors(alpha="x").fit(s["style"], s["anchors"]), r"alpha .* must be finite and >= 0"),
    "identical anchors, Ledoit-Wolf": (lambda s, m: ad.GaussianAnchors().fit(np.repeat(s["anchors"][:1], 5, 0)),
                                       r"at least 2 anchors to estimate a covariance; got 5, all identical.*shrinkage=<ridge>"),
    "identical anchors, no ridge": (lambda s, m: ad.GaussianAnchors(shrinkage=0.0).fit(np.repeat(s["anchors"][:1], 5, 0)),
                                    r"at least 2 anchors for a covariance, or a ridge > 0; got 5 identical anchors"),
    "identical anchors, latent": (lambda s, m: ad.LatentEmpiricalAnchors(rank=2).fit(np.repeat(s["anchors"][:1], 5, 0)),
                                  r"5 anchors are all identical.*two distinct anchors"),
    "more components than distinct anchors": (
        lambda s, m: ad.GaussianMixtureAnchors(n_components=3).fit(np.repeat(s["anchors"][:2], 4, 0)),
        r"n_components=3 exceeds the 2 distinct anchor\(s\) \(of 8.*n_components <= 2"),
    "identical targets, alpha=0": (lambda s, m: ad.PosteriorGaussianAnchors(alpha=0).fit(np.repeat(s["style"][:1], 3, 0), s["anchors"]),
                                   r"alpha=0 with a single \(distinct\) target anchor leaves no covariance"),
    "prior dimension": (lambda s, m: ad.PosteriorGaussianAnchors().fit(s["style"][:, :5], s["anchors"]),
                        r"target_anchors has dimension 5 but the prior_anchors have dimension 8"),
    "gaussian at 1e160 in float64": (lambda s, m: ad.GaussianAnchors(scale=1e160).fit(s["anchors"]).cgf(s["queries"]),
                                     r"CGF kappa overflowed .*scale=1e\+160; use a smaller scale \(CLIP's is about 100\)\.$"),
    "mixture at 1e20 in float32": (
        lambda s, m: ad.MixtureAnchors([ad.EmpiricalAnchors(scale=1e20), ad.GaussianAnchors(scale=1e20)]).fit(
            [s["anchors"].astype(np.float32), s["style"].astype(np.float32)]).divergence(
            s["queries"].astype(np.float32), s["gallery"].astype(np.float32)), OVERFLOW),
    "reverse index at 1e160": (
        lambda s, m: ad.AnchorIndex(ad.GaussianAnchors(scale=1e160).fit(s["anchors"]), s["gallery"], reverse=True),
        r"overflowed to NaN or infinity at scale=1e\+160"),
}


@pytest.mark.parametrize("case", list(CLASS_CASES))
def test_bad_model_input_raises_a_value_error_naming_it(small, case):
    function, pattern = CLASS_CASES[case]
    model = ad.EmpiricalAnchors(scale=SCALE).fit(small["anchors"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=pattern):
            function(small, model)


def test_duplicate_anchors_count_twice_in_the_empirical_model(small):
    anchors = small["anchors"]
    doubled = ad.EmpiricalAnchors(scale=SCALE).fit(np.vstack([anchors, anchors[:3]]))
    weights = np.ones(len(anchors))
    weights[:3] = 2
    weighted = ad.EmpiricalAnchors(scale=SCALE, weights=weights).fit(anchors)
    np.testing.assert_allclose(doubled.divergence(small["queries"], small["gallery"]),
                               weighted.divergence(small["queries"], small["gallery"]), rtol=1e-9, atol=1e-12)


def test_a_gaussian_at_1e30_in_float64_is_finite_and_exact(small):
    model = ad.GaussianAnchors(scale=1e30).fit(small["anchors"])
    delta = 1e30 * (small["queries"][:, None, :] - small["gallery"][None, :, :])
    expected = 0.5 * np.einsum("qgd,de,qge->qg", delta, model.covariance_.numpy(), delta)
    np.testing.assert_allclose(model.divergence(small["queries"], small["gallery"]), expected, rtol=1e-6)
    assert index_matches_brute_force(model, small["queries"], small["gallery"])


@pytest.mark.parametrize("value", [1e38, 3e38, 1e-30, 1e-37])
def test_huge_and_tiny_float32_rows_are_normalised(small, value):
    """A float32 row of 1e38 used to become a zero vector (its norm overflowed); now every finite,
    non-zero row keeps its direction, whatever its magnitude."""
    directions = small["anchors"][:6].astype(np.float32)
    scaled = (directions / np.abs(directions).max(axis=1, keepdims=True) * np.float32(value)).astype(np.float32)
    model = ad.EmpiricalAnchors(scale=SCALE).fit(scaled)
    reference = ad.EmpiricalAnchors(scale=SCALE).fit(directions)
    np.testing.assert_allclose(model.anchors_.numpy(), reference.anchors_.numpy(), rtol=1e-5, atol=1e-6)
    index = ad.CosineIndex(scaled, device="cpu")
    # Rows of any magnitude normalise to the same unit rows within float32 round-off (a few 1e-8).
    assert_same_ranking(index.search(directions, 3), ad.CosineIndex(directions, device="cpu").search(directions, 6),
                        atol=1e-6, higher_is_closer=True)


# ---- numpy integers wherever Python integers are accepted ------------------------------------------------

def test_numpy_integers_are_accepted_as_counts(small):
    queries, gallery = small["queries"], small["gallery"]
    model, _ = fit_kind("latent-gaussian", small, rank=np.int64(3))
    assert model.rank == 3 and type(model.rank) is int
    model, _ = fit_kind("gmm", small, n_components=np.int32(2))
    assert model.n_components == 2
    gmm = ad.GaussianMixtureAnchors(n_components=np.int64(2), max_iter=np.int64(50), scale=SCALE).fit(small["anchors"])
    assert gmm.means_.shape == (2, 8)
    index = ad.CosineIndex(gallery, device="cpu")
    np.testing.assert_array_equal(index.search(queries, np.int64(4))[1], index.search(queries, 4)[1])
    labels = np.arange(30) % 3
    np.testing.assert_allclose(retrieval_average_precision(index, queries, np.arange(5) % 3, labels, batch_size=np.int64(2)),
                               retrieval_average_precision(index, queries, np.arange(5) % 3, labels))
    scores, relevant = np.random.default_rng(0).random((4, 6)), np.eye(4, 6, dtype=bool)
    assert mean_average_precision(scores, relevant, n_bootstrap=np.int64(20)).mean == \
        mean_average_precision(scores, relevant, n_bootstrap=20).mean
    indices, _ = projection.knn_graph(index, torch.as_tensor(gallery), n_neighbors=np.int64(4), batch=np.int64(7))
    assert indices.shape == (30, 4)
    assert projection.sample_ids(np.int64(30), np.int64(10), np.int64(1)).shape == (10,)


# ---- indexes ----------------------------------------------------------------------------------------------

def _indexes(small):
    model = ad.EmpiricalAnchors(scale=SCALE).fit(small["anchors"])
    return {"anchor": ad.AnchorIndex(model, small["gallery"], device="cpu"),
            "cosine": ad.CosineIndex(small["gallery"], device="cpu"),
            "iti": ad.ITIIndex(small["anchors"], small["gallery"], device="cpu")}


INDEX_CASES = {
    "text queries": (lambda s: ["a cat"], r"queries must be embeddings.*not text; encode the texts", {}),
    "nan queries": (lambda s: np.where(np.eye(5, 8) > 0, np.inf, s["queries"]), r"queries has NaN or infinite values in 5 row", {}),
    "dimension": (lambda s: s["queries"][:, :5], r"queries has dimension 5 but the (gallery embeddings|anchors) have dimension 8", {}),
    "float k": (lambda s: s["queries"], r"k=2.0 must be an integer from 1 to 30", {"k": 2.0}),
    "bool k": (lambda s: s["queries"], r"k=True must be an integer", {"k": True}),
    "exclude out of range": (lambda s: s["queries"], r"exclude holds ids outside -1\.\.29 \(min 0, max 30\)",
                             {"exclude": np.array([0, 1, 2, 3, 30])}),
    "exclude below -1": (lambda s: s["queries"], r"exclude holds ids outside -1\.\.29 \(min -2", {"exclude": -2 * np.ones(5, int)}),
    "float exclude": (lambda s: s["queries"], r"exclude must hold integer gallery ids", {"exclude": np.arange(5.0)}),
    "complex queries": (lambda s: s["queries"] * 1j, r"queries must be embeddings.*complex", {}),
}


@pytest.mark.parametrize("kind", ["anchor", "cosine", "iti"])
@pytest.mark.parametrize("case", list(INDEX_CASES))
def test_bad_index_input_raises_a_value_error_naming_it(small, kind, case):
    queries, pattern, kwargs = INDEX_CASES[case]
    index = _indexes(small)[kind]
    with pytest.raises(ValueError, match=pattern):
        index.search(queries(small), kwargs.get("k", 3), kwargs.get("exclude"))


@pytest.mark.parametrize("kind", ["cosine", "iti"])
def test_baseline_indexes_refuse_text_and_mismatched_galleries(small, kind):
    with pytest.raises(ValueError, match=r"gallery must be embeddings.*not text"):
        ad.CosineIndex(["a", "b"]) if kind == "cosine" else ad.ITIIndex(small["anchors"], ["a", "b"])
    if kind == "iti":
        with pytest.raises(ValueError, match=r"gallery has dimension 5 but the anchors have dimension 8"):
            ad.ITIIndex(small["anchors"], small["gallery"][:, :5])


# ---- metrics ----------------------------------------------------------------------------------------------

class _NaNIndex:
    higher_is_closer = True

    def __len__(self):
        return 4

    def search(self, queries, k, exclude=None):
        return np.full((len(queries), k), np.nan), np.tile(np.arange(k), (len(queries), 1))


METRIC_CASES = {
    "text scores": (lambda s: average_precision(["a", "b"], [1, 0]), r"scores must be real numbers, not text"),
    "graded relevance": (lambda s: average_precision([0.3, 0.2], [0.5, 1]), r"relevant must hold True/False \(or 0/1\)"),
    "text relevance": (lambda s: average_precision([0.3, 0.2], ["yes", "no"]), r"relevant must hold True/False"),
    "nan scores": (lambda s: average_precision([np.nan, 1.0], [1, 0]), r"NaN or infinite"),
    "zero bootstrap": (lambda s: mean_average_precision([[1.0, 0.0]], [[1, 0]], n_bootstrap=0), r"n_bootstrap must be an integer >= 1"),
    "float bootstrap": (lambda s: mean_average_precision([[1.0, 0.0]], [[1, 0]], n_bootstrap=2.5), r"n_bootstrap must be an integer >= 1; got 2.5"),
    "text confidence": (lambda s: mean_average_precision([[1.0, 0.0]], [[1, 0]], confidence="95%"), r"confidence must be in \(0, 1\)"),
    "zero batch": (lambda s: retrieval_average_precision(ad.CosineIndex(s["gallery"]), s["queries"], np.zeros(5), np.zeros(30), batch_size=0),
                   r"batch_size must be an integer >= 1; got 0"),
    "gallery labels too long": (lambda s: retrieval_average_precision(ad.CosineIndex(s["gallery"]), s["queries"], np.zeros(5), np.zeros(31)),
                                r"31 gallery label\(s\) for a gallery of 30; pass one label per query and one per gallery item"),
    "query labels too short": (lambda s: retrieval_average_precision(ad.CosineIndex(s["gallery"]), s["queries"], np.zeros(4), np.zeros(30)),
                               r"got 4 query label\(s\) for 5 queries"),
    "text queries": (lambda s: retrieval_average_precision(ad.CosineIndex(s["gallery"]), ["cat"], np.zeros(1), np.zeros(30)),
                     r"queries must be embeddings.*not text"),
    "index returns NaN": (lambda s: retrieval_average_precision(_NaNIndex(), np.zeros((2, 3)), np.zeros(2), np.zeros(4)),
                          r"the index returned NaN or infinite scores; check the embeddings and the model's scale"),
    "projection n_neighbors": (lambda s: projection.knn_graph(ad.CosineIndex(s["gallery"]), torch.as_tensor(s["gallery"]), n_neighbors=4.5),
                               r"n_neighbors must be an integer >= 1; got 4.5"),
    "projection batch": (lambda s: projection.knn_graph(ad.CosineIndex(s["gallery"]), torch.as_tensor(s["gallery"]), batch=0),
                         r"batch must be an integer >= 1; got 0"),
    "sample limit": (lambda s: projection.sample_ids(10, True), r"limit must be an integer >= 1; got True"),
}


@pytest.mark.parametrize("case", list(METRIC_CASES))
def test_bad_metric_input_raises_a_value_error_naming_it(small, case):
    function, pattern = METRIC_CASES[case]
    with pytest.raises(ValueError, match=pattern):
        function(small)


# ---- explanations -----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def explained(small):
    anchors, style = torch.as_tensor(small["anchors"]), torch.as_tensor(small["style"])
    model = ad.MixtureAnchors([ad.EmpiricalAnchors(scale=SCALE), ad.GaussianAnchors(scale=SCALE)]).fit([anchors, style])
    texts = [[f"object {i}" for i in range(40)], [f"style {i}" for i in range(10)]]
    return model, [anchors, style], texts, ["objects", "styles"]


EXPLAIN_CASES = {
    "text query": (lambda s, m, a, t, n: explain.explain_pair(m, a, t, n, "a cat", s["gallery"][0]),
                   r"query must be embeddings.*not text; encode the texts"),
    "two queries": (lambda s, m, a, t, n: explain.explain_pair(m, a, t, n, s["queries"][:2], s["gallery"][0]),
                    r"query must be one embedding of shape \(d,\) or \(1, d\); got shape \(2, 8\)"),
    "nan neighbour": (lambda s, m, a, t, n: explain.explain_pair(m, a, t, n, s["queries"][0], np.full(8, np.nan)),
                      r"neighbour has NaN or infinite values"),
    "texts per anchor": (lambda s, m, a, t, n: explain.tilted_distribution(m, a, [t[0], t[1][:3]], n, s["queries"][0]),
                         r"component 1 has 10 anchors but 3 texts"),
    "one anchor set short": (lambda s, m, a, t, n: explain.tilted_distribution(m, a[:1], t[:1], n[:1], s["queries"][0]),
                             r"got 1 anchor sets, 1 text lists and 1 names for a model with 2 component\(s\)"),
    "anchor dimension": (lambda s, m, a, t, n: explain.tilted_distribution(m, [a[0], a[1][:, :5]], t, n, s["queries"][0]),
                         r"component_anchors\[1\] has dimension 5 but the model's embeddings have dimension 8"),
    "kl over other anchors": (lambda s, m, a, t, n: explain.kl_divergence(
        explain.tilted_distribution(m, a, t, n, s["queries"][0]),
        explain.tilted_distribution(ad.EmpiricalAnchors(scale=SCALE).fit(a[0]), a[:1], t[:1], n[:1], s["queries"][0])),
        r"p and q must be over the same anchors; got 50 and 40"),
}


@pytest.mark.parametrize("case", list(EXPLAIN_CASES))
def test_bad_explain_input_raises_a_value_error_naming_it(small, explained, case):
    function, pattern = EXPLAIN_CASES[case]
    with pytest.raises(ValueError, match=pattern):
        function(small, *explained)


def test_explain_on_good_input_is_finite(small, explained):
    query_tilt, _, divergence, shown = explain.explain_pair(*explained, small["queries"][0], small["gallery"][0])
    assert np.isfinite(divergence) and np.isfinite(shown) and query_tilt.probabilities.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_ordinary_rows_are_normalised_exactly_as_before(dtype):
    """Only rows whose norm over- or underflows take the rescaled path; the rest are bit-identical to
    the one-pass ``x * (scale / ||x||)``."""
    rows = torch.as_tensor(np.random.default_rng(0).standard_normal((50, 7)) * 10.0 ** np.arange(-5, 5)[:, None].repeat(5, 0),
                           dtype=dtype)
    expected = rows * (12.0 / torch.linalg.vector_norm(rows, dim=1, keepdim=True))
    assert torch.equal(unit_rows(rows, "x", 12.0), expected)
