"""The Chinese experiment's scoring and statistics (experiments/chinese/report.py) on hand-made
counts, and its plan (experiments/chinese/transfer.py) against the declared test's cells
(experiments/chinese/README.md)."""

import os
import subprocess
import sys

import numpy as np
import pytest

from experiments import transfer_report
from experiments.chinese import report, tasks

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_discriminator_baseline_from_a_hand_made_confusion_matrix():
    # 1,000 tokens, 130 replaced; 5 predicted replaced, 3 of them rightly
    metrics = {"disc_accuracy": (1000 - 2 - 127) / 1000, "disc_precision": 3 / 5,
               "disc_recall": 3 / 130}  # fmt: skip
    got = report.discriminator_baseline(metrics)
    assert got["replaced_share"] == pytest.approx(0.13)
    # -(0.13 ln 0.13 + 0.87 ln 0.87) = 0.13 * 2.04022 + 0.87 * 0.139262
    assert got["constant_guess_loss"] == pytest.approx(0.265229 + 0.121158, abs=1e-5)
    assert report.discriminator_baseline({**metrics, "disc_recall": 0.0}) is None
    assert report.discriminator_baseline({"masked_lm_accuracy": 0.2}) is None  # masked LM


def test_per_sentence_span_counts_from_bio_predictions_against_bioes_gold(tmp_path):
    task_dir = tmp_path / "finetuning_data" / tasks.TAGGING
    task_dir.mkdir(parents=True)
    # sentence 1: 中 S-ns | 国人 B-n E-n ; sentence 2: 我 S-r | 爱 S-v | 他们 B-r E-r
    (task_dir / "dev.txt").write_text(
        "中\tS-ns\n国\tB-n\n人\tE-n\n\n我\tS-r\n爱\tS-v\n他\tB-r\n们\tE-r\n", encoding="utf-8"
    )
    predictions = tmp_path / "pred.tsv"
    # the runner writes BIO: sentence 1 right; sentence 2: 我 right, 爱们 wrong (爱他 as one v)
    predictions.write_text(
        "id\tprediction\n0\tB-ns B-n I-n\n1\tB-r B-v I-v B-r\n", encoding="utf-8"
    )
    got = report.per_example(tasks.TAGGING, str(tmp_path), str(predictions))
    # sentence 2: gold {我 r, 爱 v, 他们 r}; predicted {我 r, 爱他 v, 们 r}: 1 correct of 3 and 3
    assert got == "2/2/2 1/3/3"
    # F1 over the summed counts: 3 correct of 5 predicted and 5 gold
    assert report.score(tasks.TAGGING, got) == pytest.approx(60.0)


def test_paired_f1_difference_is_the_mean_of_per_seed_f1_differences():
    a = np.array([[[1, 1, 1], [0, 1, 1], [2, 2, 2]], [[1, 1, 1], [1, 1, 1], [2, 2, 2]]])
    b = np.array([[[0, 1, 1], [0, 1, 1], [1, 2, 2]], [[1, 1, 1], [0, 0, 1], [2, 2, 2]]])
    # seed 0: a 3/4/4 -> F1 75, b 1/4/4 -> 25; seed 1: a 4/4/4 -> 100, b 3/3/4 -> P 1, R 0.75,
    # F1 6/7: differences 50 and 100/7, mean 25 + 50/7
    d = report.paired_f1_difference(a, b, reps=400)
    assert d["mean_diff"] == pytest.approx(25 + 50 / 7)
    assert d["seeds"] == 2 and d["ci95"][0] <= d["mean_diff"] <= d["ci95"][1]
    # an arm against itself: every replicate is 0
    assert report.paired_f1_difference(a, a, reps=50)["ci95"] == [0.0, 0.0]
    # with one sentence kind only, resampling sentences changes nothing: the interval is the
    # seeds' (seed differences 50 and 50)
    one = report.paired_f1_difference(
        a[:, 2:] * 0 + [[[1, 1, 1]]], a[:, 2:] * 0 + [[[0, 1, 1]]], 50
    )
    assert one["mean_diff"] == pytest.approx(100.0) and one["ci95"] == [100.0, 100.0]


def test_summary_claims_use_span_f1_for_tagging_and_accuracy_for_sentiment():
    def run(task, n, arm, seed, per_example):
        return {"task": task, "n": n, "arm": arm, "seed": seed, "per_example": per_example,
                "score": report.score(task, per_example)}  # fmt: skip

    results = []
    for seed in (100, 101):
        results.append(run(tasks.TAGGING, "300", "electra", seed, "1/1/1 1/1/1"))
        results.append(run(tasks.TAGGING, "300", "random_init", seed, "0/1/1 0/2/1"))
        results.append(run(tasks.SENTIMENT, "300", "electra", seed, "1101"))
        results.append(run(tasks.SENTIMENT, "300", "random_init", seed, "1001"))
    s = report.summarise(results, reps=200)
    tag = s["paired"][tasks.TAGGING]["300"]["electra_vs_random_init"]
    # random init finds no span of 2 gold (P 0): F1 0 whatever the resampled sentences
    assert tag["mean_diff"] == pytest.approx(100.0) and tag["positive_seeds"] == 2
    assert tag["ci95"] == [100.0, 100.0]
    sent = s["paired"][tasks.SENTIMENT]["300"]["electra_vs_random_init"]
    ones = lambda x: np.array([[c == "1" for c in x]] * 2, np.float64)  # noqa: E731
    want = transfer_report.paired_difference(ones("1101"), ones("1001"), 200)
    assert sent == {**want, "positive_seeds": 2}
    claims = {(c["n"], c["comparison"]): c["holds"] for c in s["claims"]}
    assert claims[("300", "electra - random_init")] is True
    assert claims[("1000", "electra - random_init")] is None  # not run


def test_the_plan_has_the_declared_cells():
    # in a subprocess: the driver defines absl flags that other experiment modules define too
    code = """
from absl import flags
from experiments.chinese import transfer as t
flags.FLAGS(["x", "--data_dir=/nonexistent"])
chosen = {a: {"hparams": t.grid(a)[0]} for a in t.SELECT_ARMS}
runs = t.evaluation_runs(chosen, list(t.ARM_SOURCE))
cells = {}
for r in runs:
    cells.setdefault((r["task"], r["n"], r["arm"]), []).append(r["seed"])
pos, sent = "chinese_pos", "chinese_sentiment"
for arm in ("random_init", "electra", "electra_embeddings", "mlm"):
    assert cells[(pos, "300", arm)] == cells[(pos, "1000", arm)] == list(range(100, 110))
    assert cells[(pos, "all", arm)] == list(range(100, 105))
    for n in ("300", "1000", "all"):
        assert cells[(sent, n, arm)] == list(range(100, 105))
assert cells[(pos, "1000", "electra_char")] == list(range(100, 110))
assert len(runs) == 4 * (10 + 10 + 5) + 10 + 4 * 15 == 170, len(runs)
emb = [r for r in runs if r["arm"] == "electra_embeddings"][0]
assert emb["hparams"]["reinit_top_layers"] == 4 and emb["pretrained"] == "electra_wwm"
assert len({r["key"] for r in runs}) == len(runs)
# the claims' cells come first, seed-major
first = runs[:60]
assert {(r["task"], r["n"]) for r in first} == {(pos, "300"), (pos, "1000")}
assert {r["arm"] for r in first} == {"random_init", "electra", "electra_embeddings"}
assert [r["seed"] for r in first[:6]] == [100] * 6
mlm = [r for r in runs if r["arm"] == "mlm"][0]
assert mlm["hparams"] == chosen["electra"]["hparams"] and mlm["pretrained"] == "mlm_wwm"
sel = t.selection_runs(t.SELECT_ARMS)
assert len(sel) == 2 * (7 + 5), len(sel)  # seeds 0-1, tagging, ELECTRA's 7 and random init's 5
assert {r["task"] for r in sel} == {pos} and {r["seed"] for r in sel} == {0, 1}
assert {r["split"] for r in sel} == {"validation"} and {r["n"] for r in sel} == {"1000"}
h = t.run_hparams(t.make_run(pos, "dev", "300", 100, "random_init", t.RANDOM_INIT_GRID[0]))
assert h["random_init"] and h["task_names"] == [pos] and abs(h["num_train_epochs"] - 100 / 3) < 1e-9
assert t.run_hparams(t.make_run(pos, "dev", "all", 100, "electra", t.PRETRAINED_GRID[0]))[
    "num_train_epochs"] == 2.0
"""
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-3000:]
