"""Suggested anchors (issue 25): the terms of a vocabulary that a query's tilted distribution favours."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from ._validation import ArrayLike, as_matrix, check_dimension, check_positive_int, unit_rows


def suggest_anchors(encoder: Any, query: ArrayLike | str, terms: Sequence[str], k: int = 10
                    ) -> tuple[list[str], np.ndarray]:
    """The ``k`` terms of a vocabulary most probable under the query's tilted distribution.

    With the terms' unit text embeddings ``a_i`` (``i = 1..N``), the encoder's logit scale ``s``
    and the query's unit embedding ``x``, ``eta = s x`` and the uniform empirical anchor model on
    the terms gives

        p(i | eta) = exp(eta . a_i) / sum_j exp(eta . a_j),

    the model's own zero-shot softmax over the terms (docs/design.md §1). The terms are returned
    by decreasing ``p(i | eta)`` (ties by vocabulary order).

    Parameters
    ----------
    encoder : Encoder
        Gives ``logit_scale``, ``dim`` and the text embeddings (through
        :func:`anchordiv.text_cache.encode_texts_cached`, cached per encoder).
    query : array-like of shape (d,) or (1, d), or str
        An image embedding, or a text, which is encoded by ``encoder``.
    terms : sequence of str
        The vocabulary (at least one term; duplicates count as separate terms).
    k : int, default 10
        How many terms to return (all of them when ``k`` exceeds their number).

    Returns
    -------
    terms : list of str
        The top ``min(k, N)`` terms, most probable first.
    probabilities : ndarray of shape (min(k, N),)
        Their ``p(i | eta)`` (float64; summing to at most 1).
    """
    from .text_cache import encode_texts_cached

    k = check_positive_int(k, "k")
    if isinstance(terms, (str, bytes)):
        raise ValueError("terms must be a list of strings, not one string; e.g. terms=['a dog', 'a cat'].")
    terms = list(terms)
    if not terms:
        raise ValueError("terms is empty; pass at least one term (e.g. anchordiv.load_vocabulary(name)).")
    for term in terms:
        if not isinstance(term, str) or not term.strip():
            raise ValueError(f"every term must be a non-empty string; got {term!r}.")
    if isinstance(query, str):
        if not query.strip():
            raise ValueError("query is an empty text; pass a text or an image embedding (d,).")
        vector = encode_texts_cached(encoder, [query])
    else:
        vector = as_matrix(torch.as_tensor(np.asarray(query)).reshape(1, -1) if not isinstance(query, torch.Tensor)
                           else query.reshape(1, -1), "query")
        check_dimension(vector, int(encoder.dim), "query", against="the encoder")
    eta = unit_rows(as_matrix(vector, "query").to(torch.float64), "query", float(encoder.logit_scale))
    anchors = unit_rows(as_matrix(encode_texts_cached(encoder, terms), "terms").to(torch.float64), "terms")
    probabilities = torch.softmax((eta @ anchors.T)[0], dim=0).cpu().numpy()
    order = np.argsort(-probabilities, kind="stable")[:k]
    return [terms[i] for i in order], probabilities[order]
