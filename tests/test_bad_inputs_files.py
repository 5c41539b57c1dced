"""A corpus of hostile or broken files: each case ends in a clear ValueError, a skip with its reason, or
the right result, and none may hang (every case runs in a thread with a deadline)."""
from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from anchordiv.datasets.layouts import load_chexpert
from anchordiv.embeddings import MAX_CSV_BYTES, embed_folder
from anchordiv.encoders.open_clip_encoder import resolve_checkpoint
from anchordiv.images import ImageLoadError, load_image, to_rgb
from helpers import encoded, within
from test_embeddings import CountingEncoder, picture

DEADLINE_S = 15.0
pytestmark = pytest.mark.usefixtures("cache")  # every case its own anchordiv cache (conftest.py)


@dataclass(frozen=True)
class Refused:
    """A ValueError whose message matches ``pattern``."""

    pattern: str


@dataclass(frozen=True)
class Skipped:
    """The gallery is built, with ``path`` in ``skipped`` for a reason matching ``pattern``."""

    path: str
    pattern: str


@dataclass(frozen=True)
class Gives:
    """The call returns; ``check(result)`` asserts what it must be."""

    check: Callable[[object], None]


class BrokenEncoder(CountingEncoder):
    """Returns NaN (or all-zero) vectors for every image, like a model with broken weights."""

    def __init__(self, value: float):
        super().__init__(name=f"test:broken-{value}")
        self.value = value

    def _encode_image_batch(self, images):
        return super()._encode_image_batch(images) * 0 + self.value


def gallery(tmp: Path) -> Path:
    """Two good images: ``cats/a.png`` (label cats) and ``b.png`` (no label)."""
    root = tmp / "g"
    (root / "cats").mkdir(parents=True)
    picture(0).save(root / "cats/a.png")
    picture(1).save(root / "b.png")
    return root


def embed(root: Path, **options):
    return embed_folder(root, CountingEncoder(), progress=False, **options)


def with_entry(make: Callable[[Path], None]) -> Callable[[Path], object]:
    """Embed the two-image gallery after ``make(root)`` added something to it."""
    def run(tmp: Path):
        root = gallery(tmp)
        make(root)
        return embed(root)
    return run


def with_csv(content: bytes | Callable[[Path], Path]) -> Callable[[Path], object]:
    """Embed the gallery with a labels CSV holding ``content`` (or made by ``content(tmp)``)."""
    def run(tmp: Path):
        root = gallery(tmp)
        if callable(content):
            csv = content(tmp)
        else:
            csv = tmp / "labels.csv"
            csv.write_bytes(content)
        return embed(root, labels_csv=csv)
    return run


def unix_socket(path: Path) -> None:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.close()  # the socket file stays


def png16(mode: str) -> bytes:
    """A 64x64 16-bit grayscale gradient over the full 0..65535 range, as PNG bytes."""
    values = np.linspace(0, 65535, 64 * 64).reshape(64, 64).astype(np.uint16)
    image = Image.fromarray(values) if mode == "I;16" else Image.frombytes(mode, (64, 64), values.astype(">u2").tobytes())
    return encoded(image)


def scaled_not_white(image: Image.Image) -> None:
    pixels = np.asarray(image)[..., 0].astype(float)
    assert image.mode == "RGB" and (pixels == 255).mean() < 0.01  # clipping made 99.5% of them white
    assert abs(pixels.mean() - 127.5) < 1.5 and pixels.min() == 0 and pixels.max() == 255


def non_utf8(root: Path, relative: bytes) -> bytes:
    return os.fsencode(root) + b"/" + relative


def embedded_with_non_utf8_name(tmp: Path):
    root = gallery(tmp)
    with open(non_utf8(root, b"caf\xe9.png"), "wb") as handle:
        handle.write(encoded(picture(2)))
    os.mkdir(non_utf8(root, b"\xff\xfe"))
    with open(non_utf8(root, b"\xff\xfe/x.png"), "wb") as handle:
        handle.write(encoded(picture(3)))
    with open(non_utf8(root, b"bad\xe9.png"), "wb") as handle:
        handle.write(b"not a picture")
    return root, embed(root)


def check_non_utf8(result) -> None:
    root, embedded = result
    assert len(embedded.paths) == 4  # nothing refused: both odd names are in the gallery
    assert "caf\ufffd.png" in embedded.display_paths and "\ufffd\ufffd/x.png" in embedded.display_paths
    for path in embedded.paths:
        load_image(root / path)  # the real paths still open the files
    assert "\ufffd\ufffd" in set(embedded.labels["label"].dropna())  # the folder label is shown safely
    assert [path for path, _ in embedded.skipped] == ["bad\ufffd.png"]
    shown = embedded.display_paths + [str(label) for label in embedded.labels["label"]] + [p for p, _ in embedded.skipped]
    "\n".join(shown).encode("utf-8")  # nothing left to crash a printer or a web page


def nan_cache(tmp: Path):
    root = gallery(tmp)
    first = embed(root)
    vectors = np.load(first.cache_path)
    vectors[0, 0] = np.nan
    np.save(first.cache_path, vectors)  # and make the meta vouch for it: NaNs "with a matching hash"
    meta_path = first.cache_path.with_name(first.cache_path.name + ".json")
    meta = json.loads(meta_path.read_text())
    meta["sha256"] = hashlib.sha256(first.cache_path.read_bytes()).hexdigest()
    meta_path.write_text(json.dumps(meta))
    encoder = CountingEncoder()
    again = embed_folder(root, encoder, progress=False)
    return encoder, again


def check_nan_cache(result) -> None:
    encoder, again = result
    assert encoder.images_seen == 2 and again.reused == 0  # refused and rebuilt, not served
    assert np.isfinite(again.embeddings.numpy()).all()


def missing_rows(tmp: Path):
    root = gallery(tmp)
    picture(4).save(root / "cats/c.png")
    csv = tmp / "labels.csv"
    csv.write_text("path,label\ncats/a.png,tabby\n")
    return embed(root, labels_csv=csv)


def check_missing_rows(result) -> None:
    labels = result.labels.set_index("path")["label"]
    assert labels["cats/a.png"] == "tabby" and labels["cats/c.png"] == "cats"  # folder label kept
    assert result.unlabelled == ["b.png", "cats/c.png"]


def check_bom(result) -> None:
    assert list(result.labels.columns) == ["path", "label"]  # not "\ufeffpath"
    assert result.labels.set_index("path").loc["b.png", "label"] == "top"


def chexpert_with(csv_text: bytes) -> Callable[[Path], object]:
    def run(tmp: Path):
        root = tmp / "CheXpert-v1.0-small"
        (root / "valid").mkdir(parents=True)
        (root / "valid.csv").write_bytes(csv_text)
        return load_chexpert(root)
    return run


def checkpoint_at(make: Callable[[Path], Path]) -> Callable[[Path], object]:
    return lambda tmp: resolve_checkpoint("ViT-B-32", str(make(tmp)))


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def link(path: Path, target: str | Path) -> Path:
    path.symlink_to(target)
    return path


def huge_csv(tmp: Path) -> Path:
    path = tmp / "huge.csv"
    with open(path, "wb") as handle:
        handle.truncate(MAX_CSV_BYTES + 1)  # sparse: costs no disk, and must never be read
    return path


CASES = [
    # ---- entries in a folder that are not regular files: skipped with a reason, never opened
    pytest.param(with_entry(lambda root: fifo(root / "pipe.png")), Skipped("pipe.png", r"named pipe \(FIFO\), not a regular file"), id="fifo-in-folder"),
    pytest.param(with_entry(lambda root: unix_socket(root / "s.png")), Skipped("s.png", r"a socket, not a regular file"), id="socket-in-folder"),
    pytest.param(with_entry(lambda root: link(root / "self.png", root / "self.png")), Skipped("self.png", r"symbolic link loop"), id="symlink-to-itself"),
    pytest.param(with_entry(lambda root: (link(root / "x.png", root / "y.png"), link(root / "y.png", root / "x.png"))),
                 Skipped("y.png", r"symbolic link loop"), id="symlink-cycle"),
    pytest.param(with_entry(lambda root: link(root / "gone.png", root / "nowhere.png")), Skipped("gone.png", r"broken symbolic link"), id="broken-symlink"),
    pytest.param(with_entry(lambda root: link(root / "zero.png", "/dev/zero")), Skipped("zero.png", r"character device"), id="link-to-dev-zero"),
    pytest.param(with_entry(lambda root: link(root / "status.png", "/proc/self/status")), Skipped("status.png", r"system file under /proc"), id="link-into-proc"),
    pytest.param(with_entry(lambda root: link(root / "loopdir", root)), Skipped("loopdir", r"link to a folder; .* not followed"), id="link-to-folder"),
    pytest.param(with_entry(lambda root: (root / "cut.png").write_bytes(encoded(picture(7, (64, 64)))[:300])),
                 Skipped("cut.png", r"damaged or cut off"), id="truncated-image"),
    pytest.param(with_entry(lambda root: (root / "empty.png").write_bytes(b"")), Skipped("empty.png", r"not an image"), id="empty-image"),
    # ---- folders that must not be scanned at all
    pytest.param(lambda tmp: embed(Path("/proc")), Refused(r"'/proc' is \(or links into\) /proc, a system folder.*pass a folder"), id="folder-proc"),
    pytest.param(lambda tmp: embed(Path("/dev")), Refused(r"'/dev' is \(or links into\) /dev, a system folder"), id="folder-dev"),
    pytest.param(lambda tmp: embed(Path("/sys")), Refused(r"'/sys' is \(or links into\) /sys, a system folder"), id="folder-sys"),
    pytest.param(lambda tmp: embed(link(tmp / "innocent", "/proc/self")), Refused(r"innocent' is \(or links into\) /proc, a system folder"), id="folder-links-into-proc"),
    # ---- pixels that used to come out wrong
    pytest.param(lambda tmp: load_image(png16("I;16")), Gives(scaled_not_white), id="png-16bit-I;16"),
    pytest.param(lambda tmp: load_image(png16("I;16B")), Gives(scaled_not_white), id="png-16bit-I;16B"),
    pytest.param(lambda tmp: to_rgb(Image.fromarray(np.linspace(0, 65535, 4096).reshape(64, 64).astype(np.int32), "I")),
                 Gives(scaled_not_white), id="mode-I-32bit"),
    pytest.param(lambda tmp: load_image(fifo(tmp / "direct.png")), Refused(r"direct.png: a named pipe"), id="load-image-fifo"),
    # ---- names that are not UTF-8
    pytest.param(embedded_with_non_utf8_name, Gives(check_non_utf8), id="non-utf8-names"),
    # ---- labels CSVs
    pytest.param(with_csv(b""), Refused(r"labels CSV .*labels.csv: the file is empty; write a header row"), id="csv-empty"),
    pytest.param(with_csv(b"\n\n  \n"), Refused(r"labels CSV .*labels.csv: the file is empty"), id="csv-blank-lines"),
    pytest.param(with_csv(b"path,label\n\x00\x01\x02PK\x03\x04"), Refused(r"labels.csv: line 2 holds binary data .* export the table as CSV"), id="csv-binary"),
    pytest.param(with_csv(b'path,label\nb.png,x\ncats/a.png,"unclosed\n'), Refused(r"labels.csv: line 3 opens a quoted cell .* never closed"), id="csv-unclosed-quote"),
    pytest.param(with_csv(b"path,label\nb.png,x\ncats/a.png,a,b\n"), Refused(r"labels.csv: line 3 has 3 cells but the header has 2; quote cells"), id="csv-extra-cells"),
    pytest.param(with_csv(b"path,label\nb.png,caf\xe9\n"), Refused(r"labels.csv: line 2 is not UTF-8 text \(byte 0xe9\); save the file as UTF-8"), id="csv-latin1"),
    pytest.param(with_csv(b"path,label\nb.png,x\nb.png,y\n"), Refused(r"path 'b.png' appears in more than one row \(data rows 1 and 2\)"), id="csv-duplicate-row"),
    pytest.param(with_csv(b"path,label\nb.png,x\n,y\n"), Refused(r"labels.csv: data row 2 has no path; fill it in"), id="csv-blank-key"),
    pytest.param(with_csv(b"\xef\xbb\xbfpath,label\nb.png,top\n"), Gives(check_bom), id="csv-utf8-bom"),
    pytest.param(missing_rows, Gives(check_missing_rows), id="csv-missing-rows"),
    pytest.param(with_csv(huge_csv), Refused(r"huge.csv: the file is 50.0 MB, over the 50 MB limit for CSV files"), id="csv-huge"),
    pytest.param(with_csv(lambda tmp: fifo(tmp / "pipe.csv")), Refused(r"labels CSV .*pipe.csv: a named pipe"), id="csv-fifo"),
    pytest.param(with_csv(lambda tmp: Path("/dev/zero")), Refused(r"labels CSV /dev/zero: a character device"), id="csv-dev-zero"),
    pytest.param(with_csv(lambda tmp: Path("/proc/self/environ")), Refused(r"labels CSV /proc/self/environ: a system file under /proc"), id="csv-proc-environ"),
    pytest.param(chexpert_with(b'Path,Sex\n"CheXpert-v1.0-small/valid/p1/s1/v.jpg,Male\n'), Refused(r"chexpert: .*valid.csv: line 2 opens a quoted cell"), id="chexpert-csv-quote"),
    pytest.param(chexpert_with(b""), Refused(r"chexpert: .*valid.csv: the file is empty"), id="chexpert-csv-empty"),
    # ---- vectors that must never be cached or served
    pytest.param(nan_cache, Gives(check_nan_cache), id="nan-in-cache-with-matching-hash"),
    pytest.param(lambda tmp: embed_folder(gallery(tmp), BrokenEncoder(float("nan")), progress=False),
                 Refused(r"encoder 'test:broken-nan' returned NaN, infinite or zero vectors for 2 of 2 images"), id="nan-from-encoder"),
    pytest.param(lambda tmp: embed_folder(gallery(tmp), BrokenEncoder(0.0), progress=False),
                 Refused(r"returned NaN, infinite or zero vectors .* Nothing was cached"), id="zero-from-encoder"),
    # ---- checkpoint files
    pytest.param(checkpoint_at(lambda tmp: fifo(tmp / "weights.pt")), Refused(r"checkpoint .*weights.pt: a named pipe .* pass the path of a checkpoint file"), id="checkpoint-fifo"),
    pytest.param(checkpoint_at(lambda tmp: Path("/dev/zero")), Refused(r"checkpoint /dev/zero: a character device"), id="checkpoint-dev-zero"),
    pytest.param(checkpoint_at(lambda tmp: link(tmp / "loop.pt", tmp / "loop.pt")), Refused(r"checkpoint .*loop.pt: a symbolic link loop"), id="checkpoint-link-loop"),
]


def run_with_deadline(action: Callable[[Path], object], tmp: Path) -> tuple[object, BaseException | None]:
    """``action(tmp)`` in a thread (:func:`helpers.within`); fails the test (rather than hanging it) if
    it blocks past the deadline, releasing the FIFOs under ``tmp`` first."""
    return within(DEADLINE_S, lambda: action(tmp), on_timeout=lambda: release_fifos(tmp),
                  why="a read that waits on a pipe or device")


def release_fifos(tmp: Path) -> None:
    """Open every FIFO under ``tmp`` for writing, so a reader stuck on one returns and the thread ends."""
    for directory, _, names in os.walk(tmp):
        for name in names:
            path = os.path.join(directory, name)
            if stat.S_ISFIFO(os.lstat(path).st_mode):
                try:
                    os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
                except OSError:
                    pass


@pytest.mark.parametrize("action, expected", CASES)
def test_bad_input(tmp_path, action, expected):
    result, error = run_with_deadline(action, tmp_path)
    if isinstance(expected, Refused):
        assert error is not None, f"expected a refusal, got {result!r}"
        assert isinstance(error, ValueError), f"{type(error).__name__} is not a ValueError: {error}"
        assert re.search(expected.pattern, str(error)), str(error)
        assert "Traceback" not in str(error) and "C error" not in str(error)
        return
    if error is not None:
        raise error
    if isinstance(expected, Skipped):
        reasons = dict(result.skipped)
        assert expected.path in reasons, f"{expected.path} not skipped: {result.skipped}"
        assert re.search(expected.pattern, reasons[expected.path]), reasons[expected.path]
        assert sorted(result.paths) == ["b.png", "cats/a.png"]  # the rest of the folder is still embedded
    else:
        expected.check(result)


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 25


def test_a_pipe_given_to_load_image_is_an_image_error(tmp_path):
    """A pipe handed to load_image is an ImageLoadError (so embed_folder lists it), and returns at once."""
    path = fifo(tmp_path / "p.png")
    _, error = run_with_deadline(lambda tmp: load_image(path), tmp_path)
    assert isinstance(error, ImageLoadError) and "named pipe" in error.reason


def test_csv_in_folder_is_not_a_skipped_file_even_through_a_link(tmp_path):
    root = gallery(tmp_path)
    (root / "labels.csv").write_text("path,label\nb.png,x\n")
    link(tmp_path / "alias.csv", root / "labels.csv")
    result = embed(root, labels_csv=tmp_path / "alias.csv")
    assert "labels.csv" not in dict(result.skipped) and result.unlabelled == ["cats/a.png"]
    assert isinstance(result.labels, pd.DataFrame)
