"""All-Tokens MLM (paper §3.5 / Table 5): as Replace MLM, but the encoder predicts every token,
with a copy mechanism: p(x_t) = D_t·1[x_t = input_t] + (1 - D_t)·softmax(logits_t)[x_t]."""

from typing import Optional

import tensorflow as tf

from electra_tf import masking
from electra_tf.flops.analytic import TransformerFlops
from electra_tf.modeling.heads import DiscriminatorHead
from electra_tf.objectives.replace_mlm import ReplaceMLM


class AllTokensMLM(ReplaceMLM):
    """Masked LM over every real token of the corrupted input, with a sigmoid copy head."""

    name = "all_tokens_mlm"

    def make_heads(self, discriminator, generator, dtype=None, tied_output=True):
        heads = super().make_heads(discriminator, generator, dtype, tied_output)
        c = discriminator.config
        heads["copy_predictions"] = DiscriminatorHead(
            c.hidden_size, c.hidden_act, c.initializer_range, name="copy_predictions", dtype=dtype
        )
        return heads

    def discriminator_terms(self, model, gen, disc, dens, total, with_eval_stats):
        out = {}
        token_weights = tf.cast(disc.input_mask, tf.float32)
        logp, copy_prob, preds = all_tokens_log_probs(
            model.discriminator_mlm_predictions(disc.hidden),
            model.copy_predictions(disc.hidden),
            disc.fake_ids,
            disc.input_ids,
        )
        out["all_tokens_loss_sum"] = -tf.reduce_sum(token_weights * logp)
        out["disc_weight_sum"] = tf.reduce_sum(token_weights)
        total += out["all_tokens_loss_sum"] / (dens["disc_weight_sum"] + 1e-6)
        if with_eval_stats:
            out["all_tokens_correct"] = tf.reduce_sum(
                token_weights * tf.cast(preds == disc.input_ids, tf.float32)
            )
            out["copy_prob_sum"] = tf.reduce_sum(token_weights * copy_prob)
        return total, out

    def objective_metrics(self, s):
        n = s["disc_weight_sum"]
        return {
            "all_tokens_mlm_loss": float(s["all_tokens_loss_sum"] / n),
            "all_tokens_mlm_accuracy": float(s["all_tokens_correct"] / n),
            "copy_probability": float(s["copy_prob_sum"] / n),
        }

    def discriminator_output_frac(self, output_frac: float) -> float:
        return 1.0  # the MLM softmax runs at every position

    def forward_flops_per_sequence(
        self, disc: TransformerFlops, gen: Optional[TransformerFlops]
    ) -> float:
        # the copy mechanism's sigmoid head on top of Replace MLM's shape
        return super().forward_flops_per_sequence(disc, gen) + disc.binary_classification_flops()


def all_tokens_log_probs(mlm_logits, copy_logits, input_ids, target_ids):
    """All-Tokens MLM with the copy mechanism, in float32.

    p(x_t) = D_t·1[x_t = input_t] + (1 - D_t)·softmax(mlm_logits_t)[x_t], with the copy
    probability D_t = sigmoid(copy_logit_t).
    Returns (log p(target) [B, L], D [B, L], the argmax of p [B, L]).
    """
    mlm_logits = tf.cast(mlm_logits, tf.float32)
    copy_logits = tf.cast(copy_logits, tf.float32)
    lse = tf.reduce_logsumexp(mlm_logits, axis=-1)
    log_softmax_target = masking.pick_logits(mlm_logits, target_ids) - lse
    log_copy = tf.math.log_sigmoid(copy_logits)
    log_no_copy = tf.math.log_sigmoid(-copy_logits)
    generate = log_no_copy + log_softmax_target
    same = tf.equal(target_ids, input_ids)
    logp = tf.where(same, tf.experimental.numpy.logaddexp(log_copy, generate), generate)
    # argmax: the input token (copy + generate) against the best generated token
    copy_prob = tf.sigmoid(copy_logits)
    p_input = tf.exp(tf.gather(mlm_logits, input_ids, batch_dims=2) - lse)
    best = tf.argmax(mlm_logits, -1, output_type=tf.int32)
    p_best = tf.exp(tf.reduce_max(mlm_logits, -1) - lse)
    keep = copy_prob + (1.0 - copy_prob) * p_input >= (1.0 - copy_prob) * p_best
    preds = tf.where(keep, tf.cast(input_ids, tf.int32), best)
    return logp, copy_prob, preds
