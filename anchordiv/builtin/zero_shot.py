"""Zero-shot recognition with the built-in model: styles and held-out object names."""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from .model import BuiltinModel
from .train import caption_features


@torch.inference_mode()
def embed_array(model: BuiltinModel, array: np.ndarray, batch_size: int = 512) -> torch.Tensor:
    """Unit image embeddings ``(n, embed_dim)`` of uint8 images ``(n, H, W, 3)``."""
    device = next(model.parameters()).device
    parts = []
    for start in range(0, len(array), batch_size):
        chunk = torch.from_numpy(np.ascontiguousarray(array[start:start + batch_size]))
        parts.append(model.encode_images(chunk.permute(0, 3, 1, 2).float().div_(255).to(device)).cpu())
    return torch.cat(parts)


@torch.inference_mode()
def embed_texts(model: BuiltinModel, texts: list[str]) -> torch.Tensor:
    device = next(model.parameters()).device
    return model.encode_text_features(torch.from_numpy(caption_features(texts)).to(device)).cpu()


def zero_shot(model: BuiltinModel, image_embeddings: torch.Tensor, labels: pd.DataFrame,
              styles: list[str], names: list[str]) -> dict[str, float]:
    """Style accuracy over the bare style phrases and object top-1/top-5 among ``names``."""
    style_scores = image_embeddings @ embed_texts(model, styles).T
    style_hit = np.array(styles)[style_scores.argmax(dim=1).numpy()] == labels["style"].to_numpy()
    name_scores = image_embeddings @ embed_texts(model, names).T
    top5 = np.array(names)[name_scores.topk(min(5, len(names)), dim=1).indices.numpy()]
    truth = labels["name"].to_numpy()[:, None]
    return {"style_accuracy": float(style_hit.mean()), "object_top1": float((top5[:, 0:1] == truth).mean()),
            "object_top5": float((top5 == truth).any(axis=1).mean())}
