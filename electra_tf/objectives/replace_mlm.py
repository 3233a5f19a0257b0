"""Replace MLM (paper §3.5 / Table 5): the masked positions hold generator samples instead of
[MASK], and the main encoder is trained with masked LM on them."""

from typing import Optional

import tensorflow as tf

from electra_tf import masking
from electra_tf.flops.analytic import TransformerFlops
from electra_tf.modeling.heads import MaskedLMHead
from electra_tf.objectives.base import Objective


class ReplaceMLM(Objective):
    """Masked LM on the corrupted input: the encoder never sees [MASK] (replacements are never
    special tokens), and predicts the original token at each masked position."""

    name = "replace_mlm"
    samples_avoid_special_tokens = True

    def make_heads(self, discriminator, generator, dtype=None, tied_output=True):
        c = discriminator.config
        return {
            "discriminator_mlm_predictions": MaskedLMHead(
                discriminator.embeddings,
                c.hidden_act,
                c.initializer_range,
                tied_output=tied_output,
                name="discriminator_mlm_predictions",
                dtype=dtype,
            )
        }

    def discriminator_terms(self, model, gen, disc, dens, total, with_eval_stats):
        out = {}
        masked = gen.masked
        weights = masked.masked_lm_weights
        gathered = masking.gather_positions(disc.hidden, masked.masked_lm_positions)
        d_logits = model.discriminator_mlm_predictions(gathered)
        d_target = masking.pick_logits(d_logits, masked.masked_lm_ids)
        d_nll = tf.reduce_logsumexp(d_logits, axis=-1) - d_target
        out["disc_mlm_loss_sum"] = tf.reduce_sum(weights * d_nll)
        total += out["disc_mlm_loss_sum"] / (dens["mlm_weight_sum"] + 1e-6)
        if with_eval_stats:
            d_preds = tf.argmax(d_logits, -1, output_type=tf.int32)
            out["disc_mlm_correct"] = tf.reduce_sum(
                weights * tf.cast(d_preds == masked.masked_lm_ids, tf.float32)
            )
        return total, out

    def objective_metrics(self, s):
        mlm_n = s["mlm_weight_sum"]
        return {
            "disc_mlm_loss": float(s["disc_mlm_loss_sum"] / mlm_n),
            "disc_mlm_accuracy": float(s["disc_mlm_correct"] / mlm_n),
        }

    def forward_flops_per_sequence(
        self, disc: TransformerFlops, gen: Optional[TransformerFlops]
    ) -> float:
        if gen is None:
            raise ValueError(f"objective {self.name!r} needs a generator network")
        return gen.forward_flops(discriminator=False) + disc.forward_flops(discriminator=False)
