"""Smoke test of ``explorer-bench --browser``: one repeat of each measure, explorer and reference,
with the server's CPU per p step by stage; and of ``--sessions``: two sessions moving p at once.

It checks that the benchmarks run end to end and return sane figures, not how fast anything is
(speed is read from the command's printed output). Skipped, with the reason, when Chromium, the
playwright package or the built-in weights are missing, as tests/test_browser.py.
"""
from __future__ import annotations

import logging
import math
import os
import sys

import pytest

from anchordiv.app.step_clock import STAGES
from anchordiv.benchmarks.browser import (CHROMIUM, CPU_FIGURES, CPU_WORDS, FIRST_START, MEASURES, browser_benchmark,
                                          check_browser, step_cpu)
from anchordiv.benchmarks.browser_sessions import SESSION_MEASURES, sessions_benchmark

pytestmark = [pytest.mark.slow]


class _Lines(logging.Handler):
    """The benchmark's logged lines, as the command line prints them."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def logged(module: str, bench, **options) -> tuple[dict, list[str]]:
    """``bench(**options)``'s figures and the lines it logged through ``module``'s logger."""
    logger, handler = logging.getLogger(module), _Lines()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        return bench(**options), handler.lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.fixture(scope="module")
def results(chromium_and_weights):
    return logged("anchordiv.benchmarks.browser", browser_benchmark, repeats=1, split="heldout", limit=96)


def test_every_measure_has_a_positive_finite_time_for_both_apps(results):
    """Every measure is known for both apps but the release's run, which only the explorer's p
    player has (the reference's slider runs the script on each step)."""
    figures, _ = results
    for app in ("explorer", "reference"):
        assert set(figures[app]) == {*MEASURES, "cpu", "release_cpu", "runs_per_step"}, app
        for measure in MEASURES:
            seconds = figures[app][measure]
            if app == "reference" and measure == "release_s":
                assert seconds is None
                continue
            assert math.isfinite(seconds) and seconds > 0, (app, measure, seconds)
    assert figures["explorer"]["release_s"] > figures["explorer"]["move_p_rest_s"]


def test_a_page_is_at_rest_no_sooner_than_its_grid_changed(results):
    """At rest is when the page itself has taken in the run's end, read by the page's clock: the
    last message reaching the browser (the old reading) came before the page drew the grid."""
    figures, _ = results
    for app in ("explorer", "reference"):
        assert figures[app]["move_p_rest_s"] >= figures[app]["move_p_grid_s"], (app, figures[app])


def known(cpu: dict) -> None:
    assert list(cpu) == list(CPU_FIGURES)
    for figure, seconds in cpu.items():
        assert seconds is not None and math.isfinite(seconds) and seconds >= 0, (figure, seconds)
    assert cpu["in all"] > 0
    assert sum(cpu[stage] for stage in STAGES) + cpu["other script work"] > 0


def test_the_explorer_runs_nothing_per_step_and_one_logged_run_per_release(results):
    """The p player plays p in the browser: no script run during a step (so only the server's CPU
    in all is known there), one logged run per release, whose stages are all known."""
    figures, _ = results
    explorer = figures["explorer"]
    assert explorer["runs_per_step"] == 0
    assert explorer["cpu"]["in all"] >= 0 and all(explorer["cpu"][figure] is None for figure in CPU_FIGURES[1:])
    known(explorer["release_cpu"])


def test_every_cpu_figure_of_the_reference_is_known_finite_and_not_negative(results):
    """The reference's runs log their stages (step_clock.timed_run): one run per step."""
    figures, _ = results
    assert figures["reference"]["runs_per_step"] == 1 and figures["reference"]["release_cpu"] is None
    known(figures["reference"]["cpu"])


def test_the_cpu_ratios_are_explorer_over_reference_where_the_reference_spent_any(results):
    figures, _ = results
    assert list(figures["cpu_ratio"]) == list(CPU_FIGURES)
    for figure, ratio in figures["cpu_ratio"].items():
        explorer, reference = figures["explorer"]["cpu"][figure], figures["reference"]["cpu"][figure]
        assert ratio == (pytest.approx(explorer / reference) if reference and explorer is not None else None), figure


def test_the_ratios_are_explorer_over_reference(results):
    figures, _ = results
    for measure in MEASURES:
        expected = None if figures["reference"][measure] is None else pytest.approx(
            figures["explorer"][measure] / figures["reference"][measure])
        assert figures["ratio"][measure] == expected


def test_it_prints_the_machine_and_one_line_per_measure(results):
    figures, lines = results
    assert figures["cores"] >= 1 and figures["repeats"] == 1
    assert any("cores" in line and "first 96 images of the 'heldout'" in line for line in lines), lines
    for words in MEASURES.values():
        assert sum(line.startswith(words) and "explorer / reference" in line for line in lines) == 1, (words, lines)
    assert math.isfinite(figures["first_start_s"]) and figures["first_start_s"] > 0
    assert sum(line.startswith(FIRST_START) for line in lines) == 1, lines
    for figure in CPU_FIGURES:
        assert sum(line.startswith(f"{CPU_WORDS}, {figure}:") and "explorer / reference" in line
                   for line in lines) == 1, (figure, lines)


def test_a_step_without_logged_runs_has_only_the_servers_cpu():
    """A script not wrapped in step_clock.timed_run logs nothing: its stages are unknown, not 0."""
    assert step_cpu(0.02, []) == {figure: 0.02 if figure == "in all" else None for figure in CPU_FIGURES}
    runs = [{"cpu_s": 0.010, "stages": {"captions and tables": 0.004}}, {"cpu_s": 0.002, "stages": {}}]
    cpu = step_cpu(0.020, runs)
    assert cpu["captions and tables"] == pytest.approx(0.004) and cpu["image encoding"] == 0
    assert cpu["other script work"] == pytest.approx(0.008)
    assert cpu["Streamlit outside the script"] == pytest.approx(0.008)


def test_a_missing_browser_or_driver_names_what_to_install(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="apt-get install -y chromium"):
        check_browser(str(tmp_path / "no-chromium"))
    if os.path.isfile(CHROMIUM):
        monkeypatch.setitem(sys.modules, "playwright", None)  # import now fails
        with pytest.raises(ValueError, match=r"pip install 'anchordiv\[explorer\]'"):
            check_browser(CHROMIUM)


def test_the_isolation_benchmark_asks_for_the_costliest_figure_a_link_may():
    """Its Compare link is at the limits: allowed, as many neighbours in all as another row would
    pass, top-k and fitted geometries at theirs, and new scales for each seed (no cache serves it)."""
    from urllib.parse import parse_qs

    from anchordiv.explorer import GeometrySpec
    from anchordiv.benchmarks.browser_sessions import heaviest_compare_link
    from anchordiv.figure import DEFAULT_LIMITS, check_figure_request, fitted_geometries, parse_geometry_column

    links = [parse_qs(heaviest_compare_link(seed)) for seed in (1, 2)]
    for link in links:
        rows, columns, k = link["rows"], [parse_geometry_column(c) for c in link["columns"]], int(link["cell_k"][0])
        geometries = fitted_geometries(columns, GeometrySpec())
        check_figure_request(len(rows), len(columns), k, n_geometries=geometries)
        assert k == DEFAULT_LIMITS.k and geometries == DEFAULT_LIMITS.geometries
        assert (len(rows) + 1) * len(columns) * k > DEFAULT_LIMITS.neighbours
    assert not set(links[0]["columns"]) & set(links[1]["columns"]) - {"cosine", "iti"}
    assert not set(links[0]["rows"]) & set(links[1]["rows"])


def test_two_sessions_moving_p_at_once_end_on_the_grids_one_session_alone_shows(chromium_and_weights):
    figures, lines = logged("anchordiv.benchmarks.browser_sessions", sessions_benchmark, sessions=2, repeats=2,
                            split="heldout", limit=96)
    assert figures["sessions"] == 2 and figures["repeats"] == 2
    for app in ("explorer", "reference"):
        assert figures[app]["mismatches"] == 0 and figures[app]["first_mismatch"] is None, (app, figures[app])
        for measure in SESSION_MEASURES:
            assert math.isfinite(figures[app][measure]) and figures[app][measure] > 0, (app, measure)
        assert figures[app]["worst_s"] >= figures[app]["median_s"] >= figures[app]["grid_s"], app
    assert list(figures["ratio"]) == list(SESSION_MEASURES)
    for measure, ratio in figures["ratio"].items():
        assert ratio == pytest.approx(figures["explorer"][measure] / figures["reference"][measure]), measure
    for words in SESSION_MEASURES.values():
        assert sum(line.startswith(words.format(sessions=2)) for line in lines) == 1, (words, lines)
    assert any("explorer 0 mismatches, reference 0 mismatches" in line for line in lines), lines
