"""The one place that decides where tensors live."""
from __future__ import annotations

import os

import numpy as np
import torch


def default_device() -> torch.device:
    """CUDA when ``torch.cuda.is_available()``, else CPU.

    Every part of anchordiv that is not handed a device explicitly asks this function, so a
    machine with a GPU uses it everywhere and a machine without one never tries.
    """
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def resolve_device(device: str | int | torch.device | None, name: str = "device") -> torch.device:
    """``None`` means :func:`default_device`; anything else is passed to ``torch.device``.

    A CUDA device is refused with a ``ValueError`` when ``torch.cuda.is_available()`` is false
    (or its index is past the last GPU), rather than failing later inside torch. ``name`` is
    what the caller calls the setting in messages (e.g. ``"--device"``).
    """
    if device is None:
        return default_device()
    try:
        resolved = torch.device(int(device) if isinstance(device, np.integer) else device)
    except (RuntimeError, TypeError) as error:
        raise ValueError(
            f"{name}={device!r} is not a device torch knows; use 'cpu', 'cuda' or None "
            "(None picks CUDA when available, else CPU)"
        ) from error
    if resolved.type == "cuda":
        _check_cuda(resolved, device, name)
    return resolved


def _check_cuda(resolved: torch.device, device: object, name: str) -> None:
    if not torch.cuda.is_available():
        raise ValueError(
            f"{name}={device!r} asks for CUDA, but torch.cuda.is_available() is False here (no GPU, no driver, "
            "or a CPU-only torch build); use 'cpu', or leave it unset to pick CUDA only when available"
        )
    count = torch.cuda.device_count()
    if resolved.index is not None and resolved.index >= count:
        raise ValueError(f"{name}={device!r} names GPU {resolved.index}, but this machine has {count} "
                         f"(cuda:0 to cuda:{count - 1}); pick one of those or 'cuda'")


def available_memory(device: torch.device) -> int:
    """Bytes free for tensors on ``device``: the GPU's free memory, else the host's available
    memory (``MemAvailable`` from ``/proc/meminfo``, or free pages from ``os.sysconf``)."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


# Images per forward pass: on a CPU, the 64 the encoders always used (a batch's pixels and
# activations stay small); a GPU wants hundreds to keep busy, bounded by its memory (ViT-L/14 at
# 224 px needs roughly 40 MB of activations per image in fp32).
CPU_IMAGE_BATCH = 64
GPU_IMAGE_BATCH_PER_GIB = 8
GPU_IMAGE_BATCH_RANGE = (64, 512)


def image_batch_size(device: str | torch.device | None = None) -> int:
    """Images per encoder batch on ``device`` (``None``: :func:`default_device`):
    :data:`CPU_IMAGE_BATCH` on a CPU; on a GPU :data:`GPU_IMAGE_BATCH_PER_GIB` per GiB of its
    memory, within :data:`GPU_IMAGE_BATCH_RANGE`."""
    resolved = resolve_device(device)
    if resolved.type != "cuda":
        return CPU_IMAGE_BATCH
    gib = torch.cuda.get_device_properties(resolved).total_memory / 2**30
    low, high = GPU_IMAGE_BATCH_RANGE
    return int(min(high, max(low, GPU_IMAGE_BATCH_PER_GIB * gib)))


def describe_device(device: str | torch.device | None = None) -> str:
    """What a person should read about ``device``: "CUDA: NVIDIA H200 (139 GiB)" or "CPU (2 threads)"."""
    resolved = resolve_device(device)
    if resolved.type == "cuda":
        properties = torch.cuda.get_device_properties(resolved)
        return f"CUDA: {properties.name} ({properties.total_memory / 2**30:.0f} GiB)"
    return f"{resolved.type.upper()} ({torch.get_num_threads()} thread{'s' * (torch.get_num_threads() != 1)})"
