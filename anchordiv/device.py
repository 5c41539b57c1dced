"""The one place that decides where tensors live."""
from __future__ import annotations

import torch


def default_device() -> torch.device:
    """CUDA when ``torch.cuda.is_available()``, else CPU.

    Every part of anchordiv that is not handed a device explicitly asks this function, so a
    machine with a GPU uses it everywhere and a machine without one never tries.
    """
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def resolve_device(device: str | torch.device | None) -> torch.device:
    """``None`` means :func:`default_device`; anything else is passed to ``torch.device``."""
    if device is None:
        return default_device()
    try:
        return torch.device(device)
    except (RuntimeError, TypeError) as error:
        raise ValueError(
            f"device={device!r} is not a device torch knows; use 'cpu', 'cuda' or None "
            "(None picks CUDA when available, else CPU)"
        ) from error
