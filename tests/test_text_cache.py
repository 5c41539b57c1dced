"""Text embeddings on disk: a second start reads them and, for the built-in model, never loads its
text tower; within a process a new list encodes only the texts no earlier list held."""
from collections import OrderedDict

import numpy as np
import pytest
import torch

from anchordiv import text_cache
from anchordiv.encoders.builtin import load_builtin_encoder
from anchordiv.text_cache import encode_texts_cached


@pytest.fixture(autouse=True)
def nothing_kept(monkeypatch):
    """A process that has kept no text's rows yet (each test also takes its own ``cache``: conftest.py)."""
    monkeypatch.setattr(text_cache, "_KEPT", OrderedDict())


def counted(encoder) -> list:
    """The lists ``encoder.encode_texts`` is called with from now on."""
    calls = []
    real = encoder.encode_texts
    encoder.encode_texts = lambda texts: calls.append(list(texts)) or real(texts)
    return calls


def test_a_second_start_reads_the_texts_without_the_text_tower(cache):
    texts = ["dog face", "pencil sketch", "a cat in watercolor"]
    first = load_builtin_encoder()
    assert first._text_tower is None  # not loaded until a text is encoded
    encoded = encode_texts_cached(first, texts)
    torch.testing.assert_close(encoded, first.encode_texts(texts))
    assert len(list((cache / "texts").glob("*.npy"))) == 1

    restarted = load_builtin_encoder()
    again = encode_texts_cached(restarted, texts)
    assert restarted._text_tower is None and torch.equal(again, encoded)


def test_the_list_and_the_encoder_name_are_the_key(cache):
    encoder = load_builtin_encoder()
    calls = counted(encoder)
    encode_texts_cached(encoder, ["a", "b"])
    encode_texts_cached(encoder, ["a", "b"])
    encoder.name += "+other"
    encode_texts_cached(encoder, ["a", "b"])
    assert calls == [["a", "b"], ["a", "b"]]
    assert encode_texts_cached(encoder, []).shape == (0, encoder.dim) and len(calls) == 2


def test_a_new_list_encodes_only_the_texts_no_earlier_list_held(cache):
    encoder = load_builtin_encoder()
    calls = counted(encoder)
    objects = encode_texts_cached(encoder, ["dog face", "cat face", "rocket"])
    vocabulary = encode_texts_cached(encoder, ["rocket", "pencil sketch", "dog face", "dog face"])
    assert calls == [["dog face", "cat face", "rocket"], ["pencil sketch"]]
    assert torch.equal(vocabulary[[0, 2, 3]], objects[[2, 0, 0]])
    torch.testing.assert_close(vocabulary, encoder.encode_texts(["rocket", "pencil sketch", "dog face", "dog face"]),
                               atol=1e-5, rtol=0)
    assert len(list((cache / "texts").glob("*.npy"))) == 2  # the new list is kept on disk as a whole


def test_the_rows_a_process_keeps_are_bounded(cache, monkeypatch):
    monkeypatch.setattr(text_cache, "MAX_KEPT_TEXTS", 3)
    encoder = load_builtin_encoder()
    encode_texts_cached(encoder, ["a", "b", "c", "d"])
    assert [text for _, text in text_cache.kept_texts()] == ["b", "c", "d"]


def test_a_damaged_file_is_encoded_again_and_an_unwritable_cache_only_costs_time(cache, tmp_path, monkeypatch):
    encoder = load_builtin_encoder()
    expected = encode_texts_cached(encoder, ["rocket", "pizza"])
    (path,) = (cache / "texts").glob("*.npy")
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    torch.testing.assert_close(encode_texts_cached(encoder, ["rocket", "pizza"]), expected)
    a_file = tmp_path / "plain.txt"
    a_file.write_text("not a folder")
    monkeypatch.setenv("ANCHORDIV_CACHE", str(a_file))
    np.testing.assert_allclose(encode_texts_cached(encoder, ["rocket", "pizza"]).numpy(), expected.numpy(), atol=1e-6)
