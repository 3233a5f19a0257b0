"""Masked language modelling on one network: BERT's (80% [MASK] / 10% random / 10% kept,
`objective=mlm`) and the original code's baseline (85% [MASK] / 15% kept,
`electra_objective=false`)."""

from typing import Optional

from electra_tf.flops.analytic import TransformerFlops
from electra_tf.objectives.base import Objective


class OriginalMaskedLM(Objective):
    """The original code's masked-LM baseline: masking as ELECTRA's (85% [MASK] / 15% kept),
    the MLM head on the discriminator itself, no replacements sampled."""

    name = "mlm"
    samples_replacements = False

    def forward_flops_per_sequence(
        self, disc: TransformerFlops, gen: Optional[TransformerFlops]
    ) -> float:
        return disc.forward_flops(discriminator=False)


class BertMaskedLM(OriginalMaskedLM):
    """BERT's masked LM (paper Table 5's "BERT"): 80% [MASK], 10% random, 10% kept."""

    mask_token_fraction = 0.8
    random_token_fraction = 0.1
