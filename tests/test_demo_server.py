"""A demo server for strangers (library side): the data roots that confine every path a visitor can
choose (anchordiv.explorer.paths), and one slow build shared by every visitor with its progress
(anchordiv.explorer.shared)."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from anchordiv import explorer as ex
from anchordiv.explorer.paths import ANY_PATH_VARIABLE, ROOTS_VARIABLE

SECRET = "TOP-SECRET-LINE"


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    """A data root with an image folder, a CSV, a checkpoint and hostile entries, and a private
    folder outside it."""
    root, private = tmp_path / "data", tmp_path / "private"
    (root / "pets" / "cats").mkdir(parents=True)
    (root / ".hidden").mkdir()
    private.mkdir()
    (private / "secret.csv").write_text(f"{SECRET}\n1,2\n")
    (private / "weights.pt").write_bytes(b"not a checkpoint")
    (root / "pets" / "labels.csv").write_text("path,style\ncats/a.png,photo\n")
    (root / "model.pt").write_bytes(b"weights")
    (root / "out").symlink_to(private, target_is_directory=True)
    (root / "secret-link.csv").symlink_to(private / "secret.csv")
    (root / "pets" / "out-link.csv").symlink_to(private / "secret.csv")  # a labels CSV menu must not offer it
    (root / "loop").symlink_to(root / "loop")
    os.mkfifo(root / "pipe.pt")
    os.mkfifo(root / "pets" / "pipe.csv")
    return {"root": root.resolve(), "private": private.resolve()}


def roots(tree, allow_any_path: bool = False) -> ex.DataRoots:
    return ex.DataRoots((tree["root"],), allow_any_path)


def test_roots_come_from_the_launch_line_and_the_environment(tree, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    launched = ex.DataRoots.from_launch(["-q", "--data-root", str(tree["root"])], {ROOTS_VARIABLE: str(other)})
    assert launched.roots == (tree["root"], other.resolve()) and not launched.allow_any_path
    assert ex.DataRoots.from_launch(["--allow-any-path"], {}).allow_any_path
    assert ex.DataRoots.from_launch([], {ANY_PATH_VARIABLE: "1"}).allow_any_path
    assert ex.DataRoots.from_launch([], {}) == ex.DataRoots()
    with pytest.raises(ValueError, match=r"data root .*nowhere.* is not an existing folder; fix --data-root"):
        ex.DataRoots.from_launch(["--data-root", str(tmp_path / "nowhere")], {})


def test_the_device_comes_from_the_launch_line_and_a_missing_one_is_refused_at_start(monkeypatch):
    from anchordiv.explorer.launch import LaunchOptions

    assert LaunchOptions.from_launch(["--device", "cpu"], {}).device == "cpu"
    assert LaunchOptions.from_launch([], {}).device is None  # CUDA when available, else the CPU
    with pytest.raises(ValueError, match=r"--device='tpu' is not a device torch knows"):
        LaunchOptions.from_launch(["--device", "tpu"], {})
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    with pytest.raises(ValueError, match=r"--device='cuda' asks for CUDA, but torch.cuda.is_available\(\) is False"):
        LaunchOptions.from_launch(["--device", "cuda"], {})


@pytest.mark.parametrize("relative, message", [
    ("out", r"outside the data folders"),                     # a link out of the root
    ("out/secret.csv", r"outside the data folders"),
    ("secret-link.csv", r"outside the data folders"),
    ("pets/../../private/secret.csv", r"outside the data folders"),  # climbing out with ..
    ("loop", r"does not exist or cannot be resolved"),        # a symlink loop
    ("missing.csv", r"does not exist or cannot be resolved"),
])
def test_confine_refuses_what_leaves_the_roots_without_echoing_it(tree, relative, message):
    with pytest.raises(ValueError, match=message) as caught:
        roots(tree).confine(tree["root"] / relative, "labels CSV")
    assert SECRET not in str(caught.value) and "weights.pt" not in str(caught.value)


@pytest.mark.parametrize("path", ["/etc", "/proc/self", "/"])
def test_system_folders_are_outside_the_roots(tree, path):
    with pytest.raises(ValueError, match="outside the data folders"):
        roots(tree).confine(path, "image folder")


def test_confine_accepts_paths_inside_and_free_mode_accepts_any(tree):
    assert roots(tree).confine(tree["root"] / "pets" / "labels.csv") == tree["root"] / "pets" / "labels.csv"
    assert roots(tree, allow_any_path=True).confine(tree["private"] / "secret.csv") == tree["private"] / "secret.csv"


def test_menus_offer_only_what_is_inside_and_readable(tree):
    offered = roots(tree)
    assert offered.image_folders() == [tree["root"], tree["root"] / "pets", tree["root"] / "pets" / "cats"]
    assert offered.checkpoints() == [tree["root"] / "model.pt"]  # not the FIFO, not the linked-out one
    assert offered.labels_csvs(tree["root"] / "pets") == [tree["root"] / "pets" / "labels.csv"]
    assert ex.DataRoots().image_folders() == [] and ex.DataRoots().checkpoints() == []


def test_a_folder_of_many_folders_does_not_hide_the_stores_beside_it(tmp_path):
    """The menus are bounded (MENU_LIMIT); each folder of a level gets its share, so the 600 label
    folders under images/ leave room for stores/ and the store in it."""
    from anchordiv.explorer.paths import MENU_LIMIT
    from anchordiv.store import GalleryStore

    for number in range(600):
        (tmp_path / "images" / f"label-{number:03d}").mkdir(parents=True)
    store = GalleryStore.from_array(np.eye(3), tmp_path / "stores" / "mine")
    offered = ex.DataRoots((tmp_path.resolve(),))
    assert offered.stores() == [store.directory.resolve()]
    assert len(offered.image_folders()) <= MENU_LIMIT


def test_one_shared_build_with_progress_for_those_who_wait():
    shared = ex.SharedBuilds(poll_seconds=0.01)
    started, calls, seen = threading.Event(), [], []

    def build(report):
        calls.append(1)
        started.set()
        for step in range(1, 11):
            report(step / 10, f"step {step}")
            time.sleep(0.02)
        return object()

    results = {}
    first = threading.Thread(target=lambda: results.setdefault("first", shared.get("world", build)))
    first.start()
    started.wait(5)
    results["second"] = shared.get("world", build, lambda fraction, text: seen.append((fraction, text)))
    first.join(5)
    assert results["first"] is results["second"] and len(calls) == 1
    assert seen and all("being prepared for another visitor" in text for _, text in seen)
    assert max(fraction for fraction, _ in seen) > 0
    assert shared.get("world", build) is results["first"] and len(calls) == 1


def test_a_failed_shared_build_is_tried_again():
    shared = ex.SharedBuilds(poll_seconds=0.01)
    attempts = []

    def failing(report):
        attempts.append(1)
        raise ValueError("the shipped world is damaged; rebuild it")

    for _ in range(2):
        with pytest.raises(ValueError, match="damaged"):
            shared.get("world", failing)
    assert len(attempts) == 2
    assert shared.get("world", lambda report: "built") == "built"
