"""The reproduction report's figures (anchordiv.reproduce.figures), measured from their layout: drawn
from the shipped report's own tables, no legend covers a curve and no text is cut or left out."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text
from PIL import Image

from anchordiv.explorer.report import REPORT_FOLDER
from anchordiv.reproduce.figures import DPI, REPORT_FIGURES, redraw_report_figures

# Points sampled along each segment of a line: a legend can cover a line between its data points.
STEPS = 60


@pytest.fixture(scope="module", params=sorted(REPORT_FIGURES))
def drawn(request) -> Figure:
    """Each report figure, drawn from the shipped report's table and laid out as it is saved."""
    figure = REPORT_FIGURES[request.param](pd.read_csv(REPORT_FOLDER / f"{request.param}.csv"))
    figure.canvas.draw()
    yield figure
    figure.clf()


def line_points(line: Line2D) -> np.ndarray:
    """Display coordinates of ``line``: its data points and points along every segment between them."""
    points = line.get_transform().transform(np.asarray(line.get_xydata(), dtype=float))
    points = points[np.isfinite(points).all(axis=1)]
    steps = np.linspace(0, 1, STEPS)[:, None]
    along = [start + steps * (end - start) for start, end in zip(points[:-1], points[1:])]
    return np.concatenate([points, *along]) if along else points


def test_no_legend_covers_a_plotted_line(drawn):
    legends = [axis.get_legend() for axis in drawn.axes if axis.get_legend()]
    assert legends, "a report figure without its legend"
    for legend in legends:
        box = legend.get_window_extent()
        for axis in drawn.axes:
            for line in axis.get_lines():
                points = line_points(line)
                inside = ((points[:, 0] >= box.x0) & (points[:, 0] <= box.x1)
                          & (points[:, 1] >= box.y0) & (points[:, 1] <= box.y1))
                assert not inside.any(), f"the legend covers {line.get_label()!r} at {points[inside][0]}"


def test_every_legend_entry_is_a_curve_s_full_label(drawn):
    """The legend's displayed texts are the plotted lines' own labels, whole."""
    for axis in drawn.axes:
        legend = axis.get_legend()
        if legend is None:
            continue
        shown = [text.get_text() for text in legend.get_texts()]
        labels = [line.get_label() for line in axis.get_lines() if not line.get_label().startswith("_")]
        assert shown == labels


def shown_texts(figure: Figure) -> list[Text]:
    """The texts ``figure`` draws: titles, axis labels, legend texts and the tick labels inside the
    axes' limits (matplotlib keeps labels for ticks beyond them, which it does not draw)."""
    texts = []
    for axis in figure.axes:
        texts += [axis.title, axis.xaxis.label, axis.yaxis.label]
        legend = axis.get_legend()
        texts += legend.get_texts() if legend else []
        for ruler in (axis.xaxis, axis.yaxis):
            low, high = sorted(ruler.get_view_interval())
            for minor in (False, True):
                texts += [label for label, at in zip(ruler.get_ticklabels(minor=minor), ruler.get_ticklocs(minor=minor))
                          if low <= at <= high]
    return [text for text in texts if text.get_visible()]


def test_no_text_is_cut_by_the_figure_s_edge(drawn):
    """Titles, axis labels, tick labels and legend texts lie inside the figure's canvas: the layout
    made room for them, so the saved image needs no cropping that could cut one."""
    renderer = drawn.canvas.get_renderer()
    texts = [text for text in shown_texts(drawn) if text.get_text().strip()]
    assert len(texts) > 10, [text.get_text() for text in texts]
    canvas = drawn.bbox
    for text in texts:
        box = text.get_window_extent(renderer)
        assert (canvas.x0 <= box.x0 and box.x1 <= canvas.x1 and canvas.y0 <= box.y0 and box.y1 <= canvas.y1), \
            f"{text.get_text()!r} is cut off at {box} (canvas {canvas})"


def saved_size(figure: Figure) -> tuple[float, float]:
    """The pixel size of ``figure`` saved by the report: its tight box, padded, at the report's DPI."""
    figure.canvas.draw()
    tight = figure.get_tightbbox().padded(plt.rcParams["savefig.pad_inches"])
    return tight.width * DPI, tight.height * DPI


def test_redrawn_and_shipped_figures_are_the_current_drawing_legend_included(tmp_path):
    """Redrawn from the tables of a report folder: one PNG per table, as large as the figure with its
    legend; the PNGs shipped with the report are the same drawing (made by this code, not an older one)."""
    for name in REPORT_FIGURES:
        (tmp_path / f"{name}.csv").write_bytes((REPORT_FOLDER / f"{name}.csv").read_bytes())
    written = redraw_report_figures(tmp_path)
    assert sorted(path.name for path in written) == sorted(f"{name}.png" for name in REPORT_FIGURES)
    for path in written:
        width, height = saved_size(REPORT_FIGURES[path.stem](pd.read_csv(tmp_path / f"{path.stem}.csv")))
        for png in (path, REPORT_FOLDER / path.name):
            with Image.open(png) as image:
                assert abs(image.width - width) <= 2 and abs(image.height - height) <= 2, png
