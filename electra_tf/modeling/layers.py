"""Building blocks of the BERT/ELECTRA encoder with the original's numerics.

LayerNorm statistics are computed in float32 under any dtype policy, GELU is the exact erf form,
and dropout draws stateless random bits from a seed the caller passes in, so that a step's
randomness is a pure function of (run seed, step, replica): resuming a run or replaying a step gives
bit-identical masks without checkpointing any random-generator state.
"""

import math

import keras
import tensorflow as tf


def gelu(x: tf.Tensor) -> tf.Tensor:
    """Exact GELU, x * Phi(x), as the original (not the tanh approximation)."""
    return 0.5 * x * (1.0 + tf.math.erf(x / tf.cast(math.sqrt(2.0), x.dtype)))


def get_activation(name: str):
    if name == "gelu":
        return gelu
    if name == "gelu_approximate":
        return lambda x: tf.nn.gelu(x, approximate=True)
    if name == "relu":
        return tf.nn.relu
    raise ValueError(f"unknown activation {name!r}")


def truncated_normal(stddev: float) -> keras.initializers.Initializer:
    return keras.initializers.TruncatedNormal(stddev=stddev)


def layer_norm(x: tf.Tensor, gamma, beta, epsilon: float) -> tf.Tensor:
    """Normalises the last axis with statistics in float32; returns x's dtype."""
    dtype = x.dtype
    x = tf.cast(x, tf.float32)
    mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
    y = (x - mean) * tf.math.rsqrt(variance + epsilon)
    y = y * tf.cast(gamma, tf.float32) + tf.cast(beta, tf.float32)
    return tf.cast(y, dtype)


class LayerNorm(keras.layers.Layer):
    """Layer normalisation over the last axis, epsilon 1e-12, statistics in float32.

    Args:
        epsilon: added to the variance (the original uses 1e-12, Keras defaults to 1e-3).

    Example:
    >>> LayerNorm(name="LayerNorm")(tf.ones([2, 3, 8])).shape
    TensorShape([2, 3, 8])
    """

    def __init__(self, epsilon: float = 1e-12, **kwargs):
        super().__init__(**kwargs)
        self.epsilon = epsilon

    def build(self, input_shape):
        dim = input_shape[-1]
        self.beta = self.add_weight(shape=(dim,), initializer="zeros", name="beta")
        self.gamma = self.add_weight(shape=(dim,), initializer="ones", name="gamma")

    def call(self, x):
        return layer_norm(x, self.gamma, self.beta, self.epsilon)

    def get_config(self):
        return {**super().get_config(), "epsilon": self.epsilon}


# Dropout draws 16 bits per decision: one 32-bit Philox word serves two elements (half the random
# numbers of a float32 uniform per element), compared as integers. Keeping an element when its draw
# is >= round(rate * 2^16) drops it with probability round(rate * 2^16) / 2^16 (0.100006 for 0.1);
# the kept values are scaled by the inverse of the exact keep probability.
DROPOUT_BITS = 16


def dropout_keep_mask(x: tf.Tensor, rate: float, seed) -> tf.Tensor:
    """The boolean keep mask `dropout` draws for x (a pure function of the seed and x's shape)."""
    threshold = int(round(rate * (1 << DROPOUT_BITS)))
    n = tf.size(x)
    words = tf.random.stateless_uniform(
        tf.reshape((n + 1) // 2, [1]), seed=seed, minval=None, maxval=None, dtype=tf.uint32
    )
    draws = tf.reshape(tf.bitcast(words, tf.uint16), [-1])[:n]  # two 16-bit draws per word
    return tf.reshape(draws >= tf.constant(threshold, tf.uint16), tf.shape(x))


def _apply_keep_mask(x: tf.Tensor, keep: tf.Tensor, rate: float) -> tf.Tensor:
    levels = 1 << DROPOUT_BITS
    scale = tf.cast(levels / (levels - int(round(rate * levels))), x.dtype)
    return tf.where(keep, x * scale, tf.zeros_like(x))


def dropout(x: tf.Tensor, rate: float, seed) -> tf.Tensor:
    """Inverted dropout from a stateless seed (shape [2] int32/int64); identity when seed is None."""
    if seed is None or rate <= 0.0:
        return x
    return _apply_keep_mask(x, dropout_keep_mask(x, rate, seed), rate)


# The element-wise work around a layer's matmuls, XLA-compiled in pieces (the matmuls stay on
# oneDNN): on CPUs the graph path runs it as dozens of separate ops per layer, XLA as one fused
# kernel per piece (bench/elementwise_fusion.py). Dropout's mask is drawn outside XLA, whose
# expansion of the stateless RNG on CPU is slower than TF's kernel; the draws are the same.
# Rounding differs from the plain ops' (float32: ~1e-6 relative), so it is opt-in.
@tf.function(jit_compile=True)
def _residual_norm_fused(x, residual, keep, rate, gamma, beta, epsilon):
    if keep is not None:
        x = _apply_keep_mask(x, keep, rate)
    return layer_norm(x + residual, gamma, beta, epsilon)


gelu_fused = tf.function(lambda x: gelu(x), jit_compile=True)


def residual_layer_norm(x, residual, norm: "LayerNorm", rate: float, seed, fused: bool = False):
    """norm(dropout(x) + residual), as plain ops or (fused) one XLA-compiled piece."""
    if not fused:
        return norm(dropout(x, rate, seed) + residual)
    keep = None if seed is None or rate <= 0.0 else dropout_keep_mask(x, rate, seed)
    gamma, beta = tf.convert_to_tensor(norm.gamma), tf.convert_to_tensor(norm.beta)
    return _residual_norm_fused(x, residual, keep, rate, gamma, beta, norm.epsilon)


class SeedSequence:
    """Hands out distinct stateless seeds, one per dropout site, from a base seed tensor.

    A `None` base means no dropout (inference). Derived seeds differ by a fixed counter, so the
    same site of the same step always gets the same seed.
    """

    def __init__(self, base_seed):
        self.base = base_seed
        self.count = 0

    def next(self):
        if self.base is None:
            return None
        self.count += 1
        return tf.stack([self.base[0], self.base[1] + 1_000_003 * self.count])
