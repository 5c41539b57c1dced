"""The figures of a recording of Play (anchordiv.benchmarks.play_frames), on frames made here: a
grid held whole is settled, a glide that lets tiles overlap or a fade that leaves them faint is not."""
from __future__ import annotations

import pytest

from anchordiv.benchmarks.play_frames import summarise


def tile(column: int, opacity: float = 1.0, dx: float = 0.0, ghost: bool = False, loaded: bool = True) -> dict:
    return {"x": 100.0 * column + dx, "y": 0.0, "w": 96.0, "h": 96.0, "o": opacity, "loaded": loaded, "ghost": ghost}


def grid(changes: dict | None = None) -> list[dict]:
    return [tile(column, **(changes or {}).get(column, {})) for column in range(4)]


def test_a_grid_held_whole_between_short_glides_is_settled_most_of_the_time():
    frames = []
    for number in range(60):  # 60 frames 1/60 s apart; frames 20-24 and 40-44 glide (overlap)
        gliding = 20 <= number < 25 or 40 <= number < 45
        frames.append({"t": number / 60, "tiles": grid({1: {"dx": 60.0}} if gliding else None)})
    figures = summarise(frames)
    assert figures.frames == 60 and figures.tiles == 4 and figures.settled_frames == 50 and figures.bad_frames == 10
    assert figures.settled_stretches == 3 and figures.median_settled_s == pytest.approx(15 / 60)  # 20, 15 and 14 frames
    assert figures.sparse_frames == 0 and "83% settled" in figures.line()


@pytest.mark.parametrize("changes, settled, sparse", [
    ({0: {"opacity": 0.85}}, False, False),                      # one tile not yet whole
    ({0: {"loaded": False}, 1: {"loaded": False}, 2: {"opacity": 0.3}}, False, True),  # 1 of 4 drawn
    ({0: {"dx": 5.0}}, True, False),                             # touching by 5%: no overlap that counts
    ({0: {"dx": 15.0}}, False, False),                           # 19% of a tile over its neighbour
])
def test_one_frame(changes, settled, sparse):
    figures = summarise([{"t": 0.0, "tiles": grid(changes)}])
    assert (figures.settled_frames == 1) == settled and (figures.sparse_frames == 1) == sparse


def test_a_leaving_tile_s_fading_copy_counts_in_the_overlaps_while_visible():
    leaving = {"t": 0.0, "tiles": grid() + [tile(1, opacity=0.6, ghost=True)]}
    gone = {"t": 0.1, "tiles": grid() + [tile(1, opacity=0.01, ghost=True)]}
    figures = summarise([leaving, gone])
    assert figures.tiles == 4 and figures.settled_frames == 1


def test_no_frame_is_an_error():
    with pytest.raises(ValueError, match="no frame"):
        summarise([])
