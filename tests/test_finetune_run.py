"""End-to-end fine-tuning with a tiny model, layer-wise learning rates, and the CLI's errors."""

import json
import os
import re
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.errors import UserError
from electra_tf.finetune.classification.head import ClassificationHead
from electra_tf.finetune.config import FinetuningConfig
from electra_tf.finetune.model import build_model
from electra_tf.finetune.qa import metrics as qa_metrics
from electra_tf.finetune.qa import reader as qa_reader
from electra_tf.finetune.runner import run_finetuning
from electra_tf.finetune.tagging.scorer import span_prf
from electra_tf.model_config import ModelConfig
from electra_tf.modeling.encoder import TransformerEncoder
from electra_tf.optimization import layer_depth, layerwise_lr_multipliers

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(HERE, "data", "finetune")
QA_TRAIN = os.path.join(HERE, "data", "qa", "squad_v1_train.json")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def tiny_config(layers=2, vocab_size=30522):
    return ModelConfig(
        vocab_size=vocab_size,
        embedding_size=16,
        hidden_size=32,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )


def dummy_batch(length=8):
    z = tf.zeros([1, length], tf.int32)
    return {
        "input_ids": z,
        "input_mask": z + 1,
        "segment_ids": z,
        "task_id": tf.zeros([1], tf.int32),
        "sst_label_ids": tf.zeros([1], tf.int32),
        "sst_eid": tf.zeros([1], tf.int32),
    }


def test_layerwise_learning_rates_12_layers():
    _, variables = build_model(
        tiny_config(12, 50), [ClassificationHead("sst", 2, name="sst")], dummy_batch()
    )
    paths = [v.path for v in variables]
    assert "electra/encoder/layer_11/output/dense/kernel" in paths
    assert any("task_specific/sst/dense/kernel" in p for p in paths)

    def by_path(mults):
        def get(fragment):
            (value,) = {m for p, m in mults.items() if fragment in p}
            return value

        return get

    get = by_path(layerwise_lr_multipliers(variables, 12, 0.8))
    assert get("embeddings/word_embeddings") == pytest.approx(0.8**14)  # 0.04398
    assert get("embeddings_project/kernel") == pytest.approx(0.8**14)
    assert get("layer_0/attention/self/query/kernel") == pytest.approx(0.8**13)  # 0.05498
    assert get("layer_11/output/LayerNorm/gamma") == pytest.approx(0.8**2)  # the quirk: 0.64
    assert get("task_specific/sst/dense/bias") == 1.0
    fixed = by_path(layerwise_lr_multipliers(variables, 12, 0.8, fixed_top_layer=True))
    assert fixed("embeddings/word_embeddings") == pytest.approx(0.8**13)
    assert fixed("layer_0/attention/self/query/kernel") == pytest.approx(0.8**12)
    assert fixed("layer_11/output/LayerNorm/gamma") == pytest.approx(0.8)
    assert fixed("task_specific/sst/dense/bias") == 1.0
    frozen = by_path(layerwise_lr_multipliers(variables, 12, 0.8, embedding_multiplier=0.0))
    assert frozen("embeddings/word_embeddings") == 0.0
    assert frozen("embeddings/LayerNorm/gamma") == 0.0
    assert frozen("embeddings_project/kernel") == 0.0
    assert frozen("layer_0/attention/self/query/kernel") == pytest.approx(0.8**13)
    half = by_path(layerwise_lr_multipliers(variables, 12, 1.0, embedding_multiplier=0.5))
    assert half("embeddings/position_embeddings") == 0.5  # decay off: only the factor
    assert half("layer_5/output/dense/kernel") == 1.0


def save_name_based(variables, prefix):
    """A checkpoint keyed by variable paths (the original's layout)."""
    tf.raw_ops.SaveV2(
        prefix=prefix,
        tensor_names=[v.path for v in variables],
        shape_and_slices=[""] * len(variables),
        tensors=[v.value for v in variables],
    )


def make_run_dir(d, cfg=None, squad=False):
    """A DATA_DIR with the tiny "pretrained" model `tiny` (seed 0; `cfg`: its ModelConfig), the
    BERT vocab and the test tasks' data (`squad`: also SQuAD 1.1 as the task squadv1, its small
    train file as train and dev); returns the encoder."""
    model_dir = d / "models" / "tiny"
    os.makedirs(model_dir)
    cfg = cfg or tiny_config()
    with open(model_dir / "config.json", "w") as f:
        json.dump({"model_size": "small", "model_config": cfg.to_dict()}, f)
    keras.utils.set_random_seed(0)  # the same "pretrained" weights every run
    enc = TransformerEncoder(cfg)
    b = dummy_batch()
    enc(b["input_ids"], b["input_mask"], b["segment_ids"])
    save_name_based(enc.weights, str(model_dir / "model.ckpt-5"))
    shutil.copy(os.path.join(ROOT, "data", "vocab", "vocab.txt"), d / "vocab.txt")
    shutil.copytree(DATA, d / "finetuning_data")
    if squad:
        os.makedirs(d / "finetuning_data" / "squadv1")
        for split in ("train", "dev"):
            shutil.copy(QA_TRAIN, d / "finetuning_data" / "squadv1" / f"{split}.json")
    return enc


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("ft")
    return d, make_run_dir(d)


HPARAMS = dict(  # noqa: C408
    train_batch_size=4,
    eval_batch_size=4,
    num_train_epochs=1.0,
    max_seq_length=32,
    jit_compile=False,
    log_every_steps=1,
    seed=3,
)


def test_end_to_end_multitask(run_dir, capsys):
    d, _ = run_dir
    config = FinetuningConfig(
        "tiny", str(d), task_names=["sst", "sts", "chunk"], write_test_outputs=True, **HPARAMS
    )
    out = run_finetuning(config)
    log = capsys.readouterr().out
    # 5 sst + 10 sts (doubled) + 2 chunk = 17 -> padded 20 -> 5 steps
    assert "step 5/5" in log and "steps/s" in log and "loaded the discriminator" in log
    # the trial's TensorBoard scalars: the logged losses, at their steps
    logged = {int(m[0]): float(m[1]) for m in re.findall(r"^step (\d+)/5 loss (\S+)", log, re.M)}
    events = os.path.join(d, "models", "tiny", "finetuning_summaries", "sst_sts_chunk_trial_1")
    (event_file,) = os.listdir(events)
    written = {}
    for event in tf.compat.v1.train.summary_iterator(os.path.join(events, event_file)):
        for v in event.summary.value:
            written.setdefault(v.tag, {})[event.step] = float(tf.make_ndarray(v.tensor))
    assert sorted(written["loss"]) == sorted(logged) == [1, 2, 3, 4, 5]
    assert all(abs(written["loss"][k] - logged[k]) < 1e-4 for k in logged)
    assert sorted(written["examples_per_second"]) == [2, 3, 4, 5]  # none over the compilation
    results = os.path.join(d, "models", "tiny", "results")
    sst = json.loads(read(os.path.join(results, "sst.json")))
    assert sst["trained_with"] == ["sst", "sts", "chunk"] and sst["trials"][0]["train_steps"] == 5
    assert set(sst["trials"][0]["dev"]) == {"accuracy", "loss"}
    assert sst["median"]["dev"] == sst["trials"][0]["dev"]
    # the hand-made dev file has two "1" sentences and one "0"
    assert sst["majority_class"] == {"dev": {"label": "1", "accuracy": pytest.approx(200 / 3)}}
    (counts,) = sst["label_counts"]
    assert (
        counts["dev"]["gold"] == {"0": 1, "1": 2} and sum(counts["dev"]["predicted"].values()) == 3
    )
    assert "always answering 1 scores 66.67" in log
    assert "majority_class" not in json.loads(read(os.path.join(results, "sts.json")))
    assert set(json.loads(read(os.path.join(results, "sts.json")))["median"]["dev"]) == {
        "pearson",
        "spearman",
        "mse",
        "loss",
    }
    assert set(out["chunk"]["median"]["dev"]) == {"precision", "recall", "f1", "loss"}

    lines = read(os.path.join(results, "sst_dev_predictions.tsv")).splitlines()
    assert lines[0] == "id\tprediction" and [l.split("\t")[0] for l in lines[1:]] == ["0", "1", "2"]
    assert all(l.split("\t")[1] in ("0", "1") for l in lines[1:])
    # the reported accuracy and predicted counts, recomputed from the TSV and the dev labels
    predicted = [l.split("\t")[1] for l in lines[1:]]
    dev_rows = read(os.path.join(d, "finetuning_data", "sst", "dev.tsv")).splitlines()[1:]
    labels = [r.split("\t")[1] for r in dev_rows]
    right = sum(p == g for p, g in zip(predicted, labels))
    assert sst["trials"][0]["dev"]["accuracy"] == pytest.approx(100.0 * right / 3)
    assert counts["dev"]["predicted"] == {k: predicted.count(k) for k in ("0", "1")}
    # STS predictions are written on the data's 0-5 scale; the reported mse is on the model's
    # label/5 scale: recompute it from the TSV and the dev file's gold scores (last column)
    sts = read(os.path.join(results, "sts_dev_predictions.tsv")).splitlines()[1:]
    dev_rows = read(os.path.join(d, "finetuning_data", "sts", "dev.tsv")).splitlines()[1:]
    gold = [float(r.split("\t")[-1]) for r in dev_rows]
    pred = [float(l.split("\t")[1]) for l in sts]
    assert len(pred) == len(gold) == 5
    mse = sum((g / 5 - p / 5) ** 2 for g, p in zip(gold, pred)) / 5
    sts_mse = json.loads(read(os.path.join(results, "sts.json")))["trials"][0]["dev"]["mse"]
    assert sts_mse == pytest.approx(mse, rel=1e-4)
    assert len(read(os.path.join(results, "sst_test_predictions.tsv")).splitlines()) == 3
    chunk = read(os.path.join(results, "chunk_dev_predictions.tsv")).splitlines()
    assert chunk[1].split("\t")[0] == "0" and len(chunk[1].split("\t")[1].split(" ")) == 10
    # the reported span F1, recomputed from the TSV (BIO tags) and the dev file's tags
    gold_tags, sentence = [], []
    for line in read(os.path.join(d, "finetuning_data", "chunk", "dev.txt")).splitlines() + [""]:
        if line.split():
            sentence.append(line.split()[-1])
        elif sentence:
            gold_tags.append(sentence)
            sentence = []
    pred_tags = [l.split("\t")[1].split(" ") for l in chunk[1:]]
    assert len(pred_tags) == len(gold_tags) and pred_tags
    f1 = 100.0 * span_prf(gold_tags, pred_tags)[2]
    assert out["chunk"]["trials"][0]["dev"]["f1"] == pytest.approx(f1)
    assert not os.path.exists(os.path.join(results, "chunk_test_predictions.tsv"))


def test_restores_the_pretrained_encoder(run_dir):
    from electra_tf.finetune.runner import restore_encoder

    d, enc = run_dir
    model, _ = build_model(tiny_config(), [ClassificationHead("sst", 2, name="sst")], dummy_batch())
    restore_encoder(model, os.path.join(d, "models", "tiny", "model.ckpt-5"))
    for a, b in zip(enc.weights, model.encoder.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_reinit_top_layers_keeps_the_fresh_initialisation_of_the_top_layers(run_dir):
    from electra_tf.finetune.runner import restore_encoder

    d, enc = run_dir
    ckpt = os.path.join(d, "models", "tiny", "model.ckpt-5")
    keras.utils.set_random_seed(7)
    model, _ = build_model(tiny_config(), [ClassificationHead("sst", 2, name="sst")], dummy_batch())
    top = model.encoder.transformer_layers[-1]
    built = {w.path: w.numpy() for w in top.weights}
    restore_encoder(model, ckpt, reinit_top_layers=1)
    pretrained = {w.path: w.numpy() for w in enc.weights}
    top_paths = set(built)
    assert len(top_paths) == 16  # 4 attention kernels + biases, 2 FFN, 2 LayerNorms: 2 each
    for ours, theirs in zip(model.encoder.weights, enc.weights):
        if ours.path in top_paths:  # the build's values, which are not the checkpoint's
            np.testing.assert_array_equal(ours.numpy(), built[ours.path])
            if "kernel" in ours.path:
                assert not np.allclose(ours.numpy(), theirs.numpy())
        else:  # embeddings and the lower layer: the checkpoint's
            np.testing.assert_array_equal(ours.numpy(), pretrained[theirs.path])
    with pytest.raises(UserError, match="reinit_top_layers 3: the encoder has 2 layers"):
        restore_encoder(model, ckpt, reinit_top_layers=3)


def test_embedding_lr_multiplier_zero_keeps_the_pretrained_embeddings(run_dir):
    d, enc = run_dir
    hp = {**HPARAMS, "keep_all_models": True, "embedding_lr_multiplier": 0.0}
    run_finetuning(FinetuningConfig("tiny", str(d), task_names=["sst"], **hp))
    kept = os.path.join(d, "models", "tiny", "finetuning_models", "sst_model_1", "ckpt")
    model, _ = build_model(tiny_config(), [ClassificationHead("sst", 2, name="sst")], dummy_batch())
    tf.train.Checkpoint(model=model).read(kept).expect_partial()
    moved = {"embeddings": [], "layers": []}
    for theirs, ours in zip(enc.weights, model.encoder.weights):
        part = "embeddings" if layer_depth(ours.path, 2) == 0 else "layers"
        moved[part].append(float(np.abs(ours.numpy() - theirs.numpy()).max()))
    assert len(moved["embeddings"]) >= 5  # word, position, type, LayerNorm gamma and beta
    assert max(moved["embeddings"]) == 0.0  # not even weight decay moves them
    assert min(moved["layers"]) > 0.0  # every other tensor trained


def test_random_init_is_the_no_pretraining_baseline(run_dir, capsys):
    d, enc = run_dir
    hp = {**HPARAMS, "do_train": False, "keep_all_models": True}
    results = os.path.join(d, "models", "tiny", "results", "sst.json")
    before = read(results) if os.path.exists(results) else None
    run_finetuning(FinetuningConfig("tiny", str(d), task_names=["sst"], random_init=True, **hp))
    log = capsys.readouterr().out
    assert "random_init: the encoder starts from random weights" in log
    assert "loaded the discriminator" not in log
    assert os.path.exists(os.path.join(d, "models", "tiny", "results_random_init", "sst.json"))
    assert (read(results) if os.path.exists(results) else None) == before
    # the kept (untrained) model has the tiny config's shapes but not the pretrained weights
    kept = os.path.join(d, "models", "tiny", "finetuning_models", "sst_model_1_random_init")
    saved = os.path.join(kept, "ckpt")
    recorded = json.loads(read(os.path.join(kept, "config.json")))
    assert recorded["kind"] == "finetuning" and recorded["task_names"] == ["sst"]
    assert recorded["model_config"] == tiny_config().to_dict() and recorded["random_init"]
    assert read(os.path.join(kept, "vocab.txt")) == read(os.path.join(d, "vocab.txt"))
    model, _ = build_model(tiny_config(), [ClassificationHead("sst", 2, name="sst")], dummy_batch())
    tf.train.Checkpoint(model=model).read(saved).expect_partial()
    pairs = list(zip(enc.weights, model.encoder.weights))
    assert pairs and all(a.shape == b.shape for a, b in pairs)
    assert not np.allclose(pairs[0][0].numpy(), pairs[0][1].numpy())


def test_bad_data_keeps_earlier_results(run_dir):
    d, _ = run_dir
    results = os.path.join(d, "models", "tiny", "results", "sst.json")
    before = read(results)
    bad = os.path.join(d, "finetuning_data", "sst", "dev.tsv")
    good = read(bad)
    with open(bad, "w") as f:
        f.write(good + "a sentence\t7\n")
    try:
        with pytest.raises(UserError, match=r"sst/dev\.tsv:5: unknown label '7'"):
            run_finetuning(FinetuningConfig("tiny", str(d), task_names=["sst"], **HPARAMS))
    finally:
        with open(bad, "w") as f:
            f.write(good)
    assert read(results) == before


@pytest.mark.slow
def test_cli_unknown_hparam_is_one_line(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "run_finetuning.py"),
            "--data_dir",
            str(tmp_path),
            "--model_name",
            "m",
            "--hparams",
            '{"task_names": ["sst"], "lerning_rate": 1}',
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1
    err = [l for l in proc.stderr.splitlines() if l.startswith("error:")]
    assert len(err) == 1 and "lerning_rate" in err[0] and "valid keys" in err[0]
    assert not os.path.exists(tmp_path / "models")


def test_qa_prediction_files_are_each_trials_own(tmp_path):
    """SQuAD's official-format predictions: one file per trial (suffixed as the TSVs), written
    with the results once every trial has finished; each holds its trial's answers (its TSV's)
    and scores what that trial reported."""
    make_run_dir(tmp_path, squad=True)
    hp = {**HPARAMS, "task_names": ["squadv1"], "num_trials": 2, "log_every_steps": 100}
    out = run_finetuning(FinetuningConfig("tiny", str(tmp_path), **hp))
    results = tmp_path / "models" / "tiny" / "results"
    gold = qa_reader.load_squad_json(str(tmp_path / "finetuning_data" / "squadv1" / "dev.json"))
    answers = []
    for trial, suffix in ((1, ""), (2, "_trial2")):
        preds = json.loads(read(results / f"squadv1_dev_predictions{suffix}.json"))
        tsv = read(results / f"squadv1_dev_predictions{suffix}.tsv").splitlines()[1:]
        assert list(preds.items()) == [tuple(line.split("\t", 1)) for line in tsv]
        reported = out["squadv1"]["trials"][trial - 1]["dev"]
        for k, v in qa_metrics.squad_v1_evaluate(gold, preds).items():
            assert reported[k] == pytest.approx(v), k
        answers.append(preds)
    assert answers[0] != answers[1]  # the trials differ, so a file of the wrong trial would fail
