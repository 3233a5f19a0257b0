"""The one training loop, for every job: pretraining (`train.Trainer`) and each fine-tuning
trial (`finetune.trainer.TrialTask`) are tasks handed to it.

A task builds its model, optimizer and step counter (in the loop's strategy scope) and its
inputs, and says what it checkpoints; it owns nothing of the loop. The loop owns the replica
layout and per-replica inputs, the path (precision, XLA) decision, the loss scale, the step
function (steps per call, accumulation, clipping: `train.step.TrainStep`), the save schedule and
exact resume (`checkpoint.manager.CheckpointKeeper`), preemption (SIGTERM / Ctrl-C save a
checkpoint and exit with 128 + the signal's number), the non-finite-loss stop, progress lines
and MFU against one peak measurement a process (`train.progress`), and TensorBoard summaries.
"""

import dataclasses
import signal
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf

from electra_tf.checkpoint.manager import CheckpointKeeper
from electra_tf.errors import UserError
from electra_tf.train import devices, step_path
from electra_tf.train.inputs import READ_ERRORS
from electra_tf.train.loss_scale import DynamicLossScale
from electra_tf.train.preemption import StopSignal
from electra_tf.train.progress import ProgressLog, log, write_scalars
from electra_tf.train.step import TrainStep, steps_in_call
from electra_tf.train.strategy import ReplicaLayout

# the matmul peak (MFU's denominator) once a process: fine-tuning's trials share the machine,
# and on a busy one (where the measurement is not cached) each would measure it again
_PEAKS: Dict[Tuple[str, Optional[float]], Tuple[float, str]] = {}


def machine_peak_flops(precision: str, override: Optional[float] = None) -> Tuple[float, str]:
    """(the machine's matmul peak FLOP/s in `precision`'s compute dtype, where it comes from)."""
    key = (precision, override)
    if key not in _PEAKS:
        _PEAKS[key] = devices.peak_flops(precision, override)
    return _PEAKS[key]


@dataclasses.dataclass(frozen=True)
class LoopSettings:
    """What the loop is asked to do: the hparams both jobs share, and where things go.

    Args:
        num_steps: the last step.
        global_batch: examples a step (all replicas, all micro-batches).
        accumulation_steps: micro-batches per replica batch.
        iterations_per_loop: steps one call of the step function runs at most.
        log_every_steps, save_checkpoints_steps: progress lines and checkpoints at multiples.
        allreduce_dtype: the gradients' all-reduce dtype (None: float32).
        peak_flops: MFU's denominator if set, else measured (once a process).
        checkpoint_dir: where checkpoints are saved (None: none are).
        worker_checkpoint_dir: where a non-chief worker saves instead (saving is collective).
        resume_from_chief: a non-chief worker resumes from `checkpoint_dir` (else from its own).
        discard_worker_checkpoints: a non-chief worker removes its copy when training ends.
        keep_checkpoints: checkpoints kept (None: all).
        save_at_end: save when the last step is done (else only at multiples before it).
        precision, jit_compile: the path taken by rule when the task has not asked
            `choose_path` for one before building its model (fine-tuning's precision is set).
        summaries_dir: TensorBoard directory of the chief (None: no summaries).
        name: what the header line calls the run.
        log_prefix: before the loop's own lines (e.g. "trial 2: ").
        paper_flops_per_step, real_flops_per_step: the step's FLOPs in the paper's convention
            (summed into `train_flops`; 0: not counted) and its real arithmetic (FLOP/s, MFU).
    """

    num_steps: int
    global_batch: int
    accumulation_steps: int = 1
    iterations_per_loop: int = 1
    log_every_steps: int = 100
    save_checkpoints_steps: int = 1000
    allreduce_dtype: Optional[str] = None
    peak_flops: Optional[float] = None
    checkpoint_dir: Optional[str] = None
    worker_checkpoint_dir: Optional[str] = None
    resume_from_chief: bool = False
    discard_worker_checkpoints: bool = False
    keep_checkpoints: Optional[int] = None
    save_at_end: bool = True
    precision: str = "float32"
    jit_compile: Any = False
    summaries_dir: Optional[str] = None
    name: str = ""
    log_prefix: str = ""
    paper_flops_per_step: float = 0.0
    real_flops_per_step: float = 0.0


class TrainingTask:
    """What a job gives the loop (a single-replica view of its training, as Model Garden's
    `Task`). Subclasses set `model`, `optimizer` and `step` (an int64 variable) in the loop's
    strategy scope and override what differs from these defaults."""

    model: Any = None
    optimizer: Any = None
    step: Optional[tf.Variable] = None
    # the input iterators' positions are checkpointed (pretraining's); else the inputs are made
    # after the restore, from the restored state (a trial's data seed and step)
    checkpoints_inputs: bool = True

    def dataset(self, replica: int, layout: ReplicaLayout) -> tf.data.Dataset:
        """The batches of global replica `replica` (each of global_batch / replicas rows)."""
        raise NotImplementedError

    def checkpoint_items(self, loss_scale: DynamicLossScale, iterators: List) -> Dict[str, Any]:
        """What a checkpoint holds, by name (the names are the checkpoint's keys)."""
        raise NotImplementedError

    def begin(self, resumed: bool) -> None:
        """Called after the restore (`resumed`: a checkpoint was), before the first step: a
        fresh start's warm start or word table from counts."""

    def step_options(self, stage: Optional[str], layout: ReplicaLayout) -> Dict[str, Any]:
        """`TrainStep` keyword arguments: `seed`, and `stage` / `variables` / `dropout_seeds`."""
        return {"seed": 0}

    def stage(self, step: int) -> Optional[str]:
        """Two-stage training's stage from `step` (None: one stage)."""
        return None

    stage_boundary: int = 0  # the step a second stage starts at (0: none)

    def progress_values(self, out: Dict[str, tf.Tensor]) -> Dict[str, float]:
        """Figures of the step's outputs for the progress line, after the loss."""
        return {}

    def input_error(self, error: Exception, kept: Optional[str]) -> Optional[Exception]:
        """What a read error from inside a step means, as one line (None: re-raise it)."""
        return None

    def before_save(self) -> None:
        """Called before each checkpoint is written (state the task keeps up to date)."""


class TrainingLoop:
    """Trains a `TrainingTask` on a tf.distribute strategy (see the module docstring).

    Args:
        strategy: the strategy every replica of the job runs in.
        log_prefix: before the loop's own lines (e.g. "trial 2: ").
    """

    def __init__(self, strategy: tf.distribute.Strategy, log_prefix: str = ""):
        self.strategy = strategy
        self.layout = ReplicaLayout.of(strategy)
        self.log_prefix = log_prefix
        self.path: Optional[step_path.StepPath] = None
        self.path_reason = ""
        self._loss_scale: Optional[DynamicLossScale] = None

    # -- before the task builds its model -------------------------------------------------------
    def check_batch(self, global_batch: int, accumulation_steps: int) -> None:
        n = self.layout.num_replicas
        if global_batch % (n * accumulation_steps):
            raise UserError(
                f"train_batch_size {global_batch} is not divisible by {n} replicas x "
                f"{accumulation_steps} accumulation steps"
            )

    def choose_path(
        self,
        precision: str,
        jit_compile,
        fused_elementwise: bool = False,
        num_steps: Optional[int] = None,
        measured: Optional[Dict[str, Any]] = None,
    ) -> step_path.StepPath:
        """The step's path (precision, XLA), before the model is built in its precision:
        `measured` (pretraining's `step_path.choose` arguments: config, time_path, ...) chooses
        "auto" values by measuring; without it, a run of `num_steps` steps takes the rule."""
        if measured is not None:
            path, why = step_path.choose(
                **measured,
                num_replicas=self.layout.num_replicas,
                log=log,
                multi_worker=self.layout.num_replicas > self.layout.num_local,
            )
        else:
            path, why = step_path.by_rule(precision, jit_compile, fused_elementwise, num_steps)
        self.path, self.path_reason = path, why
        return path

    @property
    def loss_scale(self) -> DynamicLossScale:
        """The loss scale (dynamic for float16, else a constant 1), made in the strategy's scope."""
        if self._loss_scale is None:
            with self.strategy.scope():
                self._loss_scale = DynamicLossScale(
                    enabled=self.path is not None and self.path.precision == "mixed_float16"
                )
        return self._loss_scale

    # -- the pieces a task's run is made of -----------------------------------------------------
    def replica_iterators(self, dataset: Callable[[int, ReplicaLayout], tf.data.Dataset]) -> List:
        """One iterator per local replica (checkpointable, unlike tf.distribute's distributed
        iterators), over `dataset(global replica index, layout)`."""
        first = self.layout.first_local_replica
        with tf.device("/cpu:0"):
            return [iter(dataset(first + i, self.layout)) for i in range(self.layout.num_local)]

    def train_function(self, task: TrainingTask, settings: LoopSettings, stage=None):
        """The step as a tf.function(iterators, num_steps) (what `train` runs)."""
        return self.train_step(task, settings, stage).function()

    def train_step(self, task: TrainingTask, settings: LoopSettings, stage=None) -> TrainStep:
        """The loop's `TrainStep` for `task` (its replica step is what the profiler counts)."""
        if self.path is None:
            self.choose_path(settings.precision, settings.jit_compile, num_steps=settings.num_steps)
        return TrainStep(
            task.model,
            task.optimizer,
            self.loss_scale,
            task.step,
            self.strategy,
            self.layout,
            accumulation_steps=settings.accumulation_steps,
            jit_compile=self.path.jit_compile,
            allreduce_dtype=settings.allreduce_dtype,
            **task.step_options(stage, self.layout),
        )

    def summary_writer(self, directory: Optional[str]):
        """The chief's TensorBoard writer of `directory` (a no-op one elsewhere, or for None)."""
        if self.layout.is_chief and directory is not None:
            return tf.summary.create_file_writer(directory)
        return tf.summary.create_noop_writer()

    def write_summaries(self, directory: str, values: Dict[str, float], step: int) -> None:
        write_scalars(self.summary_writer(directory), values, step)

    @staticmethod
    def restore_model(items: Dict[str, Any], prefix: str) -> None:
        """Restores `items` of a training checkpoint, ignoring its training-only state."""
        CheckpointKeeper(items, None, None).restore_for_eval(prefix)

    def _keeper(self, task, settings, iterators) -> CheckpointKeeper:
        items = task.checkpoint_items(self.loss_scale, iterators)
        save_dir, restore_from = settings.checkpoint_dir, None
        if save_dir is not None and not self.layout.is_chief:
            save_dir = settings.worker_checkpoint_dir
            if settings.resume_from_chief:
                restore_from = settings.checkpoint_dir
        return CheckpointKeeper(items, task.step, save_dir, restore_from, settings.keep_checkpoints)

    # -- the loop -------------------------------------------------------------------------------
    def train(self, task: TrainingTask, settings: LoopSettings) -> Dict[str, float]:
        """Trains `task` to `settings.num_steps`, resuming from its newest complete checkpoint;
        returns the training summary ({} when it had already finished)."""
        p, s = self.log_prefix, settings
        if self.path is None:
            self.choose_path(s.precision, s.jit_compile, num_steps=s.num_steps)
        self.check_batch(s.global_batch, s.accumulation_steps)
        iterators = self.replica_iterators(task.dataset) if task.checkpoints_inputs else []
        keeper = self._keeper(task, s, iterators)
        resumed = keeper.restore_latest(log)
        if resumed:
            log(f"{p}resumed from {resumed} at step {int(task.step.numpy())}")
        task.begin(bool(resumed))
        if not task.checkpoints_inputs:
            iterators = self.replica_iterators(task.dataset)
        start_step = int(task.step.numpy())
        if start_step >= s.num_steps:
            log(f"{p}training already finished ({start_step} steps)")
            return {}
        peak, peak_source = machine_peak_flops(self.path.precision, s.peak_flops)
        flops = f"{s.real_flops_per_step:.3e} FLOPs/step (real)"
        if s.paper_flops_per_step:  # the job counts the paper's convention too
            flops = f"{s.paper_flops_per_step:.3e} FLOPs/step (paper convention), " + flops
        log(
            f"{p}training {s.name}: steps {start_step} -> {s.num_steps}, global batch "
            f"{s.global_batch} on {self.layout.num_replicas} replica(s) x "
            f"{s.accumulation_steps} micro-batch(es), {self.path.describe()} "
            f"({self.path_reason}); {flops}; peak {peak / 1e9:.1f} GFLOP/s ({peak_source})"
        )
        progress = ProgressLog(
            s.num_steps, s.log_every_steps, s.global_batch, s.real_flops_per_step, peak,
            self.summary_writer(s.summaries_dir), log_prefix=p,
        )  # fmt: skip
        total_flops = start_step * s.paper_flops_per_step
        train_fns: Dict[Optional[str], Any] = {}  # by two-stage stage (None: one stage)

        def save() -> None:
            if keeper.manager is not None:
                task.before_save()
                keeper.save()

        with StopSignal((signal.SIGTERM, signal.SIGINT)) as stop:
            while int(task.step.numpy()) < s.num_steps:
                step = int(task.step.numpy())
                stage = task.stage(step)
                if stage not in train_fns:
                    train_fns[stage] = self.train_function(task, s, stage)
                n = 1  # the first call runs one step (it includes tracing and compilation)
                if progress.compiled:
                    n = steps_in_call(
                        step, s.num_steps, s.iterations_per_loop, s.log_every_steps,
                        s.save_checkpoints_steps, task.stage_boundary,
                    )  # fmt: skip
                try:
                    out, losses = train_fns[stage](iterators, tf.constant(n, tf.int32))
                except READ_ERRORS as e:
                    found = task.input_error(e, keeper.latest)
                    if found is None:
                        raise
                    raise found from None
                losses = losses.numpy()
                step = int(task.step.numpy())
                progress.step_done(step, n, losses)
                self._check_finite(losses, step, keeper.latest)
                total_flops += n * s.paper_flops_per_step
                # as the original: at multiples of save_checkpoints_steps
                if step % s.save_checkpoints_steps == 0 and (step < s.num_steps or s.save_at_end):
                    save()
                if progress.due(step):
                    progress.write(step, out, task.progress_values(out), total_flops)
                if stop.received is not None:
                    save()
                    what = "saved a checkpoint" if keeper.manager is not None else "stopped"
                    log(f"{p}received signal {stop.received}: {what} at step {step}")
                    raise SystemExit(128 + int(stop.received))
        step = int(task.step.numpy())
        if s.save_at_end:
            save()
            log(f"{p}saved {keeper.latest}")
        task.before_save()  # the task's bookkeeping (e.g. seconds trained) up to date
        if s.discard_worker_checkpoints and keeper.manager is not None and not self.layout.is_chief:
            # a trial shorter than one save interval never wrote its scratch copy
            if tf.io.gfile.exists(keeper.manager.directory):
                tf.io.gfile.rmtree(keeper.manager.directory)
        return progress.summary(start_step, step, total_flops)

    def _check_finite(self, losses, step: int, kept: Optional[str]) -> None:
        """A non-finite loss stops the run, naming its step and the checkpoint kept."""
        bad = np.flatnonzero(~np.isfinite(losses))
        if bad.size:
            i = int(bad[0])
            raise UserError(
                f"{self.log_prefix}non-finite loss ({losses[i]}) at step "
                f"{step - len(losses) + i + 1}; the last good checkpoint is {kept or 'none'} "
                "(kept): lower the learning_rate, or check the data"
            )
