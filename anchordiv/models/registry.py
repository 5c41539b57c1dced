"""One registry of anchor-model kinds: a name, a label, its parameters, and the rules that fit
it to an anchor set of any size.

In the manner of open_clip's model configs and ``list_models()``: the explorer, the reproduction
and the benchmark all build their anchor models here, so each kind's defaults and the way it
adapts to a small anchor set (one anchor, fewer anchors than components or dimensions) are
written once.

    >>> list_anchor_models()
    ['softmax', 'gaussian', 'gmm', 'latent-softmax', 'latent-gaussian', 'posterior-softmax', 'posterior-gaussian']
    >>> model, notes = fit_anchor_model("gmm", anchors, scale=10.0, n_components=4)
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping

import torch

from .._validation import ArrayLike, as_matrix, check_positive_int, unit_rows
from .base import AnchorModel, count_distinct_rows, is_single_point
from .empirical import EmpiricalAnchors, LatentEmpiricalAnchors
from .gaussian import GaussianAnchors, LatentGaussianAnchors
from .mixture_of_gaussians import GaussianMixtureAnchors
from .posterior import PosteriorEmpiricalAnchors, PosteriorGaussianAnchors

# Sigma = ridge * I for a Gaussian given one anchor (Ledoit–Wolf needs two): a scaled cosine geometry.
SINGLE_ANCHOR_RIDGE = 0.01
# Added to each GMM variance. GaussianMixtureAnchors' default, scikit-learn's 1e-6, leaves
# near-singular covariances when a component holds a handful of anchors in d = 256.
GMM_REG_COVAR = 1e-4
# A GMM gets at most one component per this many anchors (and at least one component).
ANCHORS_PER_COMPONENT = 8

# (anchors (N, d), prior (N_0, d) or None, scale, parameters) -> (fitted model, notes for a person)
Fitter = Callable[[torch.Tensor, "torch.Tensor | None", float, dict], "tuple[AnchorModel, list[str]]"]


@dataclass(frozen=True)
class AnchorModelKind:
    """One kind of anchor model.

    Parameters
    ----------
    name : str
        The registry key (e.g. ``"gmm"``).
    label : str
        A line for menus.
    short : str
        Its name in tables and titles.
    defaults : mapping of str to any
        Its parameters besides the scale, with their default values (read-only).
    needs_prior : bool
        Whether fitting needs a prior anchor set (the posterior kinds).
    fitter : callable
        ``(anchors (N, d), prior (N_0, d) or None, scale, parameters) -> (model, notes)``: the
        rules that fit this kind to an anchor set of any size.
    """

    name: str
    label: str
    short: str
    defaults: Mapping[str, Any]
    needs_prior: bool
    fitter: Fitter

    def fit(self, anchors: ArrayLike, scale: float, prior: ArrayLike | None = None,
            **params: Any) -> tuple[AnchorModel, list[str]]:
        """This kind fitted to an anchor set, with notes about any adjustment the anchor count forced.

        Parameters
        ----------
        anchors : array-like of shape (N, d)
            The anchor set (for the posterior kinds, the target anchors); rows normalised inside.
        scale : float
            The logit scale ``s`` in ``eta = s x``.
        prior : array-like of shape (N_0, d), optional
            The prior anchor set: required by the posterior kinds (:attr:`needs_prior`), ignored
            by the others.
        **params
            Parameters of this kind besides the scale, overriding :attr:`defaults`; a name not in
            :attr:`defaults` is refused.

        Returns
        -------
        model : AnchorModel
            The fitted model; its ``get_params()`` reproduce it on a refit.
        notes : list of str
            For a person: each adjustment made (a ridge for one anchor, fewer components or a
            lower rank than asked), empty when none was needed.
        """
        unknown = set(params) - set(self.defaults)
        if unknown:
            allowed = ", ".join(self.defaults) or "none besides scale"
            raise ValueError(f"{self.name!r} has no parameter(s) {sorted(unknown)}; its parameters: {allowed}.")
        matrix = as_matrix(anchors, "anchors")
        prior_matrix = None
        if self.needs_prior:
            if prior is None or len(prior) == 0:
                raise PriorNeeded(self.short)
            prior_matrix = as_matrix(prior, "prior")
        return self.fitter(matrix, prior_matrix, scale, {**self.defaults, **params})


class PriorNeeded(ValueError):
    """A posterior kind fitted without a prior anchor set; ``short``: the kind's short name."""

    def __init__(self, short: str):
        super().__init__(f"the {short} model needs a prior anchor set; give at least one prior anchor")
        self.short = short

    def __reduce__(self):  # pickled with its name, not its message
        return type(self), (self.short,)


def _one_direction(anchors: torch.Tensor) -> bool:
    """Whether the anchors ``(N, d)`` are one point once normalised (one anchor, or copies of it)."""
    return is_single_point(unit_rows(anchors, "anchors"))


def _softmax(anchors: torch.Tensor, _prior, scale: float, _params: dict) -> tuple[AnchorModel, list[str]]:
    notes = []
    if _one_direction(anchors):
        notes.append("With one anchor (or copies of one) every image tilts to the same distribution, so every "
                     "softmax divergence is 0 and the ranking is arbitrary; add anchors, one per line.")
    return EmpiricalAnchors(scale=scale).fit(anchors), notes


def _gaussian(anchors: torch.Tensor, _prior, scale: float, params: dict) -> tuple[AnchorModel, list[str]]:
    if params["shrinkage"] == "ledoit-wolf" and _one_direction(anchors):
        note = (f"One anchor (or copies of one) has no covariance; using a ridge Sigma = {SINGLE_ANCHOR_RIDGE} I "
                "(a scaled cosine geometry).")
        return GaussianAnchors(scale=scale, shrinkage=SINGLE_ANCHOR_RIDGE).fit(anchors), [note]
    return GaussianAnchors(scale=scale, shrinkage=params["shrinkage"]).fit(anchors), []


def _gmm(anchors: torch.Tensor, _prior, scale: float, params: dict) -> tuple[AnchorModel, list[str]]:
    requested = check_positive_int(params["n_components"], "n_components")
    distinct = count_distinct_rows(unit_rows(anchors, "anchors"))
    components = max(1, min(requested, len(anchors) // ANCHORS_PER_COMPONENT, distinct))
    notes = []
    if components != requested:
        duplicates = f", {distinct} of them distinct," if distinct < len(anchors) else ""
        notes.append(f"{len(anchors)} anchor(s){duplicates} support at most {components} component(s) (at least "
                     f"{ANCHORS_PER_COMPONENT} anchors each, one distinct anchor at least); using {components}.")
    model = GaussianMixtureAnchors(n_components=components, covariance_type=params["covariance_type"], scale=scale,
                                   random_state=params["random_state"], reg_covar=params["reg_covar"])
    return model.fit(anchors), notes


def _latent(model_class: type) -> Fitter:
    def fit(anchors: torch.Tensor, _prior, scale: float, params: dict) -> tuple[AnchorModel, list[str]]:
        n_anchors, dim = anchors.shape
        requested = check_positive_int(params["rank"], "rank")
        if dim < 2:
            raise ValueError("a latent model needs embeddings of dimension d >= 2; got d = 1. Choose another model.")
        distinct = count_distinct_rows(unit_rows(anchors, "anchors"))
        limit = min(distinct - 1, dim - 1)
        if limit < 1:
            raise ValueError("a latent model needs at least two distinct anchors; add anchors or choose another model")
        rank = min(requested, limit)
        notes = []
        if rank != requested:
            duplicates = f" ({distinct} distinct)" if distinct < n_anchors else ""
            notes.append(f"{n_anchors} anchors{duplicates} span at most {limit} principal direction(s); "
                         f"using rank {rank}.")
        return model_class(rank=rank, scale=scale).fit(anchors), notes
    return fit


def _posterior_softmax(anchors: torch.Tensor, prior: torch.Tensor, scale: float,
                       params: dict) -> tuple[AnchorModel, list[str]]:
    return PosteriorEmpiricalAnchors(alpha=params["alpha"], scale=scale).fit(anchors, prior), []


def _posterior_gaussian(anchors: torch.Tensor, prior: torch.Tensor, scale: float,
                        params: dict) -> tuple[AnchorModel, list[str]]:
    notes, shrinkage = [], params["shrinkage"]
    if shrinkage == "ledoit-wolf" and _one_direction(prior):
        notes.append(f"One prior anchor (or copies of one) has no covariance; the prior uses a ridge "
                     f"Sigma = {SINGLE_ANCHOR_RIDGE} I.")
        shrinkage = SINGLE_ANCHOR_RIDGE
    model = PosteriorGaussianAnchors(alpha=params["alpha"], scale=scale, shrinkage=shrinkage)
    return model.fit(anchors, prior), notes


def _kind(name: str, label: str, short: str, fitter: Fitter, needs_prior: bool = False,
          **defaults: Any) -> AnchorModelKind:
    return AnchorModelKind(name, label, short, MappingProxyType(defaults), needs_prior, fitter)


_REGISTRY: dict[str, AnchorModelKind] = {kind.name: kind for kind in (
    _kind("softmax", "Softmax (empirical): mass on each anchor", "softmax", _softmax),
    _kind("gaussian", "Gaussian (Ledoit–Wolf shrunk covariance)", "Gaussian", _gaussian, shrinkage="ledoit-wolf"),
    _kind("gmm", "Gaussian mixture (EM)", "GMM", _gmm, n_components=4, covariance_type="full",
          reg_covar=GMM_REG_COVAR, random_state=0),
    _kind("latent-softmax", "Latent softmax (top principal subspace)", "latent softmax",
          _latent(LatentEmpiricalAnchors), rank=32),
    _kind("latent-gaussian", "Latent Gaussian (probabilistic PCA)", "latent Gaussian",
          _latent(LatentGaussianAnchors), rank=32),
    _kind("posterior-softmax", "Posterior softmax (Dirichlet process over a prior set)", "posterior softmax",
          _posterior_softmax, needs_prior=True, alpha=1.0),
    _kind("posterior-gaussian", "Posterior Gaussian (Normal–inverse-Wishart over a prior set)", "posterior Gaussian",
          _posterior_gaussian, needs_prior=True, alpha=1.0, shrinkage="ledoit-wolf"),
)}


def list_anchor_models() -> list[str]:
    """The registered kinds' names, in menu order."""
    return list(_REGISTRY)


def anchor_model_kind(name: str) -> AnchorModelKind:
    """The registered kind called ``name``; ``ValueError`` naming the choices otherwise."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown anchor model {name!r}; choose one of {list_anchor_models()}")
    return _REGISTRY[name]


def fit_anchor_model(name: str, anchors: ArrayLike, scale: float, prior: ArrayLike | None = None,
                     **params: Any) -> tuple[AnchorModel, list[str]]:
    """The registered kind ``name`` fitted to an anchor set: ``anchor_model_kind(name).fit(...)``.

    Parameters
    ----------
    name : str
        A kind from :func:`list_anchor_models` (e.g. ``"softmax"``, ``"gmm"``, ``"posterior-gaussian"``).
    anchors : array-like of shape (N, d)
        The anchor set (for the posterior kinds, the target anchors); rows normalised inside.
    scale : float
        The logit scale ``s`` in ``eta = s x``.
    prior : array-like of shape (N_0, d), optional
        The prior anchor set: required by the posterior kinds, ignored by the others.
    **params
        The kind's other parameters (its :attr:`AnchorModelKind.defaults`, e.g. ``n_components``,
        ``rank``, ``alpha``); unknown names are refused.

    Returns
    -------
    model : AnchorModel
        The fitted model.
    notes : list of str
        For a person: each adjustment the anchor count forced, empty when none was needed.
    """
    return anchor_model_kind(name).fit(anchors, scale, prior, **params)
