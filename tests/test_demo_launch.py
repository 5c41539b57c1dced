"""``anchordiv demo --encoder ... --folder ...``: the folder embedded into the cache before the server
starts, the explorer launched on it with a data root for it, and bad choices refused first."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from anchordiv.benchmarks.browser import free_port, wait_healthy
from anchordiv.cli import demo, main
from anchordiv.embeddings import embed_folder
from anchordiv.explorer.launch import LaunchOptions
from anchordiv.encoders import load_encoder
from conftest import stop_process_group


@pytest.fixture
def photos(tmp_path: Path) -> Path:
    """Six tiny images in two label folders, and a labels CSV beside the folder (outside it)."""
    folder = tmp_path / "photos"
    for label, colour in (("red", (220, 30, 30)), ("blue", (30, 30, 220))):
        (folder / label).mkdir(parents=True)
        for number in range(3):
            Image.new("RGB", (12, 12), tuple(min(255, value + 10 * number) for value in colour)).save(
                folder / label / f"{number}.png")
    (tmp_path / "labels.csv").write_text("path,style\n" + "".join(
        f"{label}/{number}.png,style {number}\n" for label in ("red", "blue") for number in range(3)))
    return folder


@pytest.fixture
def no_server(monkeypatch) -> list[list[str]]:
    """The command lines ``demo`` would start the server with (none is started)."""
    started: list[list[str]] = []
    monkeypatch.setattr(demo, "serve", lambda argv: started.append(argv) or 0)
    return started


def app_args(argv: list[str]) -> list[str]:
    return argv[argv.index("--") + 1:]


def test_demo_embeds_the_folder_then_opens_the_explorer_on_it(photos, no_server, capsys):
    labels = photos.parent / "labels.csv"
    assert main(["demo", "--port", "8600", "--encoder", "builtin", "--folder", str(photos), "--labels", str(labels),
                 "--allow-download"]) == 0
    assert "embedded 6 images: 0 reused from the cache, 6 newly encoded" in capsys.readouterr().out
    passed = app_args(no_server[0])
    assert passed == ["--encoder", "builtin", "--folder", str(photos.resolve()), "--labels", str(labels.resolve()),
                      "--allow-download", "--data-root", str(photos.resolve())]
    # The CSV beside the folder is the one file the server may open there, not its whole folder.
    roots = LaunchOptions.from_launch(passed, {}).roots
    assert roots.confine(labels) == labels.resolve()
    (photos.parent / "secret.txt").write_text("not for visitors")
    with pytest.raises(ValueError, match="outside the data folders"):
        roots.confine(photos.parent / "secret.txt")
    # The explorer's own embedding of the folder is then read from the cache.
    assert embed_folder(photos, load_encoder("builtin"), labels_csv=labels, progress=False).reused == 6


def test_a_folder_inside_a_given_data_root_gets_no_second_root(photos, no_server):
    assert main(["demo", "--folder", str(photos), "--", "--data-root", str(photos.parent)]) == 0
    assert app_args(no_server[0]) == ["--data-root", str(photos.parent), "--folder", str(photos.resolve())]


def test_the_device_is_passed_to_the_explorer(no_server):
    assert main(["demo", "--device", "cpu"]) == 0
    assert app_args(no_server[0]) == ["--device", "cpu"]


def test_a_server_started_the_old_way_reads_model_as_its_encoder():
    """``streamlit run app/streamlit_app.py -- --model SPEC``, as scripts said before ``--encoder``:
    the explorer opens on that encoder, and refuses a bad one at start-up as it would ``--encoder``."""
    assert LaunchOptions.from_launch(["--model", "builtin"], {}).encoder == "builtin"
    assert LaunchOptions.from_launch(["--encoder", "builtin"], {}).encoder == "builtin"
    with pytest.raises(ValueError, match="unknown encoder spec 'clip'"):
        LaunchOptions.from_launch(["--model", "clip"], {})


def test_plain_demo_passes_only_what_follows_the_double_dash(no_server):
    assert main(["demo", "--allow-download"]) == 0
    assert app_args(no_server[0]) == ["--allow-download"]


@pytest.mark.parametrize("options, message", [
    (["--folder", "{missing}"], "--folder '{missing}' does not exist or is not a folder"),
    (["--encoder", "nonsense", "--folder", "{photos}"], "nonsense"),
    (["--encoder", "open_clip:no-such-architecture-xyz"], "no-such-architecture-xyz"),
    (["--labels", "{photos}/../labels.csv"], "--labels .* labels the images of --folder; give --folder too"),
    (["--pretrained", "laion2b_s34b_b79k"], "--pretrained 'laion2b_s34b_b79k' needs --encoder"),
    (["--device", "tpu"], "--device='tpu' is not a device torch knows"),
])
def test_bad_choices_are_refused_before_the_server_starts(photos, monkeypatch, capsys, options, message):
    monkeypatch.setattr(demo, "serve", lambda argv: pytest.fail("the server started"))
    filled = [option.format(missing=photos.parent / "missing", photos=photos) for option in options]
    assert main(["demo", *filled]) == 2
    error = capsys.readouterr().err
    assert error.startswith("anchordiv demo: ") and len(error.strip().splitlines()) == 1
    assert re.search(message.format(missing=photos.parent / "missing"), error), error


@pytest.mark.slow
def test_the_demo_server_answers_on_the_embedded_folder(photos, tmp_path, request):
    """A real ``anchordiv demo`` process: it embeds the folder, starts Streamlit with the launch
    options in its own place (the same process: nothing the preparation loaded stays resident beside
    the server), and the server answers its health check. Its very first page is a link of 2,000 values,
    which Streamlit drops unread: the page names it (the launcher wrapped that check before the
    server started). The browser part needs Chromium, and skips without it."""
    port, log = free_port(), tmp_path / "demo.log"
    with log.open("w") as output:
        server = subprocess.Popen([sys.executable, "-m", "anchordiv", "demo", "--port", str(port), "--encoder", "builtin",
                                   "--folder", str(photos)],
                                  cwd=tmp_path, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", server, log, seconds=90)
        assert "embedded 6 images" in log.read_text()
        argv = Path(f"/proc/{server.pid}/cmdline").read_bytes().decode().split("\0")
        assert argv[argv.index("--") + 1:-1] == ["--encoder", "builtin", "--folder", str(photos.resolve()),
                                                 "--data-root", str(photos.resolve())]
        assert argv[1:4] == ["-m", "anchordiv.app.serve", "run"], argv
        page = request.getfixturevalue("browser").new_page()
        page.goto(f"http://127.0.0.1:{port}/?" + "&".join(["p=0.7"] * 2000))
        page.get_by_text("the link holds 2,000 values").first.wait_for(timeout=90_000)
    finally:
        stop_process_group(server)


def test_a_folder_of_three_images_opens_on_an_explore_page_that_ranks_them(tmp_path, no_server, monkeypatch, capsys):
    """The fewest images ``demo --folder`` takes (issue 52, F2): 3 readable ones beside files that are
    not images. The explorer it launches builds the geometry of A and B on them (calibrated with the
    2 others each query has, not refused for want of k + 1 = 11) and, at a top-k they hold, ranks them."""
    from drawings import distinct_drawings
    from markup import plain
    from streamlit.testing.v1 import AppTest
    from app_pages import APP, TIMEOUT
    from test_app import neighbours, with_table

    folder = tmp_path / "three"
    folder.mkdir()
    for number, image in enumerate(distinct_drawings()[:3]):
        image.save(folder / f"{number}.png")
    for name in ("notes.png", "empty.jpg"):
        (folder / name).write_text("not an image" if name == "notes.png" else "")
    monkeypatch.setenv("ANCHORDIV_CACHE", str(tmp_path / "cache"))
    assert main(["demo", "--folder", str(folder), "--device", "cpu", "-q"]) == 0
    assert "embedded 3 images" in capsys.readouterr().out
    monkeypatch.setattr("sys.argv", ["streamlit_app.py", *app_args(no_server[0])])
    app = with_table(AppTest.from_file(str(APP), default_timeout=TIMEOUT)).run()
    errors = [plain(error.value) for error in app.error]
    assert not app.exception and not [error for error in errors if "Cannot build the geometry" in error], errors
    app.number_input(key="top_k").set_value(2).run()
    assert not app.exception and not app.error, [plain(error.value) for error in app.error]
    assert len(neighbours(app)) == 2
