"""experiments/transfer_report.py: the paired difference and its joint bootstrap, by hand."""

import numpy as np
import pytest

from experiments import transfer_report


def test_mean_of_per_seed_paired_differences():
    a = np.array([[1, 1, 0, 0], [1, 0, 1, 0]], float)
    b = np.array([[1, 0, 0, 0], [0, 0, 1, 0]], float)
    d = transfer_report.paired_difference(a, b, reps=200)
    assert d["mean_diff"] == pytest.approx(25.0)  # (1/4 + 1/4) / 2 seeds
    assert d["seeds"] == 2
    with pytest.raises(ValueError, match="same seeds"):
        transfer_report.paired_difference(a, b[:1], reps=10)


def test_the_bootstrap_resamples_seeds():
    # seed 0: A right everywhere B is wrong; seed 1: no difference. Resampling sentences alone
    # would give exactly 50 every time; drawing the two seeds gives 0, 50 or 100 (1/4, 1/2, 1/4)
    a = np.array([[1] * 50, [1] * 50], float)
    b = np.array([[0] * 50, [1] * 50], float)
    d = transfer_report.paired_difference(a, b, reps=4000)
    assert d["mean_diff"] == pytest.approx(50.0)
    assert d["ci95"] == pytest.approx([0.0, 100.0])


def test_the_bootstrap_resamples_sentences():
    # one seed, half the sentences +1: the interval is the binomial one, 50 +- 1.96 * 5
    a = np.array([[1] * 50 + [0] * 50], float)
    b = np.zeros_like(a)
    lo, hi = transfer_report.paired_difference(a, b, reps=4000)["ci95"]
    assert lo == pytest.approx(50 - 1.96 * 5, abs=1.5)
    assert hi == pytest.approx(50 + 1.96 * 5, abs=1.5)
    # and a constant difference has no spread at all
    assert transfer_report.paired_difference(a * 0 + 1, b, reps=100)["ci95"] == [100.0, 100.0]


def test_a_partial_report_lists_only_the_arms_it_has():
    """A report of some arms (a confirmation: ELECTRA and random init only) leaves the planned
    but unrun arm out of the summary and the table; a run without a discriminator shows no
    AUC."""
    plan = {name: {"objective": obj, "budget": 1.0, "steps": 10, "train_flops_real": 1e14,
                   "paper_flops_per_step": 1.0} for name, obj in (("pt_electra_1e14", "electra"),
                                                                  ("pt_mlm_1e14", "mlm"))}  # fmt: skip
    # seeds 0 and 1, each arm at both: random init 2 of 4 right, ELECTRA 3 of 4
    results = [{"split": "dev", "n": "300", "seed": seed, "arm": arm, "pretrained": "pt_electra_1e14",
                "accuracy": 100.0 * correct.count("1") / 4, "correct": correct}
               for seed in (0, 1) for arm, correct in (("random_init", "1100"), ("electra", "1110"))]  # fmt: skip
    pretraining = {"pt_mlm_1e14": {"heldout": {"masked_lm_accuracy": 0.24}}}
    selection = {"grid": [], "chosen": {}, "base": {}, "label_count": 1000, "seeds": 3}
    out = transfer_report.summarise(results, pretraining, selection, plan, 50, 4)
    assert sorted(out["summary"]["arms"]) == ["electra", "random_init"]
    assert out["summary"]["paired"]["electra_vs_random_init"]["300"]["mean_diff"] == 25.0
    text = transfer_report.markdown(out["full"])
    assert "masked LM" not in text
    assert "| pt_mlm_1e14 | 1.00e+14 | 0.240 | — |  |" in text
