"""ShardedAnchorIndex over a GalleryStore returns what AnchorIndex returns on the store's rows."""
import numpy as np
import pytest
import torch

import anchordiv as ad
from anchordiv.search import Index
from anchordiv.sharded import ShardedAnchorIndex, ShardScanner
from anchordiv.store import GalleryStore
from rankings import assert_same_ranking

NAMES = ["empirical", "gaussian", "gmm", "mixture", "mixture-balanced"]


@pytest.fixture(scope="module")
def stores(data, tmp_path_factory):
    """The conftest gallery (70 rows) at several shard sizes, 1-row shards included."""
    folder = tmp_path_factory.mktemp("stores")
    return {rows: GalleryStore.from_array(data["gallery"], folder / f"s{rows}", shard_rows=rows, dtype="float32")
            for rows in (1, 13, 70)}


# ShardedAnchorIndex (float32 blocks of a few rows) against AnchorIndex over the same float32 rows in
# one block: the same float32 arithmetic in other shapes, which BLAS may round differently (d u ||g|| s
# per inner product, about 2e-5 at s = 12, d = 24 for ||g|| <= 1; the Gaussian models' gradients are larger).
TOL = dict(rtol=1e-4, atol=1e-4)
# kappa_k(eta_y) by blocks against one pass: float32 on terms up to about s = 12 (a log-sum-exp, or
# mu . eta + eta' Sigma eta / 2), so other shapes round it apart by a few ulps of those terms (ulp(12)
# = 9.5e-7), whatever kappa's own size: near 0 a relative tolerance alone fails (seen with --seeds).
KAPPA_TOL = dict(rtol=1e-6, atol=4e-6)


def assert_same(sharded, expected):
    assert_same_ranking(sharded, expected, **TOL)


def full_rows(store):
    return store.rows(np.arange(len(store))).numpy()


@pytest.mark.parametrize("shard_rows", [1, 13, 70])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("name", NAMES)
def test_equals_anchor_index(data, models, stores, name, reverse, shard_rows, device):
    """The sharded search on ``device`` against the in-memory index on the CPU."""
    store, model = stores[shard_rows], models[name]
    expected_index = ad.AnchorIndex(model, full_rows(store), reverse=reverse, device="cpu")
    index = ShardedAnchorIndex(model, store, reverse=reverse, block_rows=4, device=device)
    assert isinstance(index, Index) and len(index) == 70 and index.higher_is_closer is False
    queries = data["queries"]
    assert_same(index.search(queries, 10), expected_index.search(queries, 10))
    exclude = np.array([[0, 50], [1, -1], [69, 2], [3, -1], [4, 40], [5, 6], [-1, -1], [7, 12], [8, 13]])
    assert_same(index.search(queries, 9, exclude=exclude), expected_index.search(queries, 9, exclude=exclude))


def test_float16_store_and_tensor_queries(data, models, tmp_path):
    store = GalleryStore.from_array(data["gallery"], tmp_path / "s", shard_rows=16)
    model = models["gaussian"]
    queries = torch.as_tensor(data["queries"], dtype=torch.float32)
    values, ids = ShardedAnchorIndex(model, store, device="cpu").search(queries, 5)
    assert isinstance(values, torch.Tensor) and ids.dtype == torch.int64
    expected = ad.AnchorIndex(model, full_rows(store), device="cpu").search(queries, 5)
    assert_same((values.numpy(), ids.numpy()), (expected[0].numpy(), expected[1].numpy()))


@pytest.mark.parametrize("reverse", [False, True])
def test_with_model_equals_a_fresh_index(data, models, stores, reverse):
    mixture, store = models["mixture-balanced"], stores[13]
    base = ShardedAnchorIndex(mixture, store, reverse=reverse)
    before = base.search(data["queries"], 8)
    other = mixture.with_weights([0.9, 0.1])
    reweighted = base.with_model(other)
    assert_same(reweighted.search(data["queries"], 8), ShardedAnchorIndex(other, store, reverse=reverse)
                .search(data["queries"], 8))
    assert_same(reweighted.search(data["queries"], 8), ad.AnchorIndex(other, full_rows(store), reverse=reverse)
                .search(data["queries"], 8))
    assert_same(base.search(data["queries"], 8), before)  # the original index is unchanged
    with pytest.raises(ValueError, match="fitted components"):
        base.with_model(models["empirical"])


def test_component_kappa_and_eta_blocks(models, stores):
    mixture, store = models["mixture"], stores[13]
    index = ShardedAnchorIndex(mixture, store, block_rows=5)
    kappa = torch.cat(index.component_kappa)
    scanner = ShardScanner(mixture, store.directory, shards=[0, 1], block_rows=5)
    blocks = [block for number in scanner.shards for block in scanner.eta_blocks(number)]
    eta = torch.cat([block for _, block in blocks])
    assert kappa.shape == (70, 2) and eta.shape == (26, 24)
    assert [start for start, _ in blocks] == [0, 5, 10, 13, 18, 23]
    np.testing.assert_allclose(torch.cat(list(scanner.component_kappa().values())), kappa[:26], **KAPPA_TOL)
    for k, component in enumerate(mixture.models):
        np.testing.assert_allclose(kappa[:, k], component.cgf(full_rows(store)), **KAPPA_TOL)
    assert torch.cat(ShardedAnchorIndex(models["empirical"], store).component_kappa).shape == (70, 1)


def test_bad_requests_are_refused(data, models, stores):
    index = ShardedAnchorIndex(models["empirical"], stores[13])
    with pytest.raises(ValueError, match="from 1 to 70"):
        index.search(data["queries"], 71)
    with pytest.raises(ValueError, match="from 1 to 70"):
        index.search(data["queries"], 2.0)
    with pytest.raises(ValueError, match="from 1 to 69"):
        index.search(data["queries"], 70, exclude=np.arange(9))
    with pytest.raises(ValueError, match="outside -1..69"):
        index.search(data["queries"], 3, exclude=np.full(9, 70))
    with pytest.raises(ValueError, match="engine must be one of"):
        ShardedAnchorIndex(models["empirical"], stores[13], engine="spark")
    with pytest.raises(ValueError, match="for engine='ray'"):
        ShardedAnchorIndex(models["empirical"], stores[13], workers=2)
    with pytest.raises(ValueError, match="dimension"):
        ShardedAnchorIndex(ad.EmpiricalAnchors(scale=12.0).fit(np.eye(5)), stores[13])
    with pytest.raises(ValueError, match="GalleryStore"):
        ShardedAnchorIndex(models["empirical"], data["gallery"])


def test_a_refit_is_noticed(data, stores):
    anchors, style = data["anchors"], data["style"]
    mixture = ad.MixtureAnchors([ad.EmpiricalAnchors(scale=12.0), ad.EmpiricalAnchors(scale=12.0)],
                                [0.5, 0.5]).fit([anchors, style])
    index = ShardedAnchorIndex(mixture, stores[13])
    mixture.fit([style, anchors])
    with pytest.raises(ValueError, match="refitted"):
        index.search(data["queries"], 6)


def test_weights_changed_in_place_are_refused_not_served_stale(data, stores):
    mixture = ad.MixtureAnchors([ad.EmpiricalAnchors(scale=12.0), ad.EmpiricalAnchors(scale=12.0)],
                                [0.5, 0.5]).fit([data["anchors"], data["style"]])
    index = ShardedAnchorIndex(mixture, stores[13])
    mixture.set_params(weights=[0.9, 0.1])
    with pytest.raises(ValueError, match=r"weights were changed in place.*with_model"):
        index.search(data["queries"], 6)
    fresh = ShardedAnchorIndex(mixture, stores[13])
    np.testing.assert_array_equal(index.with_model(mixture).search(data["queries"], 6)[1],
                                  fresh.search(data["queries"], 6)[1])


@pytest.mark.parametrize("shard_rows", [1, 13, 70])
def test_gallery_terms_are_the_in_memory_index_terms(models, stores, shard_rows):
    """What the slider reads: block by block, and the candidates' rows, as AnchorIndex stores them."""
    store, model = stores[shard_rows], models["mixture"]
    expected = ad.AnchorIndex(model, full_rows(store), device="cpu")
    index = ShardedAnchorIndex(model, store, device="cpu", block_rows=4)
    # Each block's rows are a buffer the next block refills: copied as they come.
    blocks = [(start, factors[:, None] * rows, kappa)
              for start, rows, factors, kappa in ShardScanner(model, store, device="cpu", block_rows=4).iter_gallery_terms()]
    assert [block[0] for block in blocks] == sorted({block[0] for block in blocks})
    eta = torch.cat([block[1] for block in blocks])
    np.testing.assert_array_equal(eta, expected.gallery_eta)  # the same float32 eta the search uses
    np.testing.assert_allclose(torch.cat([block[2] for block in blocks]), expected.component_kappa, **KAPPA_TOL)
    ids = torch.tensor([69, 0, 13, 14, 13])
    eta, kappa = index.gallery_rows(ids)
    np.testing.assert_allclose(eta, expected.gallery_eta[ids], rtol=1e-6)
    np.testing.assert_allclose(kappa, expected.component_kappa[ids], **KAPPA_TOL)


def test_a_damaged_shard_is_named_and_never_searched(data, models, tmp_path):
    """A shard changed after the store was written (its header still valid, so open() accepts it)
    stops the index build with its name; the local and Ray engines share this check (ShardScanner)."""
    store = GalleryStore.from_array(data["gallery"], tmp_path / "s", shard_rows=13, dtype="float32")
    shard = store.directory / "shard-00002.npy"
    raw = bytearray(shard.read_bytes())
    raw[-5] ^= 0xFF  # one byte of the last row's data
    shard.write_bytes(bytes(raw))
    reopened = GalleryStore.open(store.directory)
    with pytest.raises(ValueError, match=r"shard-00002\.npy do\(es\) not match the sha256"):
        ShardedAnchorIndex(models["empirical"], reopened)
    with pytest.raises(ValueError, match="shard-00002"):
        ShardScanner(models["empirical"], reopened.directory, shards=[2])
    ShardScanner(models["empirical"], reopened.directory, shards=[0, 1, 3])  # the others are fine
