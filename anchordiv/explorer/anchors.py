"""Anchor text: parsing a text area into anchors, each with an optional weight
(:func:`parse_anchor_text`), the text of a weighted set (:func:`weighted_anchor_text`) and the
named anchor lists of the preset menus (:func:`anchor_presets`).

A line ``term<TAB>weight`` gives its anchor a weight (a positive number of at most
:data:`MAX_WEIGHT`); a set is weighted when any line has a weight, and then every line must have
one. The model normalises the weights.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Sequence

from ..datasets.layouts import CHEXPERT_CONDITIONS
from ..vocabularies.catalog import control_character
from .literal import without_joiners

if TYPE_CHECKING:
    from ..gallery import Gallery

# More anchors than this are cut off (with a note): the text encoder's cost grows linearly and
# 5,000 is already far beyond what a person types or a preset holds.
MAX_ANCHORS = 5000
# What separates a term from its weight on a line of a weighted set.
WEIGHT_SEPARATOR = "\t"
# The largest weight a set takes. Only the ratios of a set's weights matter (the model divides them
# by their sum), and a cap this far below float64's range keeps that sum finite for any set of
# MAX_ANCHORS weights (5,000 weights near 1e308 sum to infinity, and every normalised weight to 0).
MAX_WEIGHT = 1e12
# Significant digits of a weight written by weighted_anchor_text.
WEIGHT_DIGITS = 4
# Lines (and bad weights) a message about a weighted set names before it says how many more.
LINES_NAMED = 5
# A file loaded into an anchor set: a text area holds at most 40 characters per anchor (UTF-8: at
# most 4 bytes each), so a mebibyte is room for more than any set's text.
MAX_ANCHOR_FILE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class AnchorText:
    """Anchors parsed from a text area: one per line, stripped, first occurrence kept.

    ``anchors`` are the texts in use; ``weights`` their weights ``(N,)`` (row-aligned, positive,
    not normalised: the model normalises them), or ``None`` for an unweighted set;
    ``blank_lines``, ``duplicates`` and ``truncated`` count what was dropped, so the app can say so;
    ``split_at`` names the separator ("commas", "semicolons") a one-line list was split at, or ``None``.
    """

    anchors: tuple[str, ...]
    blank_lines: int = 0
    duplicates: int = 0
    truncated: int = 0
    weights: tuple[float, ...] | None = None
    split_at: str | None = None

    def __len__(self) -> int:
        return len(self.anchors)

    def count_text(self) -> str:
        """``"12 anchors"`` or, for a weighted set, ``"12 weighted anchors"`` (:func:`anchor_count`)."""
        return anchor_count(len(self.anchors), self.weights is not None)

    def summary(self) -> str:
        """E.g. ``"12 weighted anchors in use (2 duplicates, 1 blank line ignored)"``."""
        count = f"{self.count_text()} in use"
        dropped = []
        if self.duplicates:
            dropped.append(f"{self.duplicates} duplicate{'s' * (self.duplicates != 1)}")
        if self.blank_lines:
            dropped.append(f"{self.blank_lines} blank line{'s' * (self.blank_lines != 1)}")
        if self.truncated:
            dropped.append(f"{self.truncated:,} beyond the {MAX_ANCHORS:,}-anchor limit")
        split = (f"; the line was split at its {self.split_at} (one anchor per line keeps a "
                 f"{self.split_at[:-1]} inside an anchor)" if self.split_at else "")
        return count + (f" ({', '.join(dropped)} ignored)" if dropped else "") + split

    def text(self) -> str:
        """The set in use as text, one anchor a line (:func:`weighted_anchor_text` for a weighted
        set): what an export writes and :func:`parse_anchor_text` reads back as this set."""
        if self.weights is None:
            return "\n".join(self.anchors)
        return weighted_anchor_text(self.anchors, self.weights)


def anchor_count(count: int, weighted: bool) -> str:
    """``"12 anchors"``, ``"1 anchor"`` or, for a weighted set, ``"12 weighted anchors"``."""
    kind = "weighted anchor" if weighted else "anchor"
    return f"{count:,} {kind}{'s' * (count != 1)}"


def parse_anchor_text(text: str | None, max_anchors: int = MAX_ANCHORS) -> AnchorText:
    """One anchor per line of ``text``, with its weight where the line is ``term<TAB>weight``;
    blank lines and repeats (after stripping) are dropped (a repeat's weight with it: the first
    is kept), and anything past ``max_anchors`` is cut off. Order is kept.

    A text of one unweighted line holding commas (or, without commas, semicolons) is read as the
    list people type ("cat, dog, rocket"): one anchor per part, said by ``split_at``. One anchor
    alone has no geometry (every divergence is 0), so a comma there was never meant to stay.

    ``ValueError`` naming the lines when a weight is not a positive number of at most
    :data:`MAX_WEIGHT` or has no anchor, when a line has more than one tab, or when some lines of
    a weighted set have no weight: such a set is not used.
    """
    lines, split_at = _typed_list(without_joiners(text or "").splitlines())
    seen: dict[str, float | None] = {}
    blank = duplicates = 0
    bad: list[tuple[int, str]] = []  # (line number, weight text) of weights that are not usable
    orphans: list[int] = []  # lines with a weight but no anchor
    unweighted: list[int] = []
    tabbed: list[int] = []  # lines with more than one tab: where the anchor ends is not known
    for number, line in enumerate(lines, start=1):
        term, weight_text = _split_weight(line)
        if WEIGHT_SEPARATOR in term:
            tabbed.append(number)
        anchor = " ".join(term.split())  # also collapses inner runs of whitespace
        if not _visible(anchor):
            blank += 1
            if weight_text:
                orphans.append(number)
            continue
        weight = _weight(weight_text) if weight_text else None
        if weight_text and weight is None:
            bad.append((number, weight_text))
        if not weight_text:
            unweighted.append(number)
        if anchor in seen:
            duplicates += 1
        else:
            seen[anchor] = weight
    weighted = len(unweighted) < len(seen) + duplicates or bool(orphans)
    _check_weights(bad, orphans, unweighted if weighted else [], tabbed)
    anchors = tuple(seen)
    weights = tuple(seen.values())[:max_anchors] if weighted else None
    return AnchorText(anchors[:max_anchors], blank, duplicates, max(0, len(anchors) - max_anchors), weights,
                      split_at)


# What a one-line list is split at, in order of preference, and what the note calls it.
LIST_SEPARATORS = ((",", "commas"), (";", "semicolons"))


def _typed_list(lines: list[str]) -> tuple[list[str], str | None]:
    """``lines``, or the parts of the one visible unweighted line that holds a separator of
    :data:`LIST_SEPARATORS` (and the separator's name)."""
    visible = [line for line in lines if _visible(line)]
    if len(visible) != 1 or WEIGHT_SEPARATOR in visible[0]:
        return lines, None
    for separator, name in LIST_SEPARATORS:
        parts = [part for part in visible[0].split(separator) if _visible(part)]
        if len(parts) > 1:
            return parts, name
    return lines, None


def _split_weight(line: str) -> tuple[str, str]:
    """``(term, weight text)`` of a line: the text after its last tab, stripped, is the weight
    (``""`` for a line without a tab, or with nothing after it)."""
    term, separator, weight_text = line.rpartition(WEIGHT_SEPARATOR)
    return (term, weight_text.strip()) if separator else (line, "")


def _weight(text: str) -> float | None:
    """The weight ``text`` writes, or ``None`` when it is not a positive number of at most :data:`MAX_WEIGHT`."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0 < value <= MAX_WEIGHT else None


def _check_weights(bad: list[tuple[int, str]], orphans: list[int], unweighted: list[int], tabbed: list[int]) -> None:
    """``ValueError`` saying every problem of a weighted set's lines (none: nothing to say)."""
    problems = []
    if tabbed:
        problems.append(f"{_lines(tabbed)}: more than one tab; write each line as the anchor, one tab and its "
                        "weight (an anchor holds no tab)")
    if bad:
        shown = ", ".join(repr(text[:20]) for _, text in bad[:LINES_NAMED])
        problems.append(f"{_lines([number for number, _ in bad])}: a weight must be a positive finite number "
                        f"of at most {MAX_WEIGHT:g} (such as 0.25; only the ratios of a set's weights matter, so "
                        f"divide them all by the largest), not {shown}")
    if orphans:
        problems.append(f"{_lines(orphans)}: a weight without an anchor; put the anchor before the tab")
    if unweighted:
        problems.append(f"{_lines(unweighted)}: no weight, but other lines have one; give every line a weight "
                        "(the anchor, a tab, the weight) or none")
    if problems:
        raise ValueError("; ".join(problems))


def _lines(numbers: Sequence[int]) -> str:
    """``"line 3"``, ``"lines 3, 5"``, ``"lines 1, 2, 3, 4, 5 and 7 more"``."""
    named = ", ".join(str(number) for number in numbers[:LINES_NAMED])
    more = f" and {len(numbers) - LINES_NAMED:,} more" if len(numbers) > LINES_NAMED else ""
    return f"line{'s' * (len(numbers) != 1)} {named}{more}"


def weighted_anchor_text(terms: Sequence[str], weights: Sequence[float]) -> str:
    """The text of a weighted anchor set, which :func:`parse_anchor_text` reads back: one line
    ``term<TAB>weight`` per term, in order, each weight to :data:`WEIGHT_DIGITS` significant digits.

    Terms of weight 0 are left out: they carry no mass in the empirical model (``log w_i = -inf``),
    so the set without them is the same model. ``ValueError`` for a term holding a tab or a line
    break, a blank term, a weight that is negative, not finite or above :data:`MAX_WEIGHT`,
    lengths that differ, or no positive weight.
    """
    terms, weights = list(terms), [float(weight) for weight in weights]
    if len(terms) != len(weights):
        raise ValueError(f"{len(terms)} terms but {len(weights)} weights; give one weight per term")
    lines = []
    for term, weight in zip(terms, weights):
        if WEIGHT_SEPARATOR in term or len(f"{term}x".splitlines()) != 1:
            raise ValueError(f"the term {term[:40]!r} holds a tab or a line break, which a weighted set's line "
                             "cannot carry")
        if not _visible(term):
            raise ValueError("a term is blank; every term of a weighted set needs a visible character")
        if not 0 <= weight <= MAX_WEIGHT:
            raise ValueError(f"the weight {weight!r} of {term[:40]!r} is not a non-negative number of at most "
                             f"{MAX_WEIGHT:g}")
        if weight > 0:
            lines.append(f"{term}{WEIGHT_SEPARATOR}{weight:.{WEIGHT_DIGITS}g}")
    if not lines:
        raise ValueError("every weight is 0; a weighted set needs at least one positive weight")
    return "\n".join(lines)


def anchor_file_text(data: bytes, max_chars: int, max_bytes: int = MAX_ANCHOR_FILE_BYTES) -> str:
    """The text of a file loaded into an anchor set (one anchor a line, weighted or not), its line
    ends as ``\\n``; ``ValueError`` saying why when it has more than ``max_bytes`` bytes, is not
    UTF-8 (a byte-order mark is dropped), has more than ``max_chars`` characters, holds no anchor, or
    its weights are not usable (:func:`parse_anchor_text`)."""
    if len(data) > max_bytes:
        raise ValueError(f"the file has {len(data):,} bytes; an anchor file may have at most {max_bytes:,}: keep "
                         "the anchors that matter, or split the file")
    try:
        text = "\n".join(data.decode("utf-8-sig").splitlines())
    except UnicodeDecodeError as error:
        raise ValueError(f"the file is not UTF-8 text (byte {error.start:,} cannot be read); save it as "
                         "UTF-8") from None
    if len(text) > max_chars:
        raise ValueError(f"the file has {len(text):,} characters; an anchor set holds at most {max_chars:,}: keep "
                         "the anchors that matter, or split the file")
    control = control_character(text)
    if control is not None:
        raise ValueError(f"the file holds the control character U+{ord(control):04X}, as a binary file does; "
                         "give plain UTF-8 text, one anchor per line")
    if not parse_anchor_text(text).anchors:
        raise ValueError("the file holds no anchor; write one anchor per line")
    return text


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
    column, e.g. a labels CSV's ``style``, without the values of a ``source`` column; absent without
    one, never another gallery's list),
    said by :func:`preset_sources`; its animals, food and vehicles by emoji subcategory, else
    generic lists. Always: generic styles and the paper's examples (dog breeds, backgrounds,
    clothing, the CheXpert pathologies of Table 2).
    """
    presets: dict[str, tuple[str, ...]] = {}
    labels = gallery.labels if gallery is not None else None
    if gallery is not None:
        presets[GALLERY_NAMES] = _distinct(labels[gallery.name_column])
        if gallery.style_column is not None:
            presets[GALLERY_STYLES] = tuple(style for style in _distinct(labels[gallery.style_column])
                                            if style not in _sources(labels))
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


def _sources(labels) -> set[str]:
    """The values of a ``source`` label column: where a style is one of them (the built-in world's
    ``google`` and ``twitter``: the emoji vendors' own drawings) it names who drew the image, not a
    style, so the style preset leaves it out (it stays a label)."""
    return set(labels["source"].dropna().astype(str)) if "source" in labels.columns else set()


def _distinct(values) -> tuple[str, ...]:
    """The distinct values of a label column, as text, in order of first appearance."""
    return tuple(dict.fromkeys(values.dropna().astype(str)))


def preset_sources(gallery: "Gallery") -> dict[str, str]:
    """Which label column each gallery preset of :func:`anchor_presets` reads, for a caption:
    ``{"Gallery object names": "the 'label' column of the gallery's labels", ...}``."""
    sources = {GALLERY_NAMES: f"the {gallery.name_column!r} column of the gallery's labels"}
    if gallery.style_column is not None:
        sources[GALLERY_STYLES] = f"the {gallery.style_column!r} column of the gallery's labels"
        left_out = sorted(set(_distinct(gallery.labels[gallery.style_column])) & _sources(gallery.labels))
        if left_out:
            sources[GALLERY_STYLES] += (f", without {', '.join(left_out)}: those name who drew the image (the "
                                        "'source' column), not a style")
    return sources


OWN_LIST = "Your own"


def preset_label(name: str, text: str, presets: Mapping[str, Sequence[str]]) -> str:
    """What a preset menu shows for its chosen preset ``name`` while its text area holds ``text``:
    the name (:func:`menu_name`) while the text is some preset's list (as :func:`parse_anchor_text`
    reads it), else "Your own" (the menu's help says which preset it was edited from)."""
    try:
        typed = parse_anchor_text(text).anchors
    except ValueError:  # weights that are not usable: no preset's list either
        typed = None
    if any(typed == tuple(values) for values in presets.values()):
        return menu_name(name)
    return OWN_LIST


# A preset's name as a menu shows it, where the name is longer than a sidebar's menu (about 28
# letters): the name itself stays what a link carries.
_MENU_NAMES = {GENERIC: "Generic styles", "Paper: CheXpert pathologies (Table 2)": "Paper: CheXpert (Table 2)"}


def menu_name(name: str) -> str:
    """Preset ``name`` as a menu shows it: whole, or shortened where it would not fit a sidebar."""
    return _MENU_NAMES.get(name, name)


def preset_in(presets: Mapping[str, Sequence[str]], name: str) -> str:
    """``name`` if ``presets`` has it, else what stands in for it (generic styles for the gallery's
    styles, generic objects for its object names), else the first preset."""
    for candidate in (name, _STAND_INS.get(name)):
        if candidate in presets:
            return candidate
    return next(iter(presets))
