"""Why is ``y`` a neighbour of ``x``? Their tilted anchor distributions, side by side.

For an anchor model ``P`` and an image ``x``, tilting gives ``p(gamma | eta_x) ∝ P(gamma) exp(eta_x . gamma)``
with ``eta_x = s x``; the anchor divergence is ``KL(p(.|eta_x) || p(.|eta_y))``. For the empirical
(softmax) model, and for mixtures and posteriors built from it, ``P`` is a weighted set of anchors
and the tilt is exact: ``p(anchor_i | x) ∝ w_i exp(s gamma_i . x)``. For the other models (Gaussian,
GMM, latent) ``P`` is not supported on the anchors, so we show the *empirical tilt over the anchors
in use* as a readable stand-in, flagged ``exact=False``; in a mixture the split between components
still uses the model's own responsibilities ``softmax_k(log w_k + kappa_k(eta))``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd
import torch

from ._validation import ArrayLike, as_matrix, as_numeric_tensor, check_dimension, unit_rows
from .models import AnchorModel, MixtureAnchors
from .models.empirical import DiscreteAnchors


@dataclass(frozen=True)
class TiltedDistribution:
    """A distribution over the anchors in use: ``probabilities`` ``(N,)`` aligned with ``texts`` and
    ``components`` (which anchor set each anchor belongs to); ``exact`` says whether it is the model's
    own tilted distribution or the empirical stand-in."""

    texts: tuple[str, ...]
    components: tuple[str, ...]
    probabilities: np.ndarray
    exact: bool

    def top(self, count: int = 8) -> pd.DataFrame:
        """The ``count`` most probable anchors: columns ``anchor``, ``set``, ``probability``."""
        order = np.argsort(-self.probabilities, kind="stable")[:count]
        return pd.DataFrame({"anchor": [self.texts[i] for i in order], "set": [self.components[i] for i in order],
                             "probability": self.probabilities[order]})


def _component_log_tilt(model: AnchorModel, anchors: ArrayLike, eta: torch.Tensor, name: str
                        ) -> tuple[torch.Tensor, bool]:
    """Unnormalised ``log p(anchor_i | eta)`` within one component ``(N,)`` and whether it is exact;
    ``name`` names ``anchors`` in errors."""
    if isinstance(model, DiscreteAnchors):
        unit = model.anchors_.to(device=eta.device, dtype=eta.dtype)  # fitted wherever the geometry computes
        return unit @ eta + model.log_weights_.to(device=eta.device, dtype=eta.dtype), True
    matrix = as_matrix(anchors, name)
    check_dimension(matrix, eta.shape[0], name, against="the model's embeddings")
    unit = unit_rows(matrix, name).to(device=eta.device, dtype=eta.dtype)
    return unit @ eta - np.log(len(unit)), False


def _one_embedding(x: ArrayLike, name: str) -> torch.Tensor:
    """One image embedding ``(d,)`` or ``(1, d)`` as a float32 row ``(1, d)``."""
    tensor = as_numeric_tensor(x, name)
    if tensor.ndim not in (1, 2) or (tensor.ndim == 2 and tensor.shape[0] != 1):
        raise ValueError(f"{name} must be one embedding of shape (d,) or (1, d); got shape {tuple(tensor.shape)}. "
                         "Explain one pair at a time.")
    return as_matrix(tensor.to(torch.float32).reshape(1, -1), name)


def _check_components(n_components: int, component_anchors: Sequence[ArrayLike],
                      component_texts: Sequence[Sequence[str]], component_names: Sequence[str]) -> None:
    """One anchor set, one list of texts (one per anchor) and one name per component."""
    counts = (len(component_anchors), len(component_texts), len(component_names))
    if counts != (n_components,) * 3:
        raise ValueError(f"got {counts[0]} anchor sets, {counts[1]} text lists and {counts[2]} names for a model "
                         f"with {n_components} component(s); pass one of each per component, in order.")
    for k, (anchors, texts) in enumerate(zip(component_anchors, component_texts)):
        if len(anchors) != len(texts):
            raise ValueError(f"component {k} has {len(anchors)} anchors but {len(texts)} texts; pass the texts "
                             "the anchors were encoded from, one per anchor.")


def tilted_distribution(model: AnchorModel, component_anchors: Sequence[torch.Tensor],
                        component_texts: Sequence[Sequence[str]], component_names: Sequence[str],
                        x: torch.Tensor) -> TiltedDistribution:
    """The tilted anchor distribution of image ``x`` ``(d,)`` under ``model`` (a single model or a
    :class:`~anchordiv.MixtureAnchors` whose ``k``-th component was fitted to
    ``component_anchors[k]`` ``(N_k, d)`` with texts ``component_texts[k]``)."""
    row = _one_embedding(x, "x")
    eta = model.natural_parameters(row)
    components = model.models if isinstance(model, MixtureAnchors) else [model]
    _check_components(len(components), component_anchors, component_texts, component_names)
    logs, exact = [], True
    for k, (component, anchors) in enumerate(zip(components, component_anchors)):
        log_tilt, component_exact = _component_log_tilt(component, anchors, eta[0], f"component_anchors[{k}]")
        exact &= component_exact
        # Within-component tilt, normalised, then weighted by the component's responsibility.
        logs.append(log_tilt - torch.logsumexp(log_tilt, dim=0))
    if isinstance(model, MixtureAnchors):
        responsibilities = torch.log(model.responsibilities(row)[0])
        logs = [log + responsibilities[k] for k, log in enumerate(logs)]
    probabilities = torch.exp(torch.cat(logs)).double().cpu().numpy()
    texts = tuple(text for group in component_texts for text in group)
    names = tuple(name for name, group in zip(component_names, component_texts) for _ in group)
    if len(texts) != len(probabilities):
        raise ValueError(f"{len(texts)} anchor texts for the model's {len(probabilities)} anchors; pass the texts "
                         "the model's anchors were encoded from, one per anchor.")
    return TiltedDistribution(texts, names, probabilities / probabilities.sum(), exact)


def _kl_term_values(p: TiltedDistribution, q: TiltedDistribution) -> np.ndarray:
    """``p_i log(p_i / q_i)`` per anchor ``(N,)``: 0 where ``p_i = 0``, and ``q_i`` floored at 1e-300
    so that an anchor ``q`` rules out costs a large finite amount rather than infinity."""
    if p.texts != q.texts:
        raise ValueError(f"p and q must be over the same anchors; got {len(p.texts)} and {len(q.texts)} anchors "
                         "(or other texts). Tilt both with the same model and anchor sets.")
    a, b = p.probabilities, q.probabilities
    support = a > 0
    terms = np.zeros_like(a)
    terms[support] = a[support] * (np.log(a[support]) - np.log(np.maximum(b[support], 1e-300)))
    return terms


def kl_divergence(p: TiltedDistribution, q: TiltedDistribution) -> float:
    """``KL(p || q) = sum_i p_i log(p_i / q_i)`` between two distributions over the same anchors (natural log)."""
    return float(np.sum(_kl_term_values(p, q)))


def kl_terms(p: TiltedDistribution, q: TiltedDistribution) -> pd.DataFrame:
    """Each anchor's share of ``KL(p || q)``: one row per anchor ``i`` with columns ``anchor``, ``set``,
    ``p`` (``p_i``), ``q`` (``q_i``) and ``term = p_i log(p_i / q_i)``, largest term first.

    The terms sum to :func:`kl_divergence` ``(p, q)``. For ``p`` the query's tilt and ``q`` a
    neighbour's, a large positive term is an anchor the query leans on and the neighbour does not:
    it pushes the neighbour away. A term near 0 is an anchor both lean on alike, and a negative term
    (``q_i > p_i``) one the neighbour leans on more than the query: it lowers the total."""
    terms = _kl_term_values(p, q)
    frame = pd.DataFrame({"anchor": p.texts, "set": p.components, "p": p.probabilities, "q": q.probabilities,
                          "term": terms})
    return frame.sort_values("term", ascending=False, kind="stable", ignore_index=True)


def explain_pair(model: AnchorModel, component_anchors: Sequence[torch.Tensor],
                 component_texts: Sequence[Sequence[str]], component_names: Sequence[str],
                 query: torch.Tensor, neighbour: torch.Tensor, reverse: bool = False
                 ) -> tuple[TiltedDistribution, TiltedDistribution, float, float]:
    """``(query tilt, neighbour tilt, model divergence, KL of the shown distributions)``.

    The model divergence is ``D(query -> neighbour)`` (``reverse``: ``D(neighbour -> query)``), the
    quantity the ranking uses; the second number is the KL between the two shown distributions,
    equal to it whenever the tilts are exact."""
    pair = (_one_embedding(query, "query"), _one_embedding(neighbour, "neighbour"))
    query_tilt = tilted_distribution(model, component_anchors, component_texts, component_names, pair[0])
    neighbour_tilt = tilted_distribution(model, component_anchors, component_texts, component_names, pair[1])
    divergence = float(model.divergence(*pair, reverse=reverse)[0, 0])
    shown = kl_divergence(neighbour_tilt, query_tilt) if reverse else kl_divergence(query_tilt, neighbour_tilt)
    return query_tilt, neighbour_tilt, divergence, shown
