"""Anchor models: distributions over text anchors and the geometries they induce."""
from .base import AnchorModel
from .empirical import EmpiricalAnchors, LatentEmpiricalAnchors
from .gaussian import GaussianAnchors, LatentGaussianAnchors, ledoit_wolf_covariance
from .mixture import MixtureAnchors
from .mixture_of_gaussians import GaussianMixtureAnchors
from .posterior import posterior_empirical, posterior_gaussian

__all__ = [
    "AnchorModel", "EmpiricalAnchors", "LatentEmpiricalAnchors", "GaussianAnchors",
    "LatentGaussianAnchors", "GaussianMixtureAnchors", "MixtureAnchors", "ledoit_wolf_covariance",
    "posterior_empirical", "posterior_gaussian",
]
