"""Two encoders in one figure: a column that names its encoder (``cosine encoder=SPEC``) ranks the
same images embedded by that encoder, for the same query image, with the same anchor texts; its
header and the footer name the model. The built-in model against the tiny open_clip model
(tests/tiny_open_clip.py) on a small folder, through the library and the command line."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from anchordiv import explorer as ex
from anchordiv import figure as fg
from anchordiv.cli import main
from anchordiv.encoders import load_encoder
from anchordiv.gallery import folder_gallery
from anchordiv.prompts import AS_TYPED, AUTO, TemplateChoice, encode_anchors
from helpers import tripwire
from tiny_open_clip import TINY_ARCH, make_tiny_checkpoint

TEXTS_A = ("red square", "blue square", "green circle", "yellow star")
TEXTS_B = ("a photo", "a drawing", "a painting", "pixel art")
PHOTO = TemplateChoice("photo")


@pytest.fixture(scope="module")
def two_models(tmp_path_factory) -> dict:
    """A folder of 36 small images in three labels, embedded by the built-in model and by a tiny
    open_clip model, and the column spec that names the tiny one."""
    root = tmp_path_factory.mktemp("two-models")
    folder = root / "images"
    for number in range(36):
        (folder / f"label-{number % 3}").mkdir(parents=True, exist_ok=True)
        pixels = np.random.default_rng(number).integers(0, 256, (20, 20, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(folder / f"label-{number % 3}" / f"{number}.png")
    checkpoint, _ = make_tiny_checkpoint(root)
    builtin, tiny = load_encoder("builtin", device="cpu"), load_encoder(f"open_clip:{TINY_ARCH}", str(checkpoint), "cpu")
    loads = []

    def model_for(spec: str, pretrained: str | None) -> fg.ColumnModel:
        loads.append((spec, pretrained))
        encoder = load_encoder(spec, pretrained, "cpu")
        return fg.ColumnModel(encoder, folder_gallery(folder, encoder))

    return {"folder": folder, "builtin": builtin, "tiny": tiny, "gallery": folder_gallery(folder, builtin),
            "tiny_gallery": folder_gallery(folder, tiny), "model_for": model_for, "loads": loads,
            "named": f"encoder=open_clip:{TINY_ARCH} pretrained={checkpoint}", "image": folder / "label-1" / "4.png"}


def figure(two_models, rows, columns, **options) -> fg.CompareResult:
    return fg.compare(two_models["gallery"], two_models["builtin"], rows, columns, TEXTS_A, TEXTS_B, k=4,
                      weighting="balanced", model_for=two_models["model_for"], **options)


def cosine_ranking(embeddings: torch.Tensor, query: torch.Tensor, k: int, exclude: int | None) -> list[int]:
    similarities = embeddings @ query
    if exclude is not None:
        similarities[exclude] = -np.inf
    return torch.topk(similarities, k).indices.tolist()


def test_a_column_naming_another_encoder_ranks_its_embeddings_of_the_same_images(two_models):
    named = two_models["named"]
    two_models["loads"].clear()
    result = figure(two_models, ["#0", "#7"], ["cosine", f"cosine {named}", "A", f"mix p=0.5 {named}"])
    tiny_gallery, gallery = two_models["tiny_gallery"], two_models["gallery"]
    assert len(two_models["loads"]) == 1  # one encoder, loaded once for both of its columns
    for row, query_id in enumerate((0, 7)):
        builtin_cosine, tiny_cosine, _, tiny_mix = result.tables[row]
        assert builtin_cosine.gallery_id.tolist() == cosine_ranking(gallery.embeddings, gallery.embeddings[query_id],
                                                                    4, query_id)
        assert tiny_cosine.gallery_id.tolist() == cosine_ranking(tiny_gallery.embeddings,
                                                                 tiny_gallery.embeddings[query_id], 4, query_id)
        assert np.allclose(tiny_cosine.similarity, (tiny_gallery.rows(tiny_cosine.gallery_id.tolist())
                                                    @ tiny_gallery.embeddings[query_id]).numpy(), atol=1e-5)
        # The anchors are the same texts, encoded by the tiny model through its own "auto" templates.
        expected = ex.ExplorerGeometry(
            tiny_gallery.embeddings, [encode_anchors(two_models["tiny"], texts, PHOTO)
                                      for texts in (TEXTS_A, TEXTS_B)],
            [TEXTS_A, TEXTS_B], result.settings.spec)
        values, ids = ex.search_one(expected.index_at(0.5, "balanced"), tiny_gallery.embeddings[query_id], 4,
                                    exclude=query_id)
        assert tiny_mix.gallery_id.tolist() == ids.tolist()
        assert np.allclose(tiny_mix.divergence, values, atol=1e-5)
    # The neighbours are the folder's own images and labels either way: one gallery, two embeddings.
    assert set(result.frame().label) <= {"label-0", "label-1", "label-2"}


def test_the_header_and_the_footer_name_the_model(two_models):
    result = figure(two_models, ["#0"], ["cosine", f"cosine {two_models['named']}", "A encoder=builtin"])
    assert result.columns[1].label.splitlines() == ["cosine", f"{TINY_ARCH} · {Path(two_models['named']).name}"]
    assert result.columns[2].label.splitlines() == ["A only", "built-in model"]
    footer = "\n".join(result.settings.lines())
    assert f"encoder {two_models['builtin'].name} (columns that name a model: {two_models['tiny'].name})" in footer
    assert fg.render_figure(result, "png", dpi=60).startswith(b"\x89PNG")


def test_auto_templates_are_each_encoders_own_and_the_footer_says_so_per_encoder(two_models):
    builtin, tiny = two_models["builtin"].name, two_models["tiny"].name
    columns = ["A", f"A {two_models['named']}"]
    by_default = figure(two_models, ["#0"], columns)
    assert by_default.settings.templates == (AS_TYPED, AS_TYPED)  # the built-in model's own: its captions
    assert by_default.settings.column_templates == ((PHOTO, PHOTO, PHOTO),)  # open_clip's: 'a photo of a {}.'
    assert by_default.settings.templates_lines() == [f"Anchor texts encoded as typed (no template) by {builtin}",
                                                     f"Anchor texts encoded as 'a photo of a {{}}.' by {tiny}"]
    as_typed = figure(two_models, ["#0"], columns, templates=(AS_TYPED, AS_TYPED))
    assert as_typed.settings.column_templates == ((AS_TYPED, AS_TYPED, PHOTO),)
    assert as_typed.settings.templates_lines() == ["Anchor texts encoded as typed (no template)"]  # one for both
    assert by_default.tables[0][1].gallery_id.tolist() != as_typed.tables[0][1].gallery_id.tolist() or \
        not np.allclose(by_default.tables[0][1].divergence, as_typed.tables[0][1].divergence)
    mixed = figure(two_models, ["#0"], columns, templates=(PHOTO, AUTO))
    assert mixed.settings.templates_lines() == [
        f"Anchors A encoded as 'a photo of a {{}}.'; B as typed (no template) by {builtin}",
        f"Anchor texts encoded as 'a photo of a {{}}.' by {tiny}"]
    with pytest.raises(ValueError, match=r"templates: 'photo' is neither a TemplateChoice nor 'auto'"):
        figure(two_models, ["#0"], columns, templates=("photo", AUTO))


def test_a_figure_names_at_most_limits_encoders_before_loading_any(two_models):
    two_models["loads"].clear()
    named = [f"cosine {two_models['named']}", "cosine encoder=builtin", "cosine encoder=open_clip:hf-hub:org/repo"]
    with pytest.raises(ValueError, match=r"a figure's columns name at most 2 encoders with encoder=SPEC \(this one "
                                         r"names 3, .*\); name fewer encoders, or raise the limit \(--max-encoders"):
        figure(two_models, ["#0"], ["cosine", *named])
    assert two_models["loads"] == []  # refused before any model was loaded
    assert len(figure(two_models, ["#0"], ["cosine", *named[:2], named[0].replace("cosine", "A")]).columns) == 4
    with pytest.raises(ValueError, match="name at most 1 encoder with encoder=SPEC"):
        figure(two_models, ["#0"], named[:2], limits=fg.FigureLimits(encoders=1))
    assert fg.named_encoders([fg.parse_geometry_column(text) for text in ["iti", *named, named[0]]]) == 3


def test_the_command_refuses_too_many_encoders_before_loading_a_model(two_models, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("anchordiv.cli.fetch_model.load_with_progress",
                        tripwire("a model was loaded before the figure's encoders were counted"))
    columns = [f"cosine {two_models['named']}", "cosine encoder=builtin", "iti encoder=open_clip:hf-hub:org/repo"]
    assert main(["figure", "--queries", "#0", "--geometries", *columns, "--out", str(tmp_path / "f.png")]) == 2
    assert "name at most 2 encoders with encoder=SPEC (this one names 3" in capsys.readouterr().err
    assert main(["figure", "--queries", "#0", "--geometries", *columns, "--max-encoders", "1",
                 "--out", str(tmp_path / "f.png")]) == 2
    assert "name at most 1 encoder with encoder=SPEC" in capsys.readouterr().err


def test_an_image_row_is_embedded_again_by_the_columns_encoder(two_models):
    data = two_models["image"].read_bytes()
    result = figure(two_models, ["image:query.png"], ["cosine", f"cosine {two_models['named']}"],
                    images={"query.png": data})
    tiny_query = two_models["tiny"].encode_images([Image.open(two_models["image"]).convert("RGB")])[0]
    tiny_gallery = two_models["tiny_gallery"]
    assert result.tables[0][1].gallery_id.tolist() == cosine_ranking(tiny_gallery.embeddings, tiny_query, 4, None)
    itself = tiny_gallery.labels.index[tiny_gallery.labels.path == "label-1/4.png"][0]
    assert result.tables[0][1].gallery_id.iloc[0] == itself  # the image is in the folder, so it comes first


def test_a_text_row_or_no_way_to_load_a_model_is_a_message(two_models):
    with pytest.raises(ValueError, match=r"row 'text:red' is a text, and column 'cosine encoder=open_clip:.*' ranks "
                                         r"the images embedded by another encoder"):
        figure(two_models, ["text:red"], [f"cosine {two_models['named']}"])
    with pytest.raises(ValueError, match=r"names the encoder .* no way to load another encoder; drop encoder="):
        fg.compare(two_models["gallery"], two_models["builtin"], ["#0"], [f"cosine {two_models['named']}"],
                   TEXTS_A, TEXTS_B, k=3)


def test_a_column_encoder_must_embed_the_same_images(two_models):
    other = two_models["gallery"]

    def smaller(spec, pretrained):
        encoder = load_encoder(spec, pretrained, "cpu")
        gallery = folder_gallery(two_models["folder"] / "label-0", encoder)
        return fg.ColumnModel(encoder, gallery)

    with pytest.raises(ValueError, match=r"embedded .*label-0 \(12 images\), not the figure's .*images \(36 images\)"):
        fg.compare(other, two_models["builtin"], ["#0"], [f"cosine {two_models['named']}"], TEXTS_A, TEXTS_B, k=3,
                   model_for=smaller)


@pytest.mark.parametrize("text, canonical, encoder", [
    ("cosine encoder=builtin", "cosine encoder=builtin", "builtin"),
    ("A encoder=open_clip:ViT-B-32 pretrained=laion2b_s34b_b79k s=20",
     "A s=20 encoder=open_clip:ViT-B-32 pretrained=laion2b_s34b_b79k", "open_clip:ViT-B-32"),
    ("mix p=0.5 encoder=open_clip:hf-hub:timm/ViT-B-16-SigLIP model=gaussian",
     "mix p=0.5 model=gaussian encoder=open_clip:hf-hub:timm/ViT-B-16-SigLIP", "open_clip:hf-hub:timm/ViT-B-16-SigLIP"),
    # Before encoder=, a column named its encoder with model=: still read, and written anew.
    ("cosine model=builtin", "cosine encoder=builtin", "builtin"),
    ("mix p=0.5 model=open_clip:hf-hub:timm/ViT-B-16-SigLIP model=gaussian",
     "mix p=0.5 model=gaussian encoder=open_clip:hf-hub:timm/ViT-B-16-SigLIP", "open_clip:hf-hub:timm/ViT-B-16-SigLIP"),
])
def test_a_column_names_its_encoder_in_text_both_ways(text, canonical, encoder):
    column = fg.parse_geometry_column(text)
    assert str(column) == canonical and column.encoder == encoder
    assert fg.parse_geometry_column(str(column)) == column


@pytest.mark.parametrize("text, message", [
    ("cosine pretrained=laion2b_s34b_b79k", "pretrained=laion2b_s34b_b79k goes with the encoder it loads"),
    ("cosine model=gaussian", "model= does not apply to cosine columns"),
    ("A encoder=builtin encoder=open_clip:ViT-B-32", r"encoder= is given twice .* \(as an encoder\)"),
    ("A encoder=builtin model=open_clip:ViT-B-32", r"model= is given twice .* \(as an encoder\)"),
    ("A encoder=builtin pretrained=x", "the builtin encoder has its own weights"),
    ("A encoder=open_clip:hf-hub:nope", "is not ORG/REPO"),
    ("A encoder=gaussian", "encoder=gaussian is not an encoder; use encoder=builtin"),
    ("A model=nope", r"unknown anchor model 'nope'; use one of softmax.* \(another encoder is encoder=builtin"),
])
def test_a_bad_column_encoder_is_refused_with_the_fix(text, message):
    with pytest.raises(ValueError, match=message):
        fg.parse_geometry_column(text)


@pytest.mark.slow  # the world's held-out split is rendered once per run (about 40 s on 2 cores) unless cached
def test_the_command_draws_the_world_under_two_encoders(two_models, tmp_path, capsys):
    out = tmp_path / "two.png"
    assert main(["figure", "--queries", "#0", "#5", "--geometries", "cosine", f"cosine {two_models['named']}",
                 "--split", "heldout", "--limit", "24", "-k", "3", "--dpi", "60", "--out", str(out)]) == 0, \
        capsys.readouterr().err
    assert Image.open(out).size[0] > 0
    assert main(["figure", "--queries", "text:a cat", "--geometries", f"cosine {two_models['named']}",
                 "--split", "heldout", "--limit", "24", "--out", str(out)]) == 2
    assert "row 'text:a cat' is a text" in capsys.readouterr().err
