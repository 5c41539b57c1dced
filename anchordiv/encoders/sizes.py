"""Download sizes of open_clip architectures, estimated offline: state-dict entries x 4 bytes (float32 weights).

The entries (parameters and persistent buffers, what a checkpoint holds) are counted on a model built
on PyTorch's ``meta`` device (no memory, no weights, no network). That takes from milliseconds to a
second per architecture (half a minute for all), so the counts of open_clip's architectures ship with
anchordiv (``state_dict_counts.json``, written by :func:`write_shipped_counts`), and those
of others are kept per process and in ``<anchordiv cache>/catalog/`` per open_clip version.
Architectures whose text tower comes from Hugging Face transformers are not built (that would fetch
its config): size unknown.
"""
from __future__ import annotations

import functools
import json
import os
import threading
from pathlib import Path

from anchordiv.cache import cache_dir

BYTES_PER_PARAMETER = 4  # open_clip's published checkpoints are float32 state dicts
SHIPPED_COUNTS = Path(__file__).with_name("state_dict_counts.json")
_lock = threading.Lock()


def estimated_size_bytes(arch: str) -> int | None:
    """About how many bytes the float32 weights of open_clip ``arch`` take; ``None`` where unknown."""
    return estimated_sizes((arch,))[arch]


def estimated_sizes(archs: tuple[str, ...]) -> dict[str, int | None]:
    """:func:`estimated_size_bytes` of each of ``archs``, counting only those not remembered yet."""
    with _lock:
        known = _remembered()
        missing = [arch for arch in archs if arch not in known]
        if missing:
            known.update({arch: state_dict_count(arch) for arch in missing})
            _remember(known)
    return {arch: None if known[arch] is None else known[arch] * BYTES_PER_PARAMETER for arch in archs}


@functools.lru_cache(maxsize=1)
def _remembered() -> dict[str, int | None]:
    """The shipped counts and those kept on disk for this open_clip version (a dict this module
    updates in place)."""
    return {**_read_counts(SHIPPED_COUNTS), **_read_counts(_memo_path())}


def _read_counts(path: Path) -> dict[str, int | None]:
    try:
        counts = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(counts, dict):
        return {}
    return {str(k): v for k, v in counts.items() if v is None or (isinstance(v, int) and v >= 0)}


def _remember(counts: dict[str, int | None]) -> None:
    """Keep the counts for the next process; a read-only cache only costs the next one the time."""
    path = _memo_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(counts, sort_keys=True), encoding="utf-8")
        os.replace(temporary, path)
    except OSError:
        pass


def _memo_path() -> Path:
    return cache_dir() / "catalog" / f"open_clip-{open_clip_version()}-state-dict-sizes.json"


def open_clip_version() -> str:
    """The installed open_clip's version, read without importing it (an import takes seconds)."""
    from importlib.metadata import version

    return version("open_clip_torch")


def state_dict_count(arch: str) -> int | None:
    import open_clip
    import torch
    from open_clip.coca_model import CoCa
    from open_clip.model import CLIP, CustomTextCLIP

    config = open_clip.get_model_config(arch) if arch in open_clip.list_models() else None
    if not config or config.get("text_cfg", {}).get("hf_model_name"):
        return None
    # open_clip.create_model's choice of class, without its logging and weight loading.
    custom_text = config.pop("custom_text", False)
    model_class = CoCa if "multimodal_cfg" in config else CustomTextCLIP if custom_text else CLIP
    try:
        with torch.device("meta"):
            model = model_class(**config)
    except Exception:  # an architecture this open_clip cannot build (say, a timm model it lacks): unknown
        return None
    # The state dict, as a checkpoint holds it: without non-persistent buffers such as the attention mask.
    return sum(tensor.numel() for tensor in model.state_dict().values())


def write_shipped_counts() -> Path:
    """Count every architecture of the installed open_clip afresh into :data:`SHIPPED_COUNTS`."""
    import open_clip

    counts = {arch: state_dict_count(arch) for arch in open_clip.list_models()}
    SHIPPED_COUNTS.write_text(json.dumps(counts, sort_keys=True, indent=0) + "\n", encoding="utf-8")
    return SHIPPED_COUNTS
