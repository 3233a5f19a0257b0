"""ELECTRA's optimizer: AdamW without bias correction, its learning-rate schedule, layer-wise decay.

The optimizer is a `tf.Module` rather than a Keras optimizer: Keras clips gradients per replica
before summing them over replicas, while the original clips the global gradient. Here the caller
passes gradients already summed over replicas; the update runs on every replica's copy through
`tf.distribute`'s `extended.update`.
"""

import re
from typing import Callable, Dict, Iterable, Optional, Sequence

import tensorflow as tf
from tensorflow.python.trackable.data_structures import NoDependency


class ElectraSchedule:
    """lr(step) = peak * (1 - min(step, T)/T)^power * min(1, step / warmup), as the original.

    Warmup multiplies the already-decayed rate (it is not warmup-then-decay), so at the end of
    warmup the rate is peak * (1 - W/T), and lr(0) = 0.

    Example:
    >>> float(ElectraSchedule(1.0, 100, 10)(5))
    0.475
    """

    def __init__(self, peak_lr: float, num_train_steps: int, warmup_steps: int, power: float = 1.0):
        self.peak_lr = peak_lr
        self.num_train_steps = num_train_steps
        self.warmup_steps = warmup_steps
        self.power = power

    def __call__(self, step) -> tf.Tensor:
        step = tf.cast(step, tf.float32)
        total = float(self.num_train_steps)
        decayed = self.peak_lr * (1.0 - tf.minimum(step, total) / total) ** self.power
        if self.warmup_steps > 0:
            decayed *= tf.minimum(1.0, step / float(self.warmup_steps))
        return decayed


def layer_depth(variable_path: str, num_layers: int) -> int:
    """Depth of a variable for layer-wise LR: embeddings 0, layer i -> i+1, task head n+2."""
    if "/embeddings/" in variable_path or "embeddings_project/" in variable_path:
        return 0
    m = re.search(r"encoder/layer_(\d+)/", variable_path)
    if m:
        return int(m.group(1)) + 1
    return num_layers + 2


def layerwise_lr_multipliers(
    variables: Iterable[tf.Variable],
    num_layers: int,
    decay: float,
    fixed_top_layer: bool = False,
) -> Dict[str, float]:
    """decay^(max_depth - depth) per variable path.

    The original uses max depth n+2, so the top layer gets decay^2 although nothing sits at depth
    n+1 (a known quirk kept for reproducibility). `fixed_top_layer=True` uses max depth n+1 for
    the encoder, so the top layer gets decay^1 and the head 1.
    """
    out = {}
    for v in variables:
        path = _path(v)
        depth = layer_depth(path, num_layers)
        top = num_layers + 2
        if fixed_top_layer and depth <= num_layers:
            top = num_layers + 1
        out[path] = decay ** (top - depth)
    return out


def _path(v) -> str:
    return getattr(v, "path", None) or v.name.split(":")[0]


def _tf_var(v):
    return getattr(v, "value", v) if not isinstance(v, tf.Variable) else v


def dense_gradients(grads: Sequence, variables: Sequence) -> list:
    """The tape's gradients as dense tensors the optimizer can apply: IndexedSlices (from
    embedding gathers) densified, None (a variable this loss does not reach) as zeros."""
    return [
        tf.zeros_like(v) if g is None else tf.convert_to_tensor(g) for g, v in zip(grads, variables)
    ]


class ElectraAdamW(tf.Module):
    """Adam with decoupled weight decay and no bias correction (the original's optimizer).

    m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;  u = m / (sqrt(v) + eps) (+ wd * w unless the
    variable's path contains one of `exclude_from_weight_decay`);  w -= lr * multiplier * u.

    Args:
        learning_rate: a float or a callable step -> rate (e.g. `ElectraSchedule`).
        variables: the trainable variables (Keras or tf variables) it updates.
        weight_decay_rate, beta_1, beta_2, epsilon: as the original (0.01, 0.9, 0.999, 1e-6).
        exclude_from_weight_decay: substrings of variable paths without weight decay.
        clip_norm: global-norm clipping of the (replica-summed) gradients; None disables it.
        lr_multipliers: variable path -> learning-rate multiplier (layer-wise decay).
    """

    def __init__(
        self,
        learning_rate,
        variables: Sequence,
        weight_decay_rate: float = 0.01,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-6,
        exclude_from_weight_decay: Sequence[str] = ("LayerNorm", "layer_norm", "bias"),
        clip_norm: Optional[float] = 1.0,
        lr_multipliers: Optional[Dict[str, float]] = None,
        name: str = "electra_adamw",
    ):
        super().__init__(name=name)
        self.learning_rate = learning_rate
        self.weight_decay_rate = weight_decay_rate
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.exclude_from_weight_decay = tuple(exclude_from_weight_decay)
        self.clip_norm = clip_norm
        self.iterations = tf.Variable(0, dtype=tf.int64, trainable=False, name="iterations")
        # not tracked: checkpoints save the model's variables under the model, not here
        self._vars = NoDependency(list(variables))
        self._paths = [_path(v) for v in self._vars]
        if len(set(self._paths)) != len(self._paths):
            raise ValueError("two trainable variables share a path; layer names must be unique")
        self.lr_multipliers = [
            float((lr_multipliers or {}).get(p, 1.0)) if lr_multipliers is not None else 1.0
            for p in self._paths
        ]
        if lr_multipliers is not None:
            missing = [p for p in self._paths if p not in lr_multipliers]
            if missing:
                raise ValueError(f"no learning-rate multiplier for {missing[:3]}")
        self.decay_flags = [
            weight_decay_rate > 0 and not any(s in p for s in self.exclude_from_weight_decay)
            for p in self._paths
        ]
        self.m = []
        self.v = []
        for var in self._vars:
            tv = _tf_var(var)
            with tf.distribute.get_strategy().extended.colocate_vars_with(tv):
                self.m.append(tf.Variable(tf.zeros(tv.shape, tv.dtype), trainable=False))
                self.v.append(tf.Variable(tf.zeros(tv.shape, tv.dtype), trainable=False))

    def current_learning_rate(self) -> tf.Tensor:
        lr = self.learning_rate
        return tf.cast(lr(self.iterations) if callable(lr) else lr, tf.float32)

    def clip(self, grads):
        """Global-norm clipping, as tf.clip_by_global_norm in the original."""
        if not self.clip_norm:
            return grads, tf.linalg.global_norm(grads)
        return tf.clip_by_global_norm(grads, self.clip_norm)

    def apply_gradients(self, grads: Sequence[tf.Tensor]) -> None:
        """Applies gradients already summed over replicas (and already clipped)."""
        ctx = tf.distribute.get_replica_context()
        if ctx is None or tf.distribute.get_strategy().num_replicas_in_sync == 1:
            self.update_replicas(tf.distribute.get_strategy(), grads)
        else:
            ctx.merge_call(self.update_replicas, args=(grads,))

    def update_replicas(self, strategy, grads):
        """In a cross-replica context (e.g. inside `merge_call`): updates every replica's copy of
        each variable with that replica's gradient, and advances the step counter."""
        lr = self.current_learning_rate()
        for i, g in enumerate(grads):
            if g is None:
                continue
            fn = self._make_update(i, lr)
            tv = _tf_var(self._vars[i])
            if strategy.num_replicas_in_sync == 1 and not isinstance(
                tv, tf.distribute.DistributedValues
            ):
                fn(tv, g, self.m[i], self.v[i])
            else:
                strategy.extended.update(tv, fn, args=(g, self.m[i], self.v[i]), group=False)
        self.iterations.assign_add(1)

    def _make_update(self, i: int, lr) -> Callable:
        b1, b2, eps = self.beta_1, self.beta_2, self.epsilon
        decay = self.decay_flags[i]
        rate = lr * self.lr_multipliers[i]
        wd = self.weight_decay_rate

        def update(var, g, m, v):
            g = tf.cast(g, var.dtype)
            m_new = b1 * m + (1.0 - b1) * g
            v_new = b2 * v + (1.0 - b2) * tf.square(g)
            u = m_new / (tf.sqrt(v_new) + eps)
            if decay:
                u += wd * var
            m.assign(m_new)
            v.assign(v_new)
            return var.assign_sub(tf.cast(rate, var.dtype) * u)

        return update
