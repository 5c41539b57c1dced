"""Run every experiment that applies to a study and write the report: Markdown, PNG and CSV files."""
from __future__ import annotations

import logging
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable

import pandas as pd

from ..cache import check_folder
from . import experiments as ex
from . import figures, verdicts
from .estimates import QuerySample
from .study import Study

logger = logging.getLogger(__name__)
REPORT_NAME = "report.md"
NO_STYLES = ("No style labels: the style experiments (the p sweep, the style half of the scale sweep and the "
             "style rows of the grids) are skipped. To run them, give each image a style, e.g. a labels CSV with a "
             "`style` column (`--labels`, `--style-column`).")


class _Report:
    """Markdown sections and the files they point to, under one output folder."""

    def __init__(self, out: Path):
        self.out = out
        self.lines: list[str] = []

    def section(self, title: str, verdict: str | None = None) -> None:
        self.lines += ["", f"## {title}", ""]
        if verdict:
            self.lines += [f"**{verdict}**", ""]

    def text(self, *lines: str) -> None:
        self.lines += [*lines, ""]

    def table(self, frame: pd.DataFrame, name: str, shown: pd.DataFrame | None = None) -> None:
        frame.to_csv(self.out / f"{name}.csv", index=False)
        self.lines += [markdown_table(shown if shown is not None else frame), "",
                       f"Data: [{name}.csv]({name}.csv)", ""]

    def figure(self, path: Path, caption: str) -> None:
        self.lines += [f"![{caption}]({path.name})", ""]

    def write(self) -> Path:
        path = self.out / REPORT_NAME
        path.write_text("\n".join(self.lines).lstrip() + "\n")
        return path


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub Markdown table of ``frame``: whole numbers as integers, other floats to 3 decimals
    below 1 (AP values) and 3 significant digits above (scales), NaN as blank."""
    def cell(value) -> str:
        if isinstance(value, float):
            if value != value:
                return ""
            if value.is_integer():
                return str(int(value))
            return f"{value:.3g}" if abs(value) >= 1 else f"{value:.3f}"
        return str(value).replace("|", "\\|")

    header = [str(column) for column in frame.columns]
    rows = [[cell(value) for value in row] for row in frame.itertuples(index=False)]
    return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
                      *("| " + " | ".join(row) + " |" for row in rows)])


def _interval(frame: pd.DataFrame) -> pd.Series:
    return frame.apply(lambda r: f"{r['mean']:.3f} [{r['low']:.3f}, {r['high']:.3f}]", axis=1)


def _wide(frame: pd.DataFrame, index: str, columns: str) -> pd.DataFrame:
    """mean [low, high] strings, one row per ``index`` value and one column per ``columns`` value."""
    shown = frame.assign(value=_interval(frame))
    return shown.pivot_table(index=index, columns=columns, values="value", aggfunc="first", sort=False).reset_index()


def run_reproduction(study: Study, out: str | Path, settings: ex.Settings) -> Path:
    """Run the experiments that ``study`` supports with ``settings`` and write ``out/report.md``
    with its figures and CSV tables; returns the report's path. The settings and the output
    folder are checked before any experiment runs (``ValueError`` naming the problem). Each
    experiment's start and seconds are logged at INFO."""
    settings.validate()
    out = check_folder(out, f"report folder {str(out)!r}", "choose a folder you can write to")
    out.mkdir(parents=True, exist_ok=True)
    report = _Report(out)
    sample = QuerySample(study, settings.queries, settings.seed)
    started = time.perf_counter()

    def timed(name: str, action: Callable[[], object]) -> object:
        start = time.perf_counter()
        logger.info(f"{name}…")
        result = action()
        logger.info(f"{name}: {time.perf_counter() - start:.1f} s")
        return result

    report.text("# anchordiv reproduction report",
                f"Study: **{study.name}**, {len(study.gallery):,} images; encoder `{study.encoder_name}` (learned logit "
                f"scale {study.learned_scale:.1f}); anchor-divergence scale s = {settings.scale:g} unless stated; "
                f"{len(sample):,} queries drawn with seed {settings.seed}, each left out of its own ranking.",
                f"Anchors: {len(study.object_texts)} object, {len(study.style_texts)} style, "
                f"{len(study.prior_texts)} prior (posterior experiment).",
                "Every number is a mean AP (AUPRC) with a 95% percentile-bootstrap interval in brackets: over "
                "queries, and also over random anchor subsets wherever anchors are drawn (a two-way bootstrap). "
                "A verdict says whether the paper's direction of effect holds here; \"clearly\" means intervals "
                "that do not overlap.", *study.notes)
    has_objects, has_styles = study.object_column is not None, study.style_column is not None
    if not has_styles:
        report.text(NO_STYLES)
        logger.warning(NO_STYLES)

    if has_objects and has_styles:
        frame = timed("p sweep", lambda: ex.p_sweep(study, sample, settings))
        report.section("1. Object vs style anchors: the p sweep (paper Fig. 3, left)", verdicts.p_sweep_verdict(frame))
        report.figure(figures.save_report_figure("p_sweep", frame, out), "p sweep")
        curves = frame[frame["p"].notna()]
        report.table(frame, "p_sweep", _wide(curves.assign(curve=curves["method"] + ", " + curves["weighting"] + ", "
                                                           + curves["target"] + "-mAP"), "p", "curve"))
        report.text("Where object-mAP overtakes style-mAP, and how far object- and style-mAP and the agreement of the "
                    "top-10 with the query's object and style have moved at p = 0.5 (0: the p = 0 value, 1: the p = 1 "
                    "value). Calibrated weights aim p = 0.5 at half-way, measured without labels.")
        report.table(ex.crossings(frame), "p_crossings")
    if has_objects:
        frame = timed("scale sweep", lambda: ex.scale_sweep(study, sample, settings))
        report.section("1b. The logit scale", verdicts.scale_verdict(frame))
        report.figure(figures.save_report_figure("scale_sweep", frame, out), "scale sweep")
        report.table(frame, "scale_sweep")

        frame = timed("anchor budget", lambda: ex.anchor_budget(study, sample, settings))
        report.section("2. Anchor budget (paper Fig. 4 left, Fig. 6)", verdicts.budget_verdict(frame))
        report.figure(figures.save_report_figure("anchor_budget", frame, out), "anchor budget")
        report.table(frame, "anchor_budget", _wide(frame[frame["budget"].notna()], "budget", "method"))

        frame = timed("mixture components", lambda: ex.mixture_components(study, sample, settings))
        report.section("3. Gaussian-mixture components (paper Fig. 7)", verdicts.components_verdict(frame))
        if len(frame):
            report.figure(figures.save_report_figure("components", frame, out), "components")
            report.table(frame, "components")

    if has_objects and len(study.prior_texts) >= 2:
        frame = timed("posterior anchors", lambda: ex.posterior_anchors(study, sample, settings))
        report.section("4. Posterior anchors (paper Fig. 5)", verdicts.posterior_verdict(frame))
        report.text(f"Prior: {len(study.prior_texts)} broad anchors; concentration alpha = {settings.posterior_alpha:g}. "
                    "Dashed curves use the target anchors only, solid ones the posterior from the prior.")
        report.figure(figures.save_report_figure("posterior", frame, out), "posterior anchors")
        report.table(frame, "posterior", _wide(frame[frame["budget"].notna()], "budget", "method"))

    if study.condition_columns or (study.group_column and has_objects):
        frame = timed("condition-wise table", lambda: ex.condition_table(study, sample, settings))
        report.section("5. Condition-wise AUPRC differences (paper Tables 2-3)", verdicts.condition_verdict(frame))
        report.text(f"Each anchor model is fitted to {settings.condition_subsets} random subsets of "
                    f"{settings.condition_fraction:.0%} of the object anchors; intervals resample queries and subsets. "
                    f"Bold: above +{verdicts.THRESHOLD}; bold with ▼: below −{verdicts.THRESHOLD}; plain: in between.")
        shown = frame.assign(value=frame.apply(lambda r: f"{verdicts.mark(r['mean'])} ± {(r['high'] - r['low']) / 2:.4f}",
                                               axis=1))
        wide = shown.pivot_table(index="group", columns="comparison", values="value", aggfunc="first", sort=False)
        order = ["softmax − cosine", "softmax − ITI", "ITI − cosine", "Gaussian − cosine", "latent Gaussian − cosine",
                 "latent softmax − cosine"]
        report.table(frame, "condition_table", wide[[c for c in order if c in wide.columns]].reset_index())

    frame = timed("runtime", lambda: ex.runtime(study, settings))
    report.section("6. Runtime (paper Table 4 shape)", verdicts.runtime_verdict(frame))
    report.text(f"Fit + gallery preprocessing + top-10 retrieval for {settings.bench_queries:,} queries over "
                f"{settings.bench_gallery:,} synthetic gallery vectors (d = {study.embeddings.shape[1]}), best of 2 "
                "runs on this machine (the paper: an H100). Seconds vary from run to run; nothing else in this "
                "report does.")
    report.table(frame.pivot_table(index="method", columns="anchors", values="seconds", sort=False).reset_index(),
                 "runtime")

    grids = timed("qualitative grids", lambda: ex.qualitative_grids(study, sample, settings))
    report.section("7. Qualitative grids (paper Fig. 1, 8)")
    report.text("Per query: its top neighbours under cosine, object anchors, style anchors and their balanced "
                "mixture (softmax).")
    for query_id, png in grids.items():
        path = out / f"grid_{query_id}.png"
        path.write_bytes(png)
        report.figure(path, f"neighbours of {study.gallery.caption(query_id)}")

    report.section("Settings")
    report.text("```", *(f"{key} = {value}" for key, value in asdict(settings).items()), "```",
                f"Total time: {time.perf_counter() - started:.0f} s.")
    return report.write()
