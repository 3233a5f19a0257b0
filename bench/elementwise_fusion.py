"""Would XLA-fusing only the element-wise work of a transformer layer pay on this CPU?

The graph path runs each layer's dropout, residual add, LayerNorm (statistics in float32) and
GELU as dozens of separate TF ops (bench/profile_step.py: 44% of the bfloat16 step's op time on a
Xeon with AMX, where the matmuls take 22%), while whole-step XLA loses oneDNN's matmuls. This
measures the middle way on one ELECTRA-Small layer's shapes, forward and backward, alternating
in one process:

  plain:  the project's own `dropout`, residual add, `LayerNorm` and `gelu` as the encoder runs them;
  fused:  the same functions inside `tf.function(jit_compile=True)` pieces (dropout-apply +
          residual + LayerNorm; bias + GELU), with dropout's keep mask drawn outside XLA (TF's
          Philox kernel; the same draws as `dropout`), since XLA's own expansion of the
          stateless RNG on CPU made the fused piece ~4x slower than plain ops when measured.

    python bench/elementwise_fusion.py [--precision=float32|mixed_bfloat16] [--rounds=8]

Prints one JSON line and the medians (ms per forward+backward) and their ratio. A measurement of
a direction, not of the step: the encoder does not use the fused pieces.
"""

import json
import os
import time

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_enum("precision", "float32", ["float32", "mixed_bfloat16"], "Activations' dtype.")
flags.DEFINE_integer("rounds", 8, "Alternating rounds (each: 5 calls of each variant).")
flags.DEFINE_integer("batch_size", 32, "Batch.")
flags.DEFINE_integer("seq_len", 128, "Length.")
flags.DEFINE_integer("hidden", 256, "Hidden size (ELECTRA-Small).")
flags.DEFINE_integer("intermediate", 1024, "Feed-forward size (ELECTRA-Small).")
flags.DEFINE_integer("threads", 2, "intra-op threads.")

RATE = 0.1


def main(_):
    import numpy as np
    import tensorflow as tf

    from electra_tf.modeling.layers import DROPOUT_BITS, LayerNorm, dropout, gelu
    from electra_tf.train import devices

    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    dtype = tf.bfloat16 if FLAGS.precision == "mixed_bfloat16" else tf.float32
    b, n, h, i = FLAGS.batch_size, FLAGS.seq_len, FLAGS.hidden, FLAGS.intermediate
    rng = np.random.default_rng(0)
    x, residual = (tf.constant(rng.standard_normal((b, n, h)), dtype) for _ in range(2))
    pre_gelu = tf.constant(rng.standard_normal((b, n, i)), dtype)
    bias = tf.Variable(tf.zeros([i], dtype))
    norm = LayerNorm(dtype=FLAGS.precision)
    norm.build((None, None, h))
    seed = tf.constant([1, 2])
    # fixed random weights on the outputs, so that the gradients are not a sum's near-zero ones
    weight_y = tf.constant(rng.standard_normal((b, n, h)), tf.float32)
    weight_z = tf.constant(rng.standard_normal((b, n, i)), tf.float32)
    levels = 1 << DROPOUT_BITS
    threshold = int(round(RATE * levels))

    def keep_mask(shape):  # the draws `dropout` makes, as a boolean keep mask
        size = int(np.prod(shape))
        words = tf.random.stateless_uniform(
            [(size + 1) // 2], seed=seed, minval=None, maxval=None, dtype=tf.uint32
        )
        draws = tf.reshape(tf.bitcast(words, tf.uint16), [-1])[:size]
        return tf.reshape(draws >= tf.constant(threshold, tf.uint16), shape)

    def plain(x, residual, pre_gelu):
        y = norm(dropout(x, RATE, seed) + residual)
        return y, gelu(pre_gelu + bias)

    @tf.function(jit_compile=True)
    def fused_norm(x, residual, keep):
        scale = tf.cast(levels / (levels - threshold), x.dtype)
        return norm(tf.where(keep, x * scale, tf.zeros_like(x)) + residual)

    @tf.function(jit_compile=True)
    def fused_gelu(pre_gelu):
        return gelu(pre_gelu + bias)

    def fused(x, residual, pre_gelu):
        return fused_norm(x, residual, keep_mask(x.shape)), fused_gelu(pre_gelu)

    def step_of(body):
        @tf.function
        def step():
            with tf.GradientTape() as tape:
                tape.watch([x, residual, pre_gelu])
                y, z = body(x, residual, pre_gelu)
                loss = tf.reduce_sum(tf.cast(y, tf.float32) * weight_y) + tf.reduce_sum(
                    tf.cast(z, tf.float32) * weight_z
                )
            return [y, z] + tape.gradient(loss, [x, residual, pre_gelu] + norm.weights + [bias])

        return step

    steps = {"plain": step_of(plain), "fused": step_of(fused)}
    outs = {k: [t.numpy().astype(np.float32) for t in f()] for k, f in steps.items()}
    # relative to each tensor's scale: bfloat16 keeps 8 bits
    max_diff = max(
        float(np.max(np.abs(a - c)) / (np.max(np.abs(a)) + 1e-30))
        for a, c in zip(outs["plain"], outs["fused"])
    )
    times = {k: [] for k in steps}
    for _ in range(FLAGS.rounds):
        for k, f in steps.items():
            t = time.perf_counter()
            for _ in range(5):
                [v.numpy() for v in f()]
            times[k].append((time.perf_counter() - t) / 5 * 1e3)
    med = {k: float(np.median(v)) for k, v in times.items()}
    cpu, cpu_flags = devices.cpu_info()
    result = {
        "cpu": cpu,
        "amx_bf16": "amx_bf16" in cpu_flags,
        "precision": FLAGS.precision,
        "plain_ms": med["plain"],
        "fused_ms": med["fused"],
        "ratio": med["plain"] / med["fused"],
        "max_abs_diff": max_diff,
        "rounds_ms": times,
        "load": os.getloadavg()[0],
    }
    print(json.dumps(result))
    print(
        f"one layer's element-wise work (fwd+bwd), {FLAGS.precision}, batch {b} x {n}, "
        f"hidden {h}, FFN {i}, {FLAGS.threads} threads, {cpu} (amx_bf16: "
        f"{result['amx_bf16']}), load {result['load']:.1f}: plain ops {med['plain']:.1f} ms, "
        f"XLA-fused pieces {med['fused']:.1f} ms, ratio {result['ratio']:.2f}; "
        f"max |difference| / max |value| over outputs and gradients {max_diff:.2e}"
    )


if __name__ == "__main__":
    app.run(main)
