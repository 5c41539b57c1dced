"""Text embeddings kept on disk by encoder and text list (:func:`encode_texts_cached`), and by
encoder, anchors and prompt templates (:func:`cached_text_embeddings`, which
:func:`anchordiv.prompts.encode_anchors` uses).

A restarted explorer then needs neither the seconds to encode an anchor set it has seen (minutes
through the 80 ImageNet templates; docs/benchmarks.md) nor, for the built-in model, the seconds to
load its text tower at all. Within a process, a list of texts is built from the rows of the lists
read or encoded before (:func:`encode_texts_cached`): the built-in world's vocabulary is its
object names, which the page's first anchor set encoded, and five styles.
"""
from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from typing import Callable, Sequence

import numpy as np
import torch

# The texts whose rows one process keeps, by encoder name (the most recently used first to stay):
# 20,000 rows are 20 MB at d = 256, 60 MB at d = 768.
MAX_KEPT_TEXTS = 20_000
_KEPT: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_KEPT_LOCK = threading.Lock()


def encode_texts_cached(encoder, texts: Sequence[str]) -> torch.Tensor:
    """``encoder.encode_texts(texts)`` ``(len(texts), d)`` float32, read from the anchordiv cache
    when this encoder (by name) has encoded this exact list before, else built (from the rows this
    process holds of texts in other lists, :func:`encode_unkept`, the rest encoded) and stored there."""
    texts = list(texts)
    rows = cached_text_embeddings(encoder, [texts], lambda: encode_unkept(encoder, texts))
    keep_rows(encoder.name, texts, rows.numpy().copy())
    return rows


def encode_unkept(encoder, texts: list[str]) -> torch.Tensor:
    """``encoder.encode_texts(texts)`` ``(n, d)``, encoding only the texts whose rows this process
    does not hold (:func:`keep_rows`): a text's embedding depends on the encoder and the text alone."""
    with _KEPT_LOCK:
        known = {text: _KEPT[key] for text in dict.fromkeys(texts) if (key := (encoder.name, text)) in _KEPT}
    missing = [text for text in dict.fromkeys(texts) if text not in known]
    if missing:
        known.update(zip(missing, encoder.encode_texts(missing).numpy()))
    return torch.from_numpy(np.stack([known[text] for text in texts]).astype(np.float32))


def kept_texts() -> list[tuple[str, str]]:
    """The ``(encoder name, text)`` pairs whose rows this process holds, the least recently kept first."""
    with _KEPT_LOCK:
        return list(_KEPT)


def keep_rows(encoder_name: str, texts: list[str], rows: np.ndarray) -> None:
    """Hold ``rows`` ``(n, d)``, the embeddings of ``texts`` by ``encoder_name``, for
    :func:`encode_unkept` (at most :data:`MAX_KEPT_TEXTS` texts, the least recently kept dropped)."""
    with _KEPT_LOCK:
        for text, row in zip(texts, rows):
            _KEPT[(encoder_name, text)] = row
            _KEPT.move_to_end((encoder_name, text))
        while len(_KEPT) > MAX_KEPT_TEXTS:
            _KEPT.popitem(last=False)


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
