"""Plots of the experiment tables (matplotlib, drawn off-screen to PNG files)."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on servers; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

TARGET_COLOURS = {"object": "tab:blue", "style": "tab:red"}


def _band(axis, frame: pd.DataFrame, x: str, label: str, colour=None, style: str = "-") -> None:
    frame = frame.sort_values(x)
    line, = axis.plot(frame[x], frame["mean"], style, marker="o", markersize=3, label=label, color=colour)
    axis.fill_between(frame[x], frame["low"], frame["high"], alpha=0.15, color=line.get_color())


def _reference_lines(axis, frame: pd.DataFrame, target: str, colour) -> None:
    for method, style in (("cosine", ":"), ("ITI", "-.")):
        rows = frame[(frame["method"] == method) & (frame["target"] == target)]
        if len(rows):
            axis.axhline(rows["mean"].iloc[0], linestyle=style, color=colour, linewidth=1,
                         label=f"{method}, {target}-mAP")


def _save(figure, path: Path) -> Path:
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def plot_p_sweep(frame: pd.DataFrame, path: Path) -> Path:
    methods = [m for m in ("softmax", "Gaussian") if m in set(frame["method"])]
    figure, axes = plt.subplots(1, len(methods), figsize=(5.5 * len(methods), 4), squeeze=False)
    for axis, method in zip(axes[0], methods):
        for target, colour in TARGET_COLOURS.items():
            for weighting, style in (("calibrated", "-"), ("balanced", "-."), ("literal", "--")):
                rows = frame[(frame["method"] == method) & (frame["weighting"] == weighting) & (frame["target"] == target)]
                _band(axis, rows, "p", f"{target}-mAP, {weighting}", colour, style)
            _reference_lines(axis, frame, target, colour)
        axis.set(title=f"{method}: object vs style anchors", xlabel="p (weight of the object anchors)", ylabel="mAP")
    axes[0][-1].legend(fontsize=7, loc="best")
    return _save(figure, path)


def plot_scale_sweep(frame: pd.DataFrame, path: Path) -> Path:
    figure, axis = plt.subplots(figsize=(5.5, 4))
    for target, colour in TARGET_COLOURS.items():
        rows = frame[(frame["method"] == "softmax") & (frame["target"] == target)]
        if len(rows):
            _band(axis, rows, "scale", f"softmax, {target} anchors: {target}-mAP", colour)
            learned = rows[rows["learned"]]
            axis.scatter(learned["scale"], learned["mean"], marker="*", s=120, color=colour, zorder=3)
        _reference_lines(axis, frame, target, colour)
    axis.set(xscale="log", xlabel="logit scale s (star: the encoder's learned scale)", ylabel="mAP",
             title="Softmax anchor divergence against the scale")
    axis.legend(fontsize=7)
    return _save(figure, path)


def plot_against(frame: pd.DataFrame, x: str, path: Path, title: str, log_x: bool = True) -> Path:
    """mAP against ``x`` (budget, components) per method, with intervals; cosine/prior-only as lines."""
    figure, axis = plt.subplots(figsize=(6.5, 4.2))
    curves = frame[frame[x].notna()] if x in frame else frame.iloc[0:0]
    for method in pd.unique(curves["method"]):
        style = "--" if "target only" in method else "-"
        _band(axis, curves[curves["method"] == method], x, method, style=style)
    flat = frame[frame[x].isna()] if x in frame else frame
    for _, row in flat.iterrows():
        axis.axhline(row["mean"], linestyle=":", linewidth=1, color="grey")
        axis.annotate(row["method"], (curves[x].min() if len(curves) else 1, row["mean"]), fontsize=7, color="grey",
                      va="bottom")
    if log_x:
        axis.set_xscale("log", base=2)
    axis.set(xlabel=x, ylabel="object mAP", title=title)
    axis.legend(fontsize=7)
    return _save(figure, path)
