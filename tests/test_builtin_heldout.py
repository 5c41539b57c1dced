"""evaluate-builtin's tables on small hand-made embeddings (the command itself needs the full world)."""
import numpy as np
import pandas as pd
import torch

from anchordiv.builtin.heldout import geometries, retrieval_table, zero_shot_hits, zero_shot_table
from anchordiv.models import GaussianAnchors
from anchordiv.search import AnchorIndex
from helpers import unit
from rankings import assert_same_ranking


def test_zero_shot_table_scores_each_group_and_the_whole():
    names, styles = [f"thing {i}" for i in range(8)], ["sketch", "photo"]
    orthonormal = torch.linalg.qr(torch.randn(16, 16, generator=torch.Generator().manual_seed(0)))[0]
    name_texts, style_texts = orthonormal[:8], orthonormal[8:10]
    labels = pd.DataFrame({"name": [names[i % 8] for i in range(16)], "style": [styles[i // 8] for i in range(16)]})
    # Each image is its name plus its style; image 0's name part points at name 1 instead.
    parts = [name_texts[[i % 8 for i in range(16)]], style_texts[[i // 8 for i in range(16)]]]
    parts[0][0] = name_texts[1]
    hits = zero_shot_hits(unit(parts[0] + 0.5 * parts[1]), labels, style_texts, styles, name_texts, names)
    table = zero_shot_table(hits, labels["style"])
    assert list(table.index) == ["all", "photo", "sketch"]
    assert table.loc["all", "style accuracy"] == 1.0
    assert table.loc["sketch", "object top-1"] == 7 / 8 and table.loc["photo", "object top-1"] == 1.0
    assert table.loc["all", "object top-1"] == 15 / 16
    assert table.loc["all", "object top-5"] >= table.loc["all", "object top-1"]
    assert table["images"].tolist() == [16, 8, 8]
    # Any label column can split the table: here the first four names form one group.
    by_group = zero_shot_table(hits, pd.Series(["a"] * 4 + ["b"] * 4 + ["a"] * 4 + ["b"] * 4))
    assert list(by_group.index) == ["all", "a", "b"] and by_group["images"].tolist() == [16, 8, 8]
    assert by_group.loc["a", "object top-1"] == 7 / 8 and by_group.loc["b", "object top-1"] == 1.0


def test_one_gaussian_ranking_serves_every_scale():
    generator = torch.Generator().manual_seed(1)
    anchors, gallery = unit(torch.randn(30, 12, generator=generator)), unit(torch.randn(40, 12, generator=generator))
    builders = geometries({"object": anchors}, gallery, [5.0, 20.0])
    assert sorted(builders) == ["Gaussian, object anchors, any s", "ITI, object anchors", "cosine",
                                "softmax, object anchors, s=20", "softmax, object anchors, s=5"]
    queries = gallery[:5]
    values, ids = builders["Gaussian, object anchors, any s"]().search(queries, 10)
    scaled = AnchorIndex(GaussianAnchors(scale=20.0).fit(anchors), gallery).search(queries, 10)
    # s = 1 values times s^2 = 400 are the s = 20 values. Each route's float32 rounding is absolute, set
    # by its terms rather than by D (about 2 d u ||g|| s: 1.4e-6 ||g|| at s = 1, times 400), so even the
    # query's own D = 0 may come out a few 1e-6 from 0 on either side (measured: 1e-5 apart).
    assert_same_ranking((400.0 * values, ids), scaled, rtol=1e-4, atol=1e-3)


def test_retrieval_table_has_a_row_per_geometry_and_per_style_columns():
    generator = torch.Generator().manual_seed(2)
    centres = unit(torch.randn(4, 12, generator=generator))
    images = unit(centres.repeat_interleave(6, 0) + 0.2 * torch.randn(24, 12, generator=generator))
    labels = pd.DataFrame({"emoji_id": np.repeat(np.arange(4), 6), "style": np.tile(["a", "b"], 12)})
    builders = geometries({"object": centres}, images, [10.0])
    table = retrieval_table(images, labels, builders)
    assert list(table.index) == list(builders)
    assert {"same emoji", "same emoji CI", "same emoji | a", "same style | b"} <= set(table.columns)
    # Tight clusters around distinct centres: cosine finds the same emoji far above chance (5/23).
    assert table.loc["cosine", "same emoji"] > 0.8
