"""Replaced token detection (paper §3.1), on every real token (`electra`) or on the masked
positions only (`electra_15`, paper §3.5 / Table 5)."""

from typing import Dict, Optional

import numpy as np
import tensorflow as tf

from electra_tf import masking
from electra_tf.flops.analytic import TransformerFlops
from electra_tf.modeling.heads import DiscriminatorHead
from electra_tf.objectives.base import DiscriminatorInputs, GeneratorOutputs, Objective

AUC_THRESHOLDS = 200


def auc_thresholds(num_thresholds: int = AUC_THRESHOLDS) -> np.ndarray:
    """The thresholds of tf.metrics.auc: -eps, i/(n-1) for i in 1..n-2, 1+eps."""
    eps = 1e-7
    inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return np.array([0.0 - eps] + inner + [1.0 + eps], dtype=np.float32)


class ReplacedTokenDetection(Objective):
    """ELECTRA: the discriminator predicts, per real token, whether the generator replaced it;
    loss = gen_weight·MLM + disc_weight·RTD with the original's normalisations."""

    name = "electra"
    masked_positions_only = False
    detects_replaced_tokens = True

    def make_heads(self, discriminator, generator, dtype=None, tied_output=True):
        c = discriminator.config
        return {
            "discriminator_predictions": DiscriminatorHead(
                c.hidden_size, c.hidden_act, c.initializer_range, dtype=dtype
            )
        }

    def denominators(self, input_mask, num_masked):
        dens = super().denominators(input_mask, num_masked)
        if self.masked_positions_only:
            dens["disc_weight_sum"] = dens["mlm_weight_sum"]
        return dens

    def detection_losses(
        self, model, gen: GeneratorOutputs, disc: DiscriminatorInputs, dens, total
    ):
        """(total + the weighted RTD loss, sums, per-token losses [B, L], and what the eval
        statistics read: the losses, weights, logits and labels over the covered tokens)."""
        masked = gen.masked
        logits = self.detection_logits(model, gen, disc)  # [B, L] float32
        labels = disc.labels
        all_losses = tf.nn.sigmoid_cross_entropy_with_logits(
            labels=tf.cast(labels, tf.float32), logits=logits
        )
        if self.masked_positions_only:
            pos = masked.masked_lm_positions
            logits = masking.gather_positions(logits, pos)
            labels = masking.gather_positions(labels, pos)
            token_weights = masked.masked_lm_weights
            losses = masking.gather_positions(all_losses, pos) * token_weights
        else:
            token_weights = tf.cast(disc.input_mask, tf.float32)
            losses = all_losses * token_weights
        disc_sum = tf.reduce_sum(losses)
        total += self.disc_weight * disc_sum / (dens["disc_weight_sum"] + 1e-6)
        out = {"disc_loss_sum": disc_sum, "disc_weight_sum": tf.reduce_sum(token_weights)}
        return total, out, all_losses, (losses, token_weights, logits, labels)

    def detection_logits(self, model, gen: GeneratorOutputs, disc: DiscriminatorInputs):
        """The discriminator head's logits [B, L] (float32), what the sigmoid loss reads."""
        return model.discriminator_predictions(disc.hidden)

    def discriminator_terms(self, model, gen, disc, dens, total, with_eval_stats):
        total, out, _, covered = self.detection_losses(model, gen, disc, dens, total)
        if with_eval_stats:
            out.update(detection_eval_stats(*covered))
        return total, out

    def objective_metrics(self, s):
        tp, fp = np.asarray(s["auc_tp"], np.float64), np.asarray(s["auc_fp"], np.float64)
        pos, neg = tp[0], fp[0]  # the lowest threshold (-eps) counts every example as positive
        tpr = tp / (pos + 1e-7)
        fpr = fp / (neg + 1e-7)
        auc = float(np.sum((fpr[:-1] - fpr[1:]) * (tpr[:-1] + tpr[1:]) / 2.0))
        return {
            "disc_loss": float(s["disc_example_loss_sum"] / s["num_examples"]),
            "disc_auc": auc,
            "disc_accuracy": float(s["disc_correct"] / s["disc_weight_sum"]),
            "disc_precision": float(s["disc_true_pos"] / max(s["disc_pred_pos"], 1e-12)),
            "disc_recall": float(s["disc_true_pos"] / max(s["disc_label_pos"], 1e-12)),
        }

    def forward_flops_per_sequence(
        self, disc: TransformerFlops, gen: Optional[TransformerFlops]
    ) -> float:
        # electra_15 still runs the discriminator on every token
        per_seq = gen.forward_flops(discriminator=False) if gen is not None else 0.0
        return per_seq + disc.forward_flops(discriminator=True)


class ReplacedTokenDetectionMaskedOnly(ReplacedTokenDetection):
    """ELECTRA 15%: the discriminator's loss covers the masked positions only."""

    name = "electra_15"
    masked_positions_only = True


def detection_eval_stats(losses, token_weights, logits, labels) -> Dict[str, tf.Tensor]:
    """Sums for the original's eight eval metrics (accuracy, precision, recall, AUC over 200
    thresholds, per-example loss) over the covered tokens."""
    per_example = tf.reduce_sum(losses, -1) / (1e-6 + tf.reduce_sum(token_weights, -1))
    labels_f = tf.cast(labels, tf.float32)
    preds = tf.cast(logits > 0, tf.float32)  # round((sign+1)/2): a zero logit is "real"
    correct = tf.cast(tf.equal(preds, labels_f), tf.float32) * token_weights
    probs = tf.sigmoid(logits) * token_weights  # padding counts as a negative with prob 0
    auc_labels = tf.reshape(labels_f * token_weights, [-1, 1])
    above = tf.cast(tf.reshape(probs, [-1, 1]) > auc_thresholds()[tf.newaxis, :], tf.float32)
    return {
        "disc_example_loss_sum": tf.reduce_sum(per_example),
        "num_examples": tf.cast(tf.shape(losses)[0], tf.float32),
        "disc_correct": tf.reduce_sum(correct),
        "disc_pred_pos": tf.reduce_sum(preds * token_weights),
        "disc_label_pos": tf.reduce_sum(labels_f * token_weights),
        "disc_true_pos": tf.reduce_sum(preds * labels_f * token_weights),
        "auc_tp": tf.reduce_sum(above * auc_labels, 0),
        "auc_fp": tf.reduce_sum(above * (1.0 - auc_labels), 0),
    }
