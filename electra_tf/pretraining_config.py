"""The pretraining hyperparameters: the original's flat keys, read into frozen typed sections.

Every default lives here (as the original's `configure_pretraining.PretrainingConfig`): an
unknown key is an error that lists the valid keys, a value of the wrong type names the key and
the type it expects, and impossible combinations are errors saying why. Built and read as the
fine-tuning config is (`electra_tf.sectioned_config`).

Example:
    >>> c = PretrainingConfig.from_flat("m", "data", {"num_train_steps": 20, "debug": True})
    >>> c.train_batch_size, c.optimization.train_batch_size, c.max_predictions_per_seq
    (8, 8, 19)
"""

import dataclasses
from typing import Any, Dict, Literal, Mapping, Optional, Tuple, Union

from electra_tf import data_layout, objective_specs, run_dir
from electra_tf import hparams as hp
from electra_tf.errors import UserError
from electra_tf.flops.analytic import max_predictions_per_seq
from electra_tf.hparams import PRECISIONS, hparam
from electra_tf.model_config import (
    BERT_VOCAB_SIZE,
    MODEL_SIZES,
    ModelConfig,
    explicit_generator_config,
    get_generator_config,
    get_model_config,
    size_embedding_size,
)
from electra_tf.sectioned_config import (
    SectionedConfig,
    SharedGeneral,
    SharedOptimization,
    SharedScale,
)


@dataclasses.dataclass(frozen=True)
class GeneralHparams(SharedGeneral):
    do_eval: bool = hparam(False, help="evaluate on num_eval_steps batches of the training data")
    shuffle_buffer_size: int = hparam(100, help="records shuffled in training (the original's)")
    skip_corrupt_records: bool = hparam(
        False, help="skip a damaged shard's rest (counted) instead of stopping with its name"
    )
    num_eval_steps: int = hparam(100, help="evaluation batches (fewer if the data runs out)")
    keep_checkpoint_max: int = hparam(5, help="newest checkpoints kept (0: all)")
    seed: int = hparam(0, help="initial weights, masking, sampling, dropout (0 unless set)")


@dataclasses.dataclass(frozen=True)
class TaskHparams:  # the pretraining task: its objective, loss weights and masking
    electra_objective: bool = hparam(True, help="false: the original's masked LM only")
    objective: str = hparam(
        "electra", choices=objective_specs.NAMES, help="paper Table 5, and Electric"
    )
    gen_weight: float = hparam(1.0, help="weight of the generator's (masked-LM) loss")
    disc_weight: float = hparam(50.0, help="weight of the discriminator's loss")
    mask_prob: float = hparam(0.15, help="fraction of the tokens masked")
    temperature: float = hparam(1.0, help="the generator's logits are divided by it to sample")
    disallow_correct: bool = hparam(False, help="a sample is never the original token")
    adversarial_generator: bool = hparam(False, help="REINFORCE generator (paper appendix F)")
    electric_objective: bool = hparam(False, help="Electric (the original's); = objective electric")
    whole_word_masking: bool = hparam(
        False, help="mask whole words: a token and its ## pieces, or a segmenter's word_starts"
    )


@dataclasses.dataclass(frozen=True)
class GeneratorHparams:
    untied_generator_embeddings: bool = hparam(False, help="true: own embeddings (not shared)")
    untied_generator: bool = hparam(True, help="false: the generator is the discriminator")
    generator_layers: float = hparam(1.0, help="layers, a fraction of the discriminator's")
    generator_hidden_size: float = hparam(0.25, help="width, a fraction of the discriminator's")
    # false | "uniform" (= true, the original's) | "unigram"
    uniform_generator: Union[bool, Literal["uniform", "unigram"]] = hparam(
        False, help="no generator network: uniform (true) or unigram samples"
    )
    generator_config: Dict[str, Any] = hparam({}, help="BERT JSON keys overriding the derived")
    token_counts_file: Optional[str] = hparam(None, help="None: token_counts.txt by the data")
    two_tower_generator: bool = hparam(False, help="Electric's cloze generator; forced by it")


@dataclasses.dataclass(frozen=True)
class ModelHparams:
    model_size: str = hparam("small", choices=tuple(MODEL_SIZES), help="hidden size and layers")
    model_hparam_overrides: Dict[str, Any] = hparam({}, help="BERT config keys over model_size's")
    embedding_size: Optional[int] = hparam(None, help="None: hidden size; small: 128")
    vocab_size: Optional[int] = hparam(None, help="None: the number of lines of vocab_file")
    do_lower_case: bool = hparam(True, help="checked against the dataset's dataset_info.json")
    max_seq_length: int = hparam(128, help="tokens per example (the TFRecords' length)")
    # Tied, a rarely predicted token's row only ever gets the softmax's push away from the
    # hidden states, the same direction for every rare token; Adam normalises those small
    # gradients to full steps, so at small scale the rare rows collapse onto one direction
    # (Gao et al. 2019, "representation degeneration") and the encoder's input embeddings lose
    # them. Untied, that push lands on the output table only.
    tied_output_embeddings: bool = hparam(
        True, help="masked-LM heads project onto the word embeddings (the original's)"
    )
    # new: at a small budget the network sees a word too few times to learn what one count pass
    # over the same text extracts (`pretraining_data.count_vectors`); only the word table uses it
    word_embedding_init: str = hparam("random", choices=("random", "ppmi_svd"),
                                      help="ppmi_svd: the word table starts as count vectors")  # fmt: skip
    ppmi_window: int = hparam(5, help="ppmi_svd: co-occurrence within this many tokens")


@dataclasses.dataclass(frozen=True)
class OptimizationHparams(SharedOptimization):
    learning_rate: float = hparam(5e-4, help="peak learning rate")
    lr_decay_power: float = hparam(1.0, help="power of the polynomial decay to 0 (1: linear)")
    num_warmup_steps: int = hparam(10000, help="the decayed rate x min(1, step / this)")
    num_train_steps: int = hparam(1000000, help="training steps")
    # paper §3.2: the generator alone (MLM) for n steps, then the discriminator initialised
    # from it and trained with the generator frozen; 0: off
    two_stage_steps: int = hparam(0, help="steps of the generator-only first stage; 0: off")


@dataclasses.dataclass(frozen=True)
class PathHparams:
    """None: derived from data_dir and model_name, as the original."""

    pretrain_tfrecords: Optional[str] = hparam(None, help="null: DATA_DIR's; comma-separated globs")
    vocab_file: Optional[str] = hparam(None, help="null: the data directory's vocab file")
    model_dir: Optional[str] = hparam(None, help="null: DATA_DIR/models/MODEL_NAME")
    init_checkpoint: Optional[str] = hparam(None, help="warm start unless resuming (any format)")


@dataclasses.dataclass(frozen=True)
class ScaleHparams(SharedScale):
    # "auto": the fastest of float32 and mixed_bfloat16 (GPUs: and mixed_float16), measured on
    # this machine for this model once and cached (electra_tf.train.step_path)
    precision: str = hparam(
        "float32",
        choices=(*PRECISIONS, "auto"),
        help="Keras mixed-precision policy; auto: measured",
    )
    # each layer's dropout + residual + LayerNorm and GELU as XLA-compiled pieces between the
    # matmuls (which stay on oneDNN): faster on CPUs, rounding differs from the plain ops';
    # jit_compile auto, when it measures, tries it
    fused_elementwise: bool = hparam(False, help="XLA-fuse each layer's element-wise work")
    peak_flops: Optional[float] = hparam(None, help="None: measured or from a table (MFU)")


SECTIONS = {
    "general": GeneralHparams,
    "task": TaskHparams,
    "generator": GeneratorHparams,
    "model": ModelHparams,
    "optimization": OptimizationHparams,
    "paths": PathHparams,
    "scale": ScaleHparams,
}
PRETRAINING_DEFAULTS: Dict[str, Any] = hp.defaults(SECTIONS)
DEBUG_MODEL = dict(
    num_hidden_layers=3, hidden_size=144, intermediate_size=576, num_attention_heads=4
)
# the original's debug preset (a tiny model, few steps)
DEBUG_PRESET = dict(
    train_batch_size=8,
    num_train_steps=20,
    eval_batch_size=4,
    num_eval_steps=2,
    model_hparam_overrides=DEBUG_MODEL,
)


@dataclasses.dataclass(frozen=True)
class PretrainingConfig(SectionedConfig):
    """All pretraining hyperparameters, by section; build with `from_flat`, read `config.KEY`
    (`electra_tf.sectioned_config`)."""

    SECTIONS = SECTIONS
    DEBUG_PRESET = DEBUG_PRESET

    model_name: str
    data_dir: str
    general: GeneralHparams
    task: TaskHparams
    generator: GeneratorHparams
    model: ModelHparams
    optimization: OptimizationHparams
    paths: PathHparams
    scale: ScaleHparams
    max_predictions_per_seq: int

    @classmethod
    def resolve(
        cls, model_name: str, data_dir: str, sections: Dict[str, Any], hparams: Mapping[str, Any]
    ) -> Dict[str, Any]:
        """The paths derived from data_dir and model_name, the size's embedding size, Electric's
        two-tower generator, and max_predictions_per_seq (derived as the original: it cannot
        be passed in)."""
        paths, m = sections["paths"], sections["model"]
        sections["paths"] = dataclasses.replace(
            paths,
            pretrain_tfrecords=paths.pretrain_tfrecords or data_layout.tfrecord_pattern(data_dir),
            vocab_file=paths.vocab_file or data_layout.vocab_file(data_dir),
            model_dir=paths.model_dir or run_dir.model_dir(data_dir, model_name),
        )
        sections["model"] = dataclasses.replace(
            m, embedding_size=size_embedding_size(m.model_size, m.embedding_size)
        )
        o, g = sections["task"], sections["generator"]
        if (
            _objective_spec(o).requires_two_tower_generator and not g.two_tower_generator
        ):  # Electric forces it, as the original
            if "two_tower_generator" in hparams:
                raise UserError(
                    "Electric needs the two-tower generator: two_tower_generator cannot be false"
                )
            sections["generator"] = dataclasses.replace(g, two_tower_generator=True)
        max_predictions = max_predictions_per_seq(m.max_seq_length, o.mask_prob)
        return {**sections, "max_predictions_per_seq": max_predictions}

    def to_flat(self) -> Dict[str, Any]:
        """Every hparam under its flat key, plus model_name, data_dir, max_predictions_per_seq."""
        return {**super().to_flat(), "max_predictions_per_seq": self.max_predictions_per_seq}

    @property
    def run_path(self) -> str:
        return self.paths.model_dir

    @property
    def objective_spec(self) -> objective_specs.ObjectiveSpec:
        """The objective the objective hparams make (`objective_specs.resolve`)."""
        return _objective_spec(self.task)

    @property
    def samples_replacements(self) -> bool:
        return self.objective_spec.samples_replacements

    @property
    def has_generator_network(self) -> bool:
        """A generator network separate from the discriminator."""
        g = self.generator
        return self.samples_replacements and g.untied_generator and not g.uniform_generator

    def validate(self) -> None:
        r, o, g, s = self.general, self.task, self.generator, self.scale
        if r.do_train == r.do_eval and not r.do_train:
            raise UserError("at least one of do_train and do_eval must be true")
        if not 0 < o.mask_prob < 1:
            raise UserError(f"mask_prob must be in (0, 1), got {o.mask_prob}")
        for key, value in (
            ("iterations_per_loop", s.iterations_per_loop),
            ("train_batch_size", self.optimization.train_batch_size),
            ("eval_batch_size", r.eval_batch_size),
            ("num_train_steps", self.optimization.num_train_steps),
            ("max_seq_length", self.model.max_seq_length),
            ("ppmi_window", self.model.ppmi_window),
        ):
            if value < 1:
                raise UserError(f"{key} must be positive, got {value}")
        hp.require_non_negative(embedding_lr_multiplier=self.optimization.embedding_lr_multiplier)
        if self.model.word_embedding_init != "random" and self.paths.init_checkpoint:
            raise UserError(f"word_embedding_init {self.model.word_embedding_init} and init_checkpoint"
                            " are both set: the checkpoint's word table would replace the counts'")  # fmt: skip
        accum = s.gradient_accumulation_steps
        if accum < 1 or self.optimization.train_batch_size % accum:
            raise UserError(
                f"train_batch_size {self.optimization.train_batch_size} is not divisible by "
                f"gradient_accumulation_steps {accum}"
            )
        samples = self.objective_spec.samples_replacements  # impossible combinations raise
        if samples and g.uniform_generator and g.generator_config:
            raise UserError("generator_config cannot be combined with uniform_generator")
        if samples and not g.untied_generator and not g.uniform_generator:
            if g.generator_hidden_size != 1.0 or g.generator_layers != 1.0:
                raise UserError(
                    "untied_generator=false makes the generator the discriminator itself: it needs "
                    f"generator_hidden_size=1.0 and generator_layers=1.0 (got "
                    f"{g.generator_hidden_size} and {g.generator_layers})"
                )
            if g.generator_config:
                raise UserError("generator_config cannot be combined with untied_generator=false")
        if o.adversarial_generator and g.uniform_generator:
            raise UserError(
                "adversarial_generator needs a generator network, not uniform_generator"
            )
        if g.two_tower_generator:
            if not samples or g.uniform_generator or not g.untied_generator:
                raise UserError(
                    "two_tower_generator needs a generator network of its own: an objective "
                    "that samples replacements, untied_generator=true, no uniform_generator"
                )
            if o.adversarial_generator:
                raise UserError("two_tower_generator cannot be combined with adversarial_generator")
        self._validate_two_stage()

    def _validate_two_stage(self) -> None:
        n, o, g = self.optimization.two_stage_steps, self.task, self.generator
        if n == 0:
            return
        if not 0 < n < self.optimization.num_train_steps:
            raise UserError(
                f"two_stage_steps must be 0 (off) or in (0, num_train_steps "
                f"{self.optimization.num_train_steps}), got {n}"
            )
        if (
            not self.objective_spec.detects_replaced_tokens
            or o.adversarial_generator
            or g.two_tower_generator
        ):
            raise UserError(
                "two_stage_steps needs replaced token detection with a generator trained by "
                "masked LM (objective electra or electra_15, no adversarial_generator, no "
                "two-tower generator)"
            )
        if not self.has_generator_network:
            raise UserError(
                "two_stage_steps needs a generator network of its own (untied_generator=true, "
                "no uniform_generator)"
            )
        disc, gen = self.model_configs(self.vocab_size_for())
        differ = sorted(k for k, v in disc.to_dict().items() if getattr(gen, k) != v)
        if differ:
            raise UserError(
                "two_stage_steps initialises the discriminator from the generator: they must "
                "have the same size (generator_hidden_size=1.0, generator_layers=1.0, and "
                "generator_config for what else differs); they differ in "
                + ", ".join(f"{k} ({getattr(gen, k)} vs {getattr(disc, k)})" for k in differ)
            )

    def vocab_size_for(self, vocab_size: Optional[int] = None) -> int:
        """`vocab_size` if given, else the vocab_size hparam, else BERT's (counting without a
        vocab file)."""
        return int(vocab_size or self.model.vocab_size or BERT_VOCAB_SIZE)

    def model_configs(self, vocab_size: int) -> Tuple[ModelConfig, Optional[ModelConfig]]:
        """(discriminator config, generator config or None) for this run."""
        m, g = self.model, self.generator
        disc = get_model_config(
            m.model_size,
            vocab_size=vocab_size,
            embedding_size=m.embedding_size,
            overrides=m.model_hparam_overrides,
        )
        if disc.max_position_embeddings < m.max_seq_length:
            raise UserError(
                f"max_seq_length {m.max_seq_length} exceeds max_position_embeddings "
                f"{disc.max_position_embeddings}"
            )
        if not self.has_generator_network:
            return disc, None
        gen = get_generator_config(disc, g.generator_hidden_size, g.generator_layers)
        if g.untied_generator_embeddings:
            gen = dataclasses.replace(gen, embedding_size=gen.hidden_size)
        if g.generator_config:
            gen = explicit_generator_config(
                disc, gen, g.generator_config, g.untied_generator_embeddings
            )
        return disc, gen


def _objective_spec(t: TaskHparams) -> objective_specs.ObjectiveSpec:
    return objective_specs.resolve(
        t.objective, t.electra_objective, t.adversarial_generator, t.electric_objective
    )
