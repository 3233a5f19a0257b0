"""Checkpoint reading: original TF1 name-based checkpoints (fake ones written here with a TF1
Saver under the names of the original's graph dump) and this project's object-based ones."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from electra_tf import run_dir
from electra_tf.checkpoint import load_model, locate, restore
from electra_tf.errors import UserError
from electra_tf.modeling.encoder import TransformerEncoder
from electra_tf.pretraining_config import PretrainingConfig
from electra_tf.pretraining_networks import build_pretrainer

WORDS = ["the", "a", "cat", "dog", "sat", "on", "mat", "run", "##s", "##ing", "hello", "world"]
WORDS += [",", ".", "!", "?", "'", "play", "##ed", "un", "##want", "jump"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
V, E, H, I, LAYERS = len(VOCAB), 16, 32, 64, 2
HG, IG = 24, 96  # generator: 0.75 x hidden; its own embeddings_project [E, HG]
P, T = 512, 2
TINY = dict(
    model_size="small",
    embedding_size=E,
    model_hparam_overrides=dict(
        hidden_size=H, num_hidden_layers=LAYERS, num_attention_heads=2, intermediate_size=I
    ),
    generator_hidden_size=HG / H,
    max_seq_length=16,
)
SPECIAL = {"pad": 0, "unk": 1, "cls": 2, "sep": 3, "mask": 4}


def original_names(generator: bool = True) -> dict:
    """The original pretraining graph's variables for the tiny config, written out from the
    reference's list (original_electra_code.md §8), name -> shape."""
    names = {
        "electra/embeddings/word_embeddings": [V, E],
        "electra/embeddings/token_type_embeddings": [T, E],
        "electra/embeddings/position_embeddings": [P, E],
        "electra/embeddings/LayerNorm/beta": [E],
        "electra/embeddings/LayerNorm/gamma": [E],
        "electra/embeddings_project/kernel": [E, H],
        "electra/embeddings_project/bias": [H],
        "discriminator_predictions/dense/kernel": [H, H],
        "discriminator_predictions/dense/bias": [H],
        "discriminator_predictions/dense_1/kernel": [H, 1],
        "discriminator_predictions/dense_1/bias": [1],
    }

    def encoder(scope, h, i):
        for n in range(LAYERS):
            base = f"{scope}/encoder/layer_{n}"
            for sub in ("attention/self/query", "attention/self/key", "attention/self/value"):
                names[f"{base}/{sub}/kernel"], names[f"{base}/{sub}/bias"] = [h, h], [h]
            names[f"{base}/attention/output/dense/kernel"] = [h, h]
            names[f"{base}/attention/output/dense/bias"] = [h]
            names[f"{base}/intermediate/dense/kernel"] = [h, i]
            names[f"{base}/intermediate/dense/bias"] = [i]
            names[f"{base}/output/dense/kernel"] = [i, h]
            names[f"{base}/output/dense/bias"] = [h]
            for ln in ("attention/output/LayerNorm", "output/LayerNorm"):
                names[f"{base}/{ln}/beta"], names[f"{base}/{ln}/gamma"] = [h], [h]

    encoder("electra", H, I)
    if generator:
        encoder("generator", HG, IG)
        names["generator/embeddings_project/kernel"] = [E, HG]
        names["generator/embeddings_project/bias"] = [HG]
        names["generator_predictions/dense/kernel"] = [HG, E]
        names["generator_predictions/dense/bias"] = [E]
        names["generator_predictions/LayerNorm/beta"] = [E]
        names["generator_predictions/LayerNorm/gamma"] = [E]
        names["generator_predictions/output_bias"] = [V]
    return names


def write_fake_original(prefix: str, names: dict, seed: int = 0) -> dict:
    """A TF1 checkpoint as the original's Saver writes it, with Adam slots for every variable,
    global_step and the released models' generator_predictions/temperature. Returns the values."""
    rng = np.random.default_rng(seed)
    values = {n: rng.normal(0, 0.1, s).astype(np.float32) for n, s in names.items()}
    with tf.Graph().as_default():
        variables = [tf.compat.v1.Variable(v, name=n) for n, v in values.items()]
        for n, v in values.items():
            variables.append(tf.compat.v1.Variable(np.zeros_like(v), name=f"{n}/adam_m"))
            variables.append(tf.compat.v1.Variable(np.ones_like(v), name=f"{n}/adam_v"))
        variables.append(tf.compat.v1.Variable(np.int64(1000), name="global_step"))
        variables.append(tf.compat.v1.Variable(1.0, name="generator_predictions/temperature"))
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            saver.save(sess, prefix, write_meta_graph=False)
    return values


def write_vocab(path: str) -> str:
    with open(path, "w") as f:
        f.write("\n".join(VOCAB) + "\n")
    return path


def make_pretrainer(seed: int = 0):
    """The tiny pretrainer with every weight random (so that no test passes by initial values)."""
    config = PretrainingConfig.from_flat("t", "/nonexistent", TINY)
    model = build_pretrainer(config, V, SPECIAL)
    rng = np.random.default_rng(seed)
    for v in {id(w): w for w in model.weights}.values():
        v.assign(rng.normal(0, 0.1, v.shape).astype(np.float32) + ("gamma" in v.path))
    return config, model


def write_run(directory: str, seed: int = 0):
    """A pretraining run directory as run_pretraining writes it: checkpoint, config.json,
    vocab.txt. Returns (model, checkpoint prefix)."""
    config, model = make_pretrainer(seed)
    disc, gen = config.model_configs(V)
    os.makedirs(directory, exist_ok=True)
    run_dir.write_run_config(
        os.path.join(directory, "config.json"), run_dir.PRETRAINING, config.to_flat(), disc, gen
    )
    write_vocab(os.path.join(directory, "vocab.txt"))
    slot = tf.Variable(tf.zeros([3]))
    ckpt = tf.train.Checkpoint(
        model=model, step=tf.Variable(7, dtype=tf.int64), optimizer=tf.train.Checkpoint(m=slot)
    )
    return model, ckpt.save(os.path.join(directory, "ckpt"))


def bert_config(path: str, **overrides) -> str:
    d = dict(
        vocab_size=V,
        embedding_size=E,
        hidden_size=H,
        num_hidden_layers=LAYERS,
        num_attention_heads=2,
        intermediate_size=I,
    )
    d.update(overrides)
    with open(path, "w") as f:
        json.dump(d, f)
    return path


def paths(layer) -> set:
    return {w.path for w in layer.weights}


@pytest.fixture(scope="module")
def original(tmp_path_factory):
    d = tmp_path_factory.mktemp("original")
    prefix = str(d / "electra_tiny")
    names = original_names()
    return prefix, write_fake_original(prefix, names), bert_config(str(d / "bert_config.json"))


def test_fake_original_loads_every_variable_by_name(original):
    prefix, values, config = original
    loaded = load_model.load_networks(prefix, config)
    assert loaded.parts == load_model.PARTS
    nets = loaded.networks
    got = {w.path: w.numpy() for w in nets.weights_of(loaded.parts)}
    assert set(got) == set(values)  # exactly the original's names, none missing, none extra
    for name, value in values.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)
    # the generator config was inferred from the shapes
    g = loaded.generator_config
    assert (g.hidden_size, g.intermediate_size, g.num_hidden_layers) == (HG, IG, LAYERS)
    r = loaded.report
    assert r.missing == [] and r.unexpected == []
    assert r.skipped == {"optimizer state": 2 * len(values) + 1, "unused": 1}
    assert f"restored {len(values)} variables" in r.summary()
    assert loaded.step == 1000


def test_restore_discriminator_from_original_skips_the_generator(original):
    prefix, values, config = original
    # built by a first call, as fine-tuning's build_model does
    enc = TransformerEncoder(locate.read_run_config(config).model_config, name="electra")
    enc(tf.zeros([1, 4], tf.int32), tf.ones([1, 4], tf.int32), tf.zeros([1, 4], tf.int32))
    assert restore.restore_discriminator(enc, os.path.dirname(prefix)) == prefix
    for w in enc.weights:
        np.testing.assert_array_equal(w.numpy(), values[w.path])
    report = restore.restore_by_name(enc.weights, prefix)
    n_other = sum(not n.startswith("electra/") for n in values)
    assert report.skipped["of other networks"] == n_other


def test_missing_names_fail_loudly_with_the_list(tmp_path):
    names = original_names(generator=False)
    del names["electra/encoder/layer_1/attention/self/query/kernel"]
    del names["electra/embeddings/LayerNorm/gamma"]
    prefix = str(tmp_path / "ckpt")
    write_fake_original(prefix, names)
    config = locate.read_run_config(bert_config(str(tmp_path / "c.json"))).model_config
    enc = TransformerEncoder(config, name="electra")
    enc.build()
    with pytest.raises(UserError) as e:
        restore.restore_discriminator(enc, prefix)
    msg = str(e.value)
    assert "2 variable(s) of the discriminator encoder are not in the checkpoint" in msg
    assert "electra/encoder/layer_1/attention/self/query/kernel" in msg
    assert "electra/embeddings/LayerNorm/gamma" in msg
    # a partial restore returns them instead
    _, model = make_pretrainer()
    count, missing = restore.warm_start(model, prefix)
    assert count == len(names)
    assert "electra/embeddings/LayerNorm/gamma" in missing
    assert "generator/encoder/layer_0/attention/self/query/kernel" in missing


def test_shape_mismatch_names_the_variable_and_both_shapes(original, tmp_path):
    prefix, _, _ = original
    config = bert_config(str(tmp_path / "c.json"), hidden_size=48, num_attention_heads=3)
    with pytest.raises(UserError) as e:
        load_model.load_networks(prefix, config, "discriminator")
    msg = str(e.value)
    assert "electra/embeddings_project/kernel is [16, 32] in the checkpoint but [16, 48]" in msg


def test_wrong_vocab_size_is_named(original, tmp_path):
    prefix, _, _ = original
    config = bert_config(str(tmp_path / "c.json"), vocab_size=V + 5)
    with pytest.raises(UserError, match=f"vocab_size {V + 5} does not match.*{V} word emb"):
        load_model.load_networks(prefix, config, "encoder")


def test_directory_without_checkpoint(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(UserError, match="holds no checkpoint"):
        locate.resolve_checkpoint(str(tmp_path))
    with pytest.raises(UserError, match="no such checkpoint"):
        locate.resolve_checkpoint(str(tmp_path / "ckpt-3"))


def test_object_based_checkpoint_restores_and_warm_starts(tmp_path):
    model, prefix = write_run(str(tmp_path / "run"), seed=1)
    assert restore.is_object_based(prefix)
    want = {w.path: w.numpy() for w in model.weights}
    # the discriminator alone (fine-tuning's path), from the run directory
    config = locate.read_run_config(str(tmp_path / "run" / "config.json")).model_config
    enc = TransformerEncoder(config, name="electra")
    enc.build()
    assert restore.restore_discriminator(enc, str(tmp_path / "run")) == prefix
    for w in enc.weights:
        np.testing.assert_array_equal(w.numpy(), want[w.path], err_msg=w.path)
    # warm start of a whole pretrainer
    _, other = make_pretrainer(seed=2)
    count, missing = restore.warm_start(other, prefix)
    assert missing == [] and count == len({id(w) for w in other.weights})
    for w in other.weights:
        np.testing.assert_array_equal(w.numpy(), want[w.path], err_msg=w.path)
    report = restore.restore_objects({"model": other}, prefix)
    assert report.skipped == {"optimizer state": 1, "other objects": 2}  # step, save_counter


def test_object_based_shape_mismatch(tmp_path):
    _, prefix = write_run(str(tmp_path / "run"))
    config = bert_config(str(tmp_path / "c.json"), intermediate_size=I + 8)
    with pytest.raises(UserError) as e:
        load_model.load_networks(prefix, config, "encoder")
    assert "electra/encoder/layer_0/intermediate/dense/kernel is [32, 64] in the checkpoint " in (
        str(e.value)
    )
    assert "but [32, 72] in the model" in str(e.value)
