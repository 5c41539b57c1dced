"""Image and text encoders: :class:`Encoder` and :func:`load_encoder`, models named by :class:`ModelSpec`.

Nothing here reaches a model hub unless the caller passes ``allow_download=True``; what a load
would download is :func:`missing_files`, fetching for another machine :func:`fetch_model`, the
models to choose from :func:`model_catalog`.
"""
from __future__ import annotations

import os

import torch

from .base import CheckpointNotFound, Encoder
from .catalog import CatalogEntry, model_catalog
from .downloads import DownloadProgress, DownloadStatus, ModelUnavailable, RemoteFile
from .folders import checkpoint_folder, hub_model_folder
from .sources import fetch_model, missing_files
from .specs import ModelSpec, parse_model_spec

__all__ = ["CatalogEntry", "CheckpointNotFound", "DownloadStatus", "Encoder", "ModelSpec", "ModelUnavailable",
           "RemoteFile", "checkpoint_folder", "fetch_model", "hub_model_folder", "load_encoder", "missing_files",
           "model_catalog", "parse_model_spec"]


def load_encoder(
    spec: str | ModelSpec,
    pretrained: str | os.PathLike | None = None,
    device: str | torch.device | None = None,
    *,
    allow_download: bool = False,
    cache_dir: str | os.PathLike | None = None,
    progress: DownloadProgress | None = None,
) -> Encoder:
    """The encoder named by ``spec``, on ``device`` (default: CUDA when available, else CPU).

    ``spec`` is a :class:`ModelSpec` or its spec string, as ``--encoder`` takes it (:func:`parse_model_spec`):
      * ``"builtin"``: the small model shipped with anchordiv (takes no ``pretrained``);
      * ``"open_clip:<arch>"``, e.g. ``"open_clip:ViT-B-32"``, with ``pretrained`` a checkpoint
        file or an open_clip tag such as ``"laion2b_s34b_b79k"``;
      * ``"open_clip:hf-hub:ORG/REPO"``: a Hugging Face repository with ``open_clip_config.json`` and
        weights (takes no ``pretrained``).

    Files are looked up on disk (see :mod:`anchordiv.encoders.sources`). ``allow_download`` lets
    missing ones be downloaded (verified, one transfer per file, ``progress`` receiving a
    :class:`DownloadStatus`); ``cache_dir`` is the hub cache and URL download folder. Raises
    :class:`CheckpointNotFound` (a ``ValueError``) when weights are missing,
    :class:`ModelUnavailable` (one) when a download was allowed but its server cannot be reached,
    and ``ValueError`` for a spec it does not know.
    """
    model = parse_model_spec(spec, pretrained)
    if model.family == "builtin":
        from .builtin import load_builtin_encoder

        return load_builtin_encoder(device=device)
    if model.hub_repo:
        from .open_clip_encoder import load_hub_encoder

        return load_hub_encoder(model.hub_repo, device, allow_download=allow_download, cache_dir=cache_dir,
                                progress=progress)
    from .open_clip_encoder import load_open_clip_encoder

    return load_open_clip_encoder(model.arch, model.pretrained, device, allow_download=allow_download,
                                  cache_dir=cache_dir, progress=progress)
