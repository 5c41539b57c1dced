"""Gaussian-mixture anchor model fitted by EM."""
from __future__ import annotations


import torch

from .._validation import Interval, one_of
from .base import AnchorModel, count_distinct_rows
from .em import fit_gaussian_mixture

COVARIANCE_TYPES = ("full", "tied", "diag", "spherical")


class GaussianMixtureAnchors(AnchorModel):
    """*One* anchor model: a mixture of ``M`` Gaussians fitted by expectation–maximisation to *one*
    anchor set (a GMM).

    Not to be confused with :class:`~anchordiv.MixtureAnchors`, which mixes whole anchor models,
    each fitted to its own anchor set (object anchors A and style anchors B, weight ``p``).

    ``kappa(eta) = logsumexp_m(log pi_m + mu_m . eta + 1/2 eta^T Sigma_m eta)`` and
    ``grad kappa(eta) = sum_m r_m(eta) (mu_m + Sigma_m eta)`` with ``r(eta)`` the softmax of the
    terms: the tilted responsibilities. ``pi`` ``(M,)``, ``mu`` ``(M, d)``, ``Sigma`` ``(M, d, d)`` are
    the EM estimates, computed by :func:`~anchordiv.models.em.fit_gaussian_mixture` in float64 on
    the anchors' device: scikit-learn's ``GaussianMixture`` algorithm (k-means start, same stopping
    rule, ``reg_covar`` added to each variance), with which it agrees to round-off.

    Parameters
    ----------
    n_components : ``M``, at most the number of anchors.
    covariance_type : ``"full"``, ``"tied"``, ``"diag"`` or ``"spherical"`` (all are evaluated as full
        matrices, so every type costs ``O(M d^2)`` per image).
    scale : logit scale ``s``. random_state : seed for the k-means initialisation.
    reg_covar, max_iter, tol : as in ``sklearn.mixture.GaussianMixture``.

    Fitted attributes: ``weights_`` ``(M,)``, ``means_`` ``(M, d)``, ``covariances_`` ``(M, d, d)``
    (every covariance type as full matrices), ``n_iter_``, ``converged_``, ``lower_bound_``.
    """

    parameter_constraints = {
        **AnchorModel.parameter_constraints,
        "n_components": Interval(1, integer=True),
        "covariance_type": one_of(*COVARIANCE_TYPES),
        "random_state": Interval(integer=True, also=(None,), example="a seed"),
        "reg_covar": Interval(example="added to every variance; e.g. 1e-6, or larger for few anchors"),
        "max_iter": Interval(1, integer=True),
        "tol": Interval(example="the change in mean log-likelihood that stops EM; e.g. 1e-3"),
    }

    def __init__(self, *, n_components: int = 4, covariance_type: str = "full", scale: float = 100.0,
                 random_state: int | None = 0, reg_covar: float = 1e-6, max_iter: int = 100,
                 tol: float = 1e-3):
        super().__init__(scale=scale)
        self.n_components = n_components
        self.covariance_type = covariance_type
        self.random_state = random_state
        self.reg_covar = reg_covar
        self.max_iter = max_iter
        self.tol = tol

    def _fit(self, anchors: torch.Tensor) -> None:
        n_components = int(self.n_components)
        if n_components > anchors.shape[0]:
            raise ValueError(
                f"n_components={n_components} exceeds the {anchors.shape[0]} anchors; use at most "
                "one component per anchor, or add anchors."
            )
        distinct = count_distinct_rows(anchors)
        if n_components > distinct:
            raise ValueError(
                f"n_components={n_components} exceeds the {distinct} distinct anchor(s) (of {anchors.shape[0]}; "
                f"duplicates add no point to fit); use n_components <= {distinct} or add distinct anchors."
            )
        fit = fit_gaussian_mixture(anchors, n_components, self.covariance_type, float(self.reg_covar),
                                   int(self.max_iter), float(self.tol), self.random_state)
        self.weights_ = fit.weights.to(anchors.dtype)
        self.means_ = fit.means.to(anchors.dtype)
        self.covariances_ = fit.covariances.to(anchors.dtype)
        self.n_iter_, self.converged_, self.lower_bound_ = fit.n_iter, fit.converged, fit.lower_bound

    def _param_tensors(self) -> dict[str, torch.Tensor]:
        m, d, _ = self.covariances_.shape
        # Side by side, (d, M d), so one matmul gives Sigma_m eta for every component.
        stacked = self.covariances_.permute(1, 0, 2).reshape(d, m * d)
        return {"log_weights": torch.log(self.weights_), "means": self.means_, "stacked": stacked}

    def _elements_per_row(self) -> int:
        return self.means_.numel()

    def _terms(self, eta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, dict]:
        params = self._params(eta)
        m, d = params["means"].shape
        spread = (eta @ params["stacked"]).reshape(-1, m, d)  # Sigma_m eta, (n, M, d)
        quadratic = (spread * eta[:, None, :]).sum(dim=2)
        terms = params["log_weights"] + eta @ params["means"].T + 0.5 * quadratic
        return terms, spread, params

    def _cgf_eta(self, eta: torch.Tensor) -> torch.Tensor:
        return torch.logsumexp(self._terms(eta)[0], dim=1)

    def _cgf_grad_eta(self, eta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        terms, spread, params = self._terms(eta)
        kappa = torch.logsumexp(terms, dim=1)
        responsibilities = torch.exp(terms - kappa[:, None])
        grad = responsibilities @ params["means"] + torch.einsum("nm,nmd->nd", responsibilities, spread)
        return kappa, grad

