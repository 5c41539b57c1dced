"""Hub models (``open_clip:hf-hub:ORG/REPO``): their config, weights and the Hugging Face tokenizer
the config names, found on disk (anchordiv's folder, else the hub cache) and verified, or downloaded.
"""
from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .downloads import DownloadProgress, RemoteFile, Unreachable, verify_file, verify_hub_file
from .folders import hub_model_folder, not_on_disk_error, own_file, read_manifest
from .hub_client import cached_hub_file, hub_file, hub_url
from .sizes import estimated_size_bytes
from .specs import ModelSpec, check_hub_repo, parse_model_spec
from .tags import blob_sha256, hub_location

HUB_CONFIG = "open_clip_config.json"
HUB_WEIGHTS = ("open_clip_model.safetensors", "open_clip_pytorch_model.bin")  # open_clip's order of preference
#: A Hugging Face tokenizer's files that anchordiv fetches, those its repository holds: enough for
#: transformers to load it from a folder without the network (``tokenizer_config.json`` in every one).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "spiece.model")


@dataclass(frozen=True)
class HubModelFiles:
    """A hub model's files on disk: its ``open_clip_config.json`` and weights, with the weights' sha256;
    and, when the config names a Hugging Face tokenizer ``tokenizer_repo``, that tokenizer's files."""

    config: Path
    weights: Path
    weights_sha256: str
    tokenizer_repo: str | None = None
    tokenizer: tuple[Path, ...] = ()


def hub_model_on_disk(repo_id: str, cache_dir: str | os.PathLike | None = None) -> tuple[Path, Path] | None:
    """``(config, weights)`` of ``ORG/REPO`` on disk (unverified: a presence check), both in anchordiv's
    folder, else both in the hub cache; ``None`` when not."""
    own = hub_model_folder(repo_id)
    config, weights = own_file(own, [HUB_CONFIG]), own_file(own, HUB_WEIGHTS)
    if config is None or weights is None:
        config = cached_hub_file(repo_id, HUB_CONFIG, cache_dir)
        weights = next((p for p in (cached_hub_file(repo_id, name, cache_dir) for name in HUB_WEIGHTS) if p), None)
    return (config, weights) if config is not None and weights is not None else None


def cached_hub_model(repo_id: str, cache_dir: str | os.PathLike | None = None) -> HubModelFiles | None:
    """``ORG/REPO``'s files from anchordiv's folder or the hub cache (both verified), or ``None``."""
    found = hub_model_on_disk(repo_id, cache_dir)
    if found is None:
        return None
    config, weights = found
    if config.parent == hub_model_folder(repo_id):
        listed = read_manifest(config.parent)
        verify_file(config, listed.get(config.name), "model config")
        return HubModelFiles(config, weights, verify_file(weights, listed.get(weights.name), "weights"))
    verify_hub_file(config, HUB_CONFIG)
    digest = verify_hub_file(weights, weights.name)
    return HubModelFiles(config, weights, digest or verify_file(weights, None, "weights"))


def hub_model_files(repo_id: str, *, allow_download: bool = False, cache_dir: str | os.PathLike | None = None,
                    progress: DownloadProgress | None = None) -> HubModelFiles:
    """``ORG/REPO``'s config, weights and tokenizer files: cached, else (with ``allow_download``) downloaded.

    Raises :class:`~anchordiv.encoders.base.CheckpointNotFound` when they are missing and downloads
    are off, :class:`ModelUnavailable` when the hub cannot be reached, ``ValueError`` when the
    repository lacks them or a file fails verification.
    """
    spec = parse_model_spec(f"open_clip:hf-hub:{repo_id}")
    found = cached_hub_model(repo_id, cache_dir)
    if found is None and not allow_download:
        raise not_on_disk_error(spec, missing_hub_files(repo_id, cache_dir), downloads_off=True)
    try:
        files = _with_tokenizer(found or _download_hub_model(spec, cache_dir, progress), allow_download=allow_download,
                                cache_dir=cache_dir, progress=progress, model=spec.label)
    except Unreachable as error:
        raise not_on_disk_error(spec, missing_hub_files(repo_id, cache_dir), reason=str(error)) from None
    if files.tokenizer_repo and not files.tokenizer and not allow_download:
        raise not_on_disk_error(spec, missing_hub_files(repo_id, cache_dir), downloads_off=True)
    return files


def _download_hub_model(spec: ModelSpec, cache_dir: str | os.PathLike | None,
                        progress: DownloadProgress | None) -> HubModelFiles:
    repo_id = str(spec.hub_repo)
    config = hub_file(repo_id, HUB_CONFIG, cache_dir=cache_dir, progress=progress, model=spec.label)
    if config is None:
        raise ValueError(f"the hub repository {repo_id!r} has no {HUB_CONFIG}, so it is not an open_clip model; "
                         "pick an open_clip repository (e.g. timm/ViT-B-16-SigLIP)")
    for name in HUB_WEIGHTS:
        weights = hub_file(repo_id, name, cache_dir=cache_dir, progress=progress, model=spec.label)
        if weights is not None:  # verified by hub_file: an LFS blob's name is its sha256
            return HubModelFiles(config, weights, blob_sha256(weights) or verify_file(weights, None, "weights"))
    raise ValueError(f"the hub repository {repo_id!r} has neither {' nor '.join(HUB_WEIGHTS)}; it holds no "
                     "open_clip weights anchordiv can load")


# -- a hub model's Hugging Face tokenizer --------------------------------------------------------------------
def hub_tokenizer_repo(config: Path) -> str | None:
    """The repository ``ORG/REPO`` of the Hugging Face tokenizer a hub model's config names
    (``text_cfg.hf_tokenizer_name``); ``None`` for open_clip's bundled tokenizer, for an unreadable
    config (its load says so) and for a name of another form (left to transformers)."""
    try:
        text_cfg = read_hub_config(config)["model_cfg"].get("text_cfg")
        name = text_cfg.get("hf_tokenizer_name") if isinstance(text_cfg, dict) else None
        return check_hub_repo(name) if isinstance(name, str) else None
    except ValueError:
        return None


def tokenizer_on_disk(repo_id: str, cache_dir: str | os.PathLike | None = None) -> list[Path]:
    """The :data:`TOKENIZER_FILES` of tokenizer ``ORG/REPO`` on disk (unverified): those in anchordiv's
    folder ``hf-hub/ORG/REPO/`` when it holds any, else those in the hub cache."""
    own = hub_model_folder(repo_id)
    mine = [own / name for name in TOKENIZER_FILES if (own / name).is_file()]
    return mine or [path for path in (cached_hub_file(repo_id, name, cache_dir) for name in TOKENIZER_FILES) if path]


def _with_tokenizer(files: HubModelFiles, *, allow_download: bool, cache_dir: str | os.PathLike | None,
                    progress: DownloadProgress | None, model: str) -> HubModelFiles:
    """``files`` with the tokenizer its config names: verified on disk, else (``allow_download``) fetched."""
    repo = hub_tokenizer_repo(files.config)
    if repo is None:
        return files
    found = tokenizer_on_disk(repo, cache_dir)
    own = hub_model_folder(repo)
    listed = read_manifest(own) if found and found[0].parent == own else None
    for path in found:
        if listed is None:
            verify_hub_file(path, path.name)
        elif path.name in listed:
            verify_file(path, listed[path.name], "tokenizer file")
    if not found and allow_download:  # a 404 for a file this repository does not hold is fine
        found = [path for path in (hub_file(repo, name, cache_dir=cache_dir, progress=progress, model=model)
                                   for name in TOKENIZER_FILES) if path is not None]
    return replace(files, tokenizer_repo=repo, tokenizer=tuple(found))


# -- what is missing -------------------------------------------------------------------------------------


def missing_hub_files(repo_id: str, cache_dir: str | os.PathLike | None) -> list[RemoteFile]:
    folder, missing = hub_model_folder(repo_id), []
    on_disk = hub_model_on_disk(repo_id, cache_dir)
    config = on_disk[0] if on_disk else own_file(folder, [HUB_CONFIG]) or cached_hub_file(repo_id, HUB_CONFIG, cache_dir)
    if config is None:
        missing.append(RemoteFile(HUB_CONFIG, hub_url(repo_id, HUB_CONFIG), None, None, folder))
    if on_disk is None and own_file(folder, HUB_WEIGHTS) is None and not any(cached_hub_file(repo_id, name, cache_dir)
                                                                              for name in HUB_WEIGHTS):
        size = _hub_repo_size(repo_id)
        missing.append(RemoteFile(HUB_WEIGHTS[0], hub_url(repo_id, HUB_WEIGHTS[0]), size, None, folder,
                                  alternative=HUB_WEIGHTS[1], size_is_estimate=size is not None))
    tokenizer = hub_tokenizer_repo(config) if config is not None else None
    if tokenizer and not tokenizer_on_disk(tokenizer, cache_dir):
        missing += [RemoteFile(name, hub_url(tokenizer, name), None, None, hub_model_folder(tokenizer),
                               optional=name != "tokenizer_config.json") for name in TOKENIZER_FILES]
    return missing


def _hub_repo_size(repo_id: str) -> int | None:
    """An estimate for a hub repository that open_clip's own registry names for a tag."""
    arch = hub_sources().get(repo_id)
    return estimated_size_bytes(arch) if arch else None


# hub_sources() for the open_clip this file names, so that a refusal needs no import of open_clip.
SHIPPED_HUB_SOURCES = Path(__file__).with_name("hub_sources.json")


@functools.lru_cache(maxsize=1)
def hub_sources() -> dict[str, str]:
    """Hub repository -> the architecture whose tag open_clip's registry fetches from it: read from
    :data:`SHIPPED_HUB_SOURCES` when it was written for the installed open_clip, else from the registry."""
    from .sizes import open_clip_version

    try:
        shipped = json.loads(SHIPPED_HUB_SOURCES.read_text(encoding="utf-8"))
        if shipped.get("open_clip") == open_clip_version() and isinstance(shipped.get("sources"), dict):
            return {str(repo): str(arch) for repo, arch in shipped["sources"].items()}
    except (OSError, ValueError, AttributeError):
        pass
    return registry_hub_sources()


def registry_hub_sources() -> dict[str, str]:
    """:func:`hub_sources` from open_clip's own registry (imports open_clip)."""
    import open_clip
    from open_clip.pretrained import get_pretrained_cfg

    sources: dict[str, str] = {}
    for arch, tag in open_clip.list_pretrained():
        location = hub_location(get_pretrained_cfg(arch, tag))
        if location:
            sources.setdefault(location[0], arch)
    return sources


def write_shipped_hub_sources() -> Path:
    """Write :data:`SHIPPED_HUB_SOURCES` from the installed open_clip's registry (after an upgrade)."""
    from .sizes import open_clip_version

    table = {"open_clip": open_clip_version(), "sources": dict(sorted(registry_hub_sources().items()))}
    SHIPPED_HUB_SOURCES.write_text(json.dumps(table, indent=0) + "\n", encoding="utf-8")
    return SHIPPED_HUB_SOURCES


def read_hub_config(path: Path) -> dict[str, Any]:
    """A hub model's ``open_clip_config.json``: ``{"model_cfg": {...}, "preprocess_cfg": {...}}``, checked.

    Parameters
    ----------
    path : Path
        The config file.

    Returns
    -------
    dict
        The config, its ``model_cfg`` an object, and each of the sections read by name (``text_cfg``,
        ``vision_cfg``, ``tokenizer_kwargs``, ``preprocess_cfg``) an object where present.

    Raises
    ------
    ValueError
        Naming the file, what is wrong in it and what to do.
    """
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:  # RecursionError: nested too deep
        raise ValueError(f"the model config {path} is not a readable JSON file ({type(error).__name__}); delete it "
                         "and fetch it again") from None
    if not isinstance(config, dict) or not isinstance(config.get("model_cfg"), dict):
        raise ValueError(f"the model config {path} has no 'model_cfg' object, so it is not an open_clip model config; "
                         "delete it and fetch it again")
    # The loader reads these sections with .get() and **: a list or a number there would fail far from the file.
    model_cfg = config["model_cfg"]
    text_cfg = model_cfg.get("text_cfg", {})
    sections = {"model_cfg.text_cfg": text_cfg, "model_cfg.vision_cfg": model_cfg.get("vision_cfg", {}),
                "preprocess_cfg": config.get("preprocess_cfg", {})}
    if isinstance(text_cfg, dict):
        sections["model_cfg.text_cfg.tokenizer_kwargs"] = text_cfg.get("tokenizer_kwargs", {})
    for name, section in sections.items():
        if not isinstance(section, dict):
            raise ValueError(f"the model config {path} has {name} = {json.dumps(section)[:60]}, not an object; "
                             "delete it and fetch it again")
    return config
