"""Custom fine-tuning tasks described only by a task.json: a 3-label classification task (columns
by name), a regression task (columns by index), a CoNLL tagging task, trained together with a
built-in one; the reported metrics recomputed from the predictions files; the task defaults;
the kept model's export; and every bad task.json a one-line error naming it."""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf
from harness import error_line, run_script
from test_finetune_run import DATA, ROOT, dummy_batch, save_name_based, tiny_config

from electra_tf import export
from electra_tf.errors import UserError
from electra_tf.finetune.config import FinetuningConfig
from electra_tf.finetune.registry import get_task
from electra_tf.finetune.runner import run_finetuning
from electra_tf.finetune.scorers import matthews_corrcoef, pearson
from electra_tf.finetune.tagging.scorer import span_prf
from electra_tf.modeling.encoder import TransformerEncoder

TOPICS = {
    "sport": "ball goal team match player run",
    "food": "bread cheese apple soup eat cook",
    "music": "song guitar sing band drum play",
}
TOPIC = {
    "type": "classification",
    "format": "tsv",
    "header": True,
    "text_a": "sentence",
    "text_b": None,
    "label": "topic",
    "metrics": ["accuracy", "mcc"],
    "max_seq_length": 24,
    "num_train_epochs": 2,
    "learning_rate": 2e-3,
}
SCORE = {"type": "regression", "text_a": 1, "text_b": 2, "label": 0, "metrics": ["pearson"]}
TAGS = {"type": "tagging", "format": "conll", "text_a": 0, "label": 1}
HPARAMS = dict(train_batch_size=4, eval_batch_size=4, jit_compile=False, seed=1, log_every_steps=5)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def topic_rows(n, seed):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        label = sorted(TOPICS)[i % 3]
        rows.append((f"x{i}", " ".join(rng.choice(TOPICS[label].split(), 5)), label))
    return rows


def make_tasks(data: str) -> None:
    topic = os.path.join(data, "finetuning_data", "topic")
    for split, n in (("train", 12), ("dev", 9)):
        lines = ["id\tsentence\ttopic"] + ["\t".join(r) for r in topic_rows(n, len(split))]
        write(f"{topic}/{split}.tsv", "\n".join(lines) + "\n")
    write(f"{topic}/test.tsv", "id\tsentence\nt0\tball goal\nt1\tsoup bread\n")
    write(f"{topic}/task.json", json.dumps(TOPIC))
    score = os.path.join(data, "finetuning_data", "score")
    pairs = [("the cat sat", "a cat sat"), ("dogs run", "the mat"), ("hello world", "hello")]
    for split in ("train", "dev"):
        rows = [f"{0.5 + i}\t{a}\t{b}" for i, (a, b) in enumerate(pairs * 2)]
        write(f"{score}/{split}.tsv", "\n".join(rows) + "\n")
    write(f"{score}/task.json", json.dumps(SCORE))
    tags = os.path.join(data, "finetuning_data", "tags")
    sentence = "Alice B-PER x\nmet O x\nBob B-PER x\nin O x\nParis B-LOC x\n\n"
    write(f"{tags}/train.txt", sentence * 3)
    write(f"{tags}/dev.txt", "Paris B-LOC x\nmet O x\nAlice B-PER x\n\n" + sentence)
    write(f"{tags}/task.json", json.dumps(TAGS))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("custom"))
    model_dir = os.path.join(d, "models", "tiny")
    os.makedirs(model_dir)
    cfg = tiny_config()
    with open(os.path.join(model_dir, "config.json"), "w") as f:
        json.dump({"model_size": "small", "model_config": cfg.to_dict()}, f)
    tf.keras.utils.set_random_seed(0)
    enc = TransformerEncoder(cfg)
    b = dummy_batch()
    enc(b["input_ids"], b["input_mask"], b["segment_ids"])
    save_name_based(enc.weights, os.path.join(model_dir, "model.ckpt-1"))
    shutil.copy(os.path.join(ROOT, "data", "vocab", "vocab.txt"), os.path.join(d, "vocab.txt"))
    shutil.copytree(os.path.join(DATA, "sst"), os.path.join(d, "finetuning_data", "sst"))
    make_tasks(d)
    return d


def lines_of(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def test_task_defaults_come_from_task_json(data):
    one = FinetuningConfig("tiny", data, task_names=["topic"])
    assert (one.max_seq_length, one.num_train_epochs, one.learning_rate) == (24, 2.0, 2e-3)
    # with a built-in task: the usual rule (the largest), and the smallest learning rate set
    both = FinetuningConfig("tiny", data, task_names=["topic", "sst"])
    assert (both.max_seq_length, both.num_train_epochs, both.learning_rate) == (128, 3.0, 2e-3)
    assert FinetuningConfig("tiny", data, task_names=["tags"]).max_seq_length == 256  # tagging's
    assert FinetuningConfig("tiny", data, task_names=["score"]).learning_rate == 3e-4  # small's
    task = get_task(one, "topic", None)
    assert task.label_list == ("food", "music", "sport") and task.export_kind == "classification"
    tags = get_task(FinetuningConfig("tiny", data, task_names=["tags"]), "tags", None)
    assert tags.label_list == sorted(["O"] + [f"{p}-{t}" for t in ("LOC", "PER") for p in "BIES"])


def test_custom_tasks_train_with_a_built_in_one_and_their_metrics_recompute(data):
    names = ["topic", "score", "tags", "sst"]
    config = FinetuningConfig(
        "tiny", data, task_names=names, write_test_outputs=False, keep_all_models=True,
        max_seq_length=24, num_train_epochs=1.0, **HPARAMS,
    )  # fmt: skip
    out = run_finetuning(config)
    results = os.path.join(data, "models", "tiny", "results")
    topic = json.loads("\n".join(lines_of(os.path.join(results, "topic.json"))))
    dev = topic["trials"][0]["dev"]
    assert set(dev) == {"accuracy", "mcc", "loss"} and topic["trained_with"] == names
    # accuracy and MCC recomputed from the predictions file and the dev file
    predicted = [
        l.split("\t") for l in lines_of(os.path.join(results, "topic_dev_predictions.tsv"))
    ]
    assert predicted[0] == ["id", "prediction"] and len(predicted) == 10
    gold = [r.split("\t")[2] for r in lines_of(f"{data}/finetuning_data/topic/dev.tsv")[1:]]
    pred = [p for _, p in predicted[1:]]
    assert [int(i) for i, _ in predicted[1:]] == list(range(9))
    assert set(pred) <= set(TOPICS)
    assert dev["accuracy"] == pytest.approx(100.0 * np.mean([p == g for p, g in zip(pred, gold)]))
    index = {label: i for i, label in enumerate(sorted(TOPICS))}
    mcc = matthews_corrcoef([index[g] for g in gold], [index[p] for p in pred])
    assert dev["mcc"] == pytest.approx(100.0 * mcc)
    assert topic["majority_class"]["dev"]["accuracy"] == pytest.approx(100 / 3)
    # regression: only pearson (and loss), on the labels' own scale
    score = out["score"]["trials"][0]["dev"]
    assert set(score) == {"pearson", "loss"}
    got = [float(l.split("\t")[1]) for l in lines_of(f"{results}/score_dev_predictions.tsv")[1:]]
    targets = [0.5 + i for i in range(6)]
    # (the file holds 6 significant digits, and barely trained predictions vary little)
    assert score["pearson"] == pytest.approx(100.0 * pearson(targets, got), abs=0.01)
    # tagging: span F1 recomputed from the BIO predictions
    tags = [l.split("\t")[1].split() for l in lines_of(f"{results}/tags_dev_predictions.tsv")[1:]]
    gold_tags = [["B-LOC", "O", "B-PER"], ["B-PER", "O", "B-PER", "O", "B-LOC"]]
    assert [len(t) for t in tags] == [3, 5]
    assert out["tags"]["trials"][0]["dev"]["f1"] == pytest.approx(
        100 * span_prf(gold_tags, tags)[2]
    )
    assert set(out["sst"]["median"]["dev"]) == {"accuracy", "loss"}
    # the kept model exports with serve_text_<task> for the custom tasks
    kept = os.path.join(data, "models", "tiny", "finetuning_models", "_".join(names) + "_model_1")
    loaded = export.load_finetuned(kept, os.path.join(kept, "vocab.txt"))
    out_dir = os.path.join(data, "exported")
    module = export.export_finetuned_saved_model(loaded, out_dir)
    assert {"serve_text_topic", "serve_text_pair_score", "serve_text_tags"} <= set(
        export.finetuned_signature_names(module)
    )
    served = tf.saved_model.load(out_dir).signatures["serve_text_topic"](
        text=tf.constant(["ball goal", "soup"])
    )
    assert {s.decode() for s in served["label"].numpy()} <= set(TOPICS)
    info = json.loads(
        "\n".join(lines_of(os.path.join(out_dir, "assets.extra", "export_config.json")))
    )
    assert info["label_lists"]["topic"] == sorted(TOPICS) and info["tasks"]["score"] == "regression"


def bad(data, tmp_path, name, spec=None, files=None):
    """A copy of `name`'s directory with its task.json and files replaced; the error raised."""
    d = str(tmp_path / "data")
    shutil.copytree(os.path.join(data, "finetuning_data", name), f"{d}/finetuning_data/{name}")
    if spec is not None:
        write(
            f"{d}/finetuning_data/{name}/task.json",
            spec if isinstance(spec, str) else json.dumps(spec),
        )
    for filename, text in (files or {}).items():
        write(f"{d}/finetuning_data/{name}/{filename}", text)
    with pytest.raises(UserError) as e:
        config = FinetuningConfig("tiny", d, task_names=[name], max_seq_length=16)
        task = get_task(config, name, None)
        for split in ("train", "dev"):
            task.get_examples(split)
        task.make_head()
    return str(e.value)


@pytest.mark.parametrize(
    "change, match",
    [
        ({"epochs": 3}, "task.json: unknown key(s) epochs; valid: type, format"),
        ({"metrics": ["bleu"]}, "task.json: metrics: unknown metric 'bleu' (a classification"),
        ({"metrics": ["span_f1"]}, "metrics: not a metric of classification tasks 'span_f1'"),
        ({"metrics": ["f1"]}, "task.json: metrics: f1 is the F1 of the second label of two"),
        ({"header": False}, "task.json: text_a: column name 'sentence' needs \"header\": true"),
        ({"text_a": "text"}, "topic/train.tsv:1: no column 'text' ("),
        ({"text_a": 7, "header": True, "label": 2}, "topic/train.tsv:2: expected at least 8"),
        ({"type": "sentiment"}, "task.json: type: expected one of classification, regression"),
        ({"format": "conll"}, "task.json: format: a classification task reads 'tsv'"),
        (
            {"labels": ["food", "sport"]},
            "train.tsv:3: label 'music' is not one of the task's labels",
        ),
        ({"max_seq_length": "long"}, "task.json: max_seq_length: expected a positive integer"),
    ],
)
def test_bad_task_json_is_one_error_naming_it(data, tmp_path, change, match):
    assert match in bad(data, tmp_path, "topic", {**TOPIC, **change})


def test_bad_data_is_an_error_naming_the_file_and_line(data, tmp_path):
    dev = "id\tsentence\ttopic\na\tball\tsport\nb\tsong\tpoetry\n"
    msg = bad(data, tmp_path, "topic", files={"dev.tsv": dev})
    assert (
        "topic/dev.tsv:3: label 'poetry' is not one of the task's labels (from the train file"
        in msg
    )
    assert (
        "dev.txt:2: tag 'B-ORG' is of a type not among the task's (from the train file: LOC, PER)"
        in (bad(data, tmp_path / "t", "tags", files={"dev.txt": "Paris B-LOC\nAcme B-ORG\n"}))
    )
    assert "task.json: not valid JSON (line 1" in bad(data, tmp_path / "j", "score", "{'type':")
    assert "labels: a regression task has no label list" in bad(
        data, tmp_path / "r", "score", {**SCORE, "labels": ["1"]}
    )


def test_a_built_in_name_cannot_be_a_custom_task(data, tmp_path):
    d = str(tmp_path)
    write(f"{d}/finetuning_data/sst/task.json", json.dumps(TOPIC))
    with pytest.raises(UserError, match="sst/task.json: sst is a built-in task"):
        FinetuningConfig("tiny", d, task_names=["sst"]).max_seq_length
    with pytest.raises(
        UserError, match="or a directory .*finetuning_data/nope/ holding a task.json"
    ):
        get_task(FinetuningConfig("tiny", d, task_names=["nope"]), "nope", None)


@pytest.mark.slow
def test_cli_error_for_a_bad_task_json(data, tmp_path):
    d = str(tmp_path)
    shutil.copytree(os.path.join(data, "finetuning_data", "topic"), f"{d}/finetuning_data/topic")
    write(f"{d}/finetuning_data/topic/task.json", json.dumps({**TOPIC, "metrics": ["bleu"]}))
    p = run_script(
        "run_finetuning.py",
        f"--data_dir={d}",
        "--model_name=x",
        '--hparams={"task_names": ["topic"]}',
    )
    assert "task.json: metrics: unknown metric 'bleu'" in error_line(p)
