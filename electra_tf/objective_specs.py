"""What a pretraining config needs to know of each objective, without TensorFlow: the names the
`objective` hparam accepts, their labels, which combinations of the objective hparams
(`objective`, `electra_objective`, `adversarial_generator`, `electric_objective`) are possible
and which objective they make, and the facts validation reads (does it sample replacements,
detect them, need the two-tower generator).

The objectives themselves (losses, heads, metrics, FLOPs per sequence) are
`electra_tf.objectives`, one class per key of `SPECS`; a test checks that each class says what
its spec says.

Example:
    >>> resolve("electra", adversarial_generator=True).key
    'adversarial'
"""

import dataclasses
from typing import Dict, Optional

from electra_tf.errors import UserError


@dataclasses.dataclass(frozen=True)
class ObjectiveSpec:
    """One objective as validation sees it.

    Attributes:
        key: its key (for the hparam's names, the name itself).
        label: its name in the paper's Table 5 (reports).
        samples_replacements: the pretrainer samples replacements and runs a discriminator.
        detects_replaced_tokens: a discriminator head scores every token original / replaced.
        requires_two_tower_generator: needs the two-tower cloze generator (Electric).
        selectable: a value of the `objective` hparam (else reached through the other flags).
        with_electric: the objective `electric_objective=true` makes of it (None: impossible).
        without_electra_objective: what `electra_objective=false` makes of it (None: impossible).
        with_adversarial: what `adversarial_generator=true` makes of it (None: impossible).
    """

    key: str
    label: str
    samples_replacements: bool = True
    detects_replaced_tokens: bool = False
    requires_two_tower_generator: bool = False
    selectable: bool = True
    with_electric: Optional[str] = None
    without_electra_objective: Optional[str] = None
    with_adversarial: Optional[str] = None


SPECS: Dict[str, ObjectiveSpec] = {
    s.key: s
    for s in (
        ObjectiveSpec(
            "electra",
            "ELECTRA",
            detects_replaced_tokens=True,
            with_electric="electric",
            without_electra_objective="original_mlm",
            with_adversarial="adversarial",
        ),
        ObjectiveSpec("mlm", "masked LM (BERT)", samples_replacements=False),
        ObjectiveSpec(
            "electra_15",
            "ELECTRA 15%",
            detects_replaced_tokens=True,
            with_adversarial="adversarial_15",
        ),
        ObjectiveSpec("replace_mlm", "Replace MLM"),
        ObjectiveSpec("all_tokens_mlm", "All-Tokens MLM"),
        ObjectiveSpec(
            "electric",
            "Electric",
            detects_replaced_tokens=True,
            requires_two_tower_generator=True,
            with_electric="electric",
        ),
        # reached through `adversarial_generator` and `electra_objective`
        ObjectiveSpec(
            "adversarial",
            "ELECTRA, adversarial generator",
            detects_replaced_tokens=True,
            selectable=False,
        ),
        ObjectiveSpec(
            "adversarial_15",
            "ELECTRA 15%, adversarial generator",
            detects_replaced_tokens=True,
            selectable=False,
        ),
        ObjectiveSpec(
            "original_mlm",
            "masked LM (the original's)",
            samples_replacements=False,
            selectable=False,
        ),
    )
}
# the `objective` hparam's values, and the name the paper's Table 5 gives each
NAMES = tuple(key for key, spec in SPECS.items() if spec.selectable)
LABELS = {key: SPECS[key].label for key in NAMES}


def resolve(
    objective: str = "electra",
    electra_objective: bool = True,
    adversarial_generator: bool = False,
    electric_objective: bool = False,
) -> ObjectiveSpec:
    """The objective the four objective hparams make; an impossible combination is a UserError
    saying why. `electric_objective` (the original's key) is Electric, whatever
    `electra_objective` says (the original's README sets it false beside it)."""
    spec = SPECS.get(objective)
    if spec is None or not spec.selectable:
        raise UserError(f"objective {objective!r} is not one of {', '.join(NAMES)}")
    if electric_objective or spec.requires_two_tower_generator:
        if spec.with_electric is None:
            raise UserError(
                f"electric_objective=true cannot be combined with objective {objective!r}"
            )
        if adversarial_generator:
            raise UserError(
                "adversarial_generator cannot be combined with Electric (its generator is "
                "trained by the cloze loss)"
            )
        return SPECS[spec.with_electric]
    if not electra_objective:
        if spec.without_electra_objective is None:
            raise UserError(
                "electra_objective=false (the original's masked LM, 85% [MASK] / 15% kept) "
                f"cannot be combined with objective {objective!r}; objective=mlm is BERT's "
                "masked LM (80/10/10)"
            )
        if adversarial_generator:
            raise UserError(
                "adversarial_generator needs objective electra or electra_15 (a discriminator "
                f"to fool), got {objective!r} with electra_objective=false"
            )
        return SPECS[spec.without_electra_objective]
    if adversarial_generator:
        if spec.with_adversarial is None:
            raise UserError(
                "adversarial_generator needs objective electra or electra_15 (a discriminator "
                f"to fool), got {objective!r}"
            )
        return SPECS[spec.with_adversarial]
    return spec
