"""The shipped reproduction report (``docs/reproduction/builtin-world/report.md``, installed as the
package data :func:`anchordiv.resources.report_dir`) as sections of text, figures and data tables,
for the explorer's Report page (:func:`read_report`, :func:`report_figure`, :func:`report_table`,
:func:`markdown_table_frame`)."""
from __future__ import annotations

import io
import re
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path

import pandas as pd
from PIL import Image

from ..images import load_image, read_regular_file
from ..resources import report_dir

REPORT_FOLDER = report_dir()
REPORT_NAME = "report.md"
_IMAGE = re.compile(r"^!\[(?P<label>[^\]]*)\]\((?P<file>[^)\s]+)\)\s*$")
# A report's data table is a few kB; a larger file in its folder is not read into every session.
MAX_TABLE_BYTES = 10 * 2**20
_DATA = re.compile(r"^Data: \[(?P<label>[^\]]*)\]\((?P<file>[^)\s]+\.csv)\)\s*$")
# A cell border of a GitHub Markdown table row: a "|" that the report did not escape as "\|".
_CELL_BORDER = re.compile(r"(?<!\\)\|")


@dataclass(frozen=True)
class ReportBlock:
    """``kind`` "text" (Markdown), "table" (a Markdown table, see :func:`markdown_table_frame`),
    "image" (a PNG of the report) or "data" (a CSV of the report); ``text`` the Markdown or the
    label, ``path`` the file for images and data."""

    kind: str
    text: str
    path: Path | None = None


@dataclass(frozen=True)
class ReportSection:
    title: str
    blocks: tuple[ReportBlock, ...]

    @property
    def short_title(self) -> str:
        """The title up to its first colon or parenthesis ("1. Object vs style anchors"), for a tab."""
        return re.split(r"[:(]", self.title, maxsplit=1)[0].strip() or self.title

    @property
    def outcome(self) -> str | None:
        """The verdict's first words, up to its first colon outside brackets ("Holds", "Partly
        holds", "Does not show the ImageNet trend (CUB-like: flat or inconsistent)"), or ``None``
        without a verdict."""
        verdict = self.verdict
        return None if verdict is None else _before_colon(verdict).strip()

    @property
    def verdict(self) -> str | None:
        """The section's verdict (its first paragraph when that is in bold), without the bold."""
        first = next((block.text for block in self.blocks if block.kind == "text"), "")
        paragraph = first.split("\n\n", 1)[0].strip()
        if paragraph.startswith("**") and paragraph.endswith("**"):
            return paragraph[2:-2]
        return None


def read_report(folder: str | Path = REPORT_FOLDER) -> tuple[str, list[ReportSection]]:
    """``(title, sections)`` of the report in ``folder``: the text before the first ``##`` heading
    is the first section ("Study"). Figures and data files are only those inside ``folder``; a link
    to anything else stays text. ``ValueError`` with the command that writes it when there is none."""
    folder = Path(folder)
    path = folder / REPORT_NAME
    if not path.is_file():
        raise ValueError(f"there is no reproduction report at {path}; write it with "
                         f"`python -m anchordiv reproduce --out {folder}` (about ten minutes on 2 cores)")
    lines = path.read_text(encoding="utf-8").splitlines()
    title = lines[0].lstrip("# ").strip() if lines and lines[0].startswith("# ") else "Reproduction report"
    sections: list[ReportSection] = []
    heading, blocks, text = "Study", [], []
    for line in lines[1:] if lines and lines[0].startswith("# ") else lines:
        if line.startswith("## "):
            sections.append(_section(heading, blocks, text))
            heading, blocks, text = line[3:].strip(), [], []
            continue
        block = _file_block(line, folder)
        if block is None:
            text.append(line)
            continue
        blocks.extend(_text_block(text))
        blocks.append(block)
        text = []
    sections.append(_section(heading, blocks, text))
    return title, [section for section in sections if section.blocks]


def _file_block(line: str, folder: Path) -> ReportBlock | None:
    """An image or data block for a line that links one of the report's own files."""
    for kind, pattern in (("image", _IMAGE), ("data", _DATA)):
        match = pattern.match(line.strip())
        if match:
            target = (folder / match["file"]).resolve()
            if target.parent == folder.resolve() and target.is_file():
                return ReportBlock(kind, match["label"], target)
    return None


def _text_block(lines: list[str]) -> list[ReportBlock]:
    """Text and table blocks of ``lines``, in order: each run of table rows is a table block, so the
    page can lay it out in a box of its own instead of letting a wide table run past the column."""
    blocks = []
    for is_table, run in groupby(lines, key=lambda line: line.lstrip().startswith("|")):
        text = "\n".join(run).strip()
        blocks += [ReportBlock("table" if is_table else "text", text)] if text else []
    return blocks


def _section(title: str, blocks: list[ReportBlock], text: list[str]) -> ReportSection:
    return ReportSection(title, tuple(blocks + _text_block(text)))


def markdown_table_frame(text: str) -> pd.DataFrame:
    """The rows of a GitHub Markdown table (a "table" block) under its header, each cell still
    Markdown (bold, ``\\|``); the ``|---|`` line under the header is left out."""
    rows = [[cell.strip() for cell in _CELL_BORDER.split(line.strip().strip("|"))] for line in text.splitlines()]
    header, body = rows[0], rows[1:]
    if body and all(cell and set(cell) <= set("-:") for cell in body[0]):
        body = body[1:]
    return pd.DataFrame([row + [""] * (len(header) - len(row)) for row in body], columns=header)


def report_figure(path: Path) -> Image.Image:
    """A report's figure through the loader uploads go through: ``ImageLoadError`` (a
    ``ValueError`` naming the file) for a damaged, huge or decompression-bomb image."""
    return load_image(path, path.name)


def report_table(path: Path) -> pd.DataFrame:
    """A report's data table; ``ValueError`` naming the file when it is too large or not a CSV."""
    data = read_regular_file(path, path.name, MAX_TABLE_BYTES, "for a report's table")
    try:
        return pd.read_csv(io.BytesIO(data))
    except (ValueError, UnicodeDecodeError) as error:  # pandas' parser and empty-data errors are ValueErrors
        raise ValueError(f"{path.name}: not a readable CSV table ({error})") from error


def _before_colon(text: str) -> str:
    """``text`` up to its first colon outside round brackets (all of it without one): a colon
    inside brackets belongs to the aside, not to the sentence's head."""
    depth = 0
    for position, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == ":" and depth <= 0:
            return text[:position]
    return text
