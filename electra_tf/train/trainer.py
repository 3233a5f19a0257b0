"""The estimator-style pretraining loop.

A `Trainer` owns one run directory (`model_dir`), locked while it trains or evaluates (by the
chief, in a multi-worker run: `run_dir.RunDirectory.lock`; a live holder stops the constructor
already). Re-running the same command resumes from the
latest complete checkpoint (see `electra_tf.checkpoint.manager`); the step's randomness is a
pure function of (seed, step, data), so a resumed run continues exactly as an uninterrupted one
would. SIGTERM and SIGINT (Ctrl-C) save a checkpoint and exit with 128 + the signal's number; a
damaged shard ends the run with one line naming it (`train.inputs`).
"""

import dataclasses
import functools
import os
import signal
import tempfile
import time
from typing import Dict, Optional

import keras
import numpy as np
import tensorflow as tf

from electra_tf import run_dir, vocab
from electra_tf.checkpoint.manager import TrainingCheckpoint, warm_start_and_log
from electra_tf.errors import UserError
from electra_tf.flops.pretraining import step_flops
from electra_tf.modeling import builders
from electra_tf.optimization import embedding_lr_multipliers, make_optimizer
from electra_tf.pretraining_config import PretrainingConfig
from electra_tf.pretraining_data import count_vectors
from electra_tf.train import devices, step_path, two_stage
from electra_tf.train.inputs import READ_ERRORS, input_files, read_error, replica_iterators
from electra_tf.train.loss_scale import DynamicLossScale
from electra_tf.train.preemption import StopSignal
from electra_tf.train.progress import ProgressLog, log, write_scalars
from electra_tf.train.step import TrainStep, eval_function, steps_in_call
from electra_tf.train.strategy import ReplicaLayout, build_strategy


def _holding_lock(method):
    """A `Trainer` method run holding the run directory's lock (the chief's), released after."""

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        lock = self.run.lock(log) if self.layout.is_chief else None
        try:
            return method(self, *args, **kwargs)
        finally:
            if lock is not None:
                lock.release()

    return run


class Trainer:
    """Builds everything a run needs (strategy, model, optimizer, loss scale) and trains or
    evaluates it.

    Args:
        config: the run's `PretrainingConfig`.
        strategy: a tf.distribute strategy; default: the one the `distribution` hparam names.

    Example:
        trainer = Trainer(PretrainingConfig.from_flat("m", "data_dir", {"num_train_steps": 20}))
        trainer.train()
        metrics = trainer.evaluate()
    """

    def __init__(
        self, config: PretrainingConfig, strategy: Optional[tf.distribute.Strategy] = None
    ):
        self.config = c = config
        if c.general.deterministic:
            tf.config.experimental.enable_op_determinism()
            keras.utils.set_random_seed(int(c.general.seed))
        vocab_file = c.paths.vocab_file
        if not os.path.exists(vocab_file):
            raise UserError(f"vocab file {vocab_file} does not exist")
        self.vocab = vocab.load_vocab(vocab_file)
        self.vocab_size = c.model.vocab_size or len(self.vocab)
        if self.vocab_size != len(self.vocab):
            raise UserError(
                f"vocab_size {self.vocab_size} does not match {vocab_file} "
                f"({len(self.vocab)} entries)"
            )
        self.special_ids = vocab.special_token_ids(self.vocab, vocab_file)
        self.run = c.run
        self.strategy = strategy or build_strategy(c.scale.distribution)
        self.layout = ReplicaLayout.of(self.strategy)
        accum = c.scale.gradient_accumulation_steps
        if c.optimization.train_batch_size % (self.layout.num_replicas * accum):
            raise UserError(
                f"train_batch_size {c.optimization.train_batch_size} is not divisible by "
                f"{self.layout.num_replicas} replicas x {accum} accumulation steps"
            )
        c.model_configs(self.vocab_size)  # an impossible model config stops before the lock
        # one writer per run directory (non-chief workers write only to their scratch dirs): a
        # live holder stops the run here; `_holding_lock` holds it while training or evaluating
        if self.layout.is_chief:
            self.run.lock(log).release()

        # precision / XLA: as set, or the fastest measured path for "auto" (`train.step_path`)
        def resumed_config():
            return self.run.config_path if self.run.latest_checkpoint() else None

        self.path, self.path_reason = step_path.choose(
            c, self._seconds_per_step, self.layout.num_replicas, resumed_config, log,
            self.vocab_size, multi_worker=self.layout.num_replicas > self.layout.num_local,
        )  # fmt: skip
        scale = dataclasses.replace(c.scale, **self.path.hparams())
        self.config = c = dataclasses.replace(c, scale=scale)
        keras.utils.set_random_seed(int(c.general.seed))  # same initial weights for a given seed
        o = c.optimization
        with self.strategy.scope():
            self.model = builders.build_pretrainer(c, self.vocab_size, self.special_ids)
            self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
            n = o.two_stage_steps
            self.two_stage = two_stage.TwoStage(self.model, n) if n else None
            self.optimizer = make_optimizer(
                o.optimizer,
                two_stage.learning_rate_schedule(o),
                self.model.trainable_weights,
                weight_decay_rate=o.weight_decay_rate,
                clip_norm=o.clip_norm,
                lr_multipliers=embedding_lr_multipliers(
                    self.model.trainable_weights, o.embedding_lr_multiplier
                ),
                bias_correction=o.adam_bias_correction,
            )
            self.loss_scale = DynamicLossScale(enabled=c.scale.precision == "mixed_float16")
        flops = step_flops(c, self.vocab_size)
        # the paper's convention (lookups as dense products, backward = forward): train_flops
        self.flops_per_step = flops.paper
        # the step's real arithmetic (lookups as gathers, backward = 2x forward): FLOP/s, MFU
        self.real_flops_per_step = flops.real
        self.peak_flops, self.peak_source = devices.peak_flops(
            c.scale.precision, c.scale.peak_flops
        )
        self.train_summary: Dict[str, float] = {}  # filled by train(), merged into evaluate()

    @property
    def jit_compile(self) -> bool:
        return self.path.jit_compile

    @property
    def jit_reason(self) -> str:
        return self.path_reason

    def _seconds_per_step(self, path: step_path.StepPath) -> float:
        """Seconds per step of this run's step on `path` (a throwaway Trainer on a synthetic
        batch, in a temporary run directory, on this run's strategy)."""
        c = self.config
        with tempfile.TemporaryDirectory(prefix="electra_tf_step_path_") as tmp:
            config = dataclasses.replace(
                c,
                scale=dataclasses.replace(c.scale, **path.hparams()),
                paths=dataclasses.replace(c.paths, model_dir=tmp),
            )
            return step_path.seconds_per_step(Trainer(config, strategy=self.strategy))

    def iterators(self, is_training: bool = True, tfrecords: Optional[str] = None) -> list:
        """This worker's input iterators, one per local replica (see `train.inputs`)."""
        self.files = input_files(self.config, tfrecords, log)
        return replica_iterators(self.config, self.layout, is_training, files=self.files)

    def _start_word_table_from_counts(self) -> None:
        """`word_embedding_init: ppmi_svd` on a fresh start: the discriminator's word table (the
        generator's too, where they share it, as the original) starts as PPMI-SVD vectors of the
        training TFRecords (`pretraining_data.count_vectors`); a word the data lacks keeps its
        random row. Deterministic, so every worker of a multi-worker run computes the same."""
        c = self.config
        embeddings = self.model.discriminator.embeddings
        table = embeddings.word_embeddings
        log(f"word_embedding_init ppmi_svd: counting {len(self.files)} TFRecord file(s)")
        start = time.time()
        vectors, seen = count_vectors.ppmi_svd_table(
            self.files, c.model.max_seq_length, self.vocab_size, int(table.shape[1]),
            c.model.ppmi_window, sorted(self.special_ids.values()),
            stddev=embeddings.config.initializer_range, seed=int(c.general.seed),
            log=log,
        )  # fmt: skip
        table.assign(np.where(seen[:, None], vectors, table.numpy()).astype(table.dtype))
        log(f"word table: {int(seen.sum()):,} rows from the counts, the rest random "
            f"({time.time() - start:.0f} s)")  # fmt: skip

    def _read_error(self, e: Exception, kept: Optional[str]) -> Exception:
        """A read error from inside a step as one line naming the damaged shard (else `e`)."""
        found = read_error(e, self.files, self.config.model.max_seq_length, kept)
        return found if found is not None else e

    def step_function(self, stage: Optional[str] = None):
        """The training step as a tf.function(iterators, num_steps) (what `train` runs); with
        two-stage training, `stage`'s (see `train.two_stage`)."""
        c = self.config
        variables = self.two_stage.variables(stage) if stage else None
        return TrainStep(
            self.model,
            self.optimizer,
            self.loss_scale,
            self.step,
            self.strategy,
            self.layout,
            c.general.seed,
            c.scale.gradient_accumulation_steps,
            self.jit_compile,
            c.scale.allreduce_dtype,
            stage,
            variables,
        ).function()

    def write_run_config(self) -> None:
        """config.json (every hparam, the model configs, replicas, FLOPs/step) and vocab.txt."""
        if not self.layout.is_chief:
            return
        disc, gen = self.config.model_configs(self.vocab_size)
        self.run.write_config(
            run_dir.PRETRAINING,
            self.config.to_flat(),
            disc,
            gen,
            num_replicas=self.layout.num_replicas,
            flops_per_step=self.flops_per_step,
        )
        self.run.copy_vocab(self.config.paths.vocab_file)

    @_holding_lock
    def train(self) -> Dict[str, float]:
        """Trains to `num_train_steps` (resuming if the run has a checkpoint); returns the
        training summary ({} when it had already finished)."""
        c = self.config
        self.run.makedirs()
        self.write_run_config()
        iterators = self.iterators(is_training=True)
        ckpt = TrainingCheckpoint(
            self.model,
            self.optimizer,
            self.step,
            self.loss_scale,
            iterators,
            self.run,
            self.layout,
            c.general.keep_checkpoint_max,
        )
        resumed = ckpt.restore_latest(log)
        if resumed:
            log(f"resumed from {resumed} at step {int(self.step.numpy())}")
        elif c.paths.init_checkpoint:
            warm_start_and_log(self.model, c.paths.init_checkpoint, log)
        elif c.model.word_embedding_init == "ppmi_svd":
            self._start_word_table_from_counts()
        start_step = int(self.step.numpy())
        last_step = c.optimization.num_train_steps
        if start_step >= last_step:
            log(f"training already finished ({start_step} steps)")
            return {}
        train_fns = {}  # by two-stage stage (None: one stage)
        writer = (
            tf.summary.create_file_writer(self.run.summaries_dir("train"))
            if self.layout.is_chief
            else tf.summary.create_noop_writer()
        )
        log(
            f"training {c.model_name}: steps {start_step} -> {last_step}, global batch "
            f"{c.optimization.train_batch_size} on {self.layout.num_replicas} replica(s), "
            f"{self.flops_per_step:.3e} FLOPs/step (paper convention), "
            f"{self.real_flops_per_step:.3e} real; {self.path.describe()} "
            f"({self.path_reason}); peak {self.peak_flops / 1e9:.0f} GFLOP/s ({self.peak_source})"
        )
        progress = ProgressLog(
            last_step,
            c.general.log_every_steps,
            c.optimization.train_batch_size,
            self.real_flops_per_step,
            self.peak_flops,
            writer,
        )
        total_flops = start_step * self.flops_per_step
        with StopSignal((signal.SIGTERM, signal.SIGINT)) as stop:
            while int(self.step.numpy()) < last_step:
                step = int(self.step.numpy())
                stage = self.two_stage.start_call(step, log) if self.two_stage else None
                if stage not in train_fns:
                    train_fns[stage] = self.step_function(stage)
                # the first call runs one step (it includes tracing and compilation)
                n = 1
                if progress.compiled:
                    n = steps_in_call(
                        step,
                        last_step,
                        c.scale.iterations_per_loop,
                        c.general.log_every_steps,
                        c.general.save_checkpoints_steps,
                        c.optimization.two_stage_steps,
                    )
                try:
                    out, losses = train_fns[stage](iterators, tf.constant(n, tf.int32))
                except READ_ERRORS as e:
                    raise self._read_error(e, ckpt.latest) from None
                losses = losses.numpy()
                step = int(self.step.numpy())
                progress.step_done(step, n)
                bad = np.flatnonzero(~np.isfinite(losses))
                if bad.size:
                    raise UserError(
                        f"non-finite loss ({losses[bad[0]]}) at step {step - n + 1 + bad[0]}; the "
                        f"last good checkpoint is {ckpt.latest or 'none'} (kept)"
                    )
                loss = float(losses[-1])
                total_flops += n * self.flops_per_step
                if step % c.general.save_checkpoints_steps == 0:  # as the original: at multiples
                    ckpt.save()
                if progress.due(step):
                    progress.write(step, loss, out, total_flops)
                if stop.received is not None:
                    ckpt.save()
                    log(f"received signal {stop.received}: saved a checkpoint at step {step}")
                    raise SystemExit(128 + int(stop.received))
        step = int(self.step.numpy())
        ckpt.save()
        self.train_summary = progress.summary(start_step, step, total_flops)
        log(f"saved {ckpt.latest}")
        return self.train_summary

    @_holding_lock
    def evaluate(
        self, tfrecords: Optional[str] = None, checkpoint: Optional[str] = None
    ) -> Dict[str, float]:
        """The objective's eval metrics over `num_eval_steps` batches of the latest checkpoint
        (or `checkpoint`, a prefix), written to eval_results.json and TensorBoard (with the
        training summary, if any). `tfrecords`: evaluate on these files (e.g. a held-out shard)
        instead of the config's."""
        c = self.config
        ckpt = TrainingCheckpoint(self.model, self.optimizer, self.step, self.loss_scale)
        latest = checkpoint or self.run.latest_checkpoint()
        if latest is None:
            raise UserError(f"no checkpoint to evaluate in {self.run.path}")
        ckpt.restore_for_eval(latest)
        iterators = self.iterators(is_training=False, tfrecords=tfrecords)
        eval_fn = eval_function(
            self.model, self.step, self.strategy, self.layout, c.general.seed, self.jit_compile
        )
        sums: Dict[str, np.ndarray] = {}
        steps = 0
        for _ in range(c.general.num_eval_steps):
            try:
                out = eval_fn(iterators)
            except (StopIteration, tf.errors.OutOfRangeError):
                break
            except READ_ERRORS as e:
                raise self._read_error(e, None) from None
            for k, v in out.items():
                sums[k] = sums.get(k, 0) + v.numpy().astype(np.float64)
            steps += 1
        if not steps:
            raise UserError(
                f"no eval data in {tfrecords or c.paths.pretrain_tfrecords} "
                "(eval_batch_size too big?)"
            )
        metrics = self.model.metrics_from_sums(sums)
        # the total loss the run minimises (whatever the objective), averaged over eval batches
        # (each replica's batch loss is summed by the all-reduce)
        metrics["loss"] = float(sums["loss"] / (steps * self.layout.num_replicas))
        metrics["global_step"] = int(self.step.numpy())
        metrics["eval_steps"] = steps
        metrics["train_flops"] = metrics["global_step"] * self.flops_per_step  # paper convention
        metrics["flops_per_step"] = self.flops_per_step
        metrics["real_flops_per_step"] = self.real_flops_per_step
        metrics["train_flops_real"] = metrics["global_step"] * self.real_flops_per_step
        metrics.update(self.train_summary)
        if self.layout.is_chief:
            self.run.write_eval_results(metrics)
            writer = tf.summary.create_file_writer(self.run.summaries_dir("eval"))
            write_scalars(writer, metrics, metrics["global_step"])
        return metrics
