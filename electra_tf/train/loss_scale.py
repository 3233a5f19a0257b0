"""Dynamic loss scaling for float16 (a no-op scale of 1 for the other precisions)."""

import tensorflow as tf


class DynamicLossScale(tf.Module):
    """The loss is multiplied by `scale` before the gradients are taken and the gradients are
    divided by it after: float16 gradients then neither underflow nor overflow. A step whose
    gradients are not finite is skipped and halves the scale (never below 1); `growth_interval`
    finite steps in a row double it.

    Args:
        enabled: float16 training; otherwise the scale stays 1 and every step is applied.
        initial_scale: the starting scale when enabled (2^15, as Keras's).
        growth_interval: finite steps before the scale doubles (2000, as Keras's).

    Example:
        scaler = DynamicLossScale(enabled=True)
        ...  # scaled = loss * scaler.scale; grads = [g / scaler.scale for g in grads]
        scaler.apply(optimizer, grads, finite)
    """

    def __init__(self, enabled: bool, initial_scale: float = 2.0**15, growth_interval: int = 2000):
        super().__init__(name="dynamic_loss_scale")
        self.enabled = enabled
        self.growth_interval = growth_interval
        self.scale = tf.Variable(
            initial_scale if enabled else 1.0, trainable=False, name="loss_scale"
        )
        self.good_steps = tf.Variable(0, dtype=tf.int64, trainable=False, name="good_steps")

    def apply(self, optimizer, grads, finite: tf.Tensor) -> None:
        """In a replica context: applies `grads` (already all-reduced) with `optimizer` if they
        are finite and updates the scale; without loss scaling, applies them."""
        if not self.enabled:
            optimizer.apply_gradients(grads)
            return
        ctx = tf.distribute.get_replica_context()
        if tf.distribute.get_strategy().num_replicas_in_sync == 1 and ctx is not None:
            self._apply_cross_replica(tf.distribute.get_strategy(), optimizer, grads, finite)
        else:
            ctx.merge_call(self._apply_cross_replica, args=(optimizer, grads, finite))

    def _apply_cross_replica(self, strategy, optimizer, grads, finite):
        def apply():
            optimizer.update_replicas(strategy, grads)
            self.good_steps.assign_add(1)
            return tf.constant(True)

        def skip():
            self.scale.assign(tf.maximum(self.scale / 2.0, 1.0))
            self.good_steps.assign(0)
            return tf.constant(False)

        tf.cond(finite, apply, skip)
        grow = self.good_steps >= self.growth_interval
        self.scale.assign(tf.where(grow, self.scale * 2.0, self.scale))
        self.good_steps.assign(tf.where(grow, tf.zeros_like(self.good_steps), self.good_steps))
