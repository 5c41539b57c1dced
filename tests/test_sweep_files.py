"""The p sweep as files (anchordiv.explorer.sweep_files and ``anchordiv sweep``): a strip PNG with
one row per ranking (or per p asked for) and a looping GIF from p = 0 to 1 and back, one frame per
ranking, drawn from a query's p path; each image read once; sizes bounded with a message naming
the limit."""
from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

import anchordiv as ad
from anchordiv.cli import main
from anchordiv.explorer.sweep_files import CELL, MAX_STRIP_ROWS, MAX_SWEEP_K, sweep_gif, sweep_strip_png
from anchordiv.grids import CAPTION_LINES, LINE_HEIGHT

from conftest import APP_SLICE_ARGS, clustered
from helpers import needs_builtin


@pytest.fixture(scope="module")
def path():
    """A 101-step path of k = 8 over a seeded world of two anchor sets."""
    rng = np.random.default_rng(3)
    centres = rng.standard_normal((6, 16))
    gallery = clustered(rng, 400, centres, 0.7).astype(np.float32)
    a = ad.EmpiricalAnchors(scale=15.0).fit(clustered(rng, 30, centres, 0.8).astype(np.float32))
    b = ad.EmpiricalAnchors(scale=15.0).fit(clustered(rng, 5, centres[:2], 0.3).astype(np.float32))
    mixture = ad.MixtureAnchors([a, b]).with_calibration(gallery)
    return ad.AnchorIndex(mixture, gallery, device="cpu").slider(gallery[0], k=8, exclude=0).path(101)


class Images:
    """A tile per gallery id (its colour from the id), counting the ids asked for."""

    def __init__(self):
        self.asked: list[int] = []

    def __call__(self, ids):
        self.asked.extend(ids)
        return [Image.new("RGB", (40, 30), ((37 * item) % 256, 90, 160)) for item in ids]


def test_the_strip_has_one_row_per_p_and_reads_each_image_once(path):
    images = Images()
    png = sweep_strip_png(path, images, lambda item: f"item {item}", p_values=(0.0, 0.5, 1.0), k=4, title="query 0")
    strip = Image.open(io.BytesIO(png))
    row_height = 24 + CELL + CAPTION_LINES * LINE_HEIGHT + 4
    assert strip.format == "PNG" and strip.size == (4 * CELL, 24 + 3 * row_height)
    expected = {int(item) for p in (0.0, 0.5, 1.0) for item in path.ids[path.step_of(p), :4]}
    assert sorted(images.asked) == sorted(expected)  # each shown image once, no other


def test_the_animation_holds_each_ranking_from_p_0_to_1_and_back(path):
    """One frame per change of the top k's images, the ends held twice as long, ping-pong."""
    images = Images()
    stops = path.sweep_stops(3).tolist()
    assert len(stops) >= 3, "the fixture's path should change its top 3 at least once"
    gif = Image.open(io.BytesIO(sweep_gif(path, images, str, k=3, frame_ms=100)))
    assert gif.format == "GIF" and gif.n_frames == 2 * len(stops) - 2 and gif.info["loop"] == 0
    durations = []
    for frame in range(gif.n_frames):
        gif.seek(frame)
        durations.append(gif.info["duration"])
    ends = (0, len(stops) - 1)
    assert [durations[i] for i in ends] == [200, 200]
    assert {d for i, d in enumerate(durations) if i not in ends} == {100}
    expected = {int(item) for step in stops for item in path.ids[step, :3]}
    assert sorted(images.asked) == sorted(expected)


def test_the_default_strip_shows_the_animation_s_rankings(path):
    """Without p values, one row per ranking of the sweep (the GIF's and Play's)."""
    stops = path.sweep_stops(4)
    strip = Image.open(io.BytesIO(sweep_strip_png(path, Images(), str, k=4, title="query 0")))
    row_height = 24 + CELL + CAPTION_LINES * LINE_HEIGHT + 4
    assert strip.size == (4 * CELL, 24 + len(stops) * row_height)


def test_a_strip_of_more_rankings_than_rows_spreads_them(path, monkeypatch):
    import anchordiv.explorer.sweep_files as sweep_files

    monkeypatch.setattr(sweep_files, "MAX_STRIP_ROWS", 2)
    strip = Image.open(io.BytesIO(sweep_strip_png(path, Images(), str, k=4)))
    row_height = 24 + CELL + CAPTION_LINES * LINE_HEIGHT + 4
    assert strip.size == (4 * CELL, 24 + 2 * row_height)  # the title band says "2 of its N rankings"


@pytest.mark.parametrize("bad, message", [
    (dict(k=0), "1 to 8 neighbours"), (dict(k=9), "1 to 8 neighbours"), (dict(k=True), "1 to 8"),
    (dict(p_values=()), f"1 to {MAX_STRIP_ROWS}"), (dict(p_values=[0.5] * (MAX_STRIP_ROWS + 1)), f"1 to {MAX_STRIP_ROWS}")])
def test_a_strip_past_its_bounds_is_refused(path, bad, message):
    with pytest.raises(ValueError, match=message):
        sweep_strip_png(path, Images(), str, **bad)


def test_an_animation_past_its_bounds_is_refused(path):
    for bad, message in ((dict(frame_ms=0), "at least 20"), (dict(frame_ms=1.5), "whole number"),
                         (dict(k=MAX_SWEEP_K + 1), "1 to 8")):
        with pytest.raises(ValueError, match=message):
            sweep_gif(path, Images(), str, **bad)


@needs_builtin
def test_the_command_writes_both_files_and_refuses_bad_options_in_one_line(tmp_path, capsys):
    gif, strip = tmp_path / "sweep.gif", tmp_path / "strip.png"
    assert main(["sweep", "--query", "#3", "--gif", str(gif), "--strip", str(strip), "-k", "4", "--p", "0", "1",
                 *APP_SLICE_ARGS]) == 0
    frames = Image.open(gif).n_frames  # 2R - 2 for R rankings: p = 0 to 1 and back
    assert frames >= 2 and frames % 2 == 0 and Image.open(strip).size[0] == 4 * CELL
    out = capsys.readouterr().out
    assert f"wrote {gif}" in out and f"wrote {strip}" in out
    for argv, message in ((["--query", "#3"], "give --gif"), (["--query", "#3", "--gif", str(strip)], "must end in .gif"),
                          (["--query", "#3", "--strip", str(strip), "-k", "11"], "from 1 to 10"),
                          (["--query", "#3", "--strip", str(strip), "--p", "1.5"], "from 0 to 1"),
                          (["--query", "image:x.png", "--strip", str(strip)], "gallery image")):
        assert main(["sweep", *argv, *APP_SLICE_ARGS]) == 2
        error = capsys.readouterr().err.strip().splitlines()
        assert len(error) == 1 and message in error[0] and "Traceback" not in error[0], error
