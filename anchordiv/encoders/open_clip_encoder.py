"""open_clip models as :class:`~anchordiv.encoders.base.Encoder`, loaded offline.

Three steps, as in open_clip itself: resolve the weights file (:func:`resolve_checkpoint`, which
never touches the network unless ``allow_download=True``), build the model and load the weights
(``open_clip.create_model`` with that file), build the inference transform and tokenizer.

``pretrained`` is either a checkpoint file (state dict as ``.pt``/``.pth``/``.bin``/``.safetensors``)
or an open_clip pretrained tag such as ``"laion2b_s34b_b79k"``. A tag is looked up, in order, in

1. anchordiv's checkpoint folder ``<anchordiv cache>/checkpoints/open_clip/<arch>/<tag>/``
   (``$ANCHORDIV_CACHE`` or ``~/.cache/anchordiv``): the place to copy a file fetched elsewhere;
2. the Hugging Face hub cache (``huggingface_hub.try_to_load_from_cache``: a disk lookup only);
3. open_clip's URL download folder (``~/.cache/clip``).

A tag also carries the preprocessing (mean/std, resize mode) and QuickGELU setting the weights
were trained with; a bare file path gets the architecture's defaults. So a tag's weights are
best supplied through location 1, not as a path.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import torch
from PIL import Image

from anchordiv.cache import cache_dir as anchordiv_cache_dir
from anchordiv.cache import sha256_file
from anchordiv.images import file_problem

from .base import CheckpointNotFound, Encoder

_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Checkpoint:
    """A weights file on disk and what is known about it.

    ``tag_cfg`` is open_clip's pretrained config for ``tag`` (empty for a bare path);
    ``expected_sha256`` is a full digest or a prefix of one where the source publishes it.
    """

    path: Path
    tag: str | None = None
    tag_cfg: dict[str, Any] = field(default_factory=dict)
    expected_sha256: str | None = None


class OpenClipEncoder(Encoder):
    """An open_clip CLIP model: ``encode_image`` / ``encode_text`` with its own transform and tokenizer."""

    def __init__(self, model: torch.nn.Module, preprocess, tokenizer, *, name: str, dim: int,
                 device: str | torch.device | None = None):
        super().__init__(name=name, dim=dim, logit_scale=float(model.logit_scale.detach().exp()), device=device)
        self.model = self._prepare(model)
        self.preprocess = preprocess
        self.tokenizer = tokenizer

    def _encode_image_batch(self, images: Sequence[Image.Image]) -> torch.Tensor:
        pixels = torch.stack([self.preprocess(image) for image in images]).to(self.device)
        return self.model.encode_image(pixels)

    def _encode_text_batch(self, texts: Sequence[str]) -> torch.Tensor:
        return self.model.encode_text(self.tokenizer(list(texts)).to(self.device))


def load_open_clip_encoder(
    arch: str,
    pretrained: str | os.PathLike | None,
    device: str | torch.device | None = None,
    *,
    allow_download: bool = False,
    cache_dir: str | os.PathLike | None = None,
) -> OpenClipEncoder:
    """An :class:`OpenClipEncoder` for open_clip architecture ``arch`` with weights ``pretrained``.

    ``cache_dir`` is open_clip's: the hub cache and URL download folder (defaults as in open_clip).
    Raises :class:`CheckpointNotFound` when the weights are not on disk and ``allow_download`` is
    false, and ``ValueError`` for an unknown architecture or a file that does not fit it.
    """
    import open_clip
    from open_clip.transform import PreprocessCfg, image_transform_v2

    # Checked against the local registry first: get_model_config would fetch "hf-hub:..." names from the hub.
    if arch not in open_clip.list_models():
        raise ValueError(
            f"open_clip has no architecture {arch!r}; write open_clip:<arch> with <arch> one of the "
            f"{len(open_clip.list_models())} names in open_clip.list_models(), e.g. open_clip:ViT-B-32"
        )
    model_cfg = open_clip.get_model_config(arch)
    if not allow_download:
        _refuse_hub_dependencies(arch, model_cfg)
    checkpoint = resolve_checkpoint(arch, pretrained, allow_download=allow_download, cache_dir=cache_dir)
    digest = _verified_sha256(checkpoint)
    try:
        model = open_clip.create_model(
            arch,
            pretrained=str(checkpoint.path),
            precision="fp32",
            device="cpu",
            # A tag's weights were trained with QuickGELU or not; open_clip only warns on a mismatch.
            force_quick_gelu=bool(checkpoint.tag_cfg.get("quick_gelu", False)),
            force_preprocess_cfg=checkpoint.tag_cfg,
            # Off so that no tower fetches its own base weights from a hub; ours are in the checkpoint.
            pretrained_image=False,
            pretrained_text=False,
            weights_only=True,
        )
    except Exception as error:  # torch/safetensors/open_clip raise many types for a file that does not fit
        # One line, cut short: a state-dict mismatch lists every missing key.
        detail = " ".join(str(error).split())[:300]
        raise ValueError(
            f"could not load {checkpoint.path} as open_clip {arch!r} weights ({type(error).__name__}: {detail}); "
            "check that the file is a checkpoint for this architecture"
        ) from error
    preprocess = image_transform_v2(PreprocessCfg(**open_clip.get_model_preprocess_cfg(model)), is_train=False)
    tokenizer = open_clip.get_tokenizer(arch)
    source = f"{arch}/{checkpoint.tag}" if checkpoint.tag else arch
    return OpenClipEncoder(model, preprocess, tokenizer, name=f"open_clip:{source}@{digest[:16]}",
                           dim=model_cfg["embed_dim"], device=device)


def resolve_checkpoint(
    arch: str,
    pretrained: str | os.PathLike | None,
    *,
    allow_download: bool = False,
    cache_dir: str | os.PathLike | None = None,
) -> Checkpoint:
    """The weights file for ``arch`` named by ``pretrained`` (a file path or an open_clip tag).

    Looks only at the local disk unless ``allow_download``; see the module docstring for where.
    Raises :class:`CheckpointNotFound` naming the places looked in and how to supply the file.
    """
    from open_clip.pretrained import download_pretrained, get_pretrained_cfg, list_pretrained_tags_by_model

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
            _refuse_unreadable(path)  # a pipe, device, link loop or /proc entry: say so, never block on it
            return Checkpoint(path=path)
        raise CheckpointNotFound(
            f"open_clip:{arch} pretrained={str(pretrained)!r} is neither an existing checkpoint file nor an "
            f"open_clip tag for {arch} (tags: {', '.join(tags) or 'none published'}); "
            "pass pretrained=/path/to/checkpoint or one of the tags"
        )
    tag = str(pretrained)
    found = _find_cached(arch, tag, tag_cfg, cache_dir)
    if found is not None:
        return found
    if allow_download:
        path = Path(download_pretrained(tag_cfg, cache_dir=None if cache_dir is None else str(cache_dir)))
        return Checkpoint(path=path, tag=tag, tag_cfg=tag_cfg, expected_sha256=_hf_blob_sha256(path))
    raise CheckpointNotFound(_not_found_message(arch, tag, tag_cfg, cache_dir))


def checkpoint_folder(arch: str, tag: str) -> Path:
    """Where anchordiv looks first for the weights of open_clip ``arch`` / ``tag`` (not created here)."""
    return anchordiv_cache_dir() / "checkpoints" / "open_clip" / arch / tag


def _hf_location(tag_cfg: dict[str, Any]) -> tuple[str, list[str]] | None:
    """``(repo_id, filenames)`` on the Hugging Face hub, safetensors first as open_clip prefers."""
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


def _url_sha256(url: str) -> str | None:
    """The digest (or prefix) open_clip checks for a URL download, from the same two URL patterns."""
    if "openaipublic" in url:
        return url.split("/")[-2]
    if "mlfoundations" in url:
        return os.path.splitext(os.path.basename(url))[0].split("-")[-1]
    return None


def _hf_blob_sha256(path: Path) -> str | None:
    """Hub-cache files are links to ``blobs/<sha256 of the content>``: a free checksum."""
    name = path.resolve().name
    return name if _SHA256.fullmatch(name) else None


def _find_cached(arch: str, tag: str, tag_cfg: dict[str, Any], cache_dir: str | os.PathLike | None) -> Checkpoint | None:
    from huggingface_hub import try_to_load_from_cache

    hf = _hf_location(tag_cfg)
    url = tag_cfg.get("url") or ""
    url_name = os.path.basename(url) if url else None

    own = checkpoint_folder(arch, tag)
    for filename in (hf[1] if hf else []) + ([url_name] if url_name else []):
        if (own / filename).is_file():
            expected = _url_sha256(url) if filename == url_name else None
            return Checkpoint(path=own / filename, tag=tag, tag_cfg=tag_cfg, expected_sha256=expected)
    if hf:
        repo_id, filenames = hf
        for filename in filenames:
            cached = try_to_load_from_cache(repo_id, filename, cache_dir=cache_dir)
            if isinstance(cached, str):  # else None or the "known not to exist" sentinel
                path = Path(cached)
                return Checkpoint(path=path, tag=tag, tag_cfg=tag_cfg, expected_sha256=_hf_blob_sha256(path))
    if url_name:
        path = Path(cache_dir or "~/.cache/clip").expanduser() / url_name
        if path.is_file():
            return Checkpoint(path=path, tag=tag, tag_cfg=tag_cfg, expected_sha256=_url_sha256(url))
    return None


def _not_found_message(arch: str, tag: str, tag_cfg: dict[str, Any], cache_dir: str | os.PathLike | None) -> str:
    from huggingface_hub import constants

    hf = _hf_location(tag_cfg)
    url = tag_cfg.get("url") or ""
    searched = [str(checkpoint_folder(arch, tag))]
    if hf:
        repo_id, filenames = hf
        filename, source = filenames[-1], f"https://huggingface.co/{repo_id}/resolve/main/{filenames[-1]}"
        searched.append(f"the Hugging Face cache {cache_dir or constants.HF_HUB_CACHE} (repo {repo_id})")
    if url:
        if not hf:
            filename, source = os.path.basename(url), url
        searched.append(str(Path(cache_dir or "~/.cache/clip").expanduser() / os.path.basename(url)))
    return (
        f"open_clip:{arch} pretrained={tag!r}: the weights are not on this machine, and anchordiv downloads "
        f"nothing unless asked. Download {source} and put it at {checkpoint_folder(arch, tag) / filename}, "
        f"or pass pretrained=/path/to/{filename} (then the tag's preprocessing and QuickGELU settings are not applied), "
        f"or allow the download with allow_download=True (CLI: --allow-download). Searched: {'; '.join(searched)}"
    )


def _verified_sha256(checkpoint: Checkpoint) -> str:
    """sha256 of the checkpoint file, checked against the published digest where there is one."""
    _refuse_unreadable(checkpoint.path)
    digest = sha256_file(checkpoint.path)
    if checkpoint.expected_sha256 and not digest.startswith(checkpoint.expected_sha256):
        raise ValueError(
            f"{checkpoint.path} has sha256 {digest}, but {checkpoint.tag!r} is published with "
            f"{checkpoint.expected_sha256}: the file is damaged or incomplete; delete it and fetch it again"
        )
    return digest


def _refuse_unreadable(path: Path) -> None:
    """ValueError unless ``path`` is a regular file outside /proc, /sys and /dev (checked before any read)."""
    problem = file_problem(path)
    if problem is not None:
        raise ValueError(f"checkpoint {path}: {problem}; pass the path of a checkpoint file "
                         "(.pt, .pth, .bin or .safetensors)")


def _refuse_hub_dependencies(arch: str, model_cfg: dict[str, Any]) -> None:
    """Some architectures fetch a tokenizer or text-tower config from a hub when built; say so up front."""
    text_cfg = model_cfg.get("text_cfg", {})
    needs = [f"the Hugging Face text model config {text_cfg['hf_model_name']!r}"] if text_cfg.get("hf_model_name") else []
    if text_cfg.get("hf_tokenizer_name"):
        needs.append(f"the Hugging Face tokenizer {text_cfg['hf_tokenizer_name']!r}")
    elif "siglip" in arch.lower():
        needs.append("a SentencePiece vocabulary from storage.googleapis.com")
    if needs:
        raise ValueError(
            f"open_clip:{arch} needs {' and '.join(needs)}, which open_clip fetches from the network when the model "
            "is built; anchordiv loads it only with allow_download=True (CLI: --allow-download). "
            "Offline, use an architecture with open_clip's bundled tokenizer, e.g. ViT-B-32"
        )
