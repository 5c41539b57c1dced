"""Mixtures of whole anchor models: the object/style weight ``p`` of the paper."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable, Sequence

import numpy as np
import torch

from .._validation import ArrayLike, Interval, check_probability_vector, one_of
from .base import AnchorModel, like_input
from .calibration import QUERIES, CalibrationCurve, calibration_curve
from .estimator import not_fitted_error

# How the weights [p, 1 - p] become the mixture's w (docs/design.md §3): MixtureAnchors' ``weighting``.
WEIGHTINGS = ("literal", "balanced", "calibrated")


@dataclass(frozen=True)
class ReferenceFit:
    """What a balanced or calibrated mixture measured on its reference set, and under which of its
    parameters: ``settings`` (its ``weighting`` and, when calibrated, its ``calibration_*``
    parameters), the balanced offsets ``offsets`` ``(K,)`` (the ``c_k``) or the calibration
    curve ``curve``."""

    settings: tuple
    offsets: np.ndarray | None = None
    curve: CalibrationCurve | None = None


def _check_anchor_sets(anchor_sets: Sequence[ArrayLike], n_components: int) -> None:
    """Refuse anything but one anchor set per component: one 2-D array (rows are anchors, not
    sets) is named as such, for it would otherwise read as that many one-row sets."""
    dims = getattr(anchor_sets, "ndim", None)
    if dims is not None and dims != 3:
        raise ValueError(f"anchor_sets must be one anchor set per component, a list of {n_components} (N_k, d) arrays; "
                         f"got one array of shape {tuple(anchor_sets.shape)}. Pass [anchors_1, ..., anchors_K].")
    if len(anchor_sets) != n_components:
        raise ValueError(f"Got {len(anchor_sets)} anchor sets for {n_components} components; pass one per component.")


class MixtureAnchors(AnchorModel):
    """A weighted mix of *whole anchor models*, each fitted to its own anchor set: the paper's
    object/style mixture ``MixtureAnchors([object_model, style_model], [p, 1 - p])``.

    Not to be confused with :class:`~anchordiv.GaussianMixtureAnchors`, which is *one* anchor
    model: a Gaussian mixture fitted by EM to *one* anchor set.

    With ``K`` components ``P_k`` (CGFs ``kappa_k``) and weights ``w_k`` in use, ``P = sum_k w_k P_k`` and

        kappa(eta)      = logsumexp_k(log w_k + kappa_k(eta))
        grad kappa(eta) = sum_k r_k(eta) grad kappa_k(eta),   r_k(eta) = softmax_k(log w_k + kappa_k(eta)),

    where ``eta = s x`` is an image's natural parameter (``s`` the components' shared scale) and
    ``r_k(eta)`` component ``k``'s responsibility for it.

    ``weighting`` chooses how ``weights`` (``p_k``; ``[p, 1 - p]`` for two components) become the
    ``w_k``, three parametrisations of the same family (docs/design.md §3):

    * ``"literal"`` (default): ``w_k = p_k``. A tight anchor set (a few style phrases) has a much
      larger ``kappa`` than a broad one, so its component owns the responsibilities for almost
      every ``p`` and a ``p`` slider acts as a switch.
    * ``"balanced"``: ``w_k ∝ p_k exp(-c_k)``, ``c_k = mean_{r in R} kappa_k(s r)`` over a reference
      set ``R`` of image embeddings (e.g. the gallery). At ``p = 1/2`` the components then share the
      reference evenly, though the neighbourhoods still move mostly near ``p = 1``.
    * ``"calibrated"`` (two components, A and B): ``p = p_A`` is mapped to the log-odds
      ``lambda = log(w_A / w_B)`` at which the neighbourhoods of ``calibration_queries`` items of
      the reference ``R`` (drawn with ``calibration_seed``, each ranking the others by its
      top-``calibration_k``) have moved the fraction ``p`` of the way from B's to A's, measured
      without labels (:mod:`anchordiv.models.calibration`): ``p = 0`` and ``p = 1`` are B and A
      exactly, ``p = 1/2`` is half-way, and the map is monotone.

    The balanced and calibrated forms are measured on ``R`` when fitting:
    ``fit(anchor_sets, reference=R)``. A mixture of already fitted models needs no ``fit``
    (literal), and :meth:`with_weights`, :meth:`with_balance` and :meth:`with_calibration` return
    new fitted mixtures sharing this one's components (nothing is copied or refitted), so a mixture
    shared between threads is never changed. An :class:`~anchordiv.AnchorIndex` built on one of
    them serves any other through :meth:`~anchordiv.AnchorIndex.with_model` in ``O(G K)``.
    ``sklearn.base.clone`` keeps every parameter, so ``clone(mixture).fit(anchor_sets, reference=R)``
    reproduces ``mixture``.

    Parameters
    ----------
    models : sequence of AnchorModel
        The ``K`` components, fitted (then no ``fit`` is needed for literal weights) or not (then
        call ``fit(anchor_sets)``); they must share one scale ``s`` and one dimension ``d``.
    weights : array-like of shape (K,), optional
        The ``p_k``: non-negative, summing to 1, one per model; uniform when ``None``.
    weighting : {"literal", "balanced", "calibrated"}, default "literal"
        How ``weights`` become the ``w_k`` in use (above).
    calibration_k : int, default 10
        Calibrated weighting only: the neighbourhood size ``k`` the calibration compares (on a
        reference of fewer than ``k + 2`` items, ``n - 2``: as many as it allows).
    calibration_queries : int, default 128
        Calibrated weighting only: how many reference items serve as queries.
    calibration_seed : int, default 0
        Calibrated weighting only: the seed that draws those queries.

    Attributes
    ----------
    n_features_in_ : int
        ``d``.
    kappa_offsets_ : ndarray of shape (K,)
        The ``c_k`` (zeros unless balanced).
    calibration_ : CalibrationCurve or None
        The calibration curve (:class:`~anchordiv.models.calibration.CalibrationCurve`) when
        calibrated, else ``None``.
    log_weights_, effective_weights_ : ndarray of shape (K,)
        ``log w_k`` and ``w_k``, the weights in use.
    """

    # What fit / with_balance / with_calibration measured on the reference; None until then.
    _reference_fit: ReferenceFit | None = None

    # The components' own parameters are theirs to check; the weights are checked against the components.
    parameter_constraints = {"weighting": one_of(*WEIGHTINGS), "calibration_k": Interval(1, integer=True),
                              "calibration_queries": Interval(1, integer=True),
                              "calibration_seed": Interval(integer=True)}

    def __init__(self, models: Sequence[AnchorModel], weights: ArrayLike | None = None, *, weighting: str = "literal",
                 calibration_k: int = 10, calibration_queries: int = QUERIES, calibration_seed: int = 0):
        self.models = models
        self.weights = weights
        self.weighting = weighting
        self.calibration_k = calibration_k
        self.calibration_queries = calibration_queries
        self.calibration_seed = calibration_seed

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
        return all(model.__sklearn_is_fitted__() for model in self._components()) and self._is_measured()

    def check_fitted(self) -> None:
        """Raise :class:`NotFittedError` unless every component is fitted and, for balanced or
        calibrated weights, the reference has been measured under the current parameters
        (``ValueError`` when the components' dimensions differ or ``weighting`` is unknown)."""
        if not all(model.__sklearn_is_fitted__() for model in self._components()):
            raise not_fitted_error(
                "This MixtureAnchors has an unfitted component; call fit(anchor_sets) with one (N_k, d) "
                "anchor set per component, or build it from fitted models."
            )
        self.n_features_in_  # noqa: B018 - raises when the components' dimensions differ
        self._fitted_reference()

    def fit(self, anchor_sets: Sequence[ArrayLike], y: None = None,
            reference: ArrayLike | None = None) -> "MixtureAnchors":
        """Fit component ``k`` to ``anchor_sets[k]`` and measure the weighting on ``reference``.

        Parameters
        ----------
        anchor_sets : sequence of array-like, each of shape (N_k, d)
            One anchor set per component, in the order of ``models`` (scikit-learn's ``X`` is
            this list, not one 2-D array).
        y : None
            Ignored: there is no target. It is there so that ``fit(X, y)`` calls this fit as it
            calls any scikit-learn estimator's.
        reference : array-like of shape (n, d), optional
            The image embeddings ``R`` (e.g. the gallery) that balanced and calibrated weights are
            measured on; required by them, unused by literal weights.

        Returns
        -------
        MixtureAnchors
            ``self``, fitted.
        """
        components = self._components()
        _check_anchor_sets(anchor_sets, len(components))
        self._weight_vector()
        self._check_weighting(reference, len(components))
        self._reference_fit = None
        for model, anchors in zip(components, anchor_sets):
            model.fit(anchors)
        self.n_features_in_  # noqa: B018 - raises when the components' dimensions differ
        self._reference_fit = self._measure(reference)
        return self

    # -- the weighting -----------------------------------------------------------------------
    def _reference_settings(self) -> tuple:
        """The parameters a measurement on the reference depends on: ``("literal",)``,
        ``("balanced",)`` or ``("calibrated", calibration_k, calibration_queries, calibration_seed)``."""
        self.check_params()
        if self.weighting == "calibrated":
            return self.weighting, self.calibration_k, self.calibration_queries, self.calibration_seed
        return (self.weighting,)

    def _check_weighting(self, reference: ArrayLike | None, n_components: int) -> None:
        """Refuse, before any component is fitted, a weighting that cannot be measured."""
        weighting = self._reference_settings()[0]
        if weighting != "literal" and reference is None:
            raise ValueError(f"weighting={weighting!r} is measured on a reference set: call "
                             "fit(anchor_sets, reference=embeddings) with the (n, d) image embeddings to measure it "
                             "on (e.g. the gallery), or use weighting='literal'.")
        if weighting == "calibrated" and n_components != 2:
            raise ValueError(f"calibrated weights are defined for two components (A and B, weight p); this mixture "
                             f"has {n_components}. Use weighting='balanced' for more components.")

    def _measure(self, reference: ArrayLike | None, component_kappa: torch.Tensor | None = None,
                 curve: CalibrationCurve | None = None) -> ReferenceFit | None:
        """This mixture's weighting measured on ``reference`` ``(n, d)`` with its fitted components
        (``None`` for literal weights, which measure nothing); ``component_kappa`` ``(n, K)``, when
        given, is each component's ``kappa`` of the reference, computed once by the caller;
        ``curve``, a calibration measured before under the same settings, is taken as it is."""
        components = self._components()
        self._check_weighting(reference, len(components))
        settings = self._reference_settings()
        if settings[0] == "literal":
            return None
        eta = self._natural_parameters(reference, "reference")
        if curve is not None and settings[0] == "calibrated":
            return ReferenceFit(settings, curve=curve)
        if component_kappa is None:
            component_kappa = torch.stack([model.cgf_eta(eta) for model in components], dim=1)
        elif tuple(component_kappa.shape) != (eta.shape[0], len(components)):
            raise ValueError(f"component_kappa has shape {tuple(component_kappa.shape)}; the reference needs "
                             f"({eta.shape[0]}, {len(components)}): one kappa per reference row and component")
        if settings[0] == "balanced":
            return ReferenceFit(settings, offsets=component_kappa.double().mean(dim=0).cpu().numpy())
        k, queries, seed = settings[1:]
        return ReferenceFit(settings, curve=calibration_curve(components, eta, k, queries, seed, component_kappa))

    def _is_measured(self) -> bool:
        """Whether the reference measurement the weighting needs is there, taken under the current
        parameters (literal weights need none)."""
        settings = self._reference_settings()
        return settings[0] == "literal" or (self._reference_fit is not None and self._reference_fit.settings == settings)

    def _fitted_reference(self) -> ReferenceFit | None:
        """The measurement of the reference (``None`` for literal weights); :class:`NotFittedError`
        when the weighting needs one that is missing."""
        if not self._is_measured():
            raise not_fitted_error(
                f"This MixtureAnchors (weighting={self.weighting!r}) has not been measured on a reference set "
                "under its current parameters; call fit(anchor_sets, reference=embeddings), or build it from "
                "fitted models with with_balance(reference) or with_calibration(reference)."
            )
        return self._reference_fit

    def _weight_vector(self, weights: ArrayLike | None = None) -> np.ndarray:
        """``weights`` (default: this mixture's) validated as a probability vector ``(K,)``."""
        count = len(self._components())
        chosen = self.weights if weights is None else weights
        return check_probability_vector(np.full(count, 1.0 / count) if chosen is None else chosen, count, "weights")

    def _sibling(self, reference_fit: ReferenceFit | None, **params: Any) -> "MixtureAnchors":
        """A new mixture over the same component objects, with ``params`` changed and the given
        measurement of the reference."""
        mixture = type(self)(**{**self.get_params(deep=False), **params})
        mixture._reference_fit = reference_fit
        return mixture

    def _measured_sibling(self, reference: ArrayLike | None, component_kappa: torch.Tensor | None,
                          curve: CalibrationCurve | None = None, **params: Any) -> "MixtureAnchors":
        """A new mixture over the same component objects, with ``params`` changed and its weighting
        measured on ``reference`` (``component_kappa`` and ``curve``: as for :meth:`with_calibration`)."""
        mixture = self._sibling(None, **params)
        mixture._reference_fit = mixture._measure(reference, component_kappa, curve)
        return mixture

    def with_weights(self, weights: ArrayLike) -> "MixtureAnchors":
        """This mixture at other weights, with the same components (shared, not copied or refitted)
        and parametrisation; this mixture is unchanged.

        Parameters
        ----------
        weights : array-like of shape (K,)
            The new ``p_k``: non-negative, summing to 1 (``[p, 1 - p]`` for two components).

        Returns
        -------
        MixtureAnchors
            The new mixture; its ``get_params()`` differ from this one's only in ``weights``.
        """
        self._weight_vector(weights)
        return self._sibling(self._reference_fit, weights=weights)

    def with_balance(self, reference: ArrayLike | None,
                     component_kappa: torch.Tensor | None = None) -> "MixtureAnchors":
        """This mixture balanced over ``reference`` (or literal), with the same components and
        weights; this mixture is unchanged.

        Parameters
        ----------
        reference : array-like of shape (n, d), or None
            The image embeddings ``R`` the offsets ``c_k`` are measured on (e.g. the gallery);
            ``None`` for literal weights.
        component_kappa : torch.Tensor of shape (n, K), optional
            ``kappa_k(eta_r)`` of each component ``k`` at each reference row ``r`` (``eta_r = s r /
            ||r||``), when the caller has them already (an :class:`~anchordiv.AnchorIndex` over the
            same rows keeps them as ``component_kappa``): the one ``O(n N d)`` pass is not made again.

        Returns
        -------
        MixtureAnchors
            The new mixture, with ``weighting="balanced"`` (``"literal"`` for ``None``).
        """
        return self._measured_sibling(reference, component_kappa,
                                      weighting="literal" if reference is None else "balanced")

    def with_calibration(self, reference: ArrayLike, k: int = 10, queries: int = QUERIES,
                         seed: int = 0, component_kappa: torch.Tensor | None = None,
                         curve: CalibrationCurve | None = None) -> "MixtureAnchors":
        """This mixture (two components) with ``p`` calibrated on ``reference``, with the same
        components and weights; this mixture is unchanged.

        Parameters
        ----------
        reference : array-like of shape (n, d)
            The image embeddings the calibration is measured on (the gallery).
        k : int, default 10
            Each sampled query ranks the other reference items by its top-``k``; on a reference of
            fewer than ``k + 2`` items, by its top ``n - 2`` (at least 3 items are needed:
            :func:`~anchordiv.models.calibration.neighbourhood_size`).
        queries : int, default 128
            How many reference items are sampled as queries.
        seed : int, default 0
            The seed of that sample, so the calibration is deterministic.
        component_kappa : torch.Tensor of shape (n, 2), optional
            Each component's ``kappa`` at each reference row, as for :meth:`with_balance`.
        curve : CalibrationCurve, optional
            The curve a mixture of these fitted components measured on the same ``reference`` with
            the same ``k``, ``queries`` and ``seed`` (its ``calibration_``, kept by the caller, e.g.
            on disk): taken as it is, and nothing is measured. The caller vouches that it matches.

        Returns
        -------
        MixtureAnchors
            The new mixture, with ``weighting="calibrated"``, ``calibration_k=k``,
            ``calibration_queries=queries`` and ``calibration_seed=seed``.
        """
        return self._measured_sibling(reference, component_kappa, curve, weighting="calibrated", calibration_k=k,
                                      calibration_queries=queries,
                                      calibration_seed=seed)

    @property
    def balanced(self) -> bool:
        """Whether ``weighting`` is ``"balanced"``."""
        return self.weighting == "balanced"

    @property
    def calibrated(self) -> bool:
        """Whether ``weighting`` is ``"calibrated"``."""
        return self.weighting == "calibrated"

    @property
    def calibration_(self) -> CalibrationCurve | None:
        return self._fitted_reference().curve if self.calibrated else None

    @property
    def kappa_offsets_(self) -> np.ndarray:
        if not self.balanced:
            return np.zeros(len(self._components()))
        return self._fitted_reference().offsets.copy()

    @property
    def log_weights_(self) -> np.ndarray:
        """Effective ``log w_k`` ``(K,)`` after balancing or calibrating, normalised to sum to 1 in ``w``."""
        return self.log_weights_at()

    def log_weights_at(self, weights: ArrayLike | None = None) -> np.ndarray:
        """The effective ``log w_k`` ``(K,)`` of :meth:`with_weights` ``(weights)`` (default: this
        mixture's weights), without building that mixture: a slider asks it at every move of ``p``."""
        return self._log_weights_of(self._weight_vector(weights)[None, :])[0]

    def log_weights_along(self, p: ArrayLike) -> np.ndarray:
        """:meth:`log_weights_at` ``([p_s, 1 - p_s])`` for every ``p_s`` of ``p`` ``(S,)`` at once,
        ``(S, 2)``, for a mixture of two components: a slider's path asks it at each position."""
        first = np.asarray(p, dtype=np.float64).reshape(-1)
        if len(self._components()) != 2:
            raise ValueError(f"log_weights_along is for a mixture of two components; this one has "
                             f"{len(self._components())}. Use log_weights_at for each weight vector.")
        if not np.all((first >= 0.0) & (first <= 1.0)):
            raise ValueError(f"p must hold weights of the first component in [0, 1]; got {p!r}.")
        return self._log_weights_of(np.stack([first, 1.0 - first], axis=1))

    def _log_weights_of(self, chosen: np.ndarray) -> np.ndarray:
        """The effective ``log w`` ``(S, K)`` of each row of valid weights ``chosen`` ``(S, K)``."""
        if self.calibrated:
            log_odds = self.calibration_.log_odds_at(chosen[:, 0])
            return -np.logaddexp(0.0, np.stack([-log_odds, log_odds], axis=1))  # log sigmoid(+-lambda)
        with np.errstate(divide="ignore", invalid="ignore"):
            logits = np.log(chosen) - self.kappa_offsets_
            top = np.max(np.where(np.isfinite(logits), logits, -np.inf), axis=1, keepdims=True)
            return logits - (top + np.log(np.exp(logits - top).sum(axis=1, keepdims=True)))

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
        """Each component's share of the tilt of images ``x``.

        ``r_k(eta) = softmax_k(log w_k + kappa_k(eta))`` with ``eta = s x / ||x||``, ``kappa_k``
        component ``k``'s CGF and ``w_k`` the weights in use (:attr:`effective_weights_`): the tilted
        mixture is ``sum_k r_k(eta) p_k(. | eta)``, so ``r_k`` is how much of ``x``'s tilted
        distribution lies on component ``k``'s anchors.

        Parameters
        ----------
        x : array-like of shape (n, d)
            Image embeddings (rows normalised inside).

        Returns
        -------
        array of shape (n, K)
            ``r_k(eta)``, rows summing to 1; a tensor for tensor input, else a numpy array.
        """
        eta = self.natural_parameters(x)
        component_kappa, _ = self.gallery_state(eta, with_grad=False)
        terms = component_kappa + torch.as_tensor(self.log_weights_, dtype=eta.dtype, device=eta.device)
        return like_input(torch.softmax(terms, dim=1), x)

    def fit_token(self) -> Hashable:
        return tuple(model.fit_token() for model in self._components())

    def mixing_weights(self) -> tuple[float, ...]:
        return tuple(self.log_weights_.tolist())

    def _cgf_eta(self, eta: torch.Tensor) -> torch.Tensor:
        return self.combine_state(self.gallery_state(eta, with_grad=False))[0]

    def _cgf_grad_eta(self, eta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.combine_state(self.gallery_state(eta, with_grad=True))
