"""The serving forward pass: the same function as `TransformerEncoder` and its heads at
inference (no dropout), written for fewer TensorFlow ops per call, which is what a small request
pays for on a CPU (ELECTRA-Small at batch 1 runs ~1,000 ops of a few microseconds each).

- query, key and value are one matmul ([hidden, 3 * hidden], concatenated at export time) and
  one reshape/transpose, unstacked into the three;
- every dense layer is a 2-D MatMul + BiasAdd on [batch * length, width], which TensorFlow's
  CPU graph rewriter fuses into one oneDNN kernel (Keras runs a batched 3-D matmul and an add);
- the attention mask's additive bias is built once per call, not once per layer.

LayerNorm, GELU, the mask value (-10000) and the order of the float32 operations are the
encoder's (`electra_tf.modeling.layers`), so the outputs equal the Keras model's to float32
rounding (tests/test_export.py asserts < 1e-5). No XLA: `jit_compile` compiles once per
(batch, length) shape, seconds each on a CPU, and gains only at small shapes
(docs/SERVING.md).

`precision="bfloat16"` (export_model.py --serving_precision=bfloat16) runs the encoder's dense
layers (query/key/value, attention output, feed-forward, embedding projection) as bfloat16
matmuls on bfloat16 copies of their kernels, with float32 inputs cast down and float32 results
(bias, residual, LayerNorm, softmax, the attention matmuls and the heads stay float32): on a CPU
with bfloat16 instructions (AVX512_BF16, AMX) these matmuls run about twice as fast; elsewhere
bfloat16 is emulated and slower. Outputs move by bfloat16 rounding (docs/SERVING.md has the
figures), so float32 stays the default. `precision="auto"` measures both on the exporting CPU
(`choose_precision`) and records the times in export_config.json.
"""

import statistics
import time
from typing import Optional

import numpy as np
import tensorflow as tf

from electra_tf.errors import UserError
from electra_tf.modeling.encoder import TransformerEncoder
from electra_tf.modeling.heads import DiscriminatorHead, MaskedLMHead
from electra_tf.modeling.layers import get_activation, layer_norm
from electra_tf.train import devices
from electra_tf.train.step_path import MIN_GAIN

MASK_VALUE = -10000.0  # as TransformerLayer
PRECISIONS = ("float32", "bfloat16")
AUTO = "auto"
# the shapes `choose_precision` times (batch; the length is the export's max_seq_length), and calls
MEASURED_BATCHES = {"single": (1, 10), "batch": (32, 3)}


def _var(weight) -> tf.Variable:
    return getattr(weight, "value", weight)  # a Keras variable's tf.Variable


def _dense2d(x: tf.Tensor, dense) -> tf.Tensor:
    return tf.nn.bias_add(tf.matmul(x, _var(dense.kernel)), _var(dense.bias))


class InferenceEncoder(tf.Module):
    """`encoder` at inference with fused query/key/value weights (new variables; the others are
    the encoder's own, or with bfloat16 their bfloat16 copies).

    Args:
        encoder: a bidirectional float32 `TransformerEncoder`.
        precision: the dense layers' matmuls, one of `PRECISIONS`.
    """

    def __init__(self, encoder: TransformerEncoder, precision: str = "float32"):
        super().__init__(name="inference_encoder")
        if precision not in PRECISIONS:
            raise UserError(
                f"serving precision {precision!r}: choose one of {', '.join(PRECISIONS)}"
            )
        self.precision = precision
        if not isinstance(encoder, TransformerEncoder) or encoder.causal is not None:
            raise UserError("serving: only a bidirectional TransformerEncoder exports")
        if encoder.compute_dtype != "float32":
            raise UserError(f"serving: a float32 encoder is expected, not {encoder.compute_dtype}")
        self.encoder = encoder
        self.config = encoder.config
        self.activation = get_activation(encoder.config.hidden_act)
        low = tf.bfloat16 if precision == "bfloat16" else tf.float32
        self.qkv_kernels, self.qkv_biases = [], []
        for i, layer in enumerate(encoder.transformer_layers):
            parts = (layer.query, layer.key, layer.value)
            kernel = np.concatenate([p.kernel.numpy() for p in parts], axis=1)
            bias = np.concatenate([p.bias.numpy() for p in parts])
            kernel = tf.cast(kernel, low)
            self.qkv_kernels.append(tf.Variable(kernel, trainable=False, name=f"qkv_kernel_{i}"))
            self.qkv_biases.append(tf.Variable(bias, trainable=False, name=f"qkv_bias_{i}"))
        # bfloat16: a copy of every other dense kernel, by the layer's path
        self.low_kernels = {}
        if precision == "bfloat16":
            for dense in self._dense_layers():
                self.low_kernels[dense.path] = tf.Variable(
                    tf.cast(_var(dense.kernel), low), trainable=False, name=f"{dense.name}_bf16"
                )

    def _dense_layers(self) -> list:
        layers = [self.encoder.embeddings_project] if self.encoder.embeddings_project else []
        for layer in self.encoder.transformer_layers:
            layers += [layer.attention_output, layer.intermediate, layer.output_dense]
        return layers

    def _dense(self, x: tf.Tensor, dense) -> tf.Tensor:
        if self.precision == "float32":
            return _dense2d(x, dense)
        y = tf.matmul(tf.cast(x, tf.bfloat16), self.low_kernels[dense.path])
        return tf.nn.bias_add(tf.cast(y, tf.float32), _var(dense.bias))

    def _qkv(self, x: tf.Tensor, i: int) -> tf.Tensor:
        kernel = self.qkv_kernels[i]
        y = tf.matmul(tf.cast(x, kernel.dtype), kernel)
        return tf.nn.bias_add(tf.cast(y, tf.float32), self.qkv_biases[i])

    def __call__(self, input_ids, input_mask, segment_ids) -> tf.Tensor:
        c, emb = self.config, self.encoder.embeddings
        batch, length = tf.shape(input_ids)[0], tf.shape(input_ids)[1]
        x = tf.gather(_var(emb.word_embeddings), input_ids)
        x += tf.gather(_var(emb.token_type_embeddings), segment_ids)
        x += _var(emb.position_embeddings)[:length]
        norm = emb.layer_norm
        x = layer_norm(x, _var(norm.gamma), _var(norm.beta), norm.epsilon)
        x = tf.reshape(x, [-1, emb.config.embedding_size])
        if self.encoder.embeddings_project is not None:
            x = self._dense(x, self.encoder.embeddings_project)
        mask = tf.reshape(tf.cast(input_mask, tf.float32), [batch, 1, 1, length])
        bias = (1.0 - mask) * MASK_VALUE
        heads = c.num_attention_heads
        size = c.hidden_size // heads
        for i, layer in enumerate(self.encoder.transformer_layers):
            qkv = self._qkv(x, i)
            qkv = tf.transpose(tf.reshape(qkv, [batch, length, 3, heads, size]), [2, 0, 3, 1, 4])
            q, k, v = tf.unstack(qkv)
            scores = tf.matmul(q, k, transpose_b=True) * (size**-0.5) + bias
            context = tf.matmul(tf.nn.softmax(scores, axis=-1), v)
            context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]), [-1, c.hidden_size])
            attn = self._norm(
                self._dense(context, layer.attention_output) + x, layer.attention_layer_norm
            )
            y = self._dense(
                self.activation(self._dense(attn, layer.intermediate)), layer.output_dense
            )
            x = self._norm(y + attn, layer.output_layer_norm)
        return tf.reshape(x, [batch, length, c.hidden_size])

    @staticmethod
    def _norm(x, norm):
        return layer_norm(x, _var(norm.gamma), _var(norm.beta), norm.epsilon)


def head_outputs(head, sequence: tf.Tensor) -> dict[str, tf.Tensor]:
    """The head's outputs on [batch, length, hidden] (as `DiscriminatorHead`/`MaskedLMHead`),
    its dense layers as 2-D matmuls."""
    if head is None:
        return {}
    shape = tf.shape(sequence)
    flat = tf.reshape(sequence, [-1, sequence.shape[-1]])
    activation = get_activation(head.hidden_act)
    if isinstance(head, DiscriminatorHead):
        h = activation(_dense2d(flat, head.dense))
        logits = tf.reshape(_dense2d(h, head.dense_1), shape[:2])
        return {"discriminator_logits": logits, "discriminator_probabilities": tf.sigmoid(logits)}
    if isinstance(head, MaskedLMHead):
        norm = head.layer_norm
        h = layer_norm(
            activation(_dense2d(flat, head.dense)), _var(norm.gamma), _var(norm.beta), norm.epsilon
        )
        table = head.embeddings.word_embeddings if head.tied_output else head.output_weights
        logits = tf.matmul(h, _var(table), transpose_b=True) + _var(head.output_bias)
        return {"mlm_logits": tf.reshape(logits, tf.concat([shape[:2], [-1]], 0))}
    raise UserError(f"serving: no serving form for the head {type(head).__name__}")


def pad_positions(t: tf.Tensor, length) -> tf.Tensor:
    """[batch, n, ...] -> [batch, length, ...], zeros after position n (the text signatures'
    outputs keep their max_seq_length shape while computing only the batch's longest)."""
    extra = [[0, 0]] * (len(t.shape) - 2)
    return tf.pad(t, [[0, 0], [0, length - tf.shape(t)[1]], *extra])


def serving_variables(encoder: TransformerEncoder, weights) -> list[tf.Variable]:
    """The tf.Variables of `weights` the serving graph reads: all but the separate query, key
    and value weights (`InferenceEncoder` holds them fused)."""
    fused = {
        id(_var(w))
        for layer in encoder.transformer_layers
        for part in (layer.query, layer.key, layer.value)
        for w in part.weights
    }
    unique = {id(_var(w)): _var(w) for w in weights}
    return [v for key, v in unique.items() if key not in fused]


TEXT_PADDING = (
    "text signatures: features padded to max_seq_length, the model run on the batch's longest "
    "sequence only (outputs past it are zeros)"
)


def pick_precision(times: dict) -> tuple[str, str]:
    """(precision, why) from measured seconds per call, {precision: {"single": s, "batch": s}}:
    bfloat16 where it is at least MIN_GAIN faster on the batch and at most MIN_GAIN slower on a
    single request (its outputs move by bfloat16 rounding, so a tie keeps float32)."""
    if "bfloat16" not in times:
        return (
            "float32",
            "this CPU has no bfloat16 instructions (avx512_bf16, AMX): bfloat16 not measured",
        )
    f32, bf16 = times["float32"], times["bfloat16"]
    faster = bf16["batch"] <= (1 - MIN_GAIN) * f32["batch"]
    no_slower = bf16["single"] <= (1 + MIN_GAIN) * f32["single"]
    if faster and no_slower:
        return "bfloat16", "measured: bfloat16 faster on the batch, no slower on a single request"
    return "float32", "measured: bfloat16 not faster on the batch without a slower single request"


def choose_precision(encoder: TransformerEncoder, length: int) -> tuple[str, dict]:
    """The encoder's serving precision on this CPU (`pick_precision` on the median seconds per
    call of `InferenceEncoder` at batch 1 and 32 x `length`, random ids, the calls alternating
    between the precisions) and what export_config.json records of it."""
    times: dict = {}
    candidates = PRECISIONS if cpu_has_bfloat16() else ("float32",)
    spec = [tf.TensorSpec([None, None], tf.int32)] * 3
    runs = {p: tf.function(InferenceEncoder(encoder, p), input_signature=spec) for p in candidates}
    rng = np.random.default_rng(0)
    for shape, (batch, calls) in MEASURED_BATCHES.items():
        ids = tf.constant(rng.integers(0, encoder.config.vocab_size, (batch, length)), tf.int32)
        args = (ids, tf.ones_like(ids), tf.zeros_like(ids))
        seconds: dict = {p: [] for p in runs}
        for p, run in runs.items():  # trace and warm up
            run(*args).numpy()
        for _ in range(calls):
            for p, run in runs.items():
                start = time.perf_counter()
                run(*args).numpy()
                seconds[p].append(time.perf_counter() - start)
        for p in runs:
            times.setdefault(p, {})[shape] = statistics.median(seconds[p])
    chosen, why = pick_precision(times)
    ms = {p: {f"{shape} ({MEASURED_BATCHES[shape][0]} x {length})": 1000 * t
              for shape, t in by_shape.items()} for p, by_shape in times.items()}  # fmt: skip
    return chosen, {"chosen_by": why, "median_ms": ms, "cpu": devices.cpu_info()[0]}


def resolve_precision(
    precision: str, encoder: TransformerEncoder, length: int
) -> tuple[str, Optional[dict]]:
    """(the precision to export, the measurement record or None): "auto" measures."""
    if precision != AUTO:
        return precision, None
    chosen, record = choose_precision(encoder, length)
    times = "; ".join(f"{p} " + ", ".join(f"{k} {v:.2f}" for k, v in t.items())
                      for p, t in record["median_ms"].items())  # fmt: skip
    print(f"serving precision auto: {chosen} ({record['chosen_by']}; median ms: {times})",
          flush=True)  # fmt: skip
    return chosen, record


PRECISION_NOTES = {
    "float32": "the default: outputs equal the Keras model's (< 1e-5)",
    "bfloat16": "the encoder's dense matmuls in bfloat16 (--serving_precision=bfloat16): about "
    "twice as fast where the CPU has bfloat16 instructions; outputs move by bfloat16 rounding",
}


def serving_choices(
    text_padding: Optional[str] = TEXT_PADDING,
    precision: str = "float32",
    measured: Optional[dict] = None,
) -> dict:
    """What export_config.json records about the serving graph (`measured`: `choose_precision`'s
    record where the precision was "auto")."""
    choices = {
        "encoder": "inference graph: fused query/key/value, 2-D MatMul+BiasAdd, mask bias once",
        "jit_compile": False,
        "jit_compile_reason": "compiles per (batch, length) shape; on a 2-core Zen 4 1.5x faster at "
        "1 x 16, none at 32 x 128 (docs/SERVING.md)",
        "precision": precision,
        "precision_reason": PRECISION_NOTES[precision],
        **({"precision_auto": measured} if measured else {}),
        "cpu_bfloat16": cpu_has_bfloat16(),
        "outputs": "the head's and sequence_output; no generator in a discriminator export",
    }
    if text_padding:
        choices["text_padding"] = text_padding
    return choices


def cpu_has_bfloat16() -> bool:
    """Whether this CPU has bfloat16 matmul instructions (AVX512_BF16 or AMX)."""
    return bool(set(devices.GRAPH_PATH_CPU_FLAGS) & devices.cpu_info()[1])
