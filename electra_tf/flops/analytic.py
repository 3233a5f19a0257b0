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

The FLOPs of this project's pretraining step: for a `PretrainingConfig` in
`electra_tf.pretraining_networks` (the one count callers use), over the per-objective
arithmetic of `electra_tf.objectives.network_flops_per_step`; profiler counts of the real graph in `electra_tf.flops.profiler`
and `electra_tf.train.profiling`; docs/FLOPS.md compares the two.
"""

import dataclasses
from collections.abc import Mapping
from typing import Any

from electra_tf.errors import UserError
from electra_tf.model_config import BERT_VOCAB_SIZE

# the two conventions of a training step's count (`StepFlops`): the paper's (lookups as one-hot
# products, backward = forward: its compute column) and the real one (lookups as gathers,
# backward = 2x forward: the step's arithmetic, for FLOP/s and MFU)
PAPER = dict(sparse_embed_lookup=False, backward_factor=1.0)
REAL = dict(sparse_embed_lookup=True, backward_factor=2.0)
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
    v: int = BERT_VOCAB_SIZE
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


@dataclasses.dataclass
class TwoTowerFlops:
    """Electric's two-tower cloze generator (`modeling.two_tower`) in the same conventions: two
    towers of `tower`'s shape over the whole sequence (attention counted over every position,
    as `TransformerFlops` does), and the cloze head (dense from both towers' 2·h states, GELU,
    LN, tied output) at every position.

    Example:
        >>> tower = TransformerFlops(h=64, l=12, s=128, e=128)
        >>> TwoTowerFlops(tower).forward_flops() > 2 * tower.forward_flops()
        True
    """

    tower: TransformerFlops

    def forward_flops(self, discriminator: bool = False) -> float:
        t = self.tower
        cloze = dataclasses.replace(t, h=2 * t.h, output_frac=1.0)
        return 2 * (t.l * t.block_flops() + t.input_embedding_flops()) + cloze.mlm_output_flops()


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
    v: int = BERT_VOCAB_SIZE,
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


@dataclasses.dataclass(frozen=True)
class StepFlops:
    """FLOPs of one training step (the whole global batch) in both conventions."""

    paper: float
    real: float


def dense_flops(in_features: int, out_features: int, tokens: int = 1, bias: bool = True) -> int:
    """Forward FLOPs of a dense layer applied to `tokens` vectors: 2·in·out (+ out for the bias)."""
    return tokens * (2 * in_features * out_features + (out_features if bias else 0))


# --------------------------------------------------------------------------------------------
# Counting from this project's model configs.


def config_value(config: Any, key: str) -> Any:
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
    hidden = int(config_value(config, "hidden_size"))
    if embedding_size is None:
        if isinstance(config, Mapping):
            embedding_size = config.get("embedding_size")
        else:
            embedding_size = getattr(config, "embedding_size", None)
    return TransformerFlops(
        h=hidden,
        l=int(config_value(config, "num_hidden_layers")),
        s=int(seq_len),
        v=int(config_value(config, "vocab_size")),
        e=None if embedding_size is None else int(embedding_size),
        i=int(config_value(config, "intermediate_size")),
        heads=int(config_value(config, "num_attention_heads")),
        output_frac=output_frac,
        sparse_embed_lookup=sparse_embed_lookup,
    )
