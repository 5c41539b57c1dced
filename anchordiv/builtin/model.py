"""The built-in contrastive model: a small CNN image tower and a projection of frozen MiniLM
text embeddings into one space, with a learnable logit scale (CLIP's recipe, at toy size), and a
visual memory that the text side reads from once training is done."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch
from PIL import Image
from torch import nn

from .text_tower import MINILM_DIM


def image_tensor(image: Image.Image, size: int) -> torch.Tensor:
    """RGB float ``(3, size, size)`` in [0, 1]: shorter side resized to ``size``, centre-cropped: what
    the image tower reads (:meth:`BuiltinModel.encode_images`, once batched)."""
    image = image.convert("RGB")
    if image.size != (size, size):
        scale = size / min(image.size)
        resized = image.resize((max(size, round(image.width * scale)), max(size, round(image.height * scale))),
                               Image.Resampling.BICUBIC)
        left, top = (resized.width - size) // 2, (resized.height - size) // 2
        image = resized.crop((left, top, left + size, top + size))
    return torch.from_numpy(np.asarray(image, dtype=np.uint8).copy()).permute(2, 0, 1).float().div_(255)


@dataclass(frozen=True)
class BuiltinConfig:
    """Architecture: ``widths`` are the channels of the CNN's stages (each halves the resolution);
    ``memory_weight`` and ``memory_temperature`` set how texts read the visual memory (see
    :meth:`BuiltinModel.encode_text_features`)."""

    image_size: int = 64
    widths: tuple[int, ...] = (32, 64, 128, 256)
    embed_dim: int = 256
    text_dim: int = MINILM_DIM
    memory_weight: float = 0.5
    memory_temperature: float = 0.07

    def __post_init__(self):
        if not 0.0 <= self.memory_weight <= 1.0:
            raise ValueError(f"memory_weight={self.memory_weight} must be in [0, 1] "
                             "(0: texts by the projection alone, 1: by the visual memory alone)")
        if not self.memory_temperature > 0:
            raise ValueError(f"memory_temperature={self.memory_temperature} must be > 0 (the shipped model uses 0.07)")

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, values: dict) -> "BuiltinConfig":
        return cls(**{**values, "widths": tuple(values["widths"])})


def conv_block(channels_in: int, channels_out: int) -> nn.Sequential:
    """Two 3x3 convolutions with batch norm and ReLU, then 2x2 max pooling."""
    return nn.Sequential(
        nn.Conv2d(channels_in, channels_out, 3, padding=1, bias=False), nn.BatchNorm2d(channels_out), nn.ReLU(inplace=True),
        nn.Conv2d(channels_out, channels_out, 3, padding=1, bias=False), nn.BatchNorm2d(channels_out), nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
    )


class ImageTower(nn.Module):
    """uint8-range RGB images ``(n, 3, H, W)`` scaled to [0, 1] -> unit embeddings ``(n, embed_dim)``.

    A stride-2 stem, one :func:`conv_block` per width, then global average *and* max pooling (max
    keeps small parts, such as a hat on a face, that averaging washes out) and a linear head.
    """

    def __init__(self, config: BuiltinConfig):
        super().__init__()
        first = config.widths[0]
        self.stem = nn.Sequential(nn.Conv2d(3, first, 3, stride=2, padding=1, bias=False),
                                  nn.BatchNorm2d(first), nn.ReLU(inplace=True))
        widths = (first,) + tuple(config.widths)
        self.stages = nn.Sequential(*(conv_block(a, b) for a, b in zip(widths[:-1], widths[1:])))
        self.head = nn.Linear(2 * config.widths[-1], config.embed_dim)
        self.register_buffer("pixel_mean", torch.tensor([0.5, 0.5, 0.5]).view(1, 3, 1, 1))
        self.register_buffer("pixel_std", torch.tensor([0.25, 0.25, 0.25]).view(1, 3, 1, 1))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        features = self.stages(self.stem((images - self.pixel_mean) / self.pixel_std))
        pooled = torch.cat([features.mean(dim=(2, 3)), features.amax(dim=(2, 3))], dim=1)
        return nn.functional.normalize(self.head(pooled), dim=1)


class BuiltinModel(nn.Module):
    """Image tower, text projection ``(text_dim -> embed_dim)``, ``log`` of the logit scale, and a
    visual memory: unit MiniLM keys ``(K, text_dim)`` of training texts with the unit mean image
    embedding ``(K, embed_dim)`` of the training images each describes (empty until
    :meth:`set_text_memory`; training never reads it)."""

    def __init__(self, config: BuiltinConfig = BuiltinConfig()):
        super().__init__()
        self.config = config
        self.image_tower = ImageTower(config)
        self.text_projection = nn.Linear(config.text_dim, config.embed_dim, bias=False)
        self.log_logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))
        self.register_buffer("memory_keys", torch.zeros(0, config.text_dim))
        self.register_buffer("memory_values", torch.zeros(0, config.embed_dim))

    @property
    def logit_scale(self) -> torch.Tensor:
        # CLIP clamps the scale at 100 so that training cannot blow the logits up.
        return self.log_logit_scale.exp().clamp(max=100.0)

    def set_text_memory(self, keys: torch.Tensor, values: torch.Tensor) -> "BuiltinModel":
        """Store MiniLM embeddings ``keys`` ``(K, text_dim)`` of training texts and image
        embeddings ``values`` ``(K, embed_dim)`` of what they describe (both unit-normalised here)."""
        expected = ((len(keys), self.config.text_dim), (len(keys), self.config.embed_dim))
        if (tuple(keys.shape), tuple(values.shape)) != expected:
            raise ValueError(f"memory keys {tuple(keys.shape)} and values {tuple(values.shape)} must be "
                             f"(K, {self.config.text_dim}) and (K, {self.config.embed_dim}) with the same K")
        device = self.memory_keys.device
        self.memory_keys = nn.functional.normalize(keys.float(), dim=1).to(device)
        self.memory_values = nn.functional.normalize(values.float(), dim=1).to(device)
        return self

    def encode_images(self, images: torch.Tensor) -> torch.Tensor:
        """Float images in [0, 1], ``(n, 3, H, W)`` -> ``(n, embed_dim)`` unit rows."""
        return self.image_tower(images)

    def project_text_features(self, minilm: torch.Tensor) -> torch.Tensor:
        """MiniLM sentence embeddings ``(n, 384)`` -> ``(n, embed_dim)`` unit rows, by the learned
        projection alone (what training optimises)."""
        return nn.functional.normalize(self.text_projection(minilm), dim=1)

    def encode_text_features(self, minilm: torch.Tensor) -> torch.Tensor:
        """MiniLM sentence embeddings ``m`` ``(n, 384)`` -> ``(n, embed_dim)`` unit rows:

        ``t = normalize((1 - w) normalize(P m) + w r)``, ``r = normalize(sum_k a_k v_k)``,
        ``a = softmax_k(cos(m, key_k) / tau)``

        with ``P`` the text projection, ``key_k``/``v_k`` the memory's MiniLM keys and image
        embeddings, ``w`` = ``config.memory_weight`` and ``tau`` = ``config.memory_temperature``.
        The readout ``r`` carries a text to what the training images of its closest training
        texts *look like*: an unseen name ("bubble tea") lands among images of what MiniLM finds
        it similar to ("teapot", "beverage box", "cup with straw"), which the linear projection,
        fitted to 1,225 names, does not manage (held-out object top-5 0.400 -> 0.475). With an
        empty memory ``t`` is the projection alone.
        """
        projected = self.project_text_features(minilm)
        if len(self.memory_keys) == 0:
            return projected
        attention = torch.softmax(nn.functional.normalize(minilm, dim=1) @ self.memory_keys.T
                                  / self.config.memory_temperature, dim=1)
        readout = nn.functional.normalize(attention @ self.memory_values, dim=1)
        weight = self.config.memory_weight
        return nn.functional.normalize((1 - weight) * projected + weight * readout, dim=1)
