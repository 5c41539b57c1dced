"""Text embeddings on disk: a second start reads them and, for the built-in model, never loads its text tower."""
import numpy as np
import pytest
import torch

from anchordiv.encoders.builtin import load_builtin_encoder
from anchordiv.text_cache import encode_texts_cached


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ANCHORDIV_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


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
    calls = []
    real = encoder.encode_texts
    encoder.encode_texts = lambda texts: calls.append(list(texts)) or real(texts)
    encode_texts_cached(encoder, ["a", "b"])
    encode_texts_cached(encoder, ["a", "b"])
    encode_texts_cached(encoder, ["b", "a"])
    encoder.name += "+other"
    encode_texts_cached(encoder, ["a", "b"])
    assert calls == [["a", "b"], ["b", "a"], ["a", "b"]]
    assert encode_texts_cached(encoder, []).shape == (0, encoder.dim) and len(calls) == 3


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
