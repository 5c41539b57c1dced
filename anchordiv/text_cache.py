"""Text embeddings kept on disk by encoder and text list (:func:`encode_texts_cached`), and by
encoder, anchors and prompt templates (:func:`cached_text_embeddings`, which
:func:`anchordiv.prompts.encode_anchors` uses).

A restarted explorer then needs neither the seconds to encode an anchor set it has seen (minutes
through the 80 ImageNet templates; docs/benchmarks.md) nor, for the built-in model, the seconds to
load its text tower at all.
"""
from __future__ import annotations

import hashlib
import json
from typing import Callable, Sequence

import numpy as np
import torch


def encode_texts_cached(encoder, texts: Sequence[str]) -> torch.Tensor:
    """``encoder.encode_texts(texts)`` ``(len(texts), d)`` float32, read from the anchordiv cache
    when this encoder (by name) has encoded this exact list before, else encoded and stored there."""
    texts = list(texts)
    return cached_text_embeddings(encoder, [texts], lambda: encoder.encode_texts(texts))


def cached_text_embeddings(encoder, parts: list, build: Callable[[], torch.Tensor]) -> torch.Tensor:
    """``build()`` ``(n, d)`` float32, kept in the anchordiv cache under this encoder's name and
    ``parts`` (JSON: the ``n`` texts first, then whatever else decides their embeddings, such as
    templates); ``(0, d)`` without building when there are no texts.

    The file is checked by sha256 on every read (:func:`anchordiv.cache.cached_array`); a cache
    that cannot be written costs only the encoding.
    """
    from .cache import cache_dir, cached_array

    if not parts[0]:
        return torch.zeros((0, encoder.dim))
    digest = hashlib.sha256(json.dumps([encoder.name, *parts]).encode()).hexdigest()
    try:
        array = cached_array(cache_dir() / "texts" / f"{digest[:32]}.npy", f"texts|{digest}",
                             lambda: build().numpy())
    except ValueError:  # unwritable or misconfigured cache: encode without keeping the result
        return build()
    return torch.from_numpy(np.array(array, dtype=np.float32))
