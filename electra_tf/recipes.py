"""Pretraining recipes (hparams JSON files such as experiments/recipes/pretrain_small_budget.json)
read for purposes other than a full run: the model they shape, their schedule at another length."""

import os
from typing import Any, Dict, Mapping

from electra_tf import vocab

MODEL_SHAPE_HPARAMS = ("model_size", "model_hparam_overrides", "embedding_size", "objective",
                       "generator_hidden_size", "tied_output_embeddings",
                       "untied_generator_embeddings")  # fmt: skip


def recipe_model_hparams(recipe: Mapping[str, Any], root: str) -> Dict[str, Any]:
    """The hparams of a recipe that shape its model (for benchmarks and FLOP counts of that
    model), with `vocab_size` counted from its `vocab_file` (relative paths from `root`)."""
    values = {k: recipe[k] for k in MODEL_SHAPE_HPARAMS if k in recipe}
    if "vocab_file" in recipe:  # counted as the Trainer counts it (a repeated line is one entry)
        values["vocab_size"] = len(vocab.load_vocab(os.path.join(root, recipe["vocab_file"])))
    return values


def schedule_for_steps(recipe: Mapping[str, Any], steps: int) -> Dict[str, int]:
    """A recipe's schedule cut (or stretched) to `steps`: the same warm-up fraction, at least one
    warm-up step."""
    warmup = recipe.get("num_warmup_steps", 0) / max(recipe["num_train_steps"], 1)
    return {"num_train_steps": steps, "num_warmup_steps": max(1, round(warmup * steps))}
