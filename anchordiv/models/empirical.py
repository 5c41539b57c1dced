"""The empirical ("softmax") anchor model and its latent variant."""
from __future__ import annotations

import math

import numpy as np
import torch

from .._validation import ArrayLike, Interval, as_float_vector
from .base import AnchorModel, is_single_point


def log_anchor_weights(weights: ArrayLike | None, n_anchors: int, like: torch.Tensor) -> torch.Tensor:
    """``log w`` of shape ``(N,)`` for weights normalised to sum to 1 (uniform when ``None``)."""
    if weights is None:
        return torch.full((n_anchors,), -math.log(n_anchors), dtype=like.dtype, device=like.device)
    array = as_float_vector(weights, "weights")
    if array.shape[0] != n_anchors:
        raise ValueError(f"weights has {array.shape[0]} entries but there are {n_anchors} anchors; pass one weight per anchor.")
    if not np.all(np.isfinite(array)) or np.any(array < 0) or array.sum() <= 0:
        raise ValueError("weights must be finite, non-negative and not all zero; got "
                         f"min {array.min():.3g}, sum {array.sum():.3g}.")
    with np.errstate(divide="ignore"):
        log_w = np.log(array / array.sum())
    return torch.as_tensor(log_w, dtype=like.dtype, device=like.device)


def softmax_(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(logsumexp(logits), softmax(logits))`` for logits ``(n, N)``, row-wise.

    The logits are the largest array of a pass over the anchors, so they are overwritten with
    the probabilities, except when autograd needs them.
    """
    if logits.requires_grad and torch.is_grad_enabled():
        kappa = torch.logsumexp(logits, dim=1)
        return kappa, torch.exp(logits - kappa[:, None])
    peak = logits.amax(dim=1, keepdim=True)
    total = logits.sub_(peak).exp_().sum(dim=1, keepdim=True)
    return (total.log() + peak)[:, 0], logits.div_(total)


def softmax_cgf_grad(logits: torch.Tensor, support: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(logsumexp(logits), softmax(logits) @ support)`` for logits ``(n, N)`` (may be
    overwritten) and support ``(N, m)``."""
    kappa, probabilities = softmax_(logits)
    return kappa, probabilities @ support


class DiscreteAnchors(AnchorModel):
    """A distribution with mass on finitely many anchors: the fitted unit-norm ``anchors_`` ``(N, d)``
    and their ``log_weights_`` ``(N,)``, ``kappa(eta) = logsumexp_i(gamma_i . eta + log w_i)``.
    Its subclasses say where the weights come from (:class:`EmpiricalAnchors`: given;
    :class:`~anchordiv.models.feedback.FeedbackAnchors`: learned from marks)."""

    def _param_tensors(self) -> dict[str, torch.Tensor]:
        return {"anchors": self.anchors_, "log_weights": self.log_weights_}

    def _elements_per_row(self) -> int:
        return self.anchors_.shape[0]

    def _cgf_eta(self, eta: torch.Tensor) -> torch.Tensor:
        params = self._params(eta)
        return softmax_(self._logits(eta, params))[0]

    @staticmethod
    def _logits(eta: torch.Tensor, params: dict[str, torch.Tensor]) -> torch.Tensor:
        return torch.addmm(params["log_weights"], eta, params["anchors"].T)

    def _cgf_grad_eta(self, eta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        params = self._params(eta)
        return softmax_cgf_grad(self._logits(eta, params), params["anchors"])


class EmpiricalAnchors(DiscreteAnchors):
    """The paper's softmax model: ``P`` puts mass ``w_i`` on each anchor ``gamma_i``.

    ``kappa(eta) = logsumexp_i(gamma_i . eta + log w_i)`` (``= logsumexp(Gamma eta) - log N`` for
    uniform weights) and ``grad kappa(eta) = sum_i softmax_i(Gamma eta + log w) gamma_i``, where
    ``Gamma`` ``(N, d)`` holds the unit-norm anchors and ``w`` ``(N,)`` the weights.

    Parameters
    ----------
    scale : logit scale ``s`` in ``eta = s * x``; must be finite and positive.
    weights : optional non-negative weights, one per anchor; normalised to sum to 1.
        Duplicate anchors are allowed and simply count twice.

    Fitted attributes: ``anchors_`` ``(N, d)``, ``log_weights_`` ``(N,)``, ``n_features_in_``.
    """

    def __init__(self, *, scale: float = 100.0, weights: ArrayLike | None = None):
        super().__init__(scale=scale)
        self.weights = weights

    def _fit(self, anchors: torch.Tensor) -> None:
        self.anchors_ = anchors
        self.log_weights_ = log_anchor_weights(self.weights, anchors.shape[0], anchors)


def principal_subspace(anchors: torch.Tensor, rank: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Mean ``(d,)``, top-``rank`` principal directions ``(rank, d)`` and all covariance
    eigenvalues ``(min(N, d),)`` (descending, ``1/N`` normalisation) of the anchors ``(N, d)``."""
    n_anchors, dim = anchors.shape
    limit = min(n_anchors - 1, dim - 1)
    if rank > limit:
        raise ValueError(_rank_beyond_span(rank, n_anchors, dim))
    if is_single_point(anchors):
        raise ValueError(f"the {n_anchors} anchors are all identical, so they have no principal direction; "
                         "a latent model needs at least two distinct anchors: add anchors or use EmpiricalAnchors.")
    mean = anchors.mean(dim=0)
    _, singular_values, right_vectors = torch.linalg.svd(anchors - mean, full_matrices=False)
    return mean, right_vectors[:rank], singular_values**2 / n_anchors


def _rank_beyond_span(rank: int, n_anchors: int, dim: int) -> str:
    """Why ``rank`` principal directions cannot be fitted to ``n_anchors`` anchors in ``dim``
    dimensions (they span at most ``min(N, d) - 1`` besides their mean), naming the one that binds,
    with scikit-learn's ``n_samples`` and ``n_features`` beside ``N`` and ``d``."""
    limit = min(n_anchors - 1, dim - 1)
    scarce = "anchors" if n_anchors <= dim else "dimensions"
    if limit >= 1:
        fix = f"use rank <= {limit}" + (" or add anchors" if scarce == "anchors" else "")
    else:
        fix = "a latent model needs at least two anchors in d >= 2: use EmpiricalAnchors or GaussianAnchors"
    return (f"rank={rank} needs more {scarce}: N={n_anchors} anchors (n_samples={n_anchors}) in d={dim} "
            f"(n_features={dim}) span at most {limit} principal directions (< d); {fix}.")


class LatentEmpiricalAnchors(AnchorModel):
    """Empirical model fitted in the top-``rank`` principal subspace of the anchors.

    Our reading of the paper's "Latent Softmax": each anchor is replaced by its PCA projection
    ``mu + U U^T (gamma_i - mu)``, with ``mu`` the anchor mean and ``U`` ``(d, rank)`` the leading
    principal directions, and the empirical model is fitted to those points:
    ``kappa(eta) = mu . eta + logsumexp_i(c_i . (U^T eta)) - log N`` with ``c_i = U^T (gamma_i - mu)``.
    The geometry only sees the ``rank`` directions along which the anchors vary most.

    Fitted attributes: ``mean_`` ``(d,)``, ``components_`` ``(rank, d)``, ``coordinates_`` ``(N, rank)``.
    """

    parameter_constraints = {**AnchorModel.parameter_constraints, "rank": Interval(1, integer=True)}

    def __init__(self, *, rank: int = 32, scale: float = 100.0):
        super().__init__(scale=scale)
        self.rank = rank

    def _fit(self, anchors: torch.Tensor) -> None:
        self.mean_, self.components_, _ = principal_subspace(anchors, int(self.rank))
        self.coordinates_ = (anchors - self.mean_) @ self.components_.T

    def _param_tensors(self) -> dict[str, torch.Tensor]:
        return {"mean": self.mean_, "components": self.components_, "coordinates": self.coordinates_}

    def _elements_per_row(self) -> int:
        return self.coordinates_.shape[0]

    def _logits(self, eta: torch.Tensor, params: dict[str, torch.Tensor]) -> torch.Tensor:
        n_anchors = params["coordinates"].shape[0]
        return (eta @ params["components"].T) @ params["coordinates"].T - math.log(n_anchors)

    def _cgf_eta(self, eta: torch.Tensor) -> torch.Tensor:
        params = self._params(eta)
        return eta @ params["mean"] + softmax_(self._logits(eta, params))[0]

    def _cgf_grad_eta(self, eta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        params = self._params(eta)
        kappa, latent_mean = softmax_cgf_grad(self._logits(eta, params), params["coordinates"])
        return eta @ params["mean"] + kappa, params["mean"] + latent_mean @ params["components"]

