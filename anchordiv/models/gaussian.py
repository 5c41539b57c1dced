"""Gaussian anchor models: full covariance (optionally shrunk) and probabilistic PCA."""
from __future__ import annotations


import torch

from .._validation import Interval, finite_non_negative
from .base import AnchorModel, is_single_point
from .empirical import principal_subspace


def ledoit_wolf_covariance(anchors: torch.Tensor) -> tuple[torch.Tensor, float]:
    """Ledoit–Wolf shrunk covariance ``(d, d)`` of ``anchors`` ``(N, d)`` and its shrinkage.

    ``Sigma = (1 - a) S + a mu I`` with ``S`` the sample covariance (``1/N``), ``mu = tr(S)/d`` and
    ``a`` the Ledoit–Wolf estimate, written in closed form so it costs one ``N d^2`` product
    (the same estimate as ``sklearn.covariance.ledoit_wolf``).
    """
    n_anchors, dim = anchors.shape
    if is_single_point(anchors):
        got = "1 (n_samples=1)" if n_anchors == 1 else f"{n_anchors}, all identical{_in_one_dimension(dim)}"
        raise ValueError(
            f"Ledoit-Wolf shrinkage needs at least 2 anchors to estimate a covariance; got {got}. Add "
            "distinct anchors, use EmpiricalAnchors, or pass shrinkage=<ridge> (e.g. 0.01) for Sigma = ridge * I."
        )
    centred = anchors - anchors.mean(dim=0)
    sample = centred.T @ centred / n_anchors
    trace = torch.trace(sample)
    mu = trace / dim
    squared_norm = (sample**2).sum()
    fourth_moment = (centred.pow(2).sum(dim=1) ** 2).sum()
    beta = (fourth_moment / n_anchors - squared_norm) / (dim * n_anchors)
    delta = (squared_norm - 2.0 * mu * trace + dim * mu**2) / dim
    shrinkage = 0.0 if float(beta) <= 0 or float(delta) == 0 else min(float(beta), float(delta)) / float(delta)
    eye = torch.eye(dim, dtype=anchors.dtype, device=anchors.device)
    return (1.0 - shrinkage) * sample + shrinkage * mu * eye, shrinkage


def shrunk_covariance(anchors: torch.Tensor, shrinkage: str | float | None) -> tuple[torch.Tensor, float]:
    """Covariance of ``anchors`` ``(N, d)`` under a shrinkage rule: ``"ledoit-wolf"``, or a ridge
    ``lambda >= 0`` giving ``S + lambda I`` (``None`` means 0: the plain sample covariance)."""
    if shrinkage == "ledoit-wolf":
        return ledoit_wolf_covariance(anchors)
    ridge = _check_ridge(shrinkage)
    if ridge == 0 and is_single_point(anchors):
        got = ("1 anchor (n_samples=1)" if anchors.shape[0] == 1
               else f"{anchors.shape[0]} identical anchors{_in_one_dimension(anchors.shape[1])}")
        raise ValueError(
            f"A Gaussian needs at least 2 anchors for a covariance, or a ridge > 0; got {got} and "
            "no ridge. Add distinct anchors or pass shrinkage=<ridge> (e.g. 0.01)."
        )
    centred = anchors - anchors.mean(dim=0)
    eye = torch.eye(anchors.shape[1], dtype=anchors.dtype, device=anchors.device)
    return centred.T @ centred / anchors.shape[0] + ridge * eye, ridge


def _in_one_dimension(dim: int) -> str:
    """Why anchors came out identical when ``dim`` is 1 (else nothing): normalised, each is +1 or -1."""
    return " (in d=1, n_features=1, every anchor normalises to +1 or -1)" if dim == 1 else ""


def _check_ridge(shrinkage: float | None) -> float:
    """A numeric ``shrinkage`` (``None`` = 0) as a finite ridge ``>= 0``."""
    ridge = 0.0 if shrinkage is None else finite_non_negative(shrinkage)
    if ridge is None:
        raise ValueError(f"shrinkage must be 'ledoit-wolf' or a ridge >= 0 (a finite number, e.g. 0.01); "
                         f"got {shrinkage!r}.")
    return ridge


class GaussianAnchors(AnchorModel):
    """Gaussian anchor model ``N(mu, Sigma)`` fitted to the anchors.

    ``kappa(eta) = mu . eta + 1/2 eta^T Sigma eta`` and ``grad kappa(eta) = mu + Sigma eta``, so the
    divergence is ``D(x -> y) = 1/2 (eta_y - eta_x)^T Sigma (eta_y - eta_x)``: a Mahalanobis distance
    under the anchor covariance (not its inverse), symmetric in ``x`` and ``y``.

    Parameters
    ----------
    scale : logit scale ``s`` in ``eta = s * x``.
    shrinkage : ``"ledoit-wolf"`` (default; needs >= 2 anchors) or a ridge ``lambda >= 0`` with
        ``Sigma = S + lambda I``. With one anchor only a ridge works (``Sigma = lambda I``, a
        scaled cosine geometry); with fewer anchors than dimensions ``S`` is singular, which is
        harmless here because ``Sigma`` is never inverted, but shrinkage keeps every direction live.

    Fitted attributes: ``mean_`` ``(d,)``, ``covariance_`` ``(d, d)``, ``shrinkage_`` (the
    Ledoit–Wolf coefficient or the ridge).
    """

    parameter_constraints = {**AnchorModel.parameter_constraints, "shrinkage": lambda value, name: (
        value if value == "ledoit-wolf" else _check_ridge(value))}

    def __init__(self, *, scale: float = 100.0, shrinkage: str | float | None = "ledoit-wolf"):
        super().__init__(scale=scale)
        self.shrinkage = shrinkage

    def _fit(self, anchors: torch.Tensor) -> None:
        self.mean_ = anchors.mean(dim=0)
        self.covariance_, self.shrinkage_ = shrunk_covariance(anchors, self.shrinkage)

    def _param_tensors(self) -> dict[str, torch.Tensor]:
        return {"mean": self.mean_, "covariance": self.covariance_}

    def _cgf_eta(self, eta: torch.Tensor) -> torch.Tensor:
        params = self._params(eta)
        return eta @ params["mean"] + 0.5 * ((eta @ params["covariance"]) * eta).sum(dim=1)

    def _cgf_grad_eta(self, eta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        params = self._params(eta)
        spread = eta @ params["covariance"]
        return eta @ params["mean"] + 0.5 * (spread * eta).sum(dim=1), params["mean"] + spread



class LatentGaussianAnchors(AnchorModel):
    """Gaussian fitted as probabilistic PCA in the top-``rank`` principal subspace of the anchors.

    Our reading of the paper's "Latent Gaussian": ``Sigma = W W^T + sigma^2 I`` with
    ``W = U (Lambda - sigma^2 I)^{1/2}``, where ``U`` ``(d, rank)`` and ``Lambda`` are the leading
    eigenvectors and eigenvalues of the anchor covariance and ``sigma^2`` the mean of the remaining
    ``d - rank`` eigenvalues (the maximum-likelihood PPCA fit). Then
    ``kappa(eta) = mu . eta + 1/2 (||W^T eta||^2 + sigma^2 ||eta||^2)``, evaluated in ``O(d rank)``.

    Fitted attributes: ``mean_`` ``(d,)``, ``components_`` ``(rank, d)`` (rows of ``U^T``),
    ``explained_variance_`` ``(rank,)``, ``noise_variance_``; ``covariance_`` is built on request.
    """

    parameter_constraints = {**AnchorModel.parameter_constraints, "rank": Interval(1, integer=True)}

    def __init__(self, *, rank: int = 32, scale: float = 100.0):
        super().__init__(scale=scale)
        self.rank = rank

    def _fit(self, anchors: torch.Tensor) -> None:
        rank = int(self.rank)
        self.mean_, self.components_, eigenvalues = principal_subspace(anchors, rank)
        dim = anchors.shape[1]
        self.explained_variance_ = eigenvalues[:rank]
        self.noise_variance_ = float(eigenvalues[rank:].sum()) / (dim - rank)
        loadings = (self.explained_variance_ - self.noise_variance_).clamp_min(0).sqrt()
        self._loadings_t = self.components_ * loadings[:, None]  # W^T, (rank, d)

    @property
    def covariance_(self) -> torch.Tensor:
        """``W W^T + sigma^2 I`` as a dense ``(d, d)`` matrix."""
        self.check_fitted()
        eye = torch.eye(self.n_features_in_, dtype=self.mean_.dtype, device=self.mean_.device)
        return self._loadings_t.T @ self._loadings_t + self.noise_variance_ * eye

    def _param_tensors(self) -> dict[str, torch.Tensor]:
        return {"mean": self.mean_, "loadings_t": self._loadings_t}

    def _cgf_grad_eta(self, eta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        params = self._params(eta)
        latent = eta @ params["loadings_t"].T
        noise = self.noise_variance_
        kappa = eta @ params["mean"] + 0.5 * ((latent**2).sum(dim=1) + noise * (eta**2).sum(dim=1))
        return kappa, params["mean"] + latent @ params["loadings_t"] + noise * eta

