"""Suggested anchors (issue 25): the terms of a vocabulary that a query's tilted distribution favours,
those that set a neighbourhood apart from the gallery, and those that pull two images together or
push them apart.

All three read a vocabulary through the uniform empirical anchor model on its terms: with the
terms' unit text embeddings ``a_i`` (``i = 1..N``, encoded through prompt templates by
:func:`anchordiv.prompts.encode_anchors`, cached per encoder), a logit scale ``s`` and an image's
unit embedding ``x``, ``eta = s x`` and

    p(i | eta) = exp(eta . a_i) / sum_j exp(eta . a_j),

the model's own zero-shot softmax over the terms (docs/design.md §1).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch

from ._validation import (ArrayLike, as_matrix, as_numeric_tensor, check_dimension, check_positive_int,
                          check_scale, unit_rows)
from .models.base import row_blocks

VOCABULARY = "vocabulary"  # the one anchor set a vocabulary's tilted distributions are over


@dataclass(frozen=True)
class _Vocabulary:
    """A checked vocabulary: its ``terms``, their unit embeddings ``anchors`` ``(N, d)`` float64,
    and the logit scale ``scale`` its tilted distributions use."""

    terms: list[str]
    anchors: torch.Tensor
    scale: float

    def tilt(self, rows: torch.Tensor, name: str) -> torch.Tensor:
        """``p(i | s y)`` ``(n, N)`` float64 for embeddings ``rows`` ``(n, d)`` (any norm, not zero);
        ``name`` names them in errors. Computed where the text embeddings are (the CPU), so image
        embeddings on a GPU come over block by block."""
        eta = unit_rows(rows.to(device=self.anchors.device, dtype=torch.float64), name, self.scale)
        return torch.softmax(eta @ self.anchors.T, dim=1)


def _vocabulary(encoder: Any, terms: Sequence[str], templates: Any, scale: float | None) -> _Vocabulary:
    """``terms`` checked and encoded through ``templates`` (``None``: the encoder's default,
    :func:`anchordiv.prompts.default_choice`), at ``scale`` (``None``: ``encoder.logit_scale``)."""
    from .prompts import default_choice, encode_anchors

    if isinstance(terms, (str, bytes)):
        raise ValueError("terms must be a list of strings, not one string; e.g. terms=['a dog', 'a cat'].")
    terms = list(terms)
    if not terms:
        raise ValueError("terms is empty; pass at least one term (e.g. anchordiv.load_vocabulary(name)).")
    for term in terms:
        if not isinstance(term, str) or not term.strip():
            raise ValueError(f"every term must be a non-empty string; got {term!r}.")
    scale = check_scale(encoder.logit_scale if scale is None else scale)
    chosen = default_choice(encoder) if templates is None else templates
    anchors = as_matrix(encode_anchors(encoder, terms, chosen), "terms").to(torch.float64)
    return _Vocabulary(terms, unit_rows(anchors, "terms"), scale)


def _embeddings(values: ArrayLike, name: str, dim: int, one: bool = False) -> torch.Tensor:
    """``values`` as a finite ``(n, d)`` tensor with ``d == dim``; with ``one``, exactly one
    embedding, given as ``(d,)`` or ``(1, d)``."""
    tensor = as_numeric_tensor(values, name)
    if one:
        if tensor.ndim not in (1, 2) or (tensor.ndim == 2 and tensor.shape[0] != 1):
            raise ValueError(f"{name} must be one embedding of shape (d,) or (1, d); got shape {tuple(tensor.shape)}.")
        tensor = tensor.reshape(1, -1)
    matrix = as_matrix(tensor, name)
    check_dimension(matrix, int(dim), name, against="the encoder's embeddings")
    return matrix


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """The positions of the ``k`` largest ``scores``, largest first, ties by position."""
    return np.argsort(-scores, kind="stable")[:k]


def suggest_anchors(encoder: Any, query: ArrayLike | str, terms: Sequence[str], k: int = 10,
                    templates: Any = None, scale: float | None = None) -> tuple[list[str], np.ndarray]:
    """The ``k`` terms of a vocabulary most probable under the query's tilted distribution.

    With the query's unit embedding ``x``, ``eta = s x`` and the terms' unit embeddings ``a_i``,
    the terms are returned by decreasing

        p(i | eta) = exp(eta . a_i) / sum_j exp(eta . a_j)

    (ties by vocabulary order), the model's zero-shot softmax over the terms (docs/design.md §1).

    Parameters
    ----------
    encoder : Encoder
        Gives ``logit_scale``, ``dim`` and the text embeddings (cached per encoder).
    query : array-like of shape (d,) or (1, d), or str
        An image embedding, or a text, which is encoded by ``encoder`` as typed.
    terms : sequence of str
        The vocabulary (at least one term; duplicates count as separate terms).
    k : int, default 10
        How many terms to return (all of them when ``k`` exceeds their number).
    templates : TemplateChoice or sequence of str, optional
        The prompt templates the terms are encoded through (:func:`anchordiv.prompts.encode_anchors`);
        ``None``: the encoder's default (:func:`anchordiv.prompts.default_choice`: as typed for the
        built-in model, ``"a photo of a {}."`` for CLIP).
    scale : float, optional
        The logit scale ``s``; ``None``: ``encoder.logit_scale``.

    Returns
    -------
    terms : list of str
        The top ``min(k, N)`` terms, most probable first.
    probabilities : ndarray of shape (min(k, N),)
        Their ``p(i | eta)`` (float64; summing to at most 1).
    """
    from .text_cache import encode_texts_cached

    k = check_positive_int(k, "k")
    vocabulary = _vocabulary(encoder, terms, templates, scale)
    if isinstance(query, str):
        if not query.strip():
            raise ValueError("query is an empty text; pass a text or an image embedding (d,).")
        vector = as_matrix(encode_texts_cached(encoder, [query]), "query")
    else:
        vector = _embeddings(query, "query", encoder.dim, one=True)
    probabilities = vocabulary.tilt(vector, "query")[0].cpu().numpy()
    order = _top(probabilities, k)
    return [vocabulary.terms[i] for i in order], probabilities[order]


def separating_terms(encoder: Any, neighbours: ArrayLike, gallery: ArrayLike | None, terms: Sequence[str], k: int = 10,
                     templates: Any = None, scale: float | None = None,
                     gallery_tilt: ArrayLike | None = None) -> tuple[list[str], np.ndarray]:
    """The ``k`` terms that most set a query's neighbourhood apart from the gallery.

    With ``p(i | s y)`` the tilted distribution of an embedding ``y`` over the terms (uniform
    empirical model at scale ``s``), the neighbourhood's and the gallery's mean distributions are

        m_i = (1/n) sum_{y in neighbours} p(i | s y),    g_i = (1/G) sum_{y in gallery} p(i | s y),

    and term ``i`` scores its contribution to ``KL(m || g) = sum_i c_i``,

        c_i = m_i log(m_i / g_i),

    large when the neighbourhood leans on term ``i`` and the gallery does not; ``c_i = 0`` where
    ``m_i = 0`` and ``g_i`` is floored at ``1e-300`` (at a large scale the tilts underflow to 0 on
    most terms), as :func:`anchordiv.explain.kl_terms` computes it, so every score is finite. The
    terms are returned by decreasing ``c_i`` (ties by vocabulary order).

    The gallery is read in blocks of ``B`` rows, ``B * N`` at most ``2**25`` entries, so memory is
    ``O(B N + N d)`` whatever ``G`` (a store's sample of ``10**6`` rows included: only one block is
    converted to float64 at a time); time is ``O((n + G) N d)`` multiply-adds, one pass, plus
    encoding the ``N`` terms once (cached per encoder).

    Parameters
    ----------
    encoder : Encoder
        Gives ``logit_scale``, ``dim`` and the terms' text embeddings.
    neighbours : array-like of shape (n, d)
        The neighbourhood's image embeddings (any norm; the query may be among them).
    gallery : array-like of shape (G, d), or None
        The gallery's image embeddings, or a sample of them (numpy, float16 included, or torch);
        ``None`` with ``gallery_tilt``.
    terms : sequence of str
        The vocabulary (at least one term).
    k : int, default 10
        How many terms to return.
    templates, scale
        As in :func:`suggest_anchors`.
    gallery_tilt : array-like of shape (N,), optional
        ``g``, as :func:`gallery_mean_tilt` gives it for the same gallery, terms, templates and
        scale, when the caller keeps it (it does not depend on the neighbourhood): the gallery is
        then not read again.

    Returns
    -------
    terms : list of str
        The top ``min(k, N)`` terms.
    scores : ndarray of shape (min(k, N),)
        Their ``c_i`` (float64, in nats; a term the neighbourhood leans on less than the gallery
        scores below 0).
    """
    k = check_positive_int(k, "k")
    vocabulary = _vocabulary(encoder, terms, templates, scale)
    m = vocabulary.tilt(_embeddings(neighbours, "neighbours", encoder.dim), "neighbours").mean(dim=0)
    if gallery_tilt is None:
        g = _gallery_mean_tilt(vocabulary, gallery, int(encoder.dim)).cpu().numpy()
    else:
        g = np.asarray(gallery_tilt, dtype=np.float64)
        if g.shape != (len(vocabulary.terms),):
            raise ValueError(f"gallery_tilt has shape {g.shape}; the vocabulary needs ({len(vocabulary.terms)},): "
                             "gallery_mean_tilt of the same terms")
    contributions = _kl_contributions(m.cpu().numpy(), g)
    order = _top(contributions, k)
    return [vocabulary.terms[i] for i in order], contributions[order]


def gallery_mean_tilt(encoder: Any, gallery: ArrayLike, terms: Sequence[str], templates: Any = None,
                      scale: float | None = None) -> np.ndarray:
    """``g_i = (1/G) sum_y p(i | s y)``: the gallery's mean tilted distribution over ``terms``
    ``(N,)`` float64, the half of :func:`separating_terms` that every query over one gallery shares
    (``O(G N d)``, one pass in blocks). Arguments as for :func:`separating_terms`."""
    vocabulary = _vocabulary(encoder, terms, templates, scale)
    return _gallery_mean_tilt(vocabulary, gallery, int(encoder.dim)).cpu().numpy()


def _gallery_mean_tilt(vocabulary: _Vocabulary, gallery: ArrayLike, dim: int) -> torch.Tensor:
    """``g_i``, the mean of ``p(i | s y)`` over the gallery's rows ``(N,)``, one block at a time."""
    rows = as_numeric_tensor(gallery, "gallery")
    if rows.ndim != 2 or rows.shape[0] == 0:
        raise ValueError(f"gallery must be embeddings of shape (G, d) with G >= 1; got shape {tuple(rows.shape)}.")
    total = torch.zeros(len(vocabulary.terms), dtype=torch.float64)
    for block in row_blocks(rows.shape[0], len(vocabulary.terms)):
        name = f"gallery rows {block.start}..{block.stop - 1}"
        total += vocabulary.tilt(_embeddings(rows[block], name, dim), name).sum(dim=0)
    return total / rows.shape[0]


def _kl_contributions(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``p_i log(p_i / q_i)`` for distributions ``p``, ``q`` ``(N,)`` over a vocabulary's terms, in
    vocabulary order: :func:`anchordiv.explain.kl_terms`' terms (0 where ``p_i = 0``, ``q_i``
    floored), with the terms labelled by position, since a repeated term is its own anchor (its
    two text embeddings may differ in the last digits)."""
    from .explain import TiltedDistribution, kl_terms

    positions = tuple(map(str, range(len(p))))
    p_tilt, q_tilt = (TiltedDistribution(positions, (VOCABULARY,) * len(p), values, True) for values in (p, q))
    frame = kl_terms(p_tilt, q_tilt)
    contributions = np.empty(len(p), dtype=np.float64)
    contributions[frame["anchor"].astype(int).to_numpy()] = frame["term"].to_numpy()
    return contributions


@dataclass(frozen=True)
class PairTerms:
    """Why two images are near or far, term by term (:func:`pair_terms`).

    ``push_terms`` / ``push_scores``: the terms with the largest positive contributions
    ``p_x(i) log(p_x(i) / p_y(i))`` to ``divergence``; ``pull_terms`` / ``pull_scores``: the terms
    with the largest Bhattacharyya terms ``sqrt(p_x(i) p_y(i))``; ``divergence``:
    ``KL(p_x || p_y)`` over the whole vocabulary, in nats; ``contributions`` ``(N,)``: every term's
    ``p_x(i) log(p_x(i) / p_y(i))`` in vocabulary order, summing to ``divergence``."""

    pull_terms: tuple[str, ...]
    pull_scores: np.ndarray
    push_terms: tuple[str, ...]
    push_scores: np.ndarray
    divergence: float
    contributions: np.ndarray


def pair_terms(encoder: Any, x: ArrayLike, y: ArrayLike, terms: Sequence[str], k: int = 10,
               templates: Any = None, scale: float | None = None) -> PairTerms:
    """The terms that pull two images together and those that push them apart.

    With ``p_x(i) = p(i | s x)`` and ``p_y(i) = p(i | s y)`` the two images' tilted distributions
    over the terms (uniform empirical model at scale ``s``), the anchor divergence over the
    vocabulary splits term by term (as :func:`anchordiv.explain.kl_terms` splits it over typed
    anchors):

        D(x -> y) = KL(p_x || p_y) = sum_i p_x(i) log(p_x(i) / p_y(i)).

    *Push apart*: the ``k`` terms with the largest positive contributions, terms ``x`` leans on and
    ``y`` does not (fewer than ``k`` when fewer are positive). *Pull together*: the ``k`` terms with
    the largest ``b_i = sqrt(p_x(i) p_y(i))``, whose sum ``sum_i b_i`` in ``[0, 1]`` is the
    Bhattacharyya coefficient of the two distributions (1 when they are equal): a term both lean
    on. Ties go by vocabulary order.

    Parameters
    ----------
    encoder : Encoder
        Gives ``logit_scale``, ``dim`` and the terms' text embeddings.
    x, y : array-like of shape (d,) or (1, d)
        The two images' embeddings (any norm): ``x`` the query, ``y`` its neighbour.
    terms : sequence of str
        The vocabulary (at least one term).
    k : int, default 10
        How many terms each list holds at most.
    templates, scale
        As in :func:`suggest_anchors`.

    Returns
    -------
    PairTerms
        ``divergence`` is ``D(x -> y)`` as :class:`anchordiv.EmpiricalAnchors` computes it (the
        Bregman form), which the per-term contributions sum to up to round-off.
    """
    from .models import EmpiricalAnchors

    k = check_positive_int(k, "k")
    vocabulary = _vocabulary(encoder, terms, templates, scale)
    names = ("x", "y")
    pair = [_embeddings(value, name, encoder.dim, one=True).to(torch.float64) for value, name in zip((x, y), names)]
    p_x, p_y = (vocabulary.tilt(row, name)[0].cpu().numpy() for row, name in zip(pair, names))
    contributions = _kl_contributions(p_x, p_y)
    order = _top(contributions, len(contributions))  # largest term first, ties in vocabulary order
    push = order[contributions[order] > 0][:k]
    shared = np.sqrt(p_x * p_y)
    pull = _top(shared, k)
    divergence = EmpiricalAnchors(scale=vocabulary.scale).fit(vocabulary.anchors).divergence(*pair)
    texts = vocabulary.terms
    return PairTerms(tuple(texts[i] for i in pull), shared[pull], tuple(texts[i] for i in push),
                     contributions[push], float(divergence[0, 0]), contributions)
