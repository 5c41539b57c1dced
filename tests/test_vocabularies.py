"""The shipped and computed vocabularies, a person's own list file, and the files' packaging."""
from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path

import pytest

import anchordiv
from anchordiv.vocabularies import MAX_TERM_CHARS, MAX_TERMS, parse_vocabulary, vocabulary_description, vocabulary_kinds
from anchordiv.vocabularies import sources
from anchordiv.vocabularies.catalog import FOLDER, SHIPPED

ROOT = Path(__file__).resolve().parents[1]
EXPECTED_NAMES = ["art-styles", "builtin-world", "builtin-world-names", "builtin-world-styles", "chexpert-14",
                  "coco-80", "colours", "dtd-47", "imagenet-1k", "places365"]


def test_the_library_names_every_vocabulary():
    assert anchordiv.list_vocabularies() == EXPECTED_NAMES
    assert {"list_vocabularies", "load_vocabulary"} <= set(anchordiv.__all__)
    for name in EXPECTED_NAMES:
        terms = anchordiv.load_vocabulary(name)
        assert terms and all(isinstance(term, str) and term == " ".join(term.split()) for term in terms), name
        assert len(set(terms)) == len(terms), name
        assert vocabulary_description(name)


@pytest.mark.parametrize(("name", "count", "first", "last"), [
    ("imagenet-1k", 998, "tench", "toilet paper"),
    ("coco-80", 80, "person", "toothbrush"),
    ("dtd-47", 47, "banded", "zigzagged"),
    ("places365", 365, "airfield", "zen garden"),
    ("chexpert-14", 14, "No Finding", "Support Devices"),
    ("builtin-world-styles", 5, "pencil sketch", "watercolor painting"),
])
def test_each_list_has_its_size_and_order(name, count, first, last):
    terms = anchordiv.load_vocabulary(name)
    assert (len(terms), terms[0], terms[-1]) == (count, first, last)


def test_the_imagenet_file_is_open_clips_list():
    open_clip = pytest.importorskip("open_clip.zero_shot_metadata")
    text = (FOLDER / "imagenet-1k.txt").read_text(encoding="utf-8")
    assert text.splitlines() == list(open_clip.IMAGENET_CLASSNAMES) == sources.imagenet_classnames()
    assert (FOLDER / "imagenet-1k.txt").read_bytes() == sources.term_file_text(sources.imagenet_classnames()).encode()
    # Repeated class names come once, in first-class order.
    assert anchordiv.load_vocabulary("imagenet-1k") == list(dict.fromkeys(open_clip.IMAGENET_CLASSNAMES))


def test_the_coco_file_is_torchvisions_list():
    pytest.importorskip("torchvision")
    assert (FOLDER / "coco-80.txt").read_bytes() == sources.term_file_text(sources.coco_categories()).encode()
    assert anchordiv.load_vocabulary("coco-80")[:3] == ["person", "bicycle", "car"]


def test_the_writer_is_deterministic_and_refuses_a_broken_term(tmp_path):
    sources.write_terms(tmp_path / "a.txt", ["red", "light blue"])
    sources.write_terms(tmp_path / "b.txt", ["red", "light blue"])
    assert (tmp_path / "a.txt").read_bytes() == (tmp_path / "b.txt").read_bytes() == b"red\nlight blue\n"
    for bad in ("two\nlines", " padded", ""):
        with pytest.raises(ValueError, match="one non-empty line"):
            sources.term_file_text([bad])


def test_places365_names_become_phrases():
    assert sources.places365_terms(["airfield\n", "apartment_building/outdoor\n", "\n", "underwater/ocean_deep"]) == [
        "airfield", "apartment building (outdoor)", "underwater (ocean deep)"]
    assert "apartment building (outdoor)" in anchordiv.load_vocabulary("places365")
    assert not [term for term in anchordiv.load_vocabulary("places365") if "_" in term or "/" in term]


def test_every_shipped_file_has_the_sha256_its_sources_file_gives():
    recorded = dict(line.split()[::-1] for line in re.findall(r"^[0-9a-f]{64}  \S+$",
                    (FOLDER / "SOURCES.md").read_text(encoding="utf-8"), flags=re.MULTILINE))
    shipped = {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(FOLDER.glob("*.txt"))}
    assert shipped == recorded
    assert sorted(file for file, _ in SHIPPED.values()) == sorted(shipped)


def test_computed_lists_come_from_the_world_and_the_chexpert_layout():
    from anchordiv.datasets.layouts import CHEXPERT_CONDITIONS
    from anchordiv.datasets.shipped import read_shipped
    from anchordiv.datasets.shipped import VENDORS
    from anchordiv.datasets.styles import RENDITIONS, STYLES
    from anchordiv.explorer.anchors import CHEXPERT_PATHOLOGIES

    assert anchordiv.load_vocabulary("chexpert-14") == list(CHEXPERT_CONDITIONS) == list(CHEXPERT_PATHOLOGIES)
    names = list(read_shipped().index["name"])
    assert anchordiv.load_vocabulary("builtin-world-names") == names
    # the vendors' names describe no look: they are no style term (issue 50)
    assert anchordiv.load_vocabulary("builtin-world-styles") == list(RENDITIONS) == [s for s in STYLES if s not in VENDORS]
    assert anchordiv.load_vocabulary("builtin-world") == names + list(RENDITIONS)
    assert vocabulary_kinds("builtin-world") == ["object"] * len(names) + ["style"] * len(RENDITIONS)
    assert vocabulary_kinds("builtin-world-styles") == ["style"] * len(RENDITIONS) and vocabulary_kinds("coco-80") is None
    assert not list(FOLDER.glob("*world*")) and not list(FOLDER.glob("*chexpert*"))  # computed, never a copy


def test_a_returned_list_is_the_callers_own():
    terms = anchordiv.load_vocabulary("colours")
    terms.append("not a colour")
    assert "not a colour" not in anchordiv.load_vocabulary("colours")


def test_a_persons_file_drops_blanks_and_repeats(tmp_path):
    path = tmp_path / "mine.txt"
    path.write_bytes("\ufeffhusky\n\n  golden   retriever \r\nhusky\n\t\nsnow\n".encode("utf-8"))
    assert anchordiv.load_vocabulary(path) == ["husky", "golden retriever", "snow"]
    assert anchordiv.load_vocabulary(str(path)) == ["husky", "golden retriever", "snow"]


def test_a_persons_file_is_bounded(tmp_path):
    at_limit = tmp_path / "at_limit.txt"
    at_limit.write_text("\n".join([f"term {i}" for i in range(MAX_TERMS)] + ["term 0"] * 10), encoding="utf-8")
    assert len(anchordiv.load_vocabulary(at_limit)) == MAX_TERMS
    too_many = tmp_path / "too_many.txt"
    too_many.write_text("\n".join(f"term {i}" for i in range(MAX_TERMS + 1)), encoding="utf-8")
    with pytest.raises(ValueError, match="more than 5,000 distinct terms"):
        anchordiv.load_vocabulary(too_many)
    long = tmp_path / "long.txt"
    long.write_text("fine\n" + "x" * (MAX_TERM_CHARS + 1) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2 has a term of 201 characters"):
        anchordiv.load_vocabulary(long)
    assert parse_vocabulary("x" * MAX_TERM_CHARS) == ["x" * MAX_TERM_CHARS]


def test_a_bad_name_or_file_is_a_clear_value_error(tmp_path):
    with pytest.raises(ValueError, match="unknown vocabulary 'nope': give one of art-styles"):
        anchordiv.load_vocabulary("nope")
    with pytest.raises(ValueError, match="is not a file"):
        anchordiv.load_vocabulary(tmp_path / "missing.txt")
    with pytest.raises(ValueError, match="is not a file"):
        anchordiv.load_vocabulary(tmp_path)
    latin = tmp_path / "latin.txt"
    latin.write_bytes("café\n".encode("latin-1"))
    with pytest.raises(ValueError, match="is not UTF-8 text"):
        anchordiv.load_vocabulary(latin)


def test_a_wheel_ships_every_vocabulary_file():
    """pyproject lists the package and its data patterns cover each file (tests/test_wheel.py builds one)."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert "anchordiv.vocabularies" in setuptools["packages"]
    patterns = setuptools["package-data"]["anchordiv.vocabularies"]
    files = [path for path in FOLDER.iterdir() if path.is_file() and path.suffix != ".py"]
    assert {"SOURCES.md", "imagenet-1k.txt"} <= {path.name for path in files}
    assert [path.name for path in files if not any(path.match(pattern) for pattern in patterns)] == []
