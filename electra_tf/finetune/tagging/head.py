"""The tagging head, as the original's `tagging_tasks.py`: each word's first sub-token ->
dense(num_labels); the loss is the sum of the words' cross-entropies (per sentence)."""

import keras
import tensorflow as tf

from electra_tf.finetune.task import softmax_cross_entropy


@keras.saving.register_keras_serializable(package="electra_tf")
class TaggingHead(keras.layers.Layer):
    """Gather each word's first sub-token -> dense(num_labels); loss = Σ_words CE (per sentence).

    Args:
        task_name: the feature-name prefix (`<task>_labels`, `<task>_labels_mask`, ...).
        num_labels: number of tags.

    Example:
        head = TaggingHead("chunk", 3, name="chunk")
        z = tf.zeros([1, 4], tf.int32)
        out = head(tf.zeros([1, 4, 8]), {"chunk_labels": z, "chunk_labeled_positions": z,
                   "chunk_labels_mask": tf.zeros([1, 4]), "chunk_eid": tf.constant([0])})
    """

    def __init__(self, task_name: str, num_labels: int, **kwargs):
        super().__init__(**kwargs)
        self.task_name = task_name
        self.num_labels = num_labels
        self.dense = keras.layers.Dense(
            num_labels, kernel_initializer="glorot_uniform", name="dense"
        )

    def build(self, input_shape):
        self.dense.build(input_shape)
        self.built = True

    def call(self, sequence_output, features, training=False):
        t = self.task_name
        positions = features[f"{t}_labeled_positions"]
        reprs = tf.gather(sequence_output, positions, batch_dims=1)
        logits = tf.cast(self.dense(reprs), tf.float32)
        labels = features[f"{t}_labels"]
        mask = tf.cast(features[f"{t}_labels_mask"], tf.float32)
        ce, predictions = softmax_cross_entropy(logits, labels, self.num_labels)
        return {
            "loss": tf.reduce_sum(ce * mask, axis=-1),
            "logits": logits,
            "predictions": predictions,
            "labels_mask": mask,
            "eid": features[f"{t}_eid"],
        }

    def get_config(self):
        config = super().get_config()
        config.update(task_name=self.task_name, num_labels=self.num_labels)
        return config
