"""Which files an open_clip model needs, where anchordiv finds them offline, and how it fetches them.

Looked up in order (a disk lookup only, never the network):

1. anchordiv's checkpoint folder ``<anchordiv cache>/checkpoints/open_clip/`` (``$ANCHORDIV_CACHE`` or
   ``~/.cache/anchordiv``): ``<arch>/<tag>/`` for a tag, ``hf-hub/ORG/REPO/`` for a hub model and for
   the Hugging Face tokenizer a hub model's config names (``hf_tokenizer_name``). The place
   to copy files fetched elsewhere (``python -m anchordiv fetch-model SPEC --to DIR``, whose ``DIR`` is
   laid out like ``<anchordiv cache>/checkpoints/``, with a ``SHA256SUMS`` list that is checked);
2. the Hugging Face hub cache (``HF_HUB_CACHE`` or ``cache_dir``);
3. for tags that come by URL, open_clip's download folder (``~/.cache/clip`` or ``cache_dir``).

Only with ``allow_download`` are missing files downloaded (:mod:`.downloads`). Finding a file is a
presence check; the load verifies what it reads (:func:`cached_hub_model`, :func:`verified_sha256`).
"""
from __future__ import annotations

import functools
import json
import os
import re
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from anchordiv.cache import cache_dir as anchordiv_cache_dir
from anchordiv.images import file_problem

from .base import CheckpointNotFound
from .downloads import (ModelUnavailable, ProgressCallback, RemoteFile, Unreachable, cached_hub_file, hub_file,
                        hub_url, url_file, verify_file, verify_hub_file)
from .sizes import estimated_size_bytes
from .specs import ModelSpec, check_hub_repo, parse_model_spec

HUB_CONFIG = "open_clip_config.json"
HUB_WEIGHTS = ("open_clip_model.safetensors", "open_clip_pytorch_model.bin")  # open_clip's order of preference
MANIFEST = "SHA256SUMS"
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


def checkpoints_root() -> Path:
    """anchordiv's checkpoint folder, ``<anchordiv cache>/checkpoints`` (not created here)."""
    return anchordiv_cache_dir() / "checkpoints"


def checkpoint_folder(arch: str, tag: str) -> Path:
    """Where anchordiv looks first for the weights of open_clip ``arch`` / ``tag`` (not created here)."""
    return checkpoints_root() / "open_clip" / arch / tag


def hub_model_folder(repo_id: str) -> Path:
    """Where anchordiv looks first for hub model ``ORG/REPO``'s config and weights (not created here)."""
    return checkpoints_root() / "open_clip" / "hf-hub" / repo_id


def fetch_command(spec: ModelSpec) -> str:
    """The command that fetches ``spec``'s files on a machine with internet, for copying here."""
    pretrained = f" --pretrained {spec.pretrained}" if spec.pretrained else ""
    return f"python -m anchordiv fetch-model {spec.model}{pretrained} --to DIR"


# -- where the files are ---------------------------------------------------------------------------------
def own_file(folder: Path, filenames: tuple[str, ...] | list[str]) -> Path | None:
    """The first of ``filenames`` in ``folder`` (unverified: its ``SHA256SUMS`` entry, :func:`_manifest`,
    is checked by whoever reads it)."""
    return next((folder / name for name in filenames if (folder / name).is_file()), None)


def _manifest(folder: Path) -> dict[str, str]:
    """``filename -> sha256`` from ``folder/SHA256SUMS`` (``sha256sum``'s format); empty when absent."""
    try:
        lines = (folder / MANIFEST).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    pairs = (line.split(maxsplit=1) for line in lines if line.strip())
    return {name.strip().lstrip("*"): digest.lower() for digest, name in (p for p in pairs if len(p) == 2)}


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
        listed = _manifest(config.parent)
        verify_file(config, listed.get(config.name), "model config")
        return HubModelFiles(config, weights, verify_file(weights, listed.get(weights.name), "weights"))
    verify_hub_file(config, HUB_CONFIG)
    digest = verify_hub_file(weights, weights.name)
    return HubModelFiles(config, weights, digest or verify_file(weights, None, "weights"))


def hub_model_files(repo_id: str, *, allow_download: bool = False, cache_dir: str | os.PathLike | None = None,
                    progress: ProgressCallback | None = None) -> HubModelFiles:
    """``ORG/REPO``'s config, weights and tokenizer files: cached, else (with ``allow_download``) downloaded.

    Raises :class:`~anchordiv.encoders.base.CheckpointNotFound` when they are missing and downloads
    are off, :class:`ModelUnavailable` when the hub cannot be reached, ``ValueError`` when the
    repository lacks them or a file fails verification.
    """
    spec = parse_model_spec(f"open_clip:hf-hub:{repo_id}")
    found = cached_hub_model(repo_id, cache_dir)
    if found is None and not allow_download:
        raise _not_here(spec, missing_files(spec, cache_dir), downloads_off=True)
    try:
        files = _with_tokenizer(found or _download_hub_model(spec, cache_dir, progress), allow_download=allow_download,
                                cache_dir=cache_dir, progress=progress, model=spec.label)
    except Unreachable as error:
        raise _not_here(spec, missing_files(spec, cache_dir), reason=str(error)) from None
    if files.tokenizer_repo and not files.tokenizer and not allow_download:
        raise _not_here(spec, missing_files(spec, cache_dir), downloads_off=True)
    return files


def _download_hub_model(spec: ModelSpec, cache_dir: str | os.PathLike | None,
                        progress: ProgressCallback | None) -> HubModelFiles:
    repo_id = str(spec.hub_repo)
    config = hub_file(repo_id, HUB_CONFIG, cache_dir=cache_dir, progress=progress, model=spec.label)
    if config is None:
        raise ValueError(f"the hub repository {repo_id!r} has no {HUB_CONFIG}, so it is not an open_clip model; "
                         "pick an open_clip repository (e.g. timm/ViT-B-16-SigLIP)")
    for name in HUB_WEIGHTS:
        weights = hub_file(repo_id, name, cache_dir=cache_dir, progress=progress, model=spec.label)
        if weights is not None:  # verified by hub_file: an LFS blob's name is its sha256
            return HubModelFiles(config, weights, _blob_sha256(weights) or verify_file(weights, None, "weights"))
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
                    progress: ProgressCallback | None, model: str) -> HubModelFiles:
    """``files`` with the tokenizer its config names: verified on disk, else (``allow_download``) fetched."""
    repo = hub_tokenizer_repo(files.config)
    if repo is None:
        return files
    found = tokenizer_on_disk(repo, cache_dir)
    own = hub_model_folder(repo)
    listed = _manifest(own) if found and found[0].parent == own else None
    for path in found:
        if listed is None:
            verify_hub_file(path, path.name)
        elif path.name in listed:
            verify_file(path, listed[path.name], "tokenizer file")
    if not found and allow_download:  # a 404 for a file this repository does not hold is fine
        found = [path for path in (hub_file(repo, name, cache_dir=cache_dir, progress=progress, model=model)
                                   for name in TOKENIZER_FILES) if path is not None]
    return replace(files, tokenizer_repo=repo, tokenizer=tuple(found))


def tag_remote_files(arch: str, tag: str, tag_cfg: dict[str, Any], cache_dir: str | os.PathLike | None) -> list[RemoteFile]:
    """The weights file of open_clip ``arch`` / ``tag`` as a :class:`RemoteFile` (hub first, as open_clip)."""
    folder = checkpoint_folder(arch, tag)
    size = estimated_size_bytes(arch)
    hub = hub_location(tag_cfg)
    if hub:
        repo_id, filenames = hub
        return [RemoteFile(filenames[-1], hub_url(repo_id, filenames[-1]), size, None, folder,
                           alternative=filenames[0] if len(filenames) > 1 else None, size_is_estimate=size is not None)]
    url = tag_cfg.get("url") or ""
    return [RemoteFile(os.path.basename(url), url, size, url_sha256(url), folder,
                       size_is_estimate=size is not None)] if url else []


def hub_location(tag_cfg: dict[str, Any]) -> tuple[str, list[str]] | None:
    """``(repo_id, filenames)`` of a tag on the Hugging Face hub, safetensors first as open_clip prefers."""
    from open_clip.constants import HF_SAFE_WEIGHTS_NAME, HF_WEIGHTS_NAME

    if not tag_cfg.get("hf_hub"):
        return None
    # open_clip's convention: "org/repo/" means the default file, "org/repo/file.bin" a named one.
    repo_id, filename = os.path.split(tag_cfg["hf_hub"])
    filename = filename or HF_WEIGHTS_NAME
    if filename == HF_WEIGHTS_NAME:
        return repo_id, [HF_SAFE_WEIGHTS_NAME, filename]
    if filename.endswith((".bin", ".pth")):
        return repo_id, [filename[:-4] + ".safetensors", filename]
    return repo_id, [filename]


def url_sha256(url: str) -> str | None:
    """The digest (or prefix) open_clip checks for a URL download, from the same two URL patterns."""
    if "openaipublic" in url:
        return url.split("/")[-2]
    if "mlfoundations" in url:
        return os.path.splitext(os.path.basename(url))[0].split("-")[-1]
    return None


def url_folder(cache_dir: str | os.PathLike | None) -> Path:
    """open_clip's folder for URL downloads (``~/.cache/clip`` unless ``cache_dir``)."""
    return Path(cache_dir or "~/.cache/clip").expanduser()


def download_tag_weights(arch: str, tag: str, tag_cfg: dict[str, Any], *, cache_dir: str | os.PathLike | None = None,
                         progress: ProgressCallback | None = None) -> Path:
    """Download the weights of ``arch`` / ``tag`` (verified); :class:`ModelUnavailable` when unreachable."""
    spec = parse_model_spec(f"open_clip:{arch}", tag)
    try:
        hub = hub_location(tag_cfg)
        if hub:
            repo_id, filenames = hub
            for filename in filenames:
                path = hub_file(repo_id, filename, cache_dir=cache_dir, progress=progress, model=spec.label)
                if path is not None:
                    return path
            raise ValueError(f"the hub repository {repo_id!r} holds none of {', '.join(filenames)} for "
                             f"open_clip:{arch} pretrained={tag!r}")
        url = tag_cfg.get("url") or ""
        return url_file(url, url_folder(cache_dir) / os.path.basename(url), sha256=url_sha256(url),
                        progress=progress, model=spec.label)
    except Unreachable as error:
        raise _not_here(spec, tag_remote_files(arch, tag, tag_cfg, cache_dir), reason=str(error)) from None


# -- what is missing, and fetching it for elsewhere --------------------------------------------------------
def missing_files(spec: ModelSpec | str, cache_dir: str | os.PathLike | None = None) -> list[RemoteFile]:
    """The files a load of ``spec`` would download (no network, and no hashing: a presence check, the
    load verifies); empty when all are on disk, and for the built-in model and a checkpoint file
    given by path."""
    spec = parse_model_spec(spec)
    if spec.hub_repo:
        return _missing_hub_files(spec.hub_repo, cache_dir)
    if spec.family != "open_clip" or spec.pretrained is None:
        return []
    from open_clip.pretrained import get_pretrained_cfg

    tag_cfg = get_pretrained_cfg(spec.arch, spec.pretrained)
    if not tag_cfg or find_cached_tag(spec.arch, spec.pretrained, tag_cfg, cache_dir) is not None:
        return []
    return tag_remote_files(spec.arch, spec.pretrained, tag_cfg, cache_dir)


def _missing_hub_files(repo_id: str, cache_dir: str | os.PathLike | None) -> list[RemoteFile]:
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


@functools.lru_cache(maxsize=1)
def hub_sources() -> dict[str, str]:
    """Hub repository -> the architecture whose tag open_clip's registry fetches from it."""
    import open_clip
    from open_clip.pretrained import get_pretrained_cfg

    sources: dict[str, str] = {}
    for arch, tag in open_clip.list_pretrained():
        location = hub_location(get_pretrained_cfg(arch, tag))
        if location:
            sources.setdefault(location[0], arch)
    return sources


def fetch_model(spec: ModelSpec | str, *, to: str | os.PathLike | None = None,
                cache_dir: str | os.PathLike | None = None, progress: ProgressCallback | None = None) -> list[Path]:
    """Download every file ``spec`` needs (verified) and return their paths.

    Without ``to`` the files stay in the caches a load reads. With ``to`` they are also copied into
    ``to``, laid out like anchordiv's checkpoint folder (``open_clip/<arch>/<tag>/`` or
    ``open_clip/hf-hub/ORG/REPO/``, and a hub model's Hugging Face tokenizer under
    ``open_clip/hf-hub/<its ORG/REPO>/``, each with a ``SHA256SUMS``), so that copying the contents of
    ``to`` into ``<anchordiv cache>/checkpoints/`` on a machine without network makes the model load there.
    A cached file that fails verification is refused (and deleted), never copied.
    """
    spec = parse_model_spec(spec)
    if spec.family != "open_clip":
        raise ValueError("the builtin model ships with anchordiv; there is nothing to fetch")
    if spec.hub_repo:
        files = hub_model_files(spec.hub_repo, allow_download=True, cache_dir=cache_dir, progress=progress)
        groups = {_hub_subfolder(spec.hub_repo): [(files.config, None), (files.weights, files.weights_sha256)]}
        if files.tokenizer_repo:
            groups.setdefault(_hub_subfolder(files.tokenizer_repo), []).extend((path, None) for path in files.tokenizer)
    else:
        checkpoint = resolve_checkpoint(spec.arch, spec.pretrained, allow_download=True, cache_dir=cache_dir,
                                        progress=progress)
        if checkpoint.tag is None:
            raise ValueError(f"pretrained={spec.pretrained!r} is a file already; copy it by hand, or name an "
                             f"open_clip tag for {spec.arch}")
        groups = {Path("open_clip", spec.arch, checkpoint.tag): [(checkpoint.path, verified_sha256(checkpoint))]}
    if to is None:
        return [path for entries in groups.values() for path, _ in entries]
    return [copy for subfolder, entries in groups.items()
            for copy in _copy_out(entries, Path(to).expanduser() / subfolder)]


def _hub_subfolder(repo_id: str) -> Path:
    return Path("open_clip", "hf-hub", *repo_id.split("/"))


def _copy_out(entries: list[tuple[Path, str | None]], folder: Path) -> list[Path]:
    """Each ``(path, verified sha256 or None)`` copied into ``folder`` (files, not links), listed in its
    ``SHA256SUMS`` (kept entries of files copied there before, as a model and its tokenizer share one)."""
    folder.mkdir(parents=True, exist_ok=True)
    listed, copies = _manifest(folder), []
    for path, digest in entries:
        copy = folder / path.name
        shutil.copyfile(path.resolve(), copy)
        listed[path.name] = digest or verify_file(copy, None, "copy")
        copies.append(copy)
    (folder / MANIFEST).write_text("".join(f"{digest}  {name}\n" for name, digest in sorted(listed.items())),
                                   encoding="utf-8")
    return copies


def _not_here(spec: ModelSpec, missing: list[RemoteFile], *, reason: str | None = None,
              downloads_off: bool = False) -> Exception:
    """The one-line error for a model whose files are missing: each file, its URL, size and folder."""
    files = "; ".join(f"{item.text()} into {item.folder}{os.sep}" for item in missing) or "its files"
    elsewhere = (f"or fetch them on a machine with internet with `{fetch_command(spec)}` and copy the contents of DIR "
                 f"into {checkpoints_root()}{os.sep}")
    if downloads_off:
        return CheckpointNotFound(f"{spec.model}{_pretrained(spec)} is not on this machine, and anchordiv downloads nothing "
                           f"unless asked: allow it with allow_download=True (CLI: --allow-download), or copy "
                           f"{files}, {elsewhere}")
    return ModelUnavailable(f"{spec.model}{_pretrained(spec)} is not on this machine and {reason}: copy {files}, "
                            f"{elsewhere}")


def _pretrained(spec: ModelSpec) -> str:
    return f" pretrained={spec.pretrained!r}" if spec.pretrained else ""


def read_hub_config(path: Path) -> dict[str, Any]:
    """A hub model's ``open_clip_config.json``: ``{"model_cfg": {...}, "preprocess_cfg": {...}}``, checked."""
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"{path} is not a readable JSON file ({type(error).__name__}); delete it and fetch it "
                         "again") from None
    if not isinstance(config, dict) or not isinstance(config.get("model_cfg"), dict):
        raise ValueError(f"{path} has no 'model_cfg' object, so it is not an open_clip model config")
    return config


# -- open_clip tags and checkpoint files ---------------------------------------------------------------------
@dataclass(frozen=True)
class Checkpoint:
    """A weights file on disk and what is known about it.

    ``tag_cfg`` is open_clip's pretrained config for ``tag`` (empty for a bare path);
    ``expected_sha256`` is a full digest or a prefix of one where the source publishes it;
    ``sha256`` the file's digest when already checked against a full one (a file just downloaded).
    """

    path: Path
    tag: str | None = None
    tag_cfg: dict[str, Any] = field(default_factory=dict)
    expected_sha256: str | None = None
    sha256: str | None = None


def resolve_checkpoint(
    arch: str,
    pretrained: str | os.PathLike | None,
    *,
    allow_download: bool = False,
    cache_dir: str | os.PathLike | None = None,
    progress: ProgressCallback | None = None,
) -> Checkpoint:
    """The weights file for ``arch`` named by ``pretrained`` (a file path or an open_clip tag).

    Looks only at the local disk unless ``allow_download``; see the module docstring for where.
    Raises :class:`CheckpointNotFound` naming the places looked in and how to supply the file,
    :class:`ModelUnavailable` when a download was allowed but its server cannot be reached.
    """
    from open_clip.pretrained import get_pretrained_cfg, list_pretrained_tags_by_model

    tags = list_pretrained_tags_by_model(arch)
    if pretrained is None:
        raise CheckpointNotFound(
            f"open_clip:{arch} needs pretrained= a checkpoint file or one of its open_clip tags "
            f"({', '.join(tags) or 'none published'}); anchordiv does not run randomly initialised models"
        )
    tag_cfg = get_pretrained_cfg(arch, str(pretrained))
    if not tag_cfg:
        path = Path(pretrained).expanduser()
        if os.path.lexists(path):
            refuse_unreadable(path)  # a pipe, device, link loop or /proc entry: say so, never block on it
            return Checkpoint(path=path)
        raise CheckpointNotFound(
            f"open_clip:{arch} pretrained={str(pretrained)!r} is neither an existing checkpoint file nor an "
            f"open_clip tag for {arch} (tags: {', '.join(tags) or 'none published'}); "
            "pass pretrained=/path/to/checkpoint or one of the tags"
        )
    tag = str(pretrained)
    found = find_cached_tag(arch, tag, tag_cfg, cache_dir)
    if found is not None:
        return found
    if allow_download:
        path = download_tag_weights(arch, tag, tag_cfg, cache_dir=cache_dir, progress=progress)
        url = tag_cfg.get("url") or ""
        expected = url_sha256(url) if url and path.name == os.path.basename(url) else _blob_sha256(path)
        verified = expected if _is_sha256(expected) else None  # the download was checked against it just now
        return Checkpoint(path=path, tag=tag, tag_cfg=tag_cfg, expected_sha256=expected, sha256=verified)
    raise CheckpointNotFound(_not_found_message(arch, tag, tag_cfg, cache_dir))


def _blob_sha256(path: Path) -> str | None:
    """Hub-cache files are links to ``blobs/<sha256 of the content>``: a free checksum."""
    name = path.resolve().name
    return name if _is_sha256(name) else None


def _is_sha256(text: str | None) -> bool:
    return bool(text) and re.fullmatch(r"[0-9a-f]{64}", text) is not None


def find_cached_tag(arch: str, tag: str, tag_cfg: dict[str, Any], cache_dir: str | os.PathLike | None) -> Checkpoint | None:
    """The weights of ``arch`` / ``tag`` on disk (unverified), looked up in the module docstring's order."""
    hub = hub_location(tag_cfg)
    url = tag_cfg.get("url") or ""
    url_name = os.path.basename(url) if url else None

    own = checkpoint_folder(arch, tag)
    path = own_file(own, (hub[1] if hub else []) + ([url_name] if url_name else []))
    if path is not None:
        expected = url_sha256(url) if path.name == url_name else _manifest(own).get(path.name)
        return Checkpoint(path=path, tag=tag, tag_cfg=tag_cfg, expected_sha256=expected)
    if hub:
        repo_id, filenames = hub
        for filename in filenames:
            cached = cached_hub_file(repo_id, filename, cache_dir)
            if cached is not None:
                return Checkpoint(path=cached, tag=tag, tag_cfg=tag_cfg, expected_sha256=_blob_sha256(cached))
    if url_name:
        path = url_folder(cache_dir) / url_name
        if path.is_file():
            return Checkpoint(path=path, tag=tag, tag_cfg=tag_cfg, expected_sha256=url_sha256(url))
    return None


def _not_found_message(arch: str, tag: str, tag_cfg: dict[str, Any], cache_dir: str | os.PathLike | None) -> str:
    from huggingface_hub import constants

    hub = hub_location(tag_cfg)
    url = tag_cfg.get("url") or ""
    searched = [str(checkpoint_folder(arch, tag))]
    if hub:
        repo_id, filenames = hub
        filename, source = filenames[-1], hub_url(repo_id, filenames[-1])
        searched.append(f"the Hugging Face cache {cache_dir or constants.HF_HUB_CACHE} (repo {repo_id})")
    if url:
        if not hub:
            filename, source = os.path.basename(url), url
        searched.append(str(url_folder(cache_dir) / os.path.basename(url)))
    spec = parse_model_spec(f"open_clip:{arch}", tag)
    return (
        f"open_clip:{arch} pretrained={tag!r}: the weights are not on this machine, and anchordiv downloads "
        f"nothing unless asked. Download {source} and put it at {checkpoint_folder(arch, tag) / filename}, "
        f"or pass pretrained=/path/to/{filename} (then the tag's preprocessing and QuickGELU settings are not applied), "
        f"or allow the download with allow_download=True (CLI: --allow-download), or run `{fetch_command(spec)}` on a "
        f"machine with internet and copy the contents of DIR into {checkpoints_root()}{os.sep}. "
        f"Searched: {'; '.join(searched)}"
    )


def verified_sha256(checkpoint: Checkpoint) -> str:
    """sha256 of the checkpoint file, checked against the published digest where there is one (once:
    a file downloaded and checked just now is not hashed again)."""
    refuse_unreadable(checkpoint.path)
    if checkpoint.sha256:
        return checkpoint.sha256
    return verify_file(checkpoint.path, checkpoint.expected_sha256, f"open_clip tag {checkpoint.tag!r}:"
                       if checkpoint.tag else "checkpoint")


def refuse_unreadable(path: Path) -> None:
    """ValueError unless ``path`` is a regular file outside /proc, /sys and /dev (checked before any read)."""
    problem = file_problem(path)
    if problem is not None:
        raise ValueError(f"checkpoint {path}: {problem}; pass the path of a checkpoint file "
                         "(.pt, .pth, .bin or .safetensors)")
