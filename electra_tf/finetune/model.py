"""The fine-tuning model: one shared discriminator encoder and a head per task.

Variable paths: `electra/...` for the encoder (as pretraining, so its checkpoint loads) and
`task_specific/<task>/...` for the heads (the original's scope, which the layer-wise learning
rate gives depth n_layers + 2).

Multi-task loss, as the original: `Σ_batch Σ_tasks loss[b, t] · one_hot(task_id[b], n_tasks)`,
a SUM over the batch (not a mean; with gradient clipping to norm 1 the difference matters).
Padding examples have `task_id = n_tasks`, an all-zero one-hot row, and add no loss.
"""

from collections.abc import Sequence

import keras
import tensorflow as tf

from electra_tf.model_config import ModelConfig
from electra_tf.modeling.encoder import TransformerEncoder


def serialize_heads(heads: Sequence[keras.layers.Layer]) -> list:
    """The heads' Keras serializations (the head classes are registered with Keras)."""
    return [keras.saving.serialize_keras_object(h) for h in heads]


def deserialize_heads(configs: Sequence[dict]) -> list:
    return [keras.saving.deserialize_keras_object(c) for c in configs]


class TaskHeads(keras.layers.Layer):
    """Holds the heads (named after their task) under the `task_specific` scope.

    Args:
        heads: the task heads, each named after its task.
    """

    def __init__(self, heads: Sequence[keras.layers.Layer], **kwargs):
        kwargs.setdefault("name", "task_specific")
        super().__init__(**kwargs)
        self.heads = list(heads)
        self._by_name = {h.name: h for h in self.heads}
        # one attribute per head: tf.train.Checkpoint does not track a Keras 3 layer's lists
        for head in self.heads:
            setattr(self, f"head_{head.name}", head)

    def build(self, input_shape):
        # each head builds on its first call, inside this layer's name scope
        self.built = True

    def get_config(self):
        return {**super().get_config(), "heads": serialize_heads(self.heads)}

    @classmethod
    def from_config(cls, config):
        return cls(**{**config, "heads": deserialize_heads(config["heads"])})

    def call(self, sequence_output, features, task_name=None, training=False):
        names = [task_name] if task_name else list(self._by_name)
        return {n: self._by_name[n](sequence_output, features, training=training) for n in names}


class FinetuningModel(keras.Model):
    """Encoder + task heads. `model(features, training)` -> (total loss, {task: head outputs}).

    Args:
        encoder: the (pretrained) `TransformerEncoder`, built beforehand so that its variable
            paths are `electra/...` as in pretraining and the original's checkpoints.
        heads: one head per task, named after the task, in task-id order.
    """

    def __init__(self, encoder: TransformerEncoder, heads: Sequence[keras.layers.Layer], **kwargs):
        super().__init__(**kwargs)
        self.model_config = encoder.config
        self.task_names: list[str] = [h.name for h in heads]
        self.encoder = encoder
        self.task_heads = TaskHeads(heads)

    def get_config(self):
        return {
            **super().get_config(),
            "encoder": self.encoder.get_config(),
            "heads": serialize_heads(self.task_heads.heads),
        }

    @classmethod
    def from_config(cls, config):
        encoder = TransformerEncoder.from_config(config["encoder"])
        heads = deserialize_heads(config["heads"])
        return cls(**{**config, "encoder": encoder, "heads": heads})

    def call(self, features, training=False, dropout_seed=None):
        # dropout_seed: the encoder's stateless dropout seed (None: drawn from the global RNG)
        seq = self.encoder(
            features["input_ids"],
            features["input_mask"],
            features["segment_ids"],
            training=training,
            dropout_seed=dropout_seed,
        )
        outputs = self.task_heads(seq, features, training=training)
        losses = tf.stack([outputs[n]["loss"] for n in self.task_names], axis=-1)
        weights = tf.one_hot(features["task_id"], len(self.task_names), dtype=tf.float32)
        total = tf.reduce_sum(tf.cast(losses, tf.float32) * weights)
        return total, outputs

    # -- the training step's task interface (`electra_tf.train.step.TrainStep`) --

    def denominators(self, batch, step=None, seed=None) -> dict[str, tf.Tensor]:
        """The replica batch's real (not padding) examples; the loss is a SUM over the global
        batch, as the original's, so nothing is normalised by it."""
        real = tf.cast(batch["task_id"] < len(self.task_names), tf.float32)
        return {"examples": tf.reduce_sum(real)}

    def compute(self, batch, training=False, dropout_seed=None, **unused) -> dict[str, tf.Tensor]:
        """{"loss": this micro-batch's summed loss}: summed over micro-batches and replicas by
        the step, the global batch's sum (what one device computes on the whole batch)."""
        loss, _ = self(batch, training=training, dropout_seed=dropout_seed)
        return {"loss": loss}

    def predict_task(self, features, task_name: str) -> dict[str, tf.Tensor]:
        seq = self.encoder(
            features["input_ids"], features["input_mask"], features["segment_ids"], training=False
        )
        return self.task_heads(seq, features, task_name=task_name, training=False)[task_name]


def build_model(
    model_config: ModelConfig,
    heads: Sequence[keras.layers.Layer],
    dummy: dict[str, tf.Tensor],
    precision: str = "float32",
) -> tuple[FinetuningModel, list[tf.Variable]]:
    """Creates the model and its variables (one call on a dummy batch). `precision`: the
    encoder's Keras dtype policy; the heads stay float32 (their logits and losses too)."""
    policy = keras.mixed_precision.DTypePolicy(precision)
    encoder = TransformerEncoder(model_config, name="electra", dtype=policy)
    encoder(dummy["input_ids"], dummy["input_mask"], dummy["segment_ids"])
    model = FinetuningModel(encoder, heads)
    model(dummy, training=False)
    return model, model.trainable_variables
