"""The sidebar's choices as one typed, frozen value: which gallery, which encoder, which geometry.

The explorer draws its sidebar once per run (in its entry file) and reads the widgets' values with
:func:`read_sidebar` into a :class:`SidebarState`, which every page receives; the pages never read
those widgets' keys themselves. Each value's default is :data:`~.page_state.SETTINGS`' (the
geometry's are :class:`~.geometry.GeometrySpec`'s own), and a setting the chosen anchor model does
not take (the GMM's component count under another model, whose hidden widget keeps its value for
later) reads as its default. Nothing here imports Streamlit.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..encoders import ModelSpec, parse_model_spec
from ..models import anchor_model_kind
from .geometry import GeometrySpec
from .page_state import BUILTIN, DIRECTIONS, FOLDER, HUB, OPEN_CLIP, PRETRAINED, SETTINGS, STORE, WORLD


@dataclass(frozen=True)
class GalleryChoice:
    """The gallery the sidebar names.

    ``kind`` is :data:`~.page_state.WORLD`, :data:`~.page_state.FOLDER` or :data:`~.page_state.STORE`;
    ``path`` the image folder or the store's folder as chosen (``None``: not chosen yet, and always
    for the world); ``labels_csv`` an image folder's labels file, if any.
    """

    kind: str = WORLD
    path: str | None = None
    labels_csv: str | None = None


@dataclass(frozen=True)
class EncoderChoice:
    """The encoder (the image and text model) the sidebar names.

    ``kind`` is one of :data:`~.page_state.BUILTIN`, :data:`~.page_state.PRETRAINED`,
    :data:`~.page_state.HUB`, :data:`~.page_state.OPEN_CLIP`; ``name`` the catalog token
    ``ARCH/TAG``, the hub repository ``ORG/REPO`` or the open_clip architecture, as chosen or typed
    (stripped of surrounding spaces); ``checkpoint`` the checkpoint file of
    :data:`~.page_state.OPEN_CLIP` (``None``: not chosen). ``spec`` is the choice as a model spec:
    ``None`` for a checkpoint file (a path, which no spec string carries), while nothing is chosen,
    or when ``name`` is not one, which ``problem`` then says.
    """

    kind: str = BUILTIN
    name: str = ""
    checkpoint: str | None = None
    spec: ModelSpec | None = parse_model_spec("builtin")
    problem: str = ""

    def link_values(self) -> tuple[str, str]:
        """What a link carries of this choice: the spec string and its pretrained tag; for a
        checkpoint file its architecture alone (a link names no file)."""
        if self.spec is not None:
            return self.spec.model, self.spec.pretrained or ""
        if self.kind == OPEN_CLIP and self.name:
            return f"open_clip:{self.name}", ""
        return "builtin", ""


def named_spec(kind: str, name: str) -> ModelSpec | None:
    """The spec an encoder menu entry ``kind`` and its ``name`` give (see :class:`EncoderChoice`);
    ``ValueError`` for a malformed hub repository."""
    if kind == BUILTIN:
        return parse_model_spec("builtin")
    if kind == PRETRAINED and name:
        arch, tag = name.rsplit("/", 1)
        return parse_model_spec(f"open_clip:{arch}", tag)
    if kind == HUB and name:
        return parse_model_spec(f"open_clip:hf-hub:{name}")
    return None


@dataclass(frozen=True)
class SidebarState:
    """Everything the sidebar sets, for one run of a page.

    ``gallery`` and ``encoder`` say what to open; ``geometry`` how to rank (its anchor model,
    scale, settings and direction); ``prior_text`` the prior anchor set of the posterior anchor
    models, as typed; ``top_k`` how many neighbours a page shows; ``show_iti`` whether the Explore
    page adds the image → text → image baseline.
    """

    gallery: GalleryChoice = GalleryChoice()
    encoder: EncoderChoice = EncoderChoice()
    geometry: GeometrySpec = GeometrySpec()
    prior_text: str = ""
    top_k: int = SETTINGS["top_k"].default
    show_iti: bool = SETTINGS["show_iti"].default


# The sidebar's settings that only some anchor models take (by their SETTINGS key).
MODEL_SETTINGS = ("gmm_components", "latent_rank", "prior_anchors", "alpha")


def model_settings(name: str) -> tuple[str, ...]:
    """Those of :data:`MODEL_SETTINGS` that anchor model ``name`` takes: the sidebar draws them,
    and :func:`read_sidebar` reads them (the others read as their defaults)."""
    kind = anchor_model_kind(name)
    used = {"gmm_components": "n_components" in kind.defaults, "latent_rank": "rank" in kind.defaults,
            "prior_anchors": kind.needs_prior, "alpha": kind.needs_prior}
    return tuple(key for key in MODEL_SETTINGS if used[key])


def read_sidebar(values: Mapping[str, Any], allow_any_path: bool) -> SidebarState:
    """The :class:`SidebarState` that the widget values ``values`` (by their keys of
    :data:`~.page_state.SETTINGS`) give; ``allow_any_path``: whether paths are typed (a local
    session) or chosen from the data roots' menus. ``ValueError`` for a value the geometry refuses."""
    kind = anchor_model_kind(values.get("anchor_model", SETTINGS["anchor_model"].default))
    hidden = set(MODEL_SETTINGS) - set(model_settings(kind.name))  # kept by their hidden widgets

    def value(key: str) -> Any:
        return SETTINGS[key].default if key in hidden else values.get(key, SETTINGS[key].default)

    return SidebarState(
        gallery=gallery_choice(value, allow_any_path), encoder=encoder_choice(value, allow_any_path),
        geometry=GeometrySpec(kind=kind.name, scale=float(value("scale")),
                              n_components=int(value("gmm_components")), rank=int(value("latent_rank")),
                              alpha=float(value("alpha")), reverse=value("direction") == DIRECTIONS["reverse"]),
        prior_text=value("prior_anchors"), top_k=int(value("top_k")), show_iti=bool(value("show_iti")))


def gallery_choice(value, allow_any_path: bool) -> GalleryChoice:
    kind = value("gallery_source")
    if kind == STORE:
        return GalleryChoice(kind, value("store_path" if allow_any_path else "store_choice") or None)
    if kind == FOLDER:
        folder, labels = ("folder_path", "folder_labels") if allow_any_path else ("folder_choice", "folder_labels_choice")
        return GalleryChoice(kind, value(folder) or None, value(labels) or None)
    return GalleryChoice(kind)


def encoder_choice(value, allow_any_path: bool) -> EncoderChoice:
    kind, checkpoint = value("encoder_source"), None
    name = {PRETRAINED: "openclip_pretrained", HUB: "hub_repo", OPEN_CLIP: "openclip_arch"}.get(kind)
    name = (value(name) or "").strip() if name else ""
    if kind == OPEN_CLIP:
        checkpoint = value("openclip_checkpoint" if allow_any_path else "checkpoint_choice") or None
    try:
        return EncoderChoice(kind, name, checkpoint, named_spec(kind, name))
    except ValueError as error:
        return EncoderChoice(kind, name, checkpoint, None, str(error))
