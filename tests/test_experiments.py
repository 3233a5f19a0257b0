"""experiments/efficiency.py: the equal-FLOP plan, and a minuscule end-to-end run."""

import json
import os
import subprocess
import sys

import pytest
from absl import flags

from electra_tf import flops
from electra_tf.pretraining_config import PretrainingConfig
from electra_tf.pretraining_networks import pretraining_flops_per_step as flops_per_step
from experiments import efficiency

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


@pytest.fixture(autouse=True)
def parsed_flags():
    if not flags.FLAGS.is_parsed():
        flags.FLAGS(["efficiency"])


def tiny(objective):
    return PretrainingConfig.from_flat(
        "m",
        "/nonexistent",
        dict(
            objective=objective,
            model_hparam_overrides=dict(
                hidden_size=64, num_hidden_layers=2, num_attention_heads=1, intermediate_size=256
            ),
            embedding_size=64,
            max_seq_length=64,
            train_batch_size=16,
        ),
    )


def step_flops(objective, sparse):
    c = tiny(objective)
    disc, gen = c.model_configs(30522)
    return flops_per_step(c, 30522, sparse_embed_lookup=sparse), disc, gen


def test_plan_counts_the_vocab_as_the_trainer_does(tmp_path, monkeypatch):
    from absl.testing import flagsaver

    # the small-budget recipe's vocab with one line repeated: 15,944 lines, 15,943 entries
    with open(os.path.join(ROOT, "data/vocab/movie_wiki_16k_uncased.txt")) as f:
        lines = f.read().splitlines()
    (tmp_path / "vocab.txt").write_text("\n".join(lines + [lines[-1]]) + "\n")
    monkeypatch.setattr(efficiency, "shards", lambda data_dir: ("train.tfrecord", "held"))
    with open(os.path.join(ROOT, "experiments/recipes/pretrain_small_budget.json")) as f:
        recipe = json.load(f)
    with flagsaver.flagsaver(budgets=["1"], objectives=["electra"], budget_flops=1e15):
        p = efficiency.plan(str(tmp_path), recipe)["electra"]
    # ELECTRA's step at V = 15,943, added up by hand in tests/test_flops_recipe.py
    assert (p["real_flops_per_step"], p["paper_flops_per_step"]) == (
        15_658_732_896,
        43_874_049_600,
    )


@pytest.mark.parametrize("sparse", [True, False])
def test_flops_per_objective(sparse):
    electra, disc, gen = step_flops("electra", sparse)
    electra15, _, _ = step_flops("electra_15", sparse)
    mlm, _, _ = step_flops("mlm", sparse)
    replace, _, _ = step_flops("replace_mlm", sparse)
    assert electra15 == electra  # the discriminator still runs on every token
    # replace MLM = masked LM on the discriminator + the generator's masked LM (9 of 64 masked)
    g = flops.TransformerFlops(
        h=16,
        l=2,
        s=64,
        v=30522,
        e=64,
        i=64,
        heads=1,
        output_frac=9 / 64,
        sparse_embed_lookup=sparse,
    )
    assert gen.hidden_size == 16
    assert replace - mlm == pytest.approx(2 * 16 * g.forward_flops(discriminator=False))
    # sparse lookups: the generator's lookup is free, so ELECTRA costs about what masked LM does
    if sparse:
        assert 1.0 < electra / mlm < 1.1
    else:
        assert electra / mlm > 1.5


def test_recipe_model_hparams_of_the_committed_recipe():
    from electra_tf.recipes import recipe_model_hparams

    with open(os.path.join(ROOT, "experiments", "recipes", "pretrain_small_budget.json")) as f:
        recipe = json.load(f)
    with open(os.path.join(ROOT, recipe["vocab_file"]), encoding="utf-8") as f:
        lines = f.read().split("\n")
    values = recipe_model_hparams(recipe, ROOT)
    # only what shapes the model; the vocab's size counted from its file (one token a line)
    assert set(values) == {"model_size", "model_hparam_overrides", "embedding_size", "vocab_size",
                           "tied_output_embeddings"}  # fmt: skip
    assert values["tied_output_embeddings"] is False  # the pilot's fix for rare-row collapse
    assert values["vocab_size"] == len(lines) - (lines[-1] == "")
    c = PretrainingConfig.from_flat("m", "/nonexistent", values)
    disc, gen = c.model_configs(c.model.vocab_size)
    assert (disc.hidden_size, disc.num_hidden_layers, disc.embedding_size) == (128, 4, 128)
    assert (gen.hidden_size, disc.vocab_size) == (32, values["vocab_size"])


def test_child_command_carries_every_flag_of_the_plan():
    from absl.testing import flagsaver

    with flagsaver.flagsaver(seeds=3, budgets=["0.5", "1"], recipe_overrides='{"a": 1}',
                             validation_split=1000, budget_flops=None):  # fmt: skip
        args = efficiency.child_command("/w", "mlm", baseline=False)
    assert args[:3] == [sys.executable, "-m", "experiments.efficiency"]
    given = dict(a[2:].split("=", 1) for a in args[3:])
    assert given["objectives"] == "mlm" and given["jobs"] == "1" and given["baseline"] == "false"
    assert given["work_dir"] == "/w" and given["out_dir"] == os.path.join("/w", "parts", "mlm")
    assert (given["seeds"], given["budgets"], given["validation_split"]) == ("3", "0.5,1", "1000")
    assert given["recipe_overrides"] == '{"a": 1}' and "budget_flops" not in given
    # every flag that shapes the data, the plan or the fine-tuning reaches the child
    assert set(efficiency.CHILD_FLAGS) - {"budget_flops"} <= set(given)


def test_budget_points_are_whole_checkpoints():
    assert efficiency._quantum([0.25, 0.5, 1.0]) == 4
    assert efficiency._quantum([1.0]) == 1
    assert efficiency._quantum([1 / 3, 2 / 3, 1.0]) == 3


def test_validation_split_holds_out_the_last_sentences(tmp_path):
    movie = tmp_path / "movie"
    movie.mkdir()
    rows = [f"sentence {i}\t{i % 2}" for i in range(10)]
    (movie / "train.tsv").write_text("sentence\tlabel\n" + "\n".join(rows) + "\n", "utf-8")
    (movie / "dev.tsv").write_text("sentence\tlabel\nthe dev set\t1\n", "utf-8")
    task = tmp_path / "task"
    efficiency.write_task_data(str(task), str(movie), validation_split=3)
    read = lambda name: (task / name).read_text("utf-8").splitlines()  # noqa: E731
    assert read("train.tsv") == ["sentence\tlabel"] + rows[:7]
    assert read("dev.tsv") == ["sentence\tlabel"] + rows[7:]
    efficiency.write_task_data(str(task), str(movie))  # the same dir, back to the real split
    assert read("dev.tsv") == ["sentence\tlabel", "the dev set\t1"]
    assert len(read("train.tsv")) == 11
    with pytest.raises(Exception, match="has 10 sentences"):
        efficiency.write_task_data(str(task), str(movie), validation_split=10)


def test_bootstrap_difference_and_intervals():
    import numpy as np

    from experiments import efficiency_report as rep

    rng = np.random.default_rng(0)
    n = 1000
    # arm a is right on 80% of the examples, arm b on 60%, 5 seeds each with small seed noise
    a = np.array([rng.random(n) < 0.80 + 0.01 * k for k in range(5)], np.float64)
    b = np.array([rng.random(n) < 0.60 + 0.01 * k for k in range(5)], np.float64)
    r = rep.bootstrap_difference(a, b, reps=400, seed=1)
    assert r["difference"] == pytest.approx(100 * (np.median(a.mean(1)) - np.median(b.mean(1))))
    assert 15 < r["difference"] < 25 and r["ci95"][0] > 10 and r["verdict"] == "higher"
    same = rep.bootstrap_difference(a, a[::-1], reps=400, seed=2)
    assert same["ci95"][0] < 0 < same["ci95"][1]
    assert same["verdict"] == "not significantly different"
    lo, hi = rep.bootstrap_median(a, reps=400, seed=3)
    assert lo < rep.median_accuracy(a) < hi and hi - lo < 8


def test_summary_has_exactly_the_documented_keys():
    from experiments import efficiency_report as rep

    report = {
        "dev_size": 4,
        "runs": [
            {"objective": "baseline", "budget": 0.0, "dev_accuracy_per_seed": [50.0, 25.0]},
            {
                "objective": "electra",
                "budget": 1.0,
                "train_flops_real": 2e14,
                "dev_accuracy_per_seed": [75.0, 100.0],
                "heldout": {"disc_auc": 0.8},
            },
            {
                "objective": "electra",
                "budget": 0.5,
                "train_flops_real": 1e14,
                "dev_accuracy_per_seed": [50.0, 75.0],
                "heldout": {"disc_auc": 0.7},
            },
        ],
    }
    s = rep.summary(report)
    assert set(s) == {"dev_size", "baseline", "objectives"}
    assert s["baseline"] == {"dev_accuracy_per_seed": [50.0, 25.0]}
    budgets = s["objectives"]["electra"]["budgets"]
    assert [b["train_flops"] for b in budgets] == [1e14, 2e14]  # sorted by FLOPs
    assert set(budgets[0]) == {"train_flops", "dev_accuracy_per_seed", "heldout"}


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("ELECTRA_TF_EXPERIMENT_TESTS"),
    reason="~3 min on 2 cores; set ELECTRA_TF_EXPERIMENT_TESTS=1",
)
def test_end_to_end_minuscule(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    with open(os.path.join(ROOT, "data", "corpus", "enwiki_sample.txt"), encoding="utf-8") as f:
        (corpus / "wiki.txt").write_text("".join(f.readline() for _ in range(400)), "utf-8")
    movie = tmp_path / "movie"
    movie.mkdir()
    for split, n in (("train", 300), ("dev", 100)):
        with open(
            os.path.join(ROOT, "data", "movie_sentiment", f"{split}.tsv"), encoding="utf-8"
        ) as f:
            (movie / f"{split}.tsv").write_text(
                "".join(f.readline() for _ in range(n + 1)), "utf-8"
            )
    model = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 1,
             "intermediate_size": 64}  # fmt: skip
    (tmp_path / "pt.json").write_text(json.dumps(dict(
        model_size="small", model_hparam_overrides=model, embedding_size=32,
        vocab_file="data/vocab/vocab.txt", max_seq_length=32, train_batch_size=8,
        eval_batch_size=8, num_train_steps=8, num_warmup_steps=2, num_eval_steps=2,
        jit_compile=False)))  # fmt: skip
    (tmp_path / "ft.json").write_text(json.dumps(dict(
        max_seq_length=32, num_train_epochs=0.5, learning_rate=1e-3, jit_compile=False)))  # fmt: skip
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "experiments.efficiency",
        f"--work_dir={tmp_path / 'work'}",
        f"--out_dir={out}",
        f"--recipe={tmp_path / 'pt.json'}",
        f"--finetune_recipe={tmp_path / 'ft.json'}",
        f"--corpus_dir={corpus}",
        f"--movie_data={movie}",
        "--objectives=electra,mlm",
        "--budgets=0.5,1",
        "--seeds=2",
        "--bootstrap=100",
        "--jobs=2",  # each objective in its own process; the parent finds their runs done
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # the interim outputs (the baseline alone has no held-out curve) draw no empty legend
    assert "No artists with labels" not in proc.stderr
    report = json.loads((out / "efficiency.json").read_text())
    runs = {(r["objective"], r["budget"]): r for r in report["runs"]}
    assert set(runs) == {("baseline", 0.0), ("electra", 0.5), ("electra", 1.0), ("mlm", 0.5),
                         ("mlm", 1.0)}  # fmt: skip
    plan = report["settings"]["plan"]
    for (obj, budget), r in runs.items():
        if obj == "baseline":
            continue
        assert r["steps"] == plan[obj]["points"][str(budget)]
        assert r["train_flops_real"] == pytest.approx(r["steps"] * plan[obj]["real_flops_per_step"])
        # the reported accuracies equal those recomputed from the predictions files
        assert r["dev_accuracy_per_seed"] == pytest.approx(r["reported"], abs=1e-6)
    summary = json.loads((out / "efficiency_summary.json").read_text())
    assert summary["dev_size"] == 100 and len(summary["baseline"]["dev_accuracy_per_seed"]) == 2
    assert "| ELECTRA vs masked LM (BERT) | 1 |" in (out / "efficiency.md").read_text()
