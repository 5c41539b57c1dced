"""The paper's experiments (figures 3-7, tables 2-4) as functions from a study to tidy tables.

Every function takes a :class:`~anchordiv.reproduce.study.Study`, a
:class:`~anchordiv.reproduce.estimates.QuerySample` and :class:`Settings`, and returns a
``pandas.DataFrame`` with one row per estimate: ``mean``, ``low``, ``high`` (a 95% bootstrap
interval over queries, and over random anchor subsets where anchors are drawn), ``draws`` and
``queries``. Seeds are fixed by ``Settings.seed``, so two runs give the same numbers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd
import torch
from PIL import Image

from .._validation import check_positive_int, check_scale
from ..grids import grid_image, png_bytes
from ..models import AnchorModel, EmpiricalAnchors, GaussianAnchors, MixtureAnchors, anchor_model_kind
from ..models.registry import ANCHORS_PER_COMPONENT
from ..search import AnchorIndex, CosineIndex, ITIIndex
from .estimates import QuerySample, estimate
from .study import Study


@dataclass(frozen=True)
class Settings:
    """Sizes of a reproduction run; on 2 CPU cores, once the world is embedded and cached,
    :meth:`quick` takes about a minute and :meth:`full` about 12."""

    queries: int = 2000
    scale: float = 10.0
    p_grid: tuple[float, ...] = tuple(np.round(np.linspace(0, 1, 11), 2))
    scales: tuple[float, ...] = (2.0, 5.0, 10.0, 20.0, 50.0, 100.0)
    budgets: tuple[int, ...] = (2, 4, 8, 16, 32, 64, 128, 256)
    budget_seeds: int = 3
    components: tuple[int, ...] = (1, 2, 4, 8, 16)
    component_seeds: int = 2
    posterior_budgets: tuple[int, ...] = (2, 4, 8, 16, 32, 64, 128)
    posterior_seeds: int = 3
    posterior_alpha: float = 16.0
    condition_subsets: int = 5
    condition_fraction: float = 0.8
    grid_queries: int = 4
    grid_k: int = 8
    bench_queries: int = 2000
    bench_gallery: int = 10000
    bench_anchors: tuple[int, ...] = (1024, 4096, 16384)
    n_bootstrap: int = 1000
    world_limit: int | None = None
    seed: int = 0

    def validate(self, label: Callable[[str], str] = str) -> "Settings":
        """Refuse sizes a run cannot honour (``queries=0`` would fail deep inside the first
        experiment) before any work; ``label`` names a field in messages (the command line
        passes ``--queries`` for ``queries``)."""
        for name in ("queries", "budget_seeds", "component_seeds", "posterior_seeds", "condition_subsets",
                     "grid_queries", "grid_k", "bench_queries", "bench_gallery", "n_bootstrap", "seed"):
            check_positive_int(getattr(self, name), label(name), minimum=0 if name == "seed" else 1)
        if self.world_limit is not None:
            check_positive_int(self.world_limit, label("world_limit"))
        for name, value in (("scale", self.scale), *(("scales", value) for value in self.scales)):
            try:
                check_scale(value)
            except ValueError as error:
                raise ValueError(f"{label(name)}: {error}") from error
        return self

    @classmethod
    def full(cls) -> "Settings":
        return cls()

    @classmethod
    def quick(cls) -> "Settings":
        return cls(queries=400, p_grid=(0.0, 0.25, 0.5, 0.75, 1.0), scales=(5.0, 10.0, 50.0), budgets=(4, 16, 64),
                   budget_seeds=2, components=(1, 2, 4), component_seeds=1, posterior_budgets=(4, 16, 64),
                   posterior_seeds=2, condition_subsets=2, grid_queries=2, bench_queries=500, bench_gallery=2000,
                   bench_anchors=(256, 1024), n_bootstrap=300, world_limit=1800)


ModelFit = Callable[[torch.Tensor], AnchorModel]
# The grid size whose agreement the p sweep reports: the explorer's default top-k.
AGREEMENT_K = 10
# The registry's kinds compared across anchor budgets, by the name the tables give them.
BUDGET_KINDS = ("softmax", "gaussian", "gmm", "latent-gaussian", "latent-softmax")


def anchor_models(scale: float, kinds: tuple[str, ...] = BUDGET_KINDS) -> dict[str, ModelFit]:
    """``{short name: anchors -> fitted model}`` for registry ``kinds``, each fitted with the
    registry's rules for the anchor count (GMM components and latent ranks shrink with it)."""
    return {anchor_model_kind(name).short: (lambda anchors, name=name: anchor_model_kind(name).fit(anchors, scale)[0])
            for name in kinds}


def _subset(anchors: torch.Tensor, size: int, rng: np.random.Generator) -> torch.Tensor:
    return anchors[torch.as_tensor(np.sort(rng.choice(len(anchors), size=size, replace=False)))]


def _reference_rows(sample: QuerySample, study: Study, settings: Settings, targets: tuple[str, ...],
                    methods: tuple[str, ...] = ("cosine", "ITI")) -> list[dict]:
    """Rows for ``methods`` among cosine and ITI over every object and style anchor, for each target."""
    builders = {"cosine": lambda: CosineIndex(study.embeddings),
                "ITI": lambda: ITIIndex(torch.cat([study.object_anchors, study.style_anchors]), study.embeddings)}
    rows, targets = [], [target for target in targets if target in sample.targets]  # a study may lack styles
    for name in methods:
        ap = sample.average_precision(builders[name]())
        rows += [{"method": name, "target": target, **estimate(ap[target], settings.n_bootstrap).row()}
                 for target in targets]
    return rows


def p_sweep(study: Study, sample: QuerySample, settings: Settings) -> pd.DataFrame:
    """Fig. 3 (left): object- and style-mAP of ``MixtureAnchors([object, style], [p, 1 - p])`` as
    ``p`` goes 0 -> 1, softmax and Gaussian, balanced, literal and calibrated weights (calibrated on
    the gallery, without labels), with the mean agreement of the top-:data:`AGREEMENT_K` (the
    fraction sharing the query's object or style); cosine and ITI rows."""
    rows = _reference_rows(sample, study, settings, ("object", "style"))
    for name, factory in (("softmax", EmpiricalAnchors), ("Gaussian", GaussianAnchors)):
        mixture = MixtureAnchors([factory(scale=settings.scale), factory(scale=settings.scale)])
        mixture.fit([study.object_anchors, study.style_anchors])
        index = AnchorIndex(mixture, study.embeddings, device="cpu")
        parametrisations = {"balanced": mixture.with_balance(study.embeddings), "literal": mixture.with_balance(None),
                            "calibrated": mixture.with_calibration(study.embeddings, seed=settings.seed)}
        for weighting, weighted in parametrisations.items():
            for p in settings.p_grid:
                at_p = index.with_model(weighted.with_weights([p, 1 - p]))
                ap, agreement = sample.average_precision(at_p), sample.agreement(at_p, AGREEMENT_K)
                rows += [{"method": name, "weighting": weighting, "p": p, "target": target,
                          **estimate(ap[target], settings.n_bootstrap).row(),
                          f"agreement@{AGREEMENT_K}": float(agreement[target].mean())} for target in ("object", "style")]
    return pd.DataFrame(rows)


def crossings(frame: pd.DataFrame) -> pd.DataFrame:
    """Per method and weighting of a :func:`p_sweep` table: the ``p`` where object-mAP overtakes
    style-mAP (linear between grid points; NaN if it never does), and how far each of object- and
    style-mAP and object and style agreement@k has moved at ``p = 1/2`` as a fraction of its whole
    change from ``p = 0`` to ``p = 1``."""
    curves = frame[frame["p"].notna()]
    rows = []
    for (method, weighting), group in curves.groupby(["method", "weighting"], sort=False):
        table = group.pivot_table(index="p", columns="target", values="mean").sort_index()
        agreement = group.pivot_table(index="p", columns="target", values=f"agreement@{AGREEMENT_K}").sort_index()
        gap = (table["object"] - table["style"]).to_numpy()
        grid = table.index.to_numpy(dtype=float)
        above = np.flatnonzero(gap >= 0)
        crossing = np.nan
        if len(above) and above[0] > 0:
            i = above[0]
            crossing = grid[i - 1] + (grid[i] - grid[i - 1]) * (-gap[i - 1]) / (gap[i] - gap[i - 1])
        elif len(above):
            crossing = grid[0]
        moved = {f"{target}-mAP": _moved_at_half(grid, table[target].to_numpy()) for target in ("object", "style")}
        moved.update({f"same-{target}@{AGREEMENT_K}": _moved_at_half(grid, agreement[target].to_numpy())
                      for target in ("object", "style")})
        rows.append({"method": method, "weighting": weighting, "crossing p": crossing,
                     **{f"{name} moved at p = 0.5": value for name, value in moved.items()}})
    return pd.DataFrame(rows)


def _moved_at_half(grid: np.ndarray, curve: np.ndarray) -> float:
    """How far ``curve`` (over increasing ``grid`` from 0 to 1) has moved at 1/2 (linear between
    grid points), as a fraction of its change from the first point to the last; NaN when flat."""
    start, end = curve[0], curve[-1]
    return float((np.interp(0.5, grid, curve) - start) / (end - start)) if end != start else np.nan


def scale_sweep(study: Study, sample: QuerySample, settings: Settings) -> pd.DataFrame:
    """mAP of softmax on object anchors (object target) and on style anchors (style target) per
    logit scale ``s``, the encoder's learned scale included; cosine rows for reference."""
    rows = _reference_rows(sample, study, settings, ("object", "style"), methods=("cosine",))
    scales = sorted({*settings.scales, round(study.learned_scale, 1)})
    for target, anchors in (("object", study.object_anchors), ("style", study.style_anchors)):
        if target not in sample.targets or len(anchors) < 2:
            continue
        for scale in scales:
            ap = sample.average_precision(AnchorIndex(EmpiricalAnchors(scale=scale).fit(anchors), study.embeddings,
                                                      device="cpu"))
            rows.append({"method": "softmax", "target": target, "scale": scale,
                         "learned": scale == round(study.learned_scale, 1),
                         **estimate(ap[target], settings.n_bootstrap).row()})
    return pd.DataFrame(rows)


def _budget_table(sample: QuerySample, study: Study, settings: Settings, requested: tuple[int, ...], seeds: int,
                  models: dict[str, Callable[[torch.Tensor], AnchorModel]]) -> list[dict]:
    """Object-mAP of each model fitted to random subsets of the object anchors, ``seeds`` subsets
    per budget: the ``requested`` budgets below the anchor count, and every anchor once."""
    available = len(study.object_anchors)
    rows = []
    for budget in sorted({b for b in requested if 2 <= b < available} | {available}):
        draws = 1 if budget == available else seeds
        tables: dict[str, list[np.ndarray]] = {name: [] for name in models}
        for draw_no in range(draws):
            anchors = _subset(study.object_anchors, budget, np.random.default_rng([settings.seed, budget, draw_no]))
            for name, fit in models.items():
                index = AnchorIndex(fit(anchors), study.embeddings, device="cpu")
                tables[name].append(sample.average_precision(index)["object"])
        rows += [{"method": name, "budget": budget, **estimate(np.stack(table), settings.n_bootstrap).row()}
                 for name, table in tables.items()]
    return rows


def anchor_budget(study: Study, sample: QuerySample, settings: Settings) -> pd.DataFrame:
    """Fig. 4 (left) / Fig. 6: object-mAP against the number of object anchors, random subsets
    (``budget_seeds`` per budget), for softmax, Gaussian, GMM and the latent models; cosine row."""
    rows = _reference_rows(sample, study, settings, ("object",), methods=("cosine",))
    rows += _budget_table(sample, study, settings, settings.budgets, settings.budget_seeds, anchor_models(settings.scale))
    return pd.DataFrame(rows)


def mixture_components(study: Study, sample: QuerySample, settings: Settings) -> pd.DataFrame:
    """Fig. 7: object-mAP of a Gaussian mixture fitted to every object anchor against its number
    of components ``M`` (``component_seeds`` k-means starts each); ``M = 1`` is one Gaussian fitted by EM.
    Only the ``M`` the registry allows for the anchor count are run."""
    rows = []
    anchors, gmm = study.object_anchors, anchor_model_kind("gmm")
    for n_components in [m for m in settings.components if m <= len(anchors) // ANCHORS_PER_COMPONENT]:
        table = []
        for seed in range(settings.component_seeds):
            model, _ = gmm.fit(anchors, settings.scale, n_components=n_components, random_state=settings.seed + seed)
            table.append(sample.average_precision(AnchorIndex(model, study.embeddings, device="cpu"))["object"])
        rows.append({"method": "GMM", "components": n_components, **estimate(np.stack(table), settings.n_bootstrap).row()})
    return pd.DataFrame(rows)


def posterior_anchors(study: Study, sample: QuerySample, settings: Settings) -> pd.DataFrame:
    """Fig. 5: posterior anchor models (prior = the broad vocabulary, ``posterior_alpha``) adapted
    with few target anchors, against target-only models, across target budgets; prior-only rows."""
    prior, alpha, scale = study.prior_anchors, settings.posterior_alpha, settings.scale
    target_only = anchor_models(scale, ("softmax", "gaussian"))
    models = {
        "softmax, target only": target_only["softmax"],
        "softmax, posterior": lambda target: anchor_model_kind("posterior-softmax").fit(target, scale, prior,
                                                                                        alpha=alpha)[0],
        "Gaussian, target only": target_only["Gaussian"],
        "Gaussian, posterior": lambda target: anchor_model_kind("posterior-gaussian").fit(target, scale, prior,
                                                                                          alpha=alpha)[0],
    }
    rows = []
    for name, model in (("softmax, prior only", EmpiricalAnchors(scale=scale)),
                        ("Gaussian, prior only", GaussianAnchors(scale=scale))):
        ap = sample.average_precision(AnchorIndex(model.fit(prior), study.embeddings, device="cpu"))["object"]
        rows.append({"method": name, **estimate(ap, settings.n_bootstrap).row()})
    rows += _budget_table(sample, study, settings, settings.posterior_budgets, settings.posterior_seeds, models)
    return pd.DataFrame(rows)


def condition_groups(study: Study, sample: QuerySample, max_per_condition: int,
                     seed: int = 0) -> list[tuple[str, str, np.ndarray]]:
    """``(group, target, query ids)`` for the condition-wise table: per condition column, its
    positive images (at most ``max_per_condition``); otherwise the sample grouped by ``group_column``."""
    if study.condition_columns:
        groups = []
        for column in study.condition_columns:
            positives = np.flatnonzero(study.labels[column].to_numpy(dtype=bool))
            if len(positives) >= 2:
                rng = np.random.default_rng(seed)
                chosen = np.sort(rng.choice(positives, size=min(max_per_condition, len(positives)), replace=False))
                groups.append((column, column, chosen))
        return groups
    values = study.labels[study.group_column].to_numpy()[sample.ids]
    return [(str(group), "object", sample.ids[values == group]) for group in pd.unique(values)]


def condition_table(study: Study, sample: QuerySample, settings: Settings) -> pd.DataFrame:
    """Tables 2-3: per group, AUPRC differences of each anchor divergence minus cosine (and softmax
    minus ITI), fitted to ``condition_subsets`` random subsets of ``condition_fraction`` of the
    anchors; 95% intervals from a two-way bootstrap over queries and anchor subsets."""
    groups = condition_groups(study, sample, settings.queries, settings.seed)
    queries = QuerySample(study, 0, ids=np.unique(np.concatenate([ids for _, _, ids in groups])))
    position = {int(item): i for i, item in enumerate(queries.ids)}
    methods = {"ITI": None, **anchor_models(settings.scale, ("softmax", "gaussian", "latent-gaussian", "latent-softmax"))}
    cosine = queries.average_precision(CosineIndex(study.embeddings))
    per_method: dict[str, list[dict[str, np.ndarray]]] = {name: [] for name in methods}
    size = max(2, int(round(settings.condition_fraction * len(study.object_anchors))))
    for draw_no in range(settings.condition_subsets):
        anchors = _subset(study.object_anchors, size, np.random.default_rng([settings.seed, 7, draw_no]))
        for name, fit in methods.items():
            index = (ITIIndex(anchors, study.embeddings) if fit is None else
                     AnchorIndex(fit(anchors), study.embeddings, device="cpu"))
            per_method[name].append(queries.average_precision(index))
    rows = []
    for group, target, ids in groups:
        columns = [position[int(item)] for item in ids]

        def table(name: str) -> np.ndarray:
            return np.stack([draw[target][columns] for draw in per_method[name]])

        comparisons = {f"{name} − cosine": table(name) - cosine[target][columns] for name in methods}
        comparisons["softmax − ITI"] = table("softmax") - table("ITI")
        for comparison, values in comparisons.items():
            rows.append({"group": group, "comparison": comparison, **estimate(values, settings.n_bootstrap).row()})
    return pd.DataFrame(rows)


def runtime(study: Study, settings: Settings) -> pd.DataFrame:
    """Table 4: seconds for fit + gallery preprocessing + top-10 retrieval, from
    :func:`anchordiv.benchmarks.search.run_benchmark` at the study's dimension, on this machine."""
    from ..benchmarks.search import BenchConfig, run_benchmark

    config = BenchConfig(queries=settings.bench_queries, gallery=settings.bench_gallery, dim=study.embeddings.shape[1],
                         anchors=settings.bench_anchors, scale=settings.scale, methods=("cosine", "softmax", "gaussian"),
                         repeats=2, warmup=1, device="cpu", seed=settings.seed)
    result = run_benchmark(config)
    return pd.DataFrame(result["rows"])[["method", "anchors", "seconds", "vs_cosine"]]


def grid_query_ids(study: Study, sample: QuerySample, count: int) -> list[int]:
    """``count`` queries from the sample, from different groups (or objects) where there are any."""
    column = study.group_column or study.object_column
    if column is None:
        return sample.ids[:count].tolist()
    values = study.labels[column].to_numpy()[sample.ids]
    firsts = [int(sample.ids[np.flatnonzero(values == value)[0]]) for value in pd.unique(values)]
    return sorted(firsts[:: max(1, len(firsts) // count)][:count])


def qualitative_grids(study: Study, sample: QuerySample, settings: Settings) -> dict[int, bytes]:
    """Fig. 1 / Fig. 8: per query, one PNG with a row of top-``grid_k`` neighbours under each of
    cosine, object anchors, style anchors and their balanced mixture at ``p = 1/2`` (softmax)."""
    gallery, scale = study.gallery, settings.scale
    indexes = {"cosine": CosineIndex(study.embeddings),
               "object anchors": AnchorIndex(EmpiricalAnchors(scale=scale).fit(study.object_anchors), study.embeddings,
                                             device="cpu")}
    if len(study.style_anchors) >= 2:
        indexes["style anchors"] = AnchorIndex(EmpiricalAnchors(scale=scale).fit(study.style_anchors),
                                               study.embeddings, device="cpu")
        mixture = MixtureAnchors([EmpiricalAnchors(scale=scale), EmpiricalAnchors(scale=scale)])
        mixture = mixture.fit([study.object_anchors, study.style_anchors]).with_balance(study.embeddings)
        indexes["mixture, p = 0.5"] = AnchorIndex(mixture, study.embeddings, device="cpu")
    grids = {}
    for query_id in grid_query_ids(study, sample, settings.grid_queries):
        rows = [grid_image([gallery.image(query_id)], [gallery.caption(query_id)], 1, title="query")]
        for name, index in indexes.items():
            _, ids = index.search(study.embeddings[query_id:query_id + 1], settings.grid_k,
                                  exclude=torch.tensor([query_id]))
            ids = ids[0].tolist()
            rows.append(grid_image([gallery.image(i) for i in ids], [gallery.caption(i) for i in ids], settings.grid_k,
                                   title=name))
        canvas = Image.new("RGB", (max(row.width for row in rows), sum(row.height for row in rows)), "white")
        top = 0
        for row in rows:
            canvas.paste(row, (0, top))
            top += row.height
        grids[query_id] = png_bytes(canvas)
    return grids
