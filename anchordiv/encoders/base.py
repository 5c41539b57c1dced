"""The encoder interface: images and texts in, unit-norm float32 CPU embeddings out.

Subclasses implement only the per-batch forward pass; batching, inference mode, the device,
normalisation and the output contract live here so every encoder behaves the same way.
"""
from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from typing import Callable, Sequence, TypeVar

import torch
from PIL import Image
from tqdm import tqdm

from anchordiv.device import resolve_device

from .advice import AdvisedError

Item = TypeVar("Item")


class CheckpointNotFound(AdvisedError):
    """A model's weights file is not on this machine (and nothing was downloaded); its advice names
    the loader's arguments (:class:`~anchordiv.encoders.advice.AdvisedError`)."""


class Encoder(ABC):
    """A contrastive image-text model (CLIP-style) that maps both modalities to one unit sphere.

    Attributes:
        name: stable identifier of the exact weights and preprocessing, used in cache keys
            (e.g. ``"open_clip:ViT-B-32@<sha256-prefix>"``); two encoders with the same name
            must produce the same embeddings.
        dim: embedding dimension ``d``.
        logit_scale: the model's learned inverse temperature ``s`` (OpenAI CLIP: 100).
        device: where the forward passes run; chosen by :func:`anchordiv.device.resolve_device`.

    Subclasses implement :meth:`_encode_image_batch` and :meth:`_encode_text_batch` and call
    :meth:`_prepare` on their ``torch.nn.Module`` once.
    """

    def __init__(self, *, name: str, dim: int, logit_scale: float, device: str | torch.device | None = None):
        self.name = name
        self.dim = int(dim)
        self.logit_scale = float(logit_scale)
        self.device = resolve_device(device)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, dim={self.dim}, device={self.device})"

    def encode_images(self, images: Sequence[Image.Image], batch_size: int = 64, progress: bool = False) -> torch.Tensor:
        """Embeddings of ``images``: float32 CPU tensor of shape ``(len(images), dim)``, rows unit-norm."""
        images = list(images)
        for index, image in enumerate(images):
            if not isinstance(image, Image.Image):
                raise ValueError(
                    f"images[{index}] is a {type(image).__name__}, not a PIL image; "
                    "load files with anchordiv.images.load_image"
                )
        return self._encode(images, batch_size, self._encode_image_batch, progress, unit="img")

    def encode_texts(self, texts: Sequence[str], batch_size: int = 256) -> torch.Tensor:
        """Embeddings of ``texts``: float32 CPU tensor of shape ``(len(texts), dim)``, rows unit-norm."""
        if isinstance(texts, str):
            raise ValueError(f"texts must be a sequence of strings, not one string ({texts!r}); wrap it in a list")
        texts = list(texts)
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValueError(f"texts[{index}] is a {type(text).__name__} ({text!r}), not a string")
        return self._encode(texts, batch_size, self._encode_text_batch, False, unit="text")

    @abstractmethod
    def _encode_image_batch(self, images: Sequence[Image.Image]) -> torch.Tensor:
        """Raw embeddings ``(len(images), dim)`` of 1..batch_size images; any dtype, any device, any norm."""

    @abstractmethod
    def _encode_text_batch(self, texts: Sequence[str]) -> torch.Tensor:
        """Raw embeddings ``(len(texts), dim)`` of 1..batch_size strings; any dtype, any device, any norm."""

    def _prepare(self, module: torch.nn.Module) -> torch.nn.Module:
        """``module`` on this encoder's device, in eval mode (dropout off), with gradients disabled."""
        return module.to(self.device).eval().requires_grad_(False)

    def _encode(
        self,
        items: list[Item],
        batch_size: int,
        encode_batch: Callable[[list[Item]], torch.Tensor],
        progress: bool,
        unit: str,
    ) -> torch.Tensor:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(f"batch_size={batch_size!r} must be a positive integer")
        if not items:
            return torch.zeros((0, self.dim), dtype=torch.float32)
        chunks = []
        # no_grad rather than inference_mode: inference tensors refuse later in-place updates,
        # which would surprise callers who post-process the embeddings.
        with torch.no_grad(), tqdm(total=len(items), unit=unit, file=sys.stderr, disable=not progress) as bar:
            for start in range(0, len(items), batch_size):
                batch = items[start:start + batch_size]
                raw = encode_batch(batch)
                if tuple(raw.shape) != (len(batch), self.dim):
                    raise RuntimeError(
                        f"{type(self).__name__} returned shape {tuple(raw.shape)} for a batch of {len(batch)}; "
                        f"expected ({len(batch)}, {self.dim})"
                    )
                # Normalise in float32 on the device, then move: the CPU copy is the only one kept.
                chunks.append(torch.nn.functional.normalize(raw.float(), dim=-1).cpu())
                bar.update(len(batch))
        return torch.cat(chunks)
