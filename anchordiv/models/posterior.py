"""Posterior anchor models (paper Fig. 5): a broad prior anchor set adapted with a few targets."""
from __future__ import annotations


import numpy as np
import torch

from .._validation import ArrayLike, as_matrix, check_dimension, finite_non_negative, unit_rows
from .base import is_single_point
from .empirical import EmpiricalAnchors
from .gaussian import GaussianAnchors


def _check_alpha(alpha: float) -> float:
    value = finite_non_negative(alpha)
    if value is None:
        raise ValueError(f"alpha (the prior's pseudo-count) must be finite and >= 0, e.g. 1.0; got {alpha!r}.")
    return value


def _prior_and_target(prior_anchors: ArrayLike, target_anchors: ArrayLike) -> tuple[torch.Tensor, torch.Tensor]:
    prior = unit_rows(as_matrix(prior_anchors, "prior_anchors"), "prior_anchors")
    target = unit_rows(as_matrix(target_anchors, "target_anchors"), "target_anchors")
    check_dimension(target, prior.shape[1], "target_anchors", against="the prior_anchors")
    return prior, target.to(device=prior.device, dtype=prior.dtype)


def posterior_empirical(prior_anchors: ArrayLike, target_anchors: ArrayLike, alpha: float = 1.0,
                        scale: float = 100.0) -> EmpiricalAnchors:
    """Dirichlet-process posterior mean of the anchor distribution, as an empirical model.

    With base measure ``P_0`` uniform on the ``N_0`` prior anchors ``(N_0, d)``, concentration
    ``alpha >= 0`` and ``n`` target anchors ``(n, d)``, the posterior mean is
    ``alpha/(alpha + n) P_0 + 1/(alpha + n) sum_i delta_{target_i}``: each prior anchor weighs
    ``alpha / ((alpha + n) N_0)`` and each target anchor ``1 / (alpha + n)``. ``alpha = 0`` is the
    target-only model; ``alpha -> inf`` the prior-only model.
    """
    alpha = _check_alpha(alpha)
    prior, target = _prior_and_target(prior_anchors, target_anchors)
    n_prior, n_target = prior.shape[0], target.shape[0]
    weights = np.concatenate([np.full(n_prior, alpha / ((alpha + n_target) * n_prior)),
                              np.full(n_target, 1.0 / (alpha + n_target))])
    return EmpiricalAnchors(scale=scale, weights=weights).fit(torch.cat([prior, target]))


def posterior_gaussian(prior_anchors: ArrayLike, target_anchors: ArrayLike, alpha: float = 1.0,
                       scale: float = 100.0, shrinkage: str | float | None = "ledoit-wolf") -> GaussianAnchors:
    """Gaussian posterior under the Normal–inverse-Wishart conjugate prior.

    The prior Gaussian ``(mu_0, Sigma_0)`` is fitted to the prior anchors with ``shrinkage``. The
    NIW prior has ``kappa_0 = alpha``, ``nu_0 = d + 1 + alpha`` and ``Psi_0 = alpha Sigma_0``, so its
    mean covariance is ``Sigma_0`` and it weighs as ``alpha`` pseudo-anchors. With ``n`` targets of
    mean ``xbar`` and scatter ``S = sum_i (t_i - xbar)(t_i - xbar)^T`` the posterior means are

        mu    = (alpha mu_0 + n xbar) / (alpha + n)
        Sigma = (alpha Sigma_0 + S + alpha n / (alpha + n) (xbar - mu_0)(xbar - mu_0)^T) / (alpha + n)

    and the returned model is ``GaussianAnchors.from_moments(mu, Sigma)``. ``alpha -> 0`` gives the
    target-only Gaussian with the plain sample covariance (``shrinkage=None``).
    """
    alpha = _check_alpha(alpha)
    prior, target = _prior_and_target(prior_anchors, target_anchors)
    n_target = target.shape[0]
    if alpha == 0 and is_single_point(target):
        raise ValueError("alpha=0 with a single (distinct) target anchor leaves no covariance; use alpha > 0 or "
                         "add distinct targets.")
    prior_model = GaussianAnchors(scale=scale, shrinkage=shrinkage).fit(prior)
    target_mean = target.mean(dim=0)
    centred = target - target_mean
    shift = target_mean - prior_model.mean_
    total = alpha + n_target
    mean = (alpha * prior_model.mean_ + n_target * target_mean) / total
    covariance = (alpha * prior_model.covariance_ + centred.T @ centred
                  + (alpha * n_target / total) * torch.outer(shift, shift)) / total
    return GaussianAnchors.from_moments(mean, covariance, scale=scale)
