"""The GLUE heads: the [CLS] vector -> dropout(0.1) (on top of the encoder's) -> dense (glorot,
no pooler), as the original's `classification_tasks.py`. Losses are per example (cross-entropy;
squared error against label / 5 for regression), summed over the batch by the runner."""

import keras
import tensorflow as tf

from electra_tf.finetune.task import softmax_cross_entropy


class ClassificationHead(keras.layers.Layer):
    """[CLS] -> dropout -> dense(num_labels) -> softmax cross-entropy (per example).

    Args:
        task_name: the feature-name prefix (`<task>_label_ids`, `<task>_eid`).
        num_labels: number of classes.
        dropout_rate: dropout on the [CLS] vector when training (the original: 0.1).

    Example:
        head = ClassificationHead("sst", 2, name="sst")
        out = head(tf.zeros([2, 8, 16]), {"sst_label_ids": tf.constant([0, 1]),
                                           "sst_eid": tf.constant([0, 1])})
    """

    def __init__(self, task_name: str, num_labels: int, dropout_rate: float = 0.1, **kwargs):
        super().__init__(**kwargs)
        self.task_name = task_name
        self.num_labels = num_labels
        self.dropout_rate = dropout_rate
        self.dropout = keras.layers.Dropout(dropout_rate, name="dropout")
        self.dense = keras.layers.Dense(
            num_labels, kernel_initializer="glorot_uniform", name="dense"
        )

    def build(self, input_shape):
        self.dense.build((input_shape[0], input_shape[-1]))
        self.built = True

    def call(self, sequence_output, features, training=False):
        reprs = self.dropout(sequence_output[:, 0], training=training)
        logits = tf.cast(self.dense(reprs), tf.float32)
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
        config = super().get_config()
        config.update(
            task_name=self.task_name, num_labels=self.num_labels, dropout_rate=self.dropout_rate
        )
        return config


class RegressionHead(keras.layers.Layer):
    """[CLS] -> dropout -> dense(1) -> squared error against `<task>_targets` (per example).

    Args:
        task_name: the feature-name prefix (`<task>_targets`, `<task>_eid`).
        dropout_rate: dropout on the [CLS] vector when training (the original: 0.1).

    Example:
        head = RegressionHead("sts", name="sts")
        out = head(tf.zeros([2, 8, 16]), {"sts_targets": tf.constant([0.2, 0.8]),
                                           "sts_eid": tf.constant([0, 1])})
    """

    def __init__(self, task_name: str, dropout_rate: float = 0.1, **kwargs):
        super().__init__(**kwargs)
        self.task_name = task_name
        self.dropout_rate = dropout_rate
        self.dropout = keras.layers.Dropout(dropout_rate, name="dropout")
        self.dense = keras.layers.Dense(1, kernel_initializer="glorot_uniform", name="dense")

    def build(self, input_shape):
        self.dense.build((input_shape[0], input_shape[-1]))
        self.built = True

    def call(self, sequence_output, features, training=False):
        reprs = self.dropout(sequence_output[:, 0], training=training)
        predictions = tf.squeeze(tf.cast(self.dense(reprs), tf.float32), -1)
        targets = tf.cast(features[f"{self.task_name}_targets"], tf.float32)
        return {
            "loss": tf.square(predictions - targets),
            "predictions": predictions,
            "targets": targets,
            "eid": features[f"{self.task_name}_eid"],
        }

    def get_config(self):
        config = super().get_config()
        config.update(task_name=self.task_name, dropout_rate=self.dropout_rate)
        return config
