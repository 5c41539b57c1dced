"""The sidebar's choices as one frozen value (anchordiv.explorer.sidebar_state), read from widget values
by their keys, with every default declared once."""
from __future__ import annotations

import dataclasses

import pytest

from anchordiv.explorer import WEIGHTING_HELP, GeometrySpec
from anchordiv.explorer.settings import (BUILTIN, CHECKPOINT, FOLDER, FORWARD, HUB, PRETRAINED, REVERSE, SETTINGS,
                                         STORE, WORLD)
from anchordiv.explorer.sidebar_state import SidebarState, read_sidebar
from anchordiv.lesson import TOY_WEIGHTING_HELP
from anchordiv.models.mixture import WEIGHTINGS


def test_no_values_read_as_the_defaults_and_the_geometrys_are_geometry_specs_own():
    state = read_sidebar({}, allow_any_path=False)
    assert state == SidebarState()
    assert state.geometry == GeometrySpec()
    assert state.gallery.kind == WORLD and state.gallery.path is None
    assert state.encoder.kind == BUILTIN and state.encoder.spec.model == "builtin"
    spec = GeometrySpec()
    assert (SETTINGS["anchor_model"].default, SETTINGS["scale"].default, SETTINGS["n_components"].default,
            SETTINGS["rank"].default, SETTINGS["alpha"].default) == (
        spec.kind, spec.scale, spec.n_components, spec.rank, spec.alpha)
    assert SETTINGS["direction"].default == FORWARD and not spec.reverse
    assert state.settings.top_k == SETTINGS["top_k"].default and state.settings.show_iti is False


def test_the_state_is_frozen():
    state = read_sidebar({}, allow_any_path=False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.geometry = GeometrySpec(scale=3.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.settings.top_k = 3


VALUES = {"scale": 22.0, "n_components": 3, "rank": 4, "alpha": 2.5, "direction": REVERSE,
          "top_k": 7, "show_iti": True, "prior_anchors": "dog\ncat"}


@pytest.mark.parametrize("kind, taken", [
    ("gmm", {"n_components": 3}), ("latent-gaussian", {"rank": 4}), ("posterior-softmax", {"alpha": 2.5}),
    ("softmax", {})])
def test_the_geometry_takes_the_settings_its_anchor_model_uses_and_the_defaults_for_the_rest(kind, taken):
    """A hidden widget keeps its value (for when its anchor model is chosen again), but the
    geometry of another model reads that setting as its default."""
    state = read_sidebar({"anchor_model": kind, **VALUES}, allow_any_path=False)
    assert state.geometry == GeometrySpec(kind=kind, scale=22.0, reverse=True, **taken)
    assert (state.settings.top_k, state.settings.show_iti) == (7, True)
    assert state.settings.prior_anchors == ("dog\ncat" if kind.startswith("posterior") else "")


def test_each_value_is_typed_as_its_row_says():
    """A whole number, a number and a flag as their rows type them, whatever the widget handed over."""
    import numpy as np

    state = read_sidebar({"top_k": np.int64(7), "scale": 22, "show_iti": np.bool_(True)}, allow_any_path=False)
    assert [type(value) for value in (state.settings.top_k, state.settings.scale, state.settings.show_iti)] == [
        int, float, bool]


def test_an_unknown_anchor_model_is_refused():
    with pytest.raises(ValueError):
        read_sidebar({"anchor_model": "no-such-model"}, allow_any_path=False)


@pytest.mark.parametrize("allow_any_path", [False, True])
def test_the_gallery_is_read_from_the_menus_or_from_typed_paths(allow_any_path):
    values = {"gallery_kind": FOLDER, "folder_choice": "/menu/photos", "folder_labels_choice": "/menu/labels.csv",
              "folder_path": "/typed/photos", "folder_labels": "", "store_choice": "/menu/store", "store_path": ""}
    folder = read_sidebar(values, allow_any_path).gallery
    store = read_sidebar(values | {"gallery_kind": STORE}, allow_any_path).gallery
    if allow_any_path:
        assert (folder.path, folder.labels_csv, store.path) == ("/typed/photos", None, None)
    else:
        assert (folder.path, folder.labels_csv, store.path) == ("/menu/photos", "/menu/labels.csv", "/menu/store")
    assert read_sidebar(values | {"gallery_kind": WORLD}, allow_any_path).gallery.path is None


def test_the_encoder_choice_gives_its_spec_its_link_values_or_what_is_wrong():
    pretrained = read_sidebar({"encoder_kind": PRETRAINED, "openclip_pretrained": "ViT-B-32/laion2b_s34b_b79k"},
                              False).encoder
    assert pretrained.link_values() == ("open_clip:ViT-B-32", "laion2b_s34b_b79k")
    hub = read_sidebar({"encoder_kind": HUB, "hub_repo": "  timm/ViT-B-16-SigLIP "}, False).encoder
    assert hub.spec.model == "open_clip:hf-hub:timm/ViT-B-16-SigLIP" and not hub.problem
    bad = read_sidebar({"encoder_kind": HUB, "hub_repo": "a/b/c"}, False).encoder
    assert bad.spec is None and "ORG/REPO" in bad.problem and bad.link_values() == ("builtin", "")
    checkpoint = read_sidebar({"encoder_kind": CHECKPOINT, "openclip_arch": " RN50 ", "checkpoint_choice": "/w.pt"},
                              False).encoder
    assert (checkpoint.spec, checkpoint.name, checkpoint.checkpoint) == (None, "RN50", "/w.pt")
    assert checkpoint.link_values() == ("open_clip:RN50", "")  # a link names no file
    assert read_sidebar({"encoder_kind": HUB}, False).encoder.spec is None  # nothing typed yet


def test_the_weightings_offered_are_the_mixtures():
    assert set(WEIGHTING_HELP) == set(WEIGHTINGS) and set(TOY_WEIGHTING_HELP) <= set(WEIGHTINGS)
