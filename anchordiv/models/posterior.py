"""Posterior anchor models (paper Fig. 5): a broad prior anchor set adapted with a few targets.

Both are estimators like every anchor model: ``__init__`` stores ``alpha`` (the prior's weight, in
pseudo-anchors), the scale and, for the Gaussian, the prior's shrinkage; ``fit(target_anchors,
prior_anchors)`` computes the posterior, so ``clone(model).fit(target_anchors, prior_anchors)``
reproduces ``model``. They are the :class:`~anchordiv.EmpiricalAnchors` and
:class:`~anchordiv.GaussianAnchors` they fit, and evaluate as those do.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from .._validation import ArrayLike, as_matrix, check_dimension, finite_non_negative, unit_rows
from .base import is_single_point
from .empirical import DiscreteAnchors, EmpiricalAnchors
from .gaussian import GaussianAnchors


def _alpha_parameter(alpha: float, name: str = "alpha") -> float:
    value = finite_non_negative(alpha)
    if value is None:
        raise ValueError(f"alpha (the prior's pseudo-count) must be finite and >= 0, e.g. 1.0; got {alpha!r}.")
    return value


def _prior_and_target(prior_anchors: ArrayLike | None, target_anchors: ArrayLike) -> tuple[torch.Tensor, torch.Tensor]:
    """Both anchor sets with unit rows, the targets in the prior's dtype and on its device; the
    targets, ``fit``'s first argument, are checked first."""
    target = unit_rows(as_matrix(target_anchors, "target_anchors"), "target_anchors")
    if prior_anchors is None:
        raise ValueError("a posterior needs a prior anchor set besides the targets: "
                         "fit(target_anchors, prior_anchors) with prior_anchors of shape (N_0, d).")
    prior = unit_rows(as_matrix(prior_anchors, "prior_anchors"), "prior_anchors")
    check_dimension(target, prior.shape[1], "target_anchors", against="the prior_anchors")
    return prior, target.to(device=prior.device, dtype=prior.dtype)


_FIT_DOC = """Fit the posterior to the targets over the prior.

Parameters
----------
target_anchors : array-like of shape (n, d)
    The few anchors of the target concept (rows normalised inside).
prior_anchors : array-like of shape (N_0, d)
    The broad prior vocabulary (rows normalised inside); required. It stands where scikit-learn's
    ``y`` would: a posterior is fitted to two anchor sets and has no target.

Returns
-------
{name}
    ``self``, fitted.
"""


def _fit_documented(fit: Callable) -> Callable:
    """Both posteriors' ``fit`` take the same data: one docstring, named for its class."""
    fit.__doc__ = _FIT_DOC.format(name=fit.__qualname__.split(".")[0])
    return fit


class PosteriorEmpiricalAnchors(DiscreteAnchors):
    """Dirichlet-process posterior mean of the anchor distribution, as an empirical model.

    With base measure ``P_0`` uniform on the ``N_0`` prior anchors, concentration ``alpha >= 0``
    and ``n`` target anchors ``t_1, ..., t_n``, the posterior mean is

        P = alpha / (alpha + n) P_0 + 1 / (alpha + n) sum_i delta_{t_i}

    (``delta_t`` the point mass at ``t``): an :class:`~anchordiv.EmpiricalAnchors` on the prior and
    target anchors where each prior anchor weighs ``alpha / ((alpha + n) N_0)`` and each target
    ``1 / (alpha + n)``. ``alpha = 0`` is the target-only model; ``alpha -> inf`` the prior-only one.

    Parameters
    ----------
    alpha : float, default 1.0
        The concentration: how many anchors the prior weighs as; finite and ``>= 0``.
    scale : float, default 100.0
        The logit scale ``s`` in ``eta = s x``; finite and positive.

    Attributes
    ----------
    anchors_ : tensor of shape (N_0 + n, d)
        The unit-norm prior anchors, then the targets.
    log_weights_ : tensor of shape (N_0 + n,)
        Their ``log`` weights, as above.
    n_features_in_ : int
        ``d``.
    """

    parameter_constraints = {**DiscreteAnchors.parameter_constraints, "alpha": _alpha_parameter}

    def __init__(self, *, alpha: float = 1.0, scale: float = 100.0):
        super().__init__(scale=scale)
        self.alpha = alpha

    @_fit_documented
    def fit(self, target_anchors: ArrayLike, prior_anchors: ArrayLike | None = None) -> "PosteriorEmpiricalAnchors":
        alpha = self.check_params()["alpha"]
        prior, target = _prior_and_target(prior_anchors, target_anchors)
        n_prior, n_target = prior.shape[0], target.shape[0]
        weights = np.concatenate([np.full(n_prior, alpha / ((alpha + n_target) * n_prior)),
                                  np.full(n_target, 1.0 / (alpha + n_target))])
        # The empirical model of these weighted anchors, fitted as any other is.
        fitted = EmpiricalAnchors(scale=self.scale, weights=weights).fit(torch.cat([prior, target]))
        self.anchors_, self.log_weights_ = fitted.anchors_, fitted.log_weights_
        self._mark_fitted(fitted.n_features_in_)
        return self


class PosteriorGaussianAnchors(GaussianAnchors):
    """Gaussian posterior under the Normal–inverse-Wishart (NIW) conjugate prior.

    The prior Gaussian ``(mu_0, Sigma_0)`` is :class:`~anchordiv.GaussianAnchors` with ``shrinkage``
    fitted to the ``N_0`` prior anchors. The NIW prior has ``kappa_0 = alpha``,
    ``nu_0 = d + 1 + alpha`` and ``Psi_0 = alpha Sigma_0`` (``d`` the dimension), so its mean
    covariance is ``Sigma_0`` and it weighs as ``alpha`` pseudo-anchors. With ``n`` targets
    ``t_1, ..., t_n`` of mean ``tbar`` and scatter ``S_t = sum_i (t_i - tbar)(t_i - tbar)^T``, the
    model is the Gaussian ``N(mu, Sigma)`` at the posterior means

        mu    = (alpha mu_0 + n tbar) / (alpha + n)
        Sigma = (alpha Sigma_0 + S_t + alpha n / (alpha + n) (tbar - mu_0)(tbar - mu_0)^T) / (alpha + n)

    so ``kappa(eta) = mu . eta + 1/2 eta^T Sigma eta`` as for any Gaussian anchor model. These are
    plug-in values: the posterior predictive is a Student-t, which has no finite CGF.
    ``alpha -> 0`` gives the target-only Gaussian with the plain sample covariance.

    Parameters
    ----------
    alpha : float, default 1.0
        ``kappa_0``: how many anchors the prior weighs as; finite and ``>= 0`` (``0`` needs two
        distinct targets).
    scale : float, default 100.0
        The logit scale ``s`` in ``eta = s x``; finite and positive.
    shrinkage : "ledoit-wolf", float or None, default "ledoit-wolf"
        The prior Gaussian's covariance rule, as in :class:`~anchordiv.GaussianAnchors`.

    Attributes
    ----------
    mean_ : tensor of shape (d,)
        ``mu``.
    covariance_ : tensor of shape (d, d)
        ``Sigma``.
    shrinkage_ : float
        The prior covariance's Ledoit–Wolf coefficient or ridge.
    n_features_in_ : int
        ``d``.
    """

    parameter_constraints = {**GaussianAnchors.parameter_constraints, "alpha": _alpha_parameter}

    def __init__(self, *, alpha: float = 1.0, scale: float = 100.0, shrinkage: str | float | None = "ledoit-wolf"):
        super().__init__(scale=scale, shrinkage=shrinkage)
        self.alpha = alpha

    @_fit_documented
    def fit(self, target_anchors: ArrayLike, prior_anchors: ArrayLike | None = None) -> "PosteriorGaussianAnchors":
        alpha = self.check_params()["alpha"]
        prior, target = _prior_and_target(prior_anchors, target_anchors)
        n_target = target.shape[0]
        if alpha == 0 and is_single_point(target):
            raise ValueError("alpha=0 with a single (distinct) target anchor leaves no covariance; use alpha > 0 or "
                             "add distinct targets.")
        prior_model = GaussianAnchors(scale=self.scale, shrinkage=self.shrinkage).fit(prior)
        target_mean = target.mean(dim=0)
        centred = target - target_mean
        shift = target_mean - prior_model.mean_
        total = alpha + n_target
        self.mean_ = (alpha * prior_model.mean_ + n_target * target_mean) / total
        self.covariance_ = (alpha * prior_model.covariance_ + centred.T @ centred
                            + (alpha * n_target / total) * torch.outer(shift, shift)) / total
        self.shrinkage_ = prior_model.shrinkage_
        self._mark_fitted(prior.shape[1])
        return self
