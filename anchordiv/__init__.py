"""anchordiv: context-specific image similarity from distributions over text anchors.

An implementation of *Anchor Divergence for Semantic Geometry in Contrastive Learning* (Akash
Kannan, Kiho Park and Victor Veitch). The anchor divergence of ``y`` from ``x`` is the KL
divergence between their anchor-tilted distributions, a Bregman divergence of the anchor model's
CGF ``kappa``: ``D(x -> y) = kappa(eta_y) - kappa(eta_x) - grad kappa(eta_x) . (eta_y - eta_x)``,
``eta = scale * x``. The math, sign conventions and cost model are in ``docs/design.md``.
"""
from .device import default_device
from .metrics import MeanAP, average_precision, mean_average_precision
from .models.base import AnchorModel
from .models.empirical import EmpiricalAnchors, LatentEmpiricalAnchors
from .models.estimator import not_fitted_error_class
from .models.feedback import FeedbackAnchors
from .models.gaussian import GaussianAnchors, LatentGaussianAnchors
from .models.mixture import MixtureAnchors
from .models.mixture_of_gaussians import GaussianMixtureAnchors
from .models.posterior import PosteriorEmpiricalAnchors, PosteriorGaussianAnchors
from .models.registry import anchor_model_kind, fit_anchor_model, list_anchor_models
from .search import AnchorIndex, CosineIndex, Index, ITIIndex
from .sharded import ShardedAnchorIndex
from .slider import MixtureSlider
from .store.reader import GalleryStore
from .suggest import PairTerms, gallery_mean_tilt, pair_terms, separating_terms, suggest_anchors
from .vocabularies import list_vocabularies, load_vocabulary

__version__ = "0.1.0"

__all__ = [
    "AnchorIndex", "AnchorModel", "CosineIndex", "EmpiricalAnchors", "FeedbackAnchors", "GalleryStore", "GaussianAnchors",
    "GaussianMixtureAnchors", "ITIIndex", "Index", "LatentEmpiricalAnchors", "LatentGaussianAnchors", "MeanAP",
    "MixtureAnchors", "MixtureSlider", "NotFittedError", "PairTerms", "PosteriorEmpiricalAnchors", "PosteriorGaussianAnchors",
    "ShardedAnchorIndex", "anchor_model_kind",
    "average_precision", "default_device", "fit_anchor_model", "gallery_mean_tilt",
    "list_anchor_models", "list_vocabularies", "load_vocabulary", "mean_average_precision", "pair_terms",
    "separating_terms", "suggest_anchors",
]


def __getattr__(name: str):
    """``NotFittedError`` is scikit-learn's, imported on first use (see :mod:`anchordiv.models.estimator`)."""
    if name == "NotFittedError":
        return not_fitted_error_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
