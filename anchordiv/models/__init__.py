"""Anchor models: distributions over text anchors and the geometries they induce."""
from .base import AnchorModel
from .empirical import EmpiricalAnchors, LatentEmpiricalAnchors
from .estimator import not_fitted_error_class
from .feedback import FeedbackAnchors
from .gaussian import GaussianAnchors, LatentGaussianAnchors, ledoit_wolf_covariance
from .mixture import MixtureAnchors
from .mixture_of_gaussians import GaussianMixtureAnchors
from .posterior import PosteriorEmpiricalAnchors, PosteriorGaussianAnchors
from .registry import AnchorModelKind, anchor_model_kind, fit_anchor_model, list_anchor_models

__all__ = [
    "AnchorModel", "AnchorModelKind", "EmpiricalAnchors", "FeedbackAnchors", "LatentEmpiricalAnchors", "GaussianAnchors",
    "LatentGaussianAnchors", "GaussianMixtureAnchors", "MixtureAnchors", "NotFittedError", "PosteriorEmpiricalAnchors",
    "PosteriorGaussianAnchors", "anchor_model_kind", "fit_anchor_model", "ledoit_wolf_covariance", "list_anchor_models",
]


def __getattr__(name: str):
    """``NotFittedError`` is scikit-learn's, imported on first use (see :mod:`.estimator`)."""
    if name == "NotFittedError":
        return not_fitted_error_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
