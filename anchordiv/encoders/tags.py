"""open_clip pretrained tags (``open_clip:<arch>`` with ``pretrained=<tag>``) and checkpoint files: where a
tag's weights come from (the hub or a URL), where they are found on disk, their download, and the
checks before a checkpoint is read.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anchordiv.images import file_problem

from .advice import ALLOW_DOWNLOAD, PRETRAINED_PATH, AdvisedError, Argument, pretrained as pretrained_argument
from .advice import pretrained_stand_in
from .base import CheckpointNotFound
from .downloads import DownloadProgress, RemoteFile, Unreachable, verify_file
from .folders import checkpoint_folder, checkpoints_root, fetch_command, not_on_disk_error, own_file, read_manifest
from .hub_client import cached_hub_file, hub_file, hub_url
from .sizes import estimated_size_bytes
from .specs import parse_model_spec
from .url_client import url_file


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
                         progress: DownloadProgress | None = None) -> Path:
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
            raise AdvisedError(f"the hub repository {repo_id!r} holds none of {', '.join(filenames)} for "
                               f"open_clip:{arch} ", pretrained_argument(tag))
        url = tag_cfg.get("url") or ""
        return url_file(url, url_folder(cache_dir) / os.path.basename(url), sha256=url_sha256(url),
                        progress=progress, model=spec.label)
    except Unreachable as error:
        raise not_on_disk_error(spec, tag_remote_files(arch, tag, tag_cfg, cache_dir), reason=str(error)) from None


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
    progress: DownloadProgress | None = None,
) -> Checkpoint:
    """The weights file for ``arch`` named by ``pretrained`` (a file path or an open_clip tag).

    Looks only at the local disk unless ``allow_download``; see :mod:`.sources` for where.
    Raises :class:`CheckpointNotFound` naming the places looked in and how to supply the file,
    :class:`ModelUnavailable` when a download was allowed but its server cannot be reached.
    """
    from open_clip.pretrained import get_pretrained_cfg, list_pretrained_tags_by_model

    tags = list_pretrained_tags_by_model(arch)
    if pretrained is None:
        raise CheckpointNotFound(
            f"open_clip:{arch} needs ", pretrained_stand_in("PATH_OR_TAG"), ": a checkpoint file or one of its "
            f"open_clip tags ({', '.join(tags) or 'none published'}); anchordiv does not run randomly initialised "
            "models"
        )
    tag_cfg = get_pretrained_cfg(arch, str(pretrained))
    if not tag_cfg:
        path = Path(pretrained).expanduser()
        if os.path.lexists(path):
            refuse_unreadable(path)  # a pipe, device, link loop or /proc entry: say so, never block on it
            return Checkpoint(path=path)
        raise CheckpointNotFound(
            f"open_clip:{arch} ", pretrained_argument(str(pretrained)), " is neither an existing checkpoint file "
            f"nor an open_clip tag for {arch} (tags: {', '.join(tags) or 'none published'}); pass ",
            PRETRAINED_PATH, " or one of the tags"
        )
    tag = str(pretrained)
    found = find_cached_tag(arch, tag, tag_cfg, cache_dir)
    if found is not None:
        return found
    if allow_download:
        path = download_tag_weights(arch, tag, tag_cfg, cache_dir=cache_dir, progress=progress)
        url = tag_cfg.get("url") or ""
        expected = url_sha256(url) if url and path.name == os.path.basename(url) else blob_sha256(path)
        verified = expected if _is_sha256(expected) else None  # the download was checked against it just now
        return Checkpoint(path=path, tag=tag, tag_cfg=tag_cfg, expected_sha256=expected, sha256=verified)
    raise CheckpointNotFound(*_not_found_message(arch, tag, tag_cfg, cache_dir))


def blob_sha256(path: Path) -> str | None:
    """Hub-cache files are links to ``blobs/<sha256 of the content>``: a free checksum."""
    name = path.resolve().name
    return name if _is_sha256(name) else None


def _is_sha256(text: str | None) -> bool:
    return bool(text) and re.fullmatch(r"[0-9a-f]{64}", text) is not None


def find_cached_tag(arch: str, tag: str, tag_cfg: dict[str, Any], cache_dir: str | os.PathLike | None) -> Checkpoint | None:
    """The weights of ``arch`` / ``tag`` on disk (unverified), looked up in :mod:`.sources`' order."""
    hub = hub_location(tag_cfg)
    url = tag_cfg.get("url") or ""
    url_name = os.path.basename(url) if url else None

    own = checkpoint_folder(arch, tag)
    path = own_file(own, (hub[1] if hub else []) + ([url_name] if url_name else []))
    if path is not None:
        expected = url_sha256(url) if path.name == url_name else read_manifest(own).get(path.name)
        return Checkpoint(path=path, tag=tag, tag_cfg=tag_cfg, expected_sha256=expected)
    if hub:
        repo_id, filenames = hub
        for filename in filenames:
            cached = cached_hub_file(repo_id, filename, cache_dir)
            if cached is not None:
                return Checkpoint(path=cached, tag=tag, tag_cfg=tag_cfg, expected_sha256=blob_sha256(cached))
    if url_name:
        path = url_folder(cache_dir) / url_name
        if path.is_file():
            return Checkpoint(path=path, tag=tag, tag_cfg=tag_cfg, expected_sha256=url_sha256(url))
    return None


def _not_found_message(arch: str, tag: str, tag_cfg: dict[str, Any],
                       cache_dir: str | os.PathLike | None) -> tuple[str | Argument, ...]:
    """The parts of the message for a tag whose weights are not on this machine (downloads off)."""
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
        f"open_clip:{arch} ", pretrained_argument(tag), ": the weights are not on this machine, and anchordiv "
        f"downloads nothing unless asked. Download {source} and put it at {checkpoint_folder(arch, tag) / filename}, "
        "or pass ", pretrained_stand_in(f"/path/to/{filename}"), " (then the tag's preprocessing and QuickGELU "
        "settings are not applied), or allow the download with ", ALLOW_DOWNLOAD, f", or run `{fetch_command(spec)}` "
        f"on a machine with internet and copy the contents of DIR into {checkpoints_root()}{os.sep}. "
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
