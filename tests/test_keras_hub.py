"""keras-hub presets both ways, checked against keras-hub 0.32 itself: a preset that keras-hub
saves (every weight moved off its initial value) is read by export_model.py and computes what
keras-hub computes on real text; this project's keras-hub export loads in keras-hub (no missing
weights, the same h5 layout as keras-hub's own) and computes what this project computes; a
pretraining run exports; fine-tuning starts from a preset; mistakes are one line each."""

import json
import os
import shutil
import warnings

import keras
import numpy as np
import pytest
from harness import TINY_RUN, error_line, run_script
from test_checkpoints import VOCAB, write_run

from electra_tf import export
from electra_tf.checkpoint import load_model
from electra_tf.errors import UserError
from electra_tf.finetune import pretrained
from electra_tf.finetune.classification.head import ClassificationHead
from electra_tf.finetune.config import FinetuningConfig
from electra_tf.finetune.model import build_model
from electra_tf.keras_hub import names
from electra_tf.keras_hub.preset import read_preset

keras_hub = pytest.importorskip("keras_hub")
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "finetune")
TEXTS = ["Hello, world!", "The cat sat on the mat.", "the dogs ran jumping playing", "A Dog!"]
LENGTH = 24  # the preset's max_sequence_length
BACKBONE = dict(
    vocab_size=len(VOCAB),
    num_layers=2,
    num_heads=2,
    hidden_dim=16,
    embedding_dim=8,  # != hidden_dim: the projection is exercised
    intermediate_dim=32,
    max_sequence_length=LENGTH,
)


def keras_hub_pack(tokenizer, texts, length=LENGTH):
    """[CLS] tokens [SEP], padded: keras-hub's tokenizer, packed by hand."""
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    ids = np.zeros((len(texts), length), np.int32)
    tokens = tokenizer(texts)
    for row, pieces in enumerate(tokens.to_list() if hasattr(tokens, "to_list") else tokens):
        seq = [cls] + [int(t) for t in pieces][: length - 2] + [sep]
        ids[row, : len(seq)] = seq
    mask = (ids != 0).astype(np.int32)
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": mask}


def sequence_output(backbone, x) -> np.ndarray:
    return np.asarray(backbone(x)["sequence_output"])


def h5_tree(path: str) -> dict:
    """Every group and dataset of an h5 file: kind, shape, attrs (the per-process names Keras
    gives unnamed dropout/softmax layers left out)."""
    import h5py

    out = {}

    def visit(name, obj):
        attrs = dict(obj.attrs)
        if name.endswith(("_dropout_layer/vars", "_softmax/vars")):
            attrs.pop("name", None)
        out[name] = (type(obj).__name__, getattr(obj, "shape", None), attrs)

    with h5py.File(path, "r") as f:
        f.visititems(visit)
    return out


@pytest.fixture(scope="module")
def preset(tmp_path_factory):
    """A keras-hub-saved preset: a random ElectraBackbone with seeded noise on every weight and
    an ElectraTokenizer over the small vocab (lower-casing, accents stripped)."""

    d = tmp_path_factory.mktemp("kh")
    vocab_file = str(d / "vocab.txt")
    with open(vocab_file, "w") as f:
        f.writelines(t + "\n" for t in VOCAB)
    keras.utils.set_random_seed(1)
    backbone = keras_hub.models.ElectraBackbone(**BACKBONE, name="electra_backbone")
    rng = np.random.default_rng(0)
    for w in backbone.weights:
        w.assign(np.asarray(w) + rng.normal(0, 0.2, w.shape).astype(np.float32))
    tokenizer = keras_hub.models.ElectraTokenizer(
        vocabulary=vocab_file, lowercase=True, strip_accents=True, name="electra_tokenizer"
    )
    path = str(d / "preset")
    backbone.save_to_preset(path)
    tokenizer.save_to_preset(path)
    return path, backbone, tokenizer


def test_the_name_table_covers_every_electra_backbone_weight():
    """Every variable of keras-hub's own ElectraBackbone is in the table, with its shape."""
    from electra_tf.keras_hub.config import model_config_from_backbone

    backbone = keras_hub.models.ElectraBackbone(**BACKBONE)
    d = {"class_name": "ElectraBackbone", "config": backbone.get_config()}
    config = model_config_from_backbone(d, "config.json")
    pairs = names.network_pairs(config.num_hidden_layers, projection=True)
    shapes = names.keras_hub_shapes(config)
    assert {w.path for w in backbone.weights} == {k for k, _ in pairs} | set(names.POOLER)
    assert {w.path: tuple(w.shape) for w in backbone.weights} == shapes
    assert config.hidden_act == "gelu_approximate"  # keras-hub's TransformerEncoder activation


@pytest.mark.slow
def test_keras_hub_preset_to_saved_model_and_back(preset, tmp_path):
    path, backbone, tokenizer = preset
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the SavedModel's tokenizer ops)

    out = str(tmp_path / "saved_model")
    p = run_script(
        "export_model.py", f"--checkpoint={path}", "--head=encoder", f"--export_dir={out}"
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stderr.count("pooled_dense") == 1, p.stderr[-3000:]  # said once, not silently
    served = tf.saved_model.load(out).signatures["serve_text"](text=tf.constant(TEXTS))
    x = keras_hub_pack(tokenizer, TEXTS)
    np.testing.assert_array_equal(served["input_ids"].numpy(), x["token_ids"])  # vocab, casing
    real = x["padding_mask"].astype(bool)
    ours, theirs = served["sequence_output"].numpy(), sequence_output(backbone, x)
    assert np.abs(ours - theirs)[real].max() < 1e-4
    assert np.abs(theirs).max() > 0.5  # not a trivially small output

    again = str(tmp_path / "again")
    p = run_script(
        "export_model.py",
        f"--checkpoint={path}",
        "--head=encoder",
        "--format=keras_hub",
        f"--export_dir={again}",
    )
    assert p.returncode == 0, p.stderr[-3000:]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reloaded = keras_hub.models.ElectraBackbone.from_preset(again)
        tok = keras_hub.models.ElectraTokenizer.from_preset(again)
    assert not [w for w in caught if "weight" in str(w.message).lower()], caught
    assert tok.get_vocabulary() == VOCAB and tok.lowercase and tok.strip_accents
    np.testing.assert_array_equal(keras_hub_pack(tok, TEXTS)["token_ids"], x["token_ids"])
    assert np.abs(sequence_output(reloaded, x) - theirs).max() < 1e-4
    # the layout is keras-hub's own: the same groups, datasets, shapes and layer names
    assert h5_tree(os.path.join(again, "model.weights.h5")) == h5_tree(
        os.path.join(path, "model.weights.h5")
    )
    for name in ("config.json", "tokenizer.json"):
        assert json.load(open(os.path.join(again, name))) == json.load(
            open(os.path.join(path, name))
        )


def test_finetuning_starts_from_a_keras_hub_preset(preset, tmp_path):
    path, backbone, tokenizer = preset
    hparams = pretrained.with_pretrained_size(
        str(tmp_path), "m", {"init_checkpoint": path, "task_names": ["sst"]}
    )
    assert hparams["do_lower_case"] is True  # the tokenizer's lowercase
    assert "model_size" not in hparams  # hidden 16 is no preset's
    config = FinetuningConfig("m", str(tmp_path), **hparams)
    assert pretrained.resolve_vocab_file(config) == os.path.join(
        path, "assets", "tokenizer", "vocabulary.txt"
    )
    prefix = pretrained.find_init_checkpoint(config)
    model_config = pretrained.load_model_config(config, prefix)
    assert (model_config.hidden_size, model_config.embedding_size) == (16, 8)
    x = keras_hub_pack(tokenizer, TEXTS)
    ids, mask, seg = x["token_ids"], x["padding_mask"], x["segment_ids"]
    features = {
        "input_ids": ids,
        "input_mask": mask,
        "segment_ids": seg,
        "task_id": np.zeros(len(TEXTS), np.int32),
        "sst_label_ids": np.zeros(len(TEXTS), np.int32),
        "sst_eid": np.arange(len(TEXTS), dtype=np.int32),
    }
    tuned, _ = build_model(model_config, [ClassificationHead("sst", 2, name="sst")], features)
    pretrained.restore_encoder(tuned, prefix)
    real = mask.astype(bool)
    delta = np.abs(tuned.encoder(ids, mask, seg).numpy() - sequence_output(backbone, x))
    assert delta[real].max() < 1e-4


def test_pretraining_warm_starts_its_discriminator_from_a_keras_hub_preset(preset):
    from test_checkpoints import SPECIAL

    from electra_tf.checkpoint import restore
    from electra_tf.pretraining_config import PretrainingConfig
    from electra_tf.pretraining_networks import build_pretrainer

    path, backbone, tokenizer = preset
    layers = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32)
    hparams = dict(
        model_size="small",
        embedding_size=8,
        # the run's own activation: keras-hub's, so that the outputs can match
        model_hparam_overrides={
            **layers,
            "max_position_embeddings": LENGTH,
            "hidden_act": "gelu_approximate",
        },
        generator_hidden_size=0.5,
        max_seq_length=LENGTH,
    )
    model = build_pretrainer(
        PretrainingConfig.from_flat("w", "/nonexistent", hparams), len(VOCAB), SPECIAL
    )
    restored, missing = restore.warm_start(model, path)
    assert restored == 39  # embeddings (5), projection (2), 2 layers x 16: the whole encoder
    assert missing and all(not m.startswith("electra/") for m in missing)  # heads, generator
    x = keras_hub_pack(tokenizer, TEXTS)
    ours = model.discriminator(x["token_ids"], x["padding_mask"], x["segment_ids"]).numpy()
    real = x["padding_mask"].astype(bool)
    assert np.abs(ours - sequence_output(backbone, x))[real].max() < 1e-4


@pytest.mark.slow
def test_cli_finetunes_from_a_keras_hub_preset(preset, tmp_path):
    path, _, _ = preset
    data = tmp_path / "data"
    shutil.copytree(os.path.join(DATA, "sst"), data / "finetuning_data" / "sst")
    hparams = {"task_names": ["sst"], "init_checkpoint": path, "num_train_epochs": 1.0}
    hparams.update(jit_compile=False, train_batch_size=2, seed=1)
    p = run_script(
        "run_finetuning.py",
        f"--data_dir={data}",
        "--model_name=m",
        f"--hparams={json.dumps(hparams)}",
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert f"using {LENGTH}" in p.stdout  # the preset's max_sequence_length
    result = json.load(open(data / "models" / "m" / "results" / "sst.json"))
    assert result["config"]["vocab_file"] == os.path.join(
        path, "assets", "tokenizer", "vocabulary.txt"
    )
    assert result["config"]["do_lower_case"] is True
    assert result["model_config"]["hidden_size"] == 16
    assert result["model_config"]["hidden_act"] == "gelu_approximate"


@pytest.mark.slow
def test_a_pretraining_run_exports_to_keras_hub(tiny_dataset, tmp_path):
    """run_pretraining.py (tanh GELU, as keras-hub's) -> --format=keras_hub -> keras-hub gives
    this project's sequence output."""
    data = str(tmp_path / "data")
    shutil.copytree(tiny_dataset, data)
    hparams = json.loads(json.dumps(TINY_RUN))
    hparams["model_hparam_overrides"]["hidden_act"] = "gelu_approximate"
    p = run_script(
        "run_pretraining.py",
        f"--data_dir={data}",
        "--model_name=m",
        f"--hparams={json.dumps(hparams)}",
    )
    assert p.returncode == 0, p.stderr[-3000:]
    run = os.path.join(data, "models", "m")
    out = str(tmp_path / "kh")
    p = run_script(
        "export_model.py",
        f"--checkpoint={run}",
        "--head=encoder",
        "--format=keras_hub",
        f"--export_dir={out}",
    )
    assert p.returncode == 0, p.stderr[-3000:]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        backbone = keras_hub.models.ElectraBackbone.from_preset(out)
        tokenizer = keras_hub.models.ElectraTokenizer.from_preset(out)
    assert not [w for w in caught if "weight" in str(w.message).lower()], caught
    x = keras_hub_pack(tokenizer, TEXTS, length=32)
    assert (x["token_ids"] > 999).sum() > 6  # real BERT wordpieces, not [UNK]s
    loaded = load_model.load_networks(run, head="encoder")
    enc = loaded.networks.discriminator
    ours = enc(x["token_ids"], x["padding_mask"], x["segment_ids"]).numpy()
    real = x["padding_mask"].astype(bool)
    assert np.abs(ours - sequence_output(backbone, x))[real].max() < 1e-4


def test_an_exact_gelu_model_is_refused_unless_allowed(tmp_path, capsys):
    """The activation decision: refused by default; allowed, with the measured difference."""
    model, prefix = write_run(str(tmp_path / "run"))
    loaded = load_model.load_networks(prefix, head="encoder")
    assert loaded.networks.discriminator.config.hidden_act == "gelu"
    out = str(tmp_path / "kh")
    with pytest.raises(UserError, match="allow_activation_change"):
        export.export_keras_hub(loaded, "encoder", out, str(tmp_path / "run" / "vocab.txt"))
    assert not os.path.exists(out)
    export.export_keras_hub(
        loaded, "encoder", out, str(tmp_path / "run" / "vocab.txt"), allow_activation_change=True
    )
    err = capsys.readouterr().err
    line = [x for x in err.splitlines() if "tanh approximation" in x]
    assert len(line) == 1, err
    printed = float(line[0].rsplit("up to ", 1)[1].split()[0])
    backbone = keras_hub.models.ElectraBackbone.from_preset(out)
    tok = keras_hub.models.ElectraTokenizer.from_preset(out)
    x = keras_hub_pack(tok, TEXTS, length=16)
    ours = model.discriminator(x["token_ids"], x["padding_mask"], x["segment_ids"]).numpy()
    real = x["padding_mask"].astype(bool)
    measured = np.abs(ours - sequence_output(backbone, x))[real].max()
    # keras-hub really differs from the exact-GELU model, by about what the warning says
    assert 1e-7 < measured and measured / 10 < printed < measured * 10


def test_weights_that_do_not_fit_the_config_are_listed_in_one_error(preset, tmp_path):
    path, _, _ = preset
    bad = str(tmp_path / "three_layers")
    shutil.copytree(path, bad)
    config = json.load(open(os.path.join(bad, "config.json")))
    config["config"].update(num_layers=3, intermediate_dim=40)
    json.dump(config, open(os.path.join(bad, "config.json"), "w"))
    with pytest.raises(UserError) as e:
        read_preset(bad)
    message = str(e.value)
    assert "16 missing weight(s): transformer_layer_2/" in message
    assert "shape mismatch(es): transformer_layer_0/feedforward_intermediate_dense/bias" in message
    assert "\n" not in message


@pytest.mark.slow
@pytest.mark.parametrize("problem", ["bert", "truncated", "no_tokenizer", "score"])
def test_cli_mistakes_are_one_line_and_write_nothing(preset, tmp_path, problem):
    path, _, _ = preset
    bad = str(tmp_path / "bad")
    shutil.copytree(path, bad)
    args = ["export_model.py", f"--checkpoint={bad}", "--head=encoder"]
    if problem == "bert":
        config = json.load(open(os.path.join(bad, "config.json")))
        config.update(class_name="BertBackbone", registered_name="keras_hub>BertBackbone")
        json.dump(config, open(os.path.join(bad, "config.json"), "w"))
        expected = "a keras-hub keras_hub>BertBackbone preset, not an ElectraBackbone"
    elif problem == "truncated":
        weights = os.path.join(bad, "model.weights.h5")
        size = os.path.getsize(weights)
        with open(weights, "r+b") as f:
            f.truncate(size // 2)
        expected = "model.weights.h5: not a readable HDF5 weights file"
    elif problem == "no_tokenizer":
        os.remove(os.path.join(bad, "tokenizer.json"))
        shutil.rmtree(os.path.join(bad, "assets"))
        expected = "a keras-hub preset without its tokenizer"
    else:
        args = ["score_electra_mlm.py", f"--data_dir={tmp_path}", f"--checkpoint={bad}"]
        expected = "ElectraBackbone preset is the discriminator's encoder alone, with no generator"
    out = str(tmp_path / "out")
    p = run_script(*args, f"--export_dir={out}" if problem != "score" else "--num_batches=1")
    line = error_line(p)
    assert expected in line and bad in line, line
    assert not os.path.exists(out)
