"""The ELECTRA pretraining model: masking, generator, sampling, discriminator, losses, metrics.

The generator and discriminator are encoders built separately and passed in; this model owns
the objective (as TF Model Garden's pretrainer does).
"""

from typing import Dict, Optional

import keras
import numpy as np
import tensorflow as tf

from electra_tf import masking
from electra_tf.modeling.encoder import TransformerEncoder
from electra_tf.modeling.heads import DiscriminatorHead, MaskedLMHead

# purposes of the counter-based randomness (see masking.random_key)
RANDOM_MASKING = 0
RANDOM_SAMPLING = 1
AUC_THRESHOLDS = 200

METRIC_NAMES = (
    "masked_lm_accuracy",
    "masked_lm_loss",
    "sampled_masked_lm_accuracy",
    "disc_loss",
    "disc_auc",
    "disc_accuracy",
    "disc_precision",
    "disc_recall",
)


def auc_thresholds(num_thresholds: int = AUC_THRESHOLDS) -> np.ndarray:
    """The thresholds of tf.metrics.auc: -eps, i/(n-1) for i in 1..n-2, 1+eps."""
    eps = 1e-7
    inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return np.array([0.0 - eps] + inner + [1.0 + eps], dtype=np.float32)


class ElectraPretrainer(keras.Model):
    """Replaced-token-detection pretraining (or BERT's masked LM when `electra_objective=False`).

    Args:
        discriminator: the `TransformerEncoder` to pretrain (named "electra").
        generator: the generator encoder; None for the uniform generator; the discriminator
            itself for a fully tied generator or the masked-LM objective.
        special_ids: dict with "mask", "cls", "sep" token ids.
        electra_objective: RTD (True) or masked LM only (False).
        gen_weight, disc_weight: loss weights (1 and 50 in the original).
        mask_prob: fraction of tokens to mask; max_predictions: N slots per sequence.
        temperature: generator logits are divided by it before sampling.
        disallow_correct: never sample the original token.
        uniform_generator: sample replacements uniformly (no generator network).
    """

    def __init__(
        self,
        discriminator: TransformerEncoder,
        generator: Optional[TransformerEncoder],
        special_ids: Dict[str, int],
        electra_objective: bool = True,
        gen_weight: float = 1.0,
        disc_weight: float = 50.0,
        mask_prob: float = 0.15,
        max_predictions: int = 19,
        temperature: float = 1.0,
        disallow_correct: bool = False,
        uniform_generator: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.discriminator = discriminator
        self.generator = generator
        self.special_ids = dict(special_ids)
        self.electra_objective = electra_objective
        self.gen_weight = gen_weight
        self.disc_weight = disc_weight
        self.mask_prob = mask_prob
        self.max_predictions = max_predictions
        self.temperature = temperature
        self.disallow_correct = disallow_correct
        self.uniform_generator = uniform_generator
        self.vocab_size = discriminator.config.vocab_size
        p = self.dtype_policy
        self.generator_predictions = None
        if generator is not None:
            self.generator_predictions = MaskedLMHead(
                generator.embeddings,
                generator.config.hidden_act,
                generator.config.initializer_range,
                dtype=p,
            )
        self.discriminator_predictions = None
        if electra_objective:
            c = discriminator.config
            self.discriminator_predictions = DiscriminatorHead(
                c.hidden_size, c.hidden_act, c.initializer_range, dtype=p
            )

        self._build_networks()

    def _build_networks(self):
        # Built here, outside Keras's build() name scope, so variable paths are the original's
        # (`electra/...`, `generator/...`); the discriminator first so that shared embeddings
        # are `electra/embeddings/*`.
        self.discriminator.build()
        if self.generator is not None and not self.generator.built:
            self.generator.build()
        if self.generator_predictions is not None:
            self.generator_predictions.build((None, None, self.generator.config.hidden_size))
        if self.discriminator_predictions is not None:
            self.discriminator_predictions.build(
                (None, None, self.discriminator.config.hidden_size)
            )

    def build(self, input_shape=None):
        self.built = True

    def call(self, inputs, training=False):
        return self.compute(inputs, step=0, seed=0, training=training)

    def denominators(self, inputs) -> Dict[str, tf.Tensor]:
        """The sums that normalise the losses, known before the model runs (so that a global
        batch split over replicas or micro-batches is normalised exactly as a whole)."""
        num = masking.num_to_predict(inputs["input_mask"], self.mask_prob, self.max_predictions)
        return {
            "mlm_weight_sum": tf.reduce_sum(tf.cast(num, tf.float32)),
            "disc_weight_sum": tf.reduce_sum(tf.cast(inputs["input_mask"], tf.float32)),
        }

    def compute(
        self,
        inputs: Dict[str, tf.Tensor],
        step,
        seed,
        training: bool = False,
        dropout_seed=None,
        global_denominators: Optional[Dict[str, tf.Tensor]] = None,
        with_eval_stats: bool = False,
    ) -> Dict[str, tf.Tensor]:
        """Losses (and metric sufficient statistics) for one batch.

        Masking and sampling randomness is keyed by (seed, step, example content) and dropout by
        `dropout_seed`. Returns "loss" (the weighted total to minimise, normalised by
        `global_denominators`, by default this batch's own), plus sums for metrics.
        """
        input_ids = tf.cast(inputs["input_ids"], tf.int32)
        input_mask = tf.cast(inputs["input_mask"], tf.int32)
        segment_ids = tf.cast(inputs["segment_ids"], tf.int32)
        batch = tf.shape(input_ids)[0]
        example_ids = masking.content_keys(input_ids, input_mask)
        dens = global_denominators or self.denominators(inputs)
        s = self.special_ids
        masked = masking.mask_inputs(
            input_ids,
            input_mask,
            mask_prob=self.mask_prob,
            max_predictions=self.max_predictions,
            mask_id=s["mask"],
            special_ids=(s["cls"], s["sep"], s["mask"]),
            key=masking.random_key(seed, step, RANDOM_MASKING),
            example_ids=example_ids,
        )
        seeds = _split_seed(dropout_seed, 2) if training else (None, None)
        weights = masked.masked_lm_weights

        # generator (masked LM) on the masked inputs
        if self.generator is not None:
            gen_hidden = self.generator(
                masked.input_ids, input_mask, segment_ids, training=training, dropout_seed=seeds[0]
            )
            gathered = masking.gather_positions(gen_hidden, masked.masked_lm_positions)
            mlm_logits = self.generator_predictions(gathered)  # [B, N, V] float32
        else:  # uniform generator: zero logits
            mlm_logits = tf.zeros([batch, self.max_predictions, self.vocab_size], tf.float32)
        # -log softmax at the target id, without a [B, N, V] one-hot
        target_logit = tf.gather(mlm_logits, masked.masked_lm_ids, batch_dims=2)
        nll = tf.reduce_logsumexp(mlm_logits, axis=-1) - target_logit
        mlm_sum = tf.reduce_sum(weights * nll)
        mlm_loss = mlm_sum / (dens["mlm_weight_sum"] + 1e-6)
        out = {"mlm_loss_sum": mlm_sum, "mlm_weight_sum": tf.reduce_sum(weights)}
        total = self.gen_weight * mlm_loss
        if with_eval_stats:
            preds = tf.argmax(mlm_logits, -1, output_type=tf.int32)
            out["mlm_correct"] = tf.reduce_sum(
                weights * tf.cast(preds == masked.masked_lm_ids, tf.float32)
            )

        if self.electra_objective:
            sampled = masking.gumbel_sample(
                mlm_logits,
                masking.random_key(seed, step, RANDOM_SAMPLING),
                example_ids,
                temperature=self.temperature,
                disallow_ids=masked.masked_lm_ids if self.disallow_correct else None,
            )
            # every masked position (including the 15% left unmasked) gets a sample
            fake_ids, updated = masking.scatter_update(
                input_ids, sampled, masked.masked_lm_positions
            )
            labels = updated * tf.cast(fake_ids != input_ids, tf.int32)
            disc_hidden = self.discriminator(
                fake_ids, input_mask, segment_ids, training=training, dropout_seed=seeds[1]
            )
            logits = self.discriminator_predictions(disc_hidden)  # [B, L] float32
            token_weights = tf.cast(input_mask, tf.float32)
            losses = (
                tf.nn.sigmoid_cross_entropy_with_logits(
                    labels=tf.cast(labels, tf.float32), logits=logits
                )
                * token_weights
            )
            disc_sum = tf.reduce_sum(losses)
            total += self.disc_weight * disc_sum / (dens["disc_weight_sum"] + 1e-6)
            out["disc_loss_sum"] = disc_sum
            out["disc_weight_sum"] = tf.reduce_sum(token_weights)
            if with_eval_stats:
                out.update(
                    _disc_eval_stats(
                        losses, token_weights, logits, labels, weights, sampled, masked
                    )
                )
        out["loss"] = total
        return out


def _split_seed(seed, n):
    if seed is None:
        return (None,) * n
    seed = tf.cast(seed, tf.int32)
    return tuple(tf.stack([seed[0], seed[1] * (n + 1) + i + 1]) for i in range(n))


def _disc_eval_stats(losses, token_weights, logits, labels, weights, sampled, masked):
    per_example = tf.reduce_sum(losses, -1) / (1e-6 + tf.reduce_sum(token_weights, -1))
    labels_f = tf.cast(labels, tf.float32)
    preds = tf.cast(logits > 0, tf.float32)  # round((sign+1)/2): a zero logit is "real"
    correct = tf.cast(tf.equal(preds, labels_f), tf.float32) * token_weights
    probs = tf.sigmoid(logits) * token_weights  # padding counts as a negative with prob 0
    auc_labels = tf.reshape(labels_f * token_weights, [-1, 1])
    above = tf.cast(tf.reshape(probs, [-1, 1]) > auc_thresholds()[tf.newaxis, :], tf.float32)
    return {
        "sampled_correct": tf.reduce_sum(
            weights * tf.cast(sampled == masked.masked_lm_ids, tf.float32)
        ),
        "disc_example_loss_sum": tf.reduce_sum(per_example),
        "num_examples": tf.cast(tf.shape(losses)[0], tf.float32),
        "disc_correct": tf.reduce_sum(correct),
        "disc_pred_pos": tf.reduce_sum(preds * token_weights),
        "disc_label_pos": tf.reduce_sum(labels_f * token_weights),
        "disc_true_pos": tf.reduce_sum(preds * labels_f * token_weights),
        "auc_tp": tf.reduce_sum(above * auc_labels, 0),
        "auc_fp": tf.reduce_sum(above * (1.0 - auc_labels), 0),
    }


def metrics_from_sums(s: Dict[str, np.ndarray]) -> Dict[str, float]:
    """The eight eval metrics of the original from summed statistics."""
    out = {
        "masked_lm_accuracy": float(s["mlm_correct"] / s["mlm_weight_sum"]),
        "masked_lm_loss": float(s["mlm_loss_sum"] / s["mlm_weight_sum"]),
    }
    if "disc_loss_sum" not in s:
        return out
    tp, fp = np.asarray(s["auc_tp"], np.float64), np.asarray(s["auc_fp"], np.float64)
    pos, neg = tp[0], fp[0]  # the lowest threshold (-eps) counts every example as positive
    tpr = tp / (pos + 1e-7)
    fpr = fp / (neg + 1e-7)
    auc = float(np.sum((fpr[:-1] - fpr[1:]) * (tpr[:-1] + tpr[1:]) / 2.0))
    out.update(
        sampled_masked_lm_accuracy=float(s["sampled_correct"] / s["mlm_weight_sum"]),
        disc_loss=float(s["disc_example_loss_sum"] / s["num_examples"]),
        disc_auc=auc,
        disc_accuracy=float(s["disc_correct"] / s["disc_weight_sum"]),
        disc_precision=float(s["disc_true_pos"] / max(s["disc_pred_pos"], 1e-12)),
        disc_recall=float(s["disc_true_pos"] / max(s["disc_label_pos"], 1e-12)),
    )
    return out
