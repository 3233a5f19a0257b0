"""experiments/efficiency.py: the equal-FLOP plan, and a minuscule end-to-end run."""

import json
import os
import subprocess
import sys

import pytest
from absl import flags

from electra_tf import flops
from electra_tf.modeling.builders import flops_per_step
from electra_tf.pretraining_config import PretrainingConfig

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "experiments"))

import efficiency  # noqa: E402


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


def test_steps_for_budget():
    assert efficiency.steps_for_budget(100.0, 3.0, 3) == 33
    assert efficiency.steps_for_budget(100.0, 7.0, 3) == 12  # 14 -> a multiple of 3
    assert efficiency.steps_for_budget(1.0, 7.0, 3) == 3  # at least one step per checkpoint


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("ELECTRA_TF_EXPERIMENT_TESTS"),
    reason="~40 s on an idle 2-core machine (minutes when loaded); set ELECTRA_TF_EXPERIMENT_TESTS=1",
)
def test_end_to_end_minuscule(tmp_path):
    corpus = tmp_path / "corpus.txt"
    with open(os.path.join(ROOT, "data", "corpus", "enwiki_sample.txt"), encoding="utf-8") as f:
        corpus.write_text("".join(f.readline() for _ in range(250)), encoding="utf-8")
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        os.path.join(ROOT, "experiments", "efficiency.py"),
        f"--work_dir={tmp_path / 'work'}",
        f"--out_dir={out}",
        f"--pretraining_corpus={corpus}",
        "--objectives=electra",
        "--hidden_size=32",
        "--num_layers=1",
        "--seq_len=32",
        "--batch_size=4",
        "--budget_electra_steps=2",
        "--num_checkpoints=1",
        "--ft_trials=1",
        "--ft_epochs=0.2",
        "--nobaseline",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((out / "efficiency.json").read_text())
    (run,) = report["runs"]
    assert run["objective"] == "electra" and run["step"] == 2
    plan = report["settings"]["plan"]["electra"]
    assert run["pretrain_flops"] == pytest.approx(2 * plan["flops_per_step_sparse"])
    assert len(run["dev_accuracy"]) == 1 and 0 <= run["median"] <= 100
    assert "| ELECTRA | 1.00 | 2 |" in (out / "efficiency.md").read_text()
    try:
        import matplotlib  # noqa: F401  (optional: experiments/requirements.txt)
    except ImportError:
        return
    assert (out / "efficiency.png").stat().st_size > 1000
