"""Pretraining objectives: the registry that FLOP counting, `--describe` and the experiments read
(hparam validation reads `electra_tf.objective_specs`, which names them without TensorFlow).
Objective names are compared only in this package.

Adding an objective: a module with an `Objective` subclass, its spec in
`objective_specs.SPECS`, and one line in `CLASSES`.

Example:
    >>> objective = build("electra_15", max_predictions=19)
    >>> objective.name, objective.samples_replacements
    ('electra_15', True)
"""

from typing import Any, Dict, Optional, Type

from electra_tf.errors import UserError
from electra_tf.flops.analytic import (
    TwoTowerFlops,
    max_predictions_per_seq,
    transformer_flops_from_config,
)
from electra_tf.objective_specs import LABELS, NAMES, resolve
from electra_tf.objectives.adversarial import AdversarialReplacedTokenDetection
from electra_tf.objectives.all_tokens_mlm import AllTokensMLM
from electra_tf.objectives.base import DiscriminatorInputs, GeneratorOutputs, Objective
from electra_tf.objectives.electric import Electric
from electra_tf.objectives.masked_lm import BertMaskedLM, OriginalMaskedLM
from electra_tf.objectives.replace_mlm import ReplaceMLM
from electra_tf.objectives.replaced_token_detection import (
    ReplacedTokenDetection,
    ReplacedTokenDetectionMaskedOnly,
)

# each objective of `objective_specs.SPECS` -> its class
CLASSES: Dict[str, Type[Objective]] = {
    "electra": ReplacedTokenDetection,
    "mlm": BertMaskedLM,
    "electra_15": ReplacedTokenDetectionMaskedOnly,
    "replace_mlm": ReplaceMLM,
    "all_tokens_mlm": AllTokensMLM,
    "electric": Electric,
    "adversarial": AdversarialReplacedTokenDetection,
    "adversarial_15": AdversarialReplacedTokenDetection,
    "original_mlm": OriginalMaskedLM,
}
# the `objective` hparam -> its class
REGISTRY: Dict[str, Type[Objective]] = {name: CLASSES[name] for name in NAMES}

__all__ = [
    "NAMES",
    "LABELS",
    "REGISTRY",
    "DiscriminatorInputs",
    "GeneratorOutputs",
    "Objective",
    "build",
    "objective_class",
    "network_flops_per_step",
]


def objective_class(
    objective: str = "electra",
    electra_objective: bool = True,
    adversarial_generator=False,
    electric_objective: bool = False,
) -> Type[Objective]:
    """The class for the `objective`, `electra_objective`, `adversarial_generator` and
    `electric_objective` hparams (`objective_specs.resolve`: an impossible combination is a
    UserError saying why)."""
    return CLASSES[
        resolve(objective, electra_objective, adversarial_generator, electric_objective).key
    ]


def build(
    objective: str = "electra",
    electra_objective: bool = True,
    adversarial_generator: bool = False,
    electric_objective: bool = False,
    **kwargs: Any,
) -> Objective:
    """An objective instance; `kwargs` are `Objective`'s (gen_weight, disc_weight, mask_prob,
    max_predictions)."""
    key = resolve(objective, electra_objective, adversarial_generator, electric_objective).key
    cls = CLASSES[key]
    if cls is AdversarialReplacedTokenDetection:
        return cls(masked_positions_only=key == "adversarial_15", **kwargs)
    return cls(**kwargs)


def network_flops_per_step(
    disc_config: Any,
    gen_config: Any,
    batch_size: int,
    seq_len: int,
    objective: str = "electra",
    mask_prob: float = 0.15,
    sparse_embed_lookup: bool = False,
    backward_factor: float = 1.0,
    tied_embeddings: bool = True,
    output_frac: Optional[float] = None,
    electra_objective: bool = True,
    electric_objective: bool = False,
    two_tower_generator: bool = False,
) -> float:
    """FLOPs of one pretraining step (whole batch) of the networks with these model configs.

    The count of a `PretrainingConfig`'s step, which every caller uses, is
    `electra_tf.pretraining_networks.pretraining_flops_per_step` (it derives these arguments from
    the config); this is the per-objective arithmetic beneath it.

    Args:
        disc_config: the discriminator's config (for a masked LM, the one network's).
        gen_config: the generator's config; ignored by a masked LM; None for an objective that
            samples without a generator network (uniform or unigram sampling).
        batch_size: sequences per step (global batch).
        seq_len: tokens per sequence.
        objective: a registry name; `electra_objective=False` is the original's masked LM.
        mask_prob: masking probability; the MLM head runs on int((p + 0.005)·L) positions per
            sequence, as the model does.
        sparse_embed_lookup: count input embedding lookups as free gathers (as the real graph does).
        backward_factor: backward pass cost as a multiple of the forward pass: 1.0 is the paper's
            convention, 2.0 the common "3x forward" one, 0.0 gives forward FLOPs only.
        tied_embeddings: the generator uses the discriminator's embedding size.
        output_frac: overrides the fraction of positions with an MLM softmax.
        electric_objective: Electric (the objective is then `electric`).
        two_tower_generator: the generator is the two-tower cloze model (`gen_config` is one
            tower's): both towers, and the cloze head at every position (Electric's).
    """
    obj = objective_class(objective, electra_objective, electric_objective=electric_objective)()
    if output_frac is None:
        output_frac = max_predictions_per_seq(seq_len, mask_prob) / seq_len
    main_frac = obj.discriminator_output_frac(output_frac)
    disc = transformer_flops_from_config(disc_config, seq_len, main_frac, sparse_embed_lookup)
    gen = None
    if gen_config is not None and obj.samples_replacements:
        gen = transformer_flops_from_config(
            gen_config,
            seq_len,
            output_frac,
            sparse_embed_lookup,
            embedding_size=disc.e if tied_embeddings else None,
        )
        if two_tower_generator or obj.requires_two_tower_generator:
            gen = TwoTowerFlops(gen)
    try:
        per_seq = obj.forward_flops_per_sequence(disc, gen)
    except ValueError:
        raise UserError(
            f"objective '{objective}' needs a generator config (gen_config is None)"
        ) from None
    return (1.0 + backward_factor) * batch_size * per_seq
