"""Mixtures of anchor models: the object/style weight ``p`` of the paper."""
from __future__ import annotations

from typing import Any, Hashable, Sequence

import numpy as np
import torch

from .._validation import ArrayLike, check_probability_vector
from .base import AnchorModel


class MixtureAnchors(AnchorModel):
    """Mixture ``P = sum_k w_k P_k`` of fitted anchor models sharing one scale and dimension.

    ``kappa(eta) = logsumexp_k(log w_k + kappa_k(eta))`` and
    ``grad kappa(eta) = sum_k r_k(eta) grad kappa_k(eta)`` with ``r = softmax_k(log w_k + kappa_k(eta))``.
    The paper's object/style mixture is ``MixtureAnchors([object_model, style_model], [p, 1 - p])``.

    Two parametrisations of the same family:

    * **literal** (default): ``w = weights``. A tight anchor set (a few style phrases) has a much
      larger ``kappa`` than a broad one, so its component owns the responsibilities for almost
      every ``p`` and a ``p`` slider acts as a switch.
    * **balanced**, after ``balance(reference)``: ``w_k ∝ weights_k exp(-c_k)`` with ``c_k`` the mean
      of ``kappa_k`` over a reference set (e.g. the gallery). At ``p = 1/2`` the components then
      share the reference evenly and ``p`` moves the geometry gradually. ``balance(None)`` returns
      to literal weights.

    ``set_weights`` costs nothing but a few logs: an :class:`~anchordiv.AnchorIndex` keeps each
    component's ``kappa_k`` (and ``grad kappa_k`` when needed) and only re-mixes them.

    Parameters
    ----------
    models : fitted anchor models (or unfitted ones, then call ``fit(anchor_sets)``).
    weights : non-negative, summing to 1, one per model; uniform when ``None``.

    Fitted attributes: ``kappa_offsets_`` ``(K,)`` (zeros unless balanced), ``log_weights_`` ``(K,)``.
    """

    def __init__(self, models: Sequence[AnchorModel], weights: ArrayLike | None = None):
        if len(models) == 0:
            raise ValueError("MixtureAnchors needs at least one component model; got none.")
        self.models = list(models)
        self.weights = np.full(len(models), 1.0 / len(models)) if weights is None else weights
        self.kappa_offsets_ = np.zeros(len(models))
        self._weights_array = check_probability_vector(self.weights, len(models), "weights")

    @property
    def scale(self) -> float:
        scales = {float(model.scale) for model in self.models}
        if len(scales) != 1:
            raise ValueError(f"All components must share one scale; got {sorted(scales)}. Refit them with one scale.")
        return scales.pop()

    @property
    def n_features_in_(self) -> int:
        for model in self.models:
            model._check_fitted()
        dims = {model.n_features_in_ for model in self.models}
        if len(dims) != 1:
            raise ValueError(f"All components must share one dimension; got {sorted(dims)}.")
        return dims.pop()

    def _check_fitted(self) -> None:
        self.n_features_in_  # noqa: B018 - raises if a component is unfitted or dimensions differ

    def fit(self, anchor_sets: Sequence[ArrayLike]) -> "MixtureAnchors":
        """Fit component ``k`` to ``anchor_sets[k]`` (each ``(N_k, d)``)."""
        if len(anchor_sets) != len(self.models):
            raise ValueError(f"Got {len(anchor_sets)} anchor sets for {len(self.models)} components; pass one per component.")
        for model, anchors in zip(self.models, anchor_sets):
            model.fit(anchors)
        self._check_fitted()
        return self

    # -- weights ---------------------------------------------------------------------------
    def set_weights(self, weights: ArrayLike) -> "MixtureAnchors":
        """Replace the mixture weights (non-negative, summing to 1). No refit, no recomputation."""
        self._weights_array = check_probability_vector(weights, len(self.models), "weights")
        self.weights = weights
        return self

    def balance(self, reference: ArrayLike | None) -> "MixtureAnchors":
        """Use the balanced parametrisation with offsets ``c_k = mean_j kappa_k(scale * r_j)`` over
        reference embeddings ``r`` ``(n, d)``; ``None`` restores the literal weights."""
        if reference is None:
            self.kappa_offsets_ = np.zeros(len(self.models))
            return self
        eta = self.natural_parameters(reference, "reference")
        self.kappa_offsets_ = np.array([float(model.cgf_eta(eta).double().mean()) for model in self.models])
        return self

    @property
    def balanced(self) -> bool:
        return bool(np.any(self.kappa_offsets_ != 0))

    @property
    def log_weights_(self) -> np.ndarray:
        """Effective ``log w_k`` ``(K,)`` after balancing, normalised to sum to 1 in ``w``."""
        with np.errstate(divide="ignore"):
            logits = np.log(self._weights_array) - self.kappa_offsets_
        finite = logits[np.isfinite(logits)]
        return logits - (finite.max() + np.log(np.exp(finite - finite.max()).sum()))

    @property
    def effective_weights_(self) -> np.ndarray:
        return np.exp(self.log_weights_)

    # -- evaluation --------------------------------------------------------------------------
    def _elements_per_row(self) -> int:
        return len(self.models) * self.n_features_in_

    def gallery_state(self, eta: torch.Tensor, with_grad: bool) -> tuple:
        if not with_grad:
            return torch.stack([model.cgf_eta(eta) for model in self.models], dim=1), None
        pairs = [model.cgf_grad_eta(eta) for model in self.models]
        return torch.stack([k for k, _ in pairs], dim=1), torch.stack([g for _, g in pairs], dim=1)

    def combine_state(self, state: tuple) -> tuple[torch.Tensor, torch.Tensor | None]:
        component_kappa, component_grad = state
        terms = component_kappa + torch.as_tensor(self.log_weights_, dtype=component_kappa.dtype,
                                                  device=component_kappa.device)
        kappa = torch.logsumexp(terms, dim=1)
        if component_grad is None:
            return kappa, None
        responsibilities = torch.exp(terms - kappa[:, None])
        return kappa, torch.einsum("nk,nkd->nd", responsibilities, component_grad)

    def fit_token(self) -> Hashable:
        return tuple(model.fit_token() for model in self.models)

    def weights_token(self) -> Hashable:
        return tuple(self.log_weights_.tolist())

    def _cgf_eta(self, eta: torch.Tensor) -> torch.Tensor:
        return self.combine_state(self.gallery_state(eta, with_grad=False))[0]

    def _cgf_grad_eta(self, eta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.combine_state(self.gallery_state(eta, with_grad=True))

    def _init_params(self) -> dict[str, Any]:
        return {"models": self.models, "weights": np.asarray(self._weights_array).tolist()}
