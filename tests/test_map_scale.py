"""The map at the user's size (issue 53): the kNN graph ranks as the index's search does, UMAP's
layout and compile report as they go, a map and its graph are cached and a query placed from
them, layouts run as shared jobs that outlive a rerun, the page asks before a long new map, and
the benchmark's figures."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import torch

from anchordiv import progress as progress_module
from anchordiv import projection
from anchordiv.explorer import maps
from anchordiv.explorer.geometry import ExplorerGeometry, GeometrySpec
from anchordiv.progress import Job, run_reporting
from anchordiv.search import AnchorIndex, CosineIndex
from rankings import assert_same_ranking

pytest.importorskip("umap")


def clustered(n: int, dim: int = 32, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    centres = torch.nn.functional.normalize(torch.randn(12, dim, generator=generator), dim=1)
    noise = torch.nn.functional.normalize(torch.randn(n, dim, generator=generator), dim=1)
    return torch.nn.functional.normalize(centres[torch.randint(0, 12, (n,), generator=generator)] + 0.7 * noise, dim=1)


def page_geometry(rows: torch.Tensor, seed: int = 1, reverse: bool = False) -> ExplorerGeometry:
    """As the page builds it: a softmax mixture of two random anchor sets at scale 10."""
    generator = torch.Generator().manual_seed(seed)
    anchors = [torch.nn.functional.normalize(torch.randn(n, rows.shape[1], generator=generator), dim=1)
               for n in (150, 7)]
    return ExplorerGeometry(rows, anchors, [[f"a{i}" for i in range(150)], [f"b{i}" for i in range(7)]],
                            GeometrySpec(scale=10.0, reverse=reverse))


class SearchOnly:
    """An index seen only through the Index protocol: knn_graph asks its search, as it always did."""

    def __init__(self, index):
        self.index, self.higher_is_closer = index, index.higher_is_closer

    def __len__(self) -> int:
        return len(self.index)

    def search(self, queries, k, exclude=None):
        return self.index.search(queries, k, exclude)


@pytest.fixture(scope="module")
def compiled():
    """UMAP's kernels compiled in this process (what a server's first map does once)."""
    projection.warm_up()


@pytest.fixture(scope="module")
def world():
    rows = clustered(2000)
    return rows, page_geometry(rows)


def test_the_knn_graph_is_the_index_search_up_to_ties(world, monkeypatch):
    rows, geometry = world
    index = maps.projection_index(rows, "anchor", geometry, 0.5)
    search, searched = index.search, []

    def counted(queries, k, exclude=None):
        searched.append(len(queries))
        return search(queries, k, exclude)

    monkeypatch.setattr(index, "search", counted)
    indices, distances = projection.knn_graph(index, rows, 15)
    assert searched == []  # a map's own index is ranked by knn_graph, from the index's checked terms
    monkeypatch.setattr(index, "search", search)
    assert indices.shape == (2000, 15) and indices.dtype == np.int64 and distances.dtype == np.float32
    assert np.array_equal(indices[:, 0], np.arange(2000)) and np.all(distances[:, 0] == 0)
    # The route it had (the index's search, 512 queries at a time), with more neighbours so that a run
    # tied across the 15th place is judged whole. The same inner products formed in other blocks:
    # they may differ by float32 round-off of scores of about 10 (a few 1e-6).
    old_ids, old_distances = projection.knn_graph(SearchOnly(index), rows, 20, batch=512)
    assert_same_ranking((distances[:, 1:], indices[:, 1:]), (old_distances[:, 1:], old_ids[:, 1:]),
                        atol=5e-5, rtol=1e-5, context="kNN graph against the search")
    # And against every pair's divergence in float64 (round-off of float32 against float64).
    exact = index.model.divergence(rows.double(), rows.double()).numpy()
    np.fill_diagonal(exact, np.inf)
    order = np.argsort(exact, axis=1, kind="stable")[:, :20]
    assert_same_ranking((distances[:, 1:], indices[:, 1:]), (np.take_along_axis(exact, order, 1), order),
                        atol=5e-4, rtol=1e-4, context="kNN graph against float64 divergences")


def test_the_knn_graph_refuses_what_the_index_search_refuses(world):
    rows, geometry = world
    index = maps.projection_index(rows[:100], "anchor", geometry, 0.5)
    index.model.set_params(weights=[0.9, 0.1])  # changed in place: the index's terms are for the old ones
    with pytest.raises(ValueError, match="weights were changed in place"):
        projection.knn_graph(index, rows[:100], 5)


def test_the_knn_graph_keeps_each_item_first_and_its_duplicate_next():
    rows = clustered(300, seed=3)
    rows[7] = rows[200]
    index = maps.projection_index(rows, "anchor", page_geometry(rows), 0.5)
    indices, distances = projection.knn_graph(index, rows, 5, batch=64)
    assert indices[7, 0] == 7 and indices[200, 0] == 200
    assert indices[7, 1] == 200 and indices[200, 1] == 7 and distances[7, 1] < 1e-4


@pytest.mark.parametrize("kind", ["reverse", "cosine"])
def test_other_indexes_are_asked_through_their_search(kind):
    rows = clustered(400, seed=4)
    index = (AnchorIndex(page_geometry(rows, reverse=True).model_at(0.5, "calibrated"), rows, reverse=True)
             if kind == "reverse" else CosineIndex(rows))
    indices, distances = projection.knn_graph(index, rows, 8)
    old_ids, old_distances = projection.knn_graph(SearchOnly(index), rows, 8, batch=512)
    np.testing.assert_array_equal(indices, old_ids)
    np.testing.assert_array_equal(distances, old_distances)


def test_top_k_by_chunks_is_torch_topk_up_to_ties():
    generator = torch.Generator().manual_seed(5)
    scores = torch.randn(64, 5000, generator=generator)
    coarse = (scores * 4).round() / 4  # many ties, at the k-th place too
    coarse[3, 4999] = float("nan")  # in the last, partial chunk
    coarse[7, 100] = float("nan")
    coarse[9] = float("-inf")
    coarse[9, 4321] = 1.0
    for block in (scores, coarse):
        best, ids = projection.top_k_by_chunks(block, 14)
        expected = torch.topk(block, 14, dim=1)
        torch.testing.assert_close(best, expected.values, equal_nan=True, rtol=0, atol=0)
        assert torch.equal(block.gather(1, ids)[~best.isnan()], best[~best.isnan()])  # each value its column's
        assert all(len(set(row.tolist())) == 14 for row in ids)
    assert projection.top_k_by_chunks(scores, 14)[1].equal(torch.topk(scores, 14, dim=1).indices)  # no ties


def test_graph_batches_are_large_and_bounded():
    assert projection.graph_batch(50_000) == projection.GRAPH_BLOCK_SCORES // 50_000
    assert projection.graph_batch(100) == 100 and projection.graph_batch(10**7) == 64


def random_graph(n: int, k: int = 15, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rows = clustered(n, dim=8, seed=seed)
    return projection.knn_graph(CosineIndex(rows), rows, k)


def test_the_layout_reports_its_epochs_as_they_pass(compiled, monkeypatch):
    monkeypatch.setattr(projection, "EPOCH_REPORT_SECONDS", 0.005)
    indices, distances = random_graph(2000)
    heard = []
    xy = projection.umap_from_knn(indices, distances, progress=lambda fraction, text: heard.append((fraction, text)))
    epochs = [(fraction, text) for fraction, text in heard if " epoch " in text]
    # Several reports while the epochs run, not one at the end, each further on.
    assert len({text for _, text in epochs}) >= 5, heard
    fractions = [fraction for fraction, _ in heard]
    assert fractions == sorted(fractions) and fractions[0] < 0.5 and fractions[-1] == 1.0
    assert heard[-1][1].startswith("UMAP's layout of 2,000 points: epoch 200 of 200")
    # The same layout as without progress, bit for bit.
    np.testing.assert_array_equal(xy, projection.umap_from_knn(indices, distances))


def test_the_compile_and_the_start_are_reported_while_they_run(compiled, monkeypatch):
    monkeypatch.setattr(progress_module, "HEARTBEAT_SECONDS", 0.02)
    monkeypatch.setattr(projection, "_compiled", False)  # as in a server's first map
    real = projection.warm_up

    def slow_warm_up(progress=None):  # what a first compile does: seconds without a word of its own
        time.sleep(0.3)
        return real(progress)

    monkeypatch.setattr(projection, "warm_up", slow_warm_up)
    indices, distances = random_graph(300)
    heard = []
    projection.umap_from_knn(indices, distances, progress=lambda fraction, text: heard.append((fraction, text)))
    compiling = [fraction for fraction, text in heard if text.startswith("Compiling UMAP's kernels (once per server")]
    assert len(compiling) >= 5 and compiling == sorted(compiling) and compiling[-1] < compiling[0] + 0.95
    assert heard[-1][1].endswith("epoch 200 of 200, about 0 s left") and projection.is_compiled()
    # warm_up itself reports too, and the estimate counts the compile until it is done.
    monkeypatch.setattr(projection, "_compiled", False)
    assert projection.layout_estimate(1000) == pytest.approx(0.6 + projection.COMPILE_SECONDS)
    heard.clear()
    real(lambda fraction, text: heard.append((fraction, text)))
    assert heard and all(text.startswith("Compiling UMAP's kernels") for _, text in heard)


def test_run_reporting_beats_while_the_work_is_silent_and_stops_it_when_no_one_listens(monkeypatch):
    start = time.perf_counter()
    heard = []
    assert run_reporting(lambda stop: time.sleep(0.3) or "done", lambda *report: heard.append(report),
                         lambda: (0.5, f"{time.perf_counter() - start:.2f}"), every=0.02) == "done"
    assert len(heard) >= 5 and len({text for _, text in heard}) >= 5
    with pytest.raises(ZeroDivisionError):
        run_reporting(lambda stop: 1 / 0, lambda *report: None, lambda: (0.0, ""))
    stopped = threading.Event()

    def work(stop):
        stopped.set() if stop.wait(2) else None

    def page_rerun(*report):
        raise RuntimeError("rerun")

    with pytest.raises(RuntimeError, match="rerun"):
        run_reporting(work, page_rerun, lambda: (0.0, ""), every=0.01)
    assert stopped.wait(2)  # the work heard that no one listens


def test_a_job_outlives_a_waiter_that_stops_and_serves_the_next():
    release, finished = threading.Event(), []

    def work(report):
        for step in range(3):
            report(step / 3, f"step {step}")
        release.wait(5)
        finished.append(True)
        return 42

    job = Job(work)

    def page_rerun(*report):
        raise RuntimeError("rerun")

    with pytest.raises(RuntimeError, match="rerun"):
        job.wait(page_rerun, every=0.01)
    heard, joined = [], threading.Event()

    def hear(*report):
        heard.append(report)
        joined.set()

    waiter = threading.Thread(target=lambda: heard.append(job.wait(hear, every=0.01)))
    waiter.start()
    assert joined.wait(5)  # the next waiter is waiting (it has heard the job so far) while the job runs
    release.set()
    waiter.join(5)
    assert finished == [True] and heard[-1] == 42 and job.done
    assert heard[:3] == [(0.0, "step 0"), (1 / 3, "step 1"), (2 / 3, "step 2")]


class BlockingRows:
    """Map rows whose reading waits for ``release``, counting the reads."""

    def __init__(self, rows: torch.Tensor):
        self.embeddings, self.release, self.reads = rows, threading.Event(), 0

    def __len__(self) -> int:
        return len(self.embeddings)

    def rows(self, ids):
        self.reads += 1
        self.release.wait(10)
        return self.embeddings[torch.as_tensor(np.asarray(ids, dtype=np.int64))]


def test_a_map_is_laid_out_once_cached_with_its_graph_and_placed_from_it(compiled, world, tmp_path, monkeypatch):
    monkeypatch.setenv("ANCHORDIV_CACHE", str(tmp_path))
    rows, geometry = world
    source = BlockingRows(rows[:600])
    key = maps.projection_key("map-scale test")
    assert maps.map_status(len(source), "anchor", 500, cache_key=key) == "new"
    first = []
    asking = threading.Thread(target=lambda: first.append(
        maps.geometry_projection(source, "anchor", geometry, 0.5, max_points=500, cache_key=key)))
    asking.start()
    deadline = time.perf_counter() + 5
    while maps.map_status(len(source), "anchor", 500, cache_key=key) != "in progress" and time.perf_counter() < deadline:
        time.sleep(0.01)
    assert maps.map_status(len(source), "anchor", 500, cache_key=key) == "in progress"
    threading.Timer(0.1, source.release.set).start()
    heard = []
    ids, xy = maps.geometry_projection(source, "anchor", geometry, 0.5, max_points=500, cache_key=key,
                                       progress=lambda fraction, text: heard.append(text))
    asking.join(10)
    assert source.reads == 1 and np.array_equal(first[0][1], xy)  # one layout, waited for by both
    assert heard and heard[-1].endswith("epoch 200 of 200, about 0 s left")
    assert maps.map_status(len(source), "anchor", 500, cache_key=key) == "cached"

    def no_graph(*args, **kwargs):
        raise AssertionError("the map's graph is read back from the cache, not made again")

    monkeypatch.setattr(projection, "knn_graph", no_graph)
    again = maps.geometry_projection(source, "anchor", geometry, 0.5, max_points=500, cache_key=key)
    np.testing.assert_array_equal(again[1], xy)
    placer = maps.map_placer(source, again[0], again[1], "anchor", geometry, 0.5)
    placed = placer.place(rows[550:560])
    assert placed.shape == (10, 2) and np.all(np.isfinite(placed))


def test_the_benchmark_measures_a_small_map(compiled):
    from anchordiv.benchmarks.map_scale import map_scale_figures, map_scale_lines

    figures = map_scale_figures(points=1500, dim=32, n_anchors=60, fresh_compile=False)
    assert figures["points"] == 1500 and figures["compiled_before"]
    for name in ("bound_s", "graph_s", "map_s", "layout_s", "cached_s", "longest_silence_s", "placer_s"):
        assert figures[name] >= 0, name
    assert figures["graph_over_bound"] > 0 and figures["cached_same"] and figures["placed_finite"]
    assert figures["longest_silence_s"] < 2.0 and figures["reports"] >= 3
    lines = map_scale_lines(figures)
    assert lines[0].startswith("map of 1,500 points") and any("matmul bound" in line for line in lines)


@pytest.mark.slow
def test_the_page_shows_a_long_new_maps_estimate_and_lays_it_out_when_asked(library, monkeypatch):
    from markup import plain
    from test_app import map_traces, start

    # Every pair costing a second: any new map is a long one, which the page only lays out when asked.
    monkeypatch.setattr(projection, "GRAPH_SECONDS_PER_PAIR", 1.0)
    app = start()
    app.session_state["umap_open"] = True
    app.run()
    assert not app.exception and not app.error and not app.get("plotly_chart")
    app.number_input(key="umap_points").set_value(37).run()
    assert not app.exception and not app.error and not app.get("plotly_chart")
    assert any("A new map of 37 points takes about" in plain(info.value) for info in app.info)
    button = app.button(key="umap_lay_out_anchor")
    assert "Lay out 37 points (about" in plain(button.label)
    button.click().run()
    assert not app.exception and not app.error
    assert map_traces(app, "umap_chart_anchor")[-1]["name"] == "query"
    app.run()  # now on disk: drawn without asking again
    assert not app.exception and not [info for info in app.info if "A new map of" in plain(info.value)]
    assert map_traces(app, "umap_chart_anchor")
    # As after a restart: the map read from the disk, UMAP's kernels compiled (under a progress bar)
    # before the query and its neighbours outside the sample are placed.
    monkeypatch.setattr(projection, "_compiled", False)
    app.run()
    assert not app.exception and not app.error and projection.is_compiled()
    assert any("were not among the 37 sampled points" in plain(caption.value) for caption in app.caption)
    assert app.number_input(key="umap_points").max == maps.MAX_MAP_POINTS == 50_000
