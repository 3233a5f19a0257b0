"""Compute accounting: the ELECTRA paper's analytic FLOP counts and TensorFlow profiler counts.

`analytic`: per-layer FLOPs in the conventions of the original `flops_computation.py`;
`paper`: its table of the paper's named runs; `profiler`: `tf.compat.v1.profiler` counts of a
traced function; `finetuning`: a built fine-tuning model's step. Above this package: the
per-objective count from model configs (`electra_tf.objectives.network_flops_per_step`) and the
count of a `PretrainingConfig`'s step in both conventions, the one every caller uses
(`electra_tf.pretraining_networks.step_flops`).
"""

from electra_tf.flops.analytic import (
    ACTIVATION_FLOPS,
    DROPOUT_FLOPS,
    LAYER_NORM_FLOPS,
    PAPER_OUTPUT_FRAC,
    SOFTMAX_FLOPS,
    TransformerFlops,
    dense_flops,
    electra_train_flops,
    max_predictions_per_seq,
    transformer_flops_from_config,
)
from electra_tf.flops.paper import PAPER_MODELS, PaperModel
from electra_tf.flops.profiler import (
    einsum_flops,
    profile_function_flops,
    profile_graph_flops,
    register_einsum_flops,
)

__all__ = [
    "ACTIVATION_FLOPS",
    "DROPOUT_FLOPS",
    "LAYER_NORM_FLOPS",
    "PAPER_MODELS",
    "PAPER_OUTPUT_FRAC",
    "SOFTMAX_FLOPS",
    "PaperModel",
    "TransformerFlops",
    "dense_flops",
    "einsum_flops",
    "electra_train_flops",
    "max_predictions_per_seq",
    "profile_function_flops",
    "profile_graph_flops",
    "register_einsum_flops",
    "transformer_flops_from_config",
]
