"""A corpus of bad command lines: each is refused with exit status 2 and one line on stderr,
``anchordiv <command>: <message>``, that names the problem (and the option or variable); never a
traceback; and, where it can be checked up front, before any work starts (no model loaded, no
benchmark run, within a couple of seconds).

Runs in-process through ``anchordiv.cli.main``; work functions are replaced by tripwires, so a
check that came too late fails the test instead of running for minutes."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import anchordiv.cli.embed_builtin_world
import anchordiv.cli.evaluate_builtin
import anchordiv.cli.train_builtin
import anchordiv.encoders
import anchordiv.benchmarks.explorer
import anchordiv.benchmarks.search
from anchordiv.cache import atomic_write, check_folder
from anchordiv.cli import main
from anchordiv.device import resolve_device
from helpers import tripwire

FOLDER, LABELS, ANCHORS, LATIN1, EMPTY_CSV, A_FILE, A_DIR, UNWRITABLE = (
    "<folder>", "<labels>", "<anchors>", "<latin1>", "<empty_csv>", "<file>", "<dir>", "<unwritable>")


@pytest.fixture
def place(tmp_path):
    """Paths the cases refer to by placeholder: an image folder labelled by subfolders, a labels
    CSV, anchor files, a plain file, a folder, and a folder the case makes unwritable."""
    folder = tmp_path / "images"
    for name in ("cat", "dog"):
        (folder / name).mkdir(parents=True)
        (folder / name / "a.png").write_bytes(b"not decoded: every check here comes first")
    (tmp_path / "labels.csv").write_text("path,style\ncat/a.png,photo\ndog/a.png,sketch\n")
    (tmp_path / "anchors.txt").write_text("cat\ndog\n")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "plain.txt").write_text("a file, not a folder")
    (tmp_path / "out").mkdir()
    (tmp_path / "locked").mkdir()
    return {FOLDER: str(folder), LABELS: str(tmp_path / "labels.csv"), ANCHORS: str(tmp_path / "anchors.txt"),
            LATIN1: str(tmp_path / "latin1.txt"), EMPTY_CSV: str(tmp_path / "empty.csv"),
            A_FILE: str(tmp_path / "plain.txt"), A_DIR: str(tmp_path / "out"), UNWRITABLE: str(tmp_path / "locked")}


def fill(argument: str, place: dict[str, str]) -> str:
    for key, path in place.items():
        argument = argument.replace(key, path)
    return argument


@pytest.fixture
def no_work(monkeypatch, cache):
    """Tripwires on everything slow a command does after its checks; a private, writable cache."""
    for module, name in ((anchordiv.encoders, "load_encoder"), (anchordiv.benchmarks.search, "run_benchmark"),
                         (anchordiv.benchmarks.explorer, "benchmark"), (anchordiv.cli.train_builtin, "train_command"),
                         (anchordiv.cli.evaluate_builtin, "evaluate_command"),
                         (anchordiv.cli.embed_builtin_world, "embed_world_command")):
        monkeypatch.setattr(module, name, tripwire())


def deny_writes_to(monkeypatch, folder: str) -> None:
    """Make ``folder`` unwritable as the checks see it (``chmod`` does not stop root, which runs CI)."""
    real_access = os.access

    def access(path, mode, *args, **kwargs):
        if Path(path) == Path(folder) and mode & os.W_OK:
            return False
        return real_access(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "access", access)


# (command line, regex the stderr line must match after "anchordiv <command>: ")
CASES = {
    # -- sizes and numbers: the option is named -------------------------------------------------------
    "bench queries 0": ("bench --queries 0", r"--queries: '0' is out of range; pass a whole number from 1 to 1000000000"),
    "bench queries not a number": ("bench --queries many", r"--queries: 'many' is not a number; pass a whole number from 1 to"),
    "bench negative gallery": ("bench --gallery -5", r"--gallery: '-5' is out of range; pass a whole number from 1 to"),
    "bench one anchor": ("bench --anchors 64 1", r"--anchors: '1' is out of range; pass a whole number from 2 to"),
    "bench k 0": ("bench --k 0", r"--k: '0' is out of range; pass a whole number from 1 to"),
    "bench repeats 0": ("bench --repeats 0", r"--repeats: '0' is out of range; pass a whole number from 1 to"),
    "bench negative warm-up": ("bench --warmup -1", r"--warmup: '-1' is out of range; pass a whole number from 0 to"),
    "bench scale nan": ("bench --scale nan", r"--scale: 'nan' is not a finite number; pass a number above 0 and at most"),
    "bench scale 0": ("bench --scale 0", r"--scale: '0' is out of range; pass a number above 0"),
    "bench unknown method": ("bench --methods cosine fastest", r"--methods: invalid choice: 'fastest'"),
    "bench k above gallery": ("bench --queries 4 --gallery 5 --dim 8 --anchors 16 --k 10",
                              r"--k=10 must be an integer from 1 to 5 \(the gallery size, --gallery\); lower --k"),
    "bench too big for memory": ("bench --gallery 1000000000 --dim 4096",
                                 r"needs about [\d,.]+ GiB of memory \(queries and gallery [\d,.]+ GiB, .*naive arrays "
                                 r"[\d,.]+ GiB\) but cpu has [\d,.]+ GiB available; lower --queries, --gallery"),
    "reproduce queries 0": ("reproduce --queries 0", r"--queries: '0' is out of range; pass a whole number from 1 to"),
    "reproduce negative scale": ("reproduce --scale -1", r"--scale: '-1' is out of range; pass a number from 0.1 to 1000"),
    # A scale too small to rank by in float32 (issue 52, F5): refused by its bounds, not by a calibration later.
    "reproduce tiny scale": ("reproduce --quick --scale 1e-300", r"--scale: '1e-300' is out of range; pass a number from "
                                                                 r"0\.1 to 1000"),
    "sweep tiny scale": (f"sweep --query #1 --strip {A_DIR}/s.png --scale 1e-300",
                         r"--scale: '1e-300' is out of range; pass a number from 0\.1 to 1000"),
    "sweep scale just below": (f"sweep --query #1 --strip {A_DIR}/s.png --scale 0.0999", r"--scale: '0\.0999' is out"),
    "figure tiny scale": (f"figure --queries #1 --geometries A --out {A_DIR}/f.png --scale 1e-300",
                          r"--scale: '1e-300' is out of range; pass a number from 0\.1 to 1000"),
    "evaluate tiny scales": ("evaluate-builtin --scales 10 0.001", r"--scales: '0\.001' is out of range; pass a number "
                                                                   r"from 0\.1 to 1000"),
    "reproduce negative seed": ("reproduce --seed -1", r"--seed: '-1' is out of range; pass a whole number from 0 to 4294967295"),
    "embed batch size 0": (f"embed {FOLDER} --encoder builtin --batch-size 0", r"--batch-size: '0' is out of range; pass a whole number from 1 to 4096"),
    "train epochs 0": ("train-builtin --epochs 0", r"--epochs: '0' is out of range; pass a whole number from 1 to"),
    "train smoothing above 1": ("train-builtin --name-smoothing 1.5",
                                r"--name-smoothing: '1.5' is out of range; pass a number from 0 to 1"),
    "evaluate memory weight 2": ("evaluate-builtin --memory-weight 2",
                                 r"--memory-weight: '2' is out of range; pass a number from 0 to 1"),
    "explorer-bench gallery 0": ("explorer-bench --gallery 0", r"--gallery: '0' is out of range; pass a whole number from 1 to"),
    "explorer-bench gallery limit 0": ("explorer-bench --browser --gallery-limit 0",
                                       r"--gallery-limit: '0' is out of range; pass a whole number from 1 to"),
    "explorer-bench unknown split": ("explorer-bench --browser --gallery-split test", r"--gallery-split: invalid choice"),
    "unknown command": ("serve", r"invalid choice: 'serve'"),
    "embed without --encoder": (f"embed {FOLDER}", r"the following arguments are required: --encoder"),
    "unknown layout": (f"reproduce --layout coco --root {FOLDER}", r"--layout: invalid choice: 'coco'"),
    # -- outputs: checked before the work, naming the path and the fix ---------------------------------
    "bench --json is a folder": (f"bench --json {A_DIR}", r"--json '.*out' is a folder, not a file; give --json a file"),
    "bench --json under a file": (f"bench --json {A_FILE}/bench.json",
                                  r"--json '.*' cannot be created: .*plain\.txt is a file, not a folder; give --json"),
    "bench --json unwritable": (f"bench --json {UNWRITABLE}/bench.json",
                                r"--json '.*' cannot be created: .*locked is not writable by this user"),
    "reproduce --out is a file": (f"reproduce --out {A_FILE}",
                                  r"--out '.*plain\.txt' is a file, not a folder; give --out a folder you can write to"),
    "reproduce --out under a file": (f"reproduce --out {A_FILE}/report",
                                     r"--out '.*' cannot be created: .*plain\.txt is a file, not a folder"),
    "reproduce --out unwritable": (f"reproduce --out {UNWRITABLE}",
                                   r"--out '.*locked' is not writable by this user; give --out a folder"),
    "embed --out store under a file": (f"embed {FOLDER} --encoder builtin --out {A_FILE}/store",
                                       r"--out '.*' cannot be created: .*plain\.txt is a file, not a folder"),
    "train --out is a file": (f"train-builtin --out {A_FILE}", r"--out '.*plain\.txt' is a file, not a folder"),
    "evaluate --json under a file": (f"evaluate-builtin --json {A_FILE}/x.json", r"--json '.*' cannot be created"),
    "explorer-bench --json is a folder": (f"explorer-bench --json {A_DIR}", r"--json '.*' is a folder, not a file"),
    # -- inputs --------------------------------------------------------------------------------------
    "embed missing folder": ("embed /nonexistent/images --encoder builtin",
                             r"image folder '/nonexistent/images' does not exist or is not a folder"),
    "embed missing labels": (f"embed {FOLDER} --encoder builtin --labels /nonexistent.csv",
                             r"--labels '/nonexistent\.csv' does not exist or is not a file; give a CSV"),
    "evaluate missing weights": ("evaluate-builtin --weights /nonexistent/weights",
                                 r"--weights '/nonexistent/weights' does not exist or is not a folder"),
    "embed world missing weights": ("embed-builtin-world --weights /nonexistent/weights",
                                    r"--weights '/nonexistent/weights' does not exist or is not a folder"),
    "reproduce missing folder": ("reproduce --folder /nonexistent/images",
                                 r"--folder '/nonexistent/images' does not exist or is not a folder"),
    "reproduce layout without root": ("reproduce --layout imagenet-r", r"--layout needs --root"),
    "reproduce root without layout": (f"reproduce --root {FOLDER}", r"--root is the folder of a --layout; add --layout"),
    "reproduce layout and folder": (f"reproduce --layout imagenet-r --root {FOLDER} --folder {FOLDER}",
                                    r"--layout and --folder both name the images; give one of them"),
    "reproduce column without folder": ("reproduce --object-column species",
                                        r"--object-column applies only with --folder; add --folder or drop them"),
    "reproduce unknown style column": (f"reproduce --folder {FOLDER} --style-column style",
                                       r"--style-column 'style' is not a label column; .*\['path', 'label'\]\. "
                                       r"Give one of them, or a --labels CSV"),
    "reproduce unknown object column": (f"reproduce --folder {FOLDER} --labels {LABELS} --object-column species",
                                        r"--object-column 'species' is not a label column; the --labels CSV gives "
                                        r"\['path', 'label', 'style'\]"),
    "reproduce unknown group column": (f"reproduce --folder {FOLDER} --labels {LABELS} --group-column kind",
                                       r"--group-column 'kind' is not a label column"),
    "reproduce empty labels CSV": (f"reproduce --folder {FOLDER} --labels {EMPTY_CSV}",
                                   r"--labels '.*empty\.csv': the file is empty; write a header row"),
    "reproduce missing anchors file": (f"reproduce --folder {FOLDER} --object-anchors /nonexistent.txt",
                                       r"--object-anchors '/nonexistent\.txt' does not exist or is not a file"),
    "reproduce anchors not UTF-8": (f"reproduce --folder {FOLDER} --style-anchors {LATIN1}",
                                    r"--style-anchors '.*latin1\.txt' cannot be read \(.*utf-8.*\); give a UTF-8"),
    # -- devices -------------------------------------------------------------------------------------
    "bench unknown device": ("bench --device gpu0", r"--device='gpu0' is not a device torch knows; use 'cpu'"),
    "bench cuda without CUDA": ("bench --device cuda", r"--device='cuda' asks for CUDA, but torch\.cuda\.is_available"
                                                       r"\(\) is False here .*; use 'cpu'"),
    "reproduce cuda without CUDA": ("reproduce --device cuda:0", r"--device='cuda:0' asks for CUDA"),
    "embed cuda without CUDA": (f"embed {FOLDER} --encoder builtin --device cuda", r"--device='cuda' asks for CUDA"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_command_line_is_one_message_before_any_work(case, place, no_work, monkeypatch, capsys):
    command_line, expected = CASES[case]
    argv = [fill(argument, place) for argument in command_line.split()]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # the same on a machine with a GPU
    if UNWRITABLE in command_line:
        deny_writes_to(monkeypatch, place[UNWRITABLE])
    start = time.perf_counter()
    code = main(argv)
    seconds = time.perf_counter() - start
    captured = capsys.readouterr()
    assert code == 2, captured
    assert "Traceback" not in captured.err and captured.out == ""
    line = captured.err.strip()
    assert "\n" not in line, line
    prefix = "anchordiv" if case == "unknown command" else f"anchordiv {argv[0]}"
    assert line.startswith(prefix + ": "), line
    assert re.search(expected, line), line
    assert seconds < 3, f"took {seconds:.1f} s: checked after the work?"


def test_the_installed_entry_point_exits_2_with_the_same_line(place, tmp_path):
    """One real process: ``python -m anchordiv`` turns the refusal into exit status 2, no traceback."""
    result = subprocess.run([sys.executable, "-m", "anchordiv", "reproduce", "--out", place[A_FILE]],
                            env={**os.environ, "ANCHORDIV_CACHE": str(tmp_path / "cache")},
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stdout == ""
    assert re.fullmatch(r"anchordiv reproduce: --out '.*plain\.txt' is a file, not a folder; give --out a folder "
                        r"you can write to\n", result.stderr), result.stderr


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 20


# -- the cache variable ----------------------------------------------------------------------------
@pytest.mark.parametrize("where, expected", [
    (A_FILE, r"ANCHORDIV_CACHE=.*plain\.txt is a file, not a folder; set ANCHORDIV_CACHE to a folder you can write to"),
    (f"{A_FILE}/cache", r"ANCHORDIV_CACHE=.* cannot be created: .*plain\.txt is a file, not a folder; set ANCHORDIV"),
    (UNWRITABLE, r"ANCHORDIV_CACHE=.*locked is not writable by this user; set ANCHORDIV_CACHE"),
])
@pytest.mark.parametrize("command", [f"reproduce --folder {FOLDER}", f"embed {FOLDER} --encoder builtin"])
def test_a_bad_cache_variable_is_named_before_any_work(where, expected, command, place, no_work, monkeypatch, capsys):
    monkeypatch.setenv("ANCHORDIV_CACHE", fill(where, place))
    if where == UNWRITABLE:
        deny_writes_to(monkeypatch, place[UNWRITABLE])
    assert main([fill(argument, place) for argument in command.split()]) == 2
    err = capsys.readouterr().err
    assert re.search(expected, err) and "Traceback" not in err, err


def test_a_read_only_cache_filled_in_advance_can_still_be_read(place, monkeypatch):
    monkeypatch.setenv("ANCHORDIV_CACHE", place[UNWRITABLE])
    deny_writes_to(monkeypatch, place[UNWRITABLE])
    from anchordiv.cache import cache_dir

    assert cache_dir() == Path(place[UNWRITABLE])
    with pytest.raises(ValueError, match="not writable"):
        cache_dir(writable=True)


# -- the library under the command line ------------------------------------------------------------
def test_resolve_device_refuses_cuda_without_it_and_keeps_cpu_and_none(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match=r"device='cuda' asks for CUDA, but torch\.cuda\.is_available\(\) is False"):
        resolve_device("cuda")
    with pytest.raises(ValueError, match="asks for CUDA"):
        resolve_device(torch.device("cuda", 0))
    assert resolve_device("cpu") == resolve_device(None) == torch.device("cpu")


def test_a_failed_write_names_the_path(place):
    target = Path(place[A_FILE]) / "cache.npy"
    with pytest.raises(ValueError, match=r"cannot write .*plain\.txt/cache\.npy: .*; free some space or choose a folder"):
        atomic_write(target, lambda handle: handle.write(b"x"))


def test_check_folder_accepts_what_it_can_create(place):
    assert check_folder(Path(place[A_DIR]) / "new" / "deeper", "--out", "fix") == Path(place[A_DIR]) / "new" / "deeper"
    assert not (Path(place[A_DIR]) / "new").exists()  # checked, not created


def test_an_os_error_during_the_work_is_a_message(place, monkeypatch, capsys):
    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device", "/data/bench.json")

    monkeypatch.setattr(anchordiv.benchmarks.search, "run_benchmark", disk_full)
    assert main(["bench", "--queries", "4", "--gallery", "16", "--dim", "4", "--anchors", "4"]) == 2
    err = capsys.readouterr().err
    assert re.fullmatch(r"anchordiv bench: No space left on device \(/data/bench\.json\); check that the path exists "
                        r"and is readable or writable as needed, and that its disk has space\n", err), err


def test_resolve_device_names_a_gpu_past_the_last_one(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert resolve_device("cuda") == torch.device("cuda")
    with pytest.raises(ValueError, match=r"--device='cuda:3' names GPU 3, but this machine has 1 \(cuda:0 to cuda:0\)"):
        resolve_device("cuda:3", "--device")


def test_on_a_gpu_the_memory_check_reads_the_gpus_free_memory(monkeypatch):
    from anchordiv.benchmarks.memory import available_memory

    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (7 * 2**30, 80 * 2**30))
    assert available_memory(torch.device("cuda")) == 7 * 2**30
    assert available_memory(torch.device("cpu")) > 0
