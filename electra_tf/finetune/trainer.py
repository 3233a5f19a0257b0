"""A fine-tuning trial as a task of the one training loop (`train.loop`): ELECTRA AdamW with
layer-wise learning rates over shuffled multi-task batches (a step's loss is the batch SUM, as
the original); and fixed-size batches through a traced head for scoring.

The loop checkpoints a trial every `save_checkpoints_steps` (and on SIGTERM / Ctrl-C, before
exiting with 128 + the signal's number) into its directory, and stops it at a non-finite loss,
naming the step; no checkpoint is written after it.
"""

import random
import time
from collections.abc import Callable
from typing import Any, Optional

import numpy as np
import tensorflow as tf

from electra_tf.finetune.config import FinetuningConfig
from electra_tf.finetune.features import Features, pad_rows
from electra_tf.finetune.model import FinetuningModel
from electra_tf.finetune.scorers import Scorer
from electra_tf.finetune.task import Task
from electra_tf.flops.finetuning import finetuning_step_flops
from electra_tf.optimization import (
    ElectraAdamW,
    ElectraSchedule,
    layerwise_lr_multipliers,
    make_optimizer,
)
from electra_tf.run_dir import worker_scratch_dir
from electra_tf.train.loop import LoopSettings, TrainingLoop, TrainingTask
from electra_tf.train.strategy import ReplicaLayout

KEEP_CHECKPOINTS = 2  # a trial's newest two: the older one if the newest is broken


def _optimizer(model: FinetuningModel, config: FinetuningConfig, steps: int) -> ElectraAdamW:
    n_layers = model.model_config.num_hidden_layers
    variables = model.trainable_variables
    # decay off is decay 1: every multiplier 1 but the embedding factor's
    decay = config.layerwise_lr_decay if config.layerwise_lr_decay > 0 else 1.0
    multipliers = layerwise_lr_multipliers(
        variables,
        n_layers,
        decay,
        config.layerwise_lr_decay_fixed,
        embedding_multiplier=config.embedding_lr_multiplier,
    )
    warmup = steps * config.warmup_proportion  # a float, as the original's
    schedule = ElectraSchedule(config.learning_rate, max(steps, 1), warmup)
    return make_optimizer(
        config.optimizer,
        schedule,
        variables,
        weight_decay_rate=config.weight_decay_rate,
        clip_norm=config.clip_norm,
        lr_multipliers=multipliers,
        bias_correction=config.adam_bias_correction,
    )


def _dropout_seeds(seed: int) -> Callable[[Any, Any, int], tf.Tensor]:
    """Stateless dropout seeds from (seed, step), varied by replica and micro-batch: with one
    of each, (seed, step) as before the step was shared with pretraining (a fixed run replays)."""

    def seeds(step, replica, index):
        lane = tf.cast(replica, tf.int64) * 131 + index
        first = (tf.constant(seed, tf.int64) + 7919 * lane) % (2**31 - 1)
        return tf.stack([tf.cast(first, tf.int32), tf.cast(step, tf.int32)])

    return seeds


class TrialTask(TrainingTask):
    """One fine-tuning trial as a task of the training loop: the multi-task model (built in the
    loop's strategy scope by the runner), its optimizer, and shuffled batches of its features.

    A trial's checkpoint holds the model, the optimizer's slots and counter, the step, the data
    order's seed, the seconds trained so far and Keras dropout's generator state. The data's
    position is a function of the step (the seeded shuffle replays, and a resumed trial skips
    the examples already seen), so a re-run continues the trial where it stopped; in
    `deterministic` mode (op determinism, dropout seeds from (trial seed, step)) it then computes
    exactly what an uninterrupted trial does.

    Args:
        model: the `FinetuningModel`, built in `strategy`'s scope.
        features: the training features (every task's, padded to whole batches).
        config: the run's `FinetuningConfig`.
        steps: the trial's steps.
        seed: the trial's seed (None: drawn once and kept in the checkpoint).
        strategy: the strategy the model was built in.
    """

    checkpoints_inputs = False

    def __init__(self, model, features, config, steps, seed, strategy):
        self.model, self.features, self.config, self.steps = model, features, config, steps
        self.seed = seed
        with strategy.scope():
            self.optimizer = _optimizer(model, config, steps)
            self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
            # the shuffle's seed: the trial's, or drawn once and kept in the checkpoint
            first = seed if seed is not None else random.randrange(2**31)
            self.data_seed = tf.Variable(first, tf.int64)
            self.seconds = tf.Variable(0.0, dtype=tf.float64, trainable=False)
        self.started = time.time()
        self.seconds_before = 0.0

    def checkpoint_items(self, loss_scale, iterators) -> dict:
        rng_states = [v for v in self.model.variables if "seed_generator_state" in v.path]
        items = dict(model=self.model, optimizer=self.optimizer, step=self.step,
                     data_seed=self.data_seed, seconds=self.seconds, rng_states=rng_states)  # fmt: skip
        if loss_scale.enabled:  # only then: float32 checkpoints keep their contents
            items["loss_scale"] = loss_scale
        return items

    def dataset(self, replica: int, layout: ReplicaLayout) -> tf.data.Dataset:
        """Replica `replica`'s rows of the global batches. Each replica reads a dataset of its
        own (a seeded shuffle gives every new dataset the same order), so that every replica
        and worker sees the order one device would, split by replica index."""
        batch = self.config.train_batch_size
        start_step = int(self.step.numpy())
        n = len(self.features["input_ids"])
        ds = tf.data.Dataset.from_tensor_slices(self.features)
        ds = ds.shuffle(n, seed=int(self.data_seed.numpy()), reshuffle_each_iteration=True)
        ds = ds.repeat()
        if start_step:  # the examples the saved steps saw (the seeded shuffle replays them)
            ds = ds.skip(start_step * batch)
        ds = ds.batch(batch, drop_remainder=True).prefetch(2)
        if layout.num_replicas == 1:
            return ds
        per = batch // layout.num_replicas
        first = replica * per
        return ds.map(lambda b: {k: v[first : first + per] for k, v in b.items()})

    def begin(self, resumed: bool) -> None:
        self.seconds_before = float(self.seconds.numpy())  # a resumed trial's seconds so far
        self.started = time.time()

    def step_options(self, stage: Optional[str], layout: ReplicaLayout) -> dict:
        c, data_seed = self.config, int(self.data_seed.numpy())
        # stateless dropout where a step must replay (deterministic) or replicas and
        # micro-batches need seeds of their own; else the layers' own generators, as before
        stateless = (c.deterministic and self.seed is not None) or (
            layout.num_replicas * c.gradient_accumulation_steps > 1
        )
        seeds = _dropout_seeds(data_seed) if stateless else (lambda *a: None)
        return dict(seed=data_seed, dropout_seeds=seeds)

    def before_save(self) -> None:
        self.seconds.assign(self.seconds_before + time.time() - self.started)


def train(
    model: FinetuningModel,
    train_features: Features,
    config: FinetuningConfig,
    steps: int,
    seed: Optional[int],
    checkpoint_dir: Optional[str],
    trial: int,
    strategy: tf.distribute.Strategy,
) -> dict[str, float]:
    """Trains `model` (built in `strategy`'s scope) for `steps` global batches of
    `train_features` (shuffled with `seed`) with the one training loop (`train.loop`), resuming
    from the newest complete checkpoint in `checkpoint_dir` (None: no checkpoints; a non-chief
    worker saves to its own scratch copy, restores from the chief's and removes its copy at the
    end); returns the step count and the seconds taken (over every part of a resumed trial)."""
    loop = TrainingLoop(strategy, log_prefix=f"trial {trial}: ")
    task = TrialTask(model, train_features, config, steps, seed, strategy)
    layout = loop.layout
    scratch = None
    if checkpoint_dir is not None and not layout.is_chief:
        scratch = worker_scratch_dir(checkpoint_dir, layout.task_type, layout.task_id)
    settings = LoopSettings(
        num_steps=steps,
        global_batch=config.train_batch_size,
        accumulation_steps=config.gradient_accumulation_steps,
        iterations_per_loop=config.iterations_per_loop,
        log_every_steps=max(1, int(config.log_every_steps)),
        save_checkpoints_steps=max(1, int(config.save_checkpoints_steps)),
        allreduce_dtype=config.allreduce_dtype,
        checkpoint_dir=checkpoint_dir,
        worker_checkpoint_dir=scratch,
        resume_from_chief=True,
        discard_worker_checkpoints=True,
        keep_checkpoints=KEEP_CHECKPOINTS,
        save_at_end=False,
        precision=config.precision,
        jit_compile=config.jit_compile,
        summaries_dir=config.run.trial_summaries_dir(config.task_names, trial, config.random_init),
        name=", ".join(config.task_names),
        # the step's real arithmetic (lookups as gathers, backward = 2x forward)
        real_flops_per_step=finetuning_step_flops(
            model, train_features["input_ids"].shape[1], config.train_batch_size
        ).real,
    )
    loop.train(task, settings)
    return {"train_steps": steps, "train_seconds": float(task.seconds.numpy())}


def predict(
    fn: Callable[[Features], dict[str, tf.Tensor]], features: Features, batch_size: int
) -> list[dict[str, np.ndarray]]:
    """Runs `fn` (a traced head) over `features` in fixed-size batches; numpy output batches."""
    n = len(features["input_ids"])
    out = []
    for s in range(0, n, batch_size):
        batch = {k: v[s : s + batch_size] for k, v in features.items()}
        m = len(batch["input_ids"])
        batch = pad_rows(batch, batch_size)  # one static shape: one trace per task
        res = fn(batch)
        out.append({k: v.numpy()[:m] for k, v in res.items()})
    return out


def score(
    fn: Callable[[Features], dict[str, tf.Tensor]],
    task: Task,
    split: str,
    examples: list[Any],
    features: Features,
    batch_size: int,
) -> tuple[dict[str, float], list[tuple[Any, str]], Scorer]:
    """(metrics, one prediction per example, the scorer)."""
    scorer = task.make_scorer(split, examples)
    for batch in predict(fn, features, batch_size):
        scorer.update(batch)
    return scorer.get_results(), scorer.predictions(), scorer
