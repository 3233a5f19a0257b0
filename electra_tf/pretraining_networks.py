"""A `PretrainingConfig` made real: its objective, its networks (`build_pretrainer`: the config
read into `modeling.builders.build_networks`' arguments) and the FLOPs of one of its training
steps (`step_flops`): the one count that the training log (`train_flops`, FLOP/s, MFU),
config.json, `--describe`, `count_flops.py --profile` and the experiments' FLOP budgets all use,
in two conventions (`flops.analytic.StepFlops`):

  * paper: embedding lookups as dense one-hot products, backward = 1x forward (the paper's
    compute column; `train_flops`);
  * real: lookups as gathers, backward = 2x forward (the step's arithmetic; FLOP/s and MFU).

The networks counted are the ones `build_pretrainer` builds: the `config.model_configs` shapes
(an untied generator's embeddings at its own width, a tied one's at the discriminator's), the
discriminator running as the generator too with `untied_generator=false`, no generator network
with uniform / unigram sampling, and the two-tower generator (Electric's, or asked for) as both
towers plus the cloze head at every position.

Example:
    >>> c = PretrainingConfig.from_flat("m", "data", {"train_batch_size": 128})
    >>> f = step_flops(c, 30522)
    >>> f.paper == pretraining_flops_per_step(c, 30522)
    True
"""

import os
from typing import Dict, Optional

import numpy as np
import tensorflow as tf

from electra_tf import objectives, vocab
from electra_tf.errors import UserError
from electra_tf.flops.analytic import PAPER, REAL, StepFlops
from electra_tf.modeling.builders import build_networks
from electra_tf.modeling.pretrainer import UNIGRAM, ElectraPretrainer
from electra_tf.pretraining_config import PretrainingConfig
from electra_tf.pretraining_data import read_token_counts

__all__ = [
    "PAPER",
    "REAL",
    "StepFlops",
    "build_objective",
    "build_pretrainer",
    "load_unigram_counts",
    "objective_class",
    "pretraining_flops_per_step",
    "step_flops",
]


def objective_class(config: PretrainingConfig) -> type:
    """The `objectives.Objective` class of the config's objective hparams."""
    return objectives.CLASSES[config.objective_spec.key]


def build_objective(config: PretrainingConfig) -> objectives.Objective:
    """The config's objective, with its loss weights and masking."""
    o = config.task
    return objectives.build(
        o.objective,
        o.electra_objective,
        o.adversarial_generator,
        o.electric_objective,
        gen_weight=o.gen_weight,
        disc_weight=o.disc_weight,
        mask_prob=o.mask_prob,
        max_predictions=config.max_predictions_per_seq,
    )


def build_pretrainer(
    config: PretrainingConfig,
    vocab_size: int,
    special_ids: Dict[str, int],
    word_continuation: Optional[np.ndarray] = None,
) -> ElectraPretrainer:
    """The networks the config asks for (`modeling.builders.build_networks`), with their heads
    built. `word_continuation` (whole-word masking's ## table, `vocab.continuation_table`)
    defaults to the config's vocab file's, where it exists."""
    disc_config, gen_config = config.model_configs(vocab_size)
    g, t = config.generator, config.task
    samples = config.samples_replacements
    counts = None
    if samples and g.uniform_generator == UNIGRAM:
        counts = load_unigram_counts(
            g.token_counts_file or config.paths.pretrain_tfrecords, vocab_size, special_ids
        )
    wwm = t.whole_word_masking
    if wwm and word_continuation is None and os.path.exists(config.paths.vocab_file):
        table = vocab.continuation_table(vocab.read_vocab(config.paths.vocab_file))
        # ids past the vocab file (a vocab_size above its length) are no ## pieces
        word_continuation = np.zeros(vocab_size, bool)
        word_continuation[: min(len(table), vocab_size)] = table[:vocab_size]
    return build_networks(
        disc_config,
        gen_config,
        build_objective(config),
        special_ids,
        precision=config.scale.precision,
        fused_elementwise=config.scale.fused_elementwise,
        uniform_generator=g.uniform_generator,
        two_tower_generator=g.two_tower_generator,
        untied_generator_embeddings=g.untied_generator_embeddings,
        unigram_counts=counts,
        temperature=t.temperature,
        disallow_correct=t.disallow_correct,
        tied_output_embeddings=config.model.tied_output_embeddings,
        word_continuation=word_continuation,
        whole_word_masking=wwm,
    )


def load_unigram_counts(path: str, vocab_size: int, special_ids: Dict[str, int]) -> np.ndarray:
    """The unigram generator's token counts [V]: `path` is token_counts.txt, its directory, or
    the pretraining TFRecords pattern (then the token_counts.txt beside the first match).
    The special tokens ([CLS], [SEP], [MASK], [PAD]) get count 0: they are never sampled."""
    first = path.split(",")[0].strip()
    if not (tf.io.gfile.isdir(first) or os.path.basename(first) == "token_counts.txt"):
        first = os.path.dirname(first) or "."
    counts = read_token_counts(first).astype(np.int64)
    if counts.shape != (vocab_size,):
        raise UserError(f"{first}: {counts.shape[0]} token counts for a vocab of {vocab_size}")
    for key in ("cls", "sep", "mask", "pad"):
        if key in special_ids:
            counts[special_ids[key]] = 0
    if counts.sum() <= 0:
        raise UserError(f"{first}: the token counts are all zero")
    return counts


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
