"""Encoder names: the spec strings the CLI (``--encoder``), the library and the explorer's links
(``encoder=``) share.

Three kinds, each a :class:`ModelSpec`:

* ``"builtin"``: the small model shipped with anchordiv;
* ``"open_clip:<arch>"`` with ``pretrained`` an open_clip tag (``"laion2b_s34b_b79k"``) or a checkpoint
  file, e.g. ``--encoder open_clip:ViT-B-32 --pretrained laion2b_s34b_b79k``;
* ``"open_clip:hf-hub:ORG/REPO"``: a Hugging Face repository holding ``open_clip_config.json`` and the
  weights (SigLIP, MobileCLIP and the like), which carries its own weights and takes no ``pretrained``.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Literal

from .advice import AdvisedError, PRETRAINED_PATH, pretrained as pretrained_argument

BUILTIN = "builtin"
OPEN_CLIP_PREFIX = "open_clip:"
HF_HUB_PREFIX = "hf-hub:"
# The hub's own rule for a name part, bounded; ".." and "--" are refused too (the hub does, and the
# name becomes a folder under anchordiv's cache).
_REPO_PART = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?")
_MAX_SPEC = 300
# The forms, as parts of an AdvisedError: said with the caller's words for pretrained.
SPEC_FORMS = ("use 'builtin', 'open_clip:<arch>' (e.g. 'open_clip:ViT-B-32' with ",
              pretrained_argument("laion2b_s34b_b79k"), " or ", PRETRAINED_PATH, ") or 'open_clip:hf-hub:ORG/REPO'")


@dataclass(frozen=True)
class ModelSpec:
    """One encoder by name.

    ``family`` is ``"builtin"`` or ``"open_clip"``; an open_clip model has either ``arch`` (an open_clip
    architecture, with ``pretrained`` a tag or a checkpoint path) or ``hub_repo`` (``"ORG/REPO"``).
    Build one with :func:`parse_model_spec`, which checks the combination.
    """

    family: Literal["builtin", "open_clip"]
    arch: str | None = None
    hub_repo: str | None = None
    pretrained: str | None = None

    @property
    def model(self) -> str:
        """The spec string (``--encoder``): ``"builtin"``, ``"open_clip:ViT-B-32"``, ``"open_clip:hf-hub:ORG/REPO"``."""
        if self.family == BUILTIN:
            return BUILTIN
        return OPEN_CLIP_PREFIX + (f"{HF_HUB_PREFIX}{self.hub_repo}" if self.hub_repo else str(self.arch))

    @property
    def label(self) -> str:
        """Short text for people: ``"built-in model"``, ``"ViT-B-32 · laion2b_s34b_b79k"``, ``"timm/ViT-B-16-SigLIP"``."""
        if self.family == BUILTIN:
            return "built-in model"
        if self.hub_repo:
            return self.hub_repo
        if self.pretrained is None:
            return str(self.arch)
        return f"{self.arch} · {os.path.basename(self.pretrained) or self.pretrained}"


def parse_model_spec(spec: str | ModelSpec, pretrained: str | os.PathLike | None = None) -> ModelSpec:
    """The :class:`ModelSpec` named by ``spec`` (a spec string, as ``--encoder`` takes) and ``pretrained``.

    Raises ``ValueError`` saying how to write it for anything malformed: an unknown form, an hf-hub
    repository that is not exactly ``ORG/REPO``, ``pretrained`` given to a model that carries its own
    weights. Whether an architecture or tag exists is checked when the model is loaded.
    """
    if isinstance(spec, ModelSpec):  # checked again: a ModelSpec can be built by hand
        if pretrained is not None and spec.pretrained not in (None, os.fspath(pretrained)):
            raise AdvisedError(f"{spec.model} already names ", pretrained_argument(spec.pretrained), "; drop ",
                               pretrained_argument(os.fspath(pretrained)))
        return parse_model_spec(spec.model, spec.pretrained if pretrained is None else pretrained)
    if not isinstance(spec, str):
        raise ValueError(f"encoder spec must be a string such as 'builtin' or 'open_clip:ViT-B-32', not {spec!r}")
    if len(spec) > _MAX_SPEC:
        raise AdvisedError(f"encoder spec is {len(spec)} characters long (at most {_MAX_SPEC}); ", *SPEC_FORMS)
    if pretrained is not None:
        pretrained = os.fspath(pretrained)
        if not isinstance(pretrained, str) or not pretrained:
            raise AdvisedError(pretrained_argument(str(pretrained)), " must be an open_clip tag or a checkpoint path")
    if spec == BUILTIN:
        if pretrained is not None:
            raise AdvisedError("the builtin encoder has its own weights; drop ", pretrained_argument(pretrained))
        return ModelSpec(BUILTIN)
    name = spec[len(OPEN_CLIP_PREFIX):] if spec.startswith(OPEN_CLIP_PREFIX) else ""
    if not name or name.strip() != name:
        raise AdvisedError(f"unknown encoder spec {spec!r}; ", *SPEC_FORMS)
    if name.startswith(HF_HUB_PREFIX):
        repo = name[len(HF_HUB_PREFIX):]
        check_hub_repo(repo)
        if pretrained is not None:
            raise AdvisedError(f"{spec} carries its own weights (the repository's open_clip_config.json and "
                               "weights file); drop ", pretrained_argument(pretrained))
        return ModelSpec("open_clip", hub_repo=repo)
    return ModelSpec("open_clip", arch=name, pretrained=pretrained)


def check_hub_repo(repo: str) -> str:
    """``repo`` if it is exactly ``ORG/REPO`` (letters, digits, ``.``, ``_``, ``-``; at most 96 each),
    else ``ValueError`` with the form to use."""
    parts = repo.split("/")
    if len(parts) != 2 or not all(_REPO_PART.fullmatch(part) and ".." not in part and "--" not in part
                                  for part in parts):
        raise ValueError(
            f"hf-hub repository {repo!r} is not ORG/REPO; write open_clip:hf-hub:ORG/REPO with ORG and REPO of "
            "letters, digits, '.', '_' and '-' (at most 96 each, no '..' or '--'), e.g. "
            "open_clip:hf-hub:timm/ViT-B-16-SigLIP"
        )
    return repo
