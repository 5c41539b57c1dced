"""The rehearsal of the demo (``python -m anchordiv.benchmarks.rehearsal``): its pure parts (the
filmstrip from synthetic frames, the write-up of a made-up walk, the copy into docs/screenshots),
and one short walk (one window, two steps) on the browser tests' shared explorer, skipped without
Chromium as tests/test_browser.py is. The whole rehearsal takes minutes and is run by hand."""
from __future__ import annotations

import asyncio
import json

import pytest
from PIL import Image

from anchordiv.benchmarks.filmstrip import Frame, crop, filmstrip, on_screen
from anchordiv.benchmarks.play_frames import PlayFrames
from anchordiv.benchmarks.rehearsal import cat_photo, refresh_docs, rehearse, shot_name
from anchordiv.benchmarks.rehearsal_report import PlayResult, SizeResult, StepResult, markdown, write_report
from anchordiv.benchmarks.rehearsal_steps import STEPS

COLOURS = ["red", "green", "blue", "yellow", "purple"]


def frames_at(times: list[float]) -> list[Frame]:
    """Frames of one colour each, 200x100 device pixels for a viewport 100 CSS pixels wide (DPR 2)."""
    return [Frame(t, Image.new("RGB", (200, 100), colour), 100.0) for t, colour in zip(times, COLOURS)]


def test_the_frame_on_screen_at_a_time_is_the_last_one_sent_before_it():
    frames = frames_at([10.0, 10.1, 11.5, 12.0])
    picked = on_screen(frames, 5)  # at +0, +0.5, +1, +1.5, +2 s
    assert [round(time - 10, 2) for time, _ in picked] == [0, 0.5, 1, 1.5, 2]
    assert [frame.t for _, frame in picked] == [10.0, 10.1, 10.1, 11.5, 12.0]
    with pytest.raises(ValueError, match="no frame"):
        on_screen([], 3)


def test_a_css_box_is_cut_in_device_pixels_and_clipped_to_the_viewport():
    frame = frames_at([0.0])[0]
    assert crop(frame, (10, 5, 30, 25)).size == (40, 40)
    assert crop(frame, (-10, -10, 20, 500)).size == (40, 100)
    with pytest.raises(ValueError, match="outside the viewport"):
        crop(frame, (150, 0, 180, 10))


def test_the_filmstrip_shows_each_frame_under_its_time_in_rows():
    frames = frames_at([0.0, 1.0, 2.0, 3.0, 4.0])
    strip = filmstrip(frames, (0, 0, 50, 40), count=5, max_width=300, frame_height=60)
    # 5 cuts of 100x80 device pixels, shown at 60 px high (75 wide): 3 to a row within 300 px, 2 rows.
    assert strip.width <= 300 and strip.height > 2 * 60
    colours = {strip.getpixel((x, y)) for x in range(strip.width) for y in range(0, strip.height, 4)}
    for colour in COLOURS:
        assert Image.new("RGB", (1, 1), colour).getpixel((0, 0)) in colours, colour


def made_up_walk() -> list[SizeResult]:
    figures = PlayFrames(frames=300, seconds=5.0, tiles=10, settled_frames=240, median_settled_s=1.1,
                         settled_stretches=4, sparse_frames=2)
    steps = [StepResult("open", "ok", 12.345, "query “#1 cat face”", "1500x1000/01-open.png"),
             StepResult("search a name", "no effect", 0.5, "the query did not change; [a link](http://x) *bold* | pipe",
                        "1500x1000/05-search-a-name.png"),
             StepResult("Play", "failed", None, "TimeoutError: no grid")]
    return [SizeResult("1500x1000", steps, PlayResult(figures, 40, 5.5, "1500x1000/play-filmstrip.png")),
            SizeResult("1000x800", [StepResult("open", "not run", None, "the rehearsal's time was up")])]


def test_the_write_up_has_seconds_per_step_plays_figures_and_literal_notes(tmp_path):
    text = markdown(made_up_walk(), "A rehearsal", "About this run.")
    assert "| step | 1500x1000 | 1000x800 |" in text
    assert "| open | 12.35 | not run |" in text
    assert "| search a name | 0.50 (no effect) |  |" in text
    assert "| Play | failed |  |" in text
    assert "| share of frames settled | 80% |  |" in text and "| bad frames (not settled) | 60 |  |" in text
    assert "| frames with under half the tiles drawn | 2 |  |" in text
    assert "| screencast: composited frames received | 40 in 5.5 s |  |" in text
    assert "[picture](1500x1000/play-filmstrip.png)" in text
    assert "[screenshot](1500x1000/05-search-a-name.png)" in text
    assert "[a link](http" not in text and "*bold*" not in text and "\\| pipe" in text  # the page's text, literal

    md, js = write_report(tmp_path, made_up_walk(), "A rehearsal", "About.", {"commit": "abc"})
    assert md.read_text(encoding="utf-8").startswith("# A rehearsal")
    record = json.loads(js.read_text(encoding="utf-8"))
    play = record["sizes"][0]["play"]
    assert record["commit"] == "abc" and play["figures"]["bad_frames"] == 60
    assert play["figures"]["settled_share"] == pytest.approx(0.8) and play["screencast_frames"] == 40
    assert record["sizes"][1]["play"] is None and record["sizes"][0]["steps"][1]["status"] == "no effect"


def test_steps_have_distinct_names_and_page_shots_refresh_the_docs_at_two_widths(tmp_path):
    names = [step.name for step in STEPS]
    assert len(set(names)) == len(names) and names[0] == "open"
    assert {shot_name(number, step) for number, step in enumerate(STEPS, 1)} >= {"01-open", "04-play"}
    out, docs = tmp_path / "out", tmp_path / "screenshots"
    docs.mkdir()
    sizes = []
    for size in ("1500x1000", "1280x720", "1000x800"):
        (out / size).mkdir(parents=True)
        steps = []
        for number, name in ((1, "open"), (2, "move p by keys"), (19, "Compare")):
            path = out / size / f"{number:02d}-{name}.png"
            Image.new("RGB", (4, 4), "white").save(path)
            steps.append(StepResult(name, "ok", 1.0, "", f"{size}/{path.name}"))
        sizes.append(SizeResult(size, steps))
    copied = refresh_docs(sizes, out, docs)
    assert sorted(path.name for path in copied) == ["compare-1000.png", "compare-1500.png", "explore-1000.png",
                                                     "explore-1500.png"]


@pytest.mark.slow
def test_a_short_walk_opens_the_explorer_and_moves_p(app_url, tmp_path):
    url, _ = app_url
    sizes = asyncio.run(rehearse(url, tmp_path, cat_photo(tmp_path), [(1000, 800)], ["open", "move p by keys"],
                                 minutes=4))
    steps = sizes[0].steps
    assert [step.step for step in steps] == ["open", "move p by keys"]
    assert all(step.status == "ok" for step in steps), [(step.status, step.note) for step in steps]
    assert {path.name for path in (tmp_path / "1000x800").iterdir()} == {"01-open.png", "02-move-p-by-keys.png"}
