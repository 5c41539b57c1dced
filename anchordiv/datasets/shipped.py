"""The emoji data committed under ``data/emoji``: its file layout, writing it, and reading it back verified.

``data/build_emoji_world.py`` writes these files once; everything else only reads them. Installed,
``data/emoji`` is the package data :func:`anchordiv.resources.emoji_dir`. Layout:

* ``index.csv``: one row per emoji, in sprite order; columns ``emoji_id`` (unified codepoints,
  e.g. ``1F436``), ``name``, ``short_name``, ``subcategory``, ``category``, ``split``.
* ``<vendor>.png`` for each of :data:`VENDORS`: an RGBA sprite atlas, ``CELL`` x ``CELL`` pixels per
  emoji, row-major with ``manifest["columns"]`` cells per atlas row.
* ``manifest.json``: sources, counts, layout and the sha256 of each file above.
"""
from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

from ..cache import atomic_write, sha256_file, verified_sha256
from ..resources import emoji_dir

VENDORS: tuple[str, ...] = ("google", "twitter")
CELL = 64
INDEX_COLUMNS: tuple[str, ...] = ("emoji_id", "name", "short_name", "subcategory", "category", "split")
SPLITS: tuple[str, ...] = ("train", "heldout")
DEFAULT_DATA_DIR = emoji_dir()
REBUILD_HINT = ("rebuild it with `python data/build_emoji_world.py` (needs npm) or restore it with "
                "`git checkout data/emoji` in a checkout of the repository; from an installed package, "
                "reinstall anchordiv")


class ShippedDataError(RuntimeError):
    """The shipped emoji files are missing or are not the bytes the manifest records."""


@dataclass(frozen=True)
class ShippedEmoji:
    """The verified shipped data: ``index`` (one row per emoji) and ``digest``, the sha256 of
    ``manifest.json``, which pins every file. Sprites are decoded on request because a reader
    whose renderings are already cached never needs them.
    """

    data_dir: Path
    index: pd.DataFrame
    digest: str
    columns: int

    def sprites(self, vendor: str) -> np.ndarray:
        """``vendor``'s sprites as uint8 (n, CELL, CELL, 4) RGBA, row ``i`` showing ``index.iloc[i]``."""
        return _split_atlas(self.data_dir / f"{vendor}.png", len(self.index), self.columns)


def read_shipped(data_dir: Path = DEFAULT_DATA_DIR) -> ShippedEmoji:
    """Read ``data_dir``, raising :class:`ShippedDataError` unless every file matches its recorded hash."""
    data_dir = Path(data_dir)
    manifest_path = data_dir / "manifest.json"
    if not manifest_path.is_file():
        raise ShippedDataError(f"{manifest_path} is missing; {REBUILD_HINT}")
    manifest = json.loads(manifest_path.read_text())
    for name, expected in manifest["files"].items():
        verified_sha256(data_dir / name, expected, "manifest.json", REBUILD_HINT, ShippedDataError)
    index = pd.read_csv(data_dir / "index.csv", dtype=str, keep_default_na=False)
    return ShippedEmoji(data_dir=data_dir, index=index, digest=sha256_file(manifest_path), columns=manifest["columns"])


def write_shipped(data_dir: Path, index: pd.DataFrame, sprites: dict[str, np.ndarray], provenance: dict) -> None:
    """Write ``index`` (columns :data:`INDEX_COLUMNS`), one atlas per vendor and the manifest to ``data_dir``.

    ``sprites[vendor]`` is uint8 (n, CELL, CELL, 4) RGBA in ``index`` order; ``provenance``
    (sources, versions, selection rules) is stored in the manifest as-is.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    n = len(index)
    # Near-square atlases keep every dimension well inside PNG and Pillow limits.
    columns = int(np.ceil(np.sqrt(n)))
    files = {"index.csv": index.loc[:, list(INDEX_COLUMNS)].to_csv(index=False, lineterminator="\n").encode()}
    for vendor in VENDORS:
        assert sprites[vendor].shape == (n, CELL, CELL, 4), sprites[vendor].shape
        files[f"{vendor}.png"] = _encode_atlas(sprites[vendor], columns)
    for name, payload in files.items():
        atomic_write(data_dir / name, lambda handle, payload=payload: handle.write(payload))
    manifest = {
        "format": 1,
        "count": n,
        "cell": CELL,
        "columns": columns,
        "provenance": provenance,
        "files": {name: hashlib.sha256(payload).hexdigest() for name, payload in files.items()},
    }
    text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    atomic_write(data_dir / "manifest.json", lambda handle: handle.write(text.encode()))


def _encode_atlas(sprites: np.ndarray, columns: int) -> bytes:
    """PNG bytes of ``sprites`` (n, CELL, CELL, 4) tiled row-major, ``columns`` per row, unused cells clear."""
    n = len(sprites)
    rows = -(-n // columns)
    padded = np.zeros((rows * columns, CELL, CELL, 4), np.uint8)
    padded[:n] = sprites
    atlas = padded.reshape(rows, columns, CELL, CELL, 4).transpose(0, 2, 1, 3, 4).reshape(rows * CELL, columns * CELL, 4)
    buffer = io.BytesIO()
    Image.fromarray(atlas, "RGBA").save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def _split_atlas(path: Path, n: int, columns: int) -> np.ndarray:
    """The first ``n`` cells of the atlas at ``path`` as uint8 (n, CELL, CELL, 4)."""
    with Image.open(path) as image:
        atlas = np.asarray(image.convert("RGBA"))
    rows = atlas.shape[0] // CELL
    cells = atlas.reshape(rows, CELL, columns, CELL, 4).transpose(0, 2, 1, 3, 4).reshape(rows * columns, CELL, CELL, 4)
    return np.ascontiguousarray(cells[:n])
