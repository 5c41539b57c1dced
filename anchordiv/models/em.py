"""Expectation–maximisation for a Gaussian mixture, in torch.

The same algorithm, initialisation and stopping rule as ``sklearn.mixture.GaussianMixture`` with
``n_init=1`` (k-means labels as the first responsibilities; alternate E- and M-steps; stop when the
mean log-likelihood changes by less than ``tol``, or warn with ``ConvergenceWarning`` after
``max_iter`` iterations), so the fitted weights, means and covariances agree to round-off. The
estimates are those of the last M-step; scikit-learn's extra E-step after the loop only serves its
``fit_predict`` labels, which an anchor model does not need, so it is not run. It runs in float64 on the
anchors' device: the E-step is one ``(N, d) @ (d, M d)`` product and the M-step one
``(d, N) @ (N, M d)`` product, which keeps EM close to the machine's matmul throughput and lets
it run on a GPU.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch

SCATTER_BLOCK_ELEMENTS = 2**25  # rows of the M-step's weighted copy of x per product (256 MB in float64)


@dataclass
class MixtureFit:
    """EM estimates: ``weights`` ``(M,)``, ``means`` ``(M, d)``, ``covariances`` ``(M, d, d)``."""

    weights: torch.Tensor
    means: torch.Tensor
    covariances: torch.Tensor
    n_iter: int
    converged: bool
    lower_bound: float


def _m_step(x: torch.Tensor, resp: torch.Tensor, covariance_type: str, reg_covar: float
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Weights ``(M,)``, means ``(M, d)`` and full covariances ``(M, d, d)`` from
    responsibilities ``resp`` ``(N, M)``, with ``reg_covar`` added to every variance."""
    n, d = x.shape
    m = resp.shape[1]
    nk = resp.sum(dim=0) + 10 * torch.finfo(resp.dtype).eps
    means = resp.T @ x / nk[:, None]
    eye = torch.eye(d, dtype=x.dtype, device=x.device)
    if covariance_type == "full":
        # sum_i r_ik (x_i - mu_k)(x_i - mu_k)^T / n_k = sum_i r_ik x_i x_i^T / n_k - c_k mu_k mu_k^T, with
        # c_k = 2 - sum_i r_ik / n_k (1 up to the eps in n_k): no centred copies of x, and one product.
        mass = 2 - resp.sum(dim=0) / nk
        covariances = _weighted_scatter(x, resp / nk) - mass[:, None, None] * (means[:, :, None] * means[:, None, :])
        covariances += reg_covar * eye
    elif covariance_type == "tied":
        tied = (x.T @ x - (nk[:, None] * means).T @ means) / nk.sum() + reg_covar * eye
        covariances = tied.expand(m, d, d).clone()
    else:
        variances = (resp.T @ (x * x)) / nk[:, None] - means**2 + reg_covar
        if covariance_type == "spherical":
            variances = variances.mean(dim=1, keepdim=True).expand(m, d)
        covariances = torch.diag_embed(variances)
    return nk / n, means, covariances


def _weighted_scatter(x: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """``sum_i weights[i, k] x_i x_i^T`` for every ``k``: ``(M, d, d)`` from ``x`` ``(N, d)`` and
    ``weights`` ``(N, M)``, as one ``(d, N) @ (N, M d)`` product per block of rows (a better shape
    for BLAS than ``M`` products with inner dimension ``N``, and memory bounded by the block)."""
    n, d = x.shape
    m = weights.shape[1]
    scatter = torch.zeros(d, m * d, dtype=x.dtype, device=x.device)
    rows = max(1, SCATTER_BLOCK_ELEMENTS // (m * d))
    for start in range(0, n, rows):
        block = x[start:start + rows]
        scatter.addmm_(block.T, (block[:, None, :] * weights[start:start + rows, :, None]).reshape(-1, m * d))
    return scatter.reshape(d, m, d).permute(1, 0, 2).contiguous()


def _precision_cholesky(covariances: torch.Tensor) -> torch.Tensor:
    """``P_m`` with ``P_m P_m^T = Sigma_m^{-1}`` ``(M, d, d)``, as scikit-learn defines it."""
    factor, info = torch.linalg.cholesky_ex(covariances)
    if bool((info != 0).any()):
        raise ValueError(
            "A mixture component's covariance is not positive definite (too few or duplicate anchors "
            "for it); increase reg_covar, use fewer components, or covariance_type='diag'."
        )
    eye = torch.eye(covariances.shape[-1], dtype=covariances.dtype, device=covariances.device)
    return torch.linalg.solve_triangular(factor, eye.expand_as(factor), upper=False).mT


def _e_step(x: torch.Tensor, weights: torch.Tensor, means: torch.Tensor, precision_chol: torch.Tensor
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-anchor ``log sum_m pi_m N(x | mu_m, Sigma_m)`` ``(N,)`` and log responsibilities ``(N, M)``."""
    m, d = means.shape
    stacked = precision_chol.permute(1, 0, 2).reshape(d, m * d)
    shift = torch.einsum("md,mde->me", means, precision_chol).reshape(1, m * d)
    # (x - mu_m)^T P_m for every m in one product, the shift riding along as addmm's bias, then one
    # reduction: two passes over the (N, M d) result instead of four.
    projected = torch.addmm(shift, x, stacked, beta=-1).reshape(-1, m, d)
    log_det = torch.log(torch.diagonal(precision_chol, dim1=1, dim2=2)).sum(dim=1)
    squared_distance = torch.linalg.vector_norm(projected, dim=2).square_()
    log_gauss = -0.5 * (d * math.log(2 * math.pi) + squared_distance) + log_det
    weighted = log_gauss + torch.log(weights)
    log_norm = torch.logsumexp(weighted, dim=1)
    return log_norm, weighted - log_norm[:, None]


def initial_labels(anchors: torch.Tensor, n_components: int, random_state: int | None = 0) -> np.ndarray:
    """The k-means labels ``(N,)`` (in ``0 .. n_components - 1``) that EM starts from, for ``anchors``
    ``(N, d)`` as :func:`fit_gaussian_mixture` receives them: scikit-learn's ``KMeans`` with one
    start drawn by ``random_state``. The Learn page's toy world hands them to the browser, whose EM
    (app/components/toy_world_math.js) starts where this one does."""
    # scikit-learn is imported here, by the fits that use it, not by every import of the models.
    from sklearn.cluster import KMeans

    x = anchors.to(torch.float64).cpu().numpy()
    return KMeans(n_clusters=n_components, n_init=1, random_state=np.random.RandomState(random_state)).fit(x).labels_


def fit_gaussian_mixture(anchors: torch.Tensor, n_components: int, covariance_type: str = "full",
                         reg_covar: float = 1e-6, max_iter: int = 100, tol: float = 1e-3,
                         random_state: int | None = 0) -> MixtureFit:
    """Fit ``n_components`` Gaussians to ``anchors`` ``(N, d)`` by EM; see the module docstring."""
    from sklearn.exceptions import ConvergenceWarning

    x = anchors.to(torch.float64)
    labels = initial_labels(x, n_components, random_state)
    resp = torch.nn.functional.one_hot(torch.as_tensor(labels, device=x.device).long(), n_components).to(x.dtype)
    weights, means, covariances = _m_step(x, resp, covariance_type, reg_covar)
    lower_bound, converged, n_iter = -math.inf, False, 0
    for n_iter in range(1, max_iter + 1):
        previous = lower_bound
        log_norm, log_resp = _e_step(x, weights, means, _precision_cholesky(covariances))
        weights, means, covariances = _m_step(x, log_resp.exp(), covariance_type, reg_covar)
        lower_bound = float(log_norm.mean())
        if abs(lower_bound - previous) < tol:
            converged = True
            break
    if not converged:
        warnings.warn(
            f"EM did not converge in max_iter={max_iter} iterations (the mean log-likelihood still changed by "
            f"{abs(lower_bound - previous):.3g} >= tol={tol}); raise max_iter or tol, or check the anchors.",
            ConvergenceWarning, stacklevel=4)
    return MixtureFit(weights, means, covariances, n_iter, converged, lower_bound)
