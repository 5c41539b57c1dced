"""anchordiv's own checkpoint folders: where a model's files are looked for first and copied to, their
``SHA256SUMS`` lists, and the one-line error that names them when a model's files are not there.
"""
from __future__ import annotations

import os
from pathlib import Path

from anchordiv.cache import cache_dir as anchordiv_cache_dir

from .advice import ALLOW_DOWNLOAD, Argument, pretrained
from .base import CheckpointNotFound
from .downloads import ModelUnavailable, RemoteFile
from .specs import ModelSpec

MANIFEST = "SHA256SUMS"


def checkpoints_root() -> Path:
    """anchordiv's checkpoint folder, ``<anchordiv cache>/checkpoints`` (not created here)."""
    return anchordiv_cache_dir() / "checkpoints"


def checkpoint_folder(arch: str, tag: str) -> Path:
    """Where anchordiv looks first for the weights of open_clip ``arch`` / ``tag`` (not created here)."""
    return checkpoints_root() / "open_clip" / arch / tag


def hub_model_folder(repo_id: str) -> Path:
    """Where anchordiv looks first for hub model ``ORG/REPO``'s config and weights (not created here)."""
    return checkpoints_root() / "open_clip" / "hf-hub" / repo_id


def fetch_command(spec: ModelSpec) -> str:
    """The command that fetches ``spec``'s files on a machine with internet, for copying here."""
    pretrained = f" --pretrained {spec.pretrained}" if spec.pretrained else ""
    return f"python -m anchordiv fetch-model {spec.model}{pretrained} --to DIR"


def own_file(folder: Path, filenames: tuple[str, ...] | list[str]) -> Path | None:
    """The first of ``filenames`` in ``folder`` (unverified: its ``SHA256SUMS`` entry, :func:`read_manifest`,
    is checked by whoever reads it)."""
    return next((folder / name for name in filenames if (folder / name).is_file()), None)


def read_manifest(folder: Path) -> dict[str, str]:
    """``filename -> sha256`` from ``folder/SHA256SUMS`` (``sha256sum``'s format); empty when absent."""
    try:
        lines = (folder / MANIFEST).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    pairs = (line.split(maxsplit=1) for line in lines if line.strip())
    return {name.strip().lstrip("*"): digest.lower() for digest, name in (p for p in pairs if len(p) == 2)}


def not_on_disk_error(spec: ModelSpec, missing: list[RemoteFile], *, reason: str | None = None,
                      downloads_off: bool = False) -> Exception:
    """The one-line error for a model whose files are missing: each file, its URL, size and folder."""
    files = "; ".join(f"{item.text()} into {item.folder}{os.sep}" for item in missing) or "its files"
    elsewhere = (f"or fetch them on a machine with internet with `{fetch_command(spec)}` and copy the contents of DIR "
                 f"into {checkpoints_root()}{os.sep}")
    if downloads_off:
        return CheckpointNotFound(*named(spec), " is not on this machine, and anchordiv downloads nothing unless "
                                  "asked: allow it with ", ALLOW_DOWNLOAD, f", or copy {files}, {elsewhere}")
    return ModelUnavailable(*named(spec), f" is not on this machine and {reason}: copy {files}, {elsewhere}")


def named(spec: ModelSpec) -> tuple[str | Argument, ...]:
    """``spec`` for a message's parts: ``open_clip:ViT-B-32 pretrained='TAG'`` (its pretrained an
    :class:`~anchordiv.encoders.advice.Argument`, said in the caller's words)."""
    return (spec.model, " ", pretrained(spec.pretrained)) if spec.pretrained else (spec.model,)
