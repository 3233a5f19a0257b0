"""Model config (BERT JSON keys), size presets, and the pretraining hyperparameters.

Every pretraining default lives in `PRETRAINING_DEFAULTS`, validated on load like the original's
`configure_pretraining.PretrainingConfig`: an unknown key is an error that lists the valid keys.
"""

import dataclasses
import os
from typing import Any, Dict

from electra_tf.errors import UserError
from electra_tf.hparams import parse_hparams  # noqa: F401  (re-exported for the scripts)
from electra_tf.io_utils import read_json, write_json  # noqa: F401
from electra_tf.model_config import (  # noqa: F401
    MODEL_SIZES,
    ModelConfig,
    get_generator_config,
    get_model_config,
)

OBJECTIVES = ("electra", "mlm", "electra_15", "replace_mlm", "all_tokens_mlm")

PRETRAINING_DEFAULTS: Dict[str, Any] = dict(
    debug=False,  # tiny model and few steps, as the original's debug preset
    do_train=True,
    do_eval=False,
    # objective
    electra_objective=True,  # false: BERT-style masked LM only
    gen_weight=1.0,
    disc_weight=50.0,
    mask_prob=0.15,
    temperature=1.0,
    disallow_correct=False,
    untied_generator_embeddings=False,
    untied_generator=True,
    generator_layers=1.0,
    generator_hidden_size=0.25,
    uniform_generator=False,  # false | "uniform" (= true, the original's) | "unigram"
    # objective variants of the paper (see README: "Objectives and generator variants")
    objective="electra",  # electra | mlm | electra_15 | replace_mlm | all_tokens_mlm
    generator_config={},  # BERT JSON keys overriding the derived generator config
    token_counts_file=None,  # unigram generator counts; None: token_counts.txt by the TFRecords
    adversarial_generator=False,  # train the generator with REINFORCE to fool the discriminator
    # model
    model_size="small",
    model_hparam_overrides={},
    embedding_size=None,  # None: hidden size; small forces 128 as the original
    vocab_size=None,  # None: the number of lines of vocab_file
    do_lower_case=True,  # checked against the dataset's dataset_info.json
    max_seq_length=128,
    # optimisation
    learning_rate=5e-4,
    lr_decay_power=1.0,
    weight_decay_rate=0.01,
    num_warmup_steps=10000,
    num_train_steps=1000000,
    train_batch_size=128,
    clip_norm=1.0,
    # evaluation and checkpoints
    eval_batch_size=128,
    shuffle_buffer_size=100,  # records shuffled in training (the original's 100)
    num_eval_steps=100,
    save_checkpoints_steps=1000,
    keep_checkpoint_max=5,
    log_every_steps=10,
    # paths (None: derived from data_dir and model_name as the original)
    pretrain_tfrecords=None,
    vocab_file=None,
    model_dir=None,
    init_checkpoint=None,
    # scale-out and performance
    distribution="auto",  # auto | one_device | mirrored | multi_worker | tpu
    precision="float32",  # float32 | mixed_bfloat16 | mixed_float16
    jit_compile=True,  # XLA-compile the training step
    gradient_accumulation_steps=1,
    # reproducibility
    seed=0,
    deterministic=False,
    # compute accounting
    peak_flops=None,  # None: a measured default for the machine (see README)
)


def reject_unknown_hparams(hparams: Dict[str, Any], defaults: Dict[str, Any]) -> None:
    """An unknown hparam is an error listing the valid keys (as the original)."""
    unknown = sorted(set(hparams) - set(defaults))
    if unknown:
        raise UserError(
            f"unknown hparam(s) {', '.join(unknown)}; valid keys: {', '.join(sorted(defaults))}"
        )


class PretrainingConfig:
    """All pretraining hyperparameters with their defaults; unknown keys are errors."""

    def __init__(self, model_name: str, data_dir: str, **hparams):
        self.model_name = model_name
        self.data_dir = data_dir
        reject_unknown_hparams(hparams, PRETRAINING_DEFAULTS)
        values = dict(PRETRAINING_DEFAULTS)
        values["model_hparam_overrides"] = {}
        values.update(hparams)
        # derived after the explicit values, as the original (so it cannot be passed in)
        self.max_predictions_per_seq = int((values["mask_prob"] + 0.005) * values["max_seq_length"])
        if values["debug"]:
            preset = dict(
                train_batch_size=8, num_train_steps=20, eval_batch_size=4, num_eval_steps=2
            )
            values.update(preset)
            values["model_hparam_overrides"] = dict(
                num_hidden_layers=3, hidden_size=144, intermediate_size=576, num_attention_heads=4
            )
        if values["model_size"] == "small" and values["embedding_size"] is None:
            values["embedding_size"] = 128
        values.update(hparams)  # explicit values win over the presets
        for k, v in values.items():
            setattr(self, k, v)
        self.pretrain_tfrecords = self.pretrain_tfrecords or os.path.join(
            data_dir, "pretrain_tfrecords", "pretrain_data.tfrecord*"
        )
        self.vocab_file = self.vocab_file or os.path.join(data_dir, "vocab.txt")
        self.model_dir = self.model_dir or os.path.join(data_dir, "models", model_name)
        self._validate()

    def _validate(self):
        if self.do_train == self.do_eval and not self.do_train:
            raise UserError("at least one of do_train and do_eval must be true")
        if not 0 < self.mask_prob < 1:
            raise UserError(f"mask_prob must be in (0, 1), got {self.mask_prob}")
        for key in ("train_batch_size", "eval_batch_size", "num_train_steps", "max_seq_length"):
            if int(getattr(self, key)) < 1:
                raise UserError(f"{key} must be positive, got {getattr(self, key)}")
        choices = {
            "distribution": ("auto", "one_device", "mirrored", "multi_worker", "tpu"),
            "precision": ("float32", "mixed_bfloat16", "mixed_float16"),
        }
        for key, allowed in choices.items():
            if getattr(self, key) not in allowed:
                raise UserError(f"{key} {getattr(self, key)!r} is not one of {', '.join(allowed)}")
        accum = int(self.gradient_accumulation_steps)
        if accum < 1 or self.train_batch_size % accum:
            raise UserError(
                f"train_batch_size {self.train_batch_size} is not divisible by "
                f"gradient_accumulation_steps {self.gradient_accumulation_steps}"
            )
        if self.model_size not in MODEL_SIZES:
            raise UserError(
                f"model_size {self.model_size!r} is not one of {', '.join(MODEL_SIZES)}"
            )
        if self.objective not in OBJECTIVES:
            raise UserError(f"objective {self.objective!r} is not one of {', '.join(OBJECTIVES)}")
        if not self.electra_objective and self.objective != "electra":
            raise UserError(
                "electra_objective=false (the original's masked LM, 85% [MASK] / 15% kept) "
                f"cannot be combined with objective {self.objective!r}; objective=mlm is BERT's "
                "masked LM (80/10/10)"
            )
        if self.uniform_generator not in (False, True, "uniform", "unigram"):
            raise UserError(
                f"uniform_generator {self.uniform_generator!r} is not one of false, true, "
                f'"uniform", "unigram"'
            )
        if not isinstance(self.generator_config, dict):
            raise UserError("generator_config must be a JSON object of BERT config keys")
        uses_generator = self.electra_objective and self.objective != "mlm"
        if uses_generator and self.uniform_generator and self.generator_config:
            raise UserError("generator_config cannot be combined with uniform_generator")
        if uses_generator and not self.untied_generator and not self.uniform_generator:
            if self.generator_hidden_size != 1.0 or self.generator_layers != 1.0:
                raise UserError(
                    "untied_generator=false makes the generator the discriminator itself: it needs "
                    f"generator_hidden_size=1.0 and generator_layers=1.0 (got "
                    f"{self.generator_hidden_size} and {self.generator_layers})"
                )
            if self.generator_config:
                raise UserError("generator_config cannot be combined with untied_generator=false")
        if self.adversarial_generator:
            if self.objective not in ("electra", "electra_15") or not self.electra_objective:
                raise UserError(
                    "adversarial_generator needs objective electra or electra_15 (a discriminator "
                    f"to fool), got {self.objective!r}"
                    + ("" if self.electra_objective else " with electra_objective=false")
                )
            if self.uniform_generator:
                raise UserError(
                    "adversarial_generator needs a generator network, not uniform_generator"
                )

    def to_dict(self) -> Dict[str, Any]:
        d = {k: getattr(self, k) for k in PRETRAINING_DEFAULTS}
        d.update(
            model_name=self.model_name,
            data_dir=self.data_dir,
            max_predictions_per_seq=self.max_predictions_per_seq,
        )
        return d

    def model_configs(self, vocab_size: int):
        """(discriminator config, generator config or None) for this run."""
        disc = get_model_config(
            self.model_size,
            vocab_size=vocab_size,
            embedding_size=self.embedding_size,
            overrides=self.model_hparam_overrides,
        )
        if disc.max_position_embeddings < self.max_seq_length:
            raise UserError(
                f"max_seq_length {self.max_seq_length} exceeds max_position_embeddings "
                f"{disc.max_position_embeddings}"
            )
        if (
            not self.electra_objective
            or self.objective == "mlm"
            or not self.untied_generator
            or self.uniform_generator
        ):
            return disc, None
        gen = get_generator_config(disc, self.generator_hidden_size, self.generator_layers)
        if self.untied_generator_embeddings:
            gen = dataclasses.replace(gen, embedding_size=gen.hidden_size)
        if self.generator_config:
            derived = gen.to_dict()
            hidden = self.generator_config.get("hidden_size")
            if isinstance(hidden, int) and hidden > 0:  # widths follow an explicit hidden size
                derived.update(
                    intermediate_size=4 * hidden, num_attention_heads=max(1, hidden // 64)
                )
                if self.untied_generator_embeddings:
                    derived["embedding_size"] = hidden
            gen = ModelConfig.from_dict(
                {**derived, **self.generator_config}, source="generator_config"
            )
            if not self.untied_generator_embeddings:
                for key in (
                    "vocab_size",
                    "embedding_size",
                    "max_position_embeddings",
                    "type_vocab_size",
                ):
                    if getattr(gen, key) != getattr(disc, key):
                        raise UserError(
                            f"generator_config {key}={getattr(gen, key)} differs from the "
                            f"discriminator's {getattr(disc, key)}, but the embeddings are tied "
                            "(set untied_generator_embeddings=true)"
                        )
            if gen.vocab_size != disc.vocab_size:
                raise UserError(
                    f"generator_config vocab_size {gen.vocab_size} differs from the "
                    f"discriminator's {disc.vocab_size}"
                )
        return disc, gen
