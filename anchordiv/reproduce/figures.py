"""Plots of the experiment tables (matplotlib, drawn off-screen to PNG files).

Each report figure is drawn from its experiment's table (:data:`REPORT_FIGURES`, by the name of the
table's CSV file), so :func:`redraw_report_figures` can draw a report's figures again from the CSV
files it wrote, without running the experiments. Legends sit to the right of the axes and
labels of flat reference lines go in the legend, so that no text covers a curve."""
from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Callable

import matplotlib

matplotlib.use("Agg")  # no display on servers; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

TARGET_COLOURS = {"object": "tab:blue", "style": "tab:red"}
# Flat reference lines (cosine, a prior alone) of draw_against: grey, told apart by their dash.
FLAT_STYLES = (":", (0, (6, 2, 1, 2)), (0, (1, 4)), (0, (8, 3)))
DPI = 110
LEGEND_WIDTH = 2.2  # inches added to a figure for the legend beside its axes


def _band(axis: Axes, frame: pd.DataFrame, x: str, label: str, colour: str | None = None, style: str = "-") -> None:
    frame = frame.sort_values(x)
    line, = axis.plot(frame[x], frame["mean"], style, marker="o", markersize=3, label=label, color=colour)
    axis.fill_between(frame[x], frame["low"], frame["high"], alpha=0.15, color=line.get_color())


def _reference_lines(axis: Axes, frame: pd.DataFrame, target: str, colour: str) -> None:
    for method, style in (("cosine", ":"), ("ITI", "-.")):
        rows = frame[(frame["method"] == method) & (frame["target"] == target)]
        if len(rows):
            axis.axhline(rows["mean"].iloc[0], linestyle=style, color=colour, linewidth=1,
                         label=f"{method}, {target}-mAP")


def _legend_beside(axis: Axes) -> None:
    """The legend of ``axis`` to its right, outside the plotted data (inside, ``loc="best"`` still
    covered curves where they fill the axes)."""
    axis.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)


def _new_figure(width: float, height: float, panels: int = 1) -> tuple[Figure, list[Axes]]:
    """A figure of ``panels`` axes side by side; constrained layout leaves room for a legend beside them."""
    figure, axes = plt.subplots(1, panels, figsize=(width, height), squeeze=False, layout="constrained")
    return figure, list(axes[0])


def save_figure(figure: Figure, path: Path) -> Path:
    """Write ``figure`` to ``path`` (PNG) cropped to everything drawn, the legend included, and close it."""
    figure.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(figure)
    return path


def draw_p_sweep(frame: pd.DataFrame) -> Figure:
    """Object- and style-mAP against p, one panel per method (softmax, Gaussian) that ``frame`` holds."""
    methods = [m for m in ("softmax", "Gaussian") if m in set(frame["method"])]
    figure, axes = _new_figure(5.5 * len(methods) + LEGEND_WIDTH, 4, len(methods))
    for axis, method in zip(axes, methods):
        for target, colour in TARGET_COLOURS.items():
            for weighting, style in (("calibrated", "-"), ("balanced", "-."), ("literal", "--")):
                rows = frame[(frame["method"] == method) & (frame["weighting"] == weighting) & (frame["target"] == target)]
                _band(axis, rows, "p", f"{target}-mAP, {weighting}", colour, style)
            _reference_lines(axis, frame, target, colour)
        axis.set(title=f"{method}: object vs style anchors", xlabel="p (weight of the object anchors)", ylabel="mAP")
    _legend_beside(axes[-1])  # the panels share their curves' styles: one legend for both
    return figure


def draw_scale_sweep(frame: pd.DataFrame) -> Figure:
    """Softmax mAP against its logit scale, per target, the encoder's learned scale starred."""
    figure, (axis,) = _new_figure(5.5 + LEGEND_WIDTH, 4)
    for target, colour in TARGET_COLOURS.items():
        rows = frame[(frame["method"] == "softmax") & (frame["target"] == target)]
        if len(rows):
            _band(axis, rows, "scale", f"softmax, {target} anchors: {target}-mAP", colour)
            learned = rows[rows["learned"].astype(bool)]  # read back from CSV, the column holds objects
            axis.scatter(learned["scale"], learned["mean"], marker="*", s=120, color=colour, zorder=3)
        _reference_lines(axis, frame, target, colour)
    axis.set(xscale="log", xlabel="logit scale s (star: the encoder's learned scale)", ylabel="mAP",
             title="Softmax anchor divergence against the scale")
    _legend_beside(axis)
    return figure


def draw_against(frame: pd.DataFrame, x: str, title: str, log_x: bool = True) -> Figure:
    """mAP against ``x`` (budget, components) per method, with intervals; rows without ``x``
    (cosine, a prior alone) as flat grey lines named in the legend."""
    figure, (axis,) = _new_figure(6.5 + LEGEND_WIDTH, 4.2)
    curves = frame[frame[x].notna()] if x in frame else frame.iloc[0:0]
    for method in pd.unique(curves["method"]):
        style = "--" if "target only" in method else "-"
        _band(axis, curves[curves["method"] == method], x, method, style=style)
    flat = frame[frame[x].isna()] if x in frame else frame
    for (_, row), style in zip(flat.iterrows(), FLAT_STYLES * len(flat)):
        axis.axhline(row["mean"], linestyle=style, linewidth=1, color="grey", label=row["method"])
    if log_x:
        axis.set_xscale("log", base=2)
    axis.set(xlabel=x, ylabel="object mAP", title=title)
    _legend_beside(axis)
    return figure


# Each figure of the report by the name of the table (CSV) it is drawn from.
REPORT_FIGURES: dict[str, Callable[[pd.DataFrame], Figure]] = {
    "p_sweep": draw_p_sweep,
    "scale_sweep": draw_scale_sweep,
    "anchor_budget": partial(draw_against, x="budget", title="Object-mAP against the number of object anchors"),
    "components": partial(draw_against, x="components", title="GMM object-mAP against its number of components"),
    "posterior": partial(draw_against, x="budget", title="Posterior against target-only anchor models"),
}


def save_report_figure(name: str, frame: pd.DataFrame, folder: Path) -> Path:
    """Draw the report figure ``name`` (a key of :data:`REPORT_FIGURES`) from ``frame`` into ``folder/name.png``."""
    return save_figure(REPORT_FIGURES[name](frame), folder / f"{name}.png")


def redraw_report_figures(folder: str | Path) -> list[Path]:
    """Draw again every figure of the report in ``folder`` whose table (``name.csv``) is there,
    e.g. after a change to how figures are drawn; the experiments are not run. Returns the PNGs written."""
    folder = Path(folder)
    return [save_report_figure(name, pd.read_csv(folder / f"{name}.csv"), folder)
            for name in REPORT_FIGURES if (folder / f"{name}.csv").is_file()]
