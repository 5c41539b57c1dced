"""Image and text encoders: :class:`Encoder` and :func:`load_encoder`.

Nothing here reaches a model hub unless the caller passes ``allow_download=True``.
"""
from __future__ import annotations

import os

import torch

from .base import CheckpointNotFound, Encoder

__all__ = ["CheckpointNotFound", "Encoder", "load_encoder"]

OPEN_CLIP_PREFIX = "open_clip:"


def load_encoder(
    spec: str,
    pretrained: str | os.PathLike | None = None,
    device: str | torch.device | None = None,
    *,
    allow_download: bool = False,
    cache_dir: str | os.PathLike | None = None,
) -> Encoder:
    """The encoder named by ``spec``, on ``device`` (default: CUDA when available, else CPU).

    ``spec`` is one of
      * ``"builtin"``: the small model shipped with anchordiv (takes no ``pretrained``);
      * ``"open_clip:<arch>"``, e.g. ``"open_clip:ViT-B-32"``, with ``pretrained`` a checkpoint
        file or an open_clip tag whose file is already on disk (see
        :mod:`anchordiv.encoders.open_clip_encoder` for where tags are looked up).

    ``allow_download`` lets open_clip fetch missing files from the network; ``cache_dir`` is
    open_clip's download/hub cache folder. Raises :class:`CheckpointNotFound` (a ``ValueError``)
    when weights are missing, ``ValueError`` for a spec it does not know.
    """
    if not isinstance(spec, str):
        raise ValueError(f"encoder spec must be a string such as 'builtin' or 'open_clip:ViT-B-32', not {spec!r}")
    if spec == "builtin":
        if pretrained is not None:
            raise ValueError(f"the builtin encoder has its own weights; drop pretrained={str(pretrained)!r}")
        from .builtin import load_builtin_encoder

        return load_builtin_encoder(device=device)
    if spec.startswith(OPEN_CLIP_PREFIX) and spec[len(OPEN_CLIP_PREFIX):]:
        from .open_clip_encoder import load_open_clip_encoder

        return load_open_clip_encoder(spec[len(OPEN_CLIP_PREFIX):], pretrained, device,
                                      allow_download=allow_download, cache_dir=cache_dir)
    raise ValueError(
        f"unknown encoder spec {spec!r}; use 'builtin' or 'open_clip:<arch>' (e.g. 'open_clip:ViT-B-32' "
        "with pretrained='laion2b_s34b_b79k' or pretrained=/path/to/checkpoint)"
    )
