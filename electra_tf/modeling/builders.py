"""Building the pretraining networks from model configs: the one place that wires the generator
and discriminator (tied embeddings, fully tied, uniform / unigram, untied, two-tower) and hands
them with the objective to the pretrainer. A `PretrainingConfig` becomes these arguments in
`electra_tf.pretraining_networks`."""

from typing import Any, Dict, Optional, Union

import keras
import numpy as np

from electra_tf.model_config import ModelConfig
from electra_tf.modeling.encoder import TransformerEncoder
from electra_tf.modeling.pretrainer import ElectraPretrainer
from electra_tf.modeling.two_tower import TwoTowerClozeGenerator


def build_networks(
    disc_config: ModelConfig,
    gen_config: Optional[ModelConfig],
    objective: Any,
    special_ids: Dict[str, int],
    *,
    precision: str = "float32",
    fused_elementwise: bool = False,
    uniform_generator: Union[bool, str] = False,
    two_tower_generator: bool = False,
    untied_generator_embeddings: bool = False,
    unigram_counts: Optional[np.ndarray] = None,
    temperature: float = 1.0,
    disallow_correct: bool = False,
    tied_output_embeddings: bool = True,
    word_continuation: Optional[np.ndarray] = None,
    whole_word_masking: bool = False,
) -> ElectraPretrainer:
    """The generator and discriminator encoders wired as the original (tied embeddings), or as
    the objective (`electra_tf.objectives.Objective`) and the generator variants ask, with
    their heads built.

    Args:
        disc_config: the discriminator's config.
        gen_config: the generator network's; None where there is none of its own (a masked-LM
            objective, `untied_generator=false`, uniform / unigram sampling).
        objective: the objective (its heads, losses, masking fractions).
        special_ids: "mask", "cls", "sep" (and "pad") token ids.
        precision: the Keras dtype policy.
        fused_elementwise: each layer's element-wise work as XLA-compiled pieces.
        uniform_generator: False, "uniform" / True, or "unigram" (`unigram_counts` then).
        two_tower_generator: the generator is Electric's two-tower cloze model.
        untied_generator_embeddings: the generator has embeddings of its own.
        unigram_counts: [V] token counts for the unigram generator.
        temperature, disallow_correct, tied_output_embeddings, whole_word_masking,
            word_continuation: the pretrainer's (`ElectraPretrainer`).
    """
    policy = keras.mixed_precision.DTypePolicy(precision)
    discriminator = TransformerEncoder(
        disc_config, name="electra", dtype=policy, fused_elementwise=fused_elementwise
    )
    samples = objective.samples_replacements
    if samples and uniform_generator:
        generator = None  # uniform / unigram sampling, no generator network
    elif gen_config is None:  # masked LM objective, or generator == discriminator
        generator = discriminator
    else:
        shared = None if untied_generator_embeddings else discriminator.embeddings
        network = TwoTowerClozeGenerator if two_tower_generator else TransformerEncoder
        extra = {} if two_tower_generator else {"fused_elementwise": fused_elementwise}
        generator = network(gen_config, embeddings=shared, name="generator", dtype=policy, **extra)
    model = ElectraPretrainer(
        discriminator,
        generator,
        objective,
        special_ids,
        temperature=temperature,
        disallow_correct=disallow_correct,
        uniform_generator=uniform_generator if samples else False,
        unigram_counts=unigram_counts,
        tied_output_embeddings=tied_output_embeddings,
        whole_word_masking=whole_word_masking,
        word_continuation=word_continuation if whole_word_masking else None,
        dtype=policy,
        name="electra_pretrainer",
    )
    model.build()
    return model


def count_params(variables) -> int:
    """Parameters of distinct variables (shared ones, like tied embeddings, count once)."""
    unique = {id(v): v for v in variables}
    return int(sum(np.prod(v.shape) for v in unique.values()))


def parameter_counts(model: ElectraPretrainer) -> Dict[str, int]:
    """Whole networks with their heads, the bare discriminator encoder, and the total."""
    disc = list(model.discriminator.weights)
    if getattr(model, "discriminator_predictions", None) is not None:
        disc += model.discriminator_predictions.weights
    gen = []
    if model.generator is not None:
        gen = list(model.generator.weights) + list(model.generator_predictions.weights)
    return {
        "discriminator": count_params(disc),
        "generator": count_params(gen),
        "discriminator_backbone": count_params(model.discriminator.weights),
        "total": count_params(model.trainable_weights),
    }
