"""Electric (Clark et al., EMNLP 2020, "Pre-Training Transformers as Energy-Based Cloze
Models"), as the original's `electric_objective`.

The generator is the two-tower cloze model (`modeling.two_tower`, forced on, as the original
forces `two_tower_generator`): trained by the cloze loss over every candidate position, it is
the noise distribution q. Noise samples replace the masked positions; the discriminator is the
energy model, trained by noise-contrastive estimation: its logit at position t is
E(x)_t + log q(x_t | context) + log(mask_prob / (1 - mask_prob)), with a stop-gradient on the
log q term, and the label is 1 at every sampled position (even where the sample happens to be
the original token).
"""

import tensorflow as tf

from electra_tf.objectives.base import DiscriminatorInputs, GeneratorOutputs
from electra_tf.objectives.replaced_token_detection import ReplacedTokenDetection


class Electric(ReplacedTokenDetection):
    """ELECTRA's losses and metrics with Electric's noise-contrastive discriminator."""

    name = "electric"
    requires_two_tower_generator = True
    labels_every_sampled_position = True

    def detection_logits(self, model, gen: GeneratorOutputs, disc: DiscriminatorInputs):
        """The head's logits plus stop_gradient(log q(x_t | context)) at the token in the
        corrupted input, plus log(mask_prob / (1 - mask_prob)), in the original's order."""
        logits = super().detection_logits(model, gen, disc)
        cloze = tf.cast(gen.cloze_logits, tf.float32)
        log_q = tf.gather(cloze, disc.fake_ids, batch_dims=2) - tf.reduce_logsumexp(cloze, -1)
        logits += tf.stop_gradient(log_q)
        p = self.mask_prob
        return logits + tf.math.log(tf.constant(p / (1 - p), tf.float32))
