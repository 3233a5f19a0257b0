"""Pretraining: the strategy and replica layout, inputs, the step, loss scaling,
checkpointing, progress output, the `Trainer`, and `--describe`."""

from electra_tf.train.describe import describe, describe_json
from electra_tf.train.strategy import ReplicaLayout, build_strategy
from electra_tf.train.trainer import Trainer

__all__ = [
    "ReplicaLayout",
    "Trainer",
    "build_strategy",
    "describe",
    "describe_json",
]
