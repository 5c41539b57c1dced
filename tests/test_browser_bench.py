"""Smoke test of ``explorer-bench --browser``: one repeat of each measure, explorer and reference.

It checks that the benchmark runs end to end and returns sane figures, not how fast anything is
(speed is read from the command's printed output). Skipped, with the reason, when Chromium, the
playwright package or the built-in weights are missing, as tests/test_browser.py.
"""
from __future__ import annotations

import logging
import math
import os
import sys

import pytest

from anchordiv.builtin.weights import ASSETS_DIR, WEIGHTS_NAME
from anchordiv.benchmarks.browser import CHROMIUM, FIRST_START, MEASURES, browser_benchmark, check_browser

pytestmark = [pytest.mark.slow]


class _Lines(logging.Handler):
    """The benchmark's logged lines, as the command line prints them."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture(scope="module")
def results():
    try:
        check_browser()
    except ValueError as error:
        pytest.skip(str(error))
    if not (ASSETS_DIR / WEIGHTS_NAME).is_file():
        pytest.skip("the built-in model weights are not there yet")
    logger, handler = logging.getLogger("anchordiv.benchmarks.browser"), _Lines()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        return browser_benchmark(repeats=1, split="heldout", limit=96), handler.lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_every_measure_has_a_positive_finite_time_for_both_apps(results):
    figures, _ = results
    for app in ("explorer", "reference"):
        assert set(figures[app]) == set(MEASURES), app
        for measure, seconds in figures[app].items():
            assert math.isfinite(seconds) and seconds > 0, (app, measure, seconds)


def test_the_ratios_are_explorer_over_reference(results):
    figures, _ = results
    for measure in MEASURES:
        assert figures["ratio"][measure] == pytest.approx(figures["explorer"][measure] / figures["reference"][measure])


def test_it_prints_the_machine_and_one_line_per_measure(results):
    figures, lines = results
    assert figures["cores"] >= 1 and figures["repeats"] == 1
    assert any("cores" in line and "first 96 images of the 'heldout'" in line for line in lines), lines
    for words in MEASURES.values():
        assert sum(line.startswith(words) and "explorer / reference" in line for line in lines) == 1, (words, lines)
    assert math.isfinite(figures["first_start_s"]) and figures["first_start_s"] > 0
    assert sum(line.startswith(FIRST_START) for line in lines) == 1, lines


def test_a_missing_browser_or_driver_names_what_to_install(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="apt-get install -y chromium"):
        check_browser(str(tmp_path / "no-chromium"))
    if os.path.isfile(CHROMIUM):
        monkeypatch.setitem(sys.modules, "playwright.sync_api", None)  # import now fails
        with pytest.raises(ValueError, match="pip install playwright"):
            check_browser(CHROMIUM)


def test_the_isolation_benchmark_asks_for_the_costliest_figure_a_link_may():
    """Its Compare link is at the limits: allowed, as many neighbours in all as another row would
    pass, top-k and fitted geometries at theirs, and new scales for each seed (no cache serves it)."""
    from urllib.parse import parse_qs

    from anchordiv.explorer import GeometrySpec
    from anchordiv.benchmarks.browser import heaviest_compare_link
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
