"""The models to choose from, without the network: the built-in model, open_clip's pretrained list
and a few well-known Hugging Face hub models, each with its size and whether it is on disk."""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from .downloads import format_bytes
from .hub_models import hub_model_on_disk, hub_sources
from .sizes import estimated_sizes
from .specs import ModelSpec, parse_model_spec
from .tags import find_cached_tag

#: Hub repositories with an ``open_clip_config.json`` that open_clip's hf-hub schema loads; each is
#: also the source open_clip's own registry names for one of its tags.
KNOWN_HUB_MODELS = (
    "timm/ViT-B-16-SigLIP",
    "timm/ViT-B-16-SigLIP2",
    "apple/MobileCLIP-S2-OpenCLIP",
    "apple/DFN2B-CLIP-ViT-B-16",
    "laion/CLIP-ViT-B-32-laion2B-s34B-b79K",
)


@dataclass(frozen=True)
class CatalogEntry:
    """One model to offer: ``model`` and ``pretrained`` as ``load_encoder`` takes them, a ``label``
    for people (with the size: on disk, or "≈" to download), ``size_bytes`` (on disk when ``cached``,
    else estimated; ``None`` where unknown)."""

    model: str
    pretrained: str | None
    label: str
    size_bytes: int | None
    cached: bool

    @property
    def spec(self) -> ModelSpec:
        return parse_model_spec(self.model, self.pretrained)


def model_catalog(cache_dir: str | os.PathLike | None = None, *, estimate_sizes: bool = True) -> list[CatalogEntry]:
    """Every model anchordiv can load by name, built-in first, then open_clip's ``(arch, tag)`` pairs
    and :data:`KNOWN_HUB_MODELS`; no network. ``cache_dir`` is the hub cache to look in.

    ``estimate_sizes=False`` leaves uncached models' sizes ``None``: estimating builds each
    architecture on the meta device once (seconds each, then remembered on disk).
    """
    entries = [CatalogEntry("builtin", None, "built-in model (emoji drawings only)", None, True)]
    from open_clip.pretrained import get_pretrained_cfg

    pairs, sources = _pretrained_pairs(), hub_sources()
    estimates = estimated_sizes(tuple(sorted({arch for arch, _ in pairs} | set(sources.values())))) \
        if estimate_sizes else {}
    for arch, tag in pairs:
        found = find_cached_tag(arch, tag, get_pretrained_cfg(arch, tag), cache_dir)
        path = found.path if found is not None else None
        entries.append(_entry(f"open_clip:{arch}", tag, f"{arch} · {tag}", path, estimates.get(arch)))
    for repo in KNOWN_HUB_MODELS:
        on_disk = hub_model_on_disk(repo, cache_dir)
        entries.append(_entry(f"open_clip:hf-hub:{repo}", None, repo, on_disk[1] if on_disk else None,
                              estimates.get(sources.get(repo, ""))))
    return entries


def _entry(model: str, pretrained: str | None, name: str, path, estimate: int | None) -> CatalogEntry:
    if path is not None:
        size = os.path.getsize(path)
        return CatalogEntry(model, pretrained, f"{name} · {format_bytes(size)}, on disk", size, True)
    about = f" · ≈ {format_bytes(estimate)} to download" if estimate else ""
    return CatalogEntry(model, pretrained, f"{name}{about}", estimate, False)


@functools.lru_cache(maxsize=1)
def _pretrained_pairs() -> tuple[tuple[str, str], ...]:
    import open_clip

    return tuple(open_clip.list_pretrained())
