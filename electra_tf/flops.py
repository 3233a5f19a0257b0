"""Compute accounting: the ELECTRA paper's analytic FLOP counts, and TensorFlow profiler counts.

The analytic counter follows the conventions of the original `flops_computation.py`, so that its
figures reproduce the paper's compute column exactly:

  * An operation is a mathematical operation (an `exp` costs as much as an add); a matrix product
    of an [m, n] matrix with an n-vector costs 2·m·n (multiply and add counted separately).
  * The backward pass costs as much as the forward pass ("backward = 1× forward"). A real
    training graph spends about 2× the forward pass on the backward pass (gradients with respect
    to both activations and weights); `backward_factor` selects the convention.
  * Embedding lookups are dense: a one-hot row times the [V, E] table (2·E·V per token), unless
    `sparse_embed_lookup` is set, in which case a lookup is a gather and costs no arithmetic.
  * Element-wise costs per value: dropout 4 (random number, compare, mask, rescale), layer
    normalization 5 (mean, variance, centre, scale, shift), GELU activation 8 (tanh form),
    softmax 5 (max, subtract, exp, sum, divide).
  * The masked-LM output layer runs on `output_frac` of the positions only.
  * Kept quirk: the layer normalization after the attention output is counted as 5 FLOPs per
    token rather than 5·h (`attention_layer_norm_per_value=True` fixes it; off by default).

All per-sequence figures are forward FLOPs for one sequence of `s` tokens.

The profiler counts (`profile_pretraining_flops`) trace this project's model with static shapes
and count the graph with `tf.compat.v1.profiler`; docs/FLOPS.md compares the two.
"""

import dataclasses
from collections.abc import Mapping
from typing import Any

from electra_tf.errors import UserError

DROPOUT_FLOPS = 4
LAYER_NORM_FLOPS = 5
ACTIVATION_FLOPS = 8
SOFTMAX_FLOPS = 5

# Fraction of positions that get an MLM softmax in the paper's figures: 80 of 512 (20 of 128).
PAPER_OUTPUT_FRAC = 0.15625


@dataclasses.dataclass
class TransformerFlops:
    """Analytic forward/training FLOPs of a BERT-style transformer, in the paper's conventions.

    Args:
        h: hidden size.
        l: number of transformer blocks.
        s: sequence length.
        v: vocabulary size.
        e: embedding size (None: `h`). When `e != h` a projection [e, h] follows the embeddings.
        i: feed-forward intermediate size (None: `4·h`).
        heads: attention heads (None: `max(h // 64, 1)`).
        head_size: size of one head's query/key/value (None: the projections are `h` wide;
            otherwise `heads · head_size` wide).
        output_frac: fraction of the `s` positions that get an MLM output softmax.
        sparse_embed_lookup: count an embedding lookup as a gather (free) instead of a one-hot
            matmul. The output projection onto the vocabulary is always a matmul.
        decoder: every attention term is doubled (self-attention plus attention to the encoder).
        attention_layer_norm_per_value: count the post-attention layer norm as `5·h` per token;
            False (default) keeps the original's `5` per token.

    Example:
        >>> TransformerFlops(h=256, l=12, s=128, e=128).inference_flops()
        3677281792
    """

    h: int
    l: int  # number of layers (the original's name)
    s: int = 512
    v: int = 30522
    e: int | None = None
    i: int | None = None
    heads: int | None = None
    head_size: int | None = None
    output_frac: float = PAPER_OUTPUT_FRAC
    sparse_embed_lookup: bool = False
    decoder: bool = False
    attention_layer_norm_per_value: bool = False

    def __post_init__(self):
        if self.e is None:
            self.e = self.h
        if self.i is None:
            self.i = 4 * self.h
        if self.heads is None:
            self.heads = max(self.h // 64, 1)

    @property
    def qkv_size(self) -> int:
        """Width of each of the query, key and value projections."""
        return self.h if self.head_size is None else self.head_size * self.heads

    def block_terms(self) -> dict[str, int]:
        """Forward FLOPs per token of one transformer block, term by term."""
        h, s, i, heads, qkv = self.h, self.s, self.i, self.heads, self.qkv_size
        attn = 2 if self.decoder else 1
        attn_ln = LAYER_NORM_FLOPS * (h if self.attention_layer_norm_per_value else 1)
        return {
            # Self-attention (doubled for a decoder's extra encoder attention).
            "qkv_projections": 3 * 2 * h * qkv * attn,
            "qkv_biases": 3 * qkv * attn,
            "attention_scores": 2 * qkv * s * attn,
            "attention_softmax": SOFTMAX_FLOPS * s * heads * attn,
            "attention_dropout": DROPOUT_FLOPS * s * heads * attn,
            "attention_scale": s * heads * attn,
            "attention_weighted_values": 2 * h * s * attn,
            "attention_output": 2 * h * h * attn,
            "attention_output_bias": h * attn,
            "attention_output_dropout": DROPOUT_FLOPS * h * attn,
            "attention_output_residual": h * attn,
            "attention_output_layer_norm": attn_ln * attn,
            # Feed-forward.
            "intermediate": 2 * h * i,
            "intermediate_activation": ACTIVATION_FLOPS * i,
            "intermediate_bias": i,
            "output": 2 * h * i,
            "output_bias": h,
            "output_dropout": DROPOUT_FLOPS * h,
            "output_residual": h,
            "output_layer_norm": LAYER_NORM_FLOPS * h,
        }

    def block_flops(self) -> int:
        """Forward FLOPs of one transformer block for one sequence."""
        return sum(self.block_terms().values()) * self.s

    def input_embedding_terms(self) -> dict[str, int]:
        """Forward FLOPs per token of the input embeddings (and projection to `h` if `e != h`)."""
        e, h, s, v = self.e, self.h, self.s, self.v
        terms = {}
        if not self.sparse_embed_lookup:
            terms["word_lookup"] = 2 * e * v
        terms.update(
            {
                # Dense lookups into the position table (s rows) and token-type table (2 rows).
                "position_and_token_type_lookup": 2 * e * (s + 2),
                "add_position_and_token_type": 2 * e,
                "layer_norm": LAYER_NORM_FLOPS * e,
                "dropout": DROPOUT_FLOPS * e,
            }
        )
        if e != h:
            terms["projection"] = 2 * h * e
            terms["projection_bias"] = h
        return terms

    def input_embedding_flops(self) -> int:
        """Forward FLOPs of the input embeddings for one sequence."""
        return sum(self.input_embedding_terms().values()) * self.s

    def mlm_output_terms(self) -> dict[str, int]:
        """Forward FLOPs per predicted token of the MLM head (dense, GELU, LN, tied output)."""
        e, h, v = self.e, self.h, self.v
        return {
            "vocab_projection": 2 * e * v,
            "dense": 2 * h * e,
            "dense_bias": e,
            "dense_activation": ACTIVATION_FLOPS * e,
            "layer_norm": LAYER_NORM_FLOPS * e,
            "softmax": SOFTMAX_FLOPS * v,
            "target_word": 2 * v,
        }

    def mlm_output_flops(self) -> float:
        """Forward FLOPs of the MLM head for one sequence (`output_frac · s` predicted tokens)."""
        return self.output_frac * sum(self.mlm_output_terms().values()) * self.s

    def binary_classification_terms(self) -> dict[str, int]:
        """Forward FLOPs per token of the discriminator head (dense H, GELU, dense to 1 logit)."""
        h = self.h
        return {
            "dense": 2 * h * h,
            "dense_bias": h,
            "dense_activation": ACTIVATION_FLOPS * h,
            "logit": 2 * h,
        }

    def binary_classification_flops(self) -> int:
        """Forward FLOPs of the per-token binary classifier for one sequence."""
        return sum(self.binary_classification_terms().values()) * self.s

    def forward_flops(self, discriminator: bool = False) -> int | float:
        """Forward FLOPs for one sequence: blocks, input embeddings, and the pretraining head."""
        head = self.binary_classification_flops() if discriminator else self.mlm_output_flops()
        return self.l * self.block_flops() + self.input_embedding_flops() + head

    def train_flops(
        self,
        batch_size: float,
        train_steps: float,
        discriminator: bool = False,
        backward_factor: float = 1.0,
    ) -> int | float:
        """Pretraining FLOPs: forward plus `backward_factor` × forward, per sequence, × batch × steps."""
        passes = 2 if backward_factor == 1.0 else 1.0 + backward_factor
        return passes * batch_size * train_steps * self.forward_flops(discriminator)

    def inference_flops(self) -> int:
        """Forward FLOPs of one example through the encoder and a per-token binary classifier."""
        return self.forward_flops(discriminator=True)


def electra_train_flops(
    h_d: int,
    l_d: int,
    h_g: int,
    l_g: int,
    batch_size: float,
    train_steps: float,
    tied_embeddings: bool = True,
    e: int | None = None,
    s: int = 512,
    v: int = 30522,
    output_frac: float = PAPER_OUTPUT_FRAC,
    sparse_embed_lookup: bool = False,
    backward_factor: float = 1.0,
) -> int | float:
    """ELECTRA pretraining FLOPs: discriminator (binary head) plus generator (MLM head).

    `e` is the discriminator's embedding size (None: `h_d`). With tied embeddings the generator
    uses the same embedding size `e` (and projects it to `h_g`); untied, it uses `e = h_g`.
    Both models keep the default heads (`h // 64`) and intermediate size (`4·h`).
    """
    e = h_d if e is None else e
    common = {
        "s": s,
        "v": v,
        "output_frac": output_frac,
        "sparse_embed_lookup": sparse_embed_lookup,
    }
    disc = TransformerFlops(h_d, l_d, e=e, **common)
    gen = TransformerFlops(h_g, l_g, e=e if tied_embeddings else None, **common)
    return disc.train_flops(
        batch_size, train_steps, discriminator=True, backward_factor=backward_factor
    ) + gen.train_flops(batch_size, train_steps, backward_factor=backward_factor)


def dense_flops(in_features: int, out_features: int, tokens: int = 1, bias: bool = True) -> int:
    """Forward FLOPs of a dense layer applied to `tokens` vectors: 2·in·out (+ out for the bias)."""
    return tokens * (2 * in_features * out_features + (out_features if bias else 0))


# --------------------------------------------------------------------------------------------
# Counting from this project's model configs.


def _config_value(config: Any, key: str) -> Any:
    if isinstance(config, Mapping):
        if key not in config:
            raise UserError(f"model config is missing the key '{key}'")
        return config[key]
    if not hasattr(config, key):
        raise UserError(f"model config {type(config).__name__} has no attribute '{key}'")
    return getattr(config, key)


def max_predictions_per_seq(seq_len: int, mask_prob: float = 0.15) -> int:
    """Masked positions gathered per sequence, as the original derives it: int((p + 0.005)·L)."""
    return int((mask_prob + 0.005) * seq_len)


def transformer_flops_from_config(
    config: Any,
    seq_len: int,
    output_frac: float = PAPER_OUTPUT_FRAC,
    sparse_embed_lookup: bool = False,
    embedding_size: int | None = None,
) -> TransformerFlops:
    """A `TransformerFlops` for a model config (a dict or object with BERT JSON keys).

    `embedding_size` overrides the config's (the generator with tied embeddings uses the
    discriminator's). A missing/None `embedding_size` in the config means `hidden_size`.
    """
    hidden = int(_config_value(config, "hidden_size"))
    if embedding_size is None:
        if isinstance(config, Mapping):
            embedding_size = config.get("embedding_size")
        else:
            embedding_size = getattr(config, "embedding_size", None)
    return TransformerFlops(
        h=hidden,
        l=int(_config_value(config, "num_hidden_layers")),
        s=int(seq_len),
        v=int(_config_value(config, "vocab_size")),
        e=None if embedding_size is None else int(embedding_size),
        i=int(_config_value(config, "intermediate_size")),
        heads=int(_config_value(config, "num_attention_heads")),
        output_frac=output_frac,
        sparse_embed_lookup=sparse_embed_lookup,
    )


def pretraining_flops_per_step(
    disc_config: Any,
    gen_config: Any,
    batch_size: int,
    seq_len: int,
    objective: str = "electra",
    mask_prob: float = 0.15,
    sparse_embed_lookup: bool = False,
    backward_factor: float = 1.0,
    tied_embeddings: bool = True,
    output_frac: float | None = None,
) -> float:
    """FLOPs of one pretraining step (whole batch) of this project's model, paper conventions.

    Args:
        disc_config: the discriminator's config (for `objective="mlm"`, the one MLM model).
        gen_config: the generator's config; ignored for "mlm"; None for ELECTRA without a
            generator network (uniform or unigram sampling).
        batch_size: sequences per step (global batch).
        seq_len: tokens per sequence.
        objective: "electra" (generator MLM + discriminator replaced-token detection; also
            "electra_15", whose discriminator still runs on every token), "mlm" (BERT-style
            masked LM on one model), "replace_mlm" (generator + an MLM head on the main model),
            "all_tokens_mlm" (generator + an MLM head over every position + the copy head).
        mask_prob: masking probability; the MLM head runs on
            `max_predictions_per_seq(seq_len, mask_prob)` positions per sequence, as the model does.
        sparse_embed_lookup: count input embedding lookups as free gathers (as the real graph does).
        backward_factor: backward pass cost as a multiple of the forward pass: 1.0 is the paper's
            convention, 2.0 the common "3× forward" one, 0.0 gives forward FLOPs only.
        tied_embeddings: the generator uses the discriminator's embedding size.
        output_frac: overrides the fraction of positions with an MLM softmax.
    """
    objectives = ("electra", "electra_15", "mlm", "replace_mlm", "all_tokens_mlm")
    if objective not in objectives:
        raise UserError(f"objective must be one of {', '.join(objectives)}, got '{objective}'")
    if output_frac is None:
        output_frac = max_predictions_per_seq(seq_len, mask_prob) / seq_len
    # all_tokens_mlm predicts every token: the MLM softmax runs on all positions
    main_frac = 1.0 if objective == "all_tokens_mlm" else output_frac
    disc = transformer_flops_from_config(disc_config, seq_len, main_frac, sparse_embed_lookup)
    if objective == "mlm":
        return (1.0 + backward_factor) * batch_size * disc.forward_flops(discriminator=False)
    if gen_config is None and objective not in ("electra", "electra_15"):
        raise UserError(f"objective '{objective}' needs a generator config (gen_config is None)")
    per_seq = 0.0  # gen_config None: no generator network (uniform or unigram sampling)
    if gen_config is not None:
        gen = transformer_flops_from_config(
            gen_config,
            seq_len,
            output_frac,
            sparse_embed_lookup,
            embedding_size=disc.e if tied_embeddings else None,
        )
        per_seq = gen.forward_flops(discriminator=False)
    if objective in ("electra", "electra_15"):  # electra_15 still runs the discriminator on all
        per_seq += disc.forward_flops(discriminator=True)
    else:  # replace_mlm, all_tokens_mlm: the main model has an MLM head
        per_seq += disc.forward_flops(discriminator=False)
        if objective == "all_tokens_mlm":  # the copy mechanism's sigmoid head
            per_seq += disc.binary_classification_flops()
    return (1.0 + backward_factor) * batch_size * per_seq


# --------------------------------------------------------------------------------------------
# The paper's named configurations (the original's MODEL_FLOPS table).


@dataclasses.dataclass(frozen=True)
class PaperModel:
    """One named pretraining run: total FLOPs (backward = 1× forward) and its shape."""

    total_flops: float
    train_steps: float
    batch_size: int
    seq_len: int
    note: str = ""

    @property
    def flops_per_step(self) -> float:
        return self.total_flops / self.train_steps

    def to_dict(self) -> dict[str, float]:
        steps = self.train_steps
        return {
            "total_flops": self.total_flops,
            "flops_per_step": self.flops_per_step,
            "train_steps": int(steps) if float(steps).is_integer() else steps,
            "batch_size": self.batch_size,
            "seq_len": self.seq_len,
        }


def _paper_models() -> dict[str, PaperModel]:
    models = {}

    # ELMo and XLNet were counted with TensorFlow's profiler; the original gives raw products.
    # ELMo: 10 epochs over the 768,648,884-token LM1B corpus, batch 20 × 128 tokens, and
    # 568,093,262,680 forward FLOPs per batch. Steps = epochs · tokens / (batch · seq_len),
    # a fractional 3,002,534.7; FLOPs per step = 2 × the forward figure.
    elmo_steps = 10 * 768648884 / (20.0 * 128)
    models["elmo"] = PaperModel(
        2 * 10 * 768648884 * 568093262680 / (20.0 * 128),
        elmo_steps,
        20,
        128,
        "profiler count; steps = 10 epochs of 768,648,884 tokens at 20 x 128 tokens/step",
    )
    # XLNet: 500k steps at batch 8192 (length 512); 15,064,773,691,518 forward FLOPs per 32 examples.
    models["xlnet"] = PaperModel(
        2 * 500000 * 8192 * 15064773691518 / 32.0,
        500000,
        8192,
        512,
        "profiler count: 15,064,773,691,518 forward FLOPs per 32 examples",
    )

    def single(name, tf_model, batch, steps, note=""):
        models[name] = PaperModel(
            tf_model.train_flops(batch, steps), steps, batch, tf_model.s, note
        )

    single("gpt", TransformerFlops(768, 12, v=40000, output_frac=1.0), 128, 960800)
    single("bert_small", TransformerFlops(256, 12, e=128, s=128), 128, 1.45e6)
    single("bert_base", TransformerFlops(768, 12), 256, 1e6)
    single("bert_large", TransformerFlops(1024, 24), 256, 1e6)

    def electra(name, h_d, l_d, h_g, l_g, batch, steps, s=512, e=None):
        total = electra_train_flops(h_d, l_d, h_g, l_g, batch, steps, True, s=s, e=e)
        models[name] = PaperModel(total, steps, batch, s, f"generator hidden {h_g}")

    electra("electra_small", 256, 12, 64, 12, 128, 1e6, s=128, e=128)
    electra("electra_base", 768, 12, 256, 12, 256, 766000)
    electra("electra_400k", 1024, 24, 256, 24, 2048, 400000)
    electra("electra_1.75M", 1024, 24, 256, 24, 2048, 1750000)

    # RoBERTa, ALBERT and T5 differ a little from BERT; the original counts them with the same
    # formulas. T5-11B: an encoder without an output softmax plus a decoder (double attention)
    # with a softmax at every position.
    single("roberta", TransformerFlops(1024, 24, v=50265), 8000, 500000)
    single("albert", TransformerFlops(4096, 12, v=30000, e=128), 4096, 1.5e6)
    t5_sizes = {"v": 32000, "i": 65536, "heads": 128, "head_size": 128}
    t5_encoder = TransformerFlops(1024, 24, output_frac=0.0, **t5_sizes)
    t5_decoder = TransformerFlops(1024, 24, output_frac=1.0, decoder=True, **t5_sizes)
    models["t5_11b"] = PaperModel(
        t5_encoder.train_flops(2048, 1e6) + t5_decoder.train_flops(2048, 1e6),
        1e6,
        2048,
        512,
        "encoder + decoder",
    )
    return models


PAPER_MODELS: dict[str, PaperModel] = _paper_models()


# --------------------------------------------------------------------------------------------
# Profiler counts: TensorFlow's static graph profiler on a concrete function.
#
# TensorFlow is imported lazily so that the analytic counter (and `count_flops.py`'s table)
# stays light.


def einsum_flops(equation: str, input_shapes: list) -> int:
    """FLOPs of an einsum, in the matmul convention.

    With two operands and a contracted (summed) index, every combination of all distinct index
    values costs one multiply and one add: 2·(product of all distinct index sizes), which is
    2·m·n·k for a matmul. Without a contracted index (outer or element-wise product) it is the
    multiplies only; with a single operand, a reduction costs one add per input value and a
    transpose costs nothing. `...` dimensions broadcast as numpy does.
    """
    equation = equation.replace(" ", "")
    if "->" in equation:
        lhs, rhs = equation.split("->")
    else:
        lhs, rhs = equation, None
    operands = lhs.split(",")
    if len(operands) != len(input_shapes):
        raise ValueError(
            f"einsum {equation!r} has {len(operands)} operands, got shapes for {len(input_shapes)}"
        )
    sizes = {}
    counts = {}
    for labels, shape in zip(operands, input_shapes):
        shape = [int(d) for d in shape]
        named = labels.replace("...", "")
        if "..." in labels:
            rank = len(shape) - len(named)
            before, after = labels.split("...")
            dims = list(zip(before, shape[: len(before)]))
            ellipsis_dims = shape[len(before) : len(before) + rank]
            # Broadcast from the right, as numpy does.
            for k, d in enumerate(reversed(ellipsis_dims)):
                key = ("...", k)
                sizes[key] = max(sizes.get(key, 1), d)
            dims += list(zip(after, shape[len(before) + rank :]))
        else:
            if len(named) != len(shape):
                raise ValueError(f"einsum operand {labels!r} does not match shape {shape}")
            dims = list(zip(named, shape))
        for label, d in dims:
            sizes[label] = max(sizes.get(label, 1), d)
            counts[label] = counts.get(label, 0) + 1
    if rhs is None:  # implicit output: the labels seen exactly once, sorted
        output = {label for label, c in counts.items() if c == 1}
    else:
        output = set(rhs.replace("...", ""))
    contracted = [label for label in counts if label not in output]
    total = 1
    for d in sizes.values():
        total *= d
    if len(operands) == 1:
        return total if contracted else 0
    return (len(operands) - 1) * total + (total if contracted else 0)


_EINSUM_REGISTERED = False


def register_einsum_flops() -> None:
    """Teaches TensorFlow's profiler the FLOPs of `Einsum` (it has no rule); idempotent."""
    global _EINSUM_REGISTERED
    if _EINSUM_REGISTERED:
        return
    from tensorflow.python.framework import graph_util, ops

    def _einsum_stats(graph, node):
        shapes = []
        for name in node.input:
            if name.startswith("^"):  # control input
                continue
            shape = graph_util.tensor_shape_from_node_def_name(graph, name)
            shape.assert_is_fully_defined()
            shapes.append(shape.as_list())
        equation = node.attr["equation"].s.decode("utf-8")
        return ops.OpStats("flops", einsum_flops(equation, shapes))

    try:
        ops.RegisterStatistics("Einsum", "flops")(_einsum_stats)
    except KeyError:  # registered already (by another copy of this module or another library)
        pass
    _EINSUM_REGISTERED = True


def profile_graph_flops(graph) -> int:
    """Total float operations of a graph (static shapes), from `tf.compat.v1.profiler`."""
    import tensorflow as tf

    register_einsum_flops()
    builder = tf.compat.v1.profiler.ProfileOptionBuilder
    from tensorflow.python.util import deprecation

    options = builder(builder.float_operation()).with_empty_output().build()
    with deprecation.silence():  # the v1 profiler's helpers warn that they are deprecated
        return int(tf.compat.v1.profiler.profile(graph, options=options).total_float_ops)


def profile_function_flops(fn, *input_specs) -> int:
    """Profiler FLOPs of `fn` traced with fully defined `tf.TensorSpec`s (nests allowed; no run).

    Traced without autograph (the model's code has no tensor-dependent Python control flow), which
    makes tracing several times faster.
    """
    import tensorflow as tf

    for spec in tf.nest.flatten(input_specs):
        if not spec.shape.is_fully_defined():
            raise ValueError(f"profiling needs static shapes, got {spec}")
    concrete = tf.function(fn, autograph=False).get_concrete_function(*input_specs)
    return profile_graph_flops(concrete.graph)


def profile_pretraining_flops(
    model_size: str = "small",
    batch_size: int = 2,
    seq_len: int = 128,
    hparams: Mapping | None = None,
) -> dict:
    """Profiler vs analytic FLOPs of this project's ELECTRA pretraining, for one step.

    Builds the pretraining model as `run_pretraining.py` does (float32), traces two graphs with
    static [batch_size, seq_len] inputs, and counts them with `tf.compat.v1.profiler`:
      * forward: masking, generator, MLM head and loss, sampling, discriminator, its head and
        loss, in training mode (with dropout), as the forward half of a training step;
      * train step: the same forward, the gradients of the loss with respect to every trainable
        variable, global-norm clipping and the ElectraAdamW update.
    The analytic figures use `sparse_embed_lookup=True` (the model gathers its embeddings).

    Returns a dict with profiler_forward_flops, analytic_forward_flops, forward_ratio,
    profiler_train_step_flops, analytic_train_step_flops (backward = 1x forward, the paper's
    convention), train_step_ratio, analytic_train_step_flops_backward_2x (the ~3x-forward
    convention) and its ratio, and the shapes and configs used.
    """
    import tensorflow as tf

    from electra_tf.configs import PretrainingConfig
    from electra_tf.optimization import ElectraAdamW
    from electra_tf.training import build_pretrainer

    values = {"model_size": model_size, "max_seq_length": seq_len, "train_batch_size": batch_size}
    values.update(hparams or {})
    config = PretrainingConfig("flops_profile", "flops_profile", **values)
    vocab_size = int(config.vocab_size or 30522)
    special_ids = {"pad": 0, "cls": 101, "sep": 102, "mask": 103}  # BERT uncased vocab
    model = build_pretrainer(config, vocab_size, special_ids)
    variables = model.trainable_weights
    optimizer = ElectraAdamW(1e-4, variables, clip_norm=config.clip_norm)
    spec = tf.TensorSpec([batch_size, seq_len], tf.int32)
    specs = {"input_ids": spec, "input_mask": spec, "segment_ids": spec}
    dropout_seed = tf.constant([1, 2], tf.int32)

    def forward(inputs):
        return model.compute(inputs, step=0, seed=0, training=True, dropout_seed=dropout_seed)[
            "loss"
        ]

    def train_step(inputs):
        with tf.GradientTape() as tape:
            loss = forward(inputs)
        grads = tape.gradient(loss, variables)
        grads = [
            tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
            for g, v in zip(grads, variables)
        ]
        grads, _ = optimizer.clip(grads)
        optimizer.apply_gradients(grads)
        return loss

    profiler_forward = profile_function_flops(forward, specs)
    profiler_train = profile_function_flops(train_step, specs)

    disc_config = model.discriminator.config
    gen_config = model.generator.config if model.generator is not None else None
    objective = "electra" if config.electra_objective else "mlm"
    if gen_config is disc_config:
        gen_config = None

    def analytic(backward_factor):
        return pretraining_flops_per_step(
            disc_config,
            gen_config,
            batch_size,
            seq_len,
            objective=objective,
            mask_prob=config.mask_prob,
            sparse_embed_lookup=True,
            backward_factor=backward_factor,
            tied_embeddings=not config.untied_generator_embeddings,
        )

    analytic_forward = analytic(0.0)
    analytic_train = analytic(1.0)
    analytic_train_2x = analytic(2.0)
    return {
        "model_size": model_size,
        "batch_size": batch_size,
        "seq_len": seq_len,
        "max_predictions_per_seq": config.max_predictions_per_seq,
        "profiler_forward_flops": profiler_forward,
        "analytic_forward_flops": analytic_forward,
        "forward_ratio": profiler_forward / analytic_forward,
        "profiler_train_step_flops": profiler_train,
        "analytic_train_step_flops": analytic_train,
        "train_step_ratio": profiler_train / analytic_train,
        "analytic_train_step_flops_backward_2x": analytic_train_2x,
        "train_step_ratio_backward_2x": profiler_train / analytic_train_2x,
        "discriminator_config": _config_dict(disc_config),
        "generator_config": None if gen_config is None else _config_dict(gen_config),
    }


def _config_dict(config: Any) -> dict:
    keys = (
        "vocab_size",
        "embedding_size",
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "intermediate_size",
    )
    return {k: _config_value(config, k) for k in keys}
