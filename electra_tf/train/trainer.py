"""Pretraining as a task of the one training loop (`train.loop`).

A `Trainer` builds the pretraining model, optimizer and inputs and hands them to the loop; it
owns one run directory (`model_dir`), locked while it trains or evaluates (by the
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
import tempfile
import time
from typing import Dict, Optional

import keras
import numpy as np
import tensorflow as tf

from electra_tf import pretraining_networks, run_dir, vocab
from electra_tf.checkpoint import locate
from electra_tf.checkpoint.manager import warm_start_and_log
from electra_tf.errors import UserError
from electra_tf.optimization import embedding_lr_multipliers, make_optimizer
from electra_tf.pretraining_config import PretrainingConfig
from electra_tf.pretraining_data import count_vectors
from electra_tf.train import step_path, two_stage
from electra_tf.train.inputs import READ_ERRORS, input_files, read_error, replica_dataset
from electra_tf.train.loop import LoopSettings, TrainingLoop, TrainingTask, machine_peak_flops
from electra_tf.train.progress import log
from electra_tf.train.step import eval_function
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


class Trainer(TrainingTask):
    """Builds everything a pretraining run needs (model, optimizer, inputs) and trains it with
    the one loop (`train.loop.TrainingLoop`) or evaluates it.

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
        self.loop = TrainingLoop(strategy or build_strategy(c.scale.distribution))
        self.strategy, self.layout = self.loop.strategy, self.loop.layout
        self.loop.check_batch(c.optimization.train_batch_size, c.scale.gradient_accumulation_steps)
        c.model_configs(self.vocab_size)  # an impossible model config stops before the lock
        # one writer per run directory (non-chief workers write only to their scratch dirs): a
        # live holder stops the run here; `_holding_lock` holds it while training or evaluating
        if self.layout.is_chief:
            self.run.lock(log).release()

        # precision / XLA: as set, or the fastest measured path for "auto" (`train.step_path`)
        def resumed_config():
            return self.run.config_path if locate.latest_checkpoint(self.run) else None

        self.path = self.loop.choose_path(
            c.scale.precision, c.scale.jit_compile, c.scale.fused_elementwise,
            measured=dict(config=c, time_path=self._seconds_per_step,
                          resumed_config=resumed_config, vocab_size=self.vocab_size),
        )  # fmt: skip
        self.path_reason = self.loop.path_reason
        scale = dataclasses.replace(c.scale, **self.path.hparams())
        self.config = c = dataclasses.replace(c, scale=scale)
        keras.utils.set_random_seed(int(c.general.seed))  # same initial weights for a given seed
        o = c.optimization
        with self.strategy.scope():
            self.model = pretraining_networks.build_pretrainer(c, self.vocab_size, self.special_ids)
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
        flops = pretraining_networks.step_flops(c, self.vocab_size)
        # the paper's convention (lookups as dense products, backward = forward): train_flops
        self.flops_per_step = flops.paper
        # the step's real arithmetic (lookups as gathers, backward = 2x forward): FLOP/s, MFU
        self.real_flops_per_step = flops.real
        self.train_summary: Dict[str, float] = {}  # filled by train(), merged into evaluate()

    @property
    def jit_compile(self) -> bool:
        return self.path.jit_compile

    @property
    def jit_reason(self) -> str:
        return self.path_reason

    @property
    def loss_scale(self):
        return self.loop.loss_scale

    @property
    def peak_flops(self) -> float:
        return machine_peak_flops(self.config.scale.precision, self.config.scale.peak_flops)[0]

    @property
    def peak_source(self) -> str:
        return machine_peak_flops(self.config.scale.precision, self.config.scale.peak_flops)[1]

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
        self._is_training = is_training
        return self.loop.replica_iterators(self.dataset)

    def dataset(self, replica: int, layout: ReplicaLayout):
        """Global replica `replica`'s batches of the TFRecords `iterators` found."""
        return replica_dataset(self.config, self.files, replica, layout, self._is_training)

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

    def input_error(self, error: Exception, kept: Optional[str]) -> Optional[Exception]:
        """A read error from inside a step as one line naming the damaged shard (else None)."""
        return read_error(error, self.files, self.config.model.max_seq_length, kept)

    def checkpoint_items(self, loss_scale, iterators) -> dict:
        items = dict(model=self.model, optimizer=self.optimizer, step=self.step,
                     loss_scale=loss_scale.scale, good_steps=loss_scale.good_steps)  # fmt: skip
        for i, it in enumerate(iterators):
            items[f"iterator_{i}"] = it
        return items

    def begin(self, resumed: bool) -> None:
        if resumed:
            return
        if self.config.paths.init_checkpoint:
            warm_start_and_log(self.model, self.config.paths.init_checkpoint, log)
        elif self.config.model.word_embedding_init == "ppmi_svd":
            self._start_word_table_from_counts()

    def step_options(self, stage: Optional[str], layout: ReplicaLayout) -> dict:
        variables = self.two_stage.variables(stage) if stage else None
        return dict(seed=self.config.general.seed, stage=stage, variables=variables)

    def stage(self, step: int) -> Optional[str]:
        return self.two_stage.start_call(step, log) if self.two_stage else None

    @property
    def stage_boundary(self) -> int:
        return self.config.optimization.two_stage_steps

    def progress_values(self, out) -> dict:
        return {"mlm": float(out["mlm_loss_sum"] / out["mlm_weight_sum"])}

    def step_function(self, stage: Optional[str] = None):
        """The training step as a tf.function(iterators, num_steps) (what `train` runs); with
        two-stage training, `stage`'s (see `train.two_stage`)."""
        return self.loop.train_function(self, self.settings(), stage)

    def settings(self) -> LoopSettings:
        c = self.config
        chief = self.layout.is_chief
        return LoopSettings(
            num_steps=c.optimization.num_train_steps,
            global_batch=c.optimization.train_batch_size,
            accumulation_steps=c.scale.gradient_accumulation_steps,
            iterations_per_loop=c.scale.iterations_per_loop,
            log_every_steps=c.general.log_every_steps,
            save_checkpoints_steps=c.general.save_checkpoints_steps,
            allreduce_dtype=c.scale.allreduce_dtype,
            peak_flops=c.scale.peak_flops,
            checkpoint_dir=self.run.path,
            worker_checkpoint_dir=None if chief else self.run.worker_dir(self.layout.task_id),
            keep_checkpoints=c.general.keep_checkpoint_max,
            summaries_dir=self.run.summaries_dir("train"),
            name=c.model_name,
            paper_flops_per_step=self.flops_per_step,
            real_flops_per_step=self.real_flops_per_step,
        )

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
        self.run.makedirs()
        self.write_run_config()
        self.files = input_files(self.config, None, log)
        self._is_training = True
        self.train_summary = self.loop.train(self, self.settings())
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
        latest = checkpoint or locate.latest_checkpoint(self.run)
        if latest is None:
            raise UserError(f"no checkpoint to evaluate in {self.run.path}")
        self.loop.restore_model(dict(model=self.model, step=self.step), latest)
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
                raise self.input_error(e, None) or e from None
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
        self.loop.write_summaries(self.run.summaries_dir("eval"), metrics, metrics["global_step"])
        return metrics
