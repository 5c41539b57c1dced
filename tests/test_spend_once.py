"""Work a page does once, not on every move of p or every start: the gallery's kappa once per
geometry (shared by the balance, the calibration and the index), a calibration kept on disk for the
next start, each thumbnail encoded once, and the step clock the browser benchmark reads."""
from __future__ import annotations

import io
import json

import numpy as np
import pytest
import torch
from PIL import Image

import anchordiv as ad
from anchordiv import explorer as ex
from anchordiv.app import step_clock
from anchordiv.explorer.calibration_cache import CalibrationCache
from anchordiv.explorer.thumbnails import EncodedThumbnails
from anchordiv.models import mixture as mixture_module

from conftest import labelled_world
from rankings import assert_same_ranking

SCALE = 12.0


@pytest.fixture(scope="module")
def world():
    """120 labelled images (6 objects x 5 styles x 4) and anchors naming the objects and the styles."""
    return labelled_world(1, 4, "spend-once", "toy")


def count_gallery_passes(monkeypatch, rows: int) -> list[int]:
    """Every ``cgf_eta`` call over ``rows`` natural parameters (a pass over the gallery) appends 1."""
    calls: list[int] = []
    original = ad.EmpiricalAnchors.cgf_eta

    def counting(self, eta):
        if eta.shape[0] == rows:
            calls.append(1)
        return original(self, eta)

    monkeypatch.setattr(ad.EmpiricalAnchors, "cgf_eta", counting)
    return calls


def test_a_geometry_passes_over_the_gallery_once_per_anchor_set(world, monkeypatch):
    gallery, anchors, texts = world
    passes = count_gallery_passes(monkeypatch, len(gallery))
    ex.ExplorerGeometry(gallery.embeddings, anchors, texts, ex.GeometrySpec(scale=SCALE))
    assert len(passes) == 2  # one per component: balance, calibration and index share it (was 6)


def test_shared_kappa_gives_the_same_balance_calibration_and_rankings(world):
    gallery, anchors, _ = world
    a, b = (ad.EmpiricalAnchors(scale=SCALE).fit(set_) for set_ in anchors)
    mixture = ad.MixtureAnchors([a, b], [0.5, 0.5])
    kappa = ad.AnchorIndex(mixture, gallery.embeddings, device="cpu").component_kappa
    for measure in ("with_balance", "with_calibration"):
        shared = getattr(mixture, measure)(gallery.embeddings, component_kappa=kappa)
        own = getattr(mixture, measure)(gallery.embeddings)
        assert np.array_equal(shared.log_weights_at([0.3, 0.7]), own.log_weights_at([0.3, 0.7])), measure
        for p in (0.2, 0.5, 0.8):
            queries = gallery.embeddings[:5]
            # The same float32 kappa by two routes: equal up to one rounding.
            assert_same_ranking(ad.AnchorIndex(shared.with_weights([p, 1 - p]), gallery.embeddings).search(queries, 8),
                                ad.AnchorIndex(own.with_weights([p, 1 - p]), gallery.embeddings).search(queries, 8),
                                atol=1e-6, context=f"{measure} p={p}")


def test_component_kappa_of_the_wrong_shape_is_refused(world):
    gallery, anchors, _ = world
    mixture = ad.MixtureAnchors([ad.EmpiricalAnchors(scale=SCALE).fit(set_) for set_ in anchors], [0.5, 0.5])
    with pytest.raises(ValueError, match=r"component_kappa has shape \(3, 2\).*\(120, 2\)"):
        mixture.with_balance(gallery.embeddings, component_kappa=torch.zeros(3, 2))


def test_a_kept_calibration_is_read_back_not_measured_again(world, tmp_path, monkeypatch):
    gallery, anchors, texts = world
    cache = CalibrationCache(tmp_path, gallery.key)
    spec = ex.GeometrySpec(scale=SCALE)
    first = ex.ExplorerGeometry(gallery.embeddings, anchors, texts, spec, calibration_cache=cache)
    monkeypatch.setattr(mixture_module, "calibration_curve", lambda *args, **kwargs: pytest.fail("measured again"))
    again = ex.ExplorerGeometry(gallery.embeddings, anchors, texts, spec, calibration_cache=cache)
    for field in ("log_odds", "progress", "progress_a", "progress_b", "queries", "k"):
        assert np.array_equal(getattr(first.calibrated_model.calibration_, field),
                              getattr(again.calibrated_model.calibration_, field)), field
    query = gallery.embeddings[7]
    for p in (0.1, 0.5, 0.9):  # the curve read back is the one measured: the same model, bit for bit
        assert_same_ranking(ex.search_one(again.index_at(p), query, 10, 7), ex.search_one(first.index_at(p), query, 10, 7),
                            atol=0.0, context=f"p={p}")


def test_another_anchor_set_or_a_damaged_file_is_measured_again(world, tmp_path, monkeypatch):
    gallery, anchors, texts = world
    cache = CalibrationCache(tmp_path, gallery.key)
    spec = ex.GeometrySpec(scale=SCALE)
    ex.ExplorerGeometry(gallery.embeddings, anchors, texts, spec, calibration_cache=cache)
    measured = []
    original = mixture_module.calibration_curve
    monkeypatch.setattr(mixture_module, "calibration_curve", lambda *a, **k: measured.append(1) or original(*a, **k))
    fewer = [anchors[0][:4], anchors[1]]
    ex.ExplorerGeometry(gallery.embeddings, fewer, (texts[0][:4], texts[1]), spec, calibration_cache=cache)
    assert measured == [1]
    for path in tmp_path.glob("*.npy"):
        path.write_bytes(path.read_bytes()[:-8])  # truncated: its sha256 no longer matches
    ex.ExplorerGeometry(gallery.embeddings, anchors, texts, spec, calibration_cache=cache)
    assert measured == [1, 1]


class Renders:
    """A source's ``thumbnails`` that counts the items it is asked to render."""

    def __init__(self):
        self.items: list[int] = []

    def __call__(self, ids, size):
        self.items.extend(ids)
        return [Image.new("RGB", (128, 64), (int(item) % 256, 0, 0)) for item in ids]


def test_each_thumbnail_is_rendered_and_encoded_once(tmp_path):
    render = Renders()
    thumbnails = EncodedThumbnails(render)
    first = thumbnails([3, 5, 3], size=96)
    assert render.items == [3, 5] and first[0] == first[2]
    assert thumbnails([5, 3], size=96) == [first[1], first[0]] and render.items == [3, 5]
    with Image.open(io.BytesIO(first[0])) as image:
        assert image.format == "PNG" and image.size == (96, 48)  # shrunk to fit, aspect kept
    thumbnails([3], size=160)  # another size is another thumbnail
    assert render.items == [3, 5, 3]


def test_kept_thumbnails_outlive_the_server_and_damaged_ones_are_made_again(tmp_path):
    render = Renders()
    made = EncodedThumbnails(render, folder=tmp_path)([1, 2])
    later = Renders()
    assert EncodedThumbnails(later, folder=tmp_path)([1, 2]) == made and later.items == []
    (tmp_path / "2-96.png").write_bytes(b"not a png")
    (tmp_path / "1-96.png").write_bytes(made[0][:30])  # truncated
    again = Renders()
    assert EncodedThumbnails(again, folder=tmp_path)([1, 2]) == made and again.items == [1, 2]


def test_the_memory_bound_drops_the_oldest_thumbnails():
    render = Renders()
    thumbnails = EncodedThumbnails(render, max_bytes=1)
    thumbnails([1])
    thumbnails([2])
    thumbnails([2])
    assert render.items == [1, 2]  # 2 is kept (the newest), 1 was dropped
    thumbnails([1])
    assert render.items == [1, 2, 1]


def test_the_step_clock_writes_one_line_per_run_with_its_stages(tmp_path, monkeypatch):
    log = tmp_path / "steps.jsonl"
    monkeypatch.setattr(step_clock, "LOG_PATH", str(log))
    with step_clock.timed_run("explorer"):
        with step_clock.stage("rerank"):
            sum(i * i for i in range(20_000))
        with step_clock.timed_run("explorer"):  # nested: part of the same run
            with step_clock.stage("rerank"):
                pass
    line = json.loads(log.read_text())
    assert line["app"] == "explorer" and set(line["stages"]) == {"rerank"}
    assert 0 <= line["stages"]["rerank"] <= line["cpu_s"]
    monkeypatch.setattr(step_clock, "LOG_PATH", None)
    with step_clock.timed_run("explorer"), step_clock.stage("rerank"):
        pass
    assert len(log.read_text().splitlines()) == 1  # off: nothing written


def test_the_explorer_starts_without_importing_scikit_learn_or_scipy():
    """Importing them costs about 2 s of every start; the Explore page's modules need neither (the
    models speak scikit-learn's protocol without it: anchordiv.models.estimator)."""
    import subprocess
    import sys

    modules = ["anchordiv", "anchordiv.app.cached", "anchordiv.app.explore_results", "anchordiv.app.find_anchors",
               "anchordiv.app.explore_umap", "anchordiv.app.sidebar", "anchordiv.app.anchor_inputs"]
    code = (f"import sys\nfor name in {modules!r}: __import__(name)\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'sklearn', 'scipy', 'umap', 'numba'}))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]", result.stdout


def test_a_kept_gallery_kappa_is_read_back_and_ranks_as_a_fresh_pass(world, tmp_path, monkeypatch):
    gallery, anchors, texts = world
    cache, spec = CalibrationCache(tmp_path, gallery.key), ex.GeometrySpec(scale=SCALE)
    first = ex.ExplorerGeometry(gallery.embeddings, anchors, texts, spec, calibration_cache=cache)
    passes = count_gallery_passes(monkeypatch, len(gallery))
    again = ex.ExplorerGeometry(gallery.embeddings, anchors, texts, spec, calibration_cache=cache)
    assert passes == []  # kappa and the calibration both read back
    assert torch.equal(again.index.component_kappa, first.index.component_kappa)
    fresh = ex.ExplorerGeometry(gallery.embeddings, anchors, texts, spec)
    for p in (0.2, 0.7):  # the kept terms are the fresh pass's, bit for bit
        assert_same_ranking(ex.search_one(again.index_at(p), gallery.embeddings[3], 10, 3),
                            ex.search_one(fresh.index_at(p), gallery.embeddings[3], 10, 3), atol=0.0, context=f"p={p}")


def test_kept_kappa_of_the_wrong_shape_or_direction_is_refused(world):
    gallery, anchors, _ = world
    mixture = ad.MixtureAnchors([ad.EmpiricalAnchors(scale=SCALE).fit(set_) for set_ in anchors], [0.5, 0.5])
    with pytest.raises(ValueError, match=r"component_kappa has shape \(120,\); this gallery and model need \(120, 2\)"):
        ad.AnchorIndex(mixture, gallery.embeddings, component_kappa=torch.zeros(120))
    with pytest.raises(ValueError, match="query-first"):
        ad.AnchorIndex(mixture, gallery.embeddings, reverse=True, component_kappa=torch.zeros(120, 2))
