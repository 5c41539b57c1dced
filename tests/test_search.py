"""Search returns exactly what brute-force sorting of the divergence returns."""
import numpy as np
import pytest
import torch

import anchordiv as ad
import anchordiv.search as search_module
from conftest import MODEL_NAMES
from rankings import assert_same_ranking


def assert_matches_brute_force(values, ids, full, k, ascending=True, tol=1e-8):
    """``values`` are the k best of each row of ``full`` (float64 data: the two routes agree to
    ``tol``) in order, up to ties, and ``ids`` point at them."""
    order = np.argsort(full if ascending else -full, axis=1, kind="stable")
    expected = (np.take_along_axis(full, order, axis=1), order)
    assert_same_ranking((values, ids), expected, atol=tol, rtol=tol, higher_is_closer=not ascending)
    np.testing.assert_allclose(np.take_along_axis(full, ids, axis=1), values, rtol=tol, atol=tol)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_anchor_index_equals_brute_force(data, models, name, reverse, device):
    model = models[name]
    full = model.divergence(data["queries"], data["gallery"], reverse=reverse)
    values, ids = ad.AnchorIndex(model, data["gallery"], reverse=reverse, device=device).search(data["queries"], 10)
    assert values.shape == ids.shape == (9, 10) and ids.dtype == np.int64
    assert_matches_brute_force(values, ids, full, 10)


def test_whole_gallery_order_equals_argsort(data):
    model = ad.EmpiricalAnchors(scale=12.0).fit(data["anchors"])
    full = model.divergence(data["queries"], data["gallery"])
    found = ad.AnchorIndex(model, data["gallery"]).search(data["queries"], 70)
    order = np.argsort(full, axis=1, kind="stable")
    # float64 data: the index and the brute force round differently by about 1e-15 of the values.
    assert_same_ranking(found, (np.take_along_axis(full, order, axis=1), order), atol=1e-9, rtol=1e-9)


def test_blocks_and_gallery_chunks_give_the_same_answer(data, monkeypatch):
    model = ad.GaussianMixtureAnchors(n_components=2, scale=12.0).fit(data["anchors"])
    index = ad.AnchorIndex(model, data["gallery"], reverse=True)
    expected = index.search(data["queries"], 7, exclude=np.arange(9))
    monkeypatch.setattr(search_module, "GALLERY_CHUNK", 16)  # 5 chunks, the last one short
    monkeypatch.setattr(search_module, "BLOCK_ELEMENTS", 40)  # 2 queries per block
    monkeypatch.setattr("anchordiv.models.base.BLOCK_ELEMENTS", 50)
    chunked = ad.AnchorIndex(model, data["gallery"], reverse=True).search(data["queries"], 7, exclude=np.arange(9))
    # The same float64 arithmetic in other block shapes: round-off of about 1e-15 of the values.
    assert_same_ranking(chunked, expected, atol=1e-12, rtol=1e-12)


def test_exclude_skips_the_query_itself(data):
    gallery = data["gallery"]
    model = ad.EmpiricalAnchors(scale=12.0).fit(data["anchors"])
    own = np.arange(5)
    values, ids = ad.AnchorIndex(model, gallery).search(gallery[:5], 3, exclude=own)
    assert not (ids == own[:, None]).any()
    full = model.divergence(gallery[:5], gallery)
    full[own, own] = np.inf
    assert_matches_brute_force(values, ids, full, 3)
    # Several ids per query, padded with -1.
    exclude = np.array([[0, 10], [1, -1], [2, 3], [3, -1], [4, 40]])
    _, ids = ad.AnchorIndex(model, gallery).search(gallery[:5], 60, exclude=exclude)
    for row, skipped in zip(ids, exclude):
        assert not set(row) & set(skipped[skipped >= 0])


def test_with_model_remixes_without_a_pass_over_the_anchors(data):
    style = ad.EmpiricalAnchors(scale=12.0).fit(data["style"])
    objects = ad.EmpiricalAnchors(scale=12.0).fit(data["anchors"])
    mixture = ad.MixtureAnchors([objects, style], [0.9, 0.1]).with_balance(data["gallery"])
    indexes = {reverse: ad.AnchorIndex(mixture, data["gallery"], reverse=reverse) for reverse in (False, True)}
    rows_seen = []
    for component in (objects, style):
        original = component.cgf_eta
        component.cgf_eta = lambda eta, original=original: rows_seen.append(len(eta)) or original(eta)
        original_grad = component.cgf_grad_eta
        component.cgf_grad_eta = lambda eta, original=original_grad: rows_seen.append(len(eta)) or original(eta)
    for p in (0.0, 0.3, 1.0):
        reweighted = mixture.with_weights([p, 1 - p])
        for reverse, index in indexes.items():
            rows_seen.clear()
            values, ids = index.with_model(reweighted).search(data["queries"], 5)
            # Each component sees the 9 query rows once, never the 70 gallery rows.
            assert rows_seen == [len(data["queries"])] * 2
            full = reweighted.divergence(data["queries"], data["gallery"], reverse=reverse)
            assert_matches_brute_force(values, ids, full, 5)


@pytest.mark.parametrize("block", [1, 3, 7, 70])
def test_running_top_k_folds_blocks_into_the_whole_top_k(block):
    """The one fold: blocks of any width, ids given or consecutive, give the top-k of the whole row,
    and no more than 2 k candidates per query are held between blocks."""
    from anchordiv.topk import RunningTopK, merge_top_k

    scores = torch.randn(4, 70, generator=torch.Generator().manual_seed(block), dtype=torch.float64)
    by_ids, by_start = RunningTopK(5), RunningTopK(5)
    for start in range(0, 70, block):
        part = scores[:, start:start + block]
        by_ids.add(part, torch.arange(start, start + part.shape[1]).expand(4, -1))
        by_start.add_block(part, start)
        assert by_ids.result()[0].shape[1] <= 2 * 5
    expected = torch.topk(scores, 5, dim=1)
    for found in (by_ids.result(), by_start.result()):
        assert torch.equal(found[0], expected.values) and torch.equal(found[1], expected.indices)
    halves = merge_top_k([scores[:, :30], scores[:, 30:]], [torch.arange(30).expand(4, -1),
                                                           torch.arange(30, 70).expand(4, -1)], 5)
    assert torch.equal(halves[0], expected.values) and torch.equal(halves[1], expected.indices)
    with pytest.raises(ValueError, match="before any block"):
        RunningTopK(5).result()


def test_a_long_scan_ranks_only_what_beats_the_kth_best_and_keeps_a_nan():
    """Past its first blocks a scan ranks only the columns that beat some query's k-th best so far:
    the same top-k as one top-k over the whole row (distinct scores: no ties), and a NaN late in the
    scan still reaches the result, where the indexes' check of their output finds it."""
    from anchordiv.topk import RunningTopK

    scores = torch.randn(3, 5000, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    scores[1, 4321] = float("nan")
    scan = RunningTopK(7)
    for start in range(0, 5000, 100):
        scan.add_block(scores[:, start:start + 100], start)
    values, ids = scan.result()
    expected = torch.topk(scores, 7, dim=1)
    torch.testing.assert_close(values, expected.values, equal_nan=True, rtol=0, atol=0)
    assert torch.equal(ids, expected.indices) and ids[1, 0] == 4321


def test_a_refitted_model_makes_its_index_refuse_to_answer(data):
    model = ad.EmpiricalAnchors(scale=12.0).fit(data["anchors"])
    mixture = ad.MixtureAnchors([model, ad.EmpiricalAnchors(scale=12.0).fit(data["style"])])
    indexes = [ad.AnchorIndex(model, data["gallery"]), ad.AnchorIndex(mixture, data["gallery"], reverse=True)]
    model.fit(data["style"])
    for index in indexes:
        with pytest.raises(ValueError, match=r"refitted after this AnchorIndex was built.*build a new"):
            index.search(data["queries"], 3)


@pytest.mark.parametrize("reverse", [False, True])
def test_weights_changed_in_place_make_the_index_refuse_not_answer_stale(data, reverse):
    mixture = ad.MixtureAnchors([ad.EmpiricalAnchors(scale=12.0), ad.GaussianAnchors(scale=12.0)],
                                [0.5, 0.5]).fit([data["anchors"], data["style"]])
    index = ad.AnchorIndex(mixture, data["gallery"], reverse=reverse)
    mixture.set_params(weights=[0.9, 0.1])
    with pytest.raises(ValueError, match=r"weights were changed in place after this AnchorIndex.*with_model"):
        index.search(data["queries"], 3)
    remixed = index.with_model(mixture).search(data["queries"], 3)
    fresh = ad.AnchorIndex(mixture, data["gallery"], reverse=reverse).search(data["queries"], 3)
    np.testing.assert_allclose(remixed[0], fresh[0], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(remixed[1], fresh[1])


def test_cosine_index_is_cosine(data):
    q, g = data["queries"], data["gallery"]
    values, ids = ad.CosineIndex(3 * g).search(q, 4)
    assert ad.CosineIndex.higher_is_closer and not ad.AnchorIndex.higher_is_closer
    assert_matches_brute_force(values, ids, q @ g.T, 4, ascending=False)


def test_iti_index_is_cosine_between_anchor_profiles(data):
    q, g, anchors = data["queries"], data["gallery"], data["anchors"]
    profile_q, profile_g = q @ anchors.T, g @ anchors.T
    profile_q /= np.linalg.norm(profile_q, axis=1, keepdims=True)
    profile_g /= np.linalg.norm(profile_g, axis=1, keepdims=True)
    values, ids = ad.ITIIndex(anchors, g).search(q, 6)
    assert_matches_brute_force(values, ids, profile_q @ profile_g.T, 6, ascending=False)


def test_tensor_queries_give_tensors_and_float32_works(data):
    model = ad.EmpiricalAnchors(scale=12.0).fit(data["anchors"])
    index = ad.AnchorIndex(model, torch.tensor(data["gallery"], dtype=torch.float32))
    values, ids = index.search(torch.tensor(data["queries"], dtype=torch.float32), 5)
    assert isinstance(values, torch.Tensor) and values.dtype == torch.float32 and ids.dtype == torch.int64
    full = model.divergence(data["queries"], data["gallery"])
    np.testing.assert_allclose(values.numpy(), np.sort(full, axis=1)[:, :5], rtol=1e-4, atol=1e-4)


def test_index_defaults_to_the_device_choice(data, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert ad.default_device() == torch.device("cpu")
    assert ad.CosineIndex(data["gallery"]).device == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert ad.default_device() == torch.device("cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("reverse", [False, True])
def test_cuda_equals_cpu(data, reverse):
    model = ad.GaussianMixtureAnchors(n_components=2, scale=12.0).fit(data["anchors"])
    cpu = ad.AnchorIndex(model, data["gallery"], reverse=reverse, device="cpu").search(data["queries"], 5)
    cuda = ad.AnchorIndex(model, data["gallery"], reverse=reverse, device="cuda").search(data["queries"], 5)
    # float64 on both devices, with their own kernels' order of summation.
    assert_same_ranking(cuda, cpu, atol=1e-9, rtol=1e-9)


# ---- one index, many readers: with_model and the purity of search ----------------------------------

P_GRID = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]


def two_component_mixture(data):
    """A fresh object/style mixture (not the session's shared models, which tests must not reweight)."""
    return ad.MixtureAnchors([ad.EmpiricalAnchors(scale=12.0), ad.EmpiricalAnchors(scale=12.0)],
                             [0.5, 0.5]).fit([data["anchors"], data["style"]])


def snapshot(index):
    """Each attribute's object, and a copy of every tensor's values (to catch in-place writes)."""
    def values(value):
        if isinstance(value, torch.Tensor):
            return value.clone()
        if isinstance(value, tuple):
            return tuple(values(item) for item in value)
        return None
    return {key: (value, values(value)) for key, value in vars(index).items()}


def assert_unchanged(index, before):
    after = vars(index)
    assert after.keys() == before.keys()
    for key, (value, copied) in before.items():
        assert after[key] is value, f"index.{key} was replaced"
        flat_now = after[key] if isinstance(after[key], tuple) else (after[key],)
        flat_then = copied if isinstance(copied, tuple) else (copied,)
        for now, then in zip(flat_now, flat_then):
            if isinstance(now, torch.Tensor):
                assert torch.equal(now, then), f"index.{key} was written in place"


def assert_same_results(got, expected):
    """A re-weighted copy against a fresh index at the same weights: float64 terms re-mixed in another
    order, equal to round-off (about 1e-15 of the values)."""
    assert_same_ranking(got, expected, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("reverse", [False, True])
def test_threads_sharing_one_index_each_get_their_own_weights(data, reverse):
    import threading
    from concurrent.futures import ThreadPoolExecutor

    queries, gallery = data["queries"], data["gallery"]
    mixture = two_component_mixture(data).with_balance(gallery)
    index = ad.AnchorIndex(mixture, gallery, reverse=reverse)
    before = index.search(queries, 10)
    expected = {p: ad.AnchorIndex(mixture.with_weights([p, 1 - p]), gallery, reverse=reverse).search(queries, 10)
                for p in P_GRID}
    barrier = threading.Barrier(len(P_GRID))

    def worker(p):
        barrier.wait(timeout=30)
        results = []
        for _ in range(25):
            results.append(index.with_model(index.model.with_weights([p, 1 - p])).search(queries, 10))
        return results

    with ThreadPoolExecutor(len(P_GRID)) as pool:
        outcomes = dict(zip(P_GRID, pool.map(worker, P_GRID)))
    for p, results in outcomes.items():
        assert len(results) == 25
        for result in results:
            assert_same_results(result, expected[p])
    assert index.model is mixture and mixture.weights == [0.5, 0.5]
    assert_same_results(index.search(queries, 10), before)


@pytest.mark.parametrize("reverse", [False, True])
def test_search_never_writes_to_the_index(data, reverse):
    queries, gallery = data["queries"], data["gallery"]
    mixture = two_component_mixture(data).with_balance(gallery)
    index = ad.AnchorIndex(mixture, gallery, reverse=reverse)
    before = snapshot(index)
    index.search(queries, 5)
    index.search(queries[:3], 7, exclude=np.arange(3))
    assert_unchanged(index, before)


@pytest.mark.parametrize("reverse", [False, True])
def test_with_model_refuses_other_fitted_components(data, reverse):
    index = ad.AnchorIndex(two_component_mixture(data), data["gallery"], reverse=reverse)
    for other in (two_component_mixture(data),  # same anchors, but fitted again
                  ad.MixtureAnchors([ad.EmpiricalAnchors(scale=12.0).fit(data["style"]), index.model.models[1]]),
                  ad.EmpiricalAnchors(scale=12.0).fit(data["anchors"])):
        with pytest.raises(ValueError, match=r"with_model"):
            index.with_model(other)


@pytest.mark.parametrize("reverse", [False, True])
def test_with_model_equals_a_fresh_index_and_leaves_the_original_alone(data, reverse):
    queries, gallery = data["queries"], data["gallery"]
    balanced = two_component_mixture(data).with_balance(gallery)
    index = ad.AnchorIndex(balanced, gallery, reverse=reverse)
    before, state = index.search(queries, 8), snapshot(index)
    for parametrisation in (balanced, balanced.with_balance(None)):
        for p in P_GRID:
            model = parametrisation.with_weights([p, 1 - p])
            served = index.with_model(model)
            assert served is not index and served.model is model and len(served) == len(index)
            assert_same_results(served.search(queries, 8), ad.AnchorIndex(model, gallery, reverse=reverse).search(queries, 8))
            assert_same_results(index.search(queries, 8), before)
    assert index.model is balanced and balanced.weights == [0.5, 0.5] and balanced.balanced
    assert_unchanged(index, state)


# ---- the Index protocol ------------------------------------------------------------------------------

def every_index(data):
    model = ad.GaussianAnchors(scale=12.0).fit(data["anchors"])
    return {
        "anchor": ad.AnchorIndex(model, data["gallery"]),
        "anchor-reverse": ad.AnchorIndex(model, data["gallery"], reverse=True),
        "cosine": ad.CosineIndex(data["gallery"]),
        "iti": ad.ITIIndex(data["anchors"], data["gallery"]),
    }


@pytest.mark.parametrize("name", ["anchor", "anchor-reverse", "cosine", "iti"])
def test_every_index_keeps_the_protocol(data, name):
    index = every_index(data)[name]
    queries = data["queries"]
    assert isinstance(index, ad.Index)
    assert isinstance(index.higher_is_closer, bool) and len(index) == 70
    for k in (0, len(index) + 1, True, 2.0, -1, None, "3"):
        with pytest.raises(ValueError, match=rf"must be an integer from 1 to {len(index)}\b"):
            index.search(queries, k)
    m = 3
    exclude = np.stack([(np.arange(m) + 7 * row) % len(index) for row in range(len(queries))])
    values, ids = index.search(queries, len(index) - m, exclude=exclude)
    assert values.shape == ids.shape == (len(queries), len(index) - m)
    for row, skipped in zip(ids.tolist(), exclude.tolist()):
        assert set(row) == set(range(len(index))) - set(skipped)
    order = np.diff(values, axis=1)
    assert (order <= 1e-12).all() if index.higher_is_closer else (order >= -1e-12).all()
    with pytest.raises(ValueError, match=rf"from 1 to {len(index) - m} .*{m} excluded per query"):
        index.search(queries, len(index) - m + 1, exclude=exclude)
    # -1 pads a row but still counts toward the width.
    padded = exclude.copy()
    padded[:, -1] = -1
    index.search(queries, len(index) - m, exclude=padded)
    # A numpy integer is an integer.
    np.testing.assert_array_equal(index.search(queries, np.int64(4))[1], index.search(queries, 4)[1])


def test_the_protocol_is_structural():
    class ListIndex:
        higher_is_closer = True

        def __len__(self):
            return 0

        def search(self, queries, k, exclude=None):
            return [], []

    assert isinstance(ListIndex(), ad.Index)
    assert not isinstance(object(), ad.Index)
