"""Hostile input to the figure and the command line (issue 22): every refusal is one message that
names the limit, the file or the line, and comes before the work; nothing is ignored quietly.

* Figure limits: rows, columns, k, dpi and pixels past :class:`anchordiv.figure.FigureLimits`
  are refused before anything is computed (library) or loaded (``anchordiv figure``), and the
  ``--max-*`` options raise them.
* Text is drawn as written: mathtext, markup, control characters, right-to-left marks and a
  10,000-character text in queries, gallery names, anchors and the gallery's description.
* Labels CSVs are read strictly (each kind of damage named with its file and line), the images a
  CSV misses are named in a warning, and an anchors file without anchors is refused.

Runs in-process through ``anchordiv.cli.main`` (and once as a real process) on the small slice of
the built-in world of conftest.py's ``library`` fixture."""
from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from dataclasses import replace

import pytest
from PIL import Image

from anchordiv import figure as fg
from anchordiv.builtin.weights import ASSETS_DIR, MANIFEST_NAME, WEIGHTS_NAME
from anchordiv.cli import main
from anchordiv.gallery import folder_gallery

needs_builtin = pytest.mark.skipif(
    not (ASSETS_DIR / WEIGHTS_NAME).is_file() or not (ASSETS_DIR / MANIFEST_NAME).is_file(),
    reason="the built-in model weights (assets/builtin-model.*) are not there yet")
WORLD = ["--split", "heldout", "--limit", "96"]  # the `library` fixture's slice
SVG = "{http://www.w3.org/2000/svg}"


def tripwire(*args, **kwargs):
    raise AssertionError("the work started before the bad input was refused")


@pytest.fixture
def no_model(monkeypatch, tmp_path):
    """Loading a model fails the test (every check must come first); a private, writable cache."""
    monkeypatch.setattr("anchordiv.encoders.load_encoder", tripwire)
    monkeypatch.setenv("ANCHORDIV_CACHE", str(tmp_path / "cache"))


def refusal(argv: list[str], capsys) -> str:
    """The one line ``main(argv)`` prints on stderr when it refuses ``argv`` with exit status 2."""
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 2, captured
    line = captured.err.strip()
    assert "Traceback" not in captured.err and "\n" not in line, captured.err
    assert line.startswith(f"anchordiv {argv[0]}: "), line
    return line


# -- figure limits ----------------------------------------------------------------------------------
def queries(n: int) -> list[str]:
    return [f"random:{seed}" for seed in range(n)]


EIGHT_COLUMNS = ["cosine", "iti", "A", "B", "mix p=0.2", "mix p=0.4", "mix p=0.6", "mix p=0.8"]
LIMITS = {  # figure options -> regex of the refusal
    "rows": (["--queries", *queries(300)],
             r"a figure has at most 12 query rows \(this one has 300\); remove rows, or raise the limit "
             r"\(--max-rows on the command line\)$"),
    "columns": (["--geometries", *[f"mix p=0.{i:02d}" for i in range(1, 100)]],
                r"at most 8 geometry columns \(this one has 99\); remove columns, or raise the limit \(--max-columns"),
    "neighbours": (["--queries", *queries(6), "--geometries", "cosine", "iti", "A", "B", "mix p=0.5", "-k", "20"],
                   r"at most 500 neighbours in all \(this one asks for 6 rows x 5 columns x top-20 = 600\); lower k, "
                   r"or remove rows or columns, or raise the limit \(--max-neighbours on the command line\)$"),
    "geometries": (["--geometries", "A", "A model=gaussian", "B model=gmm", "mix p=0.5 s=20", "mix p=0.5 s=30"],
                   r"at most 4 anchor geometries \(this one asks for 5 different models or scales\); give fewer "
                   r"columns their own model= or s=, or raise the limit \(--max-geometries on the command line\)$"),
    "k": (["-k", "21"], r"at most 20 neighbours per cell \(this one asks for top-21\); lower k, or raise the limit "
                        r"\(--max-k on the command line\)$"),
    "raised rows still bound": (["--queries", *queries(30), "--max-rows", "20"],
                                r"at most 20 query rows \(this one has 30\)"),
    "dpi": (["--dpi", "100000"], r"a PNG figure is drawn at most at 600 dpi \(this one asks for 100,000 dpi\); "
                                 r"lower the dpi, or raise the limit \(--max-dpi on the command line\)$"),
    "pixels": (["--geometries", *EIGHT_COLUMNS, "--max-columns", "8", "-k", "20", "--dpi", "600"],
               r"at 600 dpi this figure is 57,780 x 1,296 = 74,882,880 pixels, more than the limit of 40,000,000; "
               r"lower the dpi to 4\d\d or less, or raise the limit \(--max-pixels on the command line\)$"),
    "a PNG's side": (["--geometries", *EIGHT_COLUMNS, "--max-columns", "8", "-k", "20", "--dpi", "2000",
                      "--max-dpi", "5000", "--max-pixels", "100000000000"],
                     r"at 2,000 dpi this figure is 192,600 x \d[\d,]* pixels, and a PNG has at most 65,535 on a side; "
                     r"lower the dpi to 680 or less, or draw it as PDF or SVG$"),
    "a limit of 0": (["--max-rows", "0"], r"--max-rows: must be an integer >= 1; got '0'"),
}


@pytest.mark.parametrize("case", list(LIMITS))
def test_a_figure_past_a_limit_is_refused_before_a_model_loads(case, no_model, tmp_path, capsys):
    options, expected = LIMITS[case]
    base = {"--queries": ["#0"], "--geometries": ["A"]}
    given = [*options, *(word for name, words in base.items() if name not in options for word in (name, *words))]
    line = refusal(["figure", *given, "--out", str(tmp_path / "fig.png")], capsys)
    assert re.search(expected, line), line
    assert "fewer queries" not in line
    assert not (tmp_path / "fig.png").exists()


def test_a_huge_dpi_is_refused_by_a_real_process_in_seconds(tmp_path):
    result = subprocess.run([sys.executable, "-m", "anchordiv", "figure", "--queries", "#0", "--geometries", "A",
                             "--dpi", "100000", "--out", str(tmp_path / "fig.png")],
                            env={**os.environ, "ANCHORDIV_CACHE": str(tmp_path / "cache")}, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2 and result.stdout == "", result
    assert re.fullmatch(r"anchordiv figure: a PNG figure is drawn at most at 600 dpi .*--max-dpi on the command "
                        r"line\)\n", result.stderr), result.stderr


@pytest.mark.parametrize("rows, columns, k, limits, expected", [
    (4, 1, 1, fg.FigureLimits(rows=3), "at most 3 query rows (this one has 4)"),
    (1, 3, 1, fg.FigureLimits(columns=2), "at most 2 geometry columns (this one has 3)"),
    (1, 1, 8, fg.FigureLimits(k=7), "at most 7 neighbours per cell (this one asks for top-8)"),
    (3, 3, 3, fg.FigureLimits(neighbours=26), "at most 26 neighbours in all (this one asks for 3 rows x 3 columns"),
])
def test_compare_refuses_past_its_limits_before_computing_anything(rows, columns, k, limits, expected):
    """Nothing is resolved, embedded or fitted: every step compare would take is a tripwire."""
    with pytest.raises(ValueError, match=re.escape(expected)):
        fg.compare(None, None, ["#0"] * rows, ["cosine"] * columns, ["a"], ["b"], k, limits=limits,
                   geometry_for=tripwire, baseline_for=tripwire, embed_text=tripwire, embed_image=tripwire)


def test_compare_refuses_more_geometries_than_its_limit_before_fitting_any():
    with pytest.raises(ValueError, match=re.escape("at most 2 anchor geometries (this one asks for 3")):
        fg.compare(None, None, ["#0"], ["A", "A s=20", "B model=gaussian", "mix p=0.5"], ["a"], ["b"], 1,
                   limits=fg.FigureLimits(geometries=2), geometry_for=tripwire, baseline_for=tripwire,
                   embed_text=tripwire, embed_image=tripwire)


@pytest.mark.parametrize("limit, expected", [
    ({"rows": 0}, "FigureLimits.rows must be an integer >= 1; got 0"),
    ({"pixels": 2.5}, "FigureLimits.pixels must be an integer >= 1; got 2.5"),
])
def test_a_limit_must_be_a_whole_number(limit, expected):
    with pytest.raises(ValueError, match=re.escape(expected)):
        fg.FigureLimits(**limit)


@pytest.fixture(scope="module")
def world(library):
    """The slice and its default anchor sets (object names, styles)."""
    return {**library, "texts": (library["presets"]["Gallery object names"], library["presets"]["Gallery styles"])}


@pytest.fixture(scope="module")
def small_result(world):
    return fg.compare(world["gallery"], world["encoder"], ["#0", "#50"], ["cosine", "A"], *world["texts"], k=3)


@needs_builtin
@pytest.mark.parametrize("dpi, limits, expected", [
    (601, fg.DEFAULT_LIMITS, "a PNG figure is drawn at most at 600 dpi (this one asks for 601 dpi); lower the dpi"),
    (300, fg.FigureLimits(pixels=1_000_000), "pixels, more than the limit of 1,000,000; lower the dpi to "),
    (0, fg.DEFAULT_LIMITS, "dpi must be an integer >= 1; got 0"),
])
def test_a_png_past_its_limits_is_refused_before_drawing(small_result, dpi, limits, expected, monkeypatch):
    with monkeypatch.context() as patched:
        patched.setattr("matplotlib.figure.Figure", tripwire)
        with pytest.raises(ValueError, match=re.escape(expected)) as refused:
            fg.render_figure(small_result, "png", dpi=dpi, limits=limits)
    fits = re.search(r"lower the dpi to (\d+) or less", str(refused.value))
    if fits:  # the dpi the message offers is the highest that fits
        png = Image.open(io.BytesIO(fg.render_figure(small_result, "png", dpi=int(fits[1]), limits=limits)))
        assert png.size[0] * png.size[1] <= limits.pixels
        with pytest.raises(ValueError, match="more than the limit"):
            fg.render_figure(small_result, "png", dpi=int(fits[1]) + 1, limits=limits)


@needs_builtin
def test_vector_figures_do_not_depend_on_the_dpi(small_result):
    """The dpi is a PNG's: a PDF or SVG at 100,000 dpi is the same file as at 200."""
    for form in ("pdf", "svg"):
        assert fg.render_figure(small_result, form, dpi=100_000) == fg.render_figure(small_result, form)


@needs_builtin
def test_a_raised_limit_lets_the_figure_through(world, tmp_path, capsys):
    out = tmp_path / "fig.svg"
    assert main(["figure", "--queries", *queries(6), "--geometries", "cosine", "-k", "1", "--max-rows", "6", *WORLD,
                 "--out", str(out)]) == 0, capsys.readouterr().err
    assert len(ElementTree.parse(out).getroot().findall(f".//{SVG}image")) == 6 * 2


# -- text is drawn as written -----------------------------------------------------------------------
HOSTILE_TEXTS = {
    "unclosed mathtext": r"$\frac{1}{0$",
    "two prices": "$5 and $6",
    "a backslash": "\\",
    "sub and superscripts": "_x^2_",
    "markup": "<b>bold</b> & <a href='x'>",
    "right-to-left marks": "\u202eevil\u200f text\u2067",
    "control characters": "a\x01b\x1bc\x7fd",
    "10,000 characters": "spam " * 2000,
    "one 10,000-character word": "x" * 10_000,
}


def svg_texts(data: bytes) -> list[str]:
    root = ElementTree.fromstring(data)  # well-formed XML, whatever the texts held
    assert root.find(".//b") is None and root.find(".//a") is None
    return ["".join(element.itertext()) for element in root.iter(f"{SVG}text")]


def text_figure(world, text: str, gallery) -> fg.CompareResult:
    """``text`` as a query and an anchor of B, over ``gallery``, under cosine (no model to fit)."""
    return fg.compare(gallery, world["encoder"], ["#0", f"text:{text}"], ["cosine"], world["texts"][0],
                      (text, "a photo"), k=2)


@pytest.fixture(scope="module")
def plain_size(world):
    return fg.figure_size(text_figure(world, "a dog", world["gallery"]))


@needs_builtin
@pytest.mark.parametrize("case", list(HOSTILE_TEXTS))
def test_a_hostile_text_is_drawn_as_written_in_every_format(world, plain_size, case):
    """The text is a query, every gallery name, an anchor and the gallery's description at once."""
    text = HOSTILE_TEXTS[case]
    gallery = world["gallery"]
    labels = gallery.labels.assign(**{gallery.name_column: text})
    result = text_figure(world, text, replace(gallery, labels=labels, description=text))
    texts = svg_texts(fg.render_figure(result, "svg"))
    # The query's box starts with its first characters, as written (control characters as spaces),
    # not as math glyphs or markup.
    start = " ".join(text.split())[:10].translate({code: " " for code in [*range(0x20), *range(0x7F, 0xA0)]})
    assert start in " ".join(texts)
    assert max(map(len, texts)) < 400  # every caption cut to its room ...
    (width, height), (plain_width, plain_height) = fg.figure_size(result), plain_size
    assert width == plain_width and height <= plain_height + 2 * fg.FigureLayout().settings_line + 1e-9
    png = Image.open(io.BytesIO(fg.render_figure(result, "png", dpi=50)))  # ... and the figure keeps its size
    assert abs(png.size[0] - width * 50) <= 1 and abs(png.size[1] - height * 50) <= 1
    assert fg.render_figure(result, "pdf").startswith(b"%PDF")


@needs_builtin
def test_the_command_draws_a_dollar_text_query(world, tmp_path, capsys):
    out = tmp_path / "fig.svg"
    assert main(["figure", "--queries", "#0", r"text:$\frac{1}{0$", "--geometries", "cosine", "-k", "2", *WORLD,
                 "--out", str(out)]) == 0, capsys.readouterr().err
    assert r"$\frac{1}{0$" in svg_texts(out.read_bytes())


# -- labels CSVs ------------------------------------------------------------------------------------
@pytest.fixture
def folder(tmp_path):
    """Two small images, labelled by their subfolders cat/ and dog/."""
    for name, colour in (("cat", "red"), ("dog", "blue")):
        (tmp_path / "images" / name).mkdir(parents=True)
        Image.new("RGB", (16, 16), colour).save(tmp_path / "images" / name / "a.png")
    return tmp_path / "images"


DAMAGED_CSVS = {  # kind -> (file bytes, regex of what follows the file's name)
    "a quote never closed": (b'path,label\ncat/a.png,cat\ndog/a.png,"dog\n',
                             r': line 3 opens a quoted cell \(\"\) that is never closed; close the quote'),
    "a quote closed on a later line": (b'path,label\ncat/a.png,"cat\ndog/a.png,dog"\n',
                                       r': line 2 opens a quoted cell \(\"\) that closes only on line 3'),
    "a stray quote in a cell": (b'path,label\ncat/a.png,ca"t\ndog/a.png,dog\n', r': line 2 has an unbalanced quote'),
    "text after a closing quote": (b'path,label\ncat/a.png,"cat"s\n',
                                   r': line 2 has a stray quote \(\"\) inside a cell'),
    "a row with more cells": (b"path,label\ncat/a.png,cat\ndog/a.png,dog,extra\n",
                              r": line 3 has 3 cells but the header has 2; quote cells that contain commas"),
    "a row with fewer cells": (b"path,label,style\ncat/a.png,cat,photo\ndog/a.png,dog\n",
                               r": line 3 has 2 cells but the header has 3"),
    "a blank column name": (b"path,,style\ncat/a.png,cat,photo\n", r": line 1, the header, has no name for column 2"),
    "a repeated column name": (b"path,label,label\ncat/a.png,cat,kitten\n",
                               r": line 1, the header, names column 'label' more than once"),
    "an empty file": (b"", r": the file is empty; write a header row"),
    "only blank lines": (b"\n  \n\n", r": the file is empty"),
    "a NUL byte": (b"path,label\ncat/a.png,c\0t\n", r": line 2 holds binary data \(a NUL byte\)"),
    "not UTF-8": (b"path,label\ncat/a.png,caf\xe9\n", r": line 2 is not UTF-8 text \(byte 0xe9\)"),
    "no path column": (b"name,label\na.png,cat\n", r": needs a 'path' column .* or a 'filename' column"),
}


@pytest.mark.parametrize("command", ["embed", "reproduce"])
@pytest.mark.parametrize("kind", list(DAMAGED_CSVS))
def test_a_damaged_labels_csv_is_named_with_its_line_before_a_model_loads(kind, command, folder, no_model, capsys):
    content, expected = DAMAGED_CSVS[kind]
    labels = folder.parent / "labels.csv"
    labels.write_bytes(content)
    argv = {"embed": ["embed", str(folder), "--model", "builtin"], "reproduce": ["reproduce", "--folder", str(folder),
                                                                                "--out", str(folder.parent / "out")]}
    line = refusal([*argv[command], "--labels", str(labels)], capsys)
    assert re.search(re.escape(f"--labels {str(labels)!r}") + expected, line), line


@needs_builtin
def test_the_apps_folder_gallery_refuses_the_same_damage(world, folder):
    """The library's rule, not only the command line's: the app's folder galleries read CSVs so too."""
    labels = folder.parent / "labels.csv"
    labels.write_bytes(DAMAGED_CSVS["a quote closed on a later line"][0])
    with pytest.raises(ValueError, match=r"labels CSV .*labels\.csv: line 2 opens a quoted cell .* only on line 3"):
        folder_gallery(folder, world["encoder"], labels_csv=labels)


@needs_builtin
@pytest.mark.parametrize("out", [None, "store"])
def test_images_the_csv_misses_are_named_in_a_warning_and_the_run_goes_on(out, folder, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ANCHORDIV_CACHE", str(tmp_path / "cache"))
    labels = tmp_path / "labels.csv"
    labels.write_text("path,label\ncat/a.png,kitten\n")
    stored = ["--out", str(tmp_path / out)] if out else []
    assert main(["embed", str(folder), "--model", "builtin", "--device", "cpu", "--labels", str(labels), *stored]) == 0
    warning = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert warning == [f"anchordiv embed: warning: --labels {str(labels)!r} has no row for 1 image(s) ('dog/a.png'); "
                       "they keep their folder as label. Add a row for each to the CSV to label them"]


# -- anchors files ----------------------------------------------------------------------------------
EMPTY_ANCHOR_FILES = {"empty": "", "blank lines": "\n   \n\t\n", "zero-width spaces": "\u200b\n\u200b\u200b\n"}
REPRODUCE, FIGURE = ["reproduce", "--folder", "<folder>"], ["figure", "--queries", "#0", "--out", "<out>"]
ANCHOR_OPTIONS = [  # every option that reads an anchors file, with the rest of a command line that would use it
    (REPRODUCE, "--object-anchors"), (REPRODUCE, "--style-anchors"), (REPRODUCE, "--prior-anchors"),
    ([*FIGURE, "--geometries", "A"], "--anchors-a"), ([*FIGURE, "--geometries", "B"], "--anchors-b"),
    ([*FIGURE, "--geometries", "A model=posterior-softmax"], "--prior-anchors"),
]


@pytest.mark.parametrize("content", list(EMPTY_ANCHOR_FILES))
@pytest.mark.parametrize("command, option", ANCHOR_OPTIONS, ids=[f"{argv[0]} {option}" for argv, option in ANCHOR_OPTIONS])
def test_an_anchors_file_without_anchors_is_refused_with_its_name(command, option, content, folder, no_model, tmp_path,
                                                                  capsys):
    """Not replaced by the gallery's own names without a word."""
    anchors = tmp_path / "anchors.txt"
    anchors.write_text(EMPTY_ANCHOR_FILES[content])
    places = {"<folder>": str(folder), "<out>": str(tmp_path / "fig.png")}
    line = refusal([*(places.get(word, word) for word in command), option, str(anchors)], capsys)
    assert line.endswith(f"{option} {str(anchors)!r} has no anchors (every line is blank); give one anchor per line"), \
        line


def test_anchors_past_the_cap_are_named_before_a_model_loads(no_model, tmp_path, capsys):
    anchors = tmp_path / "anchors.txt"
    anchors.write_text("".join(f"anchor {number}\n" for number in range(5_003)))
    with pytest.raises(AssertionError, match="the work started"):  # the tripwire: the warning came first
        main(["figure", "--queries", "#0", "--geometries", "A", "--anchors-a", str(anchors), "--out",
              str(tmp_path / "fig.png")])
    assert capsys.readouterr().err == (f"anchordiv figure: warning: --anchors-a {str(anchors)!r} has 5,003 distinct "
                                       "anchors; only the first 5,000 are used (the most a set takes). Split the file "
                                       "or drop anchors\n")
