"""open_clip models as :class:`~anchordiv.encoders.base.Encoder`, loaded from files on disk.

Three steps, as in open_clip itself: resolve the files (:mod:`.sources`, which never touches the
network unless ``allow_download=True``, and verifies what it finds), build the model and load the
weights, build the inference transform and tokenizer. The weights, the configs and a hub model's
Hugging Face tokenizer files come through anchordiv's own clients (:mod:`.hub_client`,
:mod:`.url_client`: bounded, watched, verified); open_clip is given local files only (a checkpoint
path, or a ``local-dir:`` folder holding a hub model's config). Two fetches bypass them, and only
with ``allow_download=True``: a text tower built from a Hugging Face model (``hf_model_name``), whose
config transformers fetches when the model is built, and a Hugging Face tokenizer that does not load
from the files fetched for it (or whose name is not ``ORG/REPO``), which transformers then fetches itself.

``pretrained`` is either a checkpoint file (state dict as ``.pt``/``.pth``/``.bin``/``.safetensors``)
or an open_clip pretrained tag such as ``"laion2b_s34b_b79k"``; see :mod:`.sources` for where a
tag's file is looked up. A tag also carries the preprocessing (mean/std, resize mode) and QuickGELU
setting the weights were trained with; a bare file path gets the architecture's defaults. So a tag's
weights are best supplied through anchordiv's checkpoint folder, not as a path.

A hub model (``hf-hub:ORG/REPO``) carries its architecture and preprocessing in its
``open_clip_config.json``; its tokenizer is open_clip's bundled one unless the config names a Hugging
Face tokenizer (``hf_tokenizer_name``), loaded from anchordiv's folder ``hf-hub/<its ORG/REPO>/``
(where ``fetch-model --to`` puts it), else from the hub cache.
"""
from __future__ import annotations

import contextlib
import logging
import os
import pickle
from pathlib import Path
from typing import Any, Iterator, Sequence

import torch
from PIL import Image

from .advice import ALLOW_DOWNLOAD, AdvisedError
from .base import CheckpointNotFound, Encoder
from .downloads import DownloadProgress
from .folders import checkpoint_folder
from .hub_models import HubModelFiles, hub_model_files, read_hub_config
from .tags import Checkpoint, resolve_checkpoint, verified_sha256

__all__ = ["Checkpoint", "OpenClipEncoder", "checkpoint_folder", "load_hub_encoder", "load_open_clip_encoder",
           "resolve_checkpoint"]


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
    progress: DownloadProgress | None = None,
) -> OpenClipEncoder:
    """An :class:`OpenClipEncoder` for open_clip architecture ``arch`` with weights ``pretrained``.

    ``cache_dir`` is the hub cache and URL download folder (defaults as in open_clip); ``progress``
    receives a :class:`~anchordiv.encoders.downloads.DownloadStatus` while weights download.
    Raises :class:`CheckpointNotFound` when the weights are not on disk and ``allow_download`` is
    false (:class:`~anchordiv.encoders.downloads.ModelUnavailable` when allowed but unreachable),
    and ``ValueError`` for an unknown architecture or a file that does not fit it.
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
    checkpoint = resolve_checkpoint(arch, pretrained, allow_download=allow_download, cache_dir=cache_dir,
                                    progress=progress)
    digest = verified_sha256(checkpoint)
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
        raise _unfit(checkpoint, arch, error) from error
    preprocess = image_transform_v2(PreprocessCfg(**open_clip.get_model_preprocess_cfg(model)), is_train=False)
    tokenizer = open_clip.get_tokenizer(arch)
    source = f"{arch}/{checkpoint.tag}" if checkpoint.tag else arch
    return OpenClipEncoder(model, preprocess, tokenizer, name=f"open_clip:{source}@{digest[:16]}",
                           dim=model_cfg["embed_dim"], device=device)


def load_hub_encoder(
    repo_id: str,
    device: str | torch.device | None = None,
    *,
    allow_download: bool = False,
    cache_dir: str | os.PathLike | None = None,
    progress: DownloadProgress | None = None,
) -> OpenClipEncoder:
    """An :class:`OpenClipEncoder` for the hub model ``ORG/REPO`` (``open_clip:hf-hub:ORG/REPO``).

    Its ``open_clip_config.json`` and weights come from anchordiv's checkpoint folder or the hub cache,
    else (with ``allow_download``) from the hub; open_clip then builds the model from that local folder.
    Raises as :func:`load_open_clip_encoder` does.
    """
    # The files first: a model that is not there is refused without importing open_clip (seconds).
    files = hub_model_files(repo_id, allow_download=allow_download, cache_dir=cache_dir, progress=progress)
    import open_clip
    from open_clip.transform import PreprocessCfg, image_transform_v2

    model_cfg = read_hub_config(files.config)["model_cfg"]
    text_cfg = model_cfg.get("text_cfg", {})
    if text_cfg.get("hf_model_name") and not allow_download:
        raise CheckpointNotFound(
            f"open_clip:hf-hub:{repo_id} builds its text tower from the Hugging Face model "
            f"{text_cfg['hf_model_name']!r}, which transformers fetches when the model is built; anchordiv allows "
            "that only with ", ALLOW_DOWNLOAD)
    folder = f"local-dir:{files.config.parent}"
    # Built from the local config alone (load_weights=False), then given the verified weights file:
    # the folder may hold other files, and open_clip would pick one by its own rules. Each step's
    # failure names its own file: the config's fields and preprocessing, then the weights against them.
    try:
        with _without_random_init_warning(folder):
            model = open_clip.create_model(folder, load_weights=False, precision="fp32", device="cpu",
                                           pretrained_image=False, pretrained_text=False, weights_only=True)
        preprocess = image_transform_v2(PreprocessCfg(**open_clip.get_model_preprocess_cfg(model)), is_train=False)
        preprocess(Image.new("RGB", (8, 8)))  # a bad mean or interpolation fails here, not at the first image
    except Exception as error:  # the model's constructor and torchvision raise many types for a field they cannot use
        raise _bad_config(files.config, repo_id, error) from error
    try:
        open_clip.load_checkpoint(model, str(files.weights), strict=True, weights_only=True)
    except Exception as error:  # as in load_open_clip_encoder: many types for files that do not fit
        raise (_unreadable_hub_weights(files, repo_id, error) if _while_reading(error)
               else _mismatched(files, repo_id, error)) from error
    tokenizer = _hub_tokenizer(repo_id, folder, files, text_cfg, allow_download, cache_dir)
    return OpenClipEncoder(model, preprocess, tokenizer, name=f"open_clip:hf-hub:{repo_id}@{files.weights_sha256[:16]}",
                           dim=model_cfg["embed_dim"], device=device)


def _hub_tokenizer(repo_id: str, folder: str, files: HubModelFiles, text_cfg: dict[str, Any], allow_download: bool,
                   cache_dir: str | os.PathLike | None):
    """open_clip's bundled tokenizer, or the Hugging Face one the config names: from the folder that
    holds the files ``files`` found for it (anchordiv's own, else the hub cache's snapshot); only when
    that fails, or for a name that is not ``ORG/REPO``, by name through transformers (fetching it with
    ``allow_download``)."""
    import open_clip
    from open_clip.tokenizer import HFTokenizer

    name = text_cfg.get("hf_tokenizer_name")
    if not name:
        return open_clip.get_tokenizer(folder)
    # A folder, not the name: offline, transformers looks a name up in the hub cache only with the
    # repository's config.json there (or a note that it has none), which a tokenizer repository may lack.
    folders = {path.parent for path in files.tokenizer}
    sources = [(str(folders.pop()), True)] if len(folders) == 1 else []
    if allow_download or not files.tokenizer_repo:
        sources.append((name, not allow_download))
    errors = []
    for source, local_only in sources:
        try:
            return HFTokenizer(source, context_length=text_cfg.get("context_length", 77),
                               cache_dir=None if cache_dir is None else str(cache_dir),
                               tokenizer_mode=text_cfg.get("tokenizer_mode"), local_files_only=local_only,
                               **text_cfg.get("tokenizer_kwargs", {}))
        except (OSError, ValueError) as error:  # transformers' errors for files it lacks or cannot read
            errors.append(error)
    how = (("could not be loaded or fetched",) if allow_download else
           ("is not on this machine, and anchordiv downloads nothing unless asked (", ALLOW_DOWNLOAD, ")"))
    raise CheckpointNotFound(f"open_clip:hf-hub:{repo_id} uses the Hugging Face tokenizer {name!r}, which ", *how,
                             f" ({' '.join(str(errors[0]).split())[:160]})") from None


@contextlib.contextmanager
def _without_random_init_warning(folder: str) -> Iterator[None]:
    """Drop open_clip's "initialized randomly" warning for ``folder`` (its weights come right after),
    and keep its ``logging.warning`` from configuring the root logger (a NullHandler meanwhile)."""
    root = logging.getLogger()
    drop = _DropMessage(f"No pretrained weights loaded for model '{folder}'")
    placeholder = logging.NullHandler()
    root.addFilter(drop)
    root.addHandler(placeholder)
    try:
        yield
    finally:
        root.removeHandler(placeholder)
        root.removeFilter(drop)


class _DropMessage(logging.Filter):
    def __init__(self, start: str):
        super().__init__()
        self.start = start

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.start)


def _unfit(checkpoint: Checkpoint, arch: str, error: Exception) -> ValueError:
    """The one-line error for weights that open_clip could not load into ``arch``: a file it could not
    even read (damaged, or not a checkpoint at all), or one that does not fit the architecture. What
    to do names no argument: the command line and the explorer each choose the file their own way."""
    path, readable = checkpoint.path, not _while_reading(error)
    wanted = f"a checkpoint saved for open_clip {arch!r} (a state dict as .pt, .pth, .bin or .safetensors)"
    if checkpoint.tag:  # found by its tag where it was fetched (or copied) to: fetch it again
        instead = (f"delete it and fetch it again (python -m anchordiv fetch-model open_clip:{arch} --pretrained "
                   f"{checkpoint.tag})")
    else:
        instead = f"use {wanted}" if readable else f"use a sound copy of it, or another file: {wanted}"
    if readable:
        return ValueError(f"could not load {path} as open_clip {arch!r} weights ({_described(error)}); the file is a "
                          f"checkpoint of another architecture or model: {instead}")
    return ValueError(f"{path} is not a readable checkpoint: it is damaged (e.g. cut short by a copy or download) or "
                      f"not a checkpoint at all ({_described(error, first_sentence=True)}); {instead}")


def _bad_config(path: Path, repo_id: str, error: Exception) -> ValueError:
    """The one-line error for a hub model's config that open_clip cannot build a model or its
    preprocessing from: the config is named, not the weights, which were not read."""
    return ValueError(f"open_clip cannot build open_clip:hf-hub:{repo_id} from its model config {path} "
                      f"({_described(error)}); the config is damaged or from another model: delete that "
                      f"open_clip_config.json and fetch it again (python -m anchordiv fetch-model "
                      f"open_clip:hf-hub:{repo_id}), or pick another model if the repository publishes it so")


def _mismatched(files: HubModelFiles, repo_id: str, error: Exception) -> ValueError:
    """The one-line error for a hub model's weights that do not fit the model its config describes:
    either file may be the stray one, so both are named."""
    return ValueError(f"the weights {files.weights} do not fit the model that the config {files.config} describes "
                      f"({_described(error)}); the two files come from different models: delete both "
                      f"and fetch them again (python -m anchordiv fetch-model open_clip:hf-hub:{repo_id})")


def _unreadable_hub_weights(files: HubModelFiles, repo_id: str, error: Exception) -> ValueError:
    """The one-line error for a hub model's weights file that cannot be read at all: that file alone
    is named (the config built a model; the weights never got as far as being compared with it)."""
    return ValueError(f"the weights {files.weights} of open_clip:hf-hub:{repo_id} are not a readable checkpoint: "
                      f"the file is damaged (e.g. cut short by a copy or download) or not a checkpoint at all "
                      f"({_described(error, first_sentence=True)}); delete it and fetch it again "
                      f"(python -m anchordiv fetch-model open_clip:hf-hub:{repo_id})")


def _while_reading(error: BaseException) -> bool:
    """Whether ``error`` arose while open_clip read the checkpoint file (in its ``load_state_dict``:
    torch.load or safetensors, and the first look at what they returned), before any weight was
    compared with the model: the file is then damaged or not a checkpoint, whatever the model."""
    from open_clip import factory

    reading = getattr(getattr(factory, "load_state_dict", None), "__code__", None)
    trace = error.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code is reading:
            return True
        trace = trace.tb_next
    return False


def _described(error: Exception, first_sentence: bool = False) -> str:
    """``error`` for a one-line message: its type and its text on one line, cut short (a mismatch
    lists every key of the state dict), to its ``first_sentence`` where the rest is a reader's
    advice to its own users. Never torch's advice on an unpickling error (to load the file with
    ``weights_only=False``, which runs whatever code the file holds): its type alone."""
    if isinstance(error, pickle.UnpicklingError) or "weights_only" in str(error):
        return type(error).__name__
    detail = " ".join(str(error).split())
    detail = (detail.split(". ")[0] if first_sentence else detail)[:300]
    return f"{type(error).__name__}: {detail}" if detail else type(error).__name__


def _refuse_hub_dependencies(arch: str, model_cfg: dict[str, Any]) -> None:
    """Some architectures fetch a tokenizer or text-tower config from a hub when built; say so up front."""
    text_cfg = model_cfg.get("text_cfg", {})
    needs = [f"the Hugging Face text model config {text_cfg['hf_model_name']!r}"] if text_cfg.get("hf_model_name") else []
    if text_cfg.get("hf_tokenizer_name"):
        needs.append(f"the Hugging Face tokenizer {text_cfg['hf_tokenizer_name']!r}")
    elif "siglip" in arch.lower():
        needs.append("a SentencePiece vocabulary from storage.googleapis.com")
    if needs:
        raise AdvisedError(
            f"open_clip:{arch} needs {' and '.join(needs)}, which open_clip fetches from the network when the model "
            "is built; anchordiv loads it only with ", ALLOW_DOWNLOAD, ". Offline, use an architecture with "
            "open_clip's bundled tokenizer, e.g. ViT-B-32"
        )
