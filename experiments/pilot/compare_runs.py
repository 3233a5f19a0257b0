"""Pilot comparisons of fine-tuning runs: difference of median validation accuracy with a 95%
bootstrap interval over sentences and seeds (experiments/efficiency_report.py), from the
runs' prediction files. A run is (DATA_DIR, MODEL_NAME) or (DATA_DIR, MODEL_NAME, True) for a
`random_init` run (its results are in results_random_init/)."""

from typing import Sequence, Tuple

from electra_tf import run_dir
from experiments.efficiency_report import bootstrap_difference, correct_matrix, median_accuracy
from experiments.finetune_results import correct_per_seed, dev_labels


def correct(data_dir: str, name: str, random_init: bool = False, seeds: int = 3):
    """[seeds, sentences] 0/1 from the run's prediction files and the split's labels."""
    results = run_dir.RunDirectory(run_dir.model_dir(data_dir, name)).results_dir(random_init)
    return correct_matrix(correct_per_seed(results, dev_labels(data_dir), seeds))


def _per_seed(m) -> str:
    return ", ".join(f"{x:.1f}" for x in m.mean(axis=1) * 100)


def compare(pairs: Sequence[Tuple[str, tuple, tuple]], seeds: int = 3) -> None:
    """Prints, for each (label, run_a, run_b), the per-seed accuracies and a − b."""
    for label, a_run, b_run in pairs:
        a, b = correct(*a_run, seeds=seeds), correct(*b_run, seeds=seeds)
        r = bootstrap_difference(a, b, 2000, 0)
        lo, hi = r["ci95"]
        print(f"{label}: [{_per_seed(a)}] vs [{_per_seed(b)}]; medians {median_accuracy(a):.1f} vs "
              f"{median_accuracy(b):.1f}: {r['difference']:+.1f} [{lo:+.1f}, {hi:+.1f}]")  # fmt: skip
