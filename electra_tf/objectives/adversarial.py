"""The adversarially trained generator (paper appendix F): replaced token detection whose
generator is trained by REINFORCE to maximise the discriminator's loss, instead of by maximum
likelihood, with a learned baseline."""

import tensorflow as tf

from electra_tf import masking
from electra_tf.modeling.heads import ValueBaselineHead
from electra_tf.objectives.replaced_token_detection import (
    ReplacedTokenDetection,
    detection_eval_stats,
)


class AdversarialReplacedTokenDetection(ReplacedTokenDetection):
    """`electra` (or `electra_15`, with `masked_positions_only`) with `adversarial_generator`.

    The reward of a masked slot is the discriminator's loss at its position (-log D(real) for a
    token it should call original, -log D(replaced) otherwise). The baseline
    b = -log sigmoid(w·h_G) is trained by cross-entropy towards the reward (target probability
    exp(-r)) and sees the generator's states through a stop-gradient. The generator's loss
    -(r - b)·log p_G(sample) has stop-gradients on r and b, so its gradient reaches the generator
    only through the log-probabilities of its samples.
    """

    trains_generator_by_likelihood = False

    def __init__(self, *args, masked_positions_only: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.masked_positions_only = masked_positions_only
        self.name = "electra_15" if masked_positions_only else "electra"

    def make_heads(self, discriminator, generator, dtype=None, tied_output=True):
        if generator is None:
            raise ValueError("adversarial_generator needs a generator network")
        heads = super().make_heads(discriminator, generator, dtype, tied_output)
        heads["generator_baseline"] = ValueBaselineHead(
            generator.config.initializer_range, dtype=dtype
        )
        return heads

    def build_heads(self, heads, discriminator, generator):
        baseline = heads["generator_baseline"]
        super().build_heads(
            {k: v for k, v in heads.items() if v is not baseline}, discriminator, generator
        )
        baseline.build((None, None, generator.config.hidden_size))

    def discriminator_terms(self, model, gen, disc, dens, total, with_eval_stats):
        total, out, all_losses, covered = self.detection_losses(model, gen, disc, dens, total)
        masked = gen.masked
        adv = adversarial_losses(
            model.generator_baseline,
            disc.policy_logits,
            disc.sampled,
            gen.hidden,
            masking.gather_positions(all_losses, masked.masked_lm_positions),
            masked.masked_lm_weights,
        )
        mlm_den = dens["mlm_weight_sum"] + 1e-6
        total += (self.gen_weight * adv["adv_loss_sum"] + adv["baseline_loss_sum"]) / mlm_den
        out.update(adv)
        if with_eval_stats:
            out.update(detection_eval_stats(*covered))
        return total, out

    def objective_metrics(self, s):
        mlm_n = s["mlm_weight_sum"]
        return {
            "adversarial_reward": float(s["reward_sum"] / mlm_n),
            "baseline_loss": float(s["baseline_loss_sum"] / mlm_n),
            **super().objective_metrics(s),
        }


def adversarial_losses(baseline_head, policy_logits, sampled, gen_hidden, rewards, weights):
    """REINFORCE sums over the masked slots: "adv_loss_sum" (the generator's), "baseline_loss_sum"
    and "reward_sum"."""
    r = tf.stop_gradient(rewards)
    baseline_logit = baseline_head(tf.stop_gradient(gen_hidden))
    b = tf.nn.softplus(-baseline_logit)  # -log sigmoid
    baseline_loss = tf.nn.sigmoid_cross_entropy_with_logits(
        labels=tf.exp(-r), logits=baseline_logit
    )
    log_p = masking.pick_logits(policy_logits, sampled) - tf.reduce_logsumexp(
        policy_logits, axis=-1
    )
    advantage = tf.stop_gradient(r - b)
    return {
        "adv_loss_sum": -tf.reduce_sum(weights * advantage * log_p),
        "baseline_loss_sum": tf.reduce_sum(weights * baseline_loss),
        "reward_sum": tf.reduce_sum(weights * r),
    }
