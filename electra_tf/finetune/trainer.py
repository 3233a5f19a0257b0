"""Training and prediction of the multi-task model: ELECTRA AdamW with layer-wise learning rates
over shuffled multi-task batches (a step's loss is the batch SUM, as the original), and
fixed-size batches through a traced head for scoring.

A trial checkpoints every `save_checkpoints_steps` (and on SIGTERM / Ctrl-C, before exiting with
128 + the signal's number) into its directory: the model, the optimizer's slots and counter, the
step, the data order's seed and the seconds trained so far. The data's position is a function of
the step (the seeded shuffle replays, and a resumed trial skips the examples already seen), so a
re-run continues the trial where it stopped; in `deterministic` mode (op determinism, dropout
seeds from (trial seed, step), Keras dropout's generator state in the checkpoint) it then
computes exactly what an uninterrupted trial does. A non-finite loss stops the trial, naming the
step; no checkpoint is written after it.
"""

import random
import signal
import time
from collections.abc import Callable
from typing import Any, Optional

import numpy as np
import tensorflow as tf

from electra_tf.checkpoint.manager import CheckpointKeeper
from electra_tf.errors import UserError
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
from electra_tf.train.devices import choose_jit_compile, peak_flops
from electra_tf.train.loss_scale import DynamicLossScale
from electra_tf.train.preemption import StopSignal
from electra_tf.train.progress import fmt_time, write_scalars
from electra_tf.train.step import TrainStep, steps_in_call
from electra_tf.train.strategy import ReplicaLayout

KEEP_CHECKPOINTS = 2  # a trial's newest two: the older one if the newest is broken


# the matmul peak (MFU's denominator) once a process: a run's trials share its machine, and on a
# busy one (not cached) each trial would measure it again
_PEAKS: dict[str, tuple[float, str]] = {}


def _peak(precision: str) -> tuple[float, str]:
    if precision not in _PEAKS:
        _PEAKS[precision] = peak_flops(precision)
    return _PEAKS[precision]


def log(msg: str) -> None:
    print(msg, flush=True)


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


def _replica_iterators(make_dataset, layout: ReplicaLayout, batch: int) -> list:
    """One iterator per local replica over the global batches of `make_dataset()`, each
    yielding its replica's rows. Each replica reads a dataset of its own (a seeded shuffle gives
    every new dataset the same order, but each further iterator of one dataset a new one), so
    that every replica and worker sees the order one device would, split by replica index."""
    n = layout.num_replicas
    if n == 1:
        return [iter(make_dataset())]
    per = batch // n
    iterators = []
    for i in range(layout.num_local):
        first = (layout.first_local_replica + i) * per
        rows = make_dataset().map(
            lambda b, first=first: {k: v[first : first + per] for k, v in b.items()}
        )
        iterators.append(iter(rows))
    return iterators


def _dropout_seeds(seed: int) -> Callable[[Any, Any, int], tf.Tensor]:
    """Stateless dropout seeds from (seed, step), varied by replica and micro-batch: with one
    of each, (seed, step) as before the step was shared with pretraining (a fixed run replays)."""

    def seeds(step, replica, index):
        lane = tf.cast(replica, tf.int64) * 131 + index
        first = (tf.constant(seed, tf.int64) + 7919 * lane) % (2**31 - 1)
        return tf.stack([tf.cast(first, tf.int32), tf.cast(step, tf.int32)])

    return seeds


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
    `train_features` (shuffled with `seed`) with pretraining's step (`train.step.TrainStep`:
    replicas, accumulation, loss scaling, clipping), resuming from the newest complete
    checkpoint in `checkpoint_dir` (None: no checkpoints; a non-chief worker saves to its own
    scratch copy and restores from the chief's); returns the step count and the seconds taken
    (over every part of a resumed trial)."""
    layout = ReplicaLayout.of(strategy)
    batch = config.train_batch_size
    accum = config.gradient_accumulation_steps
    if batch % (layout.num_replicas * accum):
        raise UserError(
            f"train_batch_size {batch} is not divisible by {layout.num_replicas} replicas x "
            f"{accum} accumulation steps"
        )
    with strategy.scope():
        optimizer = _optimizer(model, config, steps)
        step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        # the shuffle's seed: the trial's, or drawn once and kept in the checkpoint
        data_seed = tf.Variable(seed if seed is not None else random.randrange(2**31), tf.int64)
        seconds = tf.Variable(0.0, dtype=tf.float64, trainable=False)
        loss_scale = DynamicLossScale(enabled=config.precision == "mixed_float16")
    rng_states = [v for v in model.variables if "seed_generator_state" in v.path]
    tracked = dict(model=model, optimizer=optimizer, step=step, data_seed=data_seed,
                   seconds=seconds, rng_states=rng_states)  # fmt: skip
    if loss_scale.enabled:  # only then: float32 checkpoints keep their contents
        tracked["loss_scale"] = loss_scale
    save_dir = checkpoint_dir
    if checkpoint_dir is not None and not layout.is_chief:
        # every worker saves (collectives); only the chief's is kept
        save_dir = worker_scratch_dir(checkpoint_dir, layout.task_type, layout.task_id)
    keeper = CheckpointKeeper(tracked, step, save_dir, checkpoint_dir, KEEP_CHECKPOINTS)
    found = keeper.restore_latest(log)
    if found:
        log(f"trial {trial}: resumed from {found} at step {int(step.numpy())}")
    start_step = int(step.numpy())
    n = len(train_features["input_ids"])

    def make_dataset():
        ds = tf.data.Dataset.from_tensor_slices(train_features)
        ds = ds.shuffle(n, seed=int(data_seed.numpy()), reshuffle_each_iteration=True).repeat()
        if start_step:  # the examples the saved steps saw (the seeded shuffle replays them)
            ds = ds.skip(start_step * batch)
        return ds.batch(batch, drop_remainder=True).prefetch(2)

    iterators = _replica_iterators(make_dataset, layout, batch)
    # stateless dropout where a step must replay (deterministic) or replicas and micro-batches
    # need seeds of their own; else the layers' own generators, as before
    stateless = (config.deterministic and seed is not None) or layout.num_replicas * accum > 1
    jit, jit_reason = choose_jit_compile(config.jit_compile, steps)
    train_fn = TrainStep(
        model,
        optimizer,
        loss_scale,
        step,
        strategy,
        layout,
        int(data_seed.numpy()),
        accum,
        jit,
        config.allreduce_dtype,
        dropout_seeds=_dropout_seeds(int(data_seed.numpy())) if stateless else lambda *a: None,
    ).function()
    # the step's real arithmetic (lookups as gathers, backward = 2x forward), as pretraining's
    flops = finetuning_step_flops(model, train_features["input_ids"].shape[1], batch).real
    peak, peak_source = _peak(config.precision)
    log(
        f"trial {trial}: global batch {batch} on {layout.num_replicas} replica(s) x {accum} "
        f"micro-batch(es), {config.precision}, XLA {'on' if jit else 'off'} ({jit_reason}); "
        f"{flops / 1e9:.2f} GFLOP a step (real), MFU against {peak / 1e9:.1f} GFLOP/s ({peak_source})"
    )
    # TensorBoard scalars of the trial, as pretraining's (the chief's; the others write none)
    writer = tf.summary.create_noop_writer()
    if layout.is_chief:
        writer = tf.summary.create_file_writer(
            config.run.trial_summaries_dir(config.task_names, trial, config.random_init)
        )
    start = last_t = time.time()
    before = float(seconds.numpy())
    last_step, losses = start_step, []
    every = max(1, int(config.log_every_steps))
    save_every = max(1, int(config.save_checkpoints_steps))

    def check(done: int) -> list[float]:
        """The losses since the last check, as floats; a non-finite one stops the trial."""
        values = [float(x) for x in losses]
        for i, v in enumerate(values):
            if not np.isfinite(v):
                kept = keeper.latest
                raise UserError(
                    f"trial {trial}: non-finite loss ({v}) at step {done - len(values) + i + 1}; "
                    f"the last good checkpoint is {kept or 'none'} (kept): lower the "
                    "learning_rate, or check the data"
                )
        losses.clear()
        return values

    def save() -> None:
        seconds.assign(before + time.time() - start)
        keeper.save()

    s, compiled = start_step, False
    with StopSignal((signal.SIGTERM, signal.SIGINT)) as stop:
        while s < steps:
            # the first call runs one step (it includes tracing)
            k = 1
            if compiled:
                k = steps_in_call(s, steps, config.iterations_per_loop, every, save_every)
            _, call_losses = train_fn(iterators, tf.constant(k, tf.int32))
            losses.extend(call_losses.numpy().tolist())
            s += k
            if not compiled:  # speed is measured from here: the first call traced (and compiled)
                log(f"trial {trial}: compiled and ran the first step in {time.time() - start:.1f}s")
                compiled, last_t, last_step = True, time.time(), s
            if s % every == 0 or s == steps:
                recent = check(s)
                now = time.time()
                loss = float(np.mean(recent))
                line, scalars = f"step {s}/{steps}  loss {loss:.4f}", {"loss": loss}
                if s > last_step:
                    rate = (s - last_step) / max(now - last_t, 1e-9)
                    line += (f"  {rate:.2f} steps/s  {rate * batch:.1f} examples/s  "
                             f"{rate * flops / 1e9:.1f} GFLOP/s (real) MFU {rate * flops / peak:.1%}  "
                             f"ETA {fmt_time((steps - s) / rate)}")  # fmt: skip
                    scalars.update(steps_per_second=rate, examples_per_second=rate * batch,
                                   flops_per_second=rate * flops, mfu=rate * flops / peak)  # fmt: skip
                log(line)
                write_scalars(writer, scalars, s)
                last_t, last_step = now, s
            due = s % save_every == 0 and s < steps
            if keeper.manager is not None and (due or stop.received is not None):
                check(s)
                save()
            if stop.received is not None:
                saved = (
                    f"saved a checkpoint at step {s}" if keeper.manager else f"stopped at step {s}"
                )
                log(f"trial {trial}: received signal {stop.received}: {saved}")
                raise SystemExit(128 + int(stop.received))
    seconds.assign(before + time.time() - start)
    if keeper.manager is not None and not layout.is_chief:
        tf.io.gfile.rmtree(keeper.manager.directory)
    return {"train_steps": steps, "train_seconds": float(seconds.numpy())}


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
