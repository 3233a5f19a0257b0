"""Training and prediction of the multi-task model: ELECTRA AdamW with layer-wise learning rates
over shuffled multi-task batches (a step's loss is the batch SUM, as the original), and
fixed-size batches through a traced head for scoring."""

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
from electra_tf.optimization import ElectraSchedule, layerwise_lr_multipliers, make_optimizer


def log(msg: str) -> None:
    print(msg, flush=True)


def train(
    model: FinetuningModel,
    train_features: Features,
    config: FinetuningConfig,
    steps: int,
    seed: Optional[int],
) -> dict[str, float]:
    """Trains `model` for `steps` batches of `train_features` (shuffled with `seed`); returns
    the step count and the seconds taken."""
    n_layers = model.model_config.num_hidden_layers
    variables = model.trainable_variables
    multipliers = None
    if config.layerwise_lr_decay and config.layerwise_lr_decay > 0:
        multipliers = layerwise_lr_multipliers(
            variables, n_layers, config.layerwise_lr_decay, config.layerwise_lr_decay_fixed
        )
    warmup = steps * config.warmup_proportion  # a float, as the original's
    schedule = ElectraSchedule(config.learning_rate, max(steps, 1), warmup)
    optimizer = make_optimizer(
        config.optimizer,
        schedule,
        variables,
        weight_decay_rate=config.weight_decay_rate,
        clip_norm=config.clip_norm,
        lr_multipliers=multipliers,
    )
    n = len(train_features["input_ids"])
    ds = tf.data.Dataset.from_tensor_slices(train_features)
    ds = ds.shuffle(n, seed=seed, reshuffle_each_iteration=True).repeat()
    ds = ds.batch(config.train_batch_size, drop_remainder=True).prefetch(2)

    def step_fn(batch):
        with tf.GradientTape() as tape:
            loss, _ = model(batch, training=True)
        grads = tape.gradient(loss, variables)
        # embedding gathers give IndexedSlices; the optimizer updates dense tensors
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        grads, _ = optimizer.clip(grads)
        optimizer.apply_gradients(grads)
        return loss

    jit = steps >= 300 if config.jit_compile is None else bool(config.jit_compile)
    step_fn = tf.function(step_fn, jit_compile=jit)
    start = last_t = time.time()
    last_step, losses = 0, []
    every = max(1, int(config.log_every_steps))
    it = iter(ds)
    for step in range(1, steps + 1):
        losses.append(step_fn(next(it)))
        if step % every == 0 or step == steps:
            now = time.time()
            recent = [float(x) for x in losses]
            losses = []
            log(
                f"step {step}/{steps}  loss {np.mean(recent):.4f}  "
                f"{(step - last_step) / max(now - last_t, 1e-9):.2f} steps/s"
            )
            last_t, last_step = now, step
    seconds = time.time() - start
    return {"train_steps": steps, "train_seconds": seconds}


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
