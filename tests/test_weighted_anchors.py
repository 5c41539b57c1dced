"""Weighted anchor sets (issue 25): the text format (``term<TAB>weight``), the geometry of a weighted
set (the empirical model with those weights, whatever the sidebar's kind), and the app's parts:
neighbours, links, export and reload."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from anchordiv import explorer as ex
from anchordiv.explorer import AnchorText, parse_anchor_text, weighted_anchor_text
from anchordiv.models import EmpiricalAnchors, MixtureAnchors
from anchordiv.search import AnchorIndex
from anchordiv.store import GalleryStore
from conftest import object_style_world
from markup import plain
from rankings import assert_same_ranking
from app_pages import APP, TIMEOUT, messages
from helpers import needs_builtin
from test_app import AppTest, assert_shows, neighbours, open_link, start


# -- the text format ---------------------------------------------------------------------------
def test_weighted_lines_give_weights_and_repeats_keep_the_first():
    parsed = parse_anchor_text("pencil sketch\t0.3127\n\n  oil   painting \t 2\npencil sketch\t5\n")
    assert parsed.anchors == ("pencil sketch", "oil painting")
    assert parsed.weights == (0.3127, 2.0)
    assert (parsed.blank_lines, parsed.duplicates) == (1, 1)
    assert parsed.summary() == "2 weighted anchors in use (1 duplicate, 1 blank line ignored)"


def test_lines_without_a_tab_are_unweighted():
    parsed = parse_anchor_text("dog\ncat\t\nbird")  # a tab with nothing after it is no weight
    assert parsed.anchors == ("dog", "cat", "bird") and parsed.weights is None
    assert parsed.summary() == "3 anchors in use"


def test_the_cap_cuts_weights_with_their_anchors():
    parsed = parse_anchor_text("\n".join(f"term {i}\t{i + 1}" for i in range(5)), max_anchors=3)
    assert parsed.anchors == ("term 0", "term 1", "term 2") and parsed.weights == (1.0, 2.0, 3.0)
    assert parsed.truncated == 2


def test_a_weighted_set_needs_a_weight_on_every_line():
    with pytest.raises(ValueError, match=r"lines 2, 4: no weight, but other lines have one"):
        parse_anchor_text("a\t1\nb\nc\t2\nd")


@pytest.mark.parametrize("weight", ["0", "-1", "nan", "inf", "-inf", "heavy", "1e999", "1e308", "1.5e12"])
def test_a_weight_that_is_not_positive_and_finite_is_refused(weight):
    with pytest.raises(ValueError, match=rf"line 2: a weight must be a positive finite number .*'{weight}'"):
        parse_anchor_text(f"a\t1\nb\t{weight}")


def test_huge_weights_are_refused_with_the_fix_and_the_largest_allowed_gives_a_usable_model():
    """Weights near float64's limit sum to infinity and normalise to 0 (a model of no mass, which the
    app would blame on the scale): they are refused, saying that only the ratios matter; the
    largest weight allowed, on every anchor of a full set, still normalises to finite weights."""
    with pytest.raises(ValueError, match=r"at most 1e\+12 .*only the ratios of a set's weights matter"):
        parse_anchor_text("a\t1e308\nb\t1e308")
    full = parse_anchor_text("\n".join(f"term {i}\t{ex.anchors.MAX_WEIGHT:g}" for i in range(ex.MAX_ANCHORS)))
    anchors = torch.nn.functional.normalize(torch.randn(ex.MAX_ANCHORS, 4, dtype=torch.float64), dim=1)
    model = EmpiricalAnchors(scale=10.0, weights=full.weights).fit(anchors)
    assert torch.allclose(model.log_weights_, torch.full((ex.MAX_ANCHORS,), -math.log(ex.MAX_ANCHORS),
                                                         dtype=torch.float64))


def test_a_weight_without_an_anchor_is_refused():
    with pytest.raises(ValueError, match="line 1: a weight without an anchor"):
        parse_anchor_text("\t0.5\na\t1")


def test_a_long_list_of_bad_lines_is_named_briefly():
    with pytest.raises(ValueError, match=r"lines 2, 3, 4, 5, 6 and 5 more: no weight"):
        parse_anchor_text("a\t1\n" + "\n".join(f"term {i}" for i in range(10)))


def test_the_formatter_round_trips_to_four_significant_digits():
    terms, weights = ["pencil sketch", "a watercolor painting", "neon on black"], [0.312749, 1.5e-5, 12.0]
    text = weighted_anchor_text(terms, weights)
    assert text == "pencil sketch\t0.3127\na watercolor painting\t1.5e-05\nneon on black\t12"
    parsed = parse_anchor_text(text)
    assert parsed.anchors == tuple(terms)
    assert all(math.isclose(got, want, rel_tol=5e-4) for got, want in zip(parsed.weights, weights))
    assert parsed.text() == text


def test_the_formatter_leaves_out_terms_of_weight_zero():
    assert weighted_anchor_text(["a", "b", "c"], [0.5, 0.0, 0.25]) == "a\t0.5\nc\t0.25"


@pytest.mark.parametrize("term", ["two\tcolumns", "two\nlines", "carriage\rreturn", "line\u2028separator", "  "])
def test_the_formatter_refuses_terms_a_line_cannot_carry(term):
    with pytest.raises(ValueError, match="tab or a line break|blank"):
        weighted_anchor_text(["fine", term], [1.0, 1.0])


@pytest.mark.parametrize("weights, message", [([1.0], "2 terms but 1 weights"), ([1.0, -0.1], "non-negative"),
                                              ([1.0, math.nan], "non-negative"), ([0.0, 0.0], "every weight is 0"),
                                              ([1.0, 1e13], "at most 1e")])
def test_the_formatter_refuses_weights_a_set_cannot_use(weights, message):
    with pytest.raises(ValueError, match=message):
        weighted_anchor_text(["a", "b"], weights)


def test_an_unweighted_set_is_its_lines():
    assert AnchorText(("a", "b")).text() == "a\nb"


# -- the geometry ------------------------------------------------------------------------------
# The geometry and the reference below rank the same float32 rows with the same empirical model through
# AnchorIndex: they can differ only where the blocked search rounds differently (a few ulps of values
# of order 1 at s = 12), so ties are judged at 1e-5.
SAME_ROUTE = dict(rtol=1e-5, atol=1e-6)
# The sharded search over a float32 store against AnchorIndex over its rows (as tests/test_store_view.py
# states: float32 rounding at s = 12, d = 24 is within 7e-6 of float64).
STORE_ROUTE = dict(rtol=1e-4, atol=1e-5)
SCALE = 12.0


@pytest.fixture(scope="module")
def world():
    """A small object x style world (images (96, 24)), its object and style anchors, and uneven
    weights on the objects (one object far heavier)."""
    images, rows, objects, styles = object_style_world(5, 6, 4, 4, 24, 0.6, 0.3)
    weights = [8.0, 1.0, 0.5, 2.0, 1.0, 0.25]
    return images, objects, styles, weights


def rankings(index, images, queries=range(0, 96, 7), k=10):
    return [ex.search_one(index, images[query], k, exclude=query) for query in queries]


@pytest.mark.parametrize("kind", ["softmax", "gaussian", "latent-softmax", "posterior-gaussian"])
def test_a_weighted_set_is_the_empirical_model_with_its_weights_whatever_the_kind(world, kind):
    images, objects, styles, weights = world
    texts = [f"object {i}" for i in range(len(objects))]
    spec = ex.GeometrySpec(kind=kind, scale=SCALE, rank=3)
    geometry = ex.ExplorerGeometry(images, [objects, torch.zeros((0, 24))], [texts, []], spec,
                                   prior=styles, prior_texts=["s"] * len(styles), anchor_weights=[weights, None])
    reference = AnchorIndex(EmpiricalAnchors(scale=SCALE, weights=weights).fit(objects), images)
    for got, expected in zip(rankings(geometry.index_at(0.5), images), rankings(reference, images, k=20)):
        assert_same_ranking(got, expected, **SAME_ROUTE)
    assert geometry.component_texts == [texts] and geometry.component_anchors[0] is objects  # no prior mixed in
    assert ("Set A has weights: the empirical model with those weights is used; the sidebar's kind applies to "
            "unweighted sets.") in geometry.notes
    uniform = AnchorIndex(EmpiricalAnchors(scale=SCALE).fit(objects), images)
    assert [ids.tolist() for _, ids in rankings(uniform, images)] != [ids.tolist() for _, ids in
                                                                      rankings(reference, images)]  # weights matter


def test_beside_an_unweighted_set_the_weighted_one_is_a_component_of_the_mixture(world):
    images, objects, styles, weights = world
    spec = ex.GeometrySpec(kind="gaussian", scale=SCALE)
    geometry = ex.ExplorerGeometry(images, [objects, styles], [["o"] * len(objects), ["s"] * len(styles)], spec,
                                   anchor_weights=[weights, None])
    mixture = MixtureAnchors([EmpiricalAnchors(scale=SCALE, weights=weights).fit(objects), spec.fit(styles)[0]], [0.5, 0.5])
    for p in (0.2, 0.7):
        expected = mixture.with_balance(images).with_weights([p, 1 - p])
        for got, want in zip(rankings(geometry.index_at(p, "balanced"), images),
                             rankings(AnchorIndex(expected, images), images, k=20)):
            assert_same_ranking(got, want, **SAME_ROUTE, context=f"p = {p}")
    assert [note for note in geometry.notes if "has weights" in note] == [
        "Set A has weights: the empirical model with those weights is used; the sidebar's kind applies to "
        "unweighted sets."]


def test_a_store_source_fits_the_weights_too(world, tmp_path):
    images, objects, styles, weights = world
    folder = tmp_path / "store"
    GalleryStore.from_array(images, folder, shard_rows=40, encoder="test-encoder@1", dtype="float32")
    source = ex.StoreSource.open(folder, "test-encoder@1", 24)
    geometry = source.fit_geometry([objects, torch.zeros((0, 24))], [["o"] * len(objects), []],
                                   ex.GeometrySpec(kind="gaussian", scale=SCALE), anchor_weights=[weights, None])
    reference = AnchorIndex(EmpiricalAnchors(scale=SCALE, weights=weights).fit(objects), source.rows(np.arange(len(source))))
    for got, expected in zip(rankings(geometry.index_at(0.5), images), rankings(reference, images, k=20)):
        assert_same_ranking(got, expected, **STORE_ROUTE)


# -- the app -----------------------------------------------------------------------------------
# Each AppTest below starts the app on the small world slice of tests/conftest.py (APP_LIMIT items).
STYLES_WEIGHTS = [50.0, 1.0, 1.0, 1.0, 1.0]  # the first style (pencil sketch) far heavier than the others


def library_ranking(library, set_a: AnchorText, set_b: AnchorText, kind: str = "softmax", p: float = 0.5):
    """The library's top ``2 k`` (k = 10) for the page's default query: the two parsed sets encoded as
    typed (the built-in model's templates), each weighted set the empirical model with its weights."""
    encoder, gallery = library["encoder"], library["gallery"]
    anchors = [torch.as_tensor(encoder.encode_texts(list(s.anchors))) if len(s) else torch.zeros((0, encoder.dim))
               for s in (set_a, set_b)]
    geometry = ex.ExplorerGeometry(gallery.embeddings, anchors, [set_a.anchors, set_b.anchors],
                                   ex.GeometrySpec(kind=kind, scale=10.0), anchor_weights=[set_a.weights, set_b.weights])
    query = ex.default_query_id(gallery)
    return ex.search_one(geometry.index_at(p, "calibrated"), gallery.embeddings[query], 20, exclude=query)


def weighted_styles(library) -> str:
    return weighted_anchor_text(library["presets"]["Gallery styles"], STYLES_WEIGHTS)


@needs_builtin
def test_a_weighted_set_moves_the_neighbours_as_the_library_says(library):
    app = start()
    names, styles = (AnchorText(library["presets"][name]) for name in ("Gallery object names", "Gallery styles"))
    text = weighted_styles(library)
    app.text_area(key="anchors_b").set_value(text).run()
    assert not app.exception
    said = messages(app)
    assert "5 weighted anchors in use" in said and "Set B has weights: the empirical model with those weights" in said
    assert_shows(app, library_ranking(library, names, parse_anchor_text(text)))
    assert neighbours(app) != library_ranking(library, names, styles)[1][:10].tolist()  # the weights matter here
    app.selectbox(key="anchor_model").set_value("gaussian").run()  # A becomes Gaussian, B stays weighted
    assert_shows(app, library_ranking(library, names, parse_anchor_text(text), kind="gaussian"))


@needs_builtin
def test_a_weighted_set_travels_in_links_short_and_by_hash(library):
    app = start()
    long_set = weighted_anchor_text([f"a carefully typed anchor {i}" for i in range(150)], range(1, 151))
    app.text_area(key="anchors_a").set_value(long_set).run()
    app.text_area(key="anchors_b").set_value(weighted_styles(library)).run()
    assert app.query_params["anchors_a"].startswith("@") and app.query_params["anchors_b"] == weighted_styles(library)
    again = open_link(dict(app.query_params))
    assert again.text_area(key="anchors_a").value == long_set
    assert again.text_area(key="anchors_b").value == weighted_styles(library)
    assert "150 weighted anchors in use" in messages(again) and neighbours(again) == neighbours(app)


@needs_builtin
@pytest.mark.parametrize("text, said", [("google\t-1\ntwitter\t1", "line 1: a weight must be a positive finite number"),
                                        ("google\t2\ntwitter", "line 2: no weight, but other lines have one")])
def test_a_bad_weight_is_a_message_and_the_set_is_not_used(library, text, said):
    app = start()
    app.text_area(key="anchors_b").set_value(text).run()
    assert not app.exception
    assert any(f"Anchor set B is not used: {said}" in plain(error.value) for error in app.error)
    names = AnchorText(library["presets"]["Gallery object names"])
    assert_shows(app, library_ranking(library, names, AnchorText(())))  # set A alone


@needs_builtin
def test_a_set_downloads_as_its_text_and_a_file_loads_into_it(library, download_builders):
    builders = download_builders
    app = start()
    # Closed, the Save or load expanders draw neither their uploader nor their download.
    assert not app.get("file_uploader") and "anchor-set-a.tsv" not in builders
    app.session_state["save_load_open_a"] = app.session_state["save_load_open_b"] = True  # both opened
    app.text_area(key="anchors_b").set_value(weighted_styles(library)).run()
    assert builders["anchor-set-b.tsv"]().decode("utf-8") == weighted_styles(library)
    assert builders["anchor-set-a.tsv"]().decode("utf-8") == "\n".join(library["presets"]["Gallery object names"])
    loaded = "smiling face with halo\t3\r\nkissing face\t1\r\nhugging face\t0.5\r\n"
    upload = app.file_uploader(key="upload_anchors_a")
    upload.set_value(("mine.tsv", "\ufeff".encode() + loaded.encode(), "text/tab-separated-values")).run()
    assert not app.exception and app.text_area(key="anchors_a").value == "\n".join(loaded.splitlines())
    assert_shows(app, library_ranking(library, parse_anchor_text(loaded), parse_anchor_text(weighted_styles(library))))
    for name, data, said in [("latin.tsv", "café\t1".encode("latin-1"), "not UTF-8"),
                             ("huge.tsv", b"a\n" * (ex.anchors.MAX_ANCHOR_FILE_BYTES // 2 + 1), "at most 1,048,576"),
                             ("bad.tsv", b"dog\t1\ncat", "line 2: no weight")]:
        app.file_uploader(key="upload_anchors_a").set_value((name, data, "text/tab-separated-values")).run()
        assert not app.exception
        assert any(f"{name} is not loaded, and set A is as it was" in plain(error.value) and said in plain(error.value)
                   for error in app.error), name
        assert app.text_area(key="anchors_a").value == "\n".join(loaded.splitlines())


@needs_builtin
def test_the_compare_page_ranks_a_weighted_set_with_its_weights(library):
    """A Compare column of set B under another kind: B is still the empirical model with its weights."""
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    app.query_params.update({"anchors_b": weighted_styles(library), "rows": "#0", "columns": "B model=gaussian",
                             "cell_k": "5"})
    app.switch_page("views/compare.py").run()
    assert not app.exception, app.exception
    table = app.dataframe[0].value
    names, styles = AnchorText(library["presets"]["Gallery object names"]), parse_anchor_text(weighted_styles(library))
    encoder, gallery = library["encoder"], library["gallery"]
    anchors = [torch.as_tensor(encoder.encode_texts(list(s.anchors))) for s in (names, styles)]

    def column_b(weights):
        geometry = ex.ExplorerGeometry(gallery.embeddings, anchors, [names.anchors, styles.anchors],
                                       ex.GeometrySpec(kind="gaussian", scale=10.0), anchor_weights=[None, weights])
        return ex.search_one(geometry.index_at(0.0, "calibrated"), gallery.embeddings[0], 10, exclude=0)

    expected = column_b(styles.weights)
    assert expected[1][:5].tolist() != column_b(None)[1][:5].tolist()  # B's weights change its column here
    shown = table.loc[table["geometry"] == "B model=gaussian"]
    assert_same_ranking((shown["divergence"].to_numpy(), shown["gallery_id"].to_numpy()), expected, rtol=1e-4,
                        atol=1e-5)  # as test_app.assert_shows: the page's text cache rounds the anchors differently
    said = messages(app)
    assert "A has 8 anchors, B 5 weighted anchors" in said
    # The figure's footer: B's kind is the empirical model with its weights, whatever its header names.
    assert "Anchors B: 5 weighted anchors, the empirical model with those weights (" in said
    assert "Anchor models as in the column headers (set B: empirical with its weights), s = 10" in said
