"""The GLUE heads: the [CLS] vector -> dropout(0.1) (on top of the encoder's) -> dense (glorot,
no pooler), as the original's `classification_tasks.py`. Losses are per example (cross-entropy;
squared error against label / 5 for regression), summed over the batch by the runner.

`pooling="mean"` (new, hparam `classifier_pooling`) reads the mean of the real tokens' vectors
instead of [CLS]: ELECTRA's pretraining gives [CLS] a constant label ("original") and masked LM
no loss at all, so a short fine-tuning must teach [CLS] to summarise the sentence from scratch."""

import keras
import tensorflow as tf

from electra_tf.finetune.task import softmax_cross_entropy

POOLINGS = ("cls", "mean")


def pool(sequence_output: tf.Tensor, input_mask: tf.Tensor, pooling: str) -> tf.Tensor:
    """[B, L, H] -> [B, H]: the [CLS] vector, or the mean over the positions where
    `input_mask` is 1 ([CLS] and [SEP] included)."""
    if pooling == "cls":
        return sequence_output[:, 0]
    if pooling != "mean":
        raise ValueError(f"pooling {pooling!r} is not one of {POOLINGS}")
    # expand_dims, not [..., tf.newaxis]: a strided slice with a new axis is no LiteRT builtin
    mask = tf.expand_dims(tf.cast(input_mask, sequence_output.dtype), -1)
    total = tf.reduce_sum(sequence_output * mask, axis=1)
    return total / tf.maximum(tf.reduce_sum(mask, axis=1), tf.cast(1, mask.dtype))


class _PooledVectorHead(keras.layers.Layer):
    """What the GLUE heads share: one vector a sequence ([CLS] or the mean) -> dropout -> a
    glorot dense layer of `units` outputs (named `dense`, as the original's variables)."""

    reads_pooled_vector = True  # its dense layer runs once a sequence (flops.finetuning)

    def __init__(self, task_name: str, units: int, dropout_rate: float, pooling: str, **kwargs):
        super().__init__(**kwargs)
        if pooling not in POOLINGS:
            raise ValueError(f"pooling {pooling!r} is not one of {POOLINGS}")
        self.task_name = task_name
        self.dropout_rate = dropout_rate
        self.pooling = pooling
        self.dropout = keras.layers.Dropout(dropout_rate, name="dropout")
        self.dense = keras.layers.Dense(units, kernel_initializer="glorot_uniform", name="dense")

    def build(self, input_shape):
        self.dense.build((input_shape[0], input_shape[-1]))
        self.built = True

    def outputs(self, sequence_output, features, training) -> tf.Tensor:
        """The dense layer's outputs [B, units], in float32."""
        pooled = pool(sequence_output, features["input_mask"], self.pooling)
        return tf.cast(self.dense(self.dropout(pooled, training=training)), tf.float32)

    def get_config(self):
        config = super().get_config()
        config.update(
            task_name=self.task_name, dropout_rate=self.dropout_rate, pooling=self.pooling
        )
        return config


@keras.saving.register_keras_serializable(package="electra_tf")
class ClassificationHead(_PooledVectorHead):
    """[CLS] -> dropout -> dense(num_labels) -> softmax cross-entropy (per example).

    Args:
        task_name: the feature-name prefix (`<task>_label_ids`, `<task>_eid`).
        num_labels: number of classes.
        dropout_rate: dropout on the [CLS] vector when training (the original: 0.1).
        pooling: "cls" (the original) or "mean" (the real tokens' mean; see the module).

    Example:
        head = ClassificationHead("sst", 2, name="sst")
        out = head(tf.zeros([2, 8, 16]), {"sst_label_ids": tf.constant([0, 1]),
                                           "sst_eid": tf.constant([0, 1]),
                                           "input_mask": tf.ones([2, 8], tf.int32)})
    """

    def __init__(
        self,
        task_name: str,
        num_labels: int,
        dropout_rate: float = 0.1,
        pooling: str = "cls",
        **kwargs,
    ):
        super().__init__(task_name, num_labels, dropout_rate, pooling, **kwargs)
        self.num_labels = num_labels

    def call(self, sequence_output, features, training=False):
        logits = self.outputs(sequence_output, features, training)
        label_ids = features[f"{self.task_name}_label_ids"]
        loss, predictions = softmax_cross_entropy(logits, label_ids, self.num_labels)
        return {
            "loss": loss,
            "logits": logits,
            "predictions": predictions,
            "label_ids": label_ids,
            "eid": features[f"{self.task_name}_eid"],
        }

    def get_config(self):
        return {**super().get_config(), "num_labels": self.num_labels}


@keras.saving.register_keras_serializable(package="electra_tf")
class RegressionHead(_PooledVectorHead):
    """[CLS] -> dropout -> dense(1) -> squared error against `<task>_targets` (per example).

    Args:
        task_name: the feature-name prefix (`<task>_targets`, `<task>_eid`).
        dropout_rate: dropout on the [CLS] vector when training (the original: 0.1).
        pooling: "cls" (the original) or "mean" (the real tokens' mean; see the module).

    Example:
        head = RegressionHead("sts", name="sts")
        out = head(tf.zeros([2, 8, 16]), {"sts_targets": tf.constant([0.2, 0.8]),
                                           "sts_eid": tf.constant([0, 1]),
                                           "input_mask": tf.ones([2, 8], tf.int32)})
    """

    def __init__(self, task_name: str, dropout_rate: float = 0.1, pooling: str = "cls", **kwargs):
        super().__init__(task_name, 1, dropout_rate, pooling, **kwargs)

    def call(self, sequence_output, features, training=False):
        predictions = tf.squeeze(self.outputs(sequence_output, features, training), -1)
        targets = tf.cast(features[f"{self.task_name}_targets"], tf.float32)
        return {
            "loss": tf.square(predictions - targets),
            "predictions": predictions,
            "targets": targets,
            "eid": features[f"{self.task_name}_eid"],
        }
