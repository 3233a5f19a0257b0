"""The FLOPs of one training step of a `PretrainingConfig`: the one count that the training log
(`train_flops`, FLOP/s, MFU), config.json, `--describe`, `count_flops.py --profile` and the
experiments' FLOP budgets all use, in two conventions:

  * paper: embedding lookups as dense one-hot products, backward = 1x forward (the paper's
    compute column; `train_flops`);
  * real: lookups as gathers, backward = 2x forward (the step's arithmetic; FLOP/s and MFU).

The networks counted are the ones `modeling.builders.build_pretrainer` builds: the
`config.model_configs` shapes (an untied generator's embeddings at its own width, a tied one's
at the discriminator's), the discriminator running as the generator too with
`untied_generator=false`, no generator network with uniform / unigram sampling, and the
two-tower generator (Electric's, or asked for) as both towers plus the cloze head at every
position.

Example:
    >>> c = PretrainingConfig.from_flat("m", "data", {"train_batch_size": 128})
    >>> f = step_flops(c, 30522)
    >>> f.paper == pretraining_flops_per_step(c, 30522)
    True
"""

import dataclasses
from typing import Optional

from electra_tf import objectives
from electra_tf.pretraining_config import PretrainingConfig

PAPER = dict(sparse_embed_lookup=False, backward_factor=1.0)
REAL = dict(sparse_embed_lookup=True, backward_factor=2.0)


@dataclasses.dataclass(frozen=True)
class StepFlops:
    """FLOPs of one training step (the whole global batch) in both conventions."""

    paper: float
    real: float


def pretraining_flops_per_step(
    config: PretrainingConfig,
    vocab_size: Optional[int] = None,
    sparse_embed_lookup: bool = False,
    backward_factor: float = 1.0,
) -> float:
    """FLOPs of one training step of `config` (`vocab_size`: None for the config's, else
    BERT's). `sparse_embed_lookup` counts lookups as gathers; `backward_factor` is the backward
    pass as a multiple of the forward (0: forward only)."""
    disc, gen = config.model_configs(config.vocab_size_for(vocab_size))
    g, o = config.generator, config.task
    if gen is None and config.samples_replacements and not g.uniform_generator:
        gen = disc  # untied_generator=false: the discriminator also runs as the generator
    return float(
        objectives.network_flops_per_step(
            disc,
            gen,
            batch_size=config.optimization.train_batch_size,
            seq_len=config.model.max_seq_length,
            objective=o.objective,
            electra_objective=o.electra_objective,
            electric_objective=o.electric_objective,
            two_tower_generator=g.two_tower_generator,
            mask_prob=o.mask_prob,
            output_frac=config.max_predictions_per_seq / config.model.max_seq_length,
            tied_embeddings=not g.untied_generator_embeddings,
            sparse_embed_lookup=sparse_embed_lookup,
            backward_factor=backward_factor,
        )
    )


def step_flops(config: PretrainingConfig, vocab_size: Optional[int] = None) -> StepFlops:
    """One step's FLOPs of `config` in the paper's and the real convention."""
    return StepFlops(
        paper=pretraining_flops_per_step(config, vocab_size, **PAPER),
        real=pretraining_flops_per_step(config, vocab_size, **REAL),
    )
