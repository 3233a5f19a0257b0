"""The sixth pilot round's comparisons: difference of median validation accuracy with a 95%
bootstrap interval (experiments/efficiency_report.py). The paths are the pilot machine's work
dirs (run_finetuning.py model dirs under DATA_DIR/models/)."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from efficiency_report import bootstrap_difference, median_accuracy  # noqa: E402


def correct(data_dir: str, name: str, random_init: bool = False, seeds: int = 3) -> np.ndarray:
    """[seeds, sentences] 0/1 from the run's prediction files and the split's labels."""
    with open(f"{data_dir}/finetuning_data/sst/dev.tsv", encoding="utf-8") as f:
        labels = [line.split("\t")[1].strip() for line in f.read().splitlines()[1:] if line]
    results = f"{data_dir}/models/{name}/results" + ("_random_init" if random_init else "")
    rows = []
    for trial in range(1, seeds + 1):
        suffix = "" if trial == 1 else f"_trial{trial}"
        with open(f"{results}/sst_dev_predictions{suffix}.tsv", encoding="utf-8") as f:
            preds = [line.split("\t")[1] for line in f.read().splitlines()[1:]]
        rows.append([p == g for p, g in zip(preds, labels)])
    return np.array(rows, np.float64)


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
