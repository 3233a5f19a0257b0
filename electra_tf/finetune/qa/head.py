"""ELECTRA's span-extraction head: joint start/end prediction with a beam, plus answerability."""

import keras
import tensorflow as tf

NEG = 1000.0  # the original's additive mask: logits += 1000 * (answer_mask - 1)


@keras.saving.register_keras_serializable(package="electra_tf")
class QAHead(keras.layers.Layer):
    """Joint start/end span head with an answerability classifier (original `qa_tasks.py`).

    `answer_mask = input_mask * segment_ids + one_hot(0)` (document tokens, the final [SEP] and
    [CLS]). Start logits come from `dense` ([H, 1]). With `joint_prediction`, the end logits are
    `dense_1(gelu(qa_hidden([H_start ; H_t])))`, where `H_start` is the hidden state at the gold
    start when training (teacher forcing) and at each of the top `beam_size` starts otherwise.
    The answerability logit is `dense_3(gelu(dense_2([H_cls ; sum softmax(start) * H])))`; a
    positive logit means "unanswerable". All kernels are glorot-uniform with zero bias, as the
    original's `tf.layers.dense`. `qa_hidden` of the concatenation is computed as
    `start @ K[:H] + tokens @ K[H:] + b` (the same affine map, without materialising the
    [B, beam, L, 2H] concatenation).

    Called as `head(sequence_output, features, training=...)` (the fine-tuning runner's
    convention): `features` holds `input_mask`, `segment_ids` and, for the loss and teacher
    forcing, `<task>_start_positions`, `<task>_end_positions`, `<task>_is_impossible` and
    `<task>_eid`. Returns the per-example `loss` and the original's outputs (`start_logits`,
    `end_logits`, `answerable_logit`, `start/end_top_log_probs`, `start/end_top_index`, `eid`).
    At prediction the loss uses zero end logits, as the original's (it is only reported).

    Args:
        task_name: the feature-name prefix.
        beam_size: starts (and ends per start) kept at prediction time (20).
        joint_prediction: end conditioned on the start (True) or independent start/end heads.
        answerable_classifier: add the answerability logit and its loss.
        answerable_uses_start_logits: feed `[H_cls ; sum softmax(start) * H]` through a 512 gelu
            layer (`dense_2`) instead of `H_cls` alone.
        hidden_size: width of `qa_hidden` and `dense_2` (512).
        answerable_weight: weight of the answerability loss (0.5).

    Example:
        head = QAHead("squad", beam_size=2, name="squad")
        features = {"input_mask": tf.ones([2, 6], tf.int32),
                    "segment_ids": tf.constant([[0, 0, 1, 1, 1, 1]] * 2)}
        out = head(tf.random.normal([2, 6, 8]), features)
        out["end_top_index"].shape  # [2, 2, 2]
    """

    def __init__(
        self,
        task_name: str,
        beam_size: int = 20,
        joint_prediction: bool = True,
        answerable_classifier: bool = True,
        answerable_uses_start_logits: bool = True,
        hidden_size: int = 512,
        answerable_weight: float = 0.5,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.task_name = task_name
        self.answerable_weight = answerable_weight
        self.beam_size = beam_size
        self.joint_prediction = joint_prediction
        self.answerable_classifier = answerable_classifier
        self.answerable_uses_start_logits = answerable_uses_start_logits
        self.hidden_size = hidden_size
        self.start_dense = keras.layers.Dense(1, name="dense")
        if joint_prediction:
            self.qa_hidden = keras.layers.Dense(hidden_size, name="qa_hidden")
        self.end_dense = keras.layers.Dense(1, name="dense_1")
        if answerable_classifier:
            if answerable_uses_start_logits:
                self.answerable_hidden = keras.layers.Dense(
                    hidden_size, activation=_gelu, name="dense_2"
                )
            self.answerable_dense = keras.layers.Dense(
                1, name="dense_3" if answerable_uses_start_logits else "dense_2"
            )

    def build(self, input_shape):
        h = input_shape[-1]
        self.start_dense.build((None, None, h))
        if self.joint_prediction:
            self.qa_hidden.build((None, None, 2 * h))
            self.end_dense.build((None, None, self.hidden_size))
        else:
            self.end_dense.build((None, None, h))
        if self.answerable_classifier:
            if self.answerable_uses_start_logits:
                self.answerable_hidden.build((None, 2 * h))
                self.answerable_dense.build((None, self.hidden_size))
            else:
                self.answerable_dense.build((None, h))
        self.built = True

    def call(self, sequence_output, features, training: bool = False) -> dict[str, tf.Tensor]:
        out = self.predict_spans(
            sequence_output,
            features["input_mask"],
            features["segment_ids"],
            features.get(f"{self.task_name}_start_positions"),
            training=training,
        )
        batch = tf.shape(out["start_logits"])[0]
        zeros = tf.zeros([batch], tf.int32)
        start = features.get(f"{self.task_name}_start_positions", zeros)
        end = features.get(f"{self.task_name}_end_positions", zeros)
        impossible = features.get(f"{self.task_name}_is_impossible", zeros)
        weight = self.answerable_weight if self.answerable_classifier else None
        out["loss"] = qa_loss(out, start, end, impossible, weight)
        out["start_positions"] = start
        out["end_positions"] = end
        if f"{self.task_name}_eid" in features:
            out["eid"] = features[f"{self.task_name}_eid"]
        return out

    def predict_spans(
        self,
        sequence_output,
        input_mask,
        segment_ids,
        start_positions=None,
        training: bool = False,
    ) -> dict[str, tf.Tensor]:
        """The head's outputs without the loss (teacher forcing on `start_positions` if training)."""
        hidden = tf.cast(sequence_output, tf.float32)
        batch = tf.shape(hidden)[0]
        length = tf.shape(hidden)[1]
        h = hidden.shape[-1]
        k = self.beam_size
        answer_mask = tf.cast(input_mask, tf.float32) * tf.cast(segment_ids, tf.float32)
        answer_mask += tf.one_hot(0, length, dtype=tf.float32)
        mask_bias = NEG * (answer_mask - 1.0)  # [B, L]

        start_logits = tf.squeeze(tf.cast(self.start_dense(hidden), tf.float32), -1)
        start_logits += mask_bias
        out = {"start_logits": start_logits}
        if self.joint_prediction:
            start_log_probs = tf.nn.log_softmax(start_logits)
            start_top_log_probs, start_top_index = tf.nn.top_k(start_log_probs, k=k)
            kernel = tf.cast(self.qa_hidden.kernel, tf.float32)
            bias = tf.cast(self.qa_hidden.bias, tf.float32)
            token_part = tf.einsum("blh,hd->bld", hidden, kernel[h:]) + bias  # [B, L, D]
            if training:
                if start_positions is None:
                    raise ValueError("QAHead needs start_positions when training (teacher forcing)")
                start_feat = tf.gather(hidden, tf.cast(start_positions, tf.int32), batch_dims=1)
                start_part = tf.matmul(start_feat, kernel[:h])  # [B, D]
                final = _gelu(token_part + start_part[:, None, :])  # [B, L, D]
                end_logits = tf.squeeze(self._end(final), -1) + mask_bias
                end_top_log_probs = tf.zeros([batch, k, k])
                end_top_index = tf.zeros([batch, k, k], tf.int32)
            else:
                start_feat = tf.gather(hidden, start_top_index, batch_dims=1)  # [B, K, H]
                start_part = tf.einsum("bkh,hd->bkd", start_feat, kernel[:h])
                final = _gelu(token_part[:, None, :, :] + start_part[:, :, None, :])  # [B,K,L,D]
                beam_end_logits = tf.squeeze(self._end(final), -1) + mask_bias[:, None, :]
                end_top_log_probs, end_top_index = tf.nn.top_k(
                    tf.nn.log_softmax(beam_end_logits), k=k
                )
                end_logits = tf.zeros([batch, length])
        else:
            end_logits = tf.squeeze(tf.cast(self.end_dense(hidden), tf.float32), -1) + mask_bias
            # The original decodes independent heads from raw logits; expose them in the beam
            # layout (every end candidate for every start) so decoding is the same code.
            start_top_log_probs, start_top_index = tf.nn.top_k(start_logits, k=k)
            e_val, e_idx = tf.nn.top_k(end_logits, k=k)
            end_top_log_probs = tf.tile(e_val[:, None, :], [1, k, 1])
            end_top_index = tf.tile(e_idx[:, None, :], [1, k, 1])
        out.update(
            end_logits=end_logits,
            start_top_log_probs=start_top_log_probs,
            start_top_index=start_top_index,
            end_top_log_probs=end_top_log_probs,
            end_top_index=end_top_index,
        )
        if self.answerable_classifier:
            rep = hidden[:, 0]
            if self.answerable_uses_start_logits:
                start_p = tf.nn.softmax(start_logits)
                start_feature = tf.reduce_sum(start_p[:, :, None] * hidden, axis=1)
                rep = self.answerable_hidden(tf.concat([rep, start_feature], -1))
            out["answerable_logit"] = tf.squeeze(
                tf.cast(self.answerable_dense(rep), tf.float32), -1
            )
        else:
            out["answerable_logit"] = tf.zeros([batch])
        return out

    def _end(self, x):
        return tf.cast(self.end_dense(x), tf.float32)

    def get_config(self):
        config = super().get_config()
        config.update(
            task_name=self.task_name,
            answerable_weight=self.answerable_weight,
            beam_size=self.beam_size,
            joint_prediction=self.joint_prediction,
            answerable_classifier=self.answerable_classifier,
            answerable_uses_start_logits=self.answerable_uses_start_logits,
            hidden_size=self.hidden_size,
        )
        return config


def _gelu(x):
    return keras.activations.gelu(x, approximate=False)


def qa_loss(
    outputs: dict[str, tf.Tensor],
    start_positions,
    end_positions,
    is_impossible,
    answerable_weight: float | None = 0.5,
) -> tf.Tensor:
    """Per-example loss: (CE_start + CE_end) / 2 + answerable_weight * sigmoid_CE(is_impossible).

    Needs the training-mode outputs (end logits teacher-forced on the gold start). Pass
    `answerable_weight=None` (or 0) when the head has no answerability classifier.
    """
    start_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(start_positions, tf.int32), logits=outputs["start_logits"]
    )
    end_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(end_positions, tf.int32), logits=outputs["end_logits"]
    )
    loss = (start_loss + end_loss) / 2.0
    if answerable_weight:
        loss += answerable_weight * tf.nn.sigmoid_cross_entropy_with_logits(
            labels=tf.cast(is_impossible, tf.float32), logits=outputs["answerable_logit"]
        )
    return loss
