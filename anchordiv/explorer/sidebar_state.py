"""The sidebar's choices as one typed, frozen value: which gallery, which encoder, which geometry.

The explorer draws its sidebar once per run (in its entry file) and reads the widgets' values with
:func:`read_sidebar` into a :class:`SidebarState`, which every page receives; the pages never read
those widgets' keys themselves. Each value and its default is its row's of
:data:`~.settings.SETTINGS` (the geometry's defaults are :class:`~.geometry.GeometrySpec`'s own),
and a setting the chosen anchor model does not take (the GMM's component count under another
model, whose hidden widget keeps its value for later) reads as its default. Nothing here imports
Streamlit.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..encoders import ModelSpec, parse_model_spec
from ..models import anchor_model_kind
from .geometry import GeometrySpec
from .settings import (BUILTIN, CHECKPOINT, FOLDER, HUB, PRETRAINED, REVERSE, SETTINGS, SIDEBAR_PARTS, STORE, WORLD,
                       part_values)


@dataclass(frozen=True)
class GalleryChoice:
    """The gallery the sidebar names.

    ``kind`` is :data:`~.settings.WORLD`, :data:`~.settings.FOLDER` or :data:`~.settings.STORE`;
    ``path`` the image folder or the store's folder as chosen (``None``: not chosen yet, and always
    for the world); ``labels_csv`` an image folder's labels file, if any.
    """

    kind: str = WORLD
    path: str | None = None
    labels_csv: str | None = None


@dataclass(frozen=True)
class EncoderChoice:
    """The encoder (the image and text model) the sidebar names.

    ``kind`` is one of :data:`~.settings.BUILTIN`, :data:`~.settings.PRETRAINED`,
    :data:`~.settings.HUB`, :data:`~.settings.CHECKPOINT`; ``name`` the catalog token
    ``ARCH/TAG``, the hub repository ``ORG/REPO`` or the open_clip architecture, as chosen or typed
    (stripped of surrounding spaces); ``checkpoint`` the checkpoint file of
    :data:`~.settings.CHECKPOINT` (``None``: not chosen). ``spec`` is the choice as a model spec:
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
        if self.kind == CHECKPOINT and self.name:
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


def default_settings() -> Any:
    """Every setting of the sidebar at its default (:func:`~.settings.part_values`)."""
    return part_values(SIDEBAR_PARTS, {})


@dataclass(frozen=True)
class SidebarState:
    """Everything the sidebar sets, for one run of a page.

    ``gallery`` and ``encoder`` say what to open; ``geometry`` how to rank (its anchor model,
    scale, settings and direction); ``settings`` every setting of the sidebar, typed, by its key
    in :data:`~.settings.SETTINGS` (``settings.top_k``: how many neighbours a page shows;
    ``settings.show_iti``: whether the Explore page adds the image → text → image baseline;
    ``settings.prior_anchors``: the prior anchor set of the posterior anchor models, as typed), a
    setting the anchor model does not take at its default.
    """

    gallery: GalleryChoice = GalleryChoice()
    encoder: EncoderChoice = EncoderChoice()
    geometry: GeometrySpec = GeometrySpec()
    settings: Any = field(default_factory=default_settings)


# The sidebar's settings that only some anchor models take (by their key, which is the
# GeometrySpec's field they set, but for the prior set, which a spec does not hold).
MODEL_SETTINGS = ("n_components", "rank", "prior_anchors", "alpha")


def model_settings(name: str) -> tuple[str, ...]:
    """Those of :data:`MODEL_SETTINGS` that anchor model ``name`` takes: the sidebar draws them,
    and :func:`read_sidebar` reads them (the others read as their defaults)."""
    kind = anchor_model_kind(name)
    used = {"n_components": "n_components" in kind.defaults, "rank": "rank" in kind.defaults,
            "prior_anchors": kind.needs_prior, "alpha": kind.needs_prior}
    return tuple(key for key in MODEL_SETTINGS if used[key])


def read_sidebar(values: Mapping[str, Any], allow_any_path: bool) -> SidebarState:
    """The :class:`SidebarState` that the widget values ``values`` (by their keys of
    :data:`~.settings.SETTINGS`) give; ``allow_any_path``: whether paths are typed (a local
    session) or chosen from the data roots' menus. ``ValueError`` for a value the geometry refuses."""
    kind = anchor_model_kind(values.get("anchor_model", SETTINGS["anchor_model"].default))
    hidden = set(MODEL_SETTINGS) - set(model_settings(kind.name))  # kept by their hidden widgets
    settings = part_values(SIDEBAR_PARTS, {key: value for key, value in values.items() if key not in hidden})
    return SidebarState(
        gallery=gallery_choice(settings, allow_any_path), encoder=encoder_choice(settings, allow_any_path),
        geometry=GeometrySpec(kind=kind.name, scale=settings.scale, n_components=settings.n_components,
                              rank=settings.rank, alpha=settings.alpha, reverse=settings.direction == REVERSE),
        settings=settings)


def gallery_choice(settings: Any, allow_any_path: bool) -> GalleryChoice:
    """The gallery the sidebar's ``settings`` name: typed paths, or the data roots' menus."""
    kind = settings.gallery_kind
    if kind == STORE:
        return GalleryChoice(kind, (settings.store_path if allow_any_path else settings.store_choice) or None)
    if kind == FOLDER:
        folder, labels = ((settings.folder_path, settings.folder_labels) if allow_any_path
                          else (settings.folder_choice, settings.folder_labels_choice))
        return GalleryChoice(kind, folder or None, labels or None)
    return GalleryChoice(kind)


# The setting that names an encoder of each kind (the menu entry, the hub repository, the architecture).
ENCODER_NAMES = {PRETRAINED: "openclip_pretrained", HUB: "hub_repo", CHECKPOINT: "openclip_arch"}


def encoder_choice(settings: Any, allow_any_path: bool) -> EncoderChoice:
    """The encoder the sidebar's ``settings`` name, as a spec, or what is wrong with the name typed."""
    kind, checkpoint = settings.encoder_kind, None
    name = (getattr(settings, ENCODER_NAMES[kind]) or "").strip() if kind in ENCODER_NAMES else ""
    if kind == CHECKPOINT:
        checkpoint = (settings.openclip_checkpoint if allow_any_path else settings.checkpoint_choice) or None
    try:
        return EncoderChoice(kind, name, checkpoint, named_spec(kind, name))
    except ValueError as error:
        return EncoderChoice(kind, name, checkpoint, None, str(error))
