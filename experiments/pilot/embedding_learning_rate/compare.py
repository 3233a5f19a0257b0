"""The sixth pilot round's comparisons: difference of median validation accuracy with a 95%
bootstrap interval (experiments/efficiency_report.py). The paths are the pilot machine's work
dirs (run_finetuning.py model dirs under DATA_DIR/models/)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from efficiency import correct_per_seed, dev_labels  # noqa: E402
from efficiency_report import bootstrap_difference, correct_matrix, median_accuracy  # noqa: E402


def correct(data_dir: str, name: str, random_init: bool = False, seeds: int = 3):
    """[seeds, sentences] 0/1 from the run's prediction files and the split's labels."""
    folder = "results_random_init" if random_init else "results"
    results = os.path.join(data_dir, "models", name, folder)
    return correct_matrix(correct_per_seed(results, dev_labels(data_dir), seeds))


WIKI, MIX = "/work/pilot/v30/data", "/work/s5/mix/data"
PAIRS = [
    ("wiki mlm x0 vs wiki mlm x1", (WIKI, "s8_v30_mlm_emb0"), (WIKI, "s6_v30_mlm_r4")),
    ("wiki electra x0 vs wiki electra x1",
     (WIKI, "s8_v30_electra_emb0"), (WIKI, "s6_v30_electra_r4")),
    ("wiki mlm x4 vs random x4", (WIKI, "s8_v30_mlm_emb4"), (WIKI, "s8_v30_random_emb4", True)),
    ("wiki electra x4 vs random x4",
     (WIKI, "s8_v30_electra_emb4"), (WIKI, "s8_v30_random_emb4", True)),
    ("mix electra x4 vs random x4",
     (MIX, "s8_mix_electra_emb4"), (MIX, "s8_mix_random_emb4", True)),
]  # fmt: skip

if __name__ == "__main__":
    for label, a_run, b_run in PAIRS:
        a, b = correct(*a_run), correct(*b_run)
        r = bootstrap_difference(a, b, 2000, 0)
        lo, hi = r["ci95"]
        print(f"{label}: {median_accuracy(a):.1f} vs {median_accuracy(b):.1f}: "
              f"{r['difference']:+.1f} [{lo:+.1f}, {hi:+.1f}]")  # fmt: skip
