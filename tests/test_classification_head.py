"""The GLUE heads' pooling: [CLS] (the original) or the mean of the real tokens, checked by hand
with numpy; the config round-trips; the hparam reaches the head."""

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.finetune.classification.head import ClassificationHead, RegressionHead, pool


def sequence_and_mask():
    rng = np.random.default_rng(0)
    seq = rng.normal(size=(2, 5, 3)).astype(np.float32)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32)
    return seq, mask


def test_mean_pooling_averages_only_the_real_tokens():
    seq, mask = sequence_and_mask()
    got = pool(tf.constant(seq), tf.constant(mask), "mean").numpy()
    np.testing.assert_allclose(got[0], seq[0, :3].mean(0), rtol=1e-6)
    np.testing.assert_allclose(got[1], seq[1].mean(0), rtol=1e-6)
    np.testing.assert_array_equal(pool(tf.constant(seq), tf.constant(mask), "cls"), seq[:, 0])
    with pytest.raises(ValueError, match="pooling"):
        pool(tf.constant(seq), tf.constant(mask), "max")


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_heads_read_the_pooled_vector(pooling):
    seq, mask = sequence_and_mask()
    features = {"sst_label_ids": tf.constant([0, 1]), "sst_eid": tf.constant([0, 1]),
                "sst_targets": tf.constant([0.2, 0.8]), "input_mask": tf.constant(mask)}  # fmt: skip
    head = ClassificationHead("sst", 2, pooling=pooling, name="sst")
    out = head(tf.constant(seq), features)
    kernel, bias = (w.numpy() for w in head.dense.weights)
    pooled = seq[:, 0] if pooling == "cls" else np.stack([seq[0, :3].mean(0), seq[1].mean(0)])
    np.testing.assert_allclose(out["logits"], pooled @ kernel + bias, rtol=1e-5, atol=1e-6)
    assert ClassificationHead.from_config(head.get_config()).get_config() == head.get_config()
    reg = RegressionHead("sst", pooling=pooling, name="sst_reg")
    out = reg(tf.constant(seq), features)
    kernel, bias = (w.numpy() for w in reg.dense.weights)
    np.testing.assert_allclose(out["predictions"], (pooled @ kernel + bias)[:, 0], rtol=1e-5,
                               atol=1e-6)  # fmt: skip
    assert RegressionHead.from_config(reg.get_config()).pooling == pooling


def test_the_hparam_reaches_the_head(tmp_path):
    from electra_tf.errors import UserError
    from electra_tf.finetune.config import FinetuningConfig

    config = FinetuningConfig("m", str(tmp_path), classifier_pooling="mean")
    assert config.classifier_pooling == "mean"
    assert FinetuningConfig("m", str(tmp_path)).classifier_pooling == "cls"  # the original
    with pytest.raises(UserError, match="classifier_pooling"):
        FinetuningConfig("m", str(tmp_path), classifier_pooling="max")
