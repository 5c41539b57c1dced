"""Anchor text: parsing a text area into anchors (:func:`parse_anchor_text`) and the named anchor
lists of the preset menus (:func:`anchor_presets`)."""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Sequence

from ..datasets.layouts import CHEXPERT_CONDITIONS

if TYPE_CHECKING:
    from ..gallery import Gallery

# More anchors than this are cut off (with a note): the text encoder's cost grows linearly and
# 5,000 is already far beyond what a person types or a preset holds.
MAX_ANCHORS = 5000


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
        if not _visible(anchor):
            blank += 1
        elif anchor in seen:
            duplicates += 1
        else:
            seen[anchor] = None
    anchors = tuple(seen)
    return AnchorText(anchors[:max_anchors], blank, duplicates, max(0, len(anchors) - max_anchors))


def _visible(anchor: str) -> bool:
    """Whether ``anchor`` has a character a person can see: a line of zero-width spaces or other
    format characters is as blank as an empty one (they stay inside visible anchors, e.g. emoji joiners)."""
    return any(unicodedata.category(char)[0] not in "CZ" for char in anchor)


DOG_BREEDS = ("husky", "golden retriever", "labrador retriever", "german shepherd", "beagle", "poodle",
              "bulldog", "dachshund", "corgi", "border collie", "chihuahua", "pug", "dalmatian",
              "shiba inu", "rottweiler", "boxer", "great dane", "samoyed")
BACKGROUNDS = ("snow", "grass", "beach", "forest", "city street", "living room", "desert", "water",
               "mountains", "a white background", "a black background", "night sky")
CLOTHING = ("a sweater", "a raincoat", "a scarf", "a hat", "sunglasses", "a bandana", "a costume",
            "a collar", "a jacket", "boots", "a t-shirt", "a dress")
# The CheXpert observations of the paper's Table 2 (CheXpert's 14 labels, "No Finding" included),
# kept once with the CheXpert layout (the "chexpert-14" vocabulary reads them there too).
CHEXPERT_PATHOLOGIES = CHEXPERT_CONDITIONS
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
# The presets read from a gallery's label columns, and what stands in for each where a gallery has
# no such column (a preset menu's default must name a preset the gallery has).
GALLERY_NAMES, GALLERY_STYLES, GENERIC = "Gallery object names", "Gallery styles", "Generic styles (not from the gallery)"
_STAND_INS = {GALLERY_NAMES: "Animals", GALLERY_STYLES: GENERIC}


def anchor_presets(gallery: "Gallery | None" = None) -> dict[str, tuple[str, ...]]:
    """Named anchor lists for the explorer's preset menus.

    From the gallery's label columns: "Gallery object names" (its name column, e.g. a folder's
    ``label``: the subfolders or the labels CSV's label column) and "Gallery styles" (its style
    column, e.g. a labels CSV's ``style``; absent without one, never another gallery's list),
    said by :func:`preset_sources`; its animals, food and vehicles by emoji subcategory, else
    generic lists. Always: generic styles and the paper's examples (dog breeds, backgrounds,
    clothing, the CheXpert pathologies of Table 2).
    """
    presets: dict[str, tuple[str, ...]] = {}
    labels = gallery.labels if gallery is not None else None
    if gallery is not None:
        presets[GALLERY_NAMES] = _distinct(labels[gallery.name_column])
        if gallery.style_column is not None:
            presets[GALLERY_STYLES] = _distinct(labels[gallery.style_column])
    presets[GENERIC] = GENERIC_STYLES
    for theme, fallback in (("Animals", ANIMALS), ("Food", FOOD), ("Vehicles", VEHICLES)):
        themed: tuple[str, ...] = ()
        if labels is not None and "subcategory" in labels.columns:
            rows = labels["subcategory"].astype(str).str.startswith(_THEMES[theme])
            themed = _distinct(labels.loc[rows, gallery.name_column])
        presets[theme] = themed or fallback
    presets["Paper: dog breeds"] = DOG_BREEDS
    presets["Paper: backgrounds"] = BACKGROUNDS
    presets["Paper: clothing"] = CLOTHING
    presets["Paper: CheXpert pathologies (Table 2)"] = CHEXPERT_PATHOLOGIES
    return presets


def _distinct(values) -> tuple[str, ...]:
    """The distinct values of a label column, as text, in order of first appearance."""
    return tuple(dict.fromkeys(values.dropna().astype(str)))


def preset_sources(gallery: "Gallery") -> dict[str, str]:
    """Which label column each gallery preset of :func:`anchor_presets` reads, for a caption:
    ``{"Gallery object names": "the 'label' column of the gallery's labels", ...}``."""
    sources = {GALLERY_NAMES: f"the {gallery.name_column!r} column of the gallery's labels"}
    if gallery.style_column is not None:
        sources[GALLERY_STYLES] = f"the {gallery.style_column!r} column of the gallery's labels"
    return sources


def preset_in(presets: Mapping[str, Sequence[str]], name: str) -> str:
    """``name`` if ``presets`` has it, else what stands in for it (generic styles for the gallery's
    styles, generic objects for its object names), else the first preset."""
    for candidate in (name, _STAND_INS.get(name)):
        if candidate in presets:
            return candidate
    return next(iter(presets))
