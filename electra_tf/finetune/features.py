"""Multi-task feature arrays: the full feature spec of a run's tasks, zero-filling the features
other tasks declare, padding rows (task_id = number of tasks: no loss), the train step count."""

import math
from typing import Optional

import numpy as np
import tensorflow as tf

from electra_tf.finetune.config import FinetuningConfig
from electra_tf.finetune.task import FeatureSpec, Task

Features = dict[str, np.ndarray]


def full_spec(tasks: list[Task], max_len: int) -> FeatureSpec:
    spec: FeatureSpec = {
        "input_ids": ((max_len,), np.int32),
        "input_mask": ((max_len,), np.int32),
        "segment_ids": ((max_len,), np.int32),
        "task_id": ((), np.int32),
    }
    for t in tasks:
        spec.update(t.feature_spec())
    return spec


def dummy_batch(spec: FeatureSpec) -> dict[str, tf.Tensor]:
    """One all-zero example of every feature (builds the model's variables)."""
    return {k: tf.zeros((1,) + shape, dtype) for k, (shape, dtype) in spec.items()}


def complete(features: Features, spec: FeatureSpec, n: int, task_id: int) -> Features:
    """Adds zero arrays for the features other tasks declare, and the task id."""
    out = {}
    for name, (shape, dtype) in spec.items():
        out[name] = (
            features[name].astype(dtype) if name in features else np.zeros((n,) + shape, dtype)
        )
    out["task_id"] = np.full([n], task_id, np.int32)
    return out


def concat(parts: list[Features]) -> Features:
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def pad_rows(features: Features, n_rows: int, task_id: Optional[int] = None) -> Features:
    """Appends all-zero rows up to n_rows (padding examples; task_id = n_tasks adds no loss)."""
    n = len(features["input_ids"])
    if n >= n_rows:
        return features
    out = {
        k: np.concatenate([v, np.zeros((n_rows - n,) + v.shape[1:], v.dtype)])
        for k, v in features.items()
    }
    if task_id is not None:
        out["task_id"][n:] = task_id
    return out


def num_train_steps(n_examples: int, config: FinetuningConfig) -> tuple[int, int]:
    """(padded example count, steps), as the original: int(n_padded // batch * epochs)."""
    b = config.train_batch_size
    n_padded = int(math.ceil(n_examples / b) * b)
    return n_padded, int(n_padded // b * config.num_train_epochs)
