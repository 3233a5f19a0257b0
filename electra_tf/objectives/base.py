"""The objective interface: what a pretraining objective decides, and the generator's MLM loss
that every objective with a generator shares.

The pretrainer (`electra_tf.modeling.pretrainer.ElectraPretrainer`) runs the networks: it masks
the batch with the objective's fractions, runs the generator at the masked positions, and, when
the objective samples replacements, draws them and runs the discriminator on the corrupted
input. The objective turns those tensors into the loss to minimise and the sums its eval metrics
are made of, and says which heads it needs, how its losses are normalised and what a sequence
costs in FLOPs.
"""

from typing import Dict, Optional, Tuple

import keras
import numpy as np
import tensorflow as tf

from electra_tf import masking
from electra_tf.flops.analytic import TransformerFlops
from electra_tf.modeling.stages import DiscriminatorInputs, GeneratorOutputs  # noqa: F401


class Objective:
    """A pretraining objective.

    Subclasses set the class attributes and implement the discriminator side; the generator's
    masked-LM loss (`generator_loss`) is shared.

    Class attributes:
        name: the registry name (the `objective` hparam).
        mask_token_fraction, random_token_fraction: of the chosen positions, the fraction set to
            [MASK] and the fraction set to a random token (the rest keep theirs).
        samples_replacements: the pretrainer samples replacements and runs the discriminator;
            False for a masked LM on one network.
        samples_avoid_special_tokens: replacements are never [CLS], [SEP], [MASK] or [PAD].
        trains_generator_by_likelihood: the generator's MLM loss is part of the total.
        detects_replaced_tokens: a discriminator head scores every token as original or
            replaced (what ELECTRA-as-MLM scoring and the discriminator export need).
        requires_two_tower_generator: the objective needs the two-tower cloze generator
            (Electric: it forces `two_tower_generator`, as the original).
        labels_every_sampled_position: the discriminator's label is 1 at every sampled
            position, even where the sample is the original token (Electric's noise samples);
            otherwise only where the token changed (ELECTRA's).

    Args:
        gen_weight: the weight of the generator's MLM loss (1 in the original).
        disc_weight: the weight of the discriminator's loss (50 in the original).
        mask_prob: the fraction of tokens masked.
        max_predictions: masked slots per sequence.
    """

    name = ""
    mask_token_fraction = 0.85
    random_token_fraction = 0.0
    samples_replacements = True
    samples_avoid_special_tokens = False
    trains_generator_by_likelihood = True
    detects_replaced_tokens = False
    requires_two_tower_generator = False
    labels_every_sampled_position = False

    def __init__(
        self,
        gen_weight: float = 1.0,
        disc_weight: float = 50.0,
        mask_prob: float = 0.15,
        max_predictions: int = 19,
    ):
        self.gen_weight = gen_weight
        self.disc_weight = disc_weight
        self.mask_prob = mask_prob
        self.max_predictions = max_predictions

    # -- the model's shape
    def make_heads(
        self, discriminator, generator, dtype=None, tied_output: bool = True
    ) -> Dict[str, keras.layers.Layer]:
        """The objective's heads by the pretrainer attribute that holds each (the attribute
        names are checkpoint paths), constructed in a fixed order (initial weights are drawn in
        construction order). `tied_output`: a masked-LM head projects onto the word table (the
        original) rather than an output table of its own."""
        return {}

    def build_heads(self, heads: Dict[str, keras.layers.Layer], discriminator, generator):
        """Builds `make_heads`' heads on the discriminator's (or generator's) hidden size."""
        shape = (None, None, discriminator.config.hidden_size)
        for layer in heads.values():
            layer.build(shape)

    # -- normalisation
    def denominators(self, input_mask: tf.Tensor, num_masked: tf.Tensor) -> Dict[str, tf.Tensor]:
        """The sums that normalise the losses, known before the model runs, so that a global
        batch split over replicas or micro-batches is normalised exactly as a whole:
        "mlm_weight_sum" (masked slots) and "disc_weight_sum" (the tokens the discriminator
        side's loss covers; every real token unless the objective says otherwise)."""
        mlm = tf.reduce_sum(tf.cast(num_masked, tf.float32))
        return {
            "mlm_weight_sum": mlm,
            "disc_weight_sum": tf.reduce_sum(tf.cast(input_mask, tf.float32)),
        }

    # -- losses
    def generator_loss(
        self, gen: GeneratorOutputs, dens: Dict[str, tf.Tensor], with_eval_stats: bool
    ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
        """(the generator's term of the total loss, sums): masked-LM cross-entropy over the masked
        slots, without a [B, N, V] one-hot. A two-tower generator's term is its cloze loss over
        every candidate position instead (the masked-LM sums remain, for the metrics), as the
        original's."""
        masked = gen.masked
        weights = masked.masked_lm_weights
        target_logit = masking.pick_logits(gen.mlm_logits, masked.masked_lm_ids)
        nll = tf.reduce_logsumexp(gen.mlm_logits, axis=-1) - target_logit
        mlm_sum = tf.reduce_sum(weights * nll)
        out = {"mlm_loss_sum": mlm_sum, "mlm_weight_sum": tf.reduce_sum(weights)}
        if gen.cloze_logits is not None:
            logits = gen.cloze_logits
            cloze_nll = tf.reduce_logsumexp(logits, axis=-1) - masking.pick_logits(
                logits, gen.cloze_ids
            )
            out["cloze_loss_sum"] = tf.reduce_sum(gen.cloze_weights * cloze_nll)
            out["cloze_weight_sum"] = tf.reduce_sum(gen.cloze_weights)
            total = self.gen_weight * out["cloze_loss_sum"] / (dens["cloze_weight_sum"] + 1e-6)
        elif self.trains_generator_by_likelihood and gen.mlm_loss_in_total:
            total = self.gen_weight * mlm_sum / (dens["mlm_weight_sum"] + 1e-6)
        else:
            total = 0.0
        if with_eval_stats:
            preds = tf.argmax(gen.mlm_logits, -1, output_type=tf.int32)
            out["mlm_correct"] = tf.reduce_sum(
                weights * tf.cast(preds == masked.masked_lm_ids, tf.float32)
            )
            if gen.has_network:
                out["generator_entropy_sum"] = tf.reduce_sum(weights * entropy(gen.mlm_logits))
        return total, out

    def discriminator_loss(
        self,
        model,
        gen: GeneratorOutputs,
        disc: DiscriminatorInputs,
        dens: Dict[str, tf.Tensor],
        total,
        with_eval_stats: bool,
    ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
        """(`total` plus the discriminator side's loss terms, sums): the generator samples'
        accuracy (for eval), then the objective's own terms (`discriminator_terms`)."""
        out = {}
        if with_eval_stats:
            masked = gen.masked
            out["sampled_correct"] = tf.reduce_sum(
                masked.masked_lm_weights * tf.cast(disc.sampled == masked.masked_lm_ids, tf.float32)
            )
        total, terms = self.discriminator_terms(model, gen, disc, dens, total, with_eval_stats)
        out.update(terms)
        return total, out

    def discriminator_terms(self, model, gen, disc, dens, total, with_eval_stats):
        """`total` plus this objective's discriminator-side losses, added in a fixed order (so
        that the float result does not depend on the grouping), and their sums. `model` holds
        the heads."""
        raise NotImplementedError

    # -- metrics
    def metrics(self, sums: Dict[str, np.ndarray]) -> Dict[str, float]:
        """Eval metrics from summed statistics: the generator's, then the objective's own."""
        mlm_n = sums["mlm_weight_sum"]
        out = {
            "masked_lm_accuracy": float(sums["mlm_correct"] / mlm_n),
            "masked_lm_loss": float(sums["mlm_loss_sum"] / mlm_n),
        }
        if "sampled_correct" in sums:
            out["sampled_masked_lm_accuracy"] = float(sums["sampled_correct"] / mlm_n)
        if "generator_entropy_sum" in sums:
            out["generator_entropy"] = float(sums["generator_entropy_sum"] / mlm_n)
        if "cloze_loss_sum" in sums:
            out["cloze_loss"] = float(sums["cloze_loss_sum"] / sums["cloze_weight_sum"])
        out.update(self.objective_metrics(sums))
        return out

    def objective_metrics(self, sums: Dict[str, np.ndarray]) -> Dict[str, float]:
        return {}

    # -- compute
    def discriminator_output_frac(self, output_frac: float) -> float:
        """The fraction of positions where the discriminator side has an MLM softmax."""
        return output_frac

    def forward_flops_per_sequence(
        self, disc: TransformerFlops, gen: Optional[TransformerFlops]
    ) -> float:
        """Forward FLOPs of one sequence (paper conventions): the generator with its MLM head,
        if there is a generator network, plus the discriminator side."""
        raise NotImplementedError


def entropy(logits: tf.Tensor) -> tf.Tensor:
    """Entropy (nats) of softmax(logits) over the last axis."""
    logp = tf.nn.log_softmax(tf.cast(logits, tf.float32))
    return -tf.reduce_sum(tf.exp(logp) * logp, -1)
