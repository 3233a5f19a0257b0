"""Reading fine-tuning results back, for the experiments: the dev labels of a task directory and
each trial's right/wrong string over the dev sentences (from the runner's prediction files)."""

import os
from typing import List

from electra_tf import data_layout
from electra_tf.errors import UserError


def dev_labels(data_dir: str, task: str = "sst") -> List[str]:
    dev = os.path.join(data_layout.finetuning_data_dir(data_dir, task), "dev.tsv")
    with open(dev, encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t")[-1] for line in f.readlines()[1:] if line.strip()]


def correct_per_seed(
    results_dir: str, labels: List[str], seeds: int, task: str = "sst"
) -> List[str]:
    """One string of "0"/"1" per trial (right or wrong on each dev sentence), from the trials'
    prediction files in `results_dir`."""
    correct = []
    for trial in range(1, seeds + 1):
        suffix = "" if trial == 1 else f"_trial{trial}"
        with open(
            os.path.join(results_dir, f"{task}_dev_predictions{suffix}.tsv"), encoding="utf-8"
        ) as f:
            preds = [line.rstrip("\n").split("\t")[1] for line in f.readlines()[1:]]
        if len(preds) != len(labels):
            raise UserError(f"{results_dir}: {len(preds)} predictions for {len(labels)} dev rows")
        correct.append("".join("1" if p == g else "0" for p, g in zip(preds, labels)))
    return correct
