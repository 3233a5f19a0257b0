"""The training and evaluation steps: one replica's work, and the tf.functions that run it on
every replica.

A step of the global batch: the loss denominators are summed over replicas first (so a batch
split over replicas and gradient-accumulation micro-batches is normalised as a whole), each
micro-batch's gradients are summed, all-reduced, unscaled, clipped by global norm and applied.
Dropout seeds are a function of (seed, step, replica, micro-batch), masking and sampling of
(seed, step, example content): a step replays exactly on resume.
"""

import dataclasses
from typing import Any, Dict

import tensorflow as tf

from electra_tf.optimization import dense_gradients
from electra_tf.train.inputs import run_on_replicas
from electra_tf.train.loss_scale import DynamicLossScale
from electra_tf.train.strategy import ReplicaLayout


@dataclasses.dataclass
class TrainStep:
    """Builds the training step's tf.function.

    Args:
        model: the `ElectraPretrainer`.
        optimizer: its `ElectraAdamW`.
        loss_scale: a `DynamicLossScale`.
        step: the global step variable (int64), incremented once per call.
        strategy, layout: the tf.distribute strategy and this process's `ReplicaLayout`.
        seed: the run's seed.
        accumulation_steps: micro-batches per replica batch.
        jit_compile: XLA-compile the replica step (single replica only).
    """

    model: Any
    optimizer: Any
    loss_scale: DynamicLossScale
    step: tf.Variable
    strategy: tf.distribute.Strategy
    layout: ReplicaLayout
    seed: int
    accumulation_steps: int = 1
    jit_compile: bool = False

    def replica_step(self, batch) -> Dict[str, tf.Tensor]:
        ctx = tf.distribute.get_replica_context()
        dens = ctx.all_reduce(tf.distribute.ReduceOp.SUM, self.model.denominators(batch))
        step = self.step
        replica = ctx.replica_id_in_sync_group
        if not isinstance(replica, tf.Tensor):
            replica = tf.constant(replica)
        variables = self.model.trainable_weights
        accum = self.accumulation_steps
        scale = self.loss_scale.scale

        def micro_grads(micro, index):
            dropout_seed = tf.stack(
                [
                    tf.cast(self.seed, tf.int32),
                    tf.cast(step, tf.int32) * 4099 + tf.cast(replica, tf.int32) * 131 + index,
                ]
            )
            with tf.GradientTape() as tape:
                out = self.model.compute(
                    micro,
                    step=step,
                    seed=self.seed,
                    training=True,
                    dropout_seed=dropout_seed,
                    global_denominators=dens,
                )
                scaled = out["loss"] * scale
            grads = tape.gradient(scaled, variables)
            grads = dense_gradients(grads, variables)
            return grads, out

        if accum == 1:
            grads, out = micro_grads(batch, 0)
        else:
            micro_batches = {
                k: tf.reshape(v, [accum, -1] + v.shape[1:].as_list()) for k, v in batch.items()
            }
            grads, out = micro_grads({k: v[0] for k, v in micro_batches.items()}, 0)
            for i in range(1, accum):
                g_i, out_i = micro_grads({k: v[i] for k, v in micro_batches.items()}, i)
                grads = [a + b for a, b in zip(grads, g_i)]
                out = {k: out[k] + out_i[k] for k in out}
        grads = [tf.cast(g, tf.float32) / scale for g in grads]
        grads = ctx.all_reduce(tf.distribute.ReduceOp.SUM, grads)
        out = ctx.all_reduce(tf.distribute.ReduceOp.SUM, out)
        finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads])
        grads, grad_norm = self.optimizer.clip(grads)
        lr = self.optimizer.current_learning_rate()
        self.loss_scale.apply(self.optimizer, grads, finite)
        out["grad_norm"] = grad_norm
        out["learning_rate"] = lr
        return out

    def function(self):
        """A tf.function(iterators) running one step on every replica; returns the first local
        replica's outputs (all-reduced sums and the loss)."""
        compute = self.replica_step
        if self.jit_compile and self.layout.num_replicas == 1:
            compute = tf.function(compute, jit_compile=True)

        @tf.function
        def train_fn(iterators):
            out = run_on_replicas(self.strategy, self.layout, compute, iterators)
            self.step.assign_add(1)
            return self.strategy.experimental_local_results(out)[0]

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
