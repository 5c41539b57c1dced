"""anchordiv: context-specific image similarity from distributions over text anchors.

The anchor divergence of ``y`` from ``x`` is the KL divergence between their anchor-tilted
distributions, a Bregman divergence of the anchor model's CGF ``kappa``:
``D(x -> y) = kappa(eta_y) - kappa(eta_x) - grad kappa(eta_x) . (eta_y - eta_x)``, ``eta = scale * x``.
"""
from .device import default_device
from .metrics import MeanAP, average_precision, mean_average_precision
from .models import (
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
from .search import AnchorIndex, CosineIndex, ITIIndex

__version__ = "0.1.0"

__all__ = [
    "AnchorIndex", "AnchorModel", "CosineIndex", "EmpiricalAnchors", "GaussianAnchors",
    "GaussianMixtureAnchors", "ITIIndex", "LatentEmpiricalAnchors", "LatentGaussianAnchors",
    "MeanAP", "MixtureAnchors", "average_precision", "default_device", "mean_average_precision",
    "posterior_empirical", "posterior_gaussian",
]
