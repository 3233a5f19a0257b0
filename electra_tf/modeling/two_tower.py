"""Electric's generator: the original's `TwoTowerClozeTransformer` (`run_pretraining.py`)."""

from typing import Optional

import keras
import tensorflow as tf

from electra_tf.model_config import ModelConfig
from electra_tf.modeling.encoder import (
    Embeddings,
    TransformerEncoder,
    _SharedEmbeddingsSerialization,
)


def roll(x: tf.Tensor, direction: int) -> tf.Tensor:
    """The original's `roll`: concat(x[:, d:], x[:, :d]) along the sequence axis of [B, L, D]."""
    return tf.concat([x[:, direction:], x[:, :direction]], axis=1)


class TwoTowerClozeGenerator(_SharedEmbeddingsSerialization, keras.layers.Layer):
    """Two generator-sized encoders over the unmasked input: `generator_ltr` (position i attends
    to positions <= i) and `generator_rtl` (positions >= i). The representation of position t is
    ltr[t-1] ‖ rtl[t+1] (`roll`, with the original's wrap-around at both ends), so it never sees
    token t: what the `cloze_predictions` head turns into p(x_t | the other tokens).

    The towers' variables are the original's top-level scopes `generator_ltr/...` and
    `generator_rtl/...`; with shared `embeddings` (tied, the default) both read the
    discriminator's `electra/embeddings` and each has its own `embeddings_project`; untied, each
    tower has its own embeddings, and the cloze head's output table is the ltr tower's.

    Args:
        config: one tower's `ModelConfig` (the original's generator config).
        embeddings: the `Embeddings` both towers share (tied), or None for their own.

    Example:
    >>> cfg = ModelConfig(vocab_size=10, hidden_size=8, num_hidden_layers=1,
    ...                   num_attention_heads=2, intermediate_size=16)
    >>> gen = TwoTowerClozeGenerator(cfg)
    >>> gen.build()
    >>> ids = tf.constant([[1, 2, 3]])
    >>> gen(ids, tf.ones_like(ids), tf.zeros_like(ids)).shape
    TensorShape([1, 3, 16])
    """

    def __init__(self, config: ModelConfig, embeddings: Optional[Embeddings] = None, **kwargs):
        kwargs.setdefault("name", "generator")
        super().__init__(**kwargs)
        self.config = config
        self._shared_embeddings = embeddings is not None
        p = self.dtype_policy
        self.generator_ltr = TransformerEncoder(
            config, embeddings=embeddings, causal="ltr", name="generator_ltr", dtype=p
        )
        self.generator_rtl = TransformerEncoder(
            config, embeddings=embeddings, causal="rtl", name="generator_rtl", dtype=p
        )

    @property
    def embeddings(self) -> Embeddings:
        """The ltr tower's embeddings: the cloze head's output table, as the original."""
        return self.generator_ltr.embeddings

    @property
    def output_size(self) -> int:
        """The width of a position's representation (both towers' hidden states)."""
        return 2 * self.config.hidden_size

    def build(self, input_shape=None):
        # the original's scopes are top-level: open the towers' scopes at the root instead of
        # under this layer's (keras.name_scope's documented `override_parent`)
        with keras.name_scope("", override_parent=""):
            for tower in (self.generator_ltr, self.generator_rtl):
                if not tower.built:
                    tower.build()

    def call(self, input_ids, input_mask, segment_ids, training=False, dropout_seed=None):
        seeds = (None, None)
        if training and dropout_seed is not None:
            seed = tf.cast(dropout_seed, tf.int32)
            seeds = tuple(tf.stack([seed[0], seed[1] * 2 + i]) for i in range(2))
        ltr = self.generator_ltr(
            input_ids, input_mask, segment_ids, training=training, dropout_seed=seeds[0]
        )
        rtl = self.generator_rtl(
            input_ids, input_mask, segment_ids, training=training, dropout_seed=seeds[1]
        )
        return tf.concat([roll(ltr, -1), roll(rtl, 1)], axis=-1)
