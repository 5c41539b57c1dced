"""The explorer's library helpers (anchordiv.explorer, .explain, .projection) on small synthetic data."""
from __future__ import annotations

import io
import os
import textwrap
import threading

import numpy as np
import pytest
import torch
from PIL import Image

import anchordiv as ad
from anchordiv import explain
from anchordiv import explorer as ex
from anchordiv import projection
from anchordiv.encoders.base import Encoder
from anchordiv.gallery import Gallery, folder_gallery
from anchordiv.grids import grid_png
from anchordiv.images import ImageLoadError
from anchordiv.explorer import maps
from anchordiv.explorer.anchors import preset_sources
from anchordiv.explorer.neighbours import GRID_CAPTION_LINE_CHARS, GRID_CAPTION_LINES

from conftest import labelled_world
from rankings import assert_same_ranking

SCALE = 12.0


@pytest.fixture(scope="module")
def world():
    """A labelled synthetic gallery (60 images: 6 objects x 5 styles x 2) and two anchor sets."""
    return labelled_world(0, 2, "synthetic", "synthetic", coloured=True)


def geometry(world, kind: str = "softmax", reverse: bool = False, device: str = "cpu") -> ex.ExplorerGeometry:
    gallery, anchors, texts = world
    return ex.ExplorerGeometry(gallery.embeddings, anchors, texts, ex.GeometrySpec(kind=kind, scale=SCALE, reverse=reverse),
                               device=device)


@pytest.mark.parametrize("reverse", [False, True])
def test_a_geometry_on_a_device_ranks_as_on_the_cpu(world, device, reverse):
    """Fitted, balanced, calibrated and indexed on ``device``: its p path, its kNN graph for UMAP
    and its cosine baseline agree with the CPU geometry's (up to ties), and what comes back is numpy."""
    gallery = world[0]
    on_cpu, there = geometry(world, reverse=reverse), geometry(world, reverse=reverse, device=device)
    assert there.device == torch.device(device) and there.index.device == torch.device(device)
    curve, expected = there.calibrated_model.calibration_, on_cpu.calibrated_model.calibration_
    np.testing.assert_allclose(curve.log_odds, expected.log_odds, rtol=1e-5, atol=1e-4)
    query = gallery.embeddings[7].numpy()
    path = there.p_path(query, 8, 7, "calibrated")
    assert isinstance(path.values, np.ndarray) and isinstance(path.ids, np.ndarray)
    for step, p in enumerate(path.p):
        # The CPU index at the device's calibrated weights: the calibration's own float32 round-off
        # is not part of the route compared here.
        model = there.weighted_model("calibrated").with_weights([p, 1 - p]) if there.is_mixture else there.model
        search = ad.AnchorIndex(model, gallery.embeddings, reverse=reverse, device="cpu").search(
            gallery.embeddings[7:8], 16, exclude=[7])
        assert_same_ranking((path.values[step], path.ids[step]), search, rtol=1e-4, atol=1e-5,
                            context=f"step {step} (p = {p:.2f})")
    # The CPU graph with more neighbours, so that a run tied across the 5th place is judged whole.
    (ids, distances), (cpu_ids, cpu_distances) = (projection.knn_graph(shared.index_at(0.5), gallery.embeddings,
                                                                      n_neighbors=n)
                                                  for shared, n in ((there, 5), (on_cpu, 9)))
    assert isinstance(ids, np.ndarray) and np.array_equal(ids[:, 0], np.arange(len(gallery)))
    assert_same_ranking((distances[:, 1:], ids[:, 1:]), (cpu_distances[:, 1:], cpu_ids[:, 1:]), rtol=1e-4, atol=1e-5,
                        context="kNN graph")
    cosine = [ex.search_one(ex.baseline_index("cosine", gallery.embeddings, device=where), query, k, 7)
              for where, k in ((device, 8), ("cpu", 12))]
    assert_same_ranking(*cosine, rtol=1e-5, atol=1e-6, higher_is_closer=True, context="cosine")


def test_parse_anchor_text_strips_dedupes_and_counts():
    parsed = ex.parse_anchor_text("dog\n\n  cat  \ndog\n\t\nbig   dog\ncat")
    assert parsed.anchors == ("dog", "cat", "big dog")
    assert (parsed.duplicates, parsed.blank_lines) == (2, 2)
    assert parsed.summary() == "3 anchors in use (2 duplicates, 2 blank lines ignored)"
    assert len(ex.parse_anchor_text("")) == 0 and len(ex.parse_anchor_text(None)) == 0
    many = ex.parse_anchor_text("\n".join(f"thing {i}" for i in range(6000)))
    assert len(many) == ex.MAX_ANCHORS and many.truncated == 1000 and "limit" in many.summary()


@pytest.mark.parametrize("text, anchors, split_at", [
    ("cat, dog, rocket, coffee cup", ("cat", "dog", "rocket", "coffee cup"), "commas"),
    ("red; green ;blue", ("red", "green", "blue"), "semicolons"),
    ("\n  a, b  \n\n", ("a", "b"), "commas"),
    ("a, b; c", ("a", "b; c"), "commas"),               # commas first: a semicolon stays inside
    ("cat, dog\nrocket", ("cat, dog", "rocket"), None),  # several lines: each line is one anchor
    ("a photo,", ("a photo,",), None),                   # nothing after the comma: one anchor
    ("cat", ("cat",), None),
])
def test_a_typed_list_on_one_line_is_split_with_a_note(text, anchors, split_at):
    parsed = ex.parse_anchor_text(text)
    assert parsed.anchors == anchors and parsed.split_at == split_at
    if split_at:
        assert parsed.summary().endswith(f"split at its {split_at} (one anchor per line keeps a {split_at[:-1]} "
                                         "inside an anchor)")
        assert ex.parse_anchor_text(parsed.text()).anchors == anchors  # an export reads back as the same set
    with pytest.raises(ValueError, match="line 1"):  # a weighted line is never split
        ex.parse_anchor_text("cat\t0.5, dog")


def test_the_preset_menu_says_your_own_once_the_text_is_no_preset():
    from anchordiv.explorer.anchors import anchor_presets, menu_name, preset_label

    presets = {"Animals": ("cat", "dog"), "Food": ("rice",)}
    assert preset_label("Animals", "cat\ndog", presets) == "Animals"
    assert preset_label("Animals", "rice\n", presets) == "Animals"  # another preset's list: still a preset
    assert preset_label("Animals", "cat\ndog\nhippo", presets) == "Your own"
    assert preset_label("Food", "bad\tweight", presets) == "Your own"
    assert all(len(menu_name(name)) <= 28 for name in anchor_presets())  # whole in the sidebar's menu


def test_presets_include_gallery_and_paper_examples(world):
    presets = ex.anchor_presets(world[0])
    assert presets["Gallery object names"][:2] == ("object 0", "object 1")
    assert presets["Gallery styles"] == tuple(f"style {i}" for i in range(5))
    assert "Pleural Effusion" in presets["Paper: CheXpert pathologies (Table 2)"]
    assert "husky" in presets["Paper: dog breeds"]
    assert presets["Animals"] and presets["Food"] and presets["Vehicles"]


def test_the_style_preset_leaves_out_who_drew_the_image(world):
    """The built-in world's 'google' and 'twitter' styles are the vendors' own drawings (its
    'source' column): labels, not styles to rank by."""
    gallery = world[0]
    labels = gallery.labels.assign(sty=["google" if i % 7 == 0 else style for i, style in enumerate(gallery.labels.sty)],
                                   source="google")
    drawn = Gallery(embeddings=gallery.embeddings, labels=labels, load=gallery.load, object_column="obj",
                    name_column="obj", style_column="sty", key="drawn", description="drawn")
    assert "google" not in ex.anchor_presets(drawn)["Gallery styles"]
    assert "google" in set(labels.sty) and "without google" in preset_sources(drawn)["Gallery styles"]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("weighting", ["calibrated", "balanced", "literal"])
def test_index_at_matches_a_fresh_mixture(world, reverse, weighting):
    gallery, anchors, _ = world
    shared = geometry(world, reverse=reverse)
    for p in (0.0, 0.3, 1.0):
        mixture = ad.MixtureAnchors([ad.EmpiricalAnchors(scale=SCALE), ad.EmpiricalAnchors(scale=SCALE)],
                                    [p, 1 - p], weighting=weighting).fit(anchors, reference=gallery.embeddings)
        expected = ad.AnchorIndex(mixture, gallery.embeddings, reverse=reverse).search(gallery.embeddings[:5], 16)
        got = shared.index_at(p, weighting).search(gallery.embeddings[:5], 8)
        # A fresh mixture, balanced or calibrated on its own, against the shared one re-weighted: the
        # same weights up to the fits' float32 round-off, and the float32 search at s = 12, d = 16.
        assert_same_ranking(got, expected, rtol=1e-4, atol=1e-5, context=f"p = {p}")


def test_index_at_never_mutates_the_shared_geometry(world):
    """Per-request copies: concurrent users at different p see their own rankings."""
    gallery = world[0]
    shared = geometry(world)
    weights_before = np.array(shared.model.effective_weights_)
    expected = {p: shared.index_at(p).search(gallery.embeddings[:3], 6)[1] for p in (0.0, 1.0)}
    results: dict[float, list] = {0.0: [], 1.0: []}

    def user(p: float) -> None:
        for _ in range(20):
            results[p].append(shared.index_at(p).search(gallery.embeddings[:3], 6)[1])

    threads = [threading.Thread(target=user, args=(p,)) for p in (0.0, 1.0)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for p, found in results.items():
        assert all(torch.equal(ids, expected[p]) for ids in found)
    np.testing.assert_array_equal(shared.model.effective_weights_, weights_before)
    assert not torch.equal(expected[0.0], expected[1.0])


def test_p_moves_neighbours_from_style_to_object(world):
    gallery = world[0]
    shared = geometry(world)
    sweep = ex.p_sweep(shared, gallery.embeddings[0], 6, ex.MemorySource(gallery), gallery.labels.iloc[0], exclude=0)
    assert list(sweep.columns) == ["p", "object", "style"] and len(sweep) == 11
    assert sweep["object"].iloc[-1] > sweep["object"].iloc[0]
    assert sweep["style"].iloc[0] > sweep["style"].iloc[-1]


def test_a_memory_source_builds_its_cosine_index_once(world, monkeypatch):
    gallery = world[0]
    source = ex.MemorySource(gallery)
    built = []
    original = ad.CosineIndex.__init__

    def counting(self, *args, **kwargs):
        built.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(ad.CosineIndex, "__init__", counting)
    rankings = [source.cosine_top_k(gallery.embeddings[query].numpy(), 5, exclude=query) for query in (0, 7, 0)]
    assert len(built) == 1 and source.cosine_index is built[0]
    expected = ex.search_one(ex.baseline_index("cosine", gallery.embeddings), gallery.embeddings[7], 5, exclude=7)
    assert rankings[1][1].tolist() == expected[1].tolist() and 7 not in rankings[1][1]
    assert rankings[0][1].tolist() == rankings[2][1].tolist()


def test_neighbour_table_and_agreement(world):
    gallery = world[0]
    values, ids = ex.search_one(geometry(world).index_at(1.0), gallery.embeddings[0], 4, exclude=0)
    assert 0 not in ids and np.all(np.diff(values) >= -1e-6)
    table = ex.neighbour_table(values, ids, gallery, gallery.labels.iloc[0], "divergence")
    assert list(table["rank"]) == [1, 2, 3, 4] and table["same_object"].dtype == bool
    hits = int(table["same_object"].sum())
    assert ex.agreement(table)["object"] == (hits, 4)
    assert f"{hits}/4 same object" in ex.agreement_text(table)
    unknown = ex.neighbour_table(values, ids, gallery, None, "divergence")
    assert ex.agreement_text(unknown) == "query labels unknown"
    with pytest.raises(ValueError, match="top-k"):
        ex.search_one(geometry(world).index, gallery.embeddings[0], len(gallery), exclude=0)


@pytest.mark.parametrize("kind", ad.list_anchor_models())
def test_every_model_kind_builds_and_ranks(world, kind):
    gallery, anchors, texts = world
    prior = torch.cat(anchors)
    shared = ex.ExplorerGeometry(gallery.embeddings, anchors, texts, ex.GeometrySpec(kind=kind, scale=SCALE, rank=3),
                                 prior=prior, prior_texts=[f"prior {i}" for i in range(len(prior))])
    values, ids = ex.search_one(shared.index_at(0.5), gallery.embeddings[1], 5, exclude=1)
    brute = shared.model_at(0.5).divergence(gallery.embeddings[1:2], gallery.embeddings)[0]
    brute[1] = float("inf")
    assert set(ids.tolist()) == set(torch.argsort(brute)[:5].tolist())


def test_small_and_empty_anchor_sets(world):
    gallery, (objects, styles), _ = world
    with pytest.raises(ValueError, match="both anchor sets are empty"):
        ex.ExplorerGeometry(gallery.embeddings, [objects[:0], styles[:0]], [[], []], ex.GeometrySpec())
    single = ex.ExplorerGeometry(gallery.embeddings, [objects[:0], styles], [[], ["s"] * 5], ex.GeometrySpec())
    assert not single.is_mixture and single.component_names == ["B"]
    one = ex.ExplorerGeometry(gallery.embeddings, [objects[:1], styles[:0]], [["o"], []], ex.GeometrySpec(kind="gaussian"))
    assert any("ridge" in note for note in one.notes)
    ex.search_one(one.index_at(0.3), gallery.embeddings[0], 3)
    softmax_one = ex.ExplorerGeometry(gallery.embeddings, [objects[:1], styles[:0]], [["o"], []], ex.GeometrySpec())
    assert any("one anchor" in note for note in softmax_one.notes)
    with pytest.raises(ValueError, match="between 0 and 1"):
        geometry(world).model_at(1.5)
    with pytest.raises(ValueError, match="unknown anchor model"):
        ex.GeometrySpec(kind="nope")
    with pytest.raises(ValueError, match="prior"):
        ex.GeometrySpec(kind="posterior-softmax").fit(objects)


def test_explain_softmax_tilt_is_exact(world):
    """For softmax mixtures the shown distributions are the model's own: their KL is the divergence."""
    gallery = world[0]
    shared = geometry(world)
    model = shared.model_at(0.7)
    query_tilt, neighbour_tilt, divergence, shown = explain.explain_pair(
        model, shared.component_anchors, shared.component_texts, shared.component_names,
        gallery.embeddings[0], gallery.embeddings[7])
    assert query_tilt.exact and shown == pytest.approx(divergence, rel=1e-3, abs=1e-5)
    assert query_tilt.probabilities.sum() == pytest.approx(1.0)
    top = query_tilt.top(3)
    assert list(top.columns) == ["anchor", "set", "probability"] and top["probability"].is_monotonic_decreasing
    reverse = explain.explain_pair(model, shared.component_anchors, shared.component_texts, shared.component_names,
                                   gallery.embeddings[0], gallery.embeddings[7], reverse=True)
    assert reverse[3] == pytest.approx(reverse[2], rel=1e-3, abs=1e-5)


def test_explain_gaussian_is_labelled_approximate(world):
    gallery = world[0]
    shared = geometry(world, kind="gaussian")
    query_tilt, _, divergence, _ = explain.explain_pair(
        shared.model_at(0.5), shared.component_anchors, shared.component_texts, shared.component_names,
        gallery.embeddings[0], gallery.embeddings[3])
    assert not query_tilt.exact and divergence >= -1e-6


def test_grid_png_is_a_png(world):
    gallery = world[0]
    data = grid_png([gallery.image(i) for i in range(7)], [gallery.caption(i) for i in range(7)], columns=3,
                       title="query")
    image = Image.open(io.BytesIO(data))
    assert image.format == "PNG" and image.size[0] == 3 * 128


def test_query_upload_validation():
    buffer = io.BytesIO()
    Image.new("RGB", (20, 10), "red").save(buffer, format="PNG")
    assert ex.query_image_from_upload(buffer.getvalue(), "red.png").size == (20, 10)
    with pytest.raises(ImageLoadError, match="broken.png"):
        ex.query_image_from_upload(b"\x89PNG\r\n\x1a\n garbage", "broken.png")
    with pytest.raises(ImageLoadError, match="not an image"):
        ex.query_image_from_upload(b"hello, world", "notes.txt")
    gif = io.BytesIO()
    Image.new("RGB", (4, 4)).save(gif, format="GIF")
    with pytest.raises(ImageLoadError, match="PNG, JPEG or WebP"):
        ex.query_image_from_upload(gif.getvalue(), "anim.gif")


class PixelEncoder(Encoder):
    """A stand-in encoder for folder tests: mean colour per quadrant (12 numbers)."""

    def __init__(self):
        super().__init__(name="pixel-test", dim=12, logit_scale=10.0, device="cpu")

    def _encode_image_batch(self, images):
        arrays = [np.asarray(image.resize((2, 2)), dtype=np.float32).reshape(-1) + 1.0 for image in images]
        return torch.as_tensor(np.stack(arrays))

    def _encode_text_batch(self, texts):
        return torch.ones((len(texts), 12))


def test_folder_gallery_reports_broken_files(tmp_path, monkeypatch):
    monkeypatch.setenv("ANCHORDIV_CACHE", str(tmp_path / "cache"))
    for label, colour in (("red", (255, 0, 0)), ("blue", (0, 0, 255))):
        (tmp_path / "images" / label).mkdir(parents=True)
        for i in range(2):
            Image.new("RGB", (16, 16), colour).save(tmp_path / "images" / label / f"{i}.png")
    (tmp_path / "images" / "red" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n not really")
    gallery = folder_gallery(tmp_path / "images", PixelEncoder())
    assert len(gallery) == 4 and [path for path, _ in gallery.skipped] == ["red/broken.png"]
    assert set(gallery.labels["label"]) == {"red", "blue"} and gallery.style_column is None
    assert gallery.image(0).size == (16, 16)
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "junk.png").write_bytes(b"junk")
    with pytest.raises(ValueError, match="no readable image"):
        folder_gallery(tmp_path / "empty", PixelEncoder())
    with pytest.raises(ValueError, match="does not exist"):
        folder_gallery(tmp_path / "missing", PixelEncoder())


def test_default_query_prefers_a_recognisable_image(world):
    gallery = world[0]
    assert ex.default_query_id(gallery, name="object 2", style="style 3") == 26
    assert ex.default_query_id(gallery, name="zebra") == 0
    assert gallery.find("object 5")[:2] == [50, 51]


class CountedRows:
    """A gallery's rows, noting each read."""

    def __init__(self, gallery, reads: list):
        self.gallery, self.reads = gallery, reads

    def __len__(self) -> int:
        return len(self.gallery)

    def rows(self, ids):
        self.reads.append(ids)
        return self.gallery.rows(ids)


def test_knn_graph_and_projection(world, tmp_path, monkeypatch):
    monkeypatch.setenv("ANCHORDIV_CACHE", str(tmp_path))
    gallery = world[0]
    shared = geometry(world)
    index = shared.index_at(0.5)
    indices, distances = projection.knn_graph(index, gallery.embeddings, n_neighbors=5)
    assert indices.shape == (60, 5) and np.array_equal(indices[:, 0], np.arange(60))
    assert np.all(distances >= 0) and np.all(distances[:, 0] == 0) and np.all(np.diff(distances, axis=1) >= -1e-6)
    cosine_indices, cosine_distances = projection.knn_graph(ex.baseline_index("cosine", gallery.embeddings),
                                                            gallery.embeddings, n_neighbors=5)
    assert np.all(np.diff(cosine_distances, axis=1) >= -1e-6)
    key = ex.projection_key("synthetic", 0.5)
    heard = []
    ids, xy = ex.geometry_projection(gallery, "anchor", shared, p=0.5, max_points=40, n_neighbors=5, cache_key=key,
                                     progress=lambda fraction, text: heard.append((fraction, text)))
    assert ids.shape == (40,) and xy.shape == (40, 2) and np.all(np.isfinite(xy))
    # Each step named as it starts, the graph's batches counted, the layout with its estimate, then
    # its own reports (the compile where this process has not compiled UMAP's kernels, its epochs).
    fractions, texts = [fraction for fraction, _ in heard], [text for _, text in heard]
    assert texts[0].startswith("Step 1 of 2: reading 40 rows")
    graph = texts.index("Step 1 of 2: each point's 5 nearest under this geometry (40 of 40 points)")
    assert texts[graph + 1].startswith("Step 2 of 2: UMAP's layout of 40 points, about")
    assert all(text.startswith("Step 1 of 2: ") for text in texts[:graph])
    assert all(text.startswith("Step 2 of 2: ") for text in texts[graph + 1:])
    assert fractions == sorted(fractions) and 0 <= fractions[0] <= fractions[-1] <= 1
    assert "epoch 200 of 200" in heard[-1][1]
    heard_then, rows_read = len(heard), []
    again = ex.geometry_projection(CountedRows(gallery, rows_read), "anchor", shared, p=0.5, max_points=40,
                                   n_neighbors=5, cache_key=key, progress=lambda *args: heard.append(args))
    np.testing.assert_array_equal(again[1], xy)  # read back from the disk cache
    assert len(heard) == heard_then and not rows_read  # without reading a row or showing progress
    assert maps.map_status(len(gallery), "anchor", max_points=40, n_neighbors=5, cache_key=key) == "cached"
    assert maps.map_status(len(gallery), "anchor", max_points=39, n_neighbors=5, cache_key=key) == "new"
    assert projection.sample_ids(10, 20).tolist() == list(range(10))



@pytest.mark.parametrize("method", ["anchor", "cosine"])
def test_points_outside_a_map_are_placed_by_umaps_own_transform(world, method):
    """A point outside a map's sample lands where the reducer that laid the map out would put it
    (UMAP.transform from its nearest sampled items under the map's geometry), though that reducer is
    restored from the kept layout; each lands on its own spot, one equal to a sampled item beside it."""
    gallery = world[0]
    shared = geometry(world)
    ids, xy = ex.geometry_projection(gallery, method, shared, p=0.5, max_points=40, n_neighbors=5)
    placer = ex.map_placer(gallery, ids, xy, method, shared, 0.5, n_neighbors=5)
    outside = np.setdiff1d(np.arange(len(gallery)), ids)
    placed = placer.place(gallery.rows(outside))
    # The reducer that made the layout, fitted again from the same graph: its transform agrees.
    sample = gallery.rows(ids)
    indices, distances = projection.knn_graph(placer.index, sample, n_neighbors=5)
    made = projection.fitted_umap(indices, distances, 0, projection.DEFAULT_EPOCHS, projection.MIN_DIST, "spectral")
    np.testing.assert_array_equal(made.embedding_, xy)
    values, nearest = placer.index.search(gallery.rows(outside), 5)
    np.testing.assert_array_equal(placed, projection.transform_points(
        made, nearest.numpy(), projection.distances_of(placer.index, values).numpy()))
    assert placed.shape == (len(outside), 2) and np.all(np.isfinite(placed))
    assert len(np.unique(placed.round(3), axis=0)) == len(outside)  # not one averaged spot
    # A sampled item placed as if outside (its distance 0 to itself kept) lands among its neighbours.
    again = placer.place(sample[:1])[0]
    spacing = np.median(np.linalg.norm(xy - xy[0], axis=1))
    assert np.linalg.norm(again - xy[0]) < spacing
    assert placer.place(torch.zeros((0, sample.shape[1]))).shape == (0, 2)

def test_invisible_lines_are_blank_but_joiners_inside_anchors_stay():
    parsed = ex.parse_anchor_text("\u200b\n\u200d\u2060\n\ufeff \ndog\n👨\u200d👩\u200d👧")
    assert parsed.anchors == ("dog", "👨\u200d👩\u200d👧") and parsed.blank_lines == 3


def test_folder_gallery_with_a_non_utf8_name_and_an_unlabelled_image(tmp_path, monkeypatch):
    monkeypatch.setenv("ANCHORDIV_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "images"
    (folder / "red").mkdir(parents=True)
    for name in (b"caf\xe9.png", b"plain.png"):  # the first is Latin-1, not UTF-8
        Image.new("RGB", (16, 16), (200, 0, 0)).save(os.fsdecode(os.fsencode(folder / "red") + b"/" + name))
    (folder / "labels.csv").write_text("path,style\nred/plain.png,photo\n")
    gallery = folder_gallery(folder, PixelEncoder(), labels_csv=folder / "labels.csv")
    assert len(gallery) == 2 and gallery.image(0).size == (16, 16) and gallery.image(1).size == (16, 16)
    assert gallery.unlabelled == ["red/caf\ufffd.png"] and set(gallery.labels["label"]) == {"red"}
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "private-notes.png").write_bytes(b"secret words")
    with pytest.raises(ValueError, match=r"no readable image .*1 file\(s\) skipped") as caught:
        folder_gallery(tmp_path / "junk", PixelEncoder())
    assert "private-notes" not in str(caught.value)  # the kinds of problem, never a listing


def test_grid_captions_shorten_at_a_word_boundary(world):
    """A name longer than the grid's line is cut after its last whole word that fits, with "…", on
    a line of its own below the rank and value; the whole name and the marks come beside it."""
    gallery = world[0]
    name = "smiling face with open mouth and tightly-closed eyes"
    long = Gallery(embeddings=gallery.embeddings, labels=gallery.labels.assign(obj=name),
                   load=gallery.load, object_column="obj", name_column="obj", style_column="sty", key="long",
                   description="long names")
    values, ids = ex.search_one(geometry(world).index_at(1.0), gallery.embeddings[0], 3, exclude=0)
    tiles = ex.grid_tiles(ex.neighbour_table(values, ids, long, long.labels.iloc[0], "divergence"), long, "divergence")
    for tile, item in zip(tiles, ids):
        shown, full = tile["line"], long.caption(int(item))
        assert tile["id"] == int(item) and tile["name"] == full and tile["head"].split()[1].startswith("d=")
        assert shown.endswith("…") and full.startswith(shown[:-1]) and full[len(shown) - 1] == " ", (shown, full)
        assert len(textwrap.wrap(shown, GRID_CAPTION_LINE_CHARS)) <= GRID_CAPTION_LINES < len(
            textwrap.wrap(full, GRID_CAPTION_LINE_CHARS))
        assert "✓obj" in tile["marks"]  # every neighbour is named as the query is


def test_a_value_copied_out_of_a_shown_message_reads_back_as_itself():
    """What the page shows passes through markdown_literal, which puts invisible word joiners after
    colons and at signs; text pasted back from it must be the value that was shown."""
    from anchordiv.explorer.literal import WORD_JOINER, markdown_literal, without_joiners
    from anchordiv.explorer.vocabulary import typed_terms

    copied = "".join(char for char in markdown_literal("face: cat @ www.x") if char != "\\")
    assert WORD_JOINER in copied
    assert ex.parse_anchor_text(copied + "\ndog").anchors == ("face: cat @ www.x", "dog")
    assert typed_terms(copied) == ("face: cat @ www.x",)
    assert without_joiners(copied) == "face: cat @ www.x"
