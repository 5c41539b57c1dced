"""The built-in world's gallery embeddings, shipped with the built-in model so that a first start
shows neighbours in seconds instead of rendering and embedding 19,728 images (about a minute on 2
cores): ``assets/builtin-world-embeddings.npy`` (float16 ``(19728, 256)``, rows in the world's
"all" order) and a manifest that ties them to what made them.

They are used only for the image tower that made them: the manifest records the sha256 of the
model weights, the sha256 of the shipped emoji data's manifest (which pins every data file) and the
renderer version, and :func:`shipped_world_embeddings` checks all three and the file's own sha256.
Any difference means "rebuild" (:func:`anchordiv.gallery.world_gallery` then embeds the world,
with progress, into the user's cache). numpy and Pillow versions are recorded, not required: they
could only move a pixel of the renderings.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import PIL

from ..builtin.weights import ASSETS_DIR, RESTORE
from ..cache import atomic_write, sha256_file
from .styles import RENDERER_VERSION

EMBEDDINGS_NAME = "builtin-world-embeddings.npy"
MANIFEST_NAME = "builtin-world-embeddings.json"
# The store's precision: half the bytes of float32, and a cosine moves by at most ~1e-3.
DTYPE = np.float16


def world_embedding_key(weights_sha256: str, data_digest: str) -> dict[str, str]:
    """What the shipped embeddings must have been made from to be used for these weights and data."""
    return {"weights_sha256": weights_sha256, "data_digest": data_digest, "renderer_version": str(RENDERER_VERSION)}


def save_world_embeddings(vectors: np.ndarray, weights_sha256: str, data_digest: str,
                          directory: Path = ASSETS_DIR) -> Path:
    """Write ``vectors`` ``(N, d)`` (stored as float16) and then the manifest that vouches for them."""
    directory = Path(directory)
    array = np.ascontiguousarray(vectors, dtype=DTYPE)
    path = directory / EMBEDDINGS_NAME
    atomic_write(path, lambda handle: np.save(handle, array))
    manifest = {**world_embedding_key(weights_sha256, data_digest), "sha256": sha256_file(path),
                "shape": list(array.shape), "dtype": array.dtype.str,
                "made_with": {"numpy": np.__version__, "pillow": PIL.__version__}}
    atomic_write(directory / MANIFEST_NAME, lambda handle: handle.write(json.dumps(manifest, indent=1).encode()))
    return path


def shipped_world_embeddings(weights_sha256: str | None, data_digest: str,
                             directory: Path = ASSETS_DIR) -> np.ndarray | None:
    """The shipped float16 embeddings ``(N, d)`` (read-only) when they were made with these weights
    from this data, else ``None`` (the caller embeds the world itself). A file whose bytes are not
    the ones its manifest records is not used, with a warning that says how to restore it."""
    directory = Path(directory)
    manifest_path, path = directory / MANIFEST_NAME, directory / EMBEDDINGS_NAME
    if weights_sha256 is None or not manifest_path.is_file():
        return None
    try:
        manifest = json.loads(manifest_path.read_text())
        wanted = world_embedding_key(weights_sha256, data_digest)
        if any(manifest.get(name) != value for name, value in wanted.items()):
            return None
        if not path.is_file() or sha256_file(path) != manifest.get("sha256"):
            warnings.warn(f"{path} is missing or is not the file {manifest_path} records; the world is embedded "
                          f"again instead (restore it by {RESTORE})", stacklevel=2)
            return None
        array = np.load(path, mmap_mode="r")
    except (OSError, ValueError, TypeError, AttributeError) as error:
        warnings.warn(f"cannot read the shipped world embeddings in {directory} ({error}); the world is embedded "
                      f"again instead (restore them by {RESTORE})", stacklevel=2)
        return None
    if list(array.shape) != manifest.get("shape") or array.dtype != DTYPE:
        return None
    return array
