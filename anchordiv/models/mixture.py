"""Mixtures of whole anchor models: the object/style weight ``p`` of the paper."""
from __future__ import annotations

from typing import Any, Hashable, Sequence

import numpy as np
import torch
from sklearn.exceptions import NotFittedError

from .._validation import ArrayLike, check_probability_vector
from .base import AnchorModel, like_input
from .calibration import QUERIES, CalibrationCurve, calibration_curve


class MixtureAnchors(AnchorModel):
    """A weighted mix of *whole anchor models*, each fitted to its own anchor set: the paper's
    object/style mixture ``MixtureAnchors([object_model, style_model], [p, 1 - p])``.

    Not to be confused with :class:`~anchordiv.GaussianMixtureAnchors`, which is *one* anchor
    model: a Gaussian mixture fitted by EM to *one* anchor set.

    With ``K`` components ``P_k`` and weights ``w_k``, ``P = sum_k w_k P_k`` and

        kappa(eta)      = logsumexp_k(log w_k + kappa_k(eta))
        grad kappa(eta) = sum_k r_k(eta) grad kappa_k(eta),   r = softmax_k(log w_k + kappa_k(eta)),

    where ``kappa_k`` is component ``k``'s CGF and ``r_k(eta)`` its responsibility for ``eta``.

    Three parametrisations of the same family (docs/design.md §3):

    * **literal** (default): ``w = weights``. A tight anchor set (a few style phrases) has a much
      larger ``kappa`` than a broad one, so its component owns the responsibilities for almost
      every ``p`` and a ``p`` slider acts as a switch.
    * **balanced**: ``w_k ∝ weights_k exp(-c_k)`` with ``c_k`` the mean of ``kappa_k`` over a
      reference set (e.g. the gallery). At ``p = 1/2`` the components then share the reference
      evenly, though the neighbourhoods still move mostly near ``p = 1``.
    * **calibrated** (two components): ``weights = [p, 1 - p]`` is mapped to the log-odds at which
      the neighbourhoods of a reference set have moved the fraction ``p`` of the way from B's to
      A's, measured without labels (:mod:`anchordiv.models.calibration`): ``p = 0`` and ``p = 1``
      are B and A exactly, ``p = 1/2`` is half-way, and the map is monotone.

    The pure API returns new mixtures that share this one's fitted components (nothing is copied
    or refitted), so a mixture shared between threads is never changed:
    :meth:`with_weights`, :meth:`with_balance` and :meth:`with_calibration`. An :class:`~anchordiv.AnchorIndex` built on one
    of them serves any other through :meth:`~anchordiv.AnchorIndex.with_model` in ``O(G K)``.
    :meth:`set_weights`, :meth:`balance` and :meth:`calibrate` are the mutating conveniences for
    single-threaded scripts: they change this object in place.

    Parameters
    ----------
    models : anchor models, fitted (then no ``fit`` is needed) or not (then call
        ``fit(anchor_sets)``); they must share one scale and one dimension.
    weights : ``(K,)`` non-negative, summing to 1, one per model; uniform when ``None``.

    Fitted attributes: ``n_features_in_``, ``kappa_offsets_`` ``(K,)`` (the ``c_k``, zeros unless
    balanced), ``calibration_`` (the :class:`~anchordiv.models.calibration.CalibrationCurve` once
    calibrated, else ``None``), ``log_weights_`` and ``effective_weights_`` ``(K,)`` (the ``w_k`` in use).
    """

    # Fit-like state, set only by balance / with_balance and calibrate / with_calibration (one at a time).
    _kappa_offsets: np.ndarray | None = None
    _calibration: CalibrationCurve | None = None

    def __init__(self, models: Sequence[AnchorModel], weights: ArrayLike | None = None):
        self.models = models
        self.weights = weights

    # -- components ------------------------------------------------------------------------
    def _components(self) -> list[AnchorModel]:
        components = list(self.models)
        if not components:
            raise ValueError("MixtureAnchors needs at least one component model; got none.")
        for model in components:
            if not isinstance(model, AnchorModel):
                raise ValueError(f"every component must be an anchor model (e.g. EmpiricalAnchors); got {model!r}.")
        return components

    @property
    def scale(self) -> float:
        scales = {float(model.scale) for model in self._components()}
        if len(scales) != 1:
            raise ValueError(f"All components must share one scale; got {sorted(scales)}. Refit them with one scale.")
        return scales.pop()

    @property
    def n_features_in_(self) -> int:
        components = self._components()
        for model in components:
            model.check_fitted()
        dims = {model.n_features_in_ for model in components}
        if len(dims) != 1:
            raise ValueError(f"All components must share one dimension; got {sorted(dims)}.")
        return dims.pop()

    def __sklearn_is_fitted__(self) -> bool:
        return all(model.__sklearn_is_fitted__() for model in self._components())

    def check_fitted(self) -> None:
        """Raise :class:`NotFittedError` unless every component is fitted (``ValueError`` when
        their dimensions differ)."""
        if not self.__sklearn_is_fitted__():
            raise NotFittedError(
                "This MixtureAnchors has an unfitted component; call fit(anchor_sets) with one (N_k, d) "
                "anchor set per component, or build it from fitted models."
            )
        self.n_features_in_  # noqa: B018 - raises when the components' dimensions differ

    def fit(self, anchor_sets: Sequence[ArrayLike]) -> "MixtureAnchors":
        """Fit component ``k`` to ``anchor_sets[k]`` (each ``(N_k, d)``). A balance measured on the
        old components no longer applies, so the weights are literal again until rebalanced."""
        components = self._components()
        if len(anchor_sets) != len(components):
            raise ValueError(f"Got {len(anchor_sets)} anchor sets for {len(components)} components; pass one per component.")
        self._weight_vector()
        for model, anchors in zip(components, anchor_sets):
            model.fit(anchors)
        self.check_fitted()
        self._kappa_offsets, self._calibration = None, None
        return self

    # -- weights ---------------------------------------------------------------------------
    def _weight_vector(self, weights: ArrayLike | None = None) -> np.ndarray:
        """``weights`` (default: this mixture's) validated as a probability vector ``(K,)``."""
        count = len(self._components())
        chosen = self.weights if weights is None else weights
        return check_probability_vector(np.full(count, 1.0 / count) if chosen is None else chosen, count, "weights")

    def _reference_offsets(self, reference: ArrayLike) -> np.ndarray:
        """``c_k = mean_j kappa_k(scale * r_j)`` over reference embeddings ``r`` ``(n, d)``."""
        eta = self.natural_parameters(reference, "reference")
        return np.array([float(model.cgf_eta(eta).double().mean()) for model in self._components()])

    def _reference_calibration(self, reference: ArrayLike, k: int, queries: int, seed: int) -> CalibrationCurve:
        components = self._components()
        if len(components) != 2:
            raise ValueError(f"calibrated weights are defined for two components (A and B, weight p); this mixture "
                             f"has {len(components)}. Use with_balance for more components.")
        return calibration_curve(components, self.natural_parameters(reference, "reference"), k, queries, seed)

    def _sibling(self, weights: ArrayLike | None, offsets: np.ndarray | None,
                 calibration: CalibrationCurve | None) -> "MixtureAnchors":
        mixture = type(self)(self.models, weights)
        mixture._kappa_offsets, mixture._calibration = offsets, calibration
        return mixture

    def with_weights(self, weights: ArrayLike) -> "MixtureAnchors":
        """A new mixture with ``weights`` ``(K,)`` and this one's components (shared, not copied or
        refitted) and parametrisation. This mixture is unchanged."""
        self._weight_vector(weights)
        return self._sibling(weights, self._kappa_offsets, self._calibration)

    def with_balance(self, reference: ArrayLike | None) -> "MixtureAnchors":
        """A new mixture, balanced over reference embeddings ``reference`` ``(n, d)`` (``None``:
        literal weights), with this one's components and weights. This mixture is unchanged."""
        return self._sibling(self.weights, None if reference is None else self._reference_offsets(reference), None)

    def with_calibration(self, reference: ArrayLike, k: int = 10, queries: int = QUERIES,
                         seed: int = 0) -> "MixtureAnchors":
        """A new mixture whose ``p`` is calibrated on reference embeddings ``reference`` ``(n, d)``
        (the gallery: ``queries`` of its items, drawn with ``seed``, each ranking the others by its
        top-``k``), with this one's components and weights. This mixture is unchanged."""
        return self._sibling(self.weights, None, self._reference_calibration(reference, k, queries, seed))

    def calibrate(self, reference: ArrayLike, k: int = 10, queries: int = QUERIES, seed: int = 0) -> "MixtureAnchors":
        """Switch to calibrated weights in place (the mutating convenience of :meth:`with_calibration`)."""
        self._calibration = self._reference_calibration(reference, k, queries, seed)
        self._kappa_offsets = None
        return self

    def set_weights(self, weights: ArrayLike) -> "MixtureAnchors":
        """Replace the weights in place (mutating convenience; see :meth:`with_weights`). No refit."""
        self._weight_vector(weights)
        self.weights = weights
        return self

    def balance(self, reference: ArrayLike | None) -> "MixtureAnchors":
        """Switch to the balanced parametrisation over ``reference`` ``(n, d)`` in place (``None``:
        literal weights); the mutating convenience of :meth:`with_balance`."""
        self._kappa_offsets = None if reference is None else self._reference_offsets(reference)
        self._calibration = None
        return self

    @property
    def balanced(self) -> bool:
        return self._kappa_offsets is not None

    @property
    def calibrated(self) -> bool:
        return self._calibration is not None

    @property
    def calibration_(self) -> CalibrationCurve | None:
        return self._calibration

    @property
    def kappa_offsets_(self) -> np.ndarray:
        return np.zeros(len(self._components())) if self._kappa_offsets is None else self._kappa_offsets.copy()

    @property
    def log_weights_(self) -> np.ndarray:
        """Effective ``log w_k`` ``(K,)`` after balancing or calibrating, normalised to sum to 1 in ``w``."""
        if self._calibration is not None:
            log_odds = self._calibration.log_odds_at(float(self._weight_vector()[0]))
            if np.isinf(log_odds):
                return np.array([0.0, -np.inf]) if log_odds > 0 else np.array([-np.inf, 0.0])
            return -np.logaddexp(0.0, [-log_odds, log_odds])  # log sigmoid(+-lambda)
        with np.errstate(divide="ignore"):
            logits = np.log(self._weight_vector()) - self.kappa_offsets_
        finite = logits[np.isfinite(logits)]
        return logits - (finite.max() + np.log(np.exp(finite - finite.max()).sum()))

    @property
    def effective_weights_(self) -> np.ndarray:
        return np.exp(self.log_weights_)

    # -- evaluation --------------------------------------------------------------------------
    def _elements_per_row(self) -> int:
        return len(self._components()) * self.n_features_in_

    def gallery_state(self, eta: torch.Tensor, with_grad: bool) -> tuple:
        components = self._components()
        if not with_grad:
            return torch.stack([model.cgf_eta(eta) for model in components], dim=1), None
        pairs = [model.cgf_grad_eta(eta) for model in components]
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

    def responsibilities(self, x: ArrayLike) -> Any:
        """Each component's share of the tilt of images ``x`` ``(n, d)``: shape ``(n, K)``, rows summing to 1.

        ``r_k(eta) = softmax_k(log w_k + kappa_k(eta))`` with ``eta = scale * x / ||x||``, ``kappa_k``
        component ``k``'s CGF and ``w_k`` the weights in use (:attr:`effective_weights_`): the tilted
        mixture is ``sum_k r_k(eta) p_k(. | eta)``, so ``r_k`` is how much of ``x``'s tilted
        distribution lies on component ``k``'s anchors."""
        eta = self.natural_parameters(x)
        component_kappa, _ = self.gallery_state(eta, with_grad=False)
        terms = component_kappa + torch.as_tensor(self.log_weights_, dtype=eta.dtype, device=eta.device)
        return like_input(torch.softmax(terms, dim=1), x)

    def fit_token(self) -> Hashable:
        return tuple(model.fit_token() for model in self._components())

    def weights_token(self) -> Hashable:
        return tuple(self.log_weights_.tolist())

    def _cgf_eta(self, eta: torch.Tensor) -> torch.Tensor:
        return self.combine_state(self.gallery_state(eta, with_grad=False))[0]

    def _cgf_grad_eta(self, eta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.combine_state(self.gallery_state(eta, with_grad=True))
