"""The comparison figure (anchordiv.figure) and its command (`anchordiv figure`): the text specs
round-trip and refuse bad input with a message; every cell's neighbours are the explorer's own
(search_one on ExplorerGeometry.index_at or baseline_index) for the same settings; the PNG, PDF and
SVG hold the grid; the command writes them and turns bad input into one line and exit status 2.

Runs on a small slice of the built-in world (the `library` fixture of conftest.py)."""
from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest
import torch
from PIL import Image

from anchordiv import explorer as ex
from anchordiv import figure as fg
from anchordiv.cli import main
from anchordiv.text_cache import encode_texts_cached
from conftest import APP_SLICE_ARGS as WORLD
from helpers import SVG, needs_builtin, tripwire
from rankings import assert_same_ranking



# -- specs as text ----------------------------------------------------------------------------------
@pytest.mark.parametrize("text, canonical", [
    ("cosine", "cosine"), ("ITI", "iti"), ("a", "A"), ("B", "B"), ("mix p=0.3", "mix p=0.3"),
    ("  Mix   p=0.5  model=gaussian  s=20 weighting=literal ", "mix p=0.5 model=gaussian s=20 weighting=literal"),
    ("A model=gmm s=7.25", "A model=gmm s=7.25"), ("mix p=1", "mix p=1"), ("mix p=0.123456789", "mix p=0.123456789"),
    ("B s=1e-1", "B s=0.1"), ("A s=1e3", "A s=1000"),
])
def test_a_geometry_column_parses_and_formats_both_ways(text, canonical):
    column = fg.parse_geometry_column(text)
    assert str(column) == canonical
    assert fg.parse_geometry_column(str(column)) == column


def test_a_column_label_names_what_differs_from_the_defaults():
    assert fg.parse_geometry_column("A").label == "A only"
    assert fg.parse_geometry_column("iti").label == "ITI"
    assert fg.parse_geometry_column("mix p=0.3 model=gaussian s=20 weighting=literal").label == \
        "mix p = 0.3\nGaussian · s = 20 · literal"


@pytest.mark.parametrize("text, message", [
    ("", "empty geometry column"), ("foo", "unknown geometry 'foo'"), ("mix", "needs the weight of A"),
    ("mix p=1.5", "p=1.5 is outside [0, 1]"), ("mix p=-0.1", "outside [0, 1]"), ("mix p=half", "p=half in 'mix p=half' is not a number"),
    ("A model=nope", "unknown anchor model 'nope'; use one of softmax"), ("A s=0", "s=0 is outside [0.1, 1000]"),
    ("B s=-2", "s=-2 is outside [0.1, 1000]"), ("A s=inf", "s=inf is outside [0.1, 1000]"),
    # Bounded as --scale is, and quoted as typed (issue 52, F6): 1e400 is not shown as inf.
    ("mix p=1e400", "p=1e400 is outside [0, 1]"), ("mix p=nan", "p=nan in 'mix p=nan' is not a number"),
    ("mix p=0.5 s=1e6", "s=1e6 is outside [0.1, 1000]; s is the logit scale"), ("A s=1e300", "s=1e300 is outside"),
    ("A s=1e-300", "s=1e-300 is outside [0.1, 1000]"), ("B s=0.0999", "s=0.0999 is outside"),
    ("cosine s=10", "s= does not apply to cosine columns"),
    ("A p=0.5", "p= does not apply to A columns"), ("A weighting=literal", "weighting= does not apply"),
    ("mix p=0.5 weighting=odd", "unknown weighting 'odd'"), ("mix p=0.5 p=0.2", "p= is given twice"),
    ("mix p = 0.5", "'p' in 'mix p = 0.5' is not an option"), ("mix q=0.5", "unknown option q="),
])
def test_a_bad_geometry_column_is_refused_with_the_fix(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        fg.parse_geometry_column(text)


@pytest.mark.parametrize("text, row, canonical", [
    ("#12", fg.QueryRow("id", 12), "#12"), ("cat", fg.QueryRow("name", "cat"), "name:cat"),
    ("name:  kissing   face ", fg.QueryRow("name", "kissing face"), "name:kissing face"),
    ("flag: Japan", fg.QueryRow("name", "flag: Japan"), "name:flag: Japan"),
    ("text:a dog in watercolor", fg.QueryRow("text", "a dog in watercolor"), "text:a dog in watercolor"),
    ("Random", fg.QueryRow("random"), "random"), ("random:7", fg.QueryRow("random", 7), "random:7"),
    ("image:/tmp/my  dog.png ", fg.QueryRow("image", " /tmp/my  dog.png"), "image:/tmp/my  dog.png"),
    ("  two   words ", fg.QueryRow("name", "two words"), "name:two words"),
    ("upload:dog.png", fg.QueryRow("upload", "dog.png"), "upload:dog.png"),
])
def test_a_query_row_parses_and_formats_both_ways(text, row, canonical):
    assert fg.parse_query_row(text) == row
    assert str(row) == canonical
    assert fg.parse_query_row(str(row)) == row


@pytest.mark.parametrize("text, message", [
    ("", "empty query"), ("   ", "empty query"), ("#", "after '#' comes a gallery id"), ("#1a", "after '#'"),
    ("#-3", "after '#'"), ("random:x", "after 'random:' comes a seed"), ("text:", "an empty text query"),
    ("image:  ", "an empty image query"),
])
def test_a_bad_query_row_is_refused_with_the_fix(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        fg.parse_query_row(text)


# -- the neighbours ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def world(library, preset_texts):
    """The slice, its default anchor sets (object names, styles) and their embeddings."""
    anchors = [encode_texts_cached(library["encoder"], texts) for texts in preset_texts]
    return {**library, "texts": preset_texts, "anchors": anchors}


def explorer_geometry(world, spec: ex.GeometrySpec, sets=("A", "B")) -> ex.ExplorerGeometry:
    """The explorer's geometry of ``sets`` (the other left empty), built here without anchordiv.figure."""
    anchors = [a if name in sets else a[:0] for name, a in zip("AB", world["anchors"])]
    texts = [t if name in sets else () for name, t in zip("AB", world["texts"])]
    return ex.ExplorerGeometry(world["gallery"].embeddings, anchors, texts, spec)


@needs_builtin
def test_each_cell_is_the_explorers_ranking_for_the_same_settings(world):
    gallery, encoder = world["gallery"], world["encoder"]
    spec = ex.GeometrySpec(scale=8.0)
    columns = ["cosine", "iti", "A", "B", "mix p=0.3", "mix p=0.7 weighting=literal", "A model=gaussian s=20"]
    result = fg.compare(gallery, encoder, ["#5", "text:a dog in watercolor"], columns, *world["texts"], k=4,
                        default_spec=spec, weighting="balanced", limits=fg.FigureLimits(columns=len(columns)))
    geometries = {"softmax": explorer_geometry(world, spec),
                  "gaussian": explorer_geometry(world, ex.GeometrySpec(kind="gaussian", scale=20.0))}
    indexes = {"cosine": ex.baseline_index("cosine", gallery.embeddings),
               "iti": ex.baseline_index("iti", gallery.embeddings, torch.cat(world["anchors"])),
               "A": geometries["softmax"].index_at(1.0), "B": geometries["softmax"].index_at(0.0),
               "mix p=0.3": geometries["softmax"].index_at(0.3, "balanced"),
               "mix p=0.7 weighting=literal": geometries["softmax"].index_at(0.7, "literal"),
               "A model=gaussian s=20": geometries["gaussian"].index_at(1.0)}
    text_query = encoder.encode_texts(["a dog in watercolor"])[0]
    for query, exclude, tables in zip([gallery.embeddings[5], text_query], [5, None], result.tables):
        for column, table in zip(columns, tables):
            similarity = column in ("cosine", "iti")
            expected = ex.search_one(indexes[column], query, 8, exclude=exclude)
            # The figure encodes its anchors and query itself: the same float32 values up to the
            # encoders' round-off (a few 1e-7 at s <= 20).
            assert_same_ranking((table["similarity" if similarity else "divergence"], table.gallery_id), expected,
                                rtol=1e-5, atol=1e-6, higher_is_closer=similarity, context=column)
    first = result.tables[0][0]
    assert first.same_object.tolist() == (gallery.labels.emoji_id.iloc[first.gallery_id] ==
                                          gallery.labels.emoji_id.iloc[5]).tolist()
    assert result.tables[1][0].same_object.isna().all()  # a text query has no labels
    assert set(result.frame().columns) >= {"query", "geometry", "gallery_id", "rank"}
    assert len(result.frame()) == 2 * len(columns) * 4


@needs_builtin
@pytest.mark.parametrize("weighting", list(ex.WEIGHTING_HELP))
def test_a_only_and_b_only_are_each_sets_own_geometry(world, weighting):
    """p = 1 (p = 0) of the mixture is A's (B's) model exactly, under every weighting (docs/design.md §3)."""
    spec = ex.GeometrySpec()
    mixture = explorer_geometry(world, spec)
    for name, p in (("A", 1.0), ("B", 0.0)):
        alone = explorer_geometry(world, spec, sets=(name,))
        for item in (0, 40, 77):
            query = world["gallery"].embeddings[item]
            mixed = ex.search_one(mixture.index_at(p, weighting), query, 10, exclude=item)
            # One set's own model against the mixture's float32 terms at weight 0 for the other.
            assert_same_ranking(mixed, ex.search_one(alone.index_at(0.5), query, 20, exclude=item), rtol=1e-4,
                                atol=1e-6, context=f"{name} at p = {p}")


@needs_builtin
def test_each_geometry_is_fitted_once_and_a_missing_set_is_named(world):
    gallery, encoder = world["gallery"], world["encoder"]
    calls = []

    def geometry_for(kind: str, scale: float) -> ex.ExplorerGeometry:
        calls.append((kind, scale))
        return explorer_geometry(world, ex.GeometrySpec(kind=kind, scale=scale))

    fg.compare(gallery, encoder, ["#1", "#2"], ["A", "B", "mix p=0.5", "A s=10", "B s=20"], *world["texts"], k=3,
               geometry_for=geometry_for)
    assert calls == [("softmax", 10.0), ("softmax", 20.0)]
    with pytest.raises(ValueError, match=re.escape("column 'B' needs anchors in set B, which is empty")):
        fg.compare(gallery, encoder, ["#1"], ["A", "B"], world["texts"][0], (), k=3)


@needs_builtin
def test_a_weighted_set_is_ranked_and_written_as_the_empirical_model_with_its_weights(world):
    """Set B weighted, the default kind Gaussian: B's column is the empirical model with B's weights,
    and the footer says so for B while A keeps the kind."""
    gallery, encoder = world["gallery"], world["encoder"]
    texts_a, texts_b = world["texts"]
    weights_b = [50.0] + [1.0] * (len(texts_b) - 1)
    spec = ex.GeometrySpec(kind="gaussian", scale=10.0)
    result = fg.compare(gallery, encoder, ["#5"], ["B"], texts_a, texts_b, k=4, default_spec=spec,
                        anchor_weights=(None, weights_b))
    geometry = ex.ExplorerGeometry(gallery.embeddings, world["anchors"], world["texts"], spec,
                                   anchor_weights=[None, weights_b])
    table = result.tables[0][0]
    assert_same_ranking((table["divergence"], table.gallery_id),
                        ex.search_one(geometry.index_at(0.0), gallery.embeddings[5], 8, exclude=5), rtol=1e-5,
                        atol=1e-6)  # as above: the figure encodes its anchors itself
    unweighted = explorer_geometry(world, spec).index_at(0.0)
    assert ex.search_one(unweighted, gallery.embeddings[5], 4, exclude=5)[1].tolist() != table.gallery_id.tolist()
    lines = result.settings.lines()
    assert lines[0].startswith("Anchors A: 8 (")
    assert lines[1].startswith(f"Anchors B: {len(texts_b)} weighted anchors, the empirical model with those weights (")
    assert any(line.startswith("Anchor model A: Gaussian; B: empirical with its weights, s = 10") for line in lines)
    both = fg.compare(gallery, encoder, ["#5"], ["A"], texts_a, texts_b, k=4, default_spec=spec,
                      anchor_weights=([1.0] * len(texts_a), weights_b))
    assert any(line.startswith("Anchor model empirical with each set's weights, s = 10")
               for line in both.settings.lines())
    with pytest.raises(ValueError, match=re.escape("set B has 5 anchors but 2 weights")):
        fg.compare(gallery, encoder, ["#5"], ["B"], texts_a, texts_b, k=4, anchor_weights=(None, [1.0, 2.0]))


@needs_builtin
def test_rows_resolve_to_the_images_they_name(world):
    gallery, encoder = world["gallery"], world["encoder"]
    count = len(gallery)
    png = io.BytesIO()
    gallery.image(9).save(png, format="PNG")
    rows = ["#3", "kissing", "random:11", "random", "random", "upload:face.png"]
    queries = fg.resolve_queries([fg.parse_query_row(row) for row in rows], gallery, encoder,
                                 images={"face.png": png.getvalue()})
    ids = [query.gallery_id for query in queries]
    assert ids[:3] == [3, gallery.find("kissing")[0], int(np.random.default_rng(11).integers(count))]
    assert ids[3] != ids[4]  # unseeded random rows are distinct ...
    again = fg.resolve_queries([fg.QueryRow("random")] * 2, gallery, encoder)
    assert [query.gallery_id for query in again] == ids[3:5]  # ... and reproducible
    assert queries[1].caption == f"#{ids[1]} {gallery.caption(ids[1])}"
    upload = queries[5]
    assert upload.gallery_id is None and upload.labels is None and upload.caption == "upload face.png"
    np.testing.assert_allclose(upload.vector, encoder.encode_images([gallery.image(9)])[0].numpy(), atol=1e-6)
    for row, message in (("#96", "the gallery has 96 images (ids 0 to 95)"), ("name:xyzzy", "contains 'xyzzy'"),
                         ("upload:gone.png", "no image data for 'gone.png'; upload it again")):
        with pytest.raises(ValueError, match=re.escape(message)):
            fg.resolve_queries([fg.parse_query_row(row)], gallery, encoder)


@needs_builtin
def test_bad_compare_arguments_are_messages(world):
    gallery, encoder = world["gallery"], world["encoder"]
    for rows, columns, k, weighting, message in (
            ([], ["A"], 3, "calibrated", "no query rows"), (["#1"], [], 3, "calibrated", "no geometry columns"),
            (["#1"], ["A"], 3, "odd", "unknown weighting 'odd'"), (["#1"], ["A"], 96, "calibrated", "top-k=96 is larger"),
            (["#1"], ["mix p=3"], 3, "calibrated", "p=3 is outside")):
        with pytest.raises(ValueError, match=re.escape(message)):  # k=96: within the limit, past the gallery
            fg.compare(gallery, encoder, rows, columns, *world["texts"], k=k, weighting=weighting,
                       limits=fg.FigureLimits(k=100))


# -- the figure -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_result(world):
    """Two gallery queries x three geometries, top-3."""
    return fg.compare(world["gallery"], world["encoder"], ["#0", "#50"], ["cosine", "A", "mix p=0.4"], *world["texts"],
                      k=3)


@needs_builtin
def test_the_png_has_the_figures_size(small_result):
    image = Image.open(io.BytesIO(fg.render_figure(small_result, "png", dpi=100)))
    width, height = fg.figure_size(small_result)
    assert image.format == "PNG"
    assert image.size == (round(width * 100), round(height * 100))
    assert np.asarray(image.convert("L")).std() > 10  # not blank


@needs_builtin
def test_the_svg_is_vector_with_one_image_per_thumbnail(small_result):
    data = fg.render_figure(small_result, "svg")
    root = ElementTree.fromstring(data)
    assert len(root.findall(f".//{SVG}image")) == 2 * (3 * 3 + 1)  # rows x (columns x k thumbnails + the query)
    texts = " ".join("".join(element.itertext()) for element in root.iter(f"{SVG}text"))
    for expected in ("cosine", "A only", "mix p = 0.4", "Anchors A: 8", "top-3", small_result.settings.encoder):
        assert expected in texts
    # The PNG's and the PDF's font, then a sans-serif one where a viewer lacks it (not its default serif).
    assert {re.search(r"font-family: ([^;]*)", element.get("style")).group(1)
            for element in root.iter(f"{SVG}text")} == {"'DejaVu Sans', sans-serif"}
    assert fg.render_figure(small_result, "svg") == data  # no date, fixed ids


@needs_builtin
def test_the_pdf_is_vector_with_one_image_per_thumbnail(small_result):
    data = fg.render_figure(small_result, "pdf")
    assert data.startswith(b"%PDF")
    assert len(re.findall(rb"/Subtype\s*/Image", data)) == 2 * (3 * 3 + 1)
    assert b"/FontFile2" in data  # TrueType text, not paths
    assert set(re.findall(rb"/BaseFont /[A-Z]{6}\+([\w-]+)", data)) <= {b"DejaVuSans", b"DejaVuSans-Bold",
                                                                    b"DejaVuSans-Oblique"}  # the PNG's and SVG's
    assert b"CreationDate" not in data
    assert fg.render_figure(small_result, "pdf") == data
    with pytest.raises(ValueError, match="unknown figure format 'jpg'"):
        fg.render_figure(small_result, "jpg")


# -- the command ------------------------------------------------------------------------------------
@needs_builtin
@pytest.mark.parametrize("suffix", ["pdf", "svg", "png"])
def test_the_command_writes_the_figure(world, tmp_path, suffix, capsys):
    image = tmp_path / "query.png"
    world["gallery"].image(20).save(image)
    anchors = tmp_path / "styles.txt"
    anchors.write_text("pixel art\n\nwatercolor painting\npixel art\n")
    out = tmp_path / f"figure.{suffix}"
    code = main(["figure", "--queries", "#3", f"image:{image}", "--geometries", "cosine", "mix p=0.5 s=5",
                 "--anchors-b", str(anchors), "-k", "3", *WORLD, "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    assert f"wrote {out}" in capsys.readouterr().out
    data = out.read_bytes()
    if suffix == "png":
        assert Image.open(io.BytesIO(data)).size[0] > 0
    elif suffix == "svg":
        root = ElementTree.fromstring(data)
        assert len(root.findall(f".//{SVG}image")) == 2 * (2 * 3 + 1)
        assert "Anchors B: 2 (pixel art, watercolor painting)" in " ".join(root.itertext())
    else:
        assert data.startswith(b"%PDF") and len(re.findall(rb"/Subtype\s*/Image", data)) == 2 * (2 * 3 + 1)


@pytest.fixture
def places(tmp_path):
    (tmp_path / "empty.txt").write_text("\n  \n")
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "weighted.tsv").write_text("pencil sketch\t0.7\npixel art\t0.3\n")
    (tmp_path / "bad-weight.tsv").write_text("pencil sketch\t0.7\npixel art\t-1\n")
    return {"<empty>": str(tmp_path / "empty.txt"), "<weighted>": str(tmp_path / "weighted.tsv"),
            "<bad-weight>": str(tmp_path / "bad-weight.tsv"), "<under-a-file>": str(tmp_path / "a-file" / "fig.pdf"),
            "<out>": str(tmp_path / "fig.pdf")}


BAD = [
    (["--queries", "#0", "--geometries", "A", "--out", "fig.jpg"], "--out 'fig.jpg' must end in .png, .pdf or .svg"),
    (["--queries", "#0", "--geometries", "A", "--out", "<under-a-file>"], "is a file, not a folder"),
    (["--queries", "#x", "--geometries", "A", "--out", "<out>"], "--queries: query '#x': after '#'"),
    (["--queries", "#0", "--geometries", "mix p=2", "--out", "<out>"], "--geometries: p=2 is outside [0, 1]"),
    (["--queries", "#0", "--geometries", "A model=nope", "--out", "<out>"], "unknown anchor model 'nope'"),
    (["--queries", "upload:x.png", "--geometries", "A", "--out", "<out>"], "upload: rows belong to the app"),
    (["--queries", "image:missing.png", "--geometries", "A", "--out", "<out>"], "'missing.png' does not exist"),
    (["--queries", "#0", "--geometries", "A", "--anchors-a", "<empty>", "--out", "<out>"], "has no anchors"),
    (["--queries", "#0", "--geometries", "A", "--anchors-a", "<weighted>", "--out", "<out>"],
     "is a weighted set (term<TAB>weight lines"),
    (["--queries", "#0", "--geometries", "A", "--anchors-b", "<bad-weight>", "--out", "<out>"],
     "bad-weight.tsv': line 2: a weight must be a positive finite number"),
    (["--queries", "#0", "--geometries", "A", "--anchors-a", "missing.txt", "--out", "<out>"],
     "--anchors-a 'missing.txt' does not exist"),
    (["--queries", "#0", "--geometries", "A", "--kind", "nope", "--out", "<out>"], "argument --kind: invalid choice"),
    (["--queries", "#0", "--geometries", "A", "--scale", "0", "--out", "<out>"], "argument --scale"),
    (["--geometries", "A", "--out", "<out>"], "the following arguments are required: --queries"),
]


@pytest.mark.parametrize("argv, message", BAD)
def test_bad_input_is_one_line_and_exit_2_before_loading_a_model(argv, message, places, monkeypatch, capsys):
    monkeypatch.setattr("anchordiv.encoders.load_encoder", tripwire("a model was loaded before the input was checked"))
    assert main(["figure", *[places.get(arg, arg) for arg in argv]]) == 2
    error = capsys.readouterr().err
    assert error.startswith("anchordiv figure: ") and error.count("\n") == 1, error
    assert message in error


@needs_builtin
@pytest.mark.parametrize("argv, message", [
    (["--preset-a", "Nope"], "--preset-a 'Nope' is not a preset; choose one of 'Gallery object names'"),
    (["--queries", "#500"], "query '#500': the gallery has 96 images"),
    (["-k", "200", "--max-k", "200"], "top-k=200 is larger than the 95 gallery images available"),
])
def test_bad_input_found_with_the_gallery_is_one_line_and_exit_2(world, argv, message, tmp_path, capsys):
    base = {"--queries": ["#0"], "--geometries": ["A"]}
    options = [*argv, *(option for name, values in base.items() if name not in argv for option in (name, *values))]
    assert main(["figure", *options, *WORLD, "--out", str(tmp_path / "fig.png")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("anchordiv figure: ") and message in error and "Traceback" not in error
    assert not (tmp_path / "fig.png").exists()
