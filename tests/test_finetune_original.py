"""Fine-tuning as the original where this project used to differ: task defaults only for
single-task runs, rows split at \\n only, an empty second sentence makes a single-sentence
example, warmup kept as a float, the export's default text length for small models."""

import json
import os
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf
from test_finetune_run import HPARAMS, ROOT, read, save_name_based, tiny_config

from electra_tf import export, optimization
from electra_tf.finetune import trainer as finetune_trainer
from electra_tf.finetune.config import FinetuningConfig
from electra_tf.finetune.registry import get_task
from electra_tf.finetune.runner import run_finetuning
from electra_tf.finetune.tagging.task import read_conll
from electra_tf.finetune.task import make_tokenizer, read_lines
from electra_tf.modeling.encoder import TransformerEncoder

# characters str.splitlines() splits at besides \n and \r
BREAKS = ["\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]
TRAIN = [  # sst rows: sentence, label; several hold a line break character
    ("a gripping\u2028funny film", "1"), ("dull\x85and long", "0"), ("moving", "1"),
    ("far too\u2029long", "0"), ("a\x0bdelight", "1"), ("lifeless\x1c", "0"),
    ("great fun", "1"), ("tedious\x0cand flat", "0"),
]  # fmt: skip
DEV = [("sweet\u2028and warm", "1"), ("a mess\x85", "0"), ("fine\x1d", "1")]


def _tsv(path, rows, header="sentence\tlabel"):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(header + "\n" + "".join(f"{a}\t{b}\n" for a, b in rows))


def test_rows_split_at_newline_only(tmp_path):
    path = tmp_path / "x.tsv"
    text = "h\tl\r\n" + "".join(f"a{c}b\t{i}\n" for i, c in enumerate(BREAKS)) + "last\t9"
    path.write_bytes(text.encode("utf-8"))
    lines = read_lines(str(path))
    assert len(text.splitlines()) > len(lines) == len(BREAKS) + 2  # what splitlines did
    assert lines[0] == "h\tl"  # \r\n ends a line too
    assert [line.split("\t")[0] for line in lines[1:-1]] == [f"a{c}b" for c in BREAKS]
    assert lines[-1] == "last\t9"  # no final newline
    conll = tmp_path / "c.txt"
    conll.write_text("the DT B-NP\nca\u2028t NN I-NP\n\nsat VBD B-VP\n", encoding="utf-8")
    sentences = read_conll(str(conll), "chunk")
    # the word holds \u2028: str.split() splits fields at it, as the original's line.split()
    assert [len(s.words) for s in sentences] == [2, 1]


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    d = tmp_path_factory.mktemp("held_back")
    model_dir = d / "models" / "tiny"
    os.makedirs(model_dir)
    cfg = tiny_config()
    with open(model_dir / "config.json", "w") as f:
        json.dump({"model_size": "small", "model_config": cfg.to_dict()}, f)
    keras.utils.set_random_seed(0)
    enc = TransformerEncoder(cfg)
    ids = tf.zeros([1, 8], tf.int32)
    enc(ids, ids + 1, ids)
    save_name_based(enc.weights, str(model_dir / "model.ckpt-5"))
    shutil.copy(os.path.join(ROOT, "data", "vocab", "vocab.txt"), d / "vocab.txt")
    sst = d / "finetuning_data" / "sst"
    os.makedirs(sst)
    _tsv(sst / "train.tsv", TRAIN)
    _tsv(sst / "dev.tsv", DEV)
    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "finetune")
    for task in ("sts", "chunk"):
        shutil.copytree(os.path.join(data, task), d / "finetuning_data" / task)
    return str(d)


def test_held_back_tsv_with_line_break_characters_keeps_its_rows(pretrained):
    config = FinetuningConfig("tiny", pretrained, task_names=["sst"], **HPARAMS)
    task = get_task(config, "sst", make_tokenizer(os.path.join(pretrained, "vocab.txt"), True))
    examples = task.get_examples("train")
    assert [e.text_a for e in examples] == [a for a, _ in TRAIN]
    out = run_finetuning(config)
    results = os.path.join(pretrained, "models", "tiny", "results")
    assert out["sst"]["trials"][0]["train_steps"] == 2  # 8 rows / batch 4, one epoch
    lines = read(os.path.join(results, "sst_dev_predictions.tsv")).split("\n")
    assert lines[0] == "id\tprediction" and [l.split("\t")[0] for l in lines[1:4]] == [
        "0",
        "1",
        "2",
    ]
    assert lines[4:] == [""]  # three dev rows, not more
    counts = json.loads(read(os.path.join(results, "sst.json")))["label_counts"][0]["dev"]
    assert counts["gold"] == {"0": 1, "1": 2}


def test_held_back_multi_task_run_keeps_the_single_task_defaults_off(pretrained):
    hp = {k: v for k, v in HPARAMS.items() if k not in ("num_train_epochs", "max_seq_length")}
    single = FinetuningConfig("tiny", pretrained, task_names=["sts"], **hp)
    assert (single.num_train_epochs, single.max_seq_length) == (10.0, 128)
    assert FinetuningConfig("tiny", pretrained, task_names=["chunk"]).max_seq_length == 256
    config = FinetuningConfig("tiny", pretrained, task_names=["sts", "chunk"], **hp)
    assert (config.num_train_epochs, config.max_seq_length) == (3.0, 128)
    out = run_finetuning(config)
    recorded = json.loads(read(os.path.join(pretrained, "models", "tiny", "results", "sts.json")))
    assert (recorded["config"]["num_train_epochs"], recorded["config"]["max_seq_length"]) == (
        3.0, 128,
    )  # fmt: skip
    # 5 sts rows doubled + 2 chunk sentences = 12 -> 3 batches of 4, x 3 epochs (not 10)
    assert out["sts"]["trials"][0]["train_steps"] == 9


def test_an_empty_second_sentence_makes_a_single_sentence_example(pretrained):
    config = FinetuningConfig("tiny", pretrained, task_names=["mrpc"], max_seq_length=16)
    tok = make_tokenizer(os.path.join(pretrained, "vocab.txt"), True)
    task = get_task(config, "mrpc", tok)
    from electra_tf.finetune.classification.task import InputExample

    rows = [("a good film", ""), ("", "a good film"), ("a good film", None), ("a", "b")]
    f = task.featurize(
        [InputExample(i, "mrpc", a, b, "1") for i, (a, b) in enumerate(rows)], "x", 0
    )
    np.testing.assert_array_equal(f["input_ids"][0], f["input_ids"][2])  # as b = None
    np.testing.assert_array_equal(f["segment_ids"][0], 0)
    assert f["input_mask"][0].sum() == 5  # [CLS] a good film [SEP]
    cls, sep = tok.vocab["[CLS]"], tok.vocab["[SEP]"]
    # an empty first sentence (the swapped copy of such a row) stays a pair, as the original
    assert f["input_ids"][1][:2].tolist() == [cls, sep] and f["segment_ids"][1].sum() == 4
    assert f["input_ids"][3][:5].tolist()[::2] == [cls, sep, sep]


def test_export_packs_an_empty_text_b_as_a_single_sentence(tmp_path):
    from test_export_finetuned import write_finetuned

    _, _, model_dir = write_finetuned(str(tmp_path / "data"), ["mrpc"])
    loaded = export.load_finetuned(model_dir, os.path.join(model_dir, "vocab.txt"))
    out = str(tmp_path / "saved")
    export.export_finetuned_saved_model(loaded, out)
    m = tf.saved_model.load(out)
    texts = tf.constant(["the cat sat", "a dog ran"])
    pair = m.signatures["serve_text_pair_mrpc"](text_a=texts, text_b=tf.constant(["", "the mat"]))
    single = m.signatures["serve_text_mrpc"](text=texts)
    for k in ("input_ids", "input_mask", "segment_ids"):
        np.testing.assert_array_equal(pair[k].numpy()[0], single[k].numpy()[0])
    # each batch runs at its longest row's length, so the two differ by float32 rounding only
    np.testing.assert_allclose(pair["logits"].numpy()[0], single["logits"].numpy()[0], atol=1e-5)
    assert pair["segment_ids"].numpy()[1].sum() > 0  # the other row is a pair


def test_warmup_steps_are_a_float(monkeypatch, pretrained):
    s = optimization.ElectraSchedule(1.0, 25, 2.5)
    # lr(t) = (1 - t/25) min(1, t/2.5): the original's float warmup (int() made it 2)
    assert float(s(1)) == pytest.approx((24 / 25) * 0.4, rel=1e-6)
    assert float(s(2)) == pytest.approx((23 / 25) * 0.8, rel=1e-6)
    seen = []
    real = finetune_trainer.ElectraSchedule

    def spy(*args, **kwargs):
        seen.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(finetune_trainer, "ElectraSchedule", spy)
    config = FinetuningConfig("tiny", pretrained, task_names=["sst"], **HPARAMS)
    run_finetuning(config.with_hparams(warmup_proportion=0.25, num_train_epochs=2.5))
    assert seen[-1][1:] == (5, 1.25)  # 8 rows / 4 x 2.5 epochs = 5 steps, warmup 5 x 0.25


def test_pretrained_export_defaults_to_the_models_positions(tmp_path, monkeypatch):
    import test_checkpoints

    from electra_tf import run_dir
    from electra_tf.checkpoint import load_model

    tiny = test_checkpoints.TINY
    layers = {**tiny["model_hparam_overrides"], "max_position_embeddings": 64}
    monkeypatch.setattr(test_checkpoints, "TINY", {**tiny, "model_hparam_overrides": layers})
    config, model = test_checkpoints.make_pretrainer(0)
    d = str(tmp_path / "run")
    os.makedirs(d)
    disc, gen = config.model_configs(test_checkpoints.V)
    run_dir.write_run_config(
        os.path.join(d, "config.json"), run_dir.PRETRAINING, config.to_flat(), disc, gen
    )
    test_checkpoints.write_vocab(os.path.join(d, "vocab.txt"))
    prefix = tf.train.Checkpoint(model=model).save(os.path.join(d, "ckpt"))
    loaded = load_model.load_networks(prefix, None, "discriminator")
    assert loaded.networks.discriminator.config.max_position_embeddings == 64
    out = str(tmp_path / "saved")
    export.export_saved_model(loaded, "discriminator", out, os.path.join(d, "vocab.txt"))
    m = tf.saved_model.load(out)
    res = m.signatures["serve_text"](text=tf.constant(["hello world"]))
    assert res["input_ids"].shape[1] == 64  # min(128, max_position_embeddings), not an error
