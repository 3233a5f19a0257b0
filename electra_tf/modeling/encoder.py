"""The BERT-style post-LN transformer encoder that ELECTRA's generator and discriminator share.

Layer names follow the original's variable scopes (`embeddings/word_embeddings`,
`encoder/layer_3/attention/self/query`, ...) so that mapping to original checkpoints is a table.
"""

from typing import Optional

import keras
import tensorflow as tf

from electra_tf.model_config import ModelConfig
from electra_tf.modeling.layers import (
    LayerNorm,
    SeedSequence,
    dropout,
    gelu_fused,
    get_activation,
    residual_layer_norm,
    truncated_normal,
)

CAUSAL_MASKS = (None, "ltr", "rtl")


def _dense(units, name, init_range=None, activation=None, dtype=None):
    """A Dense layer; trunc-normal(init_range) kernel, or glorot_uniform where the original used
    TF1's default initializer (init_range=None)."""
    init = truncated_normal(init_range) if init_range is not None else "glorot_uniform"
    return keras.layers.Dense(
        units, activation=activation, kernel_initializer=init, name=name, dtype=dtype
    )


class _ModelConfigSerialization:
    """get_config/from_config for layers whose first argument is a `ModelConfig`."""

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict()}

    @classmethod
    def from_config(cls, cfg):
        cfg = dict(cfg)
        cfg["config"] = ModelConfig.from_dict(cfg["config"])
        return cls(**cfg)


class Embeddings(_ModelConfigSerialization, keras.layers.Layer):
    """Word + position + token-type embeddings, LayerNorm, dropout.

    Shared by reference between the generator and the discriminator when embeddings are tied:
    the tables and the LayerNorm are then single variables receiving both losses' gradients.

    Args:
        config: a `ModelConfig`; uses vocab_size, embedding_size, max_position_embeddings,
            type_vocab_size, hidden_dropout_prob, initializer_range.

    Example:
    >>> emb = Embeddings(ModelConfig(vocab_size=10, hidden_size=8, num_attention_heads=2))
    >>> emb(tf.constant([[1, 2]]), tf.constant([[0, 1]])).shape
    TensorShape([1, 2, 8])
    """

    def __init__(self, config: ModelConfig, **kwargs):
        kwargs.setdefault("name", "embeddings")
        super().__init__(**kwargs)
        self.config = config
        self.layer_norm = LayerNorm(name="LayerNorm", dtype=self.dtype_policy)

    def build(self, input_shape=None):
        c = self.config
        init = truncated_normal(c.initializer_range)
        self.word_embeddings = self.add_weight(
            shape=(c.vocab_size, c.embedding_size), initializer=init, name="word_embeddings"
        )
        self.token_type_embeddings = self.add_weight(
            shape=(c.type_vocab_size, c.embedding_size),
            initializer=init,
            name="token_type_embeddings",
        )
        self.position_embeddings = self.add_weight(
            shape=(c.max_position_embeddings, c.embedding_size),
            initializer=init,
            name="position_embeddings",
        )
        self.layer_norm.build((None, None, c.embedding_size))

    def call(self, input_ids, segment_ids, seeds: Optional[SeedSequence] = None):
        length = tf.shape(input_ids)[1]
        x = tf.gather(self.word_embeddings, input_ids)
        x += tf.gather(self.token_type_embeddings, segment_ids)
        x += self.position_embeddings[:length]  # broadcast over the batch (LiteRT: no newaxis)
        x = self.layer_norm(tf.cast(x, self.compute_dtype))
        seed = seeds.next() if seeds is not None else None
        return dropout(x, self.config.hidden_dropout_prob, seed)


class TransformerLayer(_ModelConfigSerialization, keras.layers.Layer):
    """One post-LN block: self-attention, add & norm, feed-forward, add & norm.

    Args:
        config: a `ModelConfig` (hidden_size, num_attention_heads, intermediate_size, hidden_act,
            dropouts, initializer_range).
        fused_elementwise: run dropout + residual + LayerNorm and GELU as XLA-compiled pieces
            between the (oneDNN) matmuls: faster on CPUs, rounding differs (`layers.py`).
    """

    def __init__(self, config: ModelConfig, fused_elementwise: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.fused_elementwise = fused_elementwise
        c = config
        r = c.initializer_range
        p = self.dtype_policy
        self.query = _dense(c.hidden_size, "query", r, dtype=p)
        self.key = _dense(c.hidden_size, "key", r, dtype=p)
        self.value = _dense(c.hidden_size, "value", r, dtype=p)
        self.attention_output = _dense(c.hidden_size, "dense", r, dtype=p)
        self.attention_layer_norm = LayerNorm(name="LayerNorm", dtype=p)
        self.intermediate = _dense(c.intermediate_size, "dense", r, dtype=p)
        # the fused GELU is the same function as one XLA kernel (other activations stay as they are)
        fused_gelu = fused_elementwise and c.hidden_act == "gelu"
        self.activation = gelu_fused if fused_gelu else get_activation(c.hidden_act)
        self.output_dense = _dense(c.hidden_size, "dense", r, dtype=p)
        self.output_layer_norm = LayerNorm(name="LayerNorm", dtype=p)

    def build(self, input_shape=None):
        h, i = self.config.hidden_size, self.config.intermediate_size
        # name scopes reproduce the original's variable paths
        with keras.name_scope("attention"):
            with keras.name_scope("self"):
                for d in (self.query, self.key, self.value):
                    d.build((None, None, h))
            with keras.name_scope("output"):
                self.attention_output.build((None, None, h))
                self.attention_layer_norm.build((None, None, h))
        with keras.name_scope("intermediate"):
            self.intermediate.build((None, None, h))
        with keras.name_scope("output"):
            self.output_dense.build((None, None, i))
            self.output_layer_norm.build((None, None, h))

    def call(self, x, input_mask, seeds: Optional[SeedSequence] = None, causal_mask=None):
        c = self.config
        heads = c.num_attention_heads
        head_size = c.hidden_size // heads
        batch, length = tf.shape(x)[0], tf.shape(x)[1]

        def split_heads(t):  # [B, L, H] -> [B, heads, L, d]
            return tf.transpose(tf.reshape(t, [batch, length, heads, head_size]), [0, 2, 1, 3])

        q = split_heads(self.query(x))
        k = split_heads(self.key(x))
        v = split_heads(self.value(x))
        scores = tf.matmul(q, k, transpose_b=True) * tf.cast(head_size**-0.5, q.dtype)
        # additive mask over keys: 0 where attended, -10000 where padded (not -inf, as the
        # original); built here from the int mask since Keras casts float call arguments to
        # the compute dtype, and the softmax runs in float32 under mixed precision
        mask = tf.expand_dims(tf.expand_dims(tf.cast(input_mask, tf.float32), 1), 1)
        if causal_mask is not None:  # int [L, L]: query i may attend key j (ltr / rtl)
            mask *= tf.cast(causal_mask, tf.float32)[tf.newaxis, tf.newaxis]
        scores = tf.cast(scores, tf.float32) + (1.0 - mask) * -10000.0
        probs = tf.cast(tf.nn.softmax(scores, axis=-1), x.dtype)
        probs = dropout(probs, c.attention_probs_dropout_prob, seeds and seeds.next())
        context = tf.matmul(probs, v)
        context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]), [batch, length, c.hidden_size])
        fused = self.fused_elementwise
        attn = residual_layer_norm(
            self.attention_output(context),
            x,
            self.attention_layer_norm,
            c.hidden_dropout_prob,
            seeds and seeds.next(),
            fused,
        )
        y = self.output_dense(self.activation(self.intermediate(attn)))
        return residual_layer_norm(
            y, attn, self.output_layer_norm, c.hidden_dropout_prob, seeds and seeds.next(), fused
        )

    def get_config(self):
        return {**super().get_config(), "fused_elementwise": self.fused_elementwise}


class _SharedEmbeddingsSerialization(_ModelConfigSerialization):
    """get_config/from_config for layers that take an optional shared `Embeddings`: the config
    holds the shared layer's config (None: the layer built its own), so that a clone builds
    embeddings of the same shape (its own copy: sharing is its builder's to restore)."""

    def get_config(self):
        shared = self.embeddings.get_config() if self._shared_embeddings else None
        return {**super().get_config(), "embeddings": shared}

    @classmethod
    def from_config(cls, cfg):
        cfg = dict(cfg)
        if cfg.get("embeddings") is not None:
            cfg["embeddings"] = Embeddings.from_config(cfg["embeddings"])
        return super().from_config(cfg)


class TransformerEncoder(_SharedEmbeddingsSerialization, keras.layers.Layer):
    """ELECTRA's encoder: embeddings, optional projection to the hidden size, N transformer layers.

    No pooler: `sequence_output[:, 0]` is the [CLS] vector, as the original.

    Args:
        config: a `ModelConfig`.
        embeddings: an existing `Embeddings` layer to share (tied embeddings); a new one when None.
            When shared and its width differs from `hidden_size`, an `embeddings_project` dense
            layer (glorot init, as the original) maps it to the hidden size.
        causal: None (bidirectional), "ltr" (position i attends to positions <= i, the diagonal
            included) or "rtl" (positions >= i): the original's `ltr` / `rtl` attention masks,
            used by Electric's two-tower generator.
        fused_elementwise: each layer's dropout + residual + LayerNorm and GELU as XLA-compiled
            pieces (`TransformerLayer`); off by default (the original's numerics).

    Example:
    >>> cfg = ModelConfig(vocab_size=10, hidden_size=8, num_hidden_layers=1,
    ...                   num_attention_heads=2, intermediate_size=16)
    >>> enc = TransformerEncoder(cfg)
    >>> ids = tf.constant([[1, 2, 0]])
    >>> enc(ids, tf.constant([[1, 1, 0]]), tf.zeros_like(ids)).shape
    TensorShape([1, 3, 8])
    """

    def __init__(
        self,
        config: ModelConfig,
        embeddings: Optional[Embeddings] = None,
        causal: Optional[str] = None,
        fused_elementwise: bool = False,
        **kwargs,
    ):
        kwargs.setdefault("name", "electra")
        super().__init__(**kwargs)
        self.fused_elementwise = fused_elementwise
        if causal not in CAUSAL_MASKS:
            raise ValueError(f"causal must be one of {CAUSAL_MASKS}, got {causal!r}")
        self.config = config
        self.causal = causal
        self._shared_embeddings = embeddings is not None
        self.embeddings = embeddings or Embeddings(config, dtype=self.dtype_policy)
        emb_size = self.embeddings.config.embedding_size
        self.embeddings_project = None
        if emb_size != config.hidden_size:
            self.embeddings_project = _dense(
                config.hidden_size, "embeddings_project", None, dtype=self.dtype_policy
            )
        # one attribute per layer: tf.train.Checkpoint does not track a Keras 3 layer's lists
        for i in range(config.num_hidden_layers):
            setattr(
                self,
                f"layer_{i}",
                TransformerLayer(
                    config,
                    fused_elementwise=fused_elementwise,
                    name=f"layer_{i}",
                    dtype=self.dtype_policy,
                ),
            )

    def get_config(self):
        return {
            **super().get_config(),
            "causal": self.causal,
            "fused_elementwise": self.fused_elementwise,
        }

    @property
    def transformer_layers(self):
        return [getattr(self, f"layer_{i}") for i in range(self.config.num_hidden_layers)]

    def build(self, input_shape=None):
        if not self.embeddings.built:
            self.embeddings.build()
        if self.embeddings_project is not None:
            self.embeddings_project.build((None, None, self.embeddings.config.embedding_size))
        with keras.name_scope("encoder"):
            for layer in self.transformer_layers:
                layer.build()

    def call(self, input_ids, input_mask, segment_ids, training=False, dropout_seed=None):
        if training and dropout_seed is None:
            dropout_seed = tf.random.uniform([2], maxval=2**31 - 1, dtype=tf.int32)
        seeds = SeedSequence(dropout_seed if training else None)
        x = self.embeddings(input_ids, segment_ids, seeds=seeds)
        if self.embeddings_project is not None:
            x = self.embeddings_project(x)
        causal_mask = None
        if self.causal is not None:
            ones = tf.ones([tf.shape(input_ids)[1]] * 2, tf.int32)
            lower, upper = (-1, 0) if self.causal == "ltr" else (0, -1)
            causal_mask = tf.linalg.band_part(ones, lower, upper)
        for layer in self.transformer_layers:
            x = layer(x, input_mask, seeds=seeds, causal_mask=causal_mask)
        return x
