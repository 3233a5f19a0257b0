"""The training and evaluation steps: one replica's work, and the tf.functions that run it on
every replica.

A step of the global batch: the loss denominators are summed over replicas first (so a batch
split over replicas and gradient-accumulation micro-batches is normalised as a whole), each
micro-batch's gradients are summed, all-reduced, unscaled, clipped by global norm and applied.
Dropout seeds are a function of (seed, step, replica, micro-batch), masking and sampling of
(seed, step, example content): a step replays exactly on resume.
"""

import dataclasses
from typing import Any, Callable, Dict, Optional

import tensorflow as tf

from electra_tf.optimization import dense_gradients
from electra_tf.train.inputs import run_on_replicas
from electra_tf.train.strategy import ReplicaLayout


def steps_in_call(
    step: int, last: int, iterations: int, log_every: int, save_every: int, boundary: int = 0
) -> int:
    """Steps the next call of the step function runs from `step`: `iterations_per_loop`, cut at
    the next multiple of log_every_steps and of save_checkpoints_steps and at the last step, so
    that progress lines and checkpoints come where they would one step per call, and at a
    two-stage `boundary` (0: none) after `step`."""
    n = min(iterations, last - step)
    for every in (log_every, save_every):
        n = min(n, every - step % every)
    if step < boundary:
        n = min(n, boundary - step)
    return max(n, 1)


@dataclasses.dataclass
class TrainStep:
    """Builds the training step's tf.function.

    Args:
        model: the `ElectraPretrainer`.
        optimizer: its `ElectraAdamW`.
        loss_scale: the loop's `train.loss_scale.DynamicLossScale`.
        step: the global step variable (int64), incremented once per step.
        strategy, layout: the tf.distribute strategy and this process's `ReplicaLayout`.
        seed: the run's seed.
        accumulation_steps: micro-batches per replica batch.
        jit_compile: XLA-compile the replica's work: on one replica the whole step (gradients,
            clipping and the update, fused), on several the gradient computation only (the
            all-reduce and the update run outside XLA).
        allreduce_dtype: all-reduce the gradients in this dtype (None: float32).
        stage: two-stage training's stage ("generator" or "discriminator"; None: off), what
            the model's loss covers.
        variables: the trainable variables the step updates (None: all); the others get no
            gradient and the optimizer leaves them (and their slots) untouched.
        dropout_seeds: (step, replica, micro-batch index) -> the stateless dropout seed (a
            [2] int32 tensor, or None: the model's own random generators); None: pretraining's
            (seed, step * 4099 + replica * 131 + index).

    `model` is a task: `denominators(batch, step, seed)` -> the loss's normalisers for the
    replica batch (summed over replicas by the step) and `compute(micro_batch, step=, seed=,
    training=, dropout_seed=, global_denominators=, stage=)` -> {"loss": ..., sums ...}; the
    pretrainer is one, the fine-tuning model another.
    """

    model: Any
    optimizer: Any
    loss_scale: Any  # the loop's `train.loss_scale.DynamicLossScale`
    step: tf.Variable
    strategy: tf.distribute.Strategy
    layout: ReplicaLayout
    seed: int
    accumulation_steps: int = 1
    jit_compile: bool = False
    allreduce_dtype: Optional[str] = None
    stage: Optional[str] = None
    variables: Optional[list] = None
    dropout_seeds: Optional[Callable[[Any, Any, int], Optional[tf.Tensor]]] = None

    def __post_init__(self):
        self._slots = None  # where `variables` sit among the optimizer's (all trainable)
        if self.variables is not None:
            index = {id(v): i for i, v in enumerate(self.model.trainable_weights)}
            self._slots = [index[id(v)] for v in self.variables]
        self._gradients = self.gradients
        if self.jit_compile and self.layout.num_replicas > 1:
            self._gradients = tf.function(self.gradients, jit_compile=True)

    def dropout_seed(self, step, replica, index: int) -> Optional[tf.Tensor]:
        if self.dropout_seeds is not None:
            return self.dropout_seeds(step, replica, index)
        return tf.stack(
            [
                tf.cast(self.seed, tf.int32),
                tf.cast(step, tf.int32) * 4099 + tf.cast(replica, tf.int32) * 131 + index,
            ]
        )

    def gradients(self, batch, dens, replica):
        """(summed gradients of this replica's micro-batches, scaled by the loss scale; summed
        outputs) for one replica batch."""
        step = self.step
        variables = self.model.trainable_weights if self.variables is None else self.variables
        accum = self.accumulation_steps
        scale = self.loss_scale.scale

        def micro_grads(micro, index):
            dropout_seed = self.dropout_seed(step, replica, index)
            with tf.GradientTape() as tape:
                out = self.model.compute(
                    micro,
                    step=step,
                    seed=self.seed,
                    training=True,
                    dropout_seed=dropout_seed,
                    global_denominators=dens,
                    stage=self.stage,
                )
                scaled = out["loss"] * scale
            grads = tape.gradient(scaled, variables)
            grads = dense_gradients(grads, variables)
            return grads, out

        if accum == 1:
            return micro_grads(batch, 0)
        micro_batches = {
            k: tf.reshape(v, [accum, -1] + v.shape[1:].as_list()) for k, v in batch.items()
        }
        grads, out = micro_grads({k: v[0] for k, v in micro_batches.items()}, 0)
        for i in range(1, accum):
            g_i, out_i = micro_grads({k: v[i] for k, v in micro_batches.items()}, i)
            grads = [a + b for a, b in zip(grads, g_i)]
            out = {k: out[k] + out_i[k] for k in out}
        return grads, out

    def replica_step(self, batch) -> Dict[str, tf.Tensor]:
        ctx = tf.distribute.get_replica_context()
        dens = self.model.denominators(batch, self.step, self.seed)
        dens = ctx.all_reduce(tf.distribute.ReduceOp.SUM, dens)
        replica = ctx.replica_id_in_sync_group
        if not isinstance(replica, tf.Tensor):
            replica = tf.constant(replica)
        grads, out = self._gradients(batch, dens, replica)
        scale = self.loss_scale.scale
        grads = self.all_reduce(ctx, [tf.cast(g, tf.float32) for g in grads], scale)
        out = ctx.all_reduce(tf.distribute.ReduceOp.SUM, out)
        finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads])
        grads, grad_norm = self.optimizer.clip(grads)
        lr = self.optimizer.current_learning_rate()
        if self._slots is not None:  # None for the variables this step does not update
            full = [None] * len(self.model.trainable_weights)
            for i, g in zip(self._slots, grads):
                full[i] = g
            grads = full
        self.loss_scale.apply(self.optimizer, grads, finite)
        out["grad_norm"] = grad_norm
        out["learning_rate"] = lr
        return out

    def all_reduce(self, ctx, grads, scale):
        """Sum over replicas, then unscale. In `allreduce_dtype` the (still loss-scaled)
        gradients travel in half precision, so that float16's range sees the scaled values."""
        if self.allreduce_dtype is None:
            grads = [g / scale for g in grads]
            return ctx.all_reduce(tf.distribute.ReduceOp.SUM, grads)
        half = [tf.cast(g, self.allreduce_dtype) for g in grads]
        summed = ctx.all_reduce(tf.distribute.ReduceOp.SUM, half)
        return [tf.cast(g, tf.float32) / scale for g in summed]

    def function(self):
        """A tf.function(iterators, num_steps) running `num_steps` (>= 1) steps on every replica
        in one call; returns the last step's outputs (the first local replica's: all-reduced
        sums, the loss) and every step's loss [num_steps]."""
        compute = self.replica_step
        if self.jit_compile and self.layout.num_replicas == 1:
            compute = tf.function(compute, jit_compile=True)

        # One graph function for a step, never inlined into its caller: a step then computes
        # exactly the same floats whether it runs first in a call or later inside the loop,
        # so a run resumed mid-loop (calls of other lengths) replays bit for bit.
        @tf.function(experimental_attributes={"_noinline": True})
        def one_step(iterators):
            out = run_on_replicas(self.strategy, self.layout, compute, iterators)
            self.step.assign_add(1)
            return self.strategy.experimental_local_results(out)[0]

        @tf.function
        def train_fn(iterators, num_steps):
            losses = tf.TensorArray(tf.float32, size=num_steps)
            out = one_step(iterators)
            losses = losses.write(0, tf.cast(out["loss"], tf.float32))
            for i in tf.range(1, num_steps):
                out = one_step(iterators)
                losses = losses.write(i, tf.cast(out["loss"], tf.float32))
            return out, losses.stack()

        return train_fn


def eval_function(model, step: tf.Variable, strategy, layout: ReplicaLayout, seed: int, jit):
    """A tf.function(iterators) of one evaluation batch per replica: the objective's loss and
    eval statistics, summed over replicas."""

    def replica_eval(batch):
        ctx = tf.distribute.get_replica_context()
        out = model.compute(batch, step=step, seed=seed, training=False, with_eval_stats=True)
        return ctx.all_reduce(tf.distribute.ReduceOp.SUM, out)

    fn = tf.function(replica_eval, jit_compile=True) if jit and layout.num_replicas == 1 else None

    @tf.function
    def eval_fn(iterators):
        out = run_on_replicas(strategy, layout, fn or replica_eval, iterators)
        return strategy.experimental_local_results(out)[0]

    return eval_fn
