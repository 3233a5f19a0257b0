"""`fused_elementwise`: each layer's dropout + residual + LayerNorm and GELU as XLA-compiled
pieces give the plain ops' outputs and gradients to float32 rounding, with the same dropout."""

import numpy as np
import tensorflow as tf

from electra_tf.model_config import ModelConfig
from electra_tf.modeling.encoder import TransformerEncoder
from electra_tf.pretraining_config import PretrainingConfig


def _encoders():
    cfg = ModelConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, embedding_size=16,
    )  # fmt: skip
    plain = TransformerEncoder(cfg)
    fused = TransformerEncoder(cfg, fused_elementwise=True)
    plain.build()
    fused.build()
    fused.set_weights(plain.get_weights())
    return plain, fused


def test_fused_matches_plain_outputs_and_gradients_with_dropout():
    plain, fused = _encoders()
    rng = np.random.default_rng(0)
    ids = tf.constant(rng.integers(1, 50, (3, 7)), tf.int32)
    mask = tf.constant([[1] * 7, [1] * 5 + [0] * 2, [1] * 3 + [0] * 4], tf.int32)
    segments = tf.zeros_like(ids)
    weight = tf.constant(rng.standard_normal((3, 7, 16)), tf.float32)
    seed = tf.constant([4, 5], tf.int32)
    results = []
    for enc in (plain, fused):

        @tf.function
        def step(enc=enc):
            with tf.GradientTape() as tape:
                out = enc(ids, mask, segments, training=True, dropout_seed=seed)
                loss = tf.reduce_sum(out * weight)
            return out, tape.gradient(loss, enc.trainable_weights)

        out, grads = step()
        results.append([out.numpy()] + [tf.convert_to_tensor(g).numpy() for g in grads])
    scale = max(np.abs(a).max() for a in results[0])
    for a, b in zip(*results):
        # float32 rounding; the key projection's bias gets ~1e-10 (softmax ignores it)
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6 * scale)
    # dropout is on and the same in both: the plain encoder without it differs far more
    no_dropout = plain(ids, mask, segments, training=False).numpy()
    assert (
        np.abs(no_dropout - results[0][0]).max() > 100 * np.abs(results[1][0] - results[0][0]).max()
    )


def test_fused_elementwise_reaches_the_encoders_and_their_configs():
    config = PretrainingConfig.from_flat(
        "m", "d", {"model_size": "small", "fused_elementwise": True, "vocab_size": 100,
                   "model_hparam_overrides": {"hidden_size": 16, "num_hidden_layers": 1,
                                              "num_attention_heads": 2, "intermediate_size": 32},
                   "embedding_size": 16},
    )  # fmt: skip
    from electra_tf import vocab
    from electra_tf.pretraining_networks import build_pretrainer

    model = build_pretrainer(config, 100, dict(vocab.BERT_UNCASED_SPECIAL_IDS))
    for enc in (model.discriminator, model.generator):
        assert enc.fused_elementwise and enc.get_config()["fused_elementwise"] is True
        assert all(layer.fused_elementwise for layer in enc.transformer_layers)
        clone = TransformerEncoder.from_config(enc.get_config())
        assert clone.fused_elementwise and clone.transformer_layers[0].fused_elementwise
    plain = PretrainingConfig.from_flat("m", "d", {"model_size": "small"})
    assert plain.scale.fused_elementwise is False
