"""Dynamic loss scaling: skip and halve on non-finite gradients, double after a run of finite
steps, never below 1; without float16 every step is applied at scale 1."""

import tensorflow as tf

from electra_tf.train.loss_scale import DynamicLossScale


class CountingOptimizer:
    """Records which update path the loss scale took."""

    def __init__(self):
        self.cross_replica_updates = tf.Variable(0)
        self.plain_updates = 0

    def update_replicas(self, strategy, grads):
        self.cross_replica_updates.assign_add(1)

    def apply_gradients(self, grads):
        self.plain_updates += 1


def test_scale_halves_on_overflow_and_doubles_after_the_growth_interval():
    scaler = DynamicLossScale(enabled=True, initial_scale=8.0, growth_interval=2)
    opt = CountingOptimizer()
    grads = [tf.ones([2])]
    history = []
    for finite in (True, True, False, True, False, False, False, False):
        scaler.apply(opt, grads, tf.constant(finite))
        history.append(
            (
                float(scaler.scale.numpy()),
                int(scaler.good_steps.numpy()),
                int(opt.cross_replica_updates.numpy()),
            )
        )
    assert history == [
        (8.0, 1, 1),  # applied
        (16.0, 0, 2),  # the second finite step in a row doubles the scale
        (8.0, 0, 2),  # overflow: skipped, halved
        (8.0, 1, 3),
        (4.0, 0, 3),
        (2.0, 0, 3),
        (1.0, 0, 3),
        (1.0, 0, 3),  # never below 1
    ]
    assert opt.plain_updates == 0


def test_disabled_scale_applies_every_step_at_one():
    scaler = DynamicLossScale(enabled=False)
    opt = CountingOptimizer()
    for finite in (True, False):
        scaler.apply(opt, [tf.ones([2])], tf.constant(finite))
    assert opt.plain_updates == 2 and int(opt.cross_replica_updates.numpy()) == 0
    assert float(scaler.scale.numpy()) == 1.0
