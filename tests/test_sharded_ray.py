"""engine="ray": ShardedAnchorIndex with its scanners in Ray actors on a small local Ray instance
returns what the in-memory AnchorIndex returns, and the slider and the store benchmark run on it.
Slow (a Ray instance and its actor processes start here), so few tests that share one instance."""
import numpy as np
import pytest

import anchordiv as ad
from anchordiv.benchmarks.memory import scanner_memory
from anchordiv.benchmarks.scale import ScaleConfig, run_scale_benchmark
from anchordiv.sharded import ShardedAnchorIndex
from anchordiv.store import GalleryStore
from rankings import assert_same_ranking, check_candidates

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def store(data, tmp_path_factory):
    return GalleryStore.from_array(data["gallery"], tmp_path_factory.mktemp("ray") / "s", shard_rows=13,
                                   dtype="float32")


def in_memory(model, store, reverse=False):
    return ad.AnchorIndex(model, store.rows(np.arange(len(store))).numpy(), reverse=reverse)


def assert_same(found, expected):
    """Ray tasks against the in-memory index over the same float32 rows: the same float32 arithmetic in
    other block shapes and processes (Ray's workers run one BLAS thread), rounded differently by up to
    d u ||g|| s per inner product (about 2e-5 here for ||g|| <= 1; the Gaussian models' are larger)."""
    assert_same_ranking(found, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["empirical", "gaussian", "gmm", "mixture", "mixture-balanced"])
def test_ray_engine_equals_the_in_memory_index(ray_instance, data, models, store, name):
    """Both directions, with and without exclusions, two tasks over six shards; with_model re-mixes
    in the tasks exactly as the local engine does."""
    model, queries = models[name], data["queries"]
    exclude = np.array([[0, 50], [1, -1], [69, 2], [3, -1], [4, 40], [5, 6], [-1, -1], [7, 12], [8, 13]])
    for reverse in (False, True):
        index = ShardedAnchorIndex(model, store, reverse=reverse, engine="ray", workers=2, block_rows=5)
        assert index.workers == 2 and len(index.map_scanners(scanner_memory)) == 2
        expected = in_memory(model, store, reverse)
        assert_same(index.search(queries, 10), expected.search(queries, 10))
        assert_same(index.search(queries, 9, exclude=exclude), expected.search(queries, 9, exclude=exclude))
        if name.startswith("mixture"):
            other = model.with_weights([0.85, 0.15])
            assert_same(index.with_model(other).search(queries, 7), in_memory(other, store, reverse).search(queries, 7))
            assert_same(index.search(queries, 7), expected.search(queries, 7))  # the original is unchanged


def test_ray_slider_is_the_local_slider(ray_instance, data, models, store):
    mixture = models["mixture-balanced"]
    ray_index = ShardedAnchorIndex(mixture, store, engine="ray", workers=2)
    local_index = ShardedAnchorIndex(mixture, store)
    query = data["queries"][3]
    ray_slider, local_slider = ray_index.slider(query, k=5, exclude=7), local_index.slider(query, k=5, exclude=7)
    memory = in_memory(mixture, store)
    check_candidates(ray_slider, memory)
    check_candidates(local_slider, memory)
    for p in np.random.default_rng(0).uniform(0, 1, 40):
        values, ids, _ = ray_slider.at(float(p))
        expected = in_memory(mixture.with_weights([p, 1 - p]), store).search(query[None, :], 5, exclude=[7])
        assert_same((values[None, :], ids[None, :]), expected)


def test_store_benchmark_on_ray(ray_instance, tmp_path):
    figures = run_scale_benchmark(ScaleConfig(gallery=3000, dim=16, shard_rows=1000, moves=20, queries=2,
                                              engines=("ray",), workers=2, store_dir=str(tmp_path)))
    ray = figures["ray"]
    assert "local" not in figures and ray["certified_rate"] >= 0.95
    assert ray["new_query_pass_seconds"] > 0 and len(ray["actor_rss_total_bytes_after_search"]) == 2


def test_a_damaged_shard_stops_the_ray_index_by_name(ray_instance, data, models, tmp_path):
    store = GalleryStore.from_array(data["gallery"], tmp_path / "s", shard_rows=13, dtype="float32")
    shard = store.directory / "shard-00004.npy"
    raw = bytearray(shard.read_bytes())
    raw[-1] ^= 0xFF
    shard.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="shard-00004.npy"):  # Ray re-raises the task's ValueError
        ShardedAnchorIndex(models["empirical"], GalleryStore.open(store.directory), engine="ray", workers=2)
