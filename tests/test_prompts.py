"""Prompt templates (anchordiv.prompts): CLIP's zero-shot mean of unit embeddings over templates,
checked against a direct computation on the built-in model and a tiny open_clip model (the real
open_clip code); own templates checked; the choice kept in the text cache's key, in links, in the
Compare figure's footer, in `anchordiv figure` and on the explorer's pages."""
from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
import pytest
import torch

from markup import plain
from anchordiv import explorer as ex
from anchordiv import figure as fg
from anchordiv import prompts
from anchordiv.cli import main
from anchordiv.encoders import load_encoder
from anchordiv.explorer import links
from conftest import APP_SLICE_ARGS as WORLD
from helpers import SVG, needs_builtin, tripwire
from rankings import assert_same_ranking
from tiny_open_clip import TINY_ARCH, make_tiny_checkpoint

ANCHORS = ("cat", "red sports car", "a {curly} thing")  # braces in an anchor are text, not a slot
OWN = ("a sketch of a {}.", "{}, in watercolor", "a photo of the small {}.")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path, _ = make_tiny_checkpoint(tmp_path_factory.mktemp("tiny"))
    return load_encoder(f"open_clip:{TINY_ARCH}", pretrained=str(path), device="cpu")


def direct_mean(encoder, anchors, templates) -> torch.Tensor:
    """The formula written out: each filled template encoded on its own, made unit, averaged, made unit."""
    rows = []
    for anchor in anchors:
        units = torch.stack([encoder.encode_texts([template.replace("{}", anchor)])[0] for template in templates])
        mean = (units / units.norm(dim=1, keepdim=True)).mean(dim=0)
        rows.append(mean / mean.norm())
    return torch.stack(rows)


class Counting:
    """A real encoder that counts the texts it is given (to see what the cache spares)."""

    def __init__(self, encoder, name_suffix: str):
        self.encoder, self.name, self.dim, self.texts = encoder, encoder.name + name_suffix, encoder.dim, 0

    def encode_texts(self, texts):
        self.texts += len(texts)
        return self.encoder.encode_texts(texts)


# -- the formula ------------------------------------------------------------------------------------
def test_the_mean_over_templates_is_clip_s_on_tiny_open_clip(tiny):
    for choice in (prompts.TemplateChoice("photo"), prompts.TemplateChoice("custom", OWN)):
        encoded = prompts.encode_anchors(tiny, ANCHORS, choice)
        assert encoded.shape == (len(ANCHORS), tiny.dim) and encoded.dtype == torch.float32
        torch.testing.assert_close(encoded, direct_mean(tiny, ANCHORS, choice.templates), atol=2e-5, rtol=0)
    # the 80 ImageNet templates, written out from open_clip's own callables
    from open_clip.zero_shot_metadata import OPENAI_IMAGENET_TEMPLATES

    ensemble = prompts.encode_anchors(tiny, ANCHORS[:2], prompts.TemplateChoice("imagenet80"))
    rows = [torch.nn.functional.normalize(tiny.encode_texts([make(anchor) for make in OPENAI_IMAGENET_TEMPLATES]).mean(0),
                                          dim=0) for anchor in ANCHORS[:2]]
    torch.testing.assert_close(ensemble, torch.stack(rows), atol=2e-5, rtol=0)
    as_typed = prompts.encode_anchors(tiny, ANCHORS, prompts.AS_TYPED)
    torch.testing.assert_close(as_typed, tiny.encode_texts(list(ANCHORS)), atol=1e-6, rtol=0)
    assert not torch.allclose(as_typed, prompts.encode_anchors(tiny, ANCHORS, prompts.TemplateChoice("photo")), atol=1e-3)


@needs_builtin
def test_the_mean_over_templates_is_clip_s_on_the_builtin_model(library):
    encoder = library["encoder"]
    own = prompts.TemplateChoice("custom", OWN)
    torch.testing.assert_close(prompts.encode_anchors(encoder, ANCHORS, own), direct_mean(encoder, ANCHORS, OWN),
                               atol=2e-5, rtol=0)
    photo = prompts.encode_anchors(encoder, ANCHORS, prompts.TemplateChoice("photo"))
    torch.testing.assert_close(photo, encoder.encode_texts([f"a photo of a {anchor}." for anchor in ANCHORS]),
                               atol=2e-5, rtol=0)


@needs_builtin
def test_each_model_has_its_default(tiny, library):
    assert prompts.default_choice(tiny) == prompts.TemplateChoice("photo")
    assert prompts.default_choice(library["encoder"]) == prompts.AS_TYPED
    assert prompts.template_choice("auto", encoder=tiny).label == "'a photo of a {}.'"
    assert len(prompts.TemplateChoice("imagenet80").templates) == 80


def test_the_cache_keeps_each_template_set_apart(tiny):
    counting = Counting(tiny, "+counting")
    photo = prompts.encode_anchors(counting, ANCHORS, prompts.TemplateChoice("photo"))
    assert counting.texts == len(ANCHORS)
    again = prompts.encode_anchors(counting, ANCHORS, prompts.TemplateChoice("photo"))
    assert counting.texts == len(ANCHORS) and torch.equal(photo, again)  # read from the cache
    own = prompts.encode_anchors(counting, ANCHORS, prompts.TemplateChoice("custom", OWN))
    assert counting.texts == len(ANCHORS) * (1 + len(OWN)) and not torch.allclose(own, photo)
    assert prompts.encode_anchors(counting, (), prompts.TemplateChoice("custom", OWN)).shape == (0, tiny.dim)


def test_too_many_texts_are_refused_before_encoding(tiny):
    counting = Counting(tiny, "+refused")
    anchors = [f"thing {i}" for i in range(prompts.MAX_PROMPTS // 80 + 1)]
    with pytest.raises(ValueError, match=r"80 templates is 150,\d+ texts to encode; at most 150,000"):
        prompts.encode_anchors(counting, anchors, prompts.TemplateChoice("imagenet80"))
    assert counting.texts == 0


# -- own templates ----------------------------------------------------------------------------------
@pytest.mark.parametrize("text, message", [
    ("", "no templates"), ("\n  \n", "no templates"),
    ("a photo of a cat.", r"template 1 \('a photo of a cat.'\) has 0 \{\}"),
    ("a {} and a {}", "has 2 {}"), ("a {}\nno slot here", "template 2"),
    ("a {} " + "x" * 300, "template 1 has 305 characters; shorten it to at most 200"),
    ("\n".join(f"a {{}} number {i}" for i in range(81)), "81 templates, but at most 80"),
    ("a {}\n" * 20_000, "20,000 lines, 100,000 characters; 80 templates"),
])
def test_bad_own_templates_are_refused_with_the_fix(text, message):
    with pytest.raises(ValueError, match=message):
        prompts.template_choice("custom", text)


def test_own_templates_are_tidied_and_named_by_their_content():
    choice = prompts.template_choice("custom", "  a sketch  of a {}.\n\na sketch of a {}.\n{} in watercolor\n")
    assert choice.templates == ("a sketch of a {}.", "{} in watercolor")
    assert choice.token.startswith("custom-") and choice.token == prompts.TemplateChoice("custom", choice.custom).token
    assert choice.token != prompts.template_choice("custom", "{} in watercolor").token
    assert choice.label == "the mean of 2 own templates ('a sketch of a {}.', '{} in watercolor')"
    with pytest.raises(ValueError, match="unknown template set 'fancy'"):
        prompts.TemplateChoice("fancy")


# -- links ------------------------------------------------------------------------------------------
def test_links_carry_each_set_s_templates(tmp_path):
    texts = links.LinkedTexts(tmp_path / "linked")
    fields = links.view_fields(50, 7, {"objects": ("cat",)}, ("objects", "objects"), texts)
    own = "\n".join(f"a hand-made template number {i} for a {{}}." for i in range(60))
    state = {item.key: item.default for item in fields} | {"templates_a": "custom", "own_templates_a": own,
                                                          "templates_b": "imagenet80"}
    params = links.write_link(state, fields)
    assert params["templates_a"] == "custom" and params["templates_b"] == "imagenet80"
    assert params["own_templates_a"].startswith("@")  # too long for a URL: kept on the server
    read = links.read_link(params, fields)
    assert read.ignored == [] and read.values == {"templates_a": "custom", "own_templates_a": own,
                                                  "templates_b": "imagenet80"}
    bad = links.read_link({"templates_b": "fancy"}, fields)
    assert bad.values == {} and "templates_b" in bad.ignored[0] and "not one of" in bad.ignored[0]
    assert {"templates_a", "own_templates_b"} <= set(links.param_parts())


# -- the figure and its command ---------------------------------------------------------------------
@needs_builtin
def test_the_figure_encodes_each_set_through_its_templates_and_says_so(library):
    gallery, encoder, presets = library["gallery"], library["encoder"], library["presets"]
    texts_a, texts_b = presets["Gallery object names"], presets["Gallery styles"]
    photo = prompts.TemplateChoice("photo")
    result = fg.compare(gallery, encoder, ["#5"], ["A", "iti"], texts_a, texts_b, 4, templates=(photo, prompts.AS_TYPED))
    assert "Anchors A encoded as 'a photo of a {}.'; B as typed (no template)" in result.settings.lines()
    anchors = [direct_mean(encoder, texts_a, photo.templates), encoder.encode_texts(list(texts_b))]
    geometry = ex.ExplorerGeometry(gallery.embeddings, anchors, [texts_a, texts_b], ex.GeometrySpec())
    iti = ex.baseline_index("iti", gallery.embeddings, torch.cat(anchors))
    for table, index, value in ((result.tables[0][0], geometry.index_at(1.0), "divergence"),
                                (result.tables[0][1], iti, "similarity")):
        assert_same_ranking((table[value], table.gallery_id), ex.search_one(index, gallery.embeddings[5], 8, exclude=5),
                            rtol=1e-4, atol=1e-5, higher_is_closer=value == "similarity", context=value)
    as_typed = fg.compare(gallery, encoder, ["#5"], ["A"], texts_a, texts_b, 4)
    assert "Anchor texts encoded as typed (no template)" in as_typed.settings.lines()
    assert not np.allclose(as_typed.tables[0][0].divergence, result.tables[0][0].divergence)


@needs_builtin
def test_the_command_takes_templates_and_writes_them_under_the_figure(library, tmp_path, capsys):
    own = tmp_path / "templates.txt"
    own.write_text("a sketch of a {}.\n{} in watercolor\n")
    out = tmp_path / "figure.svg"
    code = main(["figure", "--queries", "#3", "--geometries", "A", "B", "-k", "2", "--templates", "photo",
                 "--templates-b", str(own), *WORLD, "--out", str(out)])
    error = capsys.readouterr().err
    assert code == 0, error
    assert "anchors B: 100%" in error and "anchors A" not in error  # a bar for a set through several templates
    drawn = " ".join(ElementTree.fromstring(out.read_bytes()).itertext())
    assert "Anchors A encoded as 'a photo of a {}.'; B as the mean of 2 own templates" in drawn


@pytest.mark.parametrize("value, message", [
    ("missing.txt", "--templates 'missing.txt' does not exist or is not a file; give one of auto, none, photo"),
    ("<no-slot>", "template 1 ('a photo') has 0 {}"),
])
def test_bad_templates_are_one_line_before_loading_a_model(value, message, tmp_path, monkeypatch, capsys):
    (tmp_path / "bad.txt").write_text("a photo\n")
    monkeypatch.setattr("anchordiv.encoders.load_encoder",
                        tripwire("a model was loaded before the templates were checked"))
    value = str(tmp_path / "bad.txt") if value == "<no-slot>" else value
    assert main(["figure", "--queries", "#0", "--geometries", "A", "--templates", value,
                 "--out", str(tmp_path / "fig.png")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("anchordiv figure: ") and error.count("\n") == 1 and message in error, error


# -- the explorer -----------------------------------------------------------------------------------
@needs_builtin
def test_the_explorer_encodes_each_set_through_the_chosen_templates(library):
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py"), default_timeout=240)
    app.session_state["neighbour_table_open"] = True  # the neighbour table's expander open: the test reads it
    app.run()
    assert not app.exception, app.exception
    gallery, encoder, presets = library["gallery"], library["encoder"], library["presets"]
    texts_a, texts_b = presets["Gallery object names"], presets["Gallery styles"]
    captions = lambda: " ".join(plain(str(caption.value)) for caption in app.caption)  # noqa: E731
    table = lambda: next(frame.value for frame in app.dataframe if "method" in frame.value.columns)  # noqa: E731
    assert f"{len(texts_a)} anchors in use · encoded as typed (no template)" in captions()
    as_typed = table()
    app.selectbox(key="templates_a").set_value("photo").run()
    assert not app.exception and not app.error
    assert f"{len(texts_a)} anchors in use · encoded as 'a photo of a {{}}.'" in captions()
    assert app.query_params["templates_a"] == "photo"
    shown = table().loc[lambda frame: frame["method"] == "anchor divergence"]
    geometry = ex.ExplorerGeometry(gallery.embeddings, [direct_mean(encoder, texts_a, [prompts.PHOTO_TEMPLATE]),
                                                        encoder.encode_texts(list(texts_b))],
                                   [texts_a, texts_b], ex.GeometrySpec())
    query = ex.default_query_id(gallery)
    assert_same_ranking((shown["divergence"], shown["gallery_id"]),
                        ex.search_one(geometry.index_at(0.5), gallery.embeddings[query], 20, exclude=query),
                        rtol=1e-4, atol=1e-5, higher_is_closer=False, context="photo")
    assert not np.allclose(shown["divergence"], as_typed.loc[as_typed["method"] == "anchor divergence", "divergence"])
    # own templates: a bad one is a message beside them, the page keeps the rest
    app.selectbox(key="templates_b").set_value("custom").run()
    app.text_area(key="own_templates_b").set_value("no slot").run()
    assert not app.exception and "has 0 {}" in " ".join(plain(str(error.value)) for error in app.error)
    app.text_area(key="own_templates_b").set_value("{} style\na {} picture").run()
    assert not app.exception and not app.error
    assert "encoded as the mean of 2 own templates ('{} style', 'a {} picture')" in captions()
    # the Compare page encodes the same way and writes it under its figure
    app.switch_page("views/compare.py").run()
    assert not app.exception and not app.error
    assert "Anchors A encoded as 'a photo of a {}.'; B as the mean of 2 own templates" in captions()
