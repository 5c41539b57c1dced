"""The built-in model's shipped weights: ``assets/builtin-model.safetensors`` and a manifest
(``assets/builtin-model.json``) recording its sha256, architecture and how it was trained. Installed,
``assets/`` is the package data :func:`anchordiv.resources.assets_dir`."""
from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save

from ..cache import atomic_write, sha256_file, verified_sha256
from ..resources import assets_dir
from .model import BuiltinConfig, BuiltinModel
from .text_tower import WeightsError

ASSETS_DIR = assets_dir()
WEIGHTS_NAME = "builtin-model.safetensors"
MANIFEST_NAME = "builtin-model.json"
# How a damaged or missing shipped file comes back: installed from a wheel there is no git.
RESTORE = "reinstalling anchordiv (in a checkout of the repository: `git checkout assets/`)"
RETRAIN_HINT = f"restore it by {RESTORE} or retrain with `python -m anchordiv train-builtin`"


def save_builtin(model: BuiltinModel, report: dict, directory: Path = ASSETS_DIR) -> Path:
    """Write the weights (atomically) and then the manifest that vouches for them."""
    directory = Path(directory)
    weights = directory / WEIGHTS_NAME
    tensors = {name: value.detach().cpu().contiguous() for name, value in model.state_dict().items()}
    atomic_write(weights, lambda handle: handle.write(save(tensors)))
    manifest = {"sha256": sha256_file(weights), "config": model.config.to_json(), "training": report}
    atomic_write(directory / MANIFEST_NAME, lambda handle: handle.write(json.dumps(manifest, indent=1).encode()))
    return weights


def load_builtin(directory: Path = ASSETS_DIR, device: str | torch.device = "cpu") -> tuple[BuiltinModel, str]:
    """The shipped model (eval mode) and its sha256, after checking the file against the manifest."""
    directory = Path(directory)
    weights, manifest_path = directory / WEIGHTS_NAME, directory / MANIFEST_NAME
    if not manifest_path.is_file():
        raise WeightsError(f"The built-in model manifest {manifest_path} is missing; {RETRAIN_HINT}.")
    manifest = json.loads(manifest_path.read_text())
    actual = verified_sha256(weights, manifest.get("sha256"), str(manifest_path), RETRAIN_HINT, WeightsError)
    model = BuiltinModel(BuiltinConfig.from_json(manifest["config"]))
    tensors = load_file(weights)
    # The memory's size is only known from the file: size the buffers before loading into them. A
    # file saved before the memory existed has none, and its texts are read by the projection alone.
    keys = tensors.setdefault("memory_keys", model.memory_keys)
    model.set_text_memory(keys, tensors.setdefault("memory_values", model.memory_values))
    model.load_state_dict(tensors)
    return model.to(device).eval(), actual
