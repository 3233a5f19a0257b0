"""Output heads of pretraining: the generator's masked-LM head and the discriminator's RTD head."""

import keras
import tensorflow as tf

from electra_tf.modeling.encoder import Embeddings, _dense
from electra_tf.modeling.layers import LayerNorm, get_activation, truncated_normal


class MaskedLMHead(keras.layers.Layer):
    """Generator head: dense(E, gelu) -> LayerNorm -> x @ word_table^T + output_bias.

    Applied to hidden states gathered at the masked positions only ([B, N, h]), so the
    [B, L, vocab] tensor is never built. The output projection is the (shared) input word table.

    Args:
        embeddings: the `Embeddings` layer whose word table is the output projection.
        hidden_act: activation of the dense layer ("gelu").
        initializer_range: stddev of the dense layer's truncated-normal init.
        tied_output: the output projection is the word table (the original); False gives the
            head its own, `output_weights` [vocab, E] (a Hugging Face generator saved with
            tie_word_embeddings false).

    `get_config` records the embeddings' config; `from_config` gives the head a new
    `Embeddings` of that config (sharing one with an encoder is the builder's business).

    Example:
    >>> from electra_tf.model_config import ModelConfig
    >>> emb = Embeddings(ModelConfig(vocab_size=10, hidden_size=8, num_attention_heads=2))
    >>> emb.build()
    >>> MaskedLMHead(emb)(tf.zeros([1, 2, 4])).shape
    TensorShape([1, 2, 10])
    """

    def __init__(
        self,
        embeddings: Embeddings,
        hidden_act="gelu",
        initializer_range=0.02,
        tied_output: bool = True,
        **kwargs,
    ):
        kwargs.setdefault("name", "generator_predictions")
        super().__init__(**kwargs)
        self.embeddings = embeddings
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        self.tied_output = tied_output
        self.output_weights = None
        e = embeddings.config.embedding_size
        self.dense = _dense(
            e, "dense", initializer_range, get_activation(hidden_act), dtype=self.dtype_policy
        )
        self.layer_norm = LayerNorm(name="LayerNorm", dtype=self.dtype_policy)

    def build(self, input_shape):
        e = self.embeddings.config.embedding_size
        self.dense.build(input_shape)
        self.layer_norm.build((None, None, e))
        self.output_bias = self.add_weight(
            shape=(self.embeddings.config.vocab_size,), initializer="zeros", name="output_bias"
        )
        if not self.tied_output:
            c = self.embeddings.config
            self.output_weights = self.add_weight(
                shape=(c.vocab_size, c.embedding_size),
                initializer=truncated_normal(self.initializer_range),
                name="output_weights",
            )

    def call(self, gathered_hidden):
        x = self.layer_norm(self.dense(gathered_hidden))
        table = self.embeddings.word_embeddings if self.tied_output else self.output_weights
        table = tf.cast(table, x.dtype)
        logits = tf.einsum("bne,ve->bnv", x, table)
        return tf.cast(logits, tf.float32) + self.output_bias

    def get_config(self):
        config = super().get_config()
        config.update(
            embeddings=self.embeddings.get_config(),
            hidden_act=self.hidden_act,
            initializer_range=self.initializer_range,
            tied_output=self.tied_output,
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["embeddings"] = Embeddings.from_config(config["embeddings"])
        return cls(**config)


class DiscriminatorHead(keras.layers.Layer):
    """Discriminator head: dense(H, gelu) -> dense(1) -> one logit per token (float32).

    The second dense uses glorot init, as TF1's default in the original.

    Args:
        hidden_size: width of the hidden dense layer.
        hidden_act: its activation ("gelu").
        initializer_range: stddev of its truncated-normal init.

    Example:
    >>> DiscriminatorHead(8)(tf.zeros([2, 3, 8])).shape
    TensorShape([2, 3])
    """

    def __init__(self, hidden_size: int, hidden_act="gelu", initializer_range=0.02, **kwargs):
        kwargs.setdefault("name", "discriminator_predictions")
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        p = self.dtype_policy
        self.dense = _dense(
            hidden_size, "dense", initializer_range, get_activation(hidden_act), dtype=p
        )
        self.dense_1 = _dense(1, "dense_1", None, dtype=p)

    def build(self, input_shape):
        self.dense.build(input_shape)
        self.dense_1.build((None, None, self.hidden_size))

    def call(self, sequence_output):
        logits = self.dense_1(self.dense(sequence_output))
        return tf.cast(tf.squeeze(logits, -1), tf.float32)

    def get_config(self):
        return {
            **super().get_config(),
            "hidden_size": self.hidden_size,
            "hidden_act": self.hidden_act,
            "initializer_range": self.initializer_range,
        }


class ValueBaselineHead(keras.layers.Layer):
    """The adversarial generator's learned baseline (paper appendix F): one logit per position.

    The baseline is b = -log sigmoid(logit) = softplus(-logit), a predicted reward in [0, inf),
    computed from the generator's hidden states at the masked positions.

    Args:
        initializer_range: stddev of the dense layer's truncated-normal init.

    Example:
    >>> ValueBaselineHead()(tf.zeros([2, 3, 8])).shape
    TensorShape([2, 3])
    """

    def __init__(self, initializer_range=0.02, **kwargs):
        kwargs.setdefault("name", "generator_baseline")
        super().__init__(**kwargs)
        self.initializer_range = initializer_range
        self.dense = _dense(1, "dense", initializer_range, dtype=self.dtype_policy)

    def build(self, input_shape):
        self.dense.build(input_shape)

    def call(self, hidden):
        return tf.cast(tf.squeeze(self.dense(hidden), -1), tf.float32)

    def get_config(self):
        return {**super().get_config(), "initializer_range": self.initializer_range}
