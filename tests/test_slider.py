"""The certified p slider (docs/design.md §10): exact whenever certified, exact on fallback,
certified for almost every p at the default grid, and clear errors where it does not apply."""
import numpy as np
import pytest
import torch

import anchordiv as ad
from anchordiv.slider import GridPass, SliderPath, log_sigmoid, mixture_scores, query_path
from anchordiv.store import GalleryStore

from conftest import clustered
from rankings import assert_same_ranking, check_candidates

SCALE = 20.0
D, G, K = 32, 4000, 10
# A float32 gallery against a float64 brute force on float64 rows: eta rounded to float32 (|dD| <=
# 2 u s = 2.4e-6 for ||grad kappa|| <= 1) and, on a fallback, the float32 search (about 2 d u ||g|| s:
# 7.6e-5 for ||g|| <= 1, a few times that for the Gaussian component's gradients); 1e-3 stays above
# that worst case (docs/design.md §9).
TOL = dict(rtol=1e-4, atol=1e-3)
# A slider against the float32 search (or two sliders, when one falls back): the search's rounding,
# bounded by 2 d u ||g|| s = 7.6e-5 ||g|| with ||g|| up to about 5 for the Gaussian component;
# measured at most 1.4e-5 over 21 seeded worlds (pytest --seeds 20), so 5e-5 leaves room for other CPUs.
SLIDER_TOL = dict(rtol=1e-5, atol=5e-5)


@pytest.fixture(scope="module")
def world(seed):
    """A broad object set (200 anchors) and a tight style set (6 anchors near 3 centres), float32."""
    rng = np.random.default_rng(7 + seed)
    centres = rng.standard_normal((8, D))
    objects = clustered(rng, 200, centres, 0.8).astype(np.float32)
    styles = clustered(rng, 6, centres[:3], 0.3).astype(np.float32)
    gallery = clustered(rng, G, centres, 0.7).astype(np.float32)
    return {"objects": objects, "styles": styles, "gallery": gallery}


@pytest.fixture(scope="module")
def mixtures(world):
    """One mixture per parametrisation, components an empirical and a Gaussian model."""
    a = ad.EmpiricalAnchors(scale=SCALE).fit(world["objects"])
    b = ad.GaussianAnchors(scale=SCALE).fit(world["styles"])
    literal = ad.MixtureAnchors([a, b], [0.5, 0.5])
    return {"literal": literal, "balanced": literal.with_balance(world["gallery"]),
            "calibrated": literal.with_calibration(world["gallery"])}


def brute_force(mixture, gallery, query_id, p):
    """The whole ranking at p in float64, the query excluded: (sorted values, their ids, the row)."""
    model = mixture.with_weights([p, 1 - p])
    row = model.divergence(gallery[query_id:query_id + 1].astype(np.float64), gallery.astype(np.float64))[0]
    row[query_id] = np.inf
    order = np.argsort(row, kind="stable")[:-1]
    return row[order], order, row


def check_exact(values, ids, mixture, gallery, query_id, p, k=K):
    expected_values, expected_ids, row = brute_force(mixture, gallery, query_id, p)
    assert values.shape == ids.shape == (k,) and query_id not in ids
    np.testing.assert_allclose(row[ids], values, **TOL)              # each id carries its own value
    assert_same_ranking((values, ids), (expected_values, expected_ids), **TOL, context=f"p = {p:.4f}")


def certificate_margin(slider, p):
    """What the certificate tests at p: the k-th best candidate's f (float64) minus the chord of the
    grid thresholds (certified when it is at least 0, up to a 1e-10 relative slack)."""
    log_odds = slider.log_odds(p)
    scores = mixture_scores(log_sigmoid(log_odds), log_sigmoid(-log_odds), slider._a, slider._b, slider._alpha,
                            slider._beta)
    return float(np.sort(scores)[-slider.k] - slider.bound(log_odds))


@pytest.mark.parametrize("kind", ["literal", "balanced", "calibrated"])
def test_exact_and_certified_for_random_p(world, mixtures, kind, device):
    gallery, mixture = world["gallery"], mixtures[kind]
    index = ad.AnchorIndex(mixture, gallery, device=device)
    rng = np.random.default_rng(1)
    certified = []
    for query_id in rng.choice(G, 4, replace=False):
        slider = index.slider(gallery[query_id], k=K, exclude=int(query_id))
        for p in np.concatenate([rng.uniform(0, 1, 50), [0.0, 1.0]]):
            values, ids, ok = slider.at(float(p))
            check_exact(values, ids, mixture, gallery, int(query_id), float(p))
            certified.append(ok)
    rate = np.mean(certified)
    print(f"{kind}: certified {rate:.3f} of {len(certified)} moves")
    assert rate >= 0.95


def test_matches_the_index_search_and_keeps_the_input_type(world, mixtures):
    gallery, mixture = world["gallery"], mixtures["balanced"]
    index = ad.AnchorIndex(mixture, gallery, device="cpu")
    slider = index.slider(torch.as_tensor(gallery[5]), k=K, exclude=5)
    for p in (0.0, 0.3, 0.77, 1.0):
        values, ids, _ = slider.at(p)
        assert isinstance(values, torch.Tensor) and values.dtype == torch.float32 and ids.dtype == torch.long
        search = index.with_model(mixture.with_weights([p, 1 - p])).search(torch.as_tensor(gallery[5:6]), 2 * K,
                                                                         exclude=[5])
        assert_same_ranking((values, ids), search, **SLIDER_TOL, context=f"slider against search at p = {p}")
    values, ids, _ = index.slider(gallery[5], k=K).at(0.5)               # no exclusion: the query is first
    assert isinstance(values, np.ndarray) and ids[0] == 5 and abs(values[0]) < 1e-3


@pytest.mark.parametrize("options", [dict(candidates=1), dict(candidates=K, grid=1), dict(candidates=K + 1, grid=[0.5])])
def test_a_failing_certificate_falls_back_exactly(world, mixtures, options):
    gallery, mixture = world["gallery"], mixtures["literal"]
    slider = ad.AnchorIndex(mixture, gallery, device="cpu").slider(gallery[11], k=K, exclude=11, **options)
    outcomes = []
    for p in np.random.default_rng(2).uniform(0, 1, 25):
        values, ids, ok = slider.at(float(p))
        check_exact(values, ids, mixture, gallery, 11, float(p))
        outcomes.append(ok)
    if options.get("candidates") == 1:                                   # fewer than k candidates: never certified
        assert slider.n_candidates < 3 * K and not any(outcomes)
    elif options.get("grid") == 1:                                       # k' = k on a 3-point grid: some p fail
        assert not all(outcomes)


def test_every_item_a_candidate_is_always_certified(world, mixtures):
    gallery, mixture = world["gallery"][:300], mixtures["literal"]
    slider = ad.AnchorIndex(mixture, gallery, device="cpu").slider(gallery[0], k=K, exclude=0, candidates=400)
    assert slider.n_candidates == 299
    for p in (0.0, 0.01, 0.5, 1.0):
        values, ids, ok = slider.at(p)
        assert ok
        check_exact(values, ids, mixture, gallery, 0, p)


@pytest.mark.parametrize("lib", [np, torch])
def test_scores_equal_their_logaddexp_form_at_any_scale(lib):
    """One logarithm per item and point, and logaddexp where the sum would leave float64's normal
    range: f equals b + r (a - b) - logaddexp(log r + alpha, log(1 - r) + beta) either way."""
    rng = np.random.default_rng(5)
    a, b = rng.normal(0, 5, (2, 1, 40))
    for spread in (8.0, 900.0):  # a scale near 10; a scale of hundreds, gaps past exp's range
        alpha, beta = rng.normal(0, spread, (2, 1, 40))
        log_odds = np.r_[-np.inf, np.linspace(-850, 850, 61), np.inf][:, None]
        log_r, log_1mr = log_sigmoid(log_odds), log_sigmoid(-log_odds)
        expected = b + np.exp(log_r) * (a - b) - np.logaddexp(log_r + alpha, log_1mr + beta)
        args = [log_r, log_1mr, a, b, alpha, beta]
        got = mixture_scores(*(args if lib is np else [torch.from_numpy(x) for x in args]), lib=lib)
        got = np.asarray(got)
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())


def test_the_passs_float32_screen_keeps_every_row_the_float64_test_keeps():
    """Rows crowded at the floor, at a large scale: the screen at the pass's precision may keep more
    than the float64 test, never fewer, and still drops the rows far below."""
    rng = np.random.default_rng(11)
    n = 20_000
    job = GridPass(grads=torch.zeros(4, 2, dtype=torch.float64), kappa_x=np.array([310.25, -207.5]),
                   log_r=log_sigmoid(np.array([-np.inf, -1.0, 0.0, 1.0, np.inf])),
                   log_1mr=log_sigmoid(-np.array([-np.inf, -1.0, 0.0, 1.0, np.inf])), exclude=None, kept=8)
    products = torch.from_numpy(rng.normal(0, 300, (2, n)).astype(np.float32))
    factors = torch.from_numpy(rng.uniform(0.9, 1.1, n).astype(np.float32))
    kappa = torch.from_numpy(rng.normal(0, 300, (n, 2)).astype(np.float32))
    kappa_x = torch.from_numpy(job.kappa_x)
    grid = [torch.from_numpy(values)[:, None] for values in (job.log_r, job.log_1mr)]
    terms = GridPass.block_terms(products, factors, kappa, kappa_x)
    at_bounds = torch.maximum(terms[1] - terms[3], terms[0] - terms[2])
    for quantile in (0.5, 0.99, 0.9999):  # the screen drops the rows far below
        floor = torch.full((5,), float(torch.quantile(at_bounds, quantile)), dtype=torch.float64)
        kept = set(GridPass.live_rows(terms, grid, floor).tolist())
        screened = set(job.screen(products, factors, kappa, float(floor.min())).tolist())
        assert kept <= screened and len(screened) < (1.0 - quantile) * n + 50
    for row in rng.choice(n, 200, replace=False):  # a floor just under one row: within float32 rounding
        floor = torch.full((5,), float(at_bounds[row]) - 1e-6, dtype=torch.float64)
        assert row in set(job.screen(products, factors, kappa, float(floor.min())).tolist())


def test_scores_are_convex_in_r_and_r_is_monotone_in_p(world, mixtures):
    rng = np.random.default_rng(3)
    a, b = rng.normal(0, 5, (2, 50, 1))
    alpha, beta = rng.normal(0, 8, (2, 50, 1))
    log_odds = np.linspace(-12, 12, 241)  # beyond, 1 - r is too close to round-off for a chord test
    r = np.exp(log_sigmoid(log_odds))
    f = mixture_scores(log_sigmoid(log_odds), log_sigmoid(-log_odds), a, b, alpha, beta)   # (50, 241)
    # the chord of a convex function lies above it: f(r_i) <= interpolation of f(r_{i-1}), f(r_{i+1})
    t = (r[1:-1] - r[:-2]) / (r[2:] - r[:-2])
    chord = (1 - t) * f[:, :-2] + t * f[:, 2:]
    assert np.all(f[:, 1:-1] <= chord + 1e-9 * (1 + np.abs(chord)))
    gallery = world["gallery"]
    for mixture in mixtures.values():
        slider = ad.AnchorIndex(mixture, gallery, device="cpu").slider(gallery[3], k=K)
        responsibilities = [slider.responsibility(p) for p in np.linspace(0, 1, 101)]
        assert responsibilities[0] == 0.0 and responsibilities[-1] == 1.0
        assert np.all(np.diff(responsibilities) >= 0)
        expected = mixture.with_weights([0.4, 0.6]).responsibilities(gallery[3:4].astype(np.float64))[0, 0]
        assert slider.responsibility(0.4) == pytest.approx(expected, rel=1e-4, abs=1e-9)
        # Distinct in log-odds; in r, literal weights put some points within round-off of 1.
        assert np.all(np.diff(slider.grid) >= 0) and slider.grid[0] == 0 and slider.grid[-1] == 1
        assert np.all(np.diff([slider.log_odds(p) for p in (0.0, 0.001, 0.5, 0.999, 1.0)]) > 0)


def test_errors_name_the_problem(world, mixtures):
    gallery = world["gallery"][:200]
    mixture = mixtures["literal"]
    with pytest.raises(ValueError, match="query-first"):
        ad.AnchorIndex(mixture, gallery, reverse=True, device="cpu").slider(gallery[0])
    with pytest.raises(ValueError, match="MixtureAnchors"):
        ad.AnchorIndex(mixture.models[0], gallery, device="cpu").slider(gallery[0])
    three = ad.MixtureAnchors([*mixture.models, mixture.models[0]])
    with pytest.raises(ValueError, match="two components"):
        ad.AnchorIndex(three, gallery, device="cpu").slider(gallery[0])
    index = ad.AnchorIndex(mixture, gallery, device="cpu")
    with pytest.raises(ValueError, match="from 1 to 199"):
        index.slider(gallery[0], k=200, exclude=0)
    assert index.slider(gallery[0], k=200).at(0.5)[0].shape == (200,)
    for bad in (dict(k=0), dict(k=2.0), dict(exclude=200), dict(exclude=1.5), dict(candidates=0),
                dict(grid=[1.5]), dict(grid=0)):
        with pytest.raises(ValueError):
            index.slider(gallery[0], **bad)
    with pytest.raises(ValueError, match="one embedding"):
        index.slider(gallery[:2])
    slider = index.slider(gallery[0])
    for bad_p in (-0.1, 1.1, float("nan"), True, "0.5"):
        with pytest.raises(ValueError, match="p must be"):
            slider.at(bad_p)


@pytest.fixture(scope="module")
def store(world, tmp_path_factory):
    """The world's gallery as a float32 store of uneven shards (1500 rows), so blocks cross shards."""
    from anchordiv.store import GalleryStore

    return GalleryStore.from_array(world["gallery"], tmp_path_factory.mktemp("slider") / "store",
                                   shard_rows=1500, dtype="float32")


@pytest.mark.parametrize("kind", ["literal", "balanced", "calibrated"])
def test_the_sharded_slider_equals_the_in_memory_slider_and_brute_force(world, mixtures, store, kind, device):
    """The store's slider on ``device`` against the in-memory slider on the CPU and brute force."""
    from anchordiv.sharded import ShardedAnchorIndex

    gallery, mixture = world["gallery"], mixtures[kind]
    memory = ad.AnchorIndex(mixture, gallery, device="cpu")
    sharded = ShardedAnchorIndex(mixture, store, device=device, block_rows=700)
    rng = np.random.default_rng(2)
    certified = []
    for query_id in rng.choice(G, 3, replace=False):
        expected = memory.slider(gallery[query_id], k=K, exclude=int(query_id))
        slider = sharded.slider(gallery[query_id], k=K, exclude=int(query_id))
        check_candidates(slider, memory)
        check_candidates(expected, memory)
        for p in np.concatenate([rng.uniform(0, 1, 40), [0.0, 1.0]]):
            values, ids, ok = slider.at(float(p))
            expected_values, expected_ids, expected_ok = expected.at(float(p))
            assert_same_ranking((values, ids), (expected_values, expected_ids), **SLIDER_TOL, context=f"p = {p:.4f}")
            if ok != expected_ok:  # the passes' thresholds differ by at most twice the slack each adds
                assert abs(certificate_margin(expected, float(p))) <= 2 * expected._pass_slack()
            check_exact(values, ids, mixture, gallery, int(query_id), float(p))
            certified.append(ok)
    assert np.mean(certified) >= 0.95


def test_the_sharded_slider_falls_back_to_the_sharded_search(world, mixtures, store):
    """With one candidate per grid point nothing certifies, and each move is the store's own exact search."""
    from anchordiv.sharded import ShardedAnchorIndex

    sharded = ShardedAnchorIndex(mixtures["calibrated"], store, device="cpu", block_rows=700)
    slider = sharded.slider(world["gallery"][5], k=K, exclude=5, grid=2, candidates=1)
    for p in (0.1, 0.6):
        values, ids, ok = slider.at(p)
        expected = sharded.with_model(sharded.model.with_weights([p, 1 - p])).search(world["gallery"][5:6], K,
                                                                                   exclude=[5])
        assert not ok
        np.testing.assert_array_equal(ids, expected[1][0])
        np.testing.assert_allclose(values, expected[0][0])


def test_both_indexes_offer_what_the_slider_needs(world, mixtures, store):
    """MixtureSlider declares what it reads from an index (SliderIndex); both index types offer it."""
    import typing

    from anchordiv.sharded import ShardedAnchorIndex
    from anchordiv.slider import MixtureSlider, SliderIndex

    assert typing.get_type_hints(MixtureSlider.__init__)["index"] is SliderIndex
    for index in (ad.AnchorIndex(mixtures["literal"], world["gallery"], device="cpu"),
                  ShardedAnchorIndex(mixtures["literal"], store, device="cpu")):
        assert isinstance(index, SliderIndex)
        assert isinstance(index.with_model(index.model.with_weights([0.2, 0.8])), SliderIndex)
    assert not isinstance(ad.CosineIndex(world["gallery"]), SliderIndex)


@pytest.mark.parametrize("kind", ["literal", "balanced", "calibrated"])
def test_the_path_is_the_search_at_every_step(world, mixtures, kind, device):
    """Every step of a 101-step path on ``device`` equals the CPU index's exact search at its p (up to
    ties), whether the certificate held (a coarse grid of 3 interior points, as the explorer builds
    it) or not."""
    gallery, mixture = world["gallery"], mixtures[kind]
    index = ad.AnchorIndex(mixture, gallery, device="cpu")
    on_device = ad.AnchorIndex(mixture, gallery, device=device)
    for query_id, grid in ((17, 3), (240, None)):
        path = on_device.slider(gallery[query_id], k=K, exclude=query_id, grid=grid).path(101)
        assert path.p.shape == (101,) and path.values.shape == path.ids.shape == (101, K)
        np.testing.assert_allclose(path.p, np.linspace(0, 1, 101), atol=1e-12)
        assert np.all(np.diff(path.values, axis=1) >= 0) and not np.any(path.ids == query_id)
        for step, p in enumerate(path.p):
            search = index.with_model(mixture.with_weights([p, 1 - p])).search(gallery[query_id:query_id + 1], 2 * K,
                                                                            exclude=[query_id])
            assert_same_ranking((path.values[step], path.ids[step]), search, **SLIDER_TOL,
                                context=f"{kind}, query {query_id}, step {step} (p = {p:.2f})")
        assert path.certified.mean() >= 0.95, path.certified.mean()


def test_an_uncertified_step_of_the_path_comes_from_the_exact_search(world, mixtures):
    gallery, mixture = world["gallery"], mixtures["literal"]
    index = ad.AnchorIndex(mixture, gallery, device="cpu")
    path = index.slider(gallery[11], k=K, exclude=11, candidates=1).path([0.0, 0.25, 0.9])
    assert not path.certified.any()
    for step, p in enumerate(path.p):
        values, ids = index.with_model(mixture.with_weights([p, 1 - p])).search(gallery[11:12], K, exclude=[11])
        np.testing.assert_array_equal(path.ids[step], ids[0])
        np.testing.assert_allclose(path.values[step], values[0])


def test_the_path_agrees_with_the_slider_step_by_step_and_over_a_store(world, mixtures, store, device):
    """Paths on ``device``, in memory and over a store, against the CPU slider's moves."""
    from anchordiv.sharded import ShardedAnchorIndex

    gallery, mixture = world["gallery"], mixtures["calibrated"]
    memory = ad.AnchorIndex(mixture, gallery, device="cpu").slider(gallery[9], k=K, exclude=9)
    on_device = ad.AnchorIndex(mixture, gallery, device=device).slider(gallery[9], k=K, exclude=9)
    sharded = ShardedAnchorIndex(mixture, store, device=device, block_rows=700).slider(gallery[9], k=K, exclude=9)
    positions = [0.0, 0.013, 0.5, 0.77, 1.0]
    for path in (on_device.path(positions), sharded.path(positions)):
        assert path.shown_ids.tolist() == sorted(set(path.ids.ravel().tolist()))
        for step, p in enumerate(positions):
            values, ids, certified = memory.at(p)
            assert_same_ranking((path.values[step], path.ids[step]), (values, ids), **SLIDER_TOL, context=f"p = {p}")
        assert path.step_of(0.77) == 3 and path.step_of(0.0) == 0


def test_path_positions_and_weights_along_a_path_are_checked_and_match_one_at_a_time(mixtures):
    from anchordiv.slider import path_positions

    assert path_positions(3).tolist() == [0.0, 0.5, 1.0]
    assert path_positions([0.7, 0.2, 0.7]).tolist() == [0.2, 0.7]
    for bad in (1, True, [], [1.5], [float("nan")]):
        with pytest.raises(ValueError):
            path_positions(bad)
    p = np.array([0.0, 1e-9, 0.3, 0.5, 0.999, 1.0])
    for mixture in mixtures.values():
        along = mixture.log_weights_along(p)
        one_at_a_time = np.array([mixture.log_weights_at([value, 1 - value]) for value in p])
        np.testing.assert_allclose(along, one_at_a_time, rtol=1e-12, atol=0)
        assert np.array_equal(np.isneginf(along), np.isneginf(one_at_a_time))
        with pytest.raises(ValueError, match="in \\[0, 1\\]"):
            mixture.log_weights_along([1.2])


def test_the_sweep_stops_once_per_set_of_images_at_the_ends_and_in_the_middles():
    """Runs of one set of images, whatever their order; a sweep's stop for each: p's ends for the
    first and last run, the middle of every other."""
    ids = np.array([[1, 2], [2, 1], [2, 1], [3, 1], [3, 1], [1, 3], [4, 1], [4, 5]])
    path = SliderPath(np.linspace(0, 1, 8), np.zeros((8, 2)), ids, np.ones(8, bool))
    assert path.ranking_runs().tolist() == [[0, 2], [3, 5], [6, 6], [7, 7]]
    assert path.sweep_stops().tolist() == [0, 4, 6, 7]
    assert path.ranking_runs(k=1).tolist() == [[0, 0], [1, 2], [3, 4], [5, 5], [6, 7]]
    assert path.sweep_stops(k=1).tolist() == [0, 1, 3, 5, 7]
    still = SliderPath(np.linspace(0, 1, 3), np.zeros((3, 2)), np.tile([[1, 2]], (3, 1)), np.ones(3, bool))
    assert still.ranking_runs().tolist() == [[0, 2]] and still.sweep_stops().tolist() == [0, 2]


@pytest.mark.parametrize("cores", [1, 3], ids=["one part", "three parts"])
@pytest.mark.parametrize("kept", ["host", "files", "gpu"], ids=["rows kept", "rows read", "rows resident"])
def test_a_new_querys_pass_finds_the_same_however_it_reads_and_splits_the_rows(world, mixtures, store, monkeypatch,
                                                                              kept, cores):
    """The pass over a store's rows kept at float32 in memory, read from the files into reused
    buffers or resident as on a GPU (here on the CPU: the same code), in one part or cut among
    three cores (parts of 1,000 rows at least here), and the in-memory index's pass cut the same
    way: the same candidates (up to ties at a k'-th place) and paths that are the exact search at
    every step, on the coarse grid a CPU uses and on the grid at the path's positions a GPU uses."""
    from anchordiv import pass_pool, sharded

    monkeypatch.setattr(pass_pool, "MIN_PART_ROWS", 1000)
    monkeypatch.setattr(pass_pool, "host_cores", lambda: cores)
    if kept != "host":
        monkeypatch.setattr(sharded, "HOST_RESIDENT_SHARE", 0.0)
        store = GalleryStore.open(store.directory)  # another object: the fixture's may keep rows already
    if kept == "gpu":
        monkeypatch.setattr(sharded.ShardScanner, "_device_dtype", lambda self: torch.float32)
    gallery, mixture = world["gallery"], mixtures["calibrated"]
    memory = ad.AnchorIndex(mixture, gallery, device="cpu")
    over_store = sharded.ShardedAnchorIndex(mixture, store, device="cpu", block_rows=700)
    assert over_store._engine.scanner.keeps_rows == kept
    assert len(pass_pool.row_parts(G, torch.device("cpu"))) == cores
    for query_id in (3, 1999):
        paths = []
        for index in (memory, over_store):
            slider = index.slider(gallery[query_id], k=K, exclude=query_id, grid=3)
            check_candidates(slider, memory)
            paths.append(slider.path(21))
            paths.append(query_path(index, gallery[query_id], K, query_id, 21, grid="positions"))
            assert paths[-1].certified.all()
        for step, p in enumerate(paths[0].p):
            search = memory.with_model(mixture.with_weights([p, 1 - p])).search(gallery[query_id:query_id + 1], 2 * K,
                                                                             exclude=[query_id])
            for path in paths:
                assert_same_ranking((path.values[step], path.ids[step]), search, **SLIDER_TOL,
                                    context=f"query {query_id}, p = {p:.2f}")


def test_a_second_geometry_over_a_store_shares_the_rows_the_first_keeps(mixtures, store, monkeypatch):
    """The rows a first index keeps take memory that the second's check would not find free: it
    shares them (they cost nothing more), where a store opened anew and too large reads its files."""
    from anchordiv import sharded

    store = GalleryStore.open(store.directory)
    first = sharded.ShardedAnchorIndex(mixtures["calibrated"], store, device="cpu")
    monkeypatch.setattr(sharded, "HOST_RESIDENT_SHARE", 0.0)
    second = sharded.ShardedAnchorIndex(mixtures["balanced"], store, device="cpu")
    other = sharded.ShardedAnchorIndex(mixtures["balanced"], GalleryStore.open(store.directory), device="cpu")
    assert [index._engine.scanner.keeps_rows for index in (first, second, other)] == ["host", "host", "files"]


def test_parts_run_inline_from_the_pool_and_in_order():
    """Results come back in the parts' order; a pass started from a pool thread (nested) runs its parts
    inline rather than wait for a thread of the pool it holds."""
    import threading

    from anchordiv import pass_pool

    names = pass_pool.run_parts(lambda part: (part, threading.current_thread().name), list(range(6)))
    assert [part for part, _ in names] == list(range(6))
    nested = pass_pool.run_parts(lambda _: pass_pool.run_parts(lambda part: threading.current_thread().name, [0, 1]),
                                 [0, 1])
    assert all(len(set(inner)) == 1 for inner in nested)  # each inner pair ran in its caller's thread
    assert pass_pool.row_parts(10, torch.device("cpu")) == [(0, 10)]
    assert pass_pool.row_parts(10**7, torch.device("meta")) == [(0, 10**7)]  # not a CPU: one part
