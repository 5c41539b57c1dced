"""The built-in encoder: the shipped emoji-world CNN with the frozen MiniLM text tower."""
from __future__ import annotations

import threading
from dataclasses import replace
from typing import Callable, Sequence

import torch
from PIL import Image

from ..builtin.model import BuiltinModel, image_tensor
from ..builtin.text_tower import MiniLMTextTower
from ..builtin.weights import ASSETS_DIR, load_builtin
from .base import Encoder


class BuiltinEncoder(Encoder):
    """Images through the trained CNN; texts through MiniLM, then the trained projection mixed with
    the visual memory (:meth:`~anchordiv.builtin.model.BuiltinModel.encode_text_features`)."""

    def __init__(self, model: BuiltinModel, text_tower: MiniLMTextTower | Callable[[], MiniLMTextTower],
                 weights_sha256: str, device: str | torch.device | None = None):
        super().__init__(name=f"builtin@{weights_sha256[:12]}", dim=model.config.embed_dim,
                         logit_scale=float(model.logit_scale.detach()), device=device)
        #: sha256 of the weights file; the shipped world embeddings are used only for these weights.
        self.weights_sha256 = weights_sha256
        self.model = self._prepare(model)
        # A tower, or how to make one on the first text: loading MiniLM (and importing transformers)
        # takes seconds that an explorer whose anchor embeddings are cached never needs to spend.
        self._text_tower = self._prepare(text_tower) if isinstance(text_tower, torch.nn.Module) else None
        self._make_text_tower = text_tower
        self._text_tower_lock = threading.Lock()

    @property
    def text_tower(self) -> MiniLMTextTower:
        """The frozen MiniLM tower, loaded (and its weights checked) on first use."""
        with self._text_tower_lock:
            if self._text_tower is None:
                self._text_tower = self._prepare(self._make_text_tower())
            return self._text_tower

    def _encode_image_batch(self, images: Sequence[Image.Image]) -> torch.Tensor:
        size = self.model.config.image_size
        batch = torch.stack([image_tensor(image, size) for image in images]).to(self.device)
        return self.model.encode_images(batch)

    def _encode_text_batch(self, texts: Sequence[str]) -> torch.Tensor:
        return self.model.encode_text_features(self.text_tower(texts))


def load_builtin_encoder(device: str | torch.device | None = None, directory=ASSETS_DIR,
                         memory_weight: float | None = None) -> BuiltinEncoder:
    """The shipped built-in encoder (weights checked by sha256; no network; the text tower is loaded
    and checked on the first text). ``memory_weight``
    overrides the manifest's mix of text projection and visual memory (0: the projection alone);
    the encoder's name then says so, as its text embeddings differ."""
    model, sha256 = load_builtin(directory)
    encoder = BuiltinEncoder(model, MiniLMTextTower, sha256, device=device)
    if memory_weight is not None:
        encoder.model.config = replace(model.config, memory_weight=memory_weight)
        encoder.name += f"+memory{memory_weight:g}"
    return encoder
