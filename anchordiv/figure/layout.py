"""A figure's sizes in inches (:class:`FigureLayout`), and the size of a figure of so many rows,
columns and neighbours."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FigureLayout:
    """Sizes in inches: ``thumb`` a neighbour's side, ``query`` the query image's side; the rest
    are gaps and text bands. The defaults fit a two-column paper at 3 geometries of 5 neighbours."""

    thumb: float = 0.55
    query: float = 0.7
    gap: float = 0.04
    column_gap: float = 0.16
    margin: float = 0.12
    header: float = 0.34  # two lines of column label
    caption: float = 0.3  # under a thumbnail: its caption's lines, then its obj/sty marks
    caption_lines: int = 2
    mark_line: float = 0.11  # the marks' line, at the foot of the caption band
    agreement: float = 0.12
    row_gap: float = 0.1
    legend: float = 0.22
    settings_line: float = 0.13
    font: float = 6.0
    min_cell: float = 1.3

    @property
    def small_font(self) -> float:
        """The smallest text's size in points: a neighbour's caption and its marks."""
        return self.font - 1.5

    def cell_width(self, k: int) -> float:
        """A column's width: its ``k`` thumbnails, or room for the header and counts when ``k`` is small."""
        return max(k * self.thumb + (k - 1) * self.gap, self.min_cell)

    def row_height(self) -> float:
        return max(self.thumb + self.caption + self.agreement, self.query + self.caption) + self.row_gap


# CompareSettings.lines has at least these: how the cells rank and the gallery (a figure of cosine
# columns names no anchors).
_FEWEST_SETTINGS_LINES = 2


def least_size(n_rows: int, n_columns: int, k: int, layout: FigureLayout) -> tuple[float, float]:
    """The smallest figure of that many rows, columns and neighbours: one-line headers and settings
    lines (their text is known only once the gallery is)."""
    return figure_inches(n_rows, n_columns, k, layout.header, _FEWEST_SETTINGS_LINES, layout)


def figure_inches(n_rows: int, n_columns: int, k: int, header: float, settings_lines: int,
          layout: FigureLayout, footer: bool = True) -> tuple[float, float]:
    """``(width, height)``; without ``footer``, no room for the legend and the settings lines."""
    height = (2 * layout.margin + header + n_rows * layout.row_height()
              + (layout.legend + settings_lines * layout.settings_line if footer else 0.0))
    return figure_width(n_columns, k, layout), height


def figure_width(n_columns: int, k: int, layout: FigureLayout) -> float:
    return 2 * layout.margin + layout.query + n_columns * (layout.column_gap + layout.cell_width(k))

