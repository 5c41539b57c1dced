"""Prompt templates for anchor texts: an anchor such as "beagle" encoded as "a photo of a beagle.",
or as the mean over CLIP's 80 ImageNet templates, as CLIP zero-shot classification does.

:class:`TemplateChoice` names a set (:data:`TEMPLATE_SETS`: ``"none"``, ``"photo"``,
``"imagenet80"``, or ``"custom"`` with a person's own templates), with a short stable
:attr:`~TemplateChoice.token` for links and cache keys and a :attr:`~TemplateChoice.label` for
captions and figure footers. :func:`default_choice` is a model's default: ``"photo"`` for CLIP
models (standard practice; CLIP's paper reports 3.5 points more ImageNet zero-shot accuracy from
the 80-template ensemble, but it costs 80 text encodes per anchor, minutes for a large anchor set on
a CPU), ``"none"``
for the built-in model, which was trained on its own captions. :func:`encode_anchors` encodes.
"""
from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from .progress import ProgressCallback
from .vocabularies.catalog import control_character

NONE, PHOTO, IMAGENET80, CUSTOM = "none", "photo", "imagenet80", "custom"
# The template sets by name, with what a menu calls them; "auto" (the model's default) is the
# caller's word for default_choice(encoder), never a set of its own.
TEMPLATE_SETS = {NONE: "none (as typed)", PHOTO: "a photo of a {}.",
                 IMAGENET80: "80 ImageNet templates", CUSTOM: "my own…"}
AUTO = "auto"
NAMED_SETS = (NONE, PHOTO, IMAGENET80)  # the sets whose templates are fixed
SLOT = "{}"  # where the anchor goes in a template
PHOTO_TEMPLATE = "a photo of a {}."
# A person's own templates: no more than the ImageNet ensemble has, each a short sentence.
MAX_TEMPLATES = 80
MAX_TEMPLATE_CHARS = 200
# Anchors x templates encoded at most in one call: a whole world's 1,644 object names through the
# 80 ImageNet templates (131,520 texts) fits; MAX_ANCHORS anchors through 80 own templates do not.
MAX_PROMPTS = 150_000
# Texts given to the encoder at once: bounds the memory of the (texts, d) batch before averaging.
ENCODE_CHUNK = 4096
# Seconds an encode through several templates may take when nothing shows its progress (a page's
# spinner). A page's request must answer within the minute, and an ensemble's cost is not known from
# its size: the built-in model's text tower encodes over ten times faster than a CLIP ViT-B-32's, and
# a machine shared with other work runs several times slower than an idle one. So the encode measures
# its own pace and refuses, within seconds, an ensemble that would run past this, saying how many
# anchors would fit: a visitor learns at once what to change, rather than watching a spinner for
# minutes (the world's 1,644 names through 80 templates took 298 s on a 2-core machine). A caller that
# shows progress (``anchordiv figure``'s bar) may take as long as it needs.
ENCODE_SECONDS = 30.0
# Texts encoded before the pace is first judged: one batch of the encoder's, enough to time it.
PACE_TEXTS = 256


@dataclass(frozen=True)
class TemplateChoice:
    """A set of prompt templates: ``name`` one of :data:`TEMPLATE_SETS`; ``custom`` the templates
    of ``"custom"`` (checked by :func:`check_templates`), empty for the others."""

    name: str
    custom: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.name not in TEMPLATE_SETS:
            raise ValueError(f"unknown template set {self.name!r}; choose one of {', '.join(TEMPLATE_SETS)}")
        if self.name == CUSTOM:
            object.__setattr__(self, "custom", check_templates(self.custom))
        elif self.custom:
            raise ValueError(f"the template set {self.name!r} has its own templates; give custom ones with 'custom'")

    @property
    def templates(self) -> tuple[str, ...]:
        """The templates, each with one :data:`SLOT` (``("{}",)`` for ``"none"``)."""
        if self.name == NONE:
            return (SLOT,)
        if self.name == PHOTO:
            return (PHOTO_TEMPLATE,)
        if self.name == IMAGENET80:
            return imagenet_templates()
        return self.custom

    @property
    def token(self) -> str:
        """A short stable name: the set's name, or ``custom-`` and a hash of the own templates."""
        if self.name != CUSTOM:
            return self.name
        return f"{CUSTOM}-{hashlib.sha256(chr(10).join(self.custom).encode()).hexdigest()[:12]}"

    @property
    def label(self) -> str:
        """What the anchors are encoded as, for "encoded as …": ``"'a photo of a {}.'"``."""
        if self.name == NONE:
            return "typed (no template)"
        if self.name == IMAGENET80:
            return "the mean of CLIP's 80 ImageNet templates"
        templates = self.templates
        if len(templates) == 1:
            return repr(templates[0])
        shown = ", ".join(repr(template) for template in templates[:2])
        return f"the mean of {len(templates)} own templates ({shown}{', …' if len(templates) > 2 else ''})"


AS_TYPED = TemplateChoice(NONE)


def check_templates(templates: Sequence[str]) -> tuple[str, ...]:
    """``templates`` stripped, blank and repeated ones dropped; a ``ValueError`` saying which one
    is wrong when one lacks or repeats :data:`SLOT`, is longer than :data:`MAX_TEMPLATE_CHARS`,
    or when there are none or more than :data:`MAX_TEMPLATES`."""
    if isinstance(templates, str):
        raise ValueError("templates must be a sequence of strings; give one template per line through parse_templates")
    kept = tuple(dict.fromkeys(" ".join(str(template).split()) for template in templates))
    kept = tuple(template for template in kept if template)
    if not kept:
        raise ValueError("no templates: type one per line, each with {} where the anchor goes (e.g. 'a photo of a {}.')")
    if len(kept) > MAX_TEMPLATES:
        raise ValueError(f"{len(kept):,} templates, but at most {MAX_TEMPLATES} are taken; keep the ones that matter")
    for number, template in enumerate(kept, 1):
        if len(template) > MAX_TEMPLATE_CHARS:
            raise ValueError(f"template {number} has {len(template):,} characters; shorten it to at most "
                             f"{MAX_TEMPLATE_CHARS}")
        control = control_character(template)
        if control is not None:
            raise ValueError(f"template {number} holds the control character U+{ord(control):04X}; write it as "
                             "plain text")
        if template.count(SLOT) != 1:
            raise ValueError(f"template {number} ({template[:60]!r}) has {template.count(SLOT)} {{}} where the "
                             "anchor goes; write exactly one in each template (e.g. 'a photo of a {}.')")
    return kept


def parse_templates(text: str) -> tuple[str, ...]:
    """A person's own templates, one per line (:func:`check_templates`)."""
    if len(text) > MAX_TEMPLATES * (MAX_TEMPLATE_CHARS + 1):
        raise ValueError(f"{len(text.splitlines()):,} lines, {len(text):,} characters; {MAX_TEMPLATES} templates of at "
                         f"most {MAX_TEMPLATE_CHARS} characters are taken: keep the ones that matter")
    return check_templates(text.splitlines())


def template_choice(name: str, custom_text: str = "", encoder=None) -> TemplateChoice:
    """The choice ``name`` (a key of :data:`TEMPLATE_SETS`, or :data:`AUTO` for ``encoder``'s
    :func:`default_choice`), with ``custom_text`` the own templates of ``"custom"``, one per line."""
    if name == AUTO:
        if encoder is None:
            raise ValueError("'auto' templates need the encoder whose default they are")
        return default_choice(encoder)
    return TemplateChoice(name, parse_templates(custom_text)) if name == CUSTOM else TemplateChoice(name)


def default_choice(encoder) -> TemplateChoice:
    """The templates an encoder's anchors get unless a person chooses: none for the built-in model
    (trained on its own captions, which name the object bare), ``"a photo of a {}."`` for every
    other (CLIP models, trained on web captions)."""
    return AS_TYPED if str(encoder.name).startswith("builtin") else TemplateChoice(PHOTO)


def imagenet_templates() -> tuple[str, ...]:
    """CLIP's 80 ImageNet templates (Radford et al. 2021) as open_clip ships them
    (``open_clip.zero_shot_metadata.OPENAI_IMAGENET_TEMPLATES``, callables), with :data:`SLOT`."""
    from open_clip.zero_shot_metadata import OPENAI_IMAGENET_TEMPLATES

    return tuple(template(SLOT) for template in OPENAI_IMAGENET_TEMPLATES)


def filled(anchors: Sequence[str], templates: Sequence[str]) -> list[str]:
    """Every anchor in every template, anchor by anchor: ``len(anchors) * len(templates)`` texts."""
    return [template.replace(SLOT, anchor) for anchor in anchors for template in templates]


def encode_anchors(encoder, anchors: Sequence[str], templates: TemplateChoice | Sequence[str] = AS_TYPED,
                   progress: ProgressCallback | None = None, max_seconds: float = math.inf) -> torch.Tensor:
    r"""The embeddings ``(N, d)`` of ``N`` anchors through prompt templates, as CLIP zero-shot does:

    .. math:: e(a) = \frac{\bar u(a)}{\lVert \bar u(a) \rVert}, \qquad
              \bar u(a) = \frac{1}{T} \sum_{t=1}^{T} \frac{f(t(a))}{\lVert f(t(a)) \rVert}

    with ``f`` the encoder's text tower and ``t(a)`` template ``t`` filled with anchor ``a``.
    With ``"none"`` (one template ``"{}"``) that is ``encoder.encode_texts(anchors)``.

    Parameters
    ----------
    encoder : Encoder
        The text encoder (unit-norm ``d``-dimensional rows).
    anchors : sequence of str
        The anchor texts as typed.
    templates : TemplateChoice or sequence of str
        The templates, each with one ``"{}"`` (:func:`check_templates`).
    progress : callable, optional
        ``progress(fraction, text)`` after each chunk of encodes.
    max_seconds : float, default ``math.inf``
        How long the encode may take (judged by its pace as it goes, :func:`template_mean`); a
        result the text cache holds is read, never refused. A page that shows no progress passes
        :data:`ENCODE_SECONDS`; a script or notebook may wait as long as it likes.

    Returns
    -------
    torch.Tensor
        ``(N, d)`` float32, unit rows, row ``i`` for ``anchors[i]``; kept in the on-disk text cache
        (:mod:`anchordiv.text_cache`) by encoder, anchors and templates.

    Raises
    ------
    ValueError
        For bad templates, more than :data:`MAX_PROMPTS` anchors x templates, or an encode that
        would take longer than ``max_seconds``, saying how many anchors fit.
    """
    from .text_cache import cached_text_embeddings, encode_texts_cached

    templates = templates.templates if isinstance(templates, TemplateChoice) else check_templates(templates)
    anchors = list(anchors)
    if templates == (SLOT,):
        return encode_texts_cached(encoder, anchors)
    if len(anchors) * len(templates) > MAX_PROMPTS:
        raise ValueError(f"{len(anchors):,} anchors x {len(templates)} templates is {len(anchors) * len(templates):,} "
                         f"texts to encode; at most {MAX_PROMPTS:,} are taken (fewer anchors or templates)")
    return cached_text_embeddings(encoder, [anchors, list(templates)], _raising_again(
        lambda: template_mean(encoder, anchors, templates, progress, max_seconds)))


def _raising_again(build: Callable[[], torch.Tensor]) -> Callable[[], torch.Tensor]:
    """``build``, whose ``ValueError`` a second call raises again without building: the text cache
    builds once more after a ``ValueError`` (it takes one for an unwritable cache), and an encode
    refused for its pace (:func:`check_pace`) would spend its seconds twice."""
    raised: list[ValueError] = []

    def once() -> torch.Tensor:
        if raised:
            raise raised[0]
        try:
            return build()
        except ValueError as error:
            raised.append(error)
            raise
    return once


def template_mean(encoder, anchors: Sequence[str], templates: Sequence[str],
                  progress: ProgressCallback | None = None, max_seconds: float = math.inf) -> torch.Tensor:
    """:func:`encode_anchors`' formula, computed (no cache): ``(N, d)``, in chunks of about
    :data:`ENCODE_CHUNK` texts, the first two of :data:`PACE_TEXTS` to judge the pace early: the
    first warms the text tower (a lazily loaded one would count as encoding), each later one is
    timed, and a ``ValueError`` (:func:`check_pace`) stops an encode that, at its pace so far, would
    take longer than ``max_seconds``."""
    if not anchors:
        return torch.zeros((0, encoder.dim))
    means, done, clock = [], 0, None  # clock: (anchors done, time) once the first chunk is through
    while done < len(anchors):
        texts = ENCODE_CHUNK if clock is not None and done > clock[0] else PACE_TEXTS
        chunk = anchors[done:done + max(1, texts // len(templates))]
        units = encoder.encode_texts(filled(chunk, templates)).reshape(len(chunk), len(templates), -1)
        means.append(torch.nn.functional.normalize(units.mean(dim=1), dim=-1))
        done += len(chunk)
        if clock is None:
            clock = (done, time.monotonic())
        else:
            pace = (time.monotonic() - clock[1]) / (done - clock[0])
            check_pace(len(anchors), len(templates), pace, max_seconds)
        if progress is not None:
            progress(done / len(anchors), f"Encoding anchors through {len(templates)} templates: "
                                          f"{done:,} / {len(anchors):,}")
    return torch.cat(means)


def check_pace(anchors: int, templates: int, pace: float, max_seconds: float) -> None:
    """A ``ValueError`` saying what to change when ``anchors`` anchors through ``templates``
    templates would take longer than ``max_seconds`` at ``pace``; nothing otherwise.

    Parameters
    ----------
    anchors, templates : int
        The encode's size: ``anchors * templates`` texts.
    pace : float
        Seconds per anchor (through every template), as measured.
    max_seconds : float
        The bound (``math.inf``: none).
    """
    expected = pace * anchors
    if expected <= max_seconds:
        return
    raise ValueError(f"{anchors:,} anchors through {templates} templates are {anchors * templates:,} texts to "
                     f"encode, about {expected:,.0f} s on this machine, past the {max_seconds:g} s one request "
                     f"may take: choose fewer anchors (about {int(max_seconds / pace):,} fit through these "
                     f"templates) or fewer templates ('{PHOTO_TEMPLATE}' encodes each anchor once)")
