"""The Learn page's toy world computed in the browser (app/components/toy_world_math.js) gives the
library's numbers: on a grid of circles and spheres, every kind of :data:`anchordiv.lesson.TOY_KINDS`,
both weightings, scales and weights from end to end, Node runs the module (through
tests/js/toy_world_cases.mjs) and each of its figures is held against :mod:`anchordiv.lesson`'s
within :data:`TOLERANCE`: kappa, D(x -> u) and D(u -> x) along the circle and over the sphere's
grid, cosines, the responsibilities, the responsibility curve and the p of an even share; the
tilted probabilities too, beyond the float32 round-off the library's tilt carries
(:data:`FLOAT32_ROUNDINGS`); the equal-size neighbourhoods exactly (but for directions whose
divergences tie), the anchors' labels and the fit's notes word for word, and the errors the library
raises word for word. Skipped where Node is not installed."""
from __future__ import annotations

import itertools
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from anchordiv import lesson
from anchordiv.explorer.toy_world import ToyState
from anchordiv.explorer.toy_world import gmm_labels as toy_payload_labels

ROOT = Path(__file__).resolve().parents[1]
RUNNER = ROOT / "tests" / "js" / "toy_world_cases.mjs"
TOLERANCE = 1e-6
# The library's tilt takes the query as an image embedding, at float32 (anchordiv.explain), so each
# of its log-probabilities carries float32's round-off of logits as large as s + log N: the page's
# float64 tilt p_i is held to it within TOLERANCE + p_i * FLOAT32_ROUNDINGS * eps32 * (s + log N).
FLOAT32_ROUNDINGS = 8
# Sets of the circle (degrees): the page's default, one anchor, B empty, a tight set beside a broad
# one, and sets of 20 and 17 anchors (a GMM of 2 components each: its EM starts from k-means labels).
# No set spreads evenly round the whole circle: there the covariance is a multiple of I, so its
# principal direction (the latent softmax's subspace) is whichever the SVD's round-off picks, in
# the library as in the page.
CIRCLE_SETS = {
    "default": ([0, 40, 80], [160, 250]),
    "one anchor": ([30], [200, 210, 220]),
    "B empty": ([10, 100, 200, 280], []),
    "tight and broad": ([85, 90, 95], [0, 120, 240, 300]),
    "many": ([float(a) for a in range(0, 270, 14)], [float(a) for a in np.arange(5.0, 360.0, 21.0)]),
}
SPHERE_SETS = {
    "default": ([[0, 0], [60, 0], [120, 0]], [[0, 60], [180, 60]]),
    "one anchor": ([[40, 10]], [[0, 90], [90, -30], [200, 45]]),
    "B empty": ([[0, 0], [90, 0], [45, 70], [-120, -40]], []),
    "many": ([[a, 20 * np.sin(a / 40)] for a in range(-180, 180, 20)], [[a, -50] for a in range(0, 360, 22)]),
}
# (scale, p, query on the circle, query on the sphere, width of the cosine arc)
SETTINGS = [(5.0, 0.5, 120, [30, 20], 40), (0.5, 0.0, 359, [-180, -90], 5), (40.0, 1.0, 88, [60, 89], 180),
            (12.5, 0.3, 200, [170, -15], 65)]


def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.skip("Node.js is not installed")
    return found


def cases() -> list[dict]:
    grid = []
    for (world, sets), kind, weighting in itertools.product(
            (("circle", CIRCLE_SETS), ("sphere", SPHERE_SETS)), lesson.TOY_KINDS, ("balanced", "literal")):
        # Each kind and weighting starts the settings at its own place, so each set meets several of them.
        first = (lesson.TOY_KINDS.index(kind) + 2 * (weighting == "literal")) % len(SETTINGS)
        for (name, (a, b)), (scale, p, query_circle, query_sphere, width) in zip(
                sets.items(), itertools.islice(itertools.cycle(SETTINGS), first, None)):
            grid.append({"name": f"{world}/{name}/{kind}/{weighting}", "world": world, "a": a, "b": b, "kind": kind,
                         "scale": scale, "p": p, "weighting": weighting, "width": width,
                         "query": query_circle if world == "circle" else query_sphere})
    # Every setting on the default circle, so that each scale and p meets each kind.
    for kind, (scale, p, query, _, width) in itertools.product(lesson.TOY_KINDS, SETTINGS):
        a, b = CIRCLE_SETS["default"]
        grid.append({"name": f"circle/default/{kind}/s={scale}/p={p}", "world": "circle", "a": a, "b": b,
                     "kind": kind, "scale": scale, "p": p, "weighting": "balanced", "width": width, "query": query})
    return grid


def directions(case: dict, angles: list) -> torch.Tensor:
    if case["world"] == "circle":
        return lesson.circle_directions(angles)
    return lesson.sphere_directions([a for a, _ in angles], [e for _, e in angles])


def library(case: dict) -> dict:
    """What anchordiv.lesson computes for ``case`` (the figures the runner prints), or its error."""
    a, b = directions(case, case["a"]), directions(case, case["b"])
    try:
        toy = lesson.toy_geometry(a, b, case["kind"], case["scale"], case["p"], case["weighting"])
    except ValueError as error:
        return {"error": str(error)}
    circle = case["world"] == "circle"
    query = directions(case, [case["query"]])[0]
    if circle:
        profile = lesson.circle_profile(toy.model, case["query"])
        reverse = lesson.circle_profile(toy.model, case["query"], reverse=True)["divergence"].to_numpy()
    else:
        profile, reverse = lesson.sphere_profile(toy.model, *case["query"]), None
    tilt = toy.tilt(query)
    result = {"notes": list(toy.notes), "texts": list(tilt.texts), "tilt": tilt.probabilities,
              "tilt_sets": list(tilt.components), "exact": tilt.exact, "reverse": reverse,
              **{column: profile[column].to_numpy() if column in profile else None
                 for column in ("kappa", "divergence", "cosine", "cosine_distance", "x", "y")}}
    if circle:
        balls = lesson.equal_size_neighbourhoods(profile, case["width"])
        result["near"] = {column: balls[column].tolist() for column in ("near_by_cosine", "near_by_divergence")}
    if toy.is_mixture:
        result["responsibilities"] = toy.model.responsibilities(query[None, :])[0].numpy()
        curve = lesson.responsibility_curve(toy.model_at, {"query": query}, component_names=toy.component_names)
        result["curve"] = curve[curve["component"] == "A"]["responsibility"].to_numpy()
        result["even"] = lesson.even_share_p(toy.model_at, query)
    return result


def gmm_labels(case: dict) -> list | None:
    """For a GMM, each set's k-means labels as the library's EM starts from them, as the page's
    payload carries them (:func:`anchordiv.explorer.toy_world.gmm_labels`)."""
    state = ToyState(case["world"], case["query"], case["a"], case["b"], case["scale"], case["p"], case["width"])
    return toy_payload_labels(state, case["kind"], case["weighting"])


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """Each case with the library's figures and the module's."""
    grid = cases()
    for case in grid:
        labels = gmm_labels(case)
        if labels is not None:
            case["labels"] = labels
    path = tmp_path_factory.mktemp("toy") / "cases.json"
    path.write_text(json.dumps(grid))
    done = subprocess.run([node(), str(RUNNER), str(path)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return [(case, library(case), browser) for case, browser in zip(grid, json.loads(done.stdout))]


NUMBERS = ("kappa", "divergence", "reverse", "cosine", "cosine_distance", "x", "y", "tilt", "responsibilities",
           "curve", "even")


def test_the_grid_covers_every_kind_weighting_world_and_a_two_component_gmm(compared):
    kinds = {(case["world"], case["kind"], case["weighting"])
             for case, expected, _ in compared if "error" not in expected}
    assert kinds == set(itertools.product(("circle", "sphere"), lesson.TOY_KINDS, ("balanced", "literal")))
    assert any("support at most 2 component(s)" in " ".join(expected.get("notes", ())) for _, expected, _ in compared)
    assert sum("error" in expected for _, expected, _ in compared) >= 2  # the latent kinds refuse one anchor


def float32_roundoff(case: dict, probabilities: np.ndarray) -> np.ndarray:
    """How far float32's round-off may move the library's tilted probabilities ``(N,)`` in ``case``."""
    logit_size = case["scale"] + np.log(max(len(case["a"]), len(case["b"])))
    return probabilities * FLOAT32_ROUNDINGS * np.finfo(np.float32).eps * logit_size


def test_every_number_is_the_librarys_within_1e_6(compared):
    worst = {name: 0.0 for name in NUMBERS}
    failures = []
    for case, expected, browser in compared:
        if "error" in expected:
            continue
        assert "error" not in browser, (case["name"], browser["error"])
        for name in NUMBERS:
            if expected.get(name) is None:
                assert browser.get(name) is None, (case["name"], name)
                continue
            want, got = np.asarray(expected[name], dtype=np.float64), np.asarray(browser[name], dtype=np.float64)
            assert want.shape == got.shape, (case["name"], name, want.shape, got.shape)
            allowed = TOLERANCE + (float32_roundoff(case, want) if name == "tilt" else 0.0)
            difference = float(np.max(np.abs(want - got) - (allowed - TOLERANCE))) if want.size else 0.0
            worst[name] = max(worst[name], difference)
            if not difference <= TOLERANCE:
                failures.append(f"{case['name']}: {name} differs by {difference:.3g}")
    print("largest |library - browser| (tilt: beyond float32's round-off) per figure:",
          {name: f"{value:.2e}" for name, value in worst.items()})
    assert not failures, "\n".join(failures[:20])


def test_neighbourhoods_labels_notes_and_sets_are_the_librarys(compared):
    for case, expected, browser in compared:
        if "error" in expected:
            continue
        for name in ("texts", "notes", "tilt_sets", "exact"):
            assert browser[name] == expected[name], (case["name"], name)
        if case["world"] == "circle":
            assert browser["near"]["near_by_cosine"] == expected["near"]["near_by_cosine"], case["name"]
            assert_same_nearest(expected, browser, case["name"])
        assert browser["gmm_start"] is True, case["name"]  # every GMM started from the library's labels


def assert_same_nearest(expected: dict, browser: dict, name: str) -> None:
    """The divergence neighbourhoods are the same, but for directions whose divergences tie to
    within :data:`TOLERANCE` (a latent model on the circle sees only one axis, so directions
    mirrored about it tie exactly, and round-off picks which of them the top-k keeps): the page's
    set has the library's size, and no direction it keeps is farther, by the library's divergence,
    than one it leaves out."""
    want = np.asarray(expected["near"]["near_by_divergence"])
    got = np.asarray(browser["near"]["near_by_divergence"])
    assert got.sum() == want.sum(), name
    if (got != want).any():
        divergence = np.asarray(expected["divergence"])
        assert divergence[got].max() <= divergence[~got].min() + TOLERANCE, name


def test_what_the_library_refuses_the_module_refuses_in_its_words(compared):
    refused = [(case, expected, browser) for case, expected, browser in compared if "error" in expected]
    assert refused
    for case, expected, browser in refused:
        assert browser.get("error") == expected["error"], case["name"]
