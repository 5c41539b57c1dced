"""The class model of ``explorer-bench --browser --class N`` (anchordiv.benchmarks.classroom): what it
predicts from measured costs, and the command's refusals. The measurement itself runs real browsers
for minutes; it is a benchmark command, not a test."""
from __future__ import annotations

import pytest

from anchordiv.benchmarks.classroom import largest_class, simulate_class, wait_figures
from anchordiv.cli import main

# (server CPU, wait alone) per kind, as one student alone measured them
COSTS = {"query": [(0.2, 0.5)], "anchors": [(0.3, 0.6)], "p": [(0.02, 0.1)]}


def test_one_student_waits_what_each_action_took_alone():
    waits = simulate_class(1, COSTS, workers=1, seconds=1200, warm_up=0)
    assert waits and set(round(wait, 9) for wait in waits) == {0.5, 0.6, 0.1}


def test_a_class_past_the_servers_capacity_queues_and_more_workers_hold_more():
    heavy = {kind: [(1.0, 1.0)] for kind in COSTS}  # 2 s of CPU per student every ~27 s: one worker holds ~13
    one, two = (wait_figures(simulate_class(40, heavy, workers)) for workers in (1, 2))
    assert one["median_s"] > 10 and two["median_s"] < one["median_s"]
    assert wait_figures(simulate_class(5, heavy, 1))["median_s"] == pytest.approx(1.0)


def test_the_largest_class_is_the_largest_size_whose_median_wait_is_within_the_bound():
    found = {workers: largest_class(COSTS, workers) for workers in (1, 2)}
    for result in found.values():
        held = [size for size, figures in result["sizes"].items() if figures["median_s"] <= 1.0]
        assert result["largest"] == max(held)
        assert result["sizes"][max(result["sizes"])]["median_s"] > 1.0  # the sizes reach past what it holds
    assert found[2]["largest"] >= found[1]["largest"]


def test_wait_figures_take_the_nearest_rank():
    figures = wait_figures([float(value) for value in range(10, 0, -1)])
    assert figures == {"median_s": 5.5, "p90_s": 9.0, "worst_s": 10.0, "actions": 10}


@pytest.mark.parametrize("argv", [["explorer-bench", "--class", "3"],
                                  ["explorer-bench", "--browser", "--class", "3", "--sessions", "4"],
                                  ["explorer-bench", "--browser", "--class", "1"],
                                  ["explorer-bench", "--browser", "--minutes", "2"]])
def test_the_command_refuses_a_class_without_the_browser_or_beside_another_measure(argv, capsys):
    assert main(argv) == 2
    assert capsys.readouterr().err.strip()
