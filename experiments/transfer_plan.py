"""The transfer experiment's plan: the fine-tuning grid, the runs of each stage (selection on the
validation split, evaluation on the dev sentences) and their names and keys; what `transfer.py`
runs, without running anything."""

import itertools
from typing import Any, Dict, List, Optional

from absl import flags

from electra_tf.errors import UserError
from experiments.transfer_data import hp_key, run_key

FLAGS = flags.FLAGS  # transfer.py defines them

# The fine-tuning grid, the same for every arm: learning rate x layer-wise decay (1.0 = off).
GRID = [{"learning_rate": lr, "layerwise_lr_decay": d}
        for lr, d in itertools.product((1e-4, 3e-4, 1e-3), (0.8, 1.0))]  # fmt: skip
# --bias_corrected_grid adds these (the pilot and declared test of 2026-12-06). The original's
# Adam (no bias correction) takes early steps up to ~5x its nominal rate (see `ElectraAdamW`),
# so with the correction the rates span higher.
BIAS_CORRECTED_GRID = [
    {"learning_rate": lr, "layerwise_lr_decay": d, "adam_bias_correction": True}
    for lr, d in itertools.product((3e-4, 1e-3, 3e-3), (0.8, 1.0))]  # fmt: skip
# --frozen_embeddings_grid adds these to the twelve (2026-12-06, for encoders whose word table
# starts from count vectors): with few labels, fine-tuning moves only the rows of the words the
# labelled sentences hold, away from the rows of the words they lack; a frozen embedding layer
# keeps the table's geometry for the words the labels never show.
FROZEN_EMBEDDINGS_GRID = [{**h, "embedding_lr_multiplier": 0.0} for h in BIAS_CORRECTED_GRID]
# What every fine-tuning shares (the recipe files add the chosen grid point).
FINETUNE_BASE = {
    "task_names": ["sst"],
    "max_seq_length": 64,
    "train_batch_size": 32,
    "num_train_epochs": 10,
    "classifier_pooling": "mean",
    "num_trials": 1,
    "log_every_steps": 100000,
    # graph mode: under XLA the dropout's tf.random.uniform ignores its seed, and a paired
    # comparison needs seed s to replay the same dropout in every arm (and no compile per run)
    "jit_compile": False,
}
SELECT_ARMS = ("random_init", "electra", "mlm")


def run_name(objective: str, flops: float) -> str:
    """A pretraining run's name from its objective and budget, e.g. `pt_electra_1e14`: absolute,
    so that runs of one recipe keep their names (and kept encoders) whatever the largest budget."""
    return f"pt_{objective}_{flops:.3g}".replace("+", "")


def largest(plan, objective: str) -> str:
    return max((n for n, p in plan.items() if p["objective"] == objective),
               key=lambda n: plan[n]["budget"])  # fmt: skip


def record_source(run: Dict[str, Any]) -> Optional[str]:
    """The pretrained run a fine-tuning's record depends on: None for random init, which reads
    only the encoder's shape (the recipe's, the same at every budget)."""
    return None if run["arm"] == "random_init" else run["pretrained"]


def make_run(split, n, seed, arm, pretrained, hparams) -> Dict[str, Any]:
    """One fine-tuning; `pretrained` is the run it starts from (for random init: whose shape)."""
    key = run_key(split, n, seed, arm, pretrained, hparams)
    name = f"ft_{arm}_{pretrained}_{hp_key(hparams)}"
    return {"key": key, "name": name, "split": split, "n": n, "seed": seed, "arm": arm,
            "pretrained": pretrained, "hparams": hparams}  # fmt: skip


def arm_objective(arm: str) -> str:
    """The objective whose pretraining an arm reads: its own, else ELECTRA's (random init reads
    only its shape; the embeddings diagnostic its embeddings)."""
    return arm if arm in ("electra", "mlm") else "electra"


def arm_source(plan, arm: str) -> str:
    """The pretrained run an arm's fine-tunings start from: its objective's largest budget."""
    return largest(plan, arm_objective(arm))


def grid_in_use() -> List[Dict[str, Any]]:
    if FLAGS.frozen_embeddings_grid and not FLAGS.bias_corrected_grid:
        raise UserError("--frozen_embeddings_grid extends --bias_corrected_grid: set both")
    grid = GRID + BIAS_CORRECTED_GRID if FLAGS.bias_corrected_grid else GRID
    return grid + FROZEN_EMBEDDINGS_GRID if FLAGS.frozen_embeddings_grid else grid


def selection_runs(plan, arms, grid_points=None) -> List[Dict[str, Any]]:
    n = str(FLAGS.select_label_count)
    runs = []
    grid = [grid_in_use()[int(i)] for i in grid_points] if grid_points else grid_in_use()
    # seed outermost: a partial stage has every arm at every grid point for the first seeds
    for seed, h, arm in itertools.product(range(FLAGS.select_seeds), grid, arms):
        runs.append(make_run("validation", n, seed, arm, arm_source(plan, arm), h))
    return runs


def evaluation_runs(plan, chosen: Dict[str, Dict[str, Any]], arms) -> List[Dict[str, Any]]:
    """The dev runs of `arms` (each at its chosen grid point and largest budget) at every N, the
    smaller budgets at N = 1,000 (with their objective's choice), and the diagnostic."""
    runs = []
    seeds = range(FLAGS.first_seed, FLAGS.first_seed + FLAGS.seeds)
    for n, seed in itertools.product(FLAGS.label_counts, seeds):
        for arm in arms:
            runs.append(make_run("dev", n, seed, arm, arm_source(plan, arm), chosen[arm]))
    # the budget series at N = 1,000, and the diagnostic
    for seed in seeds if FLAGS.diagnostic else ():
        for name, p in plan.items():
            if p["objective"] in arms and name != largest(plan, p["objective"]):
                h = chosen[p["objective"]]
                runs.append(make_run("dev", "1000", seed, p["objective"], name, h))
        if "electra" in arms:
            emb = {**chosen["electra"], "reinit_top_layers": 4}
            runs.append(make_run("dev", "1000", seed, "electra_embeddings",
                                 arm_source(plan, "electra"), emb))  # fmt: skip
    return runs
