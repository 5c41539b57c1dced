"""Where the shipped word lists come from, and the writers that made them.

Run ``python -m anchordiv.vocabularies.sources`` (with ``open_clip_torch`` and ``torchvision``
installed, as ``requirements.txt`` pins them) to rewrite ``imagenet-1k.txt`` and ``coco-80.txt``
from those packages; ``tests/test_vocabularies.py`` checks the shipped files equal what the packages
give. ``places365.txt`` and ``dtd-47.txt`` were made once from the label files of
tensorflow-datasets (``SOURCES.md`` gives the files and their sha256): :func:`places365_terms` is the
rewriting applied to the Places365 one. Nothing here runs when a vocabulary is loaded.
"""
from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

FOLDER = Path(__file__).resolve().parent


def imagenet_classnames() -> list[str]:
    """The 1,000 ImageNet-1k class names in class order, as CLIP's authors cleaned them
    (``open_clip.zero_shot_metadata.IMAGENET_CLASSNAMES``, MIT licence)."""
    from open_clip.zero_shot_metadata import IMAGENET_CLASSNAMES

    return list(IMAGENET_CLASSNAMES)


def coco_categories() -> list[str]:
    """The 80 COCO object categories in category-id order: torchvision's COCO detection label list
    (``FasterRCNN_ResNet50_FPN_Weights.DEFAULT.meta["categories"]``, BSD-3-Clause; no weights are
    read) less its ``__background__`` and ``N/A`` placeholders for unused ids."""
    from torchvision.models.detection import FasterRCNN_ResNet50_FPN_Weights

    categories = FasterRCNN_ResNet50_FPN_Weights.DEFAULT.meta["categories"]
    return [name for name in categories if name not in ("__background__", "N/A")]


def places365_terms(lines: Iterable[str]) -> list[str]:
    """Places365 category names as phrases: ``"apartment_building/outdoor"`` becomes
    ``"apartment building (outdoor)"`` (underscores are spaces, a ``/`` qualifier goes in brackets)."""
    terms = []
    for line in lines:
        name = line.strip()
        if not name:
            continue
        scene, _, qualifier = name.partition("/")
        term = scene.replace("_", " ")
        terms.append(f"{term} ({qualifier.replace('_', ' ')})" if qualifier else term)
    return terms


def term_file_text(terms: Iterable[str]) -> str:
    """The text of a term file: one term per line, each ending in ``\\n`` (UTF-8 when written)."""
    lines = []
    for term in terms:
        if "\n" in term or "\r" in term or term != term.strip() or not term:
            raise ValueError(f"a term must be one non-empty line without outer spaces: {term!r}")
        lines.append(term + "\n")
    return "".join(lines)


def write_terms(path: Path, terms: Iterable[str]) -> None:
    """Write ``terms`` to ``path``, one per line, UTF-8 with ``\\n`` line ends (the same bytes every time)."""
    Path(path).write_bytes(term_file_text(terms).encode("utf-8"))


def write_package_lists(folder: Path = FOLDER) -> None:
    """Rewrite the lists taken from installed packages: ``imagenet-1k.txt`` and ``coco-80.txt``."""
    write_terms(folder / "imagenet-1k.txt", imagenet_classnames())
    write_terms(folder / "coco-80.txt", coco_categories())


if __name__ == "__main__":
    write_package_lists(Path(sys.argv[1]) if len(sys.argv) > 1 else FOLDER)
