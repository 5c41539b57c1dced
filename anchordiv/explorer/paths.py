"""Which files a shared explorer may open: data roots decided when the server starts.

A visitor of a shared demo must not be able to read whatever the server process can read. So the
explorer opens image folders, labels CSVs and checkpoints only under the **data roots** given at
launch (``--data-root DIR``, repeatable, after ``--`` on the ``streamlit run`` line, or
``ANCHORDIV_DATA_ROOTS`` with folders separated by ``:``), and offers what is there as choices.
Every chosen path is resolved (symlinks followed) and must stay inside a root. Typing any path is
a local-only mode, switched on explicitly (``--allow-any-path`` or ``ANCHORDIV_ALLOW_ANY_PATH=1``).
Errors name the path and the rule, never a file's contents or a folder's listing.
"""
from __future__ import annotations

import argparse
import itertools
import os
import stat
from collections import deque
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Mapping, Sequence

from ..store import MANIFEST

ROOTS_VARIABLE = "ANCHORDIV_DATA_ROOTS"
ANY_PATH_VARIABLE = "ANCHORDIV_ALLOW_ANY_PATH"
CHECKPOINT_SUFFIXES = (".pt", ".pth", ".bin", ".safetensors")
# How far below a root the menus look, and how many entries they list: enough for a demo's data,
# bounded so that a root with a huge tree cannot stall the page.
MENU_DEPTH = 2
MENU_LIMIT = 500
# Entries read from one folder while building the menus: a folder of a million images is sampled,
# not listed, on every run of the page.
SCAN_LIMIT = 5000
# Entries looked at, in and below one folder, to find whether it holds an image: the first image
# ends the look, and a folder of other files is given up on after this many.
IMAGE_PROBE_LIMIT = 1000


def truthy(value: str) -> bool:
    """Whether an environment variable's value switches its option on ("1", "true", "yes")."""
    return value.strip().lower() in ("1", "true", "yes")


@dataclass(frozen=True)
class DataRoots:
    """The folders a server may open (resolved), single files it may open besides (the launch's
    own labels CSV), and whether free paths are allowed (local use)."""

    roots: tuple[Path, ...] = ()
    allow_any_path: bool = False
    files: tuple[Path, ...] = ()

    @classmethod
    def from_launch(cls, argv: Sequence[str], environ: Mapping[str, str]) -> "DataRoots":
        """Roots from ``--data-root`` options in ``argv`` and ``ANCHORDIV_DATA_ROOTS``; a root that
        is not an existing folder is an error naming it, so a typo shows at start-up."""
        parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
        parser.add_argument("--data-root", action="append", default=[])
        parser.add_argument("--allow-any-path", action="store_true")
        options, _ = parser.parse_known_args(list(argv))
        named = [*options.data_root, *(part for part in environ.get(ROOTS_VARIABLE, "").split(os.pathsep) if part)]
        roots = []
        for name in named:
            path = Path(name).expanduser()
            if not path.is_dir():
                raise ValueError(f"data root {name!r} is not an existing folder; fix --data-root or {ROOTS_VARIABLE}")
            roots.append(path.resolve())
        allow = options.allow_any_path or truthy(environ.get(ANY_PATH_VARIABLE, ""))
        return cls(tuple(dict.fromkeys(roots)), allow)

    def with_file(self, path: str | os.PathLike, what: str) -> "DataRoots":
        """These roots and the one file ``path`` (resolved; ``ValueError`` naming it as ``what`` when
        it is not an existing file), not its folder."""
        resolved = Path(path).expanduser().resolve()
        if not resolved.is_file():
            raise ValueError(f"{what} {str(path)!r} is not an existing file")
        return replace(self, files=tuple(dict.fromkeys((*self.files, resolved))))

    @property
    def opens_nothing(self) -> bool:
        """No root and no free paths: only the built-in world can be shown."""
        return not self.roots and not self.allow_any_path

    def confine(self, path: str | os.PathLike, what: str = "path") -> Path:
        """``path`` resolved (symlinks followed); ``ValueError`` unless it is inside a root (any
        existing path in free mode)."""
        try:
            resolved = Path(path).expanduser().resolve(strict=True)
        except (OSError, RuntimeError) as error:  # missing, unreadable, or a symlink loop
            raise ValueError(f"{what} {str(path)!r} does not exist or cannot be resolved; check the name, or choose "
                             "another") from error
        if self.allow_any_path or resolved in self.files or any(resolved.is_relative_to(root) for root in self.roots):
            return resolved
        raise ValueError(f"{what} {str(path)!r} is outside the data folders this server was started with; "
                         "choose one of the offered folders, or restart the server with --data-root")

    def image_folders(self) -> list[Path]:
        """Each root and the folders below it (at most :data:`MENU_DEPTH` levels), confined."""
        return [path for path in self._walk() if path.is_dir()][:MENU_LIMIT]

    def folders_with_images(self) -> list[Path]:
        """The :meth:`image_folders` that an image gallery can open: each holds, in it or below it,
        a file with an image suffix the loader accepts (:func:`holds_image`), so a folder of
        checkpoints, a gallery store or an empty folder is not offered."""
        return [path for path in self.image_folders() if holds_image(path)]

    def stores(self) -> list[Path]:
        """The gallery stores among :meth:`image_folders`: folders holding a store manifest."""
        return [path for path in self.image_folders() if _is_regular(path / MANIFEST)]

    def checkpoints(self) -> list[Path]:
        """Regular files under the roots whose suffix is a checkpoint's (``.pt``, ``.bin``, ...)."""
        return [path for path in self._walk() if path.suffix in CHECKPOINT_SUFFIXES and _is_regular(path)][:MENU_LIMIT]

    def labels_csvs(self, folder: str | os.PathLike) -> list[Path]:
        """Regular ``.csv`` files directly in ``folder`` (candidates for its labels) that resolve
        inside a root: a link out of the roots is not offered, as it would be refused when chosen."""
        try:
            names = sorted(path for path in Path(folder).iterdir() if path.suffix.lower() == ".csv")
        except OSError:
            return []
        offered = []
        for path in names[:MENU_LIMIT]:
            try:
                resolved = self.confine(path, "labels CSV")
            except ValueError:
                continue
            if _is_regular(resolved):
                offered.append(path)
        return offered

    def _walk(self) -> list[Path]:
        """The roots and the entries below them, breadth first, :data:`MENU_DEPTH` levels down and
        about :data:`MENU_LIMIT` in all. Each folder of a level gets an equal share of what is left,
        so a folder of thousands of image folders cannot hide its siblings' contents (the stores
        beside it)."""
        found: list[Path] = []
        level = list(self.roots)
        for _ in range(MENU_DEPTH + 1):
            found.extend(level)
            folders = [folder for folder in level if folder.is_dir()]
            share = (MENU_LIMIT - len(found)) // max(1, len(folders))
            level = [entry for folder in folders for entry in sorted(self._inside(folder))[:share]] if share > 0 else []
        return found

    def _inside(self, folder: Path) -> list[Path]:
        """Entries of ``folder`` that are not hidden and resolve inside a root."""
        try:
            with os.scandir(folder) as scan:
                entries = [Path(entry.path) for entry in itertools.islice(scan, SCAN_LIMIT)
                           if not entry.name.startswith(".")]
        except OSError:
            return []
        inside = []
        for entry in entries:
            try:
                inside.append(self.confine(entry))
            except ValueError:
                continue  # a link out of the roots, or a dangling one: not offered
        return inside


@cache
def image_suffixes() -> frozenset[str]:
    """The file suffixes (lower case, with the dot) of the formats the image loader accepts
    (:data:`~anchordiv.images.ACCEPTED_FORMATS`), as Pillow registers them."""
    from PIL import Image

    from ..images import ACCEPTED_FORMATS

    return frozenset(suffix for suffix, format_name in Image.registered_extensions().items()
                     if format_name in ACCEPTED_FORMATS)


def holds_image(folder: Path, limit: int = IMAGE_PROBE_LIMIT) -> bool:
    """Whether ``folder`` or a folder below it holds a file with an image suffix (:func:`image_suffixes`).

    Cheap and bounded: breadth first, nothing opened, hidden entries and links to folders skipped
    (as an image folder is read), stopping at the first image or after ``limit`` entries; a folder
    whose first image lies beyond them is not recognised.
    """
    suffixes, pending, looked = image_suffixes(), deque([folder]), 0
    while pending and looked < limit:
        try:
            with os.scandir(pending.popleft()) as scan:
                for entry in itertools.islice(scan, limit - looked):
                    looked += 1
                    if entry.name.startswith("."):
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(Path(entry.path))
                    elif os.path.splitext(entry.name)[1].lower() in suffixes and entry.is_file():
                        return True
        except OSError:
            continue  # a folder that cannot be listed holds nothing this server can show
    return False


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False
