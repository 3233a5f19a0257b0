"""`run_pretraining.py --describe`: the resolved hparams, parameter counts and FLOPs per step of
a config, without training."""

import json
import os

from electra_tf import pretraining_networks, vocab
from electra_tf.modeling import builders
from electra_tf.pretraining_config import PretrainingConfig
from electra_tf.pretraining_networks import step_flops


def describe(config: PretrainingConfig) -> dict:
    """The resolved flat hparams with "model_config", "generator_config", "parameters" (see
    `builders.parameter_counts`), "flops_per_step" (paper convention, as config.json) and
    "real_flops_per_step" (lookups as gathers, backward = 2x forward, as FLOP/s and MFU)."""
    vocab_file = config.paths.vocab_file
    tokens = vocab.load_vocab(vocab_file) if os.path.exists(vocab_file) else None
    vocab_size = config.vocab_size_for(config.model.vocab_size or (len(tokens) if tokens else None))
    if tokens:
        special = vocab.special_token_ids(tokens, vocab_file)
    else:
        special = dict(vocab.BERT_UNCASED_SPECIAL_IDS)
    model = pretraining_networks.build_pretrainer(config, vocab_size, special)
    d = config.to_flat()
    disc, gen = config.model_configs(vocab_size)
    d["model_config"] = disc.to_dict()
    d["generator_config"] = gen.to_dict() if gen is not None else None
    d["parameters"] = builders.parameter_counts(model)
    flops = step_flops(config, vocab_size)
    d["flops_per_step"], d["real_flops_per_step"] = flops.paper, flops.real
    return d


def describe_json(config: PretrainingConfig) -> str:
    return json.dumps(describe(config), indent=2, sort_keys=True)
