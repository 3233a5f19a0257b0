"""The movie task's fine-tuning data as the in-domain transfer experiment draws it (and the demo
replays it): the training pool (the train file less its last VALIDATION_SPLIT sentences, the
selection split), nested seeded label subsets of it, and the epochs that give every label count
the same number of updates. `experiments/transfer_data.py` draws with these functions.
"""

import functools
import os
from typing import List, Optional, Tuple

from electra_tf import data_layout
from electra_tf.io_utils import write_atomically

# The train file's last sentences: the validation split the fine-tuning grid is chosen on.
VALIDATION_SPLIT = 1000
# The fine-tuning recipes' epochs are for this many labels (other counts: the same updates).
RECIPE_LABEL_COUNT = 1000


@functools.lru_cache(maxsize=None)  # read once per process, however many runs ask
def task_rows(movie_data: str, validation: int = VALIDATION_SPLIT) -> Tuple[str, list, list, list]:
    """(header, the pool the label subsets are drawn from, the validation rows, the dev rows)."""
    with open(os.path.join(movie_data, "train.tsv"), encoding="utf-8") as f:
        header, *rows = [line for line in f.read().splitlines() if line.strip()]
    with open(os.path.join(movie_data, "dev.tsv"), encoding="utf-8") as f:
        dev = [line for line in f.read().splitlines()[1:] if line.strip()]
    return header, rows[:-validation], rows[-validation:], dev


def label_subset(pool: List[str], n: Optional[int], seed: int) -> List[str]:
    """The first n of seed's permutation of the pool (nested across n; None: all of it)."""
    import numpy as np

    order = np.random.default_rng(1000 + seed).permutation(len(pool))
    return [pool[i] for i in order[: len(pool) if n is None else n]]


def epochs_for(n_label: str, pool_size: int, base_epochs: float) -> float:
    """The recipe's epochs are for RECIPE_LABEL_COUNT labels; other counts get the same number of
    updates (at least 2 epochs). `n_label`: a count, or "all"."""
    n = pool_size if n_label == "all" else int(n_label)
    return max(2.0, base_epochs * float(RECIPE_LABEL_COUNT) / n)


def write_sst_task(
    data_dir: str, movie_data: str, split: str, n_label: str, seed: int,
    validation: int = VALIDATION_SPLIT,
) -> str:  # fmt: skip
    """Makes DATA_DIR's `sst` task train on seed's subset of n_label sentences and score on
    `split` (`validation` or `dev`); files are rewritten only when their text differs. Returns
    the task's directory."""
    header, pool, validation_rows, dev = task_rows(movie_data, validation)
    n = None if n_label == "all" else int(n_label)
    if n is not None and n > len(pool):
        raise ValueError(f"label count {n} > the {len(pool)} training sentences")
    task = data_layout.finetuning_data_dir(data_dir, "sst")
    os.makedirs(task, exist_ok=True)
    for name, rows in (("train", label_subset(pool, n, seed)),
                       ("dev", validation_rows if split == "validation" else dev)):  # fmt: skip
        text = "\n".join([header, *rows]) + "\n"
        path = os.path.join(task, f"{name}.tsv")
        if not os.path.exists(path) or open(path, encoding="utf-8").read() != text:
            write_atomically(path, lambda f, text=text: f.write(text))
    return task
