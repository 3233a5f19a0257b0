"""What the pretrainer's stages hand to its objective (`electra_tf.objectives`): the generator's
outputs at the masked positions and the discriminator's inputs and states."""

from typing import NamedTuple, Optional

import tensorflow as tf

from electra_tf import masking


class GeneratorOutputs(NamedTuple):
    """What the pretrainer's generate stage produced (gathered at the masked positions)."""

    masked: masking.MaskedInputs
    mlm_logits: tf.Tensor  # [B, N, V] float32
    hidden: Optional[tf.Tensor]  # [B, N, H] generator states; None without a generator network
    has_network: bool  # a generator network (not uniform / unigram sampling)
    mlm_loss_in_total: bool  # False for the unigram generator: its MLM loss is a constant
    # a two-tower (cloze) generator's outputs at every position; None for a masked LM
    cloze_logits: Optional[tf.Tensor] = None  # [B, L, V] float32
    cloze_ids: Optional[tf.Tensor] = None  # [B, L] the unmasked tokens it predicts
    cloze_weights: Optional[tf.Tensor] = None  # [B, L] float32, 1 on candidate positions


class DiscriminatorInputs(NamedTuple):
    """What the pretrainer's sample and discriminate stages produced."""

    input_ids: tf.Tensor  # [B, L] int32, the original tokens
    input_mask: tf.Tensor  # [B, L] int32
    policy_logits: tf.Tensor  # [B, N, V] float32: what the replacements were drawn from
    sampled: tf.Tensor  # [B, N] int32 replacements
    fake_ids: tf.Tensor  # [B, L] the corrupted input
    labels: tf.Tensor  # [B, L] int32: 1 where a token was replaced by a different one
    hidden: tf.Tensor  # [B, L, H] the discriminator's states on fake_ids
