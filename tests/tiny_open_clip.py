"""A tiny open_clip architecture with random weights: the real open_clip code path in milliseconds."""
from __future__ import annotations

import json
import math
from pathlib import Path

import torch

TINY_ARCH = "anchordiv-tiny-test-ViT"
TINY_EMBED_DIM = 32
TINY_LOGIT_SCALE = 42.0  # not open_clip's init value (1 / 0.07), so a test can tell it came from the file

TINY_CONFIG = {
    "embed_dim": TINY_EMBED_DIM,
    "vision_cfg": {"image_size": 32, "layers": 2, "width": 64, "head_width": 32, "patch_size": 8},
    # vocab_size must match open_clip's bundled tokenizer, which emits ids up to 49407.
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 2},
}


def register_tiny_arch(folder: Path) -> None:
    """Make ``TINY_ARCH`` known to open_clip (its registry is process-global; registering twice is harmless)."""
    import open_clip

    config = folder / f"{TINY_ARCH}.json"
    config.write_text(json.dumps(TINY_CONFIG))
    open_clip.add_model_config(config)


def make_tiny_checkpoint(folder: Path, seed: int = 0, suffix: str = ".pt") -> tuple[Path, torch.nn.Module]:
    """A random tiny model and its state dict saved under ``folder`` (``.pt`` or ``.safetensors``)."""
    import open_clip

    register_tiny_arch(folder)
    torch.manual_seed(seed)
    model = open_clip.create_model(TINY_ARCH, pretrained=None, pretrained_text=False).eval()
    with torch.no_grad():
        model.logit_scale.fill_(math.log(TINY_LOGIT_SCALE))
    path = folder / f"tiny-{seed}{suffix}"
    state = {key: value.contiguous() for key, value in model.state_dict().items()}
    if suffix == ".safetensors":
        from safetensors.torch import save_file

        save_file(state, str(path))
    else:
        torch.save(state, path)
    return path, model
