"""Building the pretraining networks from a `PretrainingConfig`: the one place that wires the
generator and discriminator (tied embeddings, fully tied, uniform / unigram, untied) and hands
them with the objective to the pretrainer."""

import os
from typing import Dict, Optional

import keras
import numpy as np
import tensorflow as tf

from electra_tf import vocab
from electra_tf.errors import UserError
from electra_tf.modeling.encoder import TransformerEncoder
from electra_tf.modeling.pretrainer import UNIGRAM, ElectraPretrainer
from electra_tf.modeling.two_tower import TwoTowerClozeGenerator
from electra_tf.pretraining_config import PretrainingConfig


def build_pretrainer(
    config: PretrainingConfig,
    vocab_size: int,
    special_ids: Dict[str, int],
    word_continuation: Optional[np.ndarray] = None,
) -> ElectraPretrainer:
    """The generator and discriminator encoders wired as the original (tied embeddings), or as
    the objective / generator variants of the hparams ask, with their heads built.
    `word_continuation` (whole-word masking's ## table, `vocab.continuation_table`) defaults to
    the config's vocab file's, where it exists."""
    disc_config, gen_config = config.model_configs(vocab_size)
    policy = keras.mixed_precision.DTypePolicy(config.scale.precision)
    g = config.generator
    fused = config.scale.fused_elementwise
    discriminator = TransformerEncoder(
        disc_config, name="electra", dtype=policy, fused_elementwise=fused
    )
    samples = config.samples_replacements
    if samples and g.uniform_generator:
        generator = None  # uniform / unigram sampling, no generator network
    elif gen_config is None:  # masked LM objective, or generator == discriminator
        generator = discriminator
    else:
        shared = None if g.untied_generator_embeddings else discriminator.embeddings
        network = TwoTowerClozeGenerator if g.two_tower_generator else TransformerEncoder
        extra = {} if g.two_tower_generator else {"fused_elementwise": fused}
        generator = network(gen_config, embeddings=shared, name="generator", dtype=policy, **extra)
    counts = None
    if samples and g.uniform_generator == UNIGRAM:
        counts = load_unigram_counts(
            g.token_counts_file or config.paths.pretrain_tfrecords, vocab_size, special_ids
        )
    wwm = config.task.whole_word_masking
    if wwm and word_continuation is None and os.path.exists(config.paths.vocab_file):
        table = vocab.continuation_table(vocab.read_vocab(config.paths.vocab_file))
        # ids past the vocab file (a vocab_size above its length) are no ## pieces
        word_continuation = np.zeros(vocab_size, bool)
        word_continuation[: min(len(table), vocab_size)] = table[:vocab_size]
    model = ElectraPretrainer(
        discriminator,
        generator,
        config.build_objective(),
        special_ids,
        temperature=config.task.temperature,
        disallow_correct=config.task.disallow_correct,
        uniform_generator=g.uniform_generator if samples else False,
        unigram_counts=counts,
        tied_output_embeddings=config.model.tied_output_embeddings,
        whole_word_masking=wwm,
        word_continuation=word_continuation if wwm else None,
        dtype=policy,
        name="electra_pretrainer",
    )
    model.build()
    return model


def load_unigram_counts(path: str, vocab_size: int, special_ids: Dict[str, int]) -> np.ndarray:
    """The unigram generator's token counts [V]: `path` is token_counts.txt, its directory, or
    the pretraining TFRecords pattern (then the token_counts.txt beside the first match).
    The special tokens ([CLS], [SEP], [MASK], [PAD]) get count 0: they are never sampled."""
    from electra_tf import pretraining_data

    first = path.split(",")[0].strip()
    if not (tf.io.gfile.isdir(first) or os.path.basename(first) == "token_counts.txt"):
        first = os.path.dirname(first) or "."
    counts = pretraining_data.read_token_counts(first).astype(np.int64)
    if counts.shape != (vocab_size,):
        raise UserError(f"{first}: {counts.shape[0]} token counts for a vocab of {vocab_size}")
    for key in ("cls", "sep", "mask", "pad"):
        if key in special_ids:
            counts[special_ids[key]] = 0
    if counts.sum() <= 0:
        raise UserError(f"{first}: the token counts are all zero")
    return counts


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
