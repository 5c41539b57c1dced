"""Geometries: :class:`GeometrySpec` names an anchor model of the registry
(:mod:`anchordiv.models.registry`) and its settings; :class:`ExplorerGeometry` fits it to anchor
sets A and B, indexes a gallery once (in memory, or a store with :meth:`ExplorerGeometry.over_store`)
and serves any weight ``p`` without refitting, every slider position at once through the certified
slider where it applies (:meth:`ExplorerGeometry.p_path`); :func:`baseline_index` gives cosine and ITI."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np
import pandas as pd
import torch

from ..device import resolve_device
from ..models import AnchorModel, EmpiricalAnchors, MixtureAnchors, anchor_model_kind, fit_anchor_model
from ..models.calibration import CannotCalibrate, NothingToCalibrate, TooFewToCalibrate
from ..projection import sample_ids
from ..search import AnchorIndex, CosineIndex, Index, ITIIndex
from ..sharded import ShardedAnchorIndex
from ..slider import DEFAULT_PATH_STEPS, SliderPath, path_positions, query_path
from .calibration_cache import CalibrationCache
from .neighbours import search_one

if TYPE_CHECKING:
    from ..store import GalleryStore

# Store rows a mixture is balanced and calibrated on (as the store benchmark does, docs/design.md §11):
# the whole store at float32 would be 2 GB at 10^6 x 512.
CALIBRATION_ROWS = 20_000

# Steps of a path where no slider applies and each step is an exact search of its own.
REVERSE_PATH_STEPS = 21

# What each way of making [p, 1 - p] the mixture's weights (anchordiv.models.mixture.WEIGHTINGS,
# docs/design.md §3) means, in the order the explorer offers them (the first is its default).
WEIGHTING_HELP: dict[str, str] = {
    "calibrated": "Calibrated: p is how far the neighbours have moved from B's (p = 0) to A's (p = 1), "
                  "measured on this gallery without labels; p = 0.5 is half-way.",
    "balanced": "Balanced: w ∝ p · exp(−mean κ over the gallery), so at p = 0.5 A and B weigh alike on "
                "average; the neighbours still move mostly near p = 1.",
    "literal": "Literal: the paper's weights (p, 1 − p); a tight set such as a few styles owns the mixture "
               "for almost every p.",
}


@dataclass(frozen=True)
class GeometrySpec:
    """Which anchor model to fit to each anchor set, and how to rank.

    ``kind`` is a name from :func:`anchordiv.list_anchor_models`; ``scale`` the logit scale ``s``
    in ``eta = s x``; ``n_components`` for "gmm"; ``rank`` for the latent models; ``alpha`` the
    prior's weight for the posterior models; ``reverse`` ranks by ``KL(p_y || p_x)`` instead of
    ``KL(p_x || p_y)``.
    """

    kind: str = "softmax"
    scale: float = 10.0
    n_components: int = 2
    rank: int = 8
    alpha: float = 1.0
    reverse: bool = False

    def __post_init__(self) -> None:
        anchor_model_kind(self.kind)

    def parameters(self) -> dict[str, Any]:
        """The settings this spec's kind takes (a subset of ``n_components``, ``rank``, ``alpha``)."""
        settings = {"n_components": self.n_components, "rank": self.rank, "alpha": self.alpha}
        return {name: value for name, value in settings.items() if name in anchor_model_kind(self.kind).defaults}

    def fit(self, anchors: torch.Tensor, prior: torch.Tensor | None = None,
            weights: Sequence[float] | None = None) -> tuple[AnchorModel, list[str]]:
        """The anchor model this spec names, fitted to ``anchors`` ``(N, d)`` by the registry
        (:func:`anchordiv.models.fit_anchor_model`), and notes for the user about any adjustment
        made (a ridge for one anchor, a rank or component count lowered to what the anchors
        support). ``prior`` ``(N0, d)`` is needed by the posterior kinds.

        With ``weights`` ``(N,)`` (a weighted anchor set), whatever the kind, the empirical model
        ``P = sum_i w_i delta_{gamma_i}`` at this spec's scale: ``kappa(eta) = logsumexp_i(gamma_i .
        eta + log w_i)``, ``w`` the weights normalised to sum to 1, ``gamma_i`` the unit anchors."""
        if anchors.shape[0] == 0:
            raise ValueError("the anchor set is empty; type at least one anchor, one per line")
        if weights is not None:
            return EmpiricalAnchors(scale=self.scale, weights=list(weights)).fit(anchors), []
        return fit_anchor_model(self.kind, anchors, self.scale, prior, **self.parameters())


# The index a geometry ranks its gallery with, for its shared model on the geometry's device: an
# AnchorIndex over the gallery in memory, a ShardedAnchorIndex over a store. Both re-weight
# (with_model) and slide.
IndexFactory = Callable[[AnchorModel, torch.device], "AnchorIndex | ShardedAnchorIndex"]


class ExplorerGeometry:
    """Anchor sets A and B under one :class:`GeometrySpec`, with a gallery indexed once.

    With two non-empty sets the model is ``MixtureAnchors([P_A, P_B], [p, 1 - p])``; with one, that
    set's model alone (``p`` has no effect). Each ``P`` is ``spec``'s kind fitted to the set, except
    for a weighted set (``anchor_weights``: per set its weights ``(N,)``, or ``None``): the
    empirical model with those weights (:meth:`GeometrySpec.fit`). The mixture is balanced and calibrated on
    ``gallery_embeddings`` ``(n, d)``: the gallery itself, or for a store a fixed sample of its rows
    (:meth:`over_store`). ``index`` ranks the whole gallery: an :class:`AnchorIndex` over
    ``gallery_embeddings`` by default, else what ``index_over(model, device)`` builds (a
    :class:`~anchordiv.sharded.ShardedAnchorIndex` over a store). Building this is the expensive step
    (fitting and one pass over the gallery, whose per-component ``kappa`` the index keeps and the
    balance and calibration reuse); afterwards :meth:`index_at` costs ``O(G K)`` and a query's
    :meth:`p_path` every position of the ``p`` slider ``O(C)`` each for its ``C`` candidates. A
    ``calibration_cache`` (for a gallery in memory) keeps the calibration on disk for the next fit of
    the same geometry. ``device`` is where the fit, the gallery's stored terms, the balance, the
    calibration and every search and p path run (``None``: :func:`anchordiv.device.default_device`,
    CUDA when available); results cross to the CPU once, as top-``k`` values and ids.

    This object is meant to be shared (cached) across users and threads. Nothing in it changes
    after ``__init__``: :meth:`model_at` and :meth:`index_at` build new objects through the pure
    APIs (``MixtureAnchors.with_weights``, ``with_model`` of the index) that share the fitted
    components and the stored gallery terms.

    Attributes: ``model`` (the shared fitted model: for two sets, the mixture balanced at
    ``p = 1/2``), ``calibrated_model`` (the same components with calibrated ``p``; ``None`` when A
    and B rank the reference alike or it is too small, so that ``p`` cannot be calibrated: the
    other weightings serve, and the calibrated one raises
    :class:`~anchordiv.models.calibration.CannotCalibrate`), ``index``,
    ``component_anchors`` and ``component_texts`` (each component's anchors and their texts,
    row-aligned), ``component_names`` ("A", "B"), ``notes`` for the user, ``device``.
    """

    def __init__(self, gallery_embeddings: torch.Tensor, anchor_sets: Sequence[torch.Tensor],
                 anchor_texts: Sequence[Sequence[str]], spec: GeometrySpec, prior: torch.Tensor | None = None,
                 prior_texts: Sequence[str] = (), names: Sequence[str] = ("A", "B"),
                 index_over: IndexFactory | None = None,
                 anchor_weights: Sequence[Sequence[float] | None] = (),
                 calibration_cache: CalibrationCache | None = None,
                 device: str | torch.device | None = None):
        self.device = resolve_device(device)
        anchor_sets = [anchors.to(self.device) for anchors in anchor_sets]
        prior = None if prior is None else prior.to(self.device)
        weights = list(anchor_weights) + [None] * (len(anchor_sets) - len(anchor_weights))
        used = [(name, anchors, list(texts), set_weights)
                for name, anchors, texts, set_weights in zip(names, anchor_sets, anchor_texts, weights)
                if len(texts) > 0]
        if not used:
            raise ValueError("both anchor sets are empty; type at least one anchor (one per line) in A or B")
        self.spec = spec
        self.notes: list[str] = []
        components = []
        for name, anchors, _, set_weights in used:
            model, notes = spec.fit(anchors, prior, set_weights)
            components.append(model)
            self.notes.extend(f"Set {name}: {note}" for note in notes)
            if set_weights is not None:
                self.notes.append(f"Set {name} has weights: the empirical model with those weights is used; the "
                                  "sidebar's kind applies to unweighted sets.")
        self.component_names = [name for name, _, _, _ in used]
        # A posterior component's anchors are the prior's and the set's; a weighted set's are its own.
        posterior = [anchor_model_kind(spec.kind).needs_prior and set_weights is None for *_, set_weights in used]
        self.component_texts = [(list(prior_texts) if with_prior else []) + texts
                                for with_prior, (_, _, texts, _) in zip(posterior, used)]
        self.component_anchors = [torch.cat([prior, anchors]) if with_prior else anchors
                                  for with_prior, (_, anchors, _, _) in zip(posterior, used)]
        if len(components) == 1:
            self.model: AnchorModel = components[0]
            self.calibrated_model: AnchorModel = self.model
            self.index = self._index(self.model, gallery_embeddings, index_over)
            return
        mixture = MixtureAnchors(components, [0.5, 0.5])
        if index_over is None:
            # One pass over the gallery: the index keeps each component's kappa of every row, which
            # the balance and the calibration are measured from (not two more passes of their own).
            key = None if calibration_cache is None else calibration_cache.key(repr(spec), anchor_sets, weights, prior)
            if key is None or spec.reverse:  # the reverse index stores grad kappa too, which is not kept
                index = self._index(mixture, gallery_embeddings, None)
            else:
                kept = calibration_cache.gallery_kappa(
                    key, lambda: self._index(mixture, gallery_embeddings, None).component_kappa)
                index = AnchorIndex(mixture, gallery_embeddings, device=self.device, component_kappa=kept)
            kappa, reference = index.component_kappa, gallery_embeddings.to(self.device)
            self.model = mixture.with_balance(reference, component_kappa=kappa)
            self.calibrated_model = self._calibrated(lambda: (
                mixture.with_calibration(reference, component_kappa=kappa) if key is None
                else calibration_cache.calibrated(mixture, reference, kappa, key)))
            self.index = index.with_model(self.model)
        else:  # a store: measured on a sample of rows (``gallery_embeddings``), indexed over all of them
            reference = gallery_embeddings.to(self.device)
            self.model = mixture.with_balance(reference)
            self.calibrated_model = self._calibrated(lambda: mixture.with_calibration(reference))
            self.index = index_over(self.model, self.device)

    def _calibrated(self, calibrate: Callable[[], AnchorModel]) -> AnchorModel | None:
        """The calibrated mixture, or ``None`` when it has nothing to measure (A and B rank the
        reference alike, or it is too small: :class:`~anchordiv.models.calibration.CannotCalibrate`):
        the balanced and literal weightings still serve, and asking for the calibrated one raises
        that error then."""
        self._calibration_refused: CannotCalibrate | None = None
        try:
            return calibrate()
        except CannotCalibrate as error:
            self._calibration_refused = error
            return None

    def _index(self, model: AnchorModel, gallery_embeddings: torch.Tensor,
               index_over: IndexFactory | None) -> AnchorIndex | ShardedAnchorIndex:
        return (AnchorIndex(model, gallery_embeddings, reverse=self.spec.reverse, device=self.device)
                if index_over is None else index_over(model, self.device))

    @classmethod
    def over_store(cls, store: GalleryStore, anchor_sets: Sequence[torch.Tensor],
                   anchor_texts: Sequence[Sequence[str]], spec: GeometrySpec, prior: torch.Tensor | None = None,
                   prior_texts: Sequence[str] = (), sample_rows: int = CALIBRATION_ROWS,
                   seed: int = 0, anchor_weights: Sequence[Sequence[float] | None] = (),
                   device: str | torch.device | None = None) -> "ExplorerGeometry":
        """The geometry over a :class:`~anchordiv.store.GalleryStore`: balanced and calibrated on a
        fixed seeded sample of ``sample_rows`` store rows, ranking the whole store with one
        :class:`~anchordiv.sharded.ShardedAnchorIndex` (one pass at build, ``G K`` floats kept);
        ``anchor_weights`` and ``device`` as for the constructor (the store's blocks are scored there)."""
        sample = store.rows(sample_ids(len(store), sample_rows, seed))
        return cls(sample, anchor_sets, anchor_texts, spec, prior=prior, prior_texts=prior_texts,
                   index_over=lambda model, device: ShardedAnchorIndex(model, store, reverse=spec.reverse,
                                                                       device=device),
                   anchor_weights=anchor_weights, device=device)

    @property
    def is_mixture(self) -> bool:
        return isinstance(self.model, MixtureAnchors)

    @property
    def has_slider(self) -> bool:
        """Whether a query's p path comes through its certified slider: two anchor sets, ranked
        query first (docs/design.md §10)."""
        return self.is_mixture and not self.spec.reverse

    def weighted_model(self, weighting: str = "calibrated") -> AnchorModel:
        """The shared model whose ``with_weights([p, 1 - p])`` is the model at ``p`` under
        ``weighting`` (a key of :data:`WEIGHTING_HELP`): what a certified slider slides (docs/design.md
        §10). For a single set, the shared model itself."""
        if weighting not in WEIGHTING_HELP:
            raise ValueError(f"weighting={weighting!r}; choose one of {list(WEIGHTING_HELP)}")
        if not self.is_mixture:
            return self.model
        if weighting == "calibrated" and self.calibrated_model is None:
            refused = self._calibration_refused
            raise (NothingToCalibrate(refused.k) if isinstance(refused, NothingToCalibrate)
                   else TooFewToCalibrate(refused.n_items))
        model = {"calibrated": self.calibrated_model, "balanced": self.model}.get(weighting)
        return model or self.model.with_balance(None)

    def model_at(self, p: float, weighting: str = "calibrated") -> AnchorModel:
        """The model at weights ``[p, 1 - p]`` under ``weighting`` (a key of :data:`WEIGHTING_HELP`): a
        new mixture sharing the fitted components (for a single set, the shared model itself)."""
        model = self.weighted_model(weighting)
        if not self.is_mixture:
            return model
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p={p!r} must be between 0 and 1")
        return model.with_weights([p, 1.0 - p])

    def index_at(self, p: float, weighting: str = "calibrated") -> AnchorIndex | ShardedAnchorIndex:
        """The gallery's index at weight ``p``, sharing the stored per-component terms (``O(G K)``);
        the shared index is never changed, so concurrent users at different ``p`` each get their
        own ranking."""
        return self.index.with_model(self.model_at(p, weighting)) if self.is_mixture else self.index

    def p_path(self, query: np.ndarray, k: int, exclude: int | None, weighting: str,
               steps: int = DEFAULT_PATH_STEPS) -> SliderPath:
        """The exact top-``k`` of ``query`` ``(d,)`` at every position of the ``p`` slider: ``steps``
        evenly spaced ``p`` from 0 to 1 under ``weighting`` (a key of :data:`WEIGHTING_HELP`).

        Through the query's certified slider (:func:`~anchordiv.slider.query_path`, docs/design.md
        §10): one pass over the gallery (two where the coarse grid leaves steps uncovered), then
        ``O(steps C)`` for its ``C`` candidates, and the exact search for a step the certificate
        does not cover. Where no slider applies: one
        search repeated (one anchor set, ``p`` has no effect) or one exact search per step of the
        coarser :data:`REVERSE_PATH_STEPS` (the reverse direction, whose divergences are not convex
        in the responsibility). ``exclude``: the query's own gallery id, or ``None``.
        """
        if not self.is_mixture:
            positions = path_positions(steps)
            values, ids = search_one(self.index, query, k, exclude)
            return SliderPath(positions, np.tile(values, (len(positions), 1)), np.tile(ids, (len(positions), 1)),
                              np.zeros(len(positions), dtype=bool))
        if not self.has_slider:  # the reverse direction
            positions = path_positions(min(steps, REVERSE_PATH_STEPS))
            rows = [search_one(self.index_at(float(p), weighting), query, k, exclude) for p in positions]
            return SliderPath(positions, np.stack([values for values, _ in rows]), np.stack([ids for _, ids in rows]),
                              np.zeros(len(positions), dtype=bool))
        return query_path(self.index.with_model(self.weighted_model(weighting)), query, k, exclude, steps)


def calibration_frame(geometry: ExplorerGeometry) -> pd.DataFrame | None:
    """The calibration curve of ``geometry``'s calibrated mixture in long form, for a plot: columns
    ``log-odds`` (``lambda = log(w_A / w_B)``), ``curve`` (A's side, B's side, progress) and
    ``moved`` (0 at B alone, 1 at A alone); the ``p`` each ``lambda`` stands for is its progress.
    ``None`` for a single anchor set."""
    curve = geometry.calibrated_model.calibration_ if geometry.is_mixture and geometry.calibrated_model else None
    if curve is None:
        return None
    sides = {"A's side": curve.progress_a, "B's side": curve.progress_b, "progress = p": curve.progress}
    return pd.concat([pd.DataFrame({"log-odds": curve.log_odds, "curve": name, "moved": values})
                      for name, values in sides.items()], ignore_index=True)


def baseline_index(kind: str, gallery_embeddings: torch.Tensor, anchors: torch.Tensor | None = None,
                   device: str | torch.device | None = None) -> Index:
    """``CosineIndex`` (``kind="cosine"``) or ``ITIIndex`` over ``anchors`` (``kind="iti"``), on
    ``device`` (``None``: CUDA when available, else CPU)."""
    if kind == "cosine":
        return CosineIndex(gallery_embeddings, device=device)
    if kind == "iti":
        if anchors is None or len(anchors) == 0:
            raise ValueError("ITI needs at least one anchor")
        return ITIIndex(anchors, gallery_embeddings, device=device)
    raise ValueError(f"unknown baseline {kind!r}; use 'cosine' or 'iti'")
