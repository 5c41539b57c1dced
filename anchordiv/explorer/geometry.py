"""Geometries: :class:`GeometrySpec` names an anchor model, :func:`fit_anchor_model` fits it, and
:class:`ExplorerGeometry` indexes the gallery under anchor sets A and B once and hands out
per-request copies at any weight ``p``; :func:`baseline_index` gives cosine and ITI."""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from ..models import (
    AnchorModel,
    EmpiricalAnchors,
    GaussianAnchors,
    GaussianMixtureAnchors,
    LatentEmpiricalAnchors,
    LatentGaussianAnchors,
    MixtureAnchors,
    posterior_empirical,
    posterior_gaussian,
)
from ..search import AnchorIndex, CosineIndex, ITIIndex

# Ridge used when a Gaussian model gets a single anchor (Ledoit–Wolf needs two): Sigma = ridge * I.
SINGLE_ANCHOR_RIDGE = 0.01

MODEL_KINDS: dict[str, str] = {
    "softmax": "Softmax (empirical): mass on each anchor",
    "gaussian": "Gaussian (Ledoit–Wolf shrunk covariance)",
    "gmm": "Gaussian mixture (EM)",
    "latent-softmax": "Latent softmax (top principal subspace)",
    "latent-gaussian": "Latent Gaussian (probabilistic PCA)",
    "posterior-softmax": "Posterior softmax (Dirichlet process over a prior set)",
    "posterior-gaussian": "Posterior Gaussian (Normal–inverse-Wishart over a prior set)",
}


@dataclass(frozen=True)
class GeometrySpec:
    """Which anchor model to fit to each anchor set, and how to rank.

    ``kind`` is a key of :data:`MODEL_KINDS`; ``scale`` the logit scale ``s`` in ``eta = s x``;
    ``n_components`` for "gmm"; ``rank`` for the latent models; ``alpha`` the prior's weight for
    the posterior models; ``reverse`` ranks by ``KL(p_y || p_x)`` instead of ``KL(p_x || p_y)``.
    """

    kind: str = "softmax"
    scale: float = 10.0
    n_components: int = 2
    rank: int = 8
    alpha: float = 1.0
    reverse: bool = False

    def __post_init__(self) -> None:
        if self.kind not in MODEL_KINDS:
            raise ValueError(f"unknown anchor model {self.kind!r}; choose one of {list(MODEL_KINDS)}")


def fit_anchor_model(spec: GeometrySpec, anchors: torch.Tensor, prior: torch.Tensor | None = None
                     ) -> tuple[AnchorModel, list[str]]:
    """The anchor model ``spec`` names, fitted to ``anchors`` ``(N, d)``, and notes for the user
    about any adjustment made (a ridge for one anchor, a rank or component count lowered to what
    the anchors support). ``prior`` ``(N0, d)`` is needed by the posterior kinds."""
    n_anchors, dim = anchors.shape
    if n_anchors == 0:
        raise ValueError("the anchor set is empty; type at least one anchor, one per line")
    notes: list[str] = []
    kind, scale = spec.kind, spec.scale
    if kind == "softmax":
        if n_anchors == 1:
            notes.append("With one anchor every image tilts to the same distribution, so every softmax "
                         "divergence is 0 and the ranking is arbitrary; add anchors.")
        return EmpiricalAnchors(scale=scale).fit(anchors), notes
    if kind == "gaussian":
        if n_anchors == 1:
            notes.append(f"One anchor has no covariance; using a ridge Sigma = {SINGLE_ANCHOR_RIDGE} I "
                         "(a scaled cosine geometry).")
            return GaussianAnchors(scale=scale, shrinkage=SINGLE_ANCHOR_RIDGE).fit(anchors), notes
        return GaussianAnchors(scale=scale).fit(anchors), notes
    if kind == "gmm":
        components = max(1, min(int(spec.n_components), n_anchors))
        if components != spec.n_components:
            notes.append(f"{n_anchors} anchor(s) support at most {components} component(s); using {components}.")
        covariance = "full" if n_anchors >= 2 * components else "spherical"
        if covariance != "full":
            notes.append("Few anchors per component: using spherical covariances.")
        return GaussianMixtureAnchors(n_components=components, covariance_type=covariance, scale=scale,
                                      reg_covar=1e-4).fit(anchors), notes
    if kind in ("latent-softmax", "latent-gaussian"):
        limit = min(n_anchors - 1, dim - 1)
        if limit < 1:
            raise ValueError("a latent model needs at least two distinct anchors; add anchors or choose another model")
        rank = max(1, min(int(spec.rank), limit))
        if rank != spec.rank:
            notes.append(f"{n_anchors} anchors span at most {limit} principal direction(s); using rank {rank}.")
        model_class = LatentEmpiricalAnchors if kind == "latent-softmax" else LatentGaussianAnchors
        return model_class(rank=rank, scale=scale).fit(anchors), notes
    if prior is None or len(prior) == 0:
        raise ValueError("the posterior models need a prior anchor set; type at least one prior anchor")
    if kind == "posterior-softmax":
        return posterior_empirical(prior, anchors, alpha=spec.alpha, scale=scale), notes
    shrinkage = "ledoit-wolf" if len(prior) >= 2 else SINGLE_ANCHOR_RIDGE
    return posterior_gaussian(prior, anchors, alpha=spec.alpha, scale=scale, shrinkage=shrinkage), notes


class ExplorerGeometry:
    """Anchor sets A and B under one :class:`GeometrySpec`, with the gallery indexed once.

    With two non-empty sets the model is ``MixtureAnchors([P_A, P_B], [p, 1 - p])``; with one, that
    set's model alone (``p`` has no effect). Building this is the expensive step (fitting and one
    pass over the gallery per component); afterwards :meth:`index_at` costs ``O(G K)``.

    This object is meant to be shared (cached) across users and threads, so it is never mutated
    after ``__init__``: :meth:`index_at` returns a shallow copy of the index holding its own copy of
    the mixture, whose weights are set there. Stored gallery terms are shared read-only.

    Attributes: ``model`` (the shared fitted model), ``index`` (its :class:`AnchorIndex`),
    ``component_texts`` (texts of each component's anchors, aligned with its anchor rows),
    ``component_names`` ("A", "B"), ``balance_offsets`` ``(K,)``, ``notes`` for the user.
    """

    def __init__(self, gallery_embeddings: torch.Tensor, anchor_sets: Sequence[torch.Tensor],
                 anchor_texts: Sequence[Sequence[str]], spec: GeometrySpec, prior: torch.Tensor | None = None,
                 prior_texts: Sequence[str] = (), names: Sequence[str] = ("A", "B")):
        used = [(name, anchors, list(texts)) for name, anchors, texts in zip(names, anchor_sets, anchor_texts)
                if len(texts) > 0]
        if not used:
            raise ValueError("both anchor sets are empty; type at least one anchor (one per line) in A or B")
        self.spec = spec
        self.notes: list[str] = []
        components = []
        for name, anchors, _ in used:
            model, notes = fit_anchor_model(spec, anchors, prior)
            components.append(model)
            self.notes.extend(f"Set {name}: {note}" for note in notes)
        self.component_names = [name for name, _, _ in used]
        posterior = spec.kind.startswith("posterior")
        self.component_texts = [(list(prior_texts) if posterior else []) + texts for _, _, texts in used]
        self.component_anchors = [torch.cat([prior, anchors]) if posterior else anchors
                                  for _, anchors, _ in used]
        if len(components) == 1:
            self.model: AnchorModel = components[0]
            self.balance_offsets = np.zeros(1)
        else:
            mixture = MixtureAnchors(components, [0.5, 0.5]).balance(gallery_embeddings)
            self.balance_offsets = mixture.kappa_offsets_.copy()
            self.model = mixture
        self.index = AnchorIndex(self.model, gallery_embeddings, reverse=spec.reverse, device="cpu")

    @property
    def is_mixture(self) -> bool:
        return isinstance(self.model, MixtureAnchors)

    def model_at(self, p: float, balanced: bool = True) -> AnchorModel:
        """A private copy of the model with weights ``[p, 1 - p]`` (balanced or literal).
        Components are shared (never refitted); for a single set the shared model itself."""
        if not self.is_mixture:
            return self.model
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p={p!r} must be between 0 and 1")
        mixture = copy.copy(self.model)
        mixture.set_weights([p, 1.0 - p])
        mixture.kappa_offsets_ = self.balance_offsets.copy() if balanced else np.zeros(len(self.balance_offsets))
        return mixture

    def index_at(self, p: float, balanced: bool = True) -> AnchorIndex:
        """A per-request :class:`AnchorIndex` at weight ``p``: a shallow copy sharing the stored
        gallery terms, with its own mixture, so concurrent users never see each other's ``p``."""
        if not self.is_mixture:
            return self.index
        index = copy.copy(self.index)
        index.model = self.model_at(p, balanced)
        index._token = object()  # forces this copy to re-mix its own keys and bias on first search
        return index


def baseline_index(kind: str, gallery_embeddings: torch.Tensor, anchors: torch.Tensor | None = None):
    """``CosineIndex`` (``kind="cosine"``) or ``ITIIndex`` over ``anchors`` (``kind="iti"``)."""
    if kind == "cosine":
        return CosineIndex(gallery_embeddings, device="cpu")
    if kind == "iti":
        if anchors is None or len(anchors) == 0:
            raise ValueError("ITI needs at least one anchor")
        return ITIIndex(anchors, gallery_embeddings, device="cpu")
    raise ValueError(f"unknown baseline {kind!r}; use 'cosine' or 'iti'")
