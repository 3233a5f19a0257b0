"""Profiler vs analytic FLOPs of this project's pretraining step (`count_flops.py --profile`)."""

from collections.abc import Mapping
from typing import Any

import tensorflow as tf

from electra_tf import vocab
from electra_tf.flops.analytic import config_value
from electra_tf.flops.profiler import profile_function_flops
from electra_tf.model_config import SHAPE_KEYS
from electra_tf.optimization import make_optimizer
from electra_tf.pretraining_config import PretrainingConfig
from electra_tf.pretraining_networks import build_pretrainer, pretraining_flops_per_step
from electra_tf.train.loop import LoopSettings, TrainingLoop, TrainingTask


def profile_pretraining_flops(
    model_size: str = "small",
    batch_size: int = 2,
    seq_len: int = 128,
    hparams: Mapping | None = None,
) -> dict:
    """Profiler vs analytic FLOPs of this project's ELECTRA pretraining, for one step.

    Builds the pretraining model as `run_pretraining.py` does (float32, the configured objective),
    traces two graphs with static [batch_size, seq_len] inputs, and counts them with
    `tf.compat.v1.profiler`:
      * forward: masking, generator, MLM head and loss, sampling, discriminator, its head and
        loss, in training mode (with dropout), as the forward half of a training step;
      * train step: the training loop's own step (`train.step.TrainStep.replica_step`: the same
        forward, the gradients of the loss with respect to every trainable variable, global-norm
        clipping and the configured optimizer's update), on one replica.
    The analytic figures are `pretraining_networks`'s count with `sparse_embed_lookup=True` (the
    model gathers its embeddings): every objective and generator the config can build.

    Returns a dict with profiler_forward_flops, analytic_forward_flops, forward_ratio,
    profiler_train_step_flops, analytic_train_step_flops (backward = 1x forward, the paper's
    convention), train_step_ratio, analytic_train_step_flops_backward_2x (the ~3x-forward
    convention) and its ratio, and the shapes and configs used.
    """
    # the traced shapes are the config's, whatever `hparams` say
    values = {"model_size": model_size, **(hparams or {})}
    values.update(max_seq_length=seq_len, train_batch_size=batch_size)
    config = PretrainingConfig.from_flat("flops_profile", "flops_profile", values)
    vocab_size = config.vocab_size_for()
    model = build_pretrainer(config, vocab_size, dict(vocab.BERT_UNCASED_SPECIAL_IDS))
    o = config.optimization
    optimizer = make_optimizer(
        o.optimizer, 1e-4, model.trainable_weights, weight_decay_rate=o.weight_decay_rate,
        clip_norm=o.clip_norm,
    )  # fmt: skip
    # the training loop's own step, on the default strategy (one replica), float32, no XLA
    loop = TrainingLoop(tf.distribute.get_strategy())
    task = TrainingTask()
    task.model, task.optimizer, task.step = model, optimizer, tf.Variable(0, dtype=tf.int64)
    step = loop.train_step(task, LoopSettings(num_steps=1, global_batch=batch_size))
    spec = tf.TensorSpec([batch_size, seq_len], tf.int32)
    specs = {"input_ids": spec, "input_mask": spec, "segment_ids": spec}

    def forward(inputs):  # what the step differentiates, with the step's own dropout seed
        seed = step.dropout_seed(0, 0, 0)
        return model.compute(inputs, step=0, seed=0, training=True, dropout_seed=seed)["loss"]

    def train_step(inputs):
        return step.replica_step(inputs)["loss"]

    profiler_forward = profile_function_flops(forward, specs)
    profiler_train = profile_function_flops(train_step, specs)

    disc_config = model.discriminator.config
    gen_config = model.generator.config if model.generator is not None else None
    if gen_config is disc_config:
        gen_config = None

    def analytic(backward_factor):
        return pretraining_flops_per_step(config, vocab_size, True, backward_factor)

    analytic_forward = analytic(0.0)
    analytic_train = analytic(1.0)
    analytic_train_2x = analytic(2.0)
    return {
        "model_size": model_size,
        "batch_size": batch_size,
        "seq_len": seq_len,
        "max_predictions_per_seq": config.max_predictions_per_seq,
        "profiler_forward_flops": profiler_forward,
        "analytic_forward_flops": analytic_forward,
        "forward_ratio": profiler_forward / analytic_forward,
        "profiler_train_step_flops": profiler_train,
        "analytic_train_step_flops": analytic_train,
        "train_step_ratio": profiler_train / analytic_train,
        "analytic_train_step_flops_backward_2x": analytic_train_2x,
        "train_step_ratio_backward_2x": profiler_train / analytic_train_2x,
        "discriminator_config": _config_dict(disc_config),
        "generator_config": None if gen_config is None else _config_dict(gen_config),
    }


def _config_dict(config: Any) -> dict:
    return {k: config_value(config, k) for k in SHAPE_KEYS}
