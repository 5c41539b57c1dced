"""The rehearsal's record (:mod:`anchordiv.benchmarks.rehearsal`): what each step did in each window
size, Play's figures, and their write-up as ``rehearsal.md`` (tables of seconds per step and of
Play's frames, then each step's note and screenshot) and ``rehearsal.json`` (the same figures).

A step's status is ``ok``; ``no effect`` when it ran but what it is for did not show (its note
says what the page showed instead); ``failed`` when it raised (its note is the error); or ``not
run`` when the rehearsal's time was up. Notes quote the page's own text, which is written out
literally (:func:`~anchordiv.explorer.literal.markdown_literal`), never as Markdown.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

from ..explorer.literal import markdown_literal
from .play_frames import PlayFrames

STATUSES = ("ok", "no effect", "failed", "not run")
NOTE_CHARS = 600


@dataclass
class StepResult:
    """One step in one window: its name, status (:data:`STATUSES`), seconds from the action until the
    page was at rest (``None`` when it failed or did not run), note, and screenshot (a path relative
    to the output folder, ``None`` when none was taken)."""
    step: str
    status: str
    seconds: float | None = None
    note: str = ""
    screenshot: str | None = None


@dataclass
class PlayResult:
    """Play in one window: the frame figures of :mod:`~anchordiv.benchmarks.play_frames`, the
    screencast's frame count and span (seconds), and the filmstrip (a relative path)."""
    figures: PlayFrames
    screencast_frames: int
    screencast_s: float
    filmstrip: str | None


@dataclass
class SizeResult:
    """The walk in one window size (``"1500x1000"``): its steps in order, and Play (``None`` when that
    step failed)."""
    size: str
    steps: list[StepResult] = field(default_factory=list)
    play: PlayResult | None = None


def _cell(step: StepResult | None) -> str:
    if step is None:
        return ""
    if step.seconds is None:
        return step.status
    seconds = f"{step.seconds:.2f}"
    return seconds if step.status == "ok" else f"{seconds} ({step.status})"


def _play_rows(sizes: Sequence[SizeResult]) -> list[tuple[str, list[str]]]:
    """Play's figures as table rows: (what, one cell per size)."""
    def cells(read) -> list[str]:
        return ["" if size.play is None else read(size.play) for size in sizes]

    return [
        ("frames sampled (every animation frame)", cells(lambda play: f"{play.figures.frames}")),
        ("seconds sampled", cells(lambda play: f"{play.figures.seconds:.1f}")),
        ("tiles in the grid", cells(lambda play: f"{play.figures.tiles}")),
        ("share of frames settled", cells(lambda play: f"{play.figures.settled_share:.0%}")),
        ("bad frames (not settled)", cells(lambda play: f"{play.figures.bad_frames}")),
        ("median settled stretch", cells(lambda play: f"{play.figures.median_settled_s:.2f} s "
                                                      f"({play.figures.settled_stretches} stretches)")),
        ("frames with under half the tiles drawn", cells(lambda play: f"{play.figures.sparse_frames}")),
        ("screencast: composited frames received", cells(lambda play: f"{play.screencast_frames} in "
                                                                      f"{play.screencast_s:.1f} s")),
        ("filmstrip", cells(lambda play: f"[picture]({play.filmstrip})" if play.filmstrip else "")),
    ]


def markdown(sizes: Sequence[SizeResult], heading: str, about: str) -> str:
    """The write-up: ``heading``, ``about`` (a paragraph of the run's settings), the table of seconds
    per step (steps in the order of the first size that has each), Play's table, then the notes."""
    names = list(dict.fromkeys(step.step for size in sizes for step in size.steps))
    found = [{step.step: step for step in size.steps} for size in sizes]
    header = "| step | " + " | ".join(size.size for size in sizes) + " |"
    rule = "|---|" + "---:|" * len(sizes)
    lines = [f"# {heading}", "", about, "", "## Seconds per step", "",
             "Seconds from the action until the page was at rest (the runs it started over, their images "
             "loaded); *no effect*: the step ran but what it is for did not show; *failed*: it raised. "
             "The notes below say what happened.", "", header, rule]
    lines += [f"| {name} | " + " | ".join(_cell(steps.get(name)) for steps in found) + " |" for name in names]
    lines += ["", "## Play, frame by frame", "",
              "Play pressed, the anchor-divergence grid read on every animation frame for a few seconds, "
              "Pause pressed (`anchordiv.benchmarks.play_frames`). A frame is settled when every tile is drawn "
              "whole and no two overlap; the screencast is Chromium's own composited frames over the same "
              "seconds, from which the filmstrip is cut.", "", header.replace("| step |", "| figure |"), rule]
    lines += [f"| {what} | " + " | ".join(cells) + " |" for what, cells in _play_rows(sizes)]
    lines += ["", "## Notes"]
    for size in sizes:
        lines += ["", f"### {size.size}", ""]
        for number, step in enumerate(size.steps, 1):
            seconds = "" if step.seconds is None else f", {step.seconds:.2f} s"
            picture = f" [screenshot]({step.screenshot})" if step.screenshot else ""
            lines.append(f"{number}. **{step.step}** ({step.status}{seconds}): "
                         f"{markdown_literal(step.note, NOTE_CHARS)}{picture}")
    return "\n".join(lines) + "\n"


def write_report(out: Path, sizes: Sequence[SizeResult], heading: str, about: str, settings: dict) -> list[Path]:
    """``rehearsal.md`` (:func:`markdown`) and ``rehearsal.json`` (``settings`` and every size's
    steps and Play figures, ``settled_share`` and ``bad_frames`` included) in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    md, js = out / "rehearsal.md", out / "rehearsal.json"
    md.write_text(markdown(sizes, heading, about), encoding="utf-8")
    records = []
    for size in sizes:
        record = asdict(size)
        if size.play is not None:
            record["play"]["figures"].update(settled_share=size.play.figures.settled_share,
                                             bad_frames=size.play.figures.bad_frames)
        records.append(record)
    js.write_text(json.dumps({**settings, "sizes": records}, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return [md, js]
