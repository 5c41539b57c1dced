"""The built-in contrastive model: a small CNN image tower and a projection of frozen MiniLM
text embeddings into one space, with a learnable logit scale (CLIP's recipe, at toy size)."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from torch import nn

from .text_tower import MINILM_DIM


@dataclass(frozen=True)
class BuiltinConfig:
    """Architecture: ``widths`` are the channels of the CNN's stages (each halves the resolution)."""

    image_size: int = 64
    widths: tuple[int, ...] = (32, 64, 128, 256)
    embed_dim: int = 256
    text_dim: int = MINILM_DIM

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
    """Image tower, text projection ``(text_dim -> embed_dim)`` and ``log`` of the logit scale."""

    def __init__(self, config: BuiltinConfig = BuiltinConfig()):
        super().__init__()
        self.config = config
        self.image_tower = ImageTower(config)
        self.text_projection = nn.Linear(config.text_dim, config.embed_dim, bias=False)
        self.log_logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

    @property
    def logit_scale(self) -> torch.Tensor:
        # CLIP clamps the scale at 100 so that training cannot blow the logits up.
        return self.log_logit_scale.exp().clamp(max=100.0)

    def encode_images(self, images: torch.Tensor) -> torch.Tensor:
        """Float images in [0, 1], ``(n, 3, H, W)`` -> ``(n, embed_dim)`` unit rows."""
        return self.image_tower(images)

    def encode_text_features(self, minilm: torch.Tensor) -> torch.Tensor:
        """MiniLM sentence embeddings ``(n, 384)`` -> ``(n, embed_dim)`` unit rows."""
        return nn.functional.normalize(self.text_projection(minilm), dim=1)
