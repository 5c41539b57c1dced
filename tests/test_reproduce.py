"""`python -m anchordiv reproduce`: estimates, verdicts, determinism, a dataset layout, and the quick run."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from anchordiv.cache import cache_dir
from anchordiv.reproduce import Settings, run_reproduction, verdicts
from anchordiv.reproduce.estimates import estimate
from helpers import needs_weights

ROOT = Path(__file__).resolve().parents[1]
TINY = Settings(queries=40, p_grid=(0.0, 0.5, 1.0), scales=(10.0,), budgets=(2, 4), budget_seeds=2, components=(1, 2),
                component_seeds=1, posterior_budgets=(2,), posterior_seeds=2, condition_subsets=2, grid_queries=1,
                grid_k=3, bench_queries=50, bench_gallery=200, bench_anchors=(8, 32), n_bootstrap=50, world_limit=240)
SECTIONS = ("## 1. Object vs style anchors", "## 1b. The logit scale", "## 2. Anchor budget",
            "## 3. Gaussian-mixture components", "## 4. Posterior anchors", "## 5. Condition-wise",
            "## 6. Runtime", "## 7. Qualitative grids")


@pytest.fixture(scope="module")
def private_cache(tmp_path_factory):
    """A private anchordiv cache that shares the rendered world (slow to rebuild), as a user's would be;
    the tests of the built-in ``encoder`` (tests/conftest.py) run with it."""
    cache = tmp_path_factory.mktemp("reproduce-cache")
    if (cache_dir() / "emoji_world").is_dir():
        (cache / "emoji_world").symlink_to(cache_dir() / "emoji_world", target_is_directory=True)
    saved = os.environ.get("ANCHORDIV_CACHE")
    os.environ["ANCHORDIV_CACHE"] = str(cache)
    yield cache
    if saved is None:
        os.environ.pop("ANCHORDIV_CACHE", None)
    else:
        os.environ["ANCHORDIV_CACHE"] = saved


# -- estimates and verdicts on tables whose answer is known ----------------------------------------
def test_estimate_drops_queries_without_relevant_items_and_widens_with_anchor_draws():
    rng = np.random.default_rng(0)
    per_query = rng.random(200) * 0.1 + 0.5
    one = estimate(np.append(per_query, np.nan), 300)
    assert one.n_queries == 200 and one.n_draws == 1 and one.low < one.mean < one.high
    draws = per_query[None, :] + np.array([[-0.05], [0.0], [0.05]])  # three anchor subsets that disagree
    three = estimate(draws, 300)
    assert three.mean == pytest.approx(per_query.mean())
    assert three.high - three.low > 3 * (one.high - one.low)
    with pytest.raises(ValueError, match="no query has a relevant"):
        estimate(np.full(5, np.nan), 10)


def sweep_table(object_rises: bool) -> pd.DataFrame:
    rows = []
    for method in ("softmax", "Gaussian"):
        for weighting in ("balanced", "literal"):
            for p in (0.0, 0.5, 1.0):
                up = p if object_rises else 1 - p
                for target, mean in (("object", 0.2 + 0.5 * up), ("style", 0.9 - 0.5 * up)):
                    rows.append({"method": method, "weighting": weighting, "p": p, "target": target, "mean": mean,
                                 "low": mean - 0.02, "high": mean + 0.02})
    return pd.DataFrame(rows)


def test_p_sweep_verdict_reads_the_direction_of_the_curves():
    assert verdicts.p_sweep_verdict(sweep_table(True)).startswith("Holds")
    assert verdicts.p_sweep_verdict(sweep_table(False)).startswith("Does not hold")


def budget_table(parametric_first: bool) -> pd.DataFrame:
    means = {("softmax", 4): 0.1, ("softmax", 64): 0.6, ("Gaussian", 4): 0.3 if parametric_first else 0.05,
             ("Gaussian", 64): 0.5}
    rows = [{"method": m, "budget": b, "mean": v, "low": v - 0.01, "high": v + 0.01} for (m, b), v in means.items()]
    return pd.DataFrame(rows + [{"method": "cosine", "budget": np.nan, "mean": 0.3, "low": 0.29, "high": 0.31}])


def test_budget_posterior_condition_and_runtime_verdicts():
    assert verdicts.budget_verdict(budget_table(True)).startswith("Holds")
    assert verdicts.budget_verdict(budget_table(False)).startswith("Partly holds")
    posterior = pd.DataFrame([{"method": f"softmax, {kind}", "budget": b, "mean": v, "low": v, "high": v}
                              for kind, values in (("posterior", (0.5, 0.6)), ("target only", (0.1, 0.58)))
                              for b, v in zip((2, 64), values)])
    assert verdicts.posterior_verdict(posterior).startswith("Holds")
    conditions = pd.DataFrame({"group": ["a", "b", "a", "b"], "comparison": ["softmax − cosine"] * 2 + ["softmax − ITI"] * 2,
                               "mean": [0.02, 0.001, -0.01, 0.03], "low": 0, "high": 0})
    assert verdicts.condition_verdict(conditions).startswith("Partly holds")
    assert verdicts.mark(0.02) == "**+0.0200**" and verdicts.mark(-0.02).endswith("▼") and verdicts.mark(0.001) == "+0.0010"
    runtime = pd.DataFrame({"method": ["softmax", "softmax", "gaussian", "gaussian"], "anchors": [8, 64] * 2,
                            "seconds": [0.1, 0.5, 0.1, 0.11], "vs_cosine": [1, 5, 1, 1.1]})
    assert verdicts.runtime_verdict(runtime).startswith("Holds")


# -- real runs -------------------------------------------------------------------------------------
@needs_weights
def test_crossings_report_how_far_map_and_agreement_moved_at_half():
    from anchordiv.reproduce.experiments import crossings

    frame = sweep_table(True)
    frame["agreement@10"] = np.where(frame["target"] == "object", 0.1 + 0.8 * frame["p"] ** 2, 0.9 - 0.8 * frame["p"])
    row = crossings(frame).iloc[0]
    assert row["object-mAP moved at p = 0.5"] == pytest.approx(0.5) and row["crossing p"] == pytest.approx(0.7)
    assert row["same-object@10 moved at p = 0.5"] == pytest.approx(0.25)  # 0.1 -> 0.3 of 0.1 -> 0.9
    assert row["same-style@10 moved at p = 0.5"] == pytest.approx(0.5)


@needs_weights
@pytest.mark.usefixtures("private_cache")
def test_agreement_is_the_shared_fraction_of_the_top_k(encoder):
    from anchordiv.reproduce import world_study
    from anchordiv.reproduce.estimates import QuerySample
    from anchordiv.search import CosineIndex

    study = world_study(encoder, limit=TINY.world_limit)
    sample = QuerySample(study, 20, seed=3)
    index = CosineIndex(study.embeddings)
    agreement = sample.agreement(index, k=5)
    _, ids = index.search(study.embeddings[sample.ids], 5, exclude=sample.ids)
    objects = study.labels[study.object_column].to_numpy()
    expected = (objects[np.asarray(ids)] == objects[sample.ids][:, None]).mean(axis=1)
    np.testing.assert_allclose(agreement["object"], expected)
    assert agreement["style"].shape == (20,) and ((0 <= agreement["style"]) & (agreement["style"] <= 1)).all()


@pytest.mark.usefixtures("private_cache")
def test_experiments_give_the_same_numbers_twice(encoder):
    from anchordiv.reproduce import experiments, world_study
    from anchordiv.reproduce.estimates import QuerySample

    study = world_study(encoder, limit=TINY.world_limit)
    tables = []
    for _ in range(2):
        sample = QuerySample(study, TINY.queries, TINY.seed)
        tables.append(pd.concat([experiments.anchor_budget(study, sample, TINY),
                                 experiments.posterior_anchors(study, sample, TINY)]))
    pd.testing.assert_frame_equal(tables[0], tables[1])
    budget = tables[0][tables[0]["budget"] == 2]
    assert (budget["draws"] == TINY.budget_seeds).all()  # random anchor subsets, each counted in the interval


def fake_imagenet_r(root: Path) -> Path:
    """Three classes x three renditions x two images, drawn as coloured shapes."""
    names = {"n01443537": "goldfish", "n01484850": "great_white_shark", "n02690373": "airliner"}
    (root / "README.txt").parent.mkdir(parents=True, exist_ok=True)
    (root / "README.txt").write_text("".join(f"{wnid} {name}\n" for wnid, name in names.items()))
    for c, wnid in enumerate(names):
        for r, rendition in enumerate(("art", "cartoon", "sketch")):
            for i in range(2):
                image = Image.new("RGB", (32, 32), (60 * r, 80 * c, 40 * i + 50))
                image.paste((255 - 60 * r, 40 * c, 200), (4 + 6 * c, 4 + 4 * i, 20 + 6 * c, 20 + 4 * i))
                (root / wnid).mkdir(exist_ok=True)
                image.save(root / wnid / f"{rendition}_{r * 2 + i}.jpg")
    return root


@needs_weights
@pytest.mark.usefixtures("private_cache")
def test_a_dataset_layout_runs_end_to_end(encoder, tmp_path):
    from anchordiv.datasets import load_layout
    from anchordiv.reproduce import layout_study

    study = layout_study(load_layout("imagenet-r", fake_imagenet_r(tmp_path / "imagenet-r")), encoder)
    assert len(study.gallery) == 18 and study.object_texts == ("goldfish", "great white shark", "airliner")
    report = run_reproduction(study, tmp_path / "out", TINY).read_text()
    for section in ("## 1. Object vs style", "## 2. Anchor budget", "## 6. Runtime", "## 7. Qualitative grids"):
        assert section in report
    assert "## 4. Posterior" not in report  # no prior vocabulary for this layout
    assert (tmp_path / "out" / "p_sweep.csv").is_file() and list((tmp_path / "out").glob("grid_*.png"))


@needs_weights
@pytest.mark.slow
def test_reproduce_quick_writes_the_whole_report(private_cache, tmp_path):
    out = tmp_path / "report"
    result = subprocess.run([sys.executable, "-m", "anchordiv", "reproduce", "--quick", "--out", str(out)], cwd=ROOT,
                            env={**os.environ, "ANCHORDIV_CACHE": str(private_cache)}, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    report = (out / "report.md").read_text()
    for section in SECTIONS:
        assert section in report, section
    assert report.count("**Holds") + report.count("**Partly holds") + report.count("**Does not hold") >= 6
    for name in ("p_sweep", "scale_sweep", "anchor_budget", "components", "posterior"):
        assert Image.open(out / f"{name}.png").size[0] > 300
        assert len(pd.read_csv(out / f"{name}.csv")) > 2
    table = pd.read_csv(out / "anchor_budget.csv")
    assert ((table["low"] <= table["mean"]) & (table["mean"] <= table["high"])).all()


@needs_weights
@pytest.mark.usefixtures("private_cache")
def test_a_folder_labelled_only_by_subfolders_runs_without_the_style_experiments(encoder, tmp_path, monkeypatch,
                                                                                 capsys):
    from anchordiv.cli import main

    monkeypatch.setattr(Settings, "quick", classmethod(lambda cls: TINY))  # the command line's path, at toy size
    folder, out = fake_imagenet_r(tmp_path / "plain"), tmp_path / "out"  # object labels from subfolders, no style
    assert main(["reproduce", "--quick", "--folder", str(folder), "--out", str(out), "--device", "cpu"]) == 0
    assert "No style labels" in capsys.readouterr().err
    report = (out / "report.md").read_text()
    assert "No style labels: the style experiments" in report and "## 1. Object vs style" not in report
    for section in ("## 1b. The logit scale", "## 2. Anchor budget", "## 6. Runtime", "## 7. Qualitative grids"):
        assert section in report
    assert set(pd.read_csv(out / "scale_sweep.csv")["target"]) == {"object"}


def test_settings_name_the_bad_size_and_take_numpy_integers():
    assert Settings(queries=np.int64(5), seed=np.int64(1)).validate().queries == 5
    with pytest.raises(ValueError, match=r"--queries must be an integer >= 1; got 0"):
        Settings(queries=0).validate(lambda name: "--" + name)
    with pytest.raises(ValueError, match=r"scale: scale must be a finite positive number"):
        Settings(scale=float("nan")).validate()


def test_posterior_verdict_says_when_the_prior_alone_does_as_well():
    rows = [{"method": f"softmax, {kind}", "budget": b, "mean": v, "low": v, "high": v}
            for kind, values in (("posterior", (0.5, 0.6)), ("target only", (0.1, 0.58))) for b, v in zip((2, 64), values)]
    strong_prior = pd.DataFrame(rows + [{"method": "softmax, prior only", "budget": np.nan, "mean": 0.65, "low": 0.6,
                                         "high": 0.7}])
    assert "the softmax prior alone scores 0.650" in verdicts.posterior_verdict(strong_prior)
    weak_prior = strong_prior.assign(mean=lambda f: np.where(f["method"].str.contains("prior"), 0.2, f["mean"]))
    assert "prior alone" not in verdicts.posterior_verdict(weak_prior)
