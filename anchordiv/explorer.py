"""Plain helpers behind the Streamlit explorer (``app/streamlit_app.py``).

The app is a thin front end: every computation it shows is a call into this module (or
:mod:`anchordiv.explain`, :mod:`anchordiv.projection`) with plain arguments. Nothing here imports
Streamlit. The pieces:

* anchor text handling: :func:`parse_anchor_text` (strip, dedupe, cap) and :func:`anchor_presets`;
* galleries: :class:`Gallery` from the built-in emoji world (:func:`world_gallery`, embeddings
  cached on disk) or from a folder of images (:func:`folder_gallery`);
* geometries: :class:`GeometrySpec` names an anchor model; :class:`ExplorerGeometry` fits it to
  the two anchor sets A and B, indexes the gallery once and hands out *per-request* copies at any
  weight ``p`` (:meth:`ExplorerGeometry.index_at`), so a shared, cached geometry is never mutated;
* results: :func:`neighbour_table`, :func:`agreement`, :func:`p_sweep`, :func:`grid_png`.
"""
from __future__ import annotations

import copy
import hashlib
import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd
import torch
from PIL import Image, ImageDraw

from .models import (
    AnchorModel,
    EmpiricalAnchors,
    GaussianAnchors,
    GaussianMixtureAnchors,
    LatentEmpiricalAnchors,
    LatentGaussianAnchors,
    MixtureAnchors,
    posterior_empirical,
    posterior_gaussian,
)
from .search import AnchorIndex, CosineIndex, ITIIndex

# More anchors than this are cut off (with a note): the text encoder's cost grows linearly and
# 5,000 is already far beyond what a person types or a preset holds.
MAX_ANCHORS = 5000
# Ridge used when a Gaussian model gets a single anchor (Ledoit–Wolf needs two): Sigma = ridge * I.
SINGLE_ANCHOR_RIDGE = 0.01

ProgressCallback = Callable[[float, str], None]


# -- anchor text -------------------------------------------------------------------------------
@dataclass(frozen=True)
class AnchorText:
    """Anchors parsed from a text area: one per line, stripped, first occurrence kept.

    ``anchors`` are the texts in use; ``blank_lines``, ``duplicates`` and ``truncated`` count what
    was dropped, so the app can say so.
    """

    anchors: tuple[str, ...]
    blank_lines: int = 0
    duplicates: int = 0
    truncated: int = 0

    def __len__(self) -> int:
        return len(self.anchors)

    def summary(self) -> str:
        """E.g. ``"12 anchors in use (2 duplicates, 1 blank line ignored)"``."""
        count = f"{len(self.anchors):,} anchor{'s' * (len(self.anchors) != 1)} in use"
        dropped = []
        if self.duplicates:
            dropped.append(f"{self.duplicates} duplicate{'s' * (self.duplicates != 1)}")
        if self.blank_lines:
            dropped.append(f"{self.blank_lines} blank line{'s' * (self.blank_lines != 1)}")
        if self.truncated:
            dropped.append(f"{self.truncated:,} beyond the {MAX_ANCHORS:,}-anchor limit")
        return count + (f" ({', '.join(dropped)} ignored)" if dropped else "")


def parse_anchor_text(text: str | None, max_anchors: int = MAX_ANCHORS) -> AnchorText:
    """One anchor per line of ``text``; blank lines and repeats (after stripping) are dropped,
    and anything past ``max_anchors`` is cut off. Order is kept."""
    seen: dict[str, None] = {}
    blank = duplicates = 0
    for line in (text or "").splitlines():
        anchor = " ".join(line.split())  # also collapses inner runs of whitespace
        if not anchor:
            blank += 1
        elif anchor in seen:
            duplicates += 1
        else:
            seen[anchor] = None
    anchors = tuple(seen)
    return AnchorText(anchors[:max_anchors], blank, duplicates, max(0, len(anchors) - max_anchors))


DOG_BREEDS = ("husky", "golden retriever", "labrador retriever", "german shepherd", "beagle", "poodle",
              "bulldog", "dachshund", "corgi", "border collie", "chihuahua", "pug", "dalmatian",
              "shiba inu", "rottweiler", "boxer", "great dane", "samoyed")
BACKGROUNDS = ("snow", "grass", "beach", "forest", "city street", "living room", "desert", "water",
               "mountains", "a white background", "a black background", "night sky")
CLOTHING = ("a sweater", "a raincoat", "a scarf", "a hat", "sunglasses", "a bandana", "a costume",
            "a collar", "a jacket", "boots", "a t-shirt", "a dress")
# The CheXpert observations of the paper's Table 2 (CheXpert's 14 labels, "No Finding" included).
CHEXPERT_PATHOLOGIES = ("No Finding", "Enlarged Cardiomediastinum", "Cardiomegaly", "Lung Opacity",
                        "Lung Lesion", "Edema", "Consolidation", "Pneumonia", "Atelectasis",
                        "Pneumothorax", "Pleural Effusion", "Pleural Other", "Fracture", "Support Devices")
ANIMALS = ("dog", "cat", "horse", "cow", "pig", "bird", "fish", "rabbit", "mouse", "lion", "tiger",
           "bear", "monkey", "elephant", "frog", "snake", "turtle", "whale", "octopus", "butterfly")
FOOD = ("apple", "banana", "pizza", "hamburger", "bread", "cheese", "cake", "ice cream", "sushi",
        "noodles", "rice", "carrot", "grapes", "strawberry", "coffee", "tea", "taco", "egg")
VEHICLES = ("car", "bus", "truck", "bicycle", "motorcycle", "train", "airplane", "helicopter",
            "ship", "sailboat", "rocket", "taxi", "police car", "ambulance", "fire engine", "tram")
GENERIC_STYLES = ("a photo", "a sketch", "a painting", "a cartoon", "pixel art", "a watercolor painting",
                  "an oil painting", "neon on black", "a 3d render", "an origami")

# Gallery subcategory prefixes whose object names make up the themed presets.
_THEMES = {"Animals": ("animal-",), "Food": ("food-", "drink"), "Vehicles": ("transport-",)}


def anchor_presets(gallery: "Gallery | None" = None) -> dict[str, tuple[str, ...]]:
    """Named anchor lists for the explorer's preset menus.

    From the gallery (when it has the labels): its object names, its styles, and its animals,
    food and vehicles (by emoji subcategory); otherwise generic lists. Always: the paper's
    examples (dog breeds, backgrounds, clothing, the CheXpert pathologies of Table 2).
    """
    presets: dict[str, tuple[str, ...]] = {}
    labels = gallery.labels if gallery is not None else None
    if gallery is not None:
        names = labels[gallery.name_column].dropna().astype(str)
        presets["Gallery object names"] = tuple(dict.fromkeys(names))
        if gallery.style_column is not None:
            presets["Gallery styles"] = tuple(dict.fromkeys(labels[gallery.style_column].dropna().astype(str)))
    presets.setdefault("Gallery styles", GENERIC_STYLES)
    for theme, fallback in (("Animals", ANIMALS), ("Food", FOOD), ("Vehicles", VEHICLES)):
        themed: tuple[str, ...] = ()
        if labels is not None and "subcategory" in labels.columns:
            rows = labels["subcategory"].astype(str).str.startswith(_THEMES[theme])
            themed = tuple(dict.fromkeys(labels.loc[rows, gallery.name_column].astype(str)))
        presets[theme] = themed or fallback
    presets["Paper: dog breeds"] = DOG_BREEDS
    presets["Paper: backgrounds"] = BACKGROUNDS
    presets["Paper: clothing"] = CLOTHING
    presets["Paper: CheXpert pathologies (Table 2)"] = CHEXPERT_PATHOLOGIES
    return presets


# -- galleries ---------------------------------------------------------------------------------
@dataclass
class Gallery:
    """Image embeddings with labels and a way to show each image.

    ``embeddings`` ``(G, d)`` float32 CPU tensor, unit rows; ``labels`` has ``G`` rows.
    ``object_column`` / ``style_column`` say which label columns define "same object" and
    "same style" (``style_column`` may be ``None``); ``name_column`` is shown to people.
    ``key`` identifies the content (encoder and data), for cache keys. ``skipped`` lists
    ``(path, reason)`` for files that could not be read.
    """

    embeddings: torch.Tensor
    labels: pd.DataFrame
    load: Callable[[int], Image.Image]
    object_column: str
    name_column: str
    style_column: str | None
    key: str
    description: str
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.embeddings.shape[0])

    def image(self, item: int) -> Image.Image:
        """Gallery image ``item`` as RGB PIL."""
        return self.load(int(item))

    def caption(self, item: int) -> str:
        """``"name · style"`` (style when known) for image ``item``."""
        row = self.labels.iloc[int(item)]
        name = str(row[self.name_column])
        return f"{name} · {row[self.style_column]}" if self.style_column else name

    def find(self, text: str, limit: int = 200) -> list[int]:
        """Gallery ids whose caption contains ``text`` (case-insensitive), at most ``limit``."""
        needle = text.strip().lower()
        captions = self.labels[self.name_column].astype(str).str.lower()
        if self.style_column:
            captions = captions + " · " + self.labels[self.style_column].astype(str).str.lower()
        hits = np.flatnonzero(captions.str.contains(needle, regex=False).to_numpy())
        return hits[:limit].tolist()


def _encode_in_chunks(encoder, images: Sequence[Image.Image] | Callable[[int], Image.Image], count: int,
                      progress: ProgressCallback | None, chunk: int = 512) -> np.ndarray:
    """``(count, d)`` float32 embeddings of ``images(i)``, reporting progress per chunk."""
    parts = []
    for start in range(0, count, chunk):
        stop = min(start + chunk, count)
        parts.append(encoder.encode_images([images(i) for i in range(start, stop)]).numpy())
        if progress is not None:
            progress(stop / count, f"Embedding the gallery: {stop:,} / {count:,} images")
    return np.concatenate(parts) if parts else np.zeros((0, encoder.dim), np.float32)


def world_gallery(encoder, split: str = "all", limit: int | None = None,
                  progress: ProgressCallback | None = None) -> Gallery:
    """The built-in emoji world (``split`` "all", "train" or "heldout"), first ``limit`` images,
    embedded with ``encoder``. Embeddings are cached on disk by encoder name and data digest, so
    only the first start on a machine encodes images."""
    from .cache import cache_dir, cached_array
    from .datasets import load_emoji_world
    from .datasets.styles import RENDERER_VERSION

    world = load_emoji_world(split)
    count = len(world) if limit is None else max(1, min(int(limit), len(world)))
    array = world.array[:count]
    labels = world.labels.iloc[:count].reset_index(drop=True)
    key = f"world|{encoder.name}|{world.digest}|renderer={RENDERER_VERSION}|{split}|{count}"
    name = hashlib.sha256(key.encode()).hexdigest()[:20]
    path = cache_dir() / "explorer" / f"world-{name}.npy"

    def load(item: int) -> Image.Image:
        return Image.fromarray(np.asarray(array[item]), "RGB")

    vectors = cached_array(path, key, lambda: _encode_in_chunks(encoder, load, count, progress))
    return Gallery(
        embeddings=torch.from_numpy(np.array(vectors, dtype=np.float32)), labels=labels, load=load,
        object_column="emoji_id", name_column="name", style_column="style", key=key,
        description=f"Emoji world ({split}, {count:,} images)",
    )


def folder_gallery(folder: str | os.PathLike, encoder, labels_csv: str | os.PathLike | None = None) -> Gallery:
    """A folder of images (subfolders are object labels; a CSV may add columns, e.g. ``style``),
    embedded with ``encoder`` through :func:`anchordiv.embeddings.embed_folder` and its cache.
    Raises ``ValueError`` for a missing folder or one with no readable image."""
    from .embeddings import embed_folder
    from .images import load_image

    root = Path(folder).expanduser()
    embedded = embed_folder(root, encoder, labels_csv=labels_csv, progress=False)
    if len(embedded.paths) == 0:
        reasons = "; ".join(f"{path}: {reason}" for path, reason in embedded.skipped[:3])
        raise ValueError(f"no readable image in {str(folder)!r}" + (f" (skipped {reasons})" if reasons else ""))
    labels = embedded.labels.copy()
    labels["label"] = labels["label"].fillna("(top folder)")
    paths = list(embedded.paths)
    style = "style" if "style" in labels.columns else None
    key = f"folder|{embedded.encoder_name}|{embedded.cache_path.name}|{len(paths)}|" + hashlib.sha256(
        "\n".join(paths).encode()).hexdigest()[:16]
    return Gallery(
        embeddings=embedded.embeddings, labels=labels, load=lambda item: load_image(root / paths[item], name=paths[item]),
        object_column="label", name_column="label", style_column=style, key=key,
        description=f"{root} ({len(paths):,} images)", skipped=list(embedded.skipped),
    )


def query_image_from_upload(data: bytes, name: str = "upload") -> Image.Image:
    """An uploaded query image (PNG, JPEG or WebP) as RGB PIL; ``ImageLoadError`` (a ``ValueError``)
    with a message for the user for anything else, corrupt or truncated files included."""
    from .images import ImageLoadError, load_image

    image = load_image(data, name=name)  # refuses non-images, damaged data, oversized files
    with Image.open(io.BytesIO(data)) as header:
        if header.format not in ("PNG", "JPEG", "WEBP"):
            raise ImageLoadError(name, f"{header.format} images are not accepted as queries; upload a PNG, JPEG or WebP")
    return image


# -- geometries --------------------------------------------------------------------------------
MODEL_KINDS: dict[str, str] = {
    "softmax": "Softmax (empirical): mass on each anchor",
    "gaussian": "Gaussian (Ledoit–Wolf shrunk covariance)",
    "gmm": "Gaussian mixture (EM)",
    "latent-softmax": "Latent softmax (top principal subspace)",
    "latent-gaussian": "Latent Gaussian (probabilistic PCA)",
    "posterior-softmax": "Posterior softmax (Dirichlet process over a prior set)",
    "posterior-gaussian": "Posterior Gaussian (Normal–inverse-Wishart over a prior set)",
}


@dataclass(frozen=True)
class GeometrySpec:
    """Which anchor model to fit to each anchor set, and how to rank.

    ``kind`` is a key of :data:`MODEL_KINDS`; ``scale`` the logit scale ``s`` in ``eta = s x``;
    ``n_components`` for "gmm"; ``rank`` for the latent models; ``alpha`` the prior's weight for
    the posterior models; ``reverse`` ranks by ``KL(p_y || p_x)`` instead of ``KL(p_x || p_y)``.
    """

    kind: str = "softmax"
    scale: float = 10.0
    n_components: int = 2
    rank: int = 8
    alpha: float = 1.0
    reverse: bool = False

    def __post_init__(self) -> None:
        if self.kind not in MODEL_KINDS:
            raise ValueError(f"unknown anchor model {self.kind!r}; choose one of {list(MODEL_KINDS)}")


def fit_anchor_model(spec: GeometrySpec, anchors: torch.Tensor, prior: torch.Tensor | None = None
                     ) -> tuple[AnchorModel, list[str]]:
    """The anchor model ``spec`` names, fitted to ``anchors`` ``(N, d)``, and notes for the user
    about any adjustment made (a ridge for one anchor, a rank or component count lowered to what
    the anchors support). ``prior`` ``(N0, d)`` is needed by the posterior kinds."""
    n_anchors, dim = anchors.shape
    if n_anchors == 0:
        raise ValueError("the anchor set is empty; type at least one anchor, one per line")
    notes: list[str] = []
    kind, scale = spec.kind, spec.scale
    if kind == "softmax":
        if n_anchors == 1:
            notes.append("With one anchor every image tilts to the same distribution, so every softmax "
                         "divergence is 0 and the ranking is arbitrary; add anchors.")
        return EmpiricalAnchors(scale=scale).fit(anchors), notes
    if kind == "gaussian":
        if n_anchors == 1:
            notes.append(f"One anchor has no covariance; using a ridge Sigma = {SINGLE_ANCHOR_RIDGE} I "
                         "(a scaled cosine geometry).")
            return GaussianAnchors(scale=scale, shrinkage=SINGLE_ANCHOR_RIDGE).fit(anchors), notes
        return GaussianAnchors(scale=scale).fit(anchors), notes
    if kind == "gmm":
        components = max(1, min(int(spec.n_components), n_anchors))
        if components != spec.n_components:
            notes.append(f"{n_anchors} anchor(s) support at most {components} component(s); using {components}.")
        covariance = "full" if n_anchors >= 2 * components else "spherical"
        if covariance != "full":
            notes.append("Few anchors per component: using spherical covariances.")
        return GaussianMixtureAnchors(n_components=components, covariance_type=covariance, scale=scale,
                                      reg_covar=1e-4).fit(anchors), notes
    if kind in ("latent-softmax", "latent-gaussian"):
        limit = min(n_anchors - 1, dim - 1)
        if limit < 1:
            raise ValueError("a latent model needs at least two distinct anchors; add anchors or choose another model")
        rank = max(1, min(int(spec.rank), limit))
        if rank != spec.rank:
            notes.append(f"{n_anchors} anchors span at most {limit} principal direction(s); using rank {rank}.")
        model_class = LatentEmpiricalAnchors if kind == "latent-softmax" else LatentGaussianAnchors
        return model_class(rank=rank, scale=scale).fit(anchors), notes
    if prior is None or len(prior) == 0:
        raise ValueError("the posterior models need a prior anchor set; type at least one prior anchor")
    if kind == "posterior-softmax":
        return posterior_empirical(prior, anchors, alpha=spec.alpha, scale=scale), notes
    shrinkage = "ledoit-wolf" if len(prior) >= 2 else SINGLE_ANCHOR_RIDGE
    return posterior_gaussian(prior, anchors, alpha=spec.alpha, scale=scale, shrinkage=shrinkage), notes


class ExplorerGeometry:
    """Anchor sets A and B under one :class:`GeometrySpec`, with the gallery indexed once.

    With two non-empty sets the model is ``MixtureAnchors([P_A, P_B], [p, 1 - p])``; with one, that
    set's model alone (``p`` has no effect). Building this is the expensive step (fitting and one
    pass over the gallery per component); afterwards :meth:`index_at` costs ``O(G K)``.

    This object is meant to be shared (cached) across users and threads, so it is never mutated
    after ``__init__``: :meth:`index_at` returns a shallow copy of the index holding its own copy of
    the mixture, whose weights are set there. Stored gallery terms are shared read-only.

    Attributes: ``model`` (the shared fitted model), ``index`` (its :class:`AnchorIndex`),
    ``component_texts`` (texts of each component's anchors, aligned with its anchor rows),
    ``component_names`` ("A", "B"), ``balance_offsets`` ``(K,)``, ``notes`` for the user.
    """

    def __init__(self, gallery_embeddings: torch.Tensor, anchor_sets: Sequence[torch.Tensor],
                 anchor_texts: Sequence[Sequence[str]], spec: GeometrySpec, prior: torch.Tensor | None = None,
                 prior_texts: Sequence[str] = (), names: Sequence[str] = ("A", "B")):
        used = [(name, anchors, list(texts)) for name, anchors, texts in zip(names, anchor_sets, anchor_texts)
                if len(texts) > 0]
        if not used:
            raise ValueError("both anchor sets are empty; type at least one anchor (one per line) in A or B")
        self.spec = spec
        self.notes: list[str] = []
        components = []
        for name, anchors, _ in used:
            model, notes = fit_anchor_model(spec, anchors, prior)
            components.append(model)
            self.notes.extend(f"Set {name}: {note}" for note in notes)
        self.component_names = [name for name, _, _ in used]
        posterior = spec.kind.startswith("posterior")
        self.component_texts = [(list(prior_texts) if posterior else []) + texts for _, _, texts in used]
        self.component_anchors = [torch.cat([prior, anchors]) if posterior else anchors
                                  for _, anchors, _ in used]
        if len(components) == 1:
            self.model: AnchorModel = components[0]
            self.balance_offsets = np.zeros(1)
        else:
            mixture = MixtureAnchors(components, [0.5, 0.5]).balance(gallery_embeddings)
            self.balance_offsets = mixture.kappa_offsets_.copy()
            self.model = mixture
        self.index = AnchorIndex(self.model, gallery_embeddings, reverse=spec.reverse, device="cpu")

    @property
    def is_mixture(self) -> bool:
        return isinstance(self.model, MixtureAnchors)

    def model_at(self, p: float, balanced: bool = True) -> AnchorModel:
        """A private copy of the model with weights ``[p, 1 - p]`` (balanced or literal).
        Components are shared (never refitted); for a single set the shared model itself."""
        if not self.is_mixture:
            return self.model
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p={p!r} must be between 0 and 1")
        mixture = copy.copy(self.model)
        mixture.set_weights([p, 1.0 - p])
        mixture.kappa_offsets_ = self.balance_offsets.copy() if balanced else np.zeros(len(self.balance_offsets))
        return mixture

    def index_at(self, p: float, balanced: bool = True) -> AnchorIndex:
        """A per-request :class:`AnchorIndex` at weight ``p``: a shallow copy sharing the stored
        gallery terms, with its own mixture, so concurrent users never see each other's ``p``."""
        if not self.is_mixture:
            return self.index
        index = copy.copy(self.index)
        index.model = self.model_at(p, balanced)
        index._token = object()  # forces this copy to re-mix its own keys and bias on first search
        return index


def baseline_index(kind: str, gallery_embeddings: torch.Tensor, anchors: torch.Tensor | None = None):
    """``CosineIndex`` (``kind="cosine"``) or ``ITIIndex`` over ``anchors`` (``kind="iti"``)."""
    if kind == "cosine":
        return CosineIndex(gallery_embeddings, device="cpu")
    if kind == "iti":
        if anchors is None or len(anchors) == 0:
            raise ValueError("ITI needs at least one anchor")
        return ITIIndex(anchors, gallery_embeddings, device="cpu")
    raise ValueError(f"unknown baseline {kind!r}; use 'cosine' or 'iti'")


# -- results -----------------------------------------------------------------------------------
def search_one(index, query: torch.Tensor, k: int, exclude: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` of one query ``(d,)`` or ``(1, d)``: ``(values (k,), ids (k,))`` as numpy, best first.
    ``exclude`` is a gallery id to skip (the query itself when it comes from the gallery)."""
    vector = torch.as_tensor(query, dtype=torch.float32).reshape(1, -1)
    k = int(k)
    available = len(index) - (exclude is not None)
    if k > available:
        raise ValueError(f"top-k={k} is larger than the {available} gallery images available; lower k")
    excluded = None if exclude is None else torch.tensor([int(exclude)])
    values, ids = index.search(vector, k, exclude=excluded)
    return values[0].numpy(), ids[0].numpy()


def neighbour_table(values: np.ndarray, ids: np.ndarray, gallery: Gallery, query_labels: pd.Series | None,
                    value_name: str) -> pd.DataFrame:
    """One row per neighbour: rank, gallery id, labels, ``value_name`` (divergence or similarity),
    and ``same_object`` / ``same_style`` against ``query_labels`` (``None`` when unknown)."""
    rows = gallery.labels.iloc[ids].reset_index(drop=True)
    table = pd.DataFrame({"rank": np.arange(1, len(ids) + 1), "gallery_id": ids.astype(int)})
    for column in dict.fromkeys([gallery.name_column, gallery.object_column] +
                                ([gallery.style_column] if gallery.style_column else [])):
        table[column] = rows[column].to_numpy()
    table[value_name] = np.asarray(values, dtype=np.float64)
    for flag, column in (("same_object", gallery.object_column), ("same_style", gallery.style_column)):
        if query_labels is not None and column is not None:
            table[flag] = (rows[column].to_numpy() == query_labels[column])
        else:
            table[flag] = pd.Series([pd.NA] * len(ids), dtype="boolean")
    return table


def agreement(table: pd.DataFrame) -> dict[str, tuple[int, int] | None]:
    """``{"object": (hits, k), "style": (hits, k)}`` from a :func:`neighbour_table`; ``None`` where unknown."""
    result: dict[str, tuple[int, int] | None] = {}
    for name in ("object", "style"):
        column = table[f"same_{name}"]
        result[name] = None if column.isna().any() else (int(column.sum()), len(column))
    return result


def agreement_text(table: pd.DataFrame) -> str:
    """E.g. ``"7/10 same object · 3/10 same style"``."""
    parts = [f"{hits}/{k} same {name}" for name, value in agreement(table).items() if value is not None
             for hits, k in [value]]
    return " · ".join(parts) if parts else "query labels unknown"


def p_sweep(geometry: ExplorerGeometry, query: torch.Tensor, k: int, gallery: Gallery,
            query_labels: pd.Series | None, exclude: int | None = None, balanced: bool = True,
            steps: int = 11) -> pd.DataFrame:
    """Object and style agreement of the top-``k`` as ``p`` goes from 0 to 1 (paper Fig. 3, left).
    Columns ``p``, ``object``, ``style`` (fractions; NaN where labels are unknown)."""
    rows = []
    for p in np.linspace(0.0, 1.0, steps):
        values, ids = search_one(geometry.index_at(float(p), balanced), query, k, exclude)
        score = agreement(neighbour_table(values, ids, gallery, query_labels, "divergence"))
        rows.append({"p": float(p), **{name: (np.nan if value is None else value[0] / value[1])
                                       for name, value in score.items()}})
    return pd.DataFrame(rows)


def grid_png(images: Sequence[Image.Image], captions: Sequence[str], columns: int = 5, cell: int = 128,
             title: str | None = None) -> bytes:
    """A PNG of ``images`` in a grid, each ``cell`` pixels wide with its caption below."""
    columns = max(1, min(columns, len(images) or 1))
    rows = -(-len(images) // columns) if images else 0
    text_height, top = 30, 24 if title else 0
    canvas = Image.new("RGB", (columns * cell, top + rows * (cell + text_height)), "white")
    draw = ImageDraw.Draw(canvas)
    if title:
        draw.text((4, 4), title, fill="black")
    for i, (image, caption) in enumerate(zip(images, captions)):
        x, y = (i % columns) * cell, top + (i // columns) * (cell + text_height)
        canvas.paste(image.convert("RGB").resize((cell - 8, cell - 8)), (x + 4, y + 4))
        for line_no, line in enumerate(str(caption).split("\n")[:2]):
            draw.text((x + 4, y + cell + line_no * 13), line[: cell // 6], fill="black")
    buffer = io.BytesIO()
    canvas.save(buffer, format="PNG")
    return buffer.getvalue()


# -- queries and layouts -----------------------------------------------------------------------
def default_query_id(gallery: Gallery, name: str = "dog", style: str = "watercolor painting") -> int:
    """A sensible first query: the first image whose name contains ``name`` in ``style`` (then any
    style, then any image), so the app opens on something recognisable."""
    names = gallery.labels[gallery.name_column].astype(str).str.lower()
    matches = names.str.contains(name, regex=False).to_numpy()
    if gallery.style_column is not None:
        styled = matches & (gallery.labels[gallery.style_column].astype(str) == style).to_numpy()
        if styled.any():
            return int(np.flatnonzero(styled)[0])
    return int(np.flatnonzero(matches)[0]) if matches.any() else 0


def layout_key(*parts: object) -> str:
    """A stable text key from the parts a layout depends on (anchor lists are hashed)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(repr(part).encode())
        digest.update(b"\0")
    return digest.hexdigest()


def geometry_layout(gallery: Gallery, method: str, geometry: ExplorerGeometry | None = None, p: float = 0.5,
                    balanced: bool = True, iti_anchors: torch.Tensor | None = None, max_points: int = 10_000,
                    seed: int = 0, n_neighbors: int = 15, cache_key: str | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """UMAP layout of (a fixed sample of at most ``max_points``) gallery images under ``method``
    ("anchor" with ``geometry`` at ``p``, "cosine" or "iti"): ``(ids (n,), xy (n, 2))``.

    The kNN graph is the geometry's exact top-``n_neighbors``; with ``cache_key`` the layout is
    stored on disk (see :func:`anchordiv.projection.cached_layout`)."""
    from . import projection

    ids = projection.sample_ids(len(gallery), max_points, seed)
    embeddings = gallery.embeddings[torch.as_tensor(ids)]
    if method == "anchor":
        if geometry is None:
            raise ValueError("an anchor layout needs a geometry")
        index = AnchorIndex(geometry.model_at(p, balanced), embeddings, reverse=geometry.spec.reverse, device="cpu")
    else:
        index = baseline_index(method, embeddings, iti_anchors)

    def build() -> np.ndarray:
        return projection.layout(index, embeddings, n_neighbors=n_neighbors, seed=seed)

    if cache_key is None:
        return ids, build()
    return ids, projection.cached_layout(
        f"{cache_key}|{method}|{max_points}|{seed}|{n_neighbors}|{projection.DEFAULT_EPOCHS}", build)


# -- speed -------------------------------------------------------------------------------------
def benchmark(gallery_size: int = 20_000, n_anchors: int = 4_000, dim: int = 256, k: int = 10,
              umap_points: int = 10_000, repeats: int = 20, seed: int = 0,
              log: Callable[[str], None] = print) -> dict[str, float]:
    """Time the explorer's interactive steps on synthetic unit vectors (CPU, one process).

    ``gallery_size`` G images, A = ``n_anchors`` object anchors and B = 7 style anchors, softmax
    mixture. Reports seconds to index the gallery, the median milliseconds to re-rank after moving
    ``p`` and for a new query, seconds for UMAP's one-off numba compile, and seconds for a
    ``umap_points`` UMAP layout after that compile and when cached on disk.
    """
    import statistics
    import tempfile
    import time

    generator = torch.Generator().manual_seed(seed)

    def unit(n: int) -> torch.Tensor:
        return torch.nn.functional.normalize(torch.randn(n, dim, generator=generator), dim=1)

    centres = unit(64)
    gallery = torch.nn.functional.normalize(
        centres[torch.randint(0, 64, (gallery_size,), generator=generator)] + 0.7 * unit(gallery_size), dim=1)
    texts_a, texts_b = [f"object {i}" for i in range(n_anchors)], [f"style {i}" for i in range(7)]
    labels = pd.DataFrame({"name": [f"item {i % 500}" for i in range(gallery_size)]})
    view = Gallery(embeddings=gallery, labels=labels, load=lambda i: Image.new("RGB", (8, 8)), object_column="name",
                   name_column="name", style_column=None, key=f"bench-{seed}", description="synthetic")
    results: dict[str, float] = {}

    start = time.perf_counter()
    geometry = ExplorerGeometry(gallery, [unit(n_anchors), unit(7)], [texts_a, texts_b], GeometrySpec(scale=10.0))
    results["index_s"] = time.perf_counter() - start
    log(f"index the gallery (fit A and B, kappa_k of G = {gallery_size:,} items, N = {n_anchors:,} + 7 anchors): "
        f"{results['index_s']:.2f} s")

    query = gallery[0]
    timings = []
    for p in np.linspace(0.02, 0.98, repeats):
        start = time.perf_counter()
        search_one(geometry.index_at(float(p)), query, k, exclude=0)
        timings.append(time.perf_counter() - start)
    results["move_p_ms"] = 1000 * statistics.median(timings)
    log(f"move p and re-rank (per-request copy, re-mix, top-{k}): median {results['move_p_ms']:.1f} ms "
        f"(max {1000 * max(timings):.1f} ms) over {repeats}")

    index = geometry.index_at(0.5)
    search_one(index, query, k)
    timings = []
    for item in torch.randint(0, gallery_size, (repeats,), generator=generator).tolist():
        start = time.perf_counter()
        search_one(index, gallery[item], k, exclude=item)
        timings.append(time.perf_counter() - start)
    results["new_query_ms"] = 1000 * statistics.median(timings)
    log(f"new query (grad kappa over N anchors + one pass over G): median {results['new_query_ms']:.1f} ms "
        f"(max {1000 * max(timings):.1f} ms) over {repeats}")

    from . import projection

    results["umap_compile_s"] = projection.warm_up()
    log(f"UMAP's numba compile (once per process; the app does it in the background at start-up): "
        f"{results['umap_compile_s']:.1f} s")
    saved = os.environ.get("ANCHORDIV_CACHE")
    with tempfile.TemporaryDirectory() as folder:
        os.environ["ANCHORDIV_CACHE"] = folder
        try:
            key = layout_key("bench", seed, gallery_size, n_anchors, dim)
            start = time.perf_counter()
            geometry_layout(view, "anchor", geometry, 0.5, max_points=umap_points, cache_key=key)
            results["umap_s"] = time.perf_counter() - start
            start = time.perf_counter()
            geometry_layout(view, "anchor", geometry, 0.5, max_points=umap_points, cache_key=key)
            results["umap_cached_s"] = time.perf_counter() - start
        finally:
            if saved is None:
                os.environ.pop("ANCHORDIV_CACHE", None)
            else:
                os.environ["ANCHORDIV_CACHE"] = saved
    log(f"UMAP of {min(umap_points, gallery_size):,} points (kNN graph + {projection.DEFAULT_EPOCHS} epochs): "
        f"{results['umap_s']:.1f} s after the compile ({results['umap_s'] + results['umap_compile_s']:.1f} s "
        f"when nothing compiled it beforehand); "
        f"cached on disk: {results['umap_cached_s']:.2f} s (in the app's memory cache: instant)")
    return results
