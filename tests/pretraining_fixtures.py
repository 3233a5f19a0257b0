"""A tiny pretraining model and synthetic batches shared by the model and objective tests."""

import numpy as np
import tensorflow as tf

from electra_tf.configs import PretrainingConfig
from electra_tf.training import build_pretrainer

SPECIAL = {"pad": 0, "cls": 101, "sep": 102, "mask": 103}
VOCAB = 200
TINY = dict(
    model_size="small",
    embedding_size=16,
    model_hparam_overrides=dict(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64
    ),
    generator_hidden_size=0.5,
    max_seq_length=16,
)


def tiny_model(**overrides):
    """(config, ElectraPretrainer) for the tiny config with `overrides`."""
    config = PretrainingConfig("t", "/nonexistent", **{**TINY, **overrides})
    return config, build_pretrainer(config, VOCAB, SPECIAL)


def synthetic_batch(seed=0, batch=4, length=16, low=110):
    """[CLS] random ids in [low, VOCAB) [SEP], then padding; lengths between length/2 and length."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(low, VOCAB, (batch, length)).astype(np.int32)
    ids[:, 0] = 101
    lengths = rng.integers(length // 2, length + 1, batch)
    mask = np.zeros_like(ids)
    for b, n in enumerate(lengths):
        ids[b, n - 1] = 102
        ids[b, n:] = 0
        mask[b, :n] = 1
    return {
        "input_ids": tf.constant(ids),
        "input_mask": tf.constant(mask),
        "segment_ids": tf.zeros_like(tf.constant(ids)),
    }
