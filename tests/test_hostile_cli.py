"""Hostile input to the figure and the command line (issue 22): every refusal is one message that
names the limit, the file or the line, and comes before the work; nothing is ignored quietly.

* Figure limits: rows, columns, k, dpi and pixels past :class:`anchordiv.figure.FigureLimits`
  are refused before anything is computed (library) or loaded (``anchordiv figure``), and the
  ``--max-*`` options raise them.
* Text is drawn as written: mathtext, markup, control characters, right-to-left marks and a
  10,000-character text in queries, gallery names, anchors and the gallery's description.
* Labels CSVs are read strictly (each kind of damage named with its file and line), the images a
  CSV misses are named in a warning, and an anchors file without anchors is refused.
* Numeric options (issue 52): every one is bounded where it is declared; a value out of range,
  ``nan``, ``inf``, a word or 5,000 digits is refused naming the option, its bounds and what to pass.
* A folder of unreadable files (issue 52): ``demo`` and ``embed`` refuse a folder with no readable
  image, naming a few of its files and counting the rest; with some readable, ``demo`` names the
  others in a warning and starts the server.
* Messages in the command's words (issue 52): a hub model's broken ``open_clip_config.json`` is named
  as the problem (not its weights), and a bad ``--vocabulary`` names the option and the file.

Runs in-process through ``anchordiv.cli.main`` (and once as a real process) on the small slice of
the built-in world of conftest.py's ``library`` fixture."""
from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from dataclasses import replace

import pytest
from PIL import Image

from anchordiv import figure as fg
from anchordiv.cli import build_parser, main
from anchordiv.cli import demo
from anchordiv.cli.demo import listen_address
from anchordiv.cli.output import name_skipped
from anchordiv.encoders import hub_model_folder
from anchordiv.gallery import folder_gallery
from conftest import APP_SLICE_ARGS as WORLD
from helpers import SVG, needs_builtin, tripwire
from loopback_hub import CONFIG_NAME as HUB_CONFIG, WEIGHTS_NAME as HUB_WEIGHTS, tiny_hub_files
from test_figure import small_result, world  # noqa: F401  (fixtures: the slice with its anchor sets, a small figure)


@pytest.fixture
def no_model(monkeypatch, cache):
    """Loading a model fails the test (every check must come first); a private, writable cache."""
    monkeypatch.setattr("anchordiv.encoders.load_encoder", tripwire())


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
                      "--max-dpi", "5000", "--max-pixels", "4294836225"],
                     r"at 2,000 dpi this figure is 192,600 x \d[\d,]* pixels, and a PNG has at most 65,535 on a side; "
                     r"lower the dpi to 680 or less, or draw it as PDF or SVG$"),
    "a limit of 0": (["--max-rows", "0"], r"--max-rows: '0' is out of range; pass a whole number from 1 to 1000"),
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
                   geometry_for=tripwire(), baseline_for=tripwire(), embed_text=tripwire(), embed_image=tripwire())


def test_compare_refuses_more_geometries_than_its_limit_before_fitting_any():
    with pytest.raises(ValueError, match=re.escape("at most 2 anchor geometries (this one asks for 3")):
        fg.compare(None, None, ["#0"], ["A", "A s=20", "B model=gaussian", "mix p=0.5"], ["a"], ["b"], 1,
                   limits=fg.FigureLimits(geometries=2), geometry_for=tripwire(), baseline_for=tripwire(),
                   embed_text=tripwire(), embed_image=tripwire())


@pytest.mark.parametrize("limit, expected", [
    ({"rows": 0}, "FigureLimits.rows must be an integer >= 1; got 0"),
    ({"pixels": 2.5}, "FigureLimits.pixels must be an integer >= 1; got 2.5"),
])
def test_a_limit_must_be_a_whole_number(limit, expected):
    with pytest.raises(ValueError, match=re.escape(expected)):
        fg.FigureLimits(**limit)


@needs_builtin
@pytest.mark.parametrize("dpi, limits, expected", [
    (601, fg.DEFAULT_LIMITS, "a PNG figure is drawn at most at 600 dpi (this one asks for 601 dpi); lower the dpi"),
    (300, fg.FigureLimits(pixels=1_000_000), "pixels, more than the limit of 1,000,000; lower the dpi to "),
    (0, fg.DEFAULT_LIMITS, "dpi must be an integer >= 1; got 0"),
])
def test_a_png_past_its_limits_is_refused_before_drawing(small_result, dpi, limits, expected, monkeypatch):
    with monkeypatch.context() as patched:
        patched.setattr("matplotlib.figure.Figure", tripwire())
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
    argv = {"embed": ["embed", str(folder), "--encoder", "builtin"], "reproduce": ["reproduce", "--folder", str(folder),
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
    assert main(["embed", str(folder), "--encoder", "builtin", "--device", "cpu", "--labels", str(labels), *stored]) == 0
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


# -- numeric options (issue 52): every one bounded where it is declared ----------------------------
def numeric_options() -> list[tuple[str, argparse.Action]]:
    """``(command, action)`` for every option of every command whose value is converted by a type."""
    commands = next(action.choices for action in build_parser()._actions if isinstance(action.choices, dict))
    return [(name, action) for name, parser in commands.items() for action in parser._actions
            if action.type is not None and action.type is not listen_address]


NUMERIC = numeric_options()
OPTION_IDS = [f"{command} {action.option_strings[-1]}" for command, action in NUMERIC]
HOSTILE_NUMBERS = {"negative": "-1", "huge": "1e400", "5,000 digits": "9" * 5000, "nan": "nan", "inf": "inf",
                   "-inf": "-inf", "text": "ten", "empty": "", "hex": "0x10", "with a comma": "1,000"}


def test_every_numeric_option_is_bounded_by_the_shared_types():
    """No ``type=int`` or ``type=float`` left: each type is :func:`integer` or :func:`number`."""
    assert len(NUMERIC) > 40
    for command, action in NUMERIC:
        assert action.type.__qualname__ in ("integer.<locals>.parse", "number.<locals>.parse"), (command, action)


@pytest.mark.parametrize("value", list(HOSTILE_NUMBERS.values()), ids=list(HOSTILE_NUMBERS))
@pytest.mark.parametrize("command, action", NUMERIC, ids=OPTION_IDS)
def test_a_hostile_number_is_refused_naming_the_option_and_its_bounds(command, action, value, no_model, capsys):
    line = refusal([command, f"{action.option_strings[-1]}={value}"], capsys)  # "=": argparse takes -inf for an option
    assert re.fullmatch(rf"anchordiv {command}: argument {'/'.join(action.option_strings)}: '.*' is (out of range|"
                        r"not a (finite |whole )?number); pass a (whole )?number (from|above) -?[\d.e+-]+ (to|and at "
                        rf"most) [\d.e+-]+ \(see `anchordiv {command} --help`\)", line), line
    assert len(line) < 300


@pytest.mark.parametrize("command, action", NUMERIC, ids=OPTION_IDS)
def test_each_bound_is_taken_and_one_step_past_it_refused(command, action):
    wanted = _wanted(action)
    low, high = map(float, re.search(r"(?:from|above) (\S+) (?:to|and at most) (\S+)$", wanted).groups())
    whole = wanted.startswith("a whole number")
    step = 1 if whole else 1e-6 * max(1.0, high)
    for value in (high, low + step):
        assert action.type(str(int(value)) if whole else repr(value)) == value
    for value in (high + step, low - step):
        with pytest.raises(argparse.ArgumentTypeError, match="is out of range; pass"):
            action.type(str(int(value)) if whole else repr(value))


def _wanted(action: argparse.Action) -> str:
    """What the option's refusal asks for, e.g. "a whole number from 1 to 65535"."""
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        action.type("nan")
    return str(refused.value).split("; pass ")[1]


@pytest.mark.parametrize("value, what", [
    ("65536", "out of range"), ("70000", "out of range"), ("0", "out of range"), ("-8501", "out of range"),
    ("99999999999999999999999", "out of range"), ("8501.5", "not a whole number"), ("nan", "not a finite number"),
    ("port", "not a number"),
])
def test_a_port_outside_1_to_65535_is_refused_before_the_server_starts(value, what, no_model, monkeypatch, capsys):
    monkeypatch.setattr(demo, "serve", tripwire())
    assert refusal(["demo", "--port", value], capsys) == (
        f"anchordiv demo: argument --port: {value!r} is {what}; pass a whole number from 1 to 65535 "
        "(see `anchordiv demo --help`)")


def test_whole_numbers_are_taken_as_written_in_any_plain_form(monkeypatch):
    started = []
    monkeypatch.setattr(demo, "serve", lambda argv: started.append(argv) or 0)
    for written in ("8600", " 8600 ", "8_600", "8.6e3", "8600.0"):
        assert main(["demo", "--port", written]) == 0
    assert all("--server.port=8600" in argv for argv in started) and len(started) == 5


def test_a_port_out_of_range_is_one_line_from_a_real_process(tmp_path):
    result = subprocess.run([sys.executable, "-m", "anchordiv", "demo", "--port", "70000"], capture_output=True,
                            text=True, timeout=60, env={**os.environ, "ANCHORDIV_CACHE": str(tmp_path / "cache")})
    assert (result.returncode, result.stdout) == (2, "") and result.stderr == (
        "anchordiv demo: argument --port: '70000' is out of range; pass a whole number from 1 to 65535 "
        "(see `anchordiv demo --help`)\n"), result


@pytest.mark.parametrize("extra, expected", [
    (["--strip", "<strip>", "--p", *(["0.5"] * 26)],
     "--p has 26 values, and a strip has at most 25 rows; give 25 or fewer"),
    (["--gif", "<gif>", "--p", "0.5"], "--p sets the rows of the strip; add --strip FILE.png, or drop --p"),
])
def test_the_strips_p_values_are_checked_before_a_model_loads(extra, expected, no_model, tmp_path, capsys):
    places = {"<strip>": str(tmp_path / "strip.png"), "<gif>": str(tmp_path / "sweep.gif")}
    line = refusal(["sweep", "--query", "#0", *(places.get(word, word) for word in extra)], capsys)
    assert line == f"anchordiv sweep: {expected}"


# -- a folder of unreadable files (issue 52) --------------------------------------------------------
def unreadable(folder, count: int) -> list[str]:
    """``count`` files under ``folder`` that are not images a gallery takes, sorted as the embedding
    lists them: text named .png, random bytes named .jpg, an empty file and a cut-off PNG, in turn."""
    png = io.BytesIO()
    Image.new("RGB", (32, 32), "green").save(png, format="PNG")
    kinds = [("png", b"not an image"), ("jpg", os.urandom(200)), ("gif", b""), ("png", png.getvalue()[:60])]
    folder.mkdir(parents=True, exist_ok=True)
    names = [f"bad{number:02d}.{kinds[number % 4][0]}" for number in range(count)]
    for number, name in enumerate(names):
        (folder / name).write_bytes(kinds[number % 4][1])
    return sorted(names)


@needs_builtin
@pytest.mark.parametrize("count", [1, 3, 12])
def test_demo_refuses_a_folder_with_no_readable_image_before_the_server_starts(count, cache, tmp_path, monkeypatch,
                                                                              capsys):
    monkeypatch.setattr(demo, "serve", tripwire())
    names = unreadable(tmp_path / "junk", count)
    line = refusal(["demo", "--folder", str(tmp_path / "junk"), "--device", "cpu", "-q"], capsys)
    folder = str(tmp_path / "junk")
    assert line.startswith(f"anchordiv demo: --folder {folder!r} has no readable image: {count} "
                           f"file{'s' * (count != 1)} skipped ("), line
    assert all(repr(name) in line for name in names[:3]) and not any(repr(name) in line for name in names[3:])
    assert (f"; and {count - 3} more)" in line) == (count > 3)
    assert line.endswith("); put PNG, JPEG, WebP, GIF or BMP images in it (subfolders are labels), or give another "
                         "folder")


@needs_builtin
def test_embed_refuses_such_a_folder_too_and_writes_no_npz(cache, tmp_path, capsys):
    unreadable(tmp_path / "junk", 5)
    out = tmp_path / "out.npz"
    line = refusal(["embed", str(tmp_path / "junk"), "--encoder", "builtin", "--device", "cpu", "--out", str(out), "-q"],
                   capsys)
    assert f"image folder {str(tmp_path / 'junk')!r} has no readable image: 5 files skipped (" in line
    assert "; and 2 more)" in line and not out.exists()


@needs_builtin
def test_demo_refuses_an_empty_folder(cache, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(demo, "serve", tripwire())
    (tmp_path / "empty").mkdir()
    assert refusal(["demo", "--folder", str(tmp_path / "empty"), "--device", "cpu", "-q"], capsys) == (
        f"anchordiv demo: --folder {str(tmp_path / 'empty')!r} holds no files; put PNG, JPEG, WebP, GIF or BMP "
        "images in it (subfolders are labels), or give another folder")


@needs_builtin
def test_demo_names_the_unreadable_files_of_a_folder_and_goes_on(cache, tmp_path, monkeypatch, capsys):
    started = []
    monkeypatch.setattr(demo, "serve", lambda argv: started.append(argv) or 0)
    folder = tmp_path / "mixed"
    names = unreadable(folder / "cat", 6)
    for number, colour in enumerate(("red", "green", "blue")):  # the fewest the explorer shows anything with
        Image.new("RGB", (16, 16), colour).save(folder / "cat" / f"good{number}.png")
    assert main(["demo", "--folder", str(folder), "--device", "cpu"]) == 0 and len(started) == 1
    captured = capsys.readouterr()
    assert "embedded 3 images: 0 reused from the cache, 3 newly encoded; 6 files skipped" in captured.out
    assert "encoded 3 of 9 files now (0 reused from an earlier run, 6 skipped: not readable images)" in captured.err
    assert "of 9 images" not in captured.err + captured.out
    [warning] = [line for line in captured.err.splitlines() if "warning" in line]
    assert warning.startswith(f"anchordiv demo: warning: --folder {str(folder)!r}: 6 files left out of the explorer (")
    assert all(repr(f"cat/{name}") in warning for name in names[:3]) and "; and 3 more)" in warning
    assert warning.endswith("); fix or remove them to include them, or go on: the explorer opens on the other images")


def test_skipped_files_are_named_a_few_with_each_reason_once_then_counted():
    skipped = [("a.png", "damaged"), ("b.png", "not an image"), ("c.png", "not an image"), ("d.png", "damaged")]
    assert name_skipped(skipped) == "'a.png': damaged; 'b.png', 'c.png': not an image; and 1 more"
    assert name_skipped(skipped[:1]) == "'a.png': damaged"
    assert name_skipped([(f"{n}.png", "bad") for n in range(10_000)]).endswith("; and 9,997 more")


# -- messages in the command's words (issue 52) -----------------------------------------------------
HUB_REPO = "anchordiv-test/tiny-config"
SUGGEST_WITH_HUB_MODEL = ["suggest", "a dog", "--encoder", f"open_clip:hf-hub:{HUB_REPO}", "--vocabulary", "colours",
                          "--device", "cpu"]


def _set(section: str, **fields):
    """A change to a config: ``fields`` set in ``section`` (a path of keys, e.g. "model_cfg.vision_cfg")."""
    def change(config: dict) -> None:
        target = config
        for key in section.split("."):
            target = target[key]
        target.update(fields)
    return change


UNBUILDABLE_CONFIGS = {  # what is wrong -> how the tiny model's config is changed
    "no embed_dim": lambda config: config["model_cfg"].pop("embed_dim"),
    "layers as text": _set("model_cfg.vision_cfg", layers="two"),
    "an unknown field": _set("model_cfg", bogus=1),
    "a negative size": _set("model_cfg.text_cfg", context_length=-5),
    "an embed_dim as text": _set("model_cfg", embed_dim="32"),
    "an unknown interpolation": _set("preprocess_cfg", interpolation="nope"),
    "a mean as text": _set("preprocess_cfg", mean="grey"),
}
MALFORMED_CONFIGS = {  # the file's text -> what the refusal says about it
    "not JSON": ("{not json", "is not a readable JSON file (JSONDecodeError)"),
    "a list": ("[]", "has no 'model_cfg' object, so it is not an open_clip model config"),
    "model_cfg a number": ('{"model_cfg": 3}', "has no 'model_cfg' object, so it is not an open_clip model config"),
    "text_cfg a list": ('{"model_cfg": {"embed_dim": 32, "text_cfg": [1, 2]}}',
                        "has model_cfg.text_cfg = [1, 2], not an object"),
    "preprocess_cfg text": ('{"model_cfg": {}, "preprocess_cfg": "fast"}',
                            'has preprocess_cfg = "fast", not an object'),
    "tokenizer_kwargs a number": ('{"model_cfg": {"text_cfg": {"tokenizer_kwargs": 7}}}',
                                  "has model_cfg.text_cfg.tokenizer_kwargs = 7, not an object"),
}


@pytest.fixture(scope="module")
def tiny_hub(tmp_path_factory) -> dict[str, bytes]:
    """The tiny hub model's ``open_clip_config.json`` and weights."""
    return tiny_hub_files(tmp_path_factory.mktemp("tiny-hub"))


def install_hub_model(files: dict[str, bytes], config: str):
    """The tiny model's weights and ``config`` in anchordiv's folder for :data:`HUB_REPO`; the config's path."""
    folder = hub_model_folder(HUB_REPO)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / HUB_WEIGHTS).write_bytes(files[HUB_WEIGHTS])
    (folder / HUB_CONFIG).write_text(config)
    return folder / HUB_CONFIG


@pytest.mark.parametrize("case", list(UNBUILDABLE_CONFIGS))
def test_a_hub_config_open_clip_cannot_build_is_named_not_the_weights(case, tiny_hub, cache, capsys):
    config = json.loads(tiny_hub[HUB_CONFIG])
    UNBUILDABLE_CONFIGS[case](config)
    path = install_hub_model(tiny_hub, json.dumps(config))
    line = refusal(SUGGEST_WITH_HUB_MODEL, capsys)
    assert line.startswith(f"anchordiv suggest: open_clip cannot build open_clip:hf-hub:{HUB_REPO} from its model "
                           f"config {path} ("), line
    assert line.endswith("); the config is damaged or from another model: delete that open_clip_config.json and fetch "
                         f"it again (python -m anchordiv fetch-model open_clip:hf-hub:{HUB_REPO}), or pick another "
                         "model if the repository publishes it so"), line
    assert HUB_WEIGHTS not in line


@pytest.mark.parametrize("case", list(MALFORMED_CONFIGS))
def test_a_malformed_hub_config_is_named_with_what_is_wrong(case, tiny_hub, cache, capsys):
    text, expected = MALFORMED_CONFIGS[case]
    path = install_hub_model(tiny_hub, text)
    assert refusal(SUGGEST_WITH_HUB_MODEL, capsys) == (
        f"anchordiv suggest: the model config {path} {expected}; delete it and fetch it again")


def test_weights_that_do_not_fit_the_config_name_both_files(tiny_hub, cache, capsys):
    config = json.loads(tiny_hub[HUB_CONFIG])
    config["model_cfg"]["vision_cfg"]["width"] *= 2  # a model the config builds, of another size than the weights
    path = install_hub_model(tiny_hub, json.dumps(config))
    line = refusal(SUGGEST_WITH_HUB_MODEL, capsys)
    assert line.startswith(f"anchordiv suggest: the weights {path.with_name(HUB_WEIGHTS)} do not fit the model that "
                           f"the config {path} describes (RuntimeError: "), line
    assert line.endswith("; the two files come from different models: delete both and fetch them again (python -m "
                         f"anchordiv fetch-model open_clip:hf-hub:{HUB_REPO})"), line


EMPTY_VOCABULARIES = {"empty": b"", "blank lines": b"\n\n\n", "spaces and tabs": b"  \t\n \n",
                      "a BOM alone": b"\xef\xbb\xbf"}


@pytest.mark.parametrize("content", list(EMPTY_VOCABULARIES.values()), ids=list(EMPTY_VOCABULARIES))
def test_an_empty_vocabulary_file_is_refused_naming_the_option_and_the_file(content, no_model, tmp_path, capsys):
    vocabulary = tmp_path / "terms.txt"
    vocabulary.write_bytes(content)
    line = refusal(["suggest", "a dog", "--vocabulary", str(vocabulary)], capsys)
    assert line.startswith(f"anchordiv suggest: --vocabulary {str(vocabulary)!r} has no terms (the file is empty or "
                           "every line is blank); give a text file with one term per line, or one of art-styles, ")
    assert "terms is empty" not in line and "load_vocabulary" not in line


@pytest.mark.parametrize("given, expected", [
    ("<missing>", r"--vocabulary: vocabulary file '.*absent\.txt' does not exist or is not a file; give the path of a "
                  r"text file with one term per line$"),
    ("<folder>", r"--vocabulary: vocabulary file '.*' does not exist or is not a file"),
    ("<latin-1>", r"--vocabulary: vocabulary file '.*latin\.txt' is not UTF-8 text \(invalid continuation byte at byte "
                  r"3\); save it as UTF-8, one term per line$"),
    ("<binary>", r"--vocabulary: .*binary\.txt: line 1 holds the control character U\+0000"),
    ("", r"--vocabulary: unknown vocabulary '': give one of art-styles, .* or a path to a text file"),
    ("imagenet", r"--vocabulary: unknown vocabulary 'imagenet': give one of"),
])
def test_a_bad_vocabulary_is_refused_naming_the_option(given, expected, no_model, tmp_path, capsys):
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9 au lait\n")
    (tmp_path / "binary.txt").write_bytes(b"a\x00b\n")
    places = {"<missing>": tmp_path / "absent.txt", "<folder>": tmp_path, "<latin-1>": tmp_path / "latin.txt",
              "<binary>": tmp_path / "binary.txt"}
    line = refusal(["suggest", "a dog", "--vocabulary", str(places.get(given, given))], capsys)
    assert re.search(expected, line), line


# -- issue 52, second hostile report ------------------------------------------------------------------
# F2: a folder of fewer readable images than the explorer needs is refused before the server starts.
@needs_builtin
@pytest.mark.parametrize("good", [1, 2])
def test_demo_refuses_a_folder_with_fewer_images_than_the_explorer_needs(good, cache, tmp_path, monkeypatch, capsys):
    """1 or 2 readable images beside 9 unreadable files: the explorer needs 3 (a query, a neighbour and
    one more, to calibrate p between A and B on the gallery); the count, the files left out and what to
    do are named, and the server never starts."""
    monkeypatch.setattr(demo, "serve", tripwire())
    folder = tmp_path / "few"
    names = unreadable(folder, 9)
    for number in range(good):
        Image.new("RGB", (16, 16), ("red", "blue")[number]).save(folder / f"good{number}.png")
    line = refusal(["demo", "--folder", str(folder), "--device", "cpu", "-q"], capsys)
    assert line.startswith(f"anchordiv demo: --folder {str(folder)!r} has {good} readable image{'s' * (good > 1)}; "
                           f"9 files could not be read ({repr(names[0])}"), line
    assert "; and 6 more); this needs at least 3 (the explorer shows a query's neighbours, and calibrates p " in line
    assert line.endswith("3 in all). Add PNG, JPEG, WebP, GIF or BMP images to it (subfolders are labels), or give "
                         "another folder"), line


# F5: a scale too small to rank by is refused by its bounds (test_bad_inputs_cli.py); a calibration
# with nothing to measure names the options that chose the anchor sets, and the weighting that needs
# none, which then draws.
@needs_builtin
@pytest.mark.parametrize("command", ["sweep", "figure"])
def test_anchor_sets_that_rank_alike_are_named_by_their_options(command, world, tmp_path, capsys):
    same = tmp_path / "same.txt"
    same.write_text("a dog\na cat\n")
    out = ["--strip", str(tmp_path / "s.png"), "--query", "#1"] if command == "sweep" else \
        ["--out", str(tmp_path / "f.png"), "--queries", "#1", "--geometries", "mix p=0.5"]
    argv = [command, *out, "--anchors-a", str(same), "--anchors-b", str(same), *WORLD, "--device", "cpu", "-q"]
    line = refusal([*argv, "--weighting", "calibrated"], capsys)
    assert line == (f"anchordiv {command}: anchor sets A and B (--anchors-a or --preset-a, and --anchors-b or "
                    "--preset-b) give every sampled gallery image the same top-10 neighbours, so p cannot be "
                    "calibrated; give anchor sets that rank the images differently or --weighting balanced (or "
                    "literal)")
    assert main([*argv, "--weighting", "balanced"]) == 0
    assert os.path.isfile(out[1])


def test_the_calibration_refusal_keeps_its_library_words_where_no_command_names_the_sets():
    from anchordiv.cli.words import in_command_words
    from anchordiv.models.calibration import NothingToCalibrate

    refused = NothingToCalibrate(3)
    assert "--object-anchors and --style-anchors" in in_command_words(refused, "reproduce")
    assert in_command_words(refused, "bench") == str(refused) == (
        "A and B give every sampled query the same top-3 neighbours, so there is nothing to calibrate; use anchor "
        "sets that differ, or the balanced weights.")


# F6: a geometry column's numbers are bounded as the options are, and quoted as typed.
@pytest.mark.parametrize("column, expected", [
    ("mix p=0.5 s=1e6", "s=1e6 is outside [0.1, 1000]; s is the logit scale, e.g. s=10"),
    ("A s=1e300", "s=1e300 is outside [0.1, 1000]"), ("A s=1e-300", "s=1e-300 is outside [0.1, 1000]"),
    ("B s=0.05", "s=0.05 is outside [0.1, 1000]"), ("mix p=1e400", "p=1e400 is outside [0, 1]"),
    ("mix p=-1e-400", "p=-1e-400 is outside [0, 1]"),
])
def test_a_geometry_columns_numbers_are_bounded_before_a_model_loads(column, expected, no_model, tmp_path, capsys):
    line = refusal(["figure", "--queries", "#1", "--geometries", "cosine", column, "--out", str(tmp_path / "f.png")],
                   capsys)
    assert line.startswith(f"anchordiv figure: --geometries: {expected}"), line
    assert "=inf" not in line and "=-inf" not in line, line


# F7: the command line's words for the loader's arguments (--pretrained, --allow-download), never the
# library's (pretrained=..., allow_download=True).
def _command_words_only(line: str) -> None:
    assert "allow_download" not in line and "pretrained=" not in line and "CLI:" not in line, line


@pytest.mark.parametrize("argv, expected", [
    (["suggest", "a dog", "--encoder", "open_clip:ViT-B-32"],
     "open_clip:ViT-B-32 needs --pretrained PATH_OR_TAG: a checkpoint file or one of its open_clip tags (openai, "),
    (["suggest", "a dog", "--encoder", "open_clip:"],
     "unknown encoder spec 'open_clip:'; use 'builtin', 'open_clip:<arch>' (e.g. 'open_clip:ViT-B-32' with "
     "--pretrained laion2b_s34b_b79k or --pretrained /path/to/checkpoint) or 'open_clip:hf-hub:ORG/REPO'"),
    (["demo", "--encoder", "open_clip:"], "unknown encoder spec 'open_clip:'; use 'builtin', 'open_clip:<arch>' (e.g. "
                                        "'open_clip:ViT-B-32' with --pretrained laion2b_s34b_b79k or --pretrained "),
    (["embed", ".", "--encoder", "builtin", "--pretrained", "my weights.pt"],
     "the builtin encoder has its own weights; drop --pretrained 'my weights.pt'"),
    (["fetch-model", "open_clip:hf-hub:timm/ViT-B-16-SigLIP", "--pretrained", "webli"],
     "open_clip:hf-hub:timm/ViT-B-16-SigLIP carries its own weights (the repository's open_clip_config.json and "
     "weights file); drop --pretrained webli"),
    (["suggest", "a dog", "--encoder", "open_clip:ViT-B-32", "--pretrained", "no-such-tag"],
     "open_clip:ViT-B-32 --pretrained no-such-tag is neither an existing checkpoint file nor an open_clip tag"),
    (["suggest", "a dog", "--encoder", "open_clip:hf-hub:anchordiv-test/absent", "--vocabulary", "colours"],
     "open_clip:hf-hub:anchordiv-test/absent is not on this machine, and anchordiv downloads nothing unless asked: "
     "allow it with --allow-download, or copy open_clip_config.json from "),
])
def test_encoder_advice_is_in_the_command_line_s_words(argv, expected, cache, monkeypatch, capsys):
    monkeypatch.setattr(demo, "serve", tripwire())
    line = refusal([*argv, "--device", "cpu"] if argv[0] not in ("fetch-model",) else argv, capsys)
    assert line.startswith(f"anchordiv {argv[0]}: {expected}"), line
    _command_words_only(line)


def test_a_tag_whose_weights_are_absent_says_the_options_to_use(cache, capsys):
    line = refusal(["suggest", "a dog", "--encoder", "open_clip:ViT-B-32", "--pretrained", "laion2b_s34b_b79k",
                    "--device", "cpu"], capsys)
    assert line.startswith("anchordiv suggest: open_clip:ViT-B-32 --pretrained laion2b_s34b_b79k: the weights are not "
                           "on this machine, and anchordiv downloads nothing unless asked."), line
    assert ", or pass --pretrained /path/to/open_clip_pytorch_model.bin (then the tag's preprocessing" in line
    assert ", or allow the download with --allow-download, or run `python -m anchordiv fetch-model " in line
    _command_words_only(line)


def test_a_figure_column_s_encoder_is_advised_in_the_column_s_words(no_model, tmp_path, capsys):
    line = refusal(["figure", "--queries", "#1", "--geometries", "cosine encoder=builtin pretrained=mine.pt",
                    "--out", str(tmp_path / "f.png")], capsys)
    assert line == ("anchordiv figure: --geometries: the builtin encoder has its own weights; drop pretrained=mine.pt")


# F8: a damaged checkpoint is named as not readable, never with torch's advice to load it unsafely.
@pytest.fixture
def tiny_checkpoint(tmp_path):
    from tiny_open_clip import make_tiny_checkpoint

    (tmp_path / "tiny").mkdir()
    return make_tiny_checkpoint(tmp_path / "tiny")[0]


DAMAGED_CHECKPOINTS = {  # name -> the file's bytes from a good checkpoint's
    "random.pt": lambda good: os.urandom(2048), "random.bin": lambda good: os.urandom(2048),
    "empty.pt": lambda good: b"", "text.pth": lambda good: b"not a checkpoint\n" * 20,
    "cut short.pt": lambda good: good[:len(good) // 2], "random.safetensors": lambda good: os.urandom(2048),
}


@pytest.mark.parametrize("name", list(DAMAGED_CHECKPOINTS))
def test_a_damaged_checkpoint_is_named_as_unreadable_without_torch_s_advice(name, tiny_checkpoint, cache, tmp_path,
                                                                          capsys):
    from tiny_open_clip import TINY_ARCH

    damaged = tmp_path / name
    damaged.write_bytes(DAMAGED_CHECKPOINTS[name](tiny_checkpoint.read_bytes()))
    line = refusal(["suggest", "a dog", "--encoder", f"open_clip:{TINY_ARCH}", "--pretrained", str(damaged),
                    "--vocabulary", "colours", "--device", "cpu"], capsys)
    assert line.startswith(f"anchordiv suggest: {damaged} is not a readable checkpoint: it is damaged (e.g. cut short "
                           "by a copy or download) or not a checkpoint at all ("), line
    assert line.endswith(f"); use a sound copy of it, or another file: a checkpoint saved for open_clip {TINY_ARCH!r} "
                         "(a state dict as .pt, .pth, .bin or .safetensors)"), line
    for unsafe in ("weights_only", "Re-running", "arbitrary code", "different models"):
        assert unsafe not in line, line
    _command_words_only(line)


def test_a_checkpoint_of_another_model_is_named_as_not_fitting(cache, tmp_path, capsys):
    import torch

    from tiny_open_clip import TINY_ARCH, register_tiny_arch

    register_tiny_arch(tmp_path)
    other = tmp_path / "other.pt"
    torch.save({"not_a_clip_weight": torch.zeros(3)}, other)
    line = refusal(["suggest", "a dog", "--encoder", f"open_clip:{TINY_ARCH}", "--pretrained", str(other),
                    "--vocabulary", "colours", "--device", "cpu"], capsys)
    assert line.startswith(f"anchordiv suggest: could not load {other} as open_clip {TINY_ARCH!r} weights "
                           "(RuntimeError: Error(s) in loading state_dict"), line
    assert line.endswith("; the file is a checkpoint of another architecture or model: use a checkpoint saved for "
                         f"open_clip {TINY_ARCH!r} (a state dict as .pt, .pth, .bin or .safetensors)"), line


@pytest.mark.parametrize("weights", [b"", b"\x00" * 64], ids=["empty", "zeros"])
def test_a_damaged_hub_weights_file_is_named_alone(weights, tiny_hub, cache, capsys):
    path = install_hub_model({**tiny_hub, HUB_WEIGHTS: weights + os.urandom(2048)}, tiny_hub[HUB_CONFIG].decode())
    line = refusal(SUGGEST_WITH_HUB_MODEL, capsys)
    assert line.startswith(f"anchordiv suggest: the weights {path.with_name(HUB_WEIGHTS)} of open_clip:hf-hub:"
                           f"{HUB_REPO} are not a readable checkpoint: the file is damaged (e.g. cut short by a copy "
                           "or download) or not a checkpoint at all ("), line
    assert line.endswith(f"); delete it and fetch it again (python -m anchordiv fetch-model open_clip:hf-hub:"
                         f"{HUB_REPO})"), line
    assert "different models" not in line and "weights_only" not in line and HUB_CONFIG not in line, line


@needs_builtin
def test_a_figure_column_s_encoder_that_cannot_load_is_named_in_the_column_s_words(world, tmp_path, capsys):
    line = refusal(["figure", "--queries", "#1", "--geometries", "cosine", "cosine encoder=open_clip:ViT-B-32",
                    "--out", str(tmp_path / "f.png"), *WORLD, "--device", "cpu", "-q"], capsys)
    assert line.startswith("anchordiv figure: --geometries column with encoder=open_clip:ViT-B-32: open_clip:ViT-B-32 "
                           "needs pretrained=PATH_OR_TAG: a checkpoint file or one of its open_clip tags ("), line
    line = refusal(["figure", "--queries", "#1", "--geometries", "cosine encoder=open_clip:ViT-B-32 pretrained=openai",
                    "--out", str(tmp_path / "f.png"), *WORLD, "--device", "cpu", "-q"], capsys)
    assert ("the weights are not on this machine" in line and "or pass pretrained=/path/to/" in line
            and "allow the download with --allow-download," in line and "allow_download" not in line), line


@needs_builtin
def test_a_posterior_kind_names_the_option_that_gives_its_prior(world, tmp_path, capsys):
    """figure names --prior-anchors; sweep, which has no prior option, does not offer the posterior kinds."""
    line = refusal(["figure", "--out", str(tmp_path / "f.png"), "--queries", "#1", "--geometries", "mix p=0.5",
                    "--kind", "posterior-softmax", *WORLD, "--device", "cpu", "-q"], capsys)
    assert line == ("anchordiv figure: --kind: the posterior softmax model needs a prior anchor set; give it with "
                    "--prior-anchors FILE (one anchor per line)"), line
    assert main(["sweep", "--strip", str(tmp_path / "s.png"), "--query", "#1", "--kind", "posterior-softmax"]) == 2
    assert "invalid choice: 'posterior-softmax'" in capsys.readouterr().err
