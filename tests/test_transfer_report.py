"""experiments/transfer_report.py: the paired difference and its joint bootstrap, by hand."""

import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "experiments"))

import transfer_report  # noqa: E402


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
