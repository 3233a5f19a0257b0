"""`electra_tf.objective_specs`: the objectives as validation sees them, without TensorFlow."""

import pytest

from electra_tf import objective_specs, objectives
from electra_tf.errors import UserError
from electra_tf.objectives.adversarial import AdversarialReplacedTokenDetection
from electra_tf.objectives.electric import Electric
from electra_tf.objectives.masked_lm import BertMaskedLM, OriginalMaskedLM
from electra_tf.objectives.replaced_token_detection import ReplacedTokenDetection


def test_each_class_says_what_its_spec_says():
    assert set(objectives.CLASSES) == set(objective_specs.SPECS)
    for key, spec in objective_specs.SPECS.items():
        cls = objectives.CLASSES[key]
        assert cls.samples_replacements == spec.samples_replacements, key
        assert cls.detects_replaced_tokens == spec.detects_replaced_tokens, key
        assert cls.requires_two_tower_generator == spec.requires_two_tower_generator, key
    assert set(objective_specs.NAMES) == set(objectives.REGISTRY)


@pytest.mark.parametrize(
    "flags,cls",
    [
        # (objective, electra_objective, adversarial_generator, electric_objective)
        (("electra", True, False, False), ReplacedTokenDetection),
        (("mlm", True, False, False), BertMaskedLM),
        (("electra", False, False, False), OriginalMaskedLM),
        (("electra", True, True, False), AdversarialReplacedTokenDetection),
        (("electra_15", True, True, False), AdversarialReplacedTokenDetection),
        (("electra", False, False, True), Electric),  # the original's README sets both
        (("electric", True, False, False), Electric),
    ],
)
def test_the_flags_make_the_objective(flags, cls):
    assert objectives.CLASSES[objective_specs.resolve(*flags).key] is cls
    assert objectives.objective_class(*flags) is cls


@pytest.mark.parametrize(
    "flags,words",
    [
        (("nope", True, False, False), "is not one of"),
        (("original_mlm", True, False, False), "is not one of"),  # not an hparam value
        (("mlm", True, False, True), "electric_objective=true cannot"),
        (("electric", True, True, False), "cannot be combined with Electric"),
        (("mlm", False, False, False), "electra_objective=false"),
        (("electra", False, True, False), "with electra_objective=false"),
        (("replace_mlm", True, True, False), "got 'replace_mlm'"),
    ],
)
def test_impossible_combinations_say_why(flags, words):
    with pytest.raises(UserError, match=words):
        objective_specs.resolve(*flags)


def test_the_adversarial_variants_keep_their_positions():
    assert not objectives.build("electra", adversarial_generator=True).masked_positions_only
    assert objectives.build("electra_15", adversarial_generator=True).masked_positions_only
