"""What a load of an open_clip model would download (:func:`missing_files`), and fetching a model's files
for another machine (:func:`fetch_model`); the order in which anchordiv looks for them offline.

Looked up in order (a disk lookup only, never the network):

1. anchordiv's checkpoint folder ``<anchordiv cache>/checkpoints/open_clip/`` (``$ANCHORDIV_CACHE`` or
   ``~/.cache/anchordiv``): ``<arch>/<tag>/`` for a tag, ``hf-hub/ORG/REPO/`` for a hub model and for
   the Hugging Face tokenizer a hub model's config names (``hf_tokenizer_name``). The place
   to copy files fetched elsewhere (``python -m anchordiv fetch-model SPEC --to DIR``, whose ``DIR`` is
   laid out like ``<anchordiv cache>/checkpoints/``, with a ``SHA256SUMS`` list that is checked);
2. the Hugging Face hub cache (``HF_HUB_CACHE`` or ``cache_dir``);
3. for tags that come by URL, open_clip's download folder (``~/.cache/clip`` or ``cache_dir``).

anchordiv's folders are :mod:`.folders`; hub models' files :mod:`.hub_models`, open_clip tags' files
:mod:`.tags`. Only with ``allow_download`` are missing files downloaded (:mod:`.hub_client`,
:mod:`.url_client`). Finding a file is a presence check; the load verifies what it reads
(:func:`.hub_models.cached_hub_model`, :func:`.tags.verified_sha256`).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from .advice import AdvisedError, pretrained
from .downloads import DownloadProgress, RemoteFile, verify_file
from .folders import MANIFEST, read_manifest
from .hub_models import hub_model_files, missing_hub_files
from .specs import ModelSpec, parse_model_spec
from .tags import find_cached_tag, resolve_checkpoint, tag_remote_files, verified_sha256


def missing_files(spec: ModelSpec | str, cache_dir: str | os.PathLike | None = None) -> list[RemoteFile]:
    """The files a load of ``spec`` would download (no network, and no hashing: a presence check, the
    load verifies); empty when all are on disk, and for the built-in model and a checkpoint file
    given by path."""
    spec = parse_model_spec(spec)
    if spec.hub_repo:
        return missing_hub_files(spec.hub_repo, cache_dir)
    if spec.family != "open_clip" or spec.pretrained is None:
        return []
    from open_clip.pretrained import get_pretrained_cfg

    tag_cfg = get_pretrained_cfg(spec.arch, spec.pretrained)
    if not tag_cfg or find_cached_tag(spec.arch, spec.pretrained, tag_cfg, cache_dir) is not None:
        return []
    return tag_remote_files(spec.arch, spec.pretrained, tag_cfg, cache_dir)


def fetch_model(spec: ModelSpec | str, *, to: str | os.PathLike | None = None,
                cache_dir: str | os.PathLike | None = None, progress: DownloadProgress | None = None) -> list[Path]:
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
            raise AdvisedError(pretrained(str(spec.pretrained)), " is a file already; copy it by hand, or name an "
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
    listed, copies = read_manifest(folder), []
    for path, digest in entries:
        copy = folder / path.name
        shutil.copyfile(path.resolve(), copy)
        listed[path.name] = digest or verify_file(copy, None, "copy")
        copies.append(copy)
    (folder / MANIFEST).write_text("".join(f"{digest}  {name}\n" for name, digest in sorted(listed.items())),
                                   encoding="utf-8")
    return copies
