"""The movie task's fine-tuning data as the transfer experiment draws it, and the names of its
runs. The draw (the training pool less the validation split, nested seeded label subsets, the
epochs that give every label count the same updates) is the package's
(`electra_tf.demo.movie_task`), which the no-flag demo of `run_finetuning.py` uses to replay one
of the experiment's kept runs (N = 300, seed 0) on the very same 300 sentences.
"""

from typing import Any, Dict

from electra_tf.demo.movie_task import (  # noqa: F401 (the experiment's draw, read here)
    RECIPE_LABEL_COUNT,
    VALIDATION_SPLIT,
    epochs_for,
    label_subset,
    task_rows,
    write_sst_task,
)

# The hparams that name a run's grid point, each with the value at which it is left out of the
# key (None: never): a key added later is left out at its default, so older records keep their names.
KEY_HPARAMS = {"learning_rate": None, "layerwise_lr_decay": None, "reinit_top_layers": None,
               "num_train_epochs": None, "adam_bias_correction": False,
               "embedding_lr_multiplier": 1.0}  # fmt: skip


def hp_key(h: Dict[str, Any]) -> str:
    """The part of a run's key that names its grid point (and a diagnostic's reinit), e.g.
    `adam_bias_correction_layerwise_lr_decay0.8_learning_rate0.001`."""
    return "_".join(k if v is True else f"{k}{v:g}" for k, v in sorted(h.items())
                    if k in KEY_HPARAMS and v != KEY_HPARAMS[k])  # fmt: skip


def run_key(
    split: str, n: str, seed: int, arm: str, pretrained: str, hparams: Dict[str, Any]
) -> str:
    """A fine-tuning's key (its kept record: `transfer_store.record_path`); random init's names
    no pretrained run (it reads only the shape)."""
    source = "" if arm == "random_init" else f"{pretrained}/"
    return f"{split}/n{n}_s{seed}/{arm}/{source}{hp_key(hparams)}"
