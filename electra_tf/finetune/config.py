"""Fine-tuning hyperparameters: every key of the original's `configure_finetuning.py`, typed, in
frozen sections read by `electra_tf.hparams.from_flat` (unknown keys, wrong types and values not
among the choices are errors; the keys kept only for the original's files warn once).

Differences from the original's code defaults, on purpose (the paper's Table 7 values):
  * `learning_rate` defaults by model size: 3e-4 small, 1e-4 base, 5e-5 large (the code: 1e-4
    for small and base);
  * `layerwise_lr_decay_fixed` (new, default false) gives the top layer decay^1 instead of the
    original's decay^2 (a known quirk, kept by default to reproduce the original's results);
  * `task_names` defaults to ["sst"] so that `python run_finetuning.py` runs the demo (the
    original's default was ["chunk"]).
`weight_decay_rate` keeps the code's 0.01 (the paper's table says 0).

A value left None is derived once, when the config is built (`FinetuningConfig.resolve`; the
sections hold the resolved value, `config.given(KEY)` the one given): `num_train_epochs` and
`max_seq_length` from the task's kind in a single-task run (a custom task's task.json), the plain
3 epochs and 128 tokens in a multi-task run, as the original (`defaults.task_defaults`, read
without TensorFlow), `learning_rate` from a custom task's task.json else the model size,
`layerwise_lr_decay` and the small model's `embedding_size` from the model size
(`model_config.size_embedding_size`, pretraining's rule), `init_checkpoint` from the data dir
and model name. `vocab_size` (only read without a config.json by the model) is the vocab file's
lines, counted where the model is built (`pretrained`), as pretraining does. Built and read as
the pretraining config is (`electra_tf.sectioned_config`).
"""

import dataclasses
from collections.abc import Mapping
from typing import Any, Optional, Union

from electra_tf import data_layout, run_dir
from electra_tf.errors import UserError
from electra_tf.finetune.defaults import task_defaults, task_learning_rate
from electra_tf.hparams import (
    PRECISIONS,
    hparam,
    require_non_negative,
)
from electra_tf.model_config import MODEL_SIZES, size_embedding_size
from electra_tf.sectioned_config import (
    SectionedConfig,
    SharedGeneral,
    SharedOptimization,
    SharedScale,
    default_of,
)


@dataclasses.dataclass(frozen=True)
class GeneralHparams(SharedGeneral):
    num_trials: int = hparam(1, help="independent fine-tuning runs; results report the median")
    do_eval: bool = hparam(True, help="score the dev split(s)")
    keep_all_models: bool = hparam(False, help="keep each trial's model (original: true)")
    # the same default as pretraining's (HF's Trainer also seeds by default): a re-run draws the
    # same initial head, data order and dropout; null leaves TensorFlow unseeded
    seed: Optional[int] = hparam(0, help="trial t uses seed + t; null: unseeded")
    eval_batch_size: int = default_of(SharedGeneral, "eval_batch_size", 32)


@dataclasses.dataclass(frozen=True)
class ModelHparams:
    model_size: str = hparam("small", choices=tuple(MODEL_SIZES), help="sets the lr and decay")
    task_names: Union[list, str] = hparam(["sst"], help="a list, or names separated by commas")
    model_hparam_overrides: dict = hparam({}, help="only without a config.json by the model")
    embedding_size: Optional[int] = hparam(None, help="only without a config.json by the model")
    vocab_size: Optional[int] = hparam(
        None, help="only without a config.json by the model; null: the vocab file's lines"
    )
    do_lower_case: bool = hparam(True, help="lower-case (and strip accents) in tokenizing")
    max_seq_length: Optional[int] = hparam(None, help="None: from the tasks' kinds")
    # new: the top N transformer layers keep their fresh initialisation instead of the
    # pretrained weights (Zhang et al. 2021, "Revisiting Few-sample BERT Fine-tuning")
    reinit_top_layers: int = hparam(0, help="0: every layer pretrained (the original)")
    # new: [CLS] carries no pretraining signal of its own (ELECTRA labels it "original" always,
    # masked LM never scores it); the mean of the token vectors does
    classifier_pooling: str = hparam(
        "cls", choices=("cls", "mean"), help="GLUE heads read [CLS] (the original) or the mean"
    )


@dataclasses.dataclass(frozen=True)
class OptimizationHparams(SharedOptimization):
    learning_rate: Optional[float] = hparam(
        None, help="None: a custom task's, else small 3e-4, base 1e-4, large 5e-5"
    )
    layerwise_lr_decay: Optional[float] = hparam(None, help="None: 0.8, large 0.9; <= 0: off")
    layerwise_lr_decay_fixed: bool = hparam(False, help="true: the top layer gets lr * decay")
    num_train_epochs: Optional[float] = hparam(None, help="None: from the tasks' kinds")
    warmup_proportion: float = hparam(0.1, help="warmup steps = this x steps (a float)")
    train_batch_size: int = default_of(SharedOptimization, "train_batch_size", 32)


@dataclasses.dataclass(frozen=True)
class ScaleHparams(SharedScale):
    precision: str = hparam("float32", choices=PRECISIONS, help="Keras mixed-precision policy")
    iterations_per_loop: int = default_of(SharedScale, "iterations_per_loop", 1000)


@dataclasses.dataclass(frozen=True)
class DataHparams:
    double_unordered: bool = hparam(True, help="MRPC and STS train pairs also swapped")
    write_test_outputs: bool = hparam(False, help="also write the test split(s)' predictions")


@dataclasses.dataclass(frozen=True)
class QAHparams:
    max_query_length: int = hparam(64, help="QA: question tokens kept")
    doc_stride: int = hparam(128, help="QA: tokens between sliding windows' starts")
    n_best_size: int = hparam(20, help="QA: n-best answers kept per question")
    max_answer_length: int = hparam(30, help="QA: longest answer (tokens)")
    answerable_classifier: bool = hparam(True, help="QA: train a has-answer head")
    answerable_uses_start_logits: bool = hparam(True, help="QA: that head also reads the starts")
    answerable_weight: float = hparam(0.5, help="QA: the has-answer loss's weight")
    joint_prediction: bool = hparam(True, help="QA: the end conditioned on the start")
    beam_size: int = hparam(20, help="QA, joint: starts (and ends per start) kept")
    qa_na_threshold: float = hparam(-2.75, help="SQuAD 2.0: no answer where null odds exceed it")


@dataclasses.dataclass(frozen=True)
class PathHparams:
    init_checkpoint: Optional[str] = hparam(None, help="None: DATA_DIR/models/MODEL_NAME")
    # new: fine-tunes a randomly initialised encoder of the same config (config.json beside
    # init_checkpoint), the no-pretraining baseline; results go to results_random_init/
    random_init: bool = hparam(False, help="a random encoder: the no-pretraining baseline")
    vocab_file: Optional[str] = hparam(None, help="None: the model's vocab.txt, else DATA_DIR's")


@dataclasses.dataclass(frozen=True)
class CompatHparams:
    """Keys of the original's hparams files that have no effect here (features are built in
    memory)."""

    log_examples: bool = hparam(False, compat=True, help="the original's: logs featurised examples")
    use_tfrecords_if_existing: bool = hparam(True, compat=True, help="the original's feature cache")
    n_writes_test: int = hparam(5, compat=True, help="the original's trials with test outputs")
    predict_batch_size: int = hparam(32, compat=True, help="the original's prediction batch")
    use_tpu: bool = hparam(False, compat=True, help="the original's: run on a TPU")
    num_tpu_cores: int = hparam(1, compat=True, help="the original's TPU core count")
    tpu_job_name: Optional[str] = hparam(None, compat=True, help="the original's TPU job name")
    tpu_name: Optional[str] = hparam(None, compat=True, help="the original's TPU name")
    tpu_zone: Optional[str] = hparam(None, compat=True, help="the original's TPU zone")
    gcp_project: Optional[str] = hparam(None, compat=True, help="the original's GCP project")


SECTIONS = {
    "general": GeneralHparams,
    "model": ModelHparams,
    "optimization": OptimizationHparams,
    "scale": ScaleHparams,
    "data": DataHparams,
    "qa": QAHparams,
    "paths": PathHparams,
    "compat": CompatHparams,
}
# the original's debug preset (`SectionedConfig.from_flat` applies it; the user's own values win)
DEBUG_PRESET: dict[str, Any] = {
    "num_trials": 1,
    "train_batch_size": 32,
    "num_train_epochs": 3.0,
    "log_examples": True,
}
SIZE_LEARNING_RATES = {"small": 3e-4, "base": 1e-4, "large": 5e-5}


@dataclasses.dataclass(frozen=True, init=False)
class FinetuningConfig(SectionedConfig):
    """All fine-tuning hyperparameters: `FinetuningConfig(model_name, data_dir, **hparams)`, or
    `FinetuningConfig.from_flat(model_name, data_dir, hparams)` as pretraining's.

    Every flat key reads as an attribute (`config.beam_size`), the derived ones resolved
    (`config.num_train_epochs`), as do the sections (`config.optimization.num_train_epochs`);
    `config.given(KEY)` is the value as given (None: derived). Frozen: `with_hparams`
    makes a changed copy (not `dataclasses.replace`, whose fields are the sections).

    Args:
        model_name: the pretrained model (DATA_DIR/models/MODEL_NAME).
        data_dir: where the data, models and results live.
        **hparams: the original's flat keys; each one set here counts as the user's (a
            compatibility-only key warns once).

    Example:
        >>> config = FinetuningConfig("electra_small", "runs/demo", task_names=["rte"])
        >>> config.num_train_epochs, config.max_seq_length
        (10.0, 128)
    """

    SECTIONS = SECTIONS
    DEBUG_PRESET = DEBUG_PRESET

    model_name: str
    data_dir: str
    general: GeneralHparams
    model: ModelHparams
    optimization: OptimizationHparams
    scale: ScaleHparams
    data: DataHparams
    qa: QAHparams
    paths: PathHparams
    compat: CompatHparams

    def __init__(self, model_name: str, data_dir: str, **hparams: Any):
        built = type(self).from_flat(model_name, data_dir, hparams)
        for name, value in vars(built).items():
            object.__setattr__(self, name, value)

    @classmethod
    def resolve(
        cls, model_name: str, data_dir: str, sections: dict[str, Any], hparams: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The derived values (see the module docstring): the task names as a list; from the
        tasks (custom tasks' task.json read here, once) the epochs, sequence length and
        learning rate; from the model size the learning rate, layer-wise decay and embedding
        size; the pretrained model's directory as init_checkpoint."""
        m, o, p = sections["model"], sections["optimization"], sections["paths"]
        names = m.task_names
        names = [t for t in names.split(",") if t] if isinstance(names, str) else list(names)
        if not names:
            raise UserError("task_names is empty")
        if not all(isinstance(t, str) for t in names):
            raise UserError(f"hparam task_names: expected names (strings), got {names}")
        derive = m.max_seq_length is None or o.num_train_epochs is None
        tasks = task_defaults(names, data_dir) if derive else None
        rate = o.learning_rate
        if rate is None:
            rate = task_learning_rate(names, data_dir)
        sections["model"] = dataclasses.replace(
            m,
            task_names=names,
            max_seq_length=tasks.max_seq_length if m.max_seq_length is None else m.max_seq_length,
            embedding_size=size_embedding_size(m.model_size, m.embedding_size),
        )
        decay = o.layerwise_lr_decay
        sections["optimization"] = dataclasses.replace(
            o,
            num_train_epochs=(
                tasks.num_train_epochs if o.num_train_epochs is None else o.num_train_epochs
            ),
            learning_rate=SIZE_LEARNING_RATES[m.model_size] if rate is None else rate,
            layerwise_lr_decay=(0.9 if m.model_size == "large" else 0.8)
            if decay is None
            else decay,
        )
        sections["paths"] = dataclasses.replace(
            p, init_checkpoint=p.init_checkpoint or run_dir.model_dir(data_dir, model_name)
        )
        return sections

    @property
    def pretrained_model_dir(self) -> str:
        return run_dir.model_dir(self.data_dir, self.model_name)

    @property
    def run_path(self) -> str:
        """The pretrained model's run directory (results, kept fine-tuned models)."""
        return self.pretrained_model_dir

    @property
    def results_dir(self) -> str:
        return self.run.results_dir(self.random_init)

    def raw_data_dir(self, task_name: str) -> str:
        return data_layout.finetuning_data_dir(self.data_dir, task_name)

    def trial_seed(self, trial: int) -> Optional[int]:
        return None if self.seed is None else int(self.seed) + trial

    def validate(self) -> None:
        for key in ("train_batch_size", "eval_batch_size", "predict_batch_size", "max_seq_length"):
            if int(getattr(self, key)) < 1:
                raise UserError(f"{key} must be positive, got {getattr(self, key)}")
        require_non_negative(
            num_train_epochs=self.num_train_epochs,
            embedding_lr_multiplier=self.embedding_lr_multiplier,
        )
        if not 0 <= self.warmup_proportion <= 1:
            raise UserError(f"warmup_proportion must be in [0, 1], got {self.warmup_proportion}")
        if self.save_checkpoints_steps < 1:
            raise UserError(
                f"save_checkpoints_steps must be >= 1, got {self.save_checkpoints_steps}"
            )
        for key in ("gradient_accumulation_steps", "iterations_per_loop"):
            if int(getattr(self, key)) < 1:
                raise UserError(f"{key} must be >= 1, got {getattr(self, key)}")
        if self.num_trials < 1:
            raise UserError(f"num_trials must be >= 1, got {self.num_trials}")
        if not self.do_train and not self.do_eval:
            raise UserError("at least one of do_train and do_eval must be true")
        if len(set(self.task_names)) != len(self.task_names):
            raise UserError(f"task_names has duplicates: {self.task_names}")
