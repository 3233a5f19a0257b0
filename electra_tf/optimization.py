"""ELECTRA's optimizer: AdamW without bias correction (and LAMB on top of it), its learning-rate
schedule, layer-wise decay. Adam's bias correction is an option (`bias_correction`).

The optimizer is a `tf.Module` rather than a Keras optimizer: Keras clips gradients per replica
before summing them over replicas, while the original clips the global gradient. Here the caller
passes gradients already summed over replicas; the update runs on every replica's copy through
`tf.distribute`'s `extended.update`.
"""

import math
import re
from typing import Callable, Dict, Iterable, Optional, Sequence

import tensorflow as tf
from tensorflow.python.trackable.data_structures import NoDependency

from electra_tf.hparams import OPTIMIZERS


class ElectraSchedule:
    """lr(step) = peak * (1 - min(step, T)/T)^power * min(1, step / warmup), as the original.

    Warmup multiplies the already-decayed rate (it is not warmup-then-decay), so at the end of
    warmup the rate is peak * (1 - W/T), and lr(0) = 0.

    Example:
    >>> float(ElectraSchedule(1.0, 100, 10)(5))
    0.475
    """

    def __init__(
        self, peak_lr: float, num_train_steps: int, warmup_steps: float, power: float = 1.0
    ):
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


class StagedSchedule:
    """Two-stage training's rate (paper §3.2): each stage is a run of its own, `first` from step
    0 and `second` from step `boundary` (warmup and decay restart there).

    Example:
    >>> s = StagedSchedule(ElectraSchedule(1.0, 10, 0), ElectraSchedule(2.0, 20, 0), 10)
    >>> float(s(5)), float(s(10)), float(s(20))
    (0.5, 2.0, 1.0)
    """

    def __init__(self, first: ElectraSchedule, second: ElectraSchedule, boundary: int):
        self.first = first
        self.second = second
        self.boundary = boundary

    def __call__(self, step) -> tf.Tensor:
        step = tf.cast(step, tf.float32)
        boundary = float(self.boundary)
        return tf.where(step < boundary, self.first(step), self.second(step - boundary))


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
    embedding_multiplier: float = 1.0,
) -> Dict[str, float]:
    """decay^(max_depth - depth) per variable path, times `embedding_multiplier` at depth 0.

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
        out[path] = decay ** (top - depth) * (embedding_multiplier if depth == 0 else 1.0)
    return out


def embedding_lr_multipliers(
    variables: Sequence[tf.Variable], multiplier: float
) -> Optional[Dict[str, float]]:
    """`multiplier` for the embedding layer's variables (depth 0), 1 elsewhere; None at 1.

    None (no multipliers at all) keeps the optimizer's update exactly the original's.
    """
    if multiplier == 1.0:
        return None
    # every depth but 0 is 1 at decay 1, so num_layers does not matter here
    return layerwise_lr_multipliers(variables, 0, 1.0, embedding_multiplier=multiplier)


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

    With `bias_correction` (not the original's), m and v are divided by 1 - b1^t and 1 - b2^t at
    step t = 1, 2, ... before u is formed (Kingma & Ba's Adam, eps added to the corrected root, as
    PyTorch's AdamW). Without it the update is (1 - b1^t) / sqrt(1 - b2^t) times Adam's: 3.2x at
    step 1, 5.6x at step 30, still 2x at step 300, which is most of a short fine-tuning; Mosbach
    et al. (2021) trace few-sample fine-tuning's failed runs to this.

    Args:
        learning_rate: a float or a callable step -> rate (e.g. `ElectraSchedule`).
        variables: the trainable variables (Keras or tf variables) it updates.
        weight_decay_rate, beta_1, beta_2, epsilon: as the original (0.01, 0.9, 0.999, 1e-6).
        exclude_from_weight_decay: substrings of variable paths without weight decay.
        clip_norm: global-norm clipping of the (replica-summed) gradients; None disables it.
        lr_multipliers: variable path -> learning-rate multiplier (layer-wise decay).
        bias_correction: Adam's bias correction of m and v (off: the original's update).
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
        bias_correction: bool = False,
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
        self.bias_correction = bool(bias_correction)
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
        corrections = self._bias_corrections()
        for i, g in enumerate(grads):
            if g is None:
                continue
            fn = self._make_update(i, lr, corrections)
            tv = _tf_var(self._vars[i])
            if strategy.num_replicas_in_sync == 1 and not isinstance(
                tv, tf.distribute.DistributedValues
            ):
                fn(tv, g, self.m[i], self.v[i])
            else:
                strategy.extended.update(tv, fn, args=(g, self.m[i], self.v[i]), group=False)
        self.iterations.assign_add(1)

    def _bias_corrections(self):
        """(1 - b1^t, sqrt(1 - b2^t)) at this update's step t = iterations + 1; None when off."""
        if not self.bias_correction:
            return None
        # 1 - b^t as -expm1(t log b): in float32, 1 - 0.999^t loses 5 digits to cancellation at
        # small t (and float64 is not there on every accelerator)
        t = tf.cast(self.iterations + 1, tf.float32)
        c1 = -tf.math.expm1(t * math.log(self.beta_1))
        c2 = tf.sqrt(-tf.math.expm1(t * math.log(self.beta_2)))
        return c1, c2

    def _make_update(self, i: int, lr, corrections=None) -> Callable:
        b1, b2, eps = self.beta_1, self.beta_2, self.epsilon
        decay = self.decay_flags[i]
        rate = lr * self.lr_multipliers[i]
        wd = self.weight_decay_rate

        def update(var, g, m, v):
            g = tf.cast(g, var.dtype)
            m_new = b1 * m + (1.0 - b1) * g
            v_new = b2 * v + (1.0 - b2) * tf.square(g)
            if corrections is None:
                u = m_new / (tf.sqrt(v_new) + eps)
            else:
                c1, c2 = (tf.cast(c, var.dtype) for c in corrections)
                u = (m_new / c1) / (tf.sqrt(v_new) / c2 + eps)
            if decay:
                u += wd * var
            u = self.scale_update(i, var, u)
            m.assign(m_new)
            v.assign(v_new)
            return var.assign_sub(tf.cast(rate, var.dtype) * u)

        return update

    def scale_update(self, i: int, var, u: tf.Tensor) -> tf.Tensor:
        """The update of variable `i` before the learning rate: AdamW's as it is."""
        return u


class ElectraLamb(ElectraAdamW):
    """LAMB (You et al., 2020) on top of `ElectraAdamW`: each variable's update u (Adam without
    bias correction, plus the decoupled weight decay) is scaled by the trust ratio
    ||w|| / ||u|| (1 where either norm is 0) before the learning rate:
    w -= lr * multiplier * (||w|| / ||u||) * u. Clipping, schedule, weight-decay exclusions and
    layer-wise multipliers are AdamW's. As TensorFlow Addons' LAMB (what NVIDIA's TF2 ELECTRA
    uses), the variables excluded from weight decay (LayerNorm, biases) are also excluded from
    the trust ratio, whatever `weight_decay_rate` is.

    Args:
        exclude_from_layer_adaptation: substrings of variable paths without the trust ratio
            (None: `exclude_from_weight_decay`).
        the others: as `ElectraAdamW`.
    """

    def __init__(
        self,
        learning_rate,
        variables: Sequence,
        exclude_from_layer_adaptation: Optional[Sequence[str]] = None,
        name: str = "electra_lamb",
        **kwargs,
    ):
        super().__init__(learning_rate, variables, name=name, **kwargs)
        exclude = exclude_from_layer_adaptation
        exclude = self.exclude_from_weight_decay if exclude is None else tuple(exclude)
        self.exclude_from_layer_adaptation = exclude
        self.adapt_flags = [not any(s in p for s in exclude) for p in self._paths]

    def scale_update(self, i: int, var, u: tf.Tensor) -> tf.Tensor:
        if not self.adapt_flags[i]:
            return u
        w_norm = tf.norm(var)
        u_norm = tf.norm(u)
        one = tf.ones_like(w_norm)
        ratio = tf.where(w_norm > 0, tf.where(u_norm > 0, w_norm / u_norm, one), one)
        return ratio * u


def make_optimizer(name: str, learning_rate, variables: Sequence, **kwargs) -> ElectraAdamW:
    """The `optimizer` hparam's optimizer ("adamw" or "lamb"); `kwargs` are `ElectraAdamW`'s."""
    classes = {"adamw": ElectraAdamW, "lamb": ElectraLamb}
    if name not in classes:
        raise ValueError(f"optimizer {name!r} is not one of {', '.join(OPTIMIZERS)}")
    return classes[name](learning_rate, variables, **kwargs)
