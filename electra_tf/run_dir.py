"""The run directory: the one owner of what a run puts on disk and of how it is found again.

A pretraining run's directory (`DATA_DIR/models/MODEL_NAME/`) holds

    config.json            {"kind": "pretraining", every hparam (flat keys), "model_config",
                            "generator_config", "num_replicas", "flops_per_step"}
    vocab.txt              the vocab the run was trained with
    checkpoint, ckpt-N.*   tf.train.CheckpointManager's checkpoints
    eval_results.json      the last evaluation
    electra_mlm_results.json   score_electra_mlm.py's scores (paper appendix G)
    train/, eval/, finetuning_summaries/TASKS_trial_TRIAL/   TensorBoard summaries
    results/TASK.json, results/TASK_SPLIT_predictions*.tsv      fine-tuning results (and
                            TASKS_trials.json: the trials a run has finished, until all have)
    results_random_init/   the same for the no-pretraining baseline
    finetuning_models/TASKS_model_TRIAL/   kept fine-tuned models: ckpt.*, config.json
                            ({"kind": "finetuning", ...}), vocab.txt
    finetuning_checkpoints/TASKS_trial_TRIAL/   an unfinished trial's checkpoints
    run.lock, finetuning_TASK.lock   the process pretraining, fine-tuning TASK (`run_lock`)

and a checkpoint found anywhere else (an original google-research release, an exported
original-layout directory) is described by a `bert_config.json` or `config.json` beside it or in
the directory above. `electra_tf.checkpoint.locate` finds the checkpoint and its config;
`run_config` reads this project's formats into one `RunConfig`, the adapters the others.

A Hugging Face directory (`save_pretrained`'s layout) is a checkpoint too: `config.json` with a
`model_type` ("electra"), `model.safetensors` (or its sharded index), and optionally `vocab.txt`
(or `tokenizer.json`, which transformers 5 writes instead), `tokenizer_config.json`
(`do_lower_case`) and `special_tokens_map.json`. Two of them joined by a comma,
"DISC_DIR,GEN_DIR", are one checkpoint holding both networks (`huggingface_dirs`). So is a
keras-hub ElectraBackbone preset (`save_to_preset`'s: `electra_tf.keras_hub.config`), an encoder;
`foreign_dirs` finds either (the names of their files are its own).
"""

import dataclasses
import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from electra_tf import data_layout
from electra_tf.errors import UserError
from electra_tf.foreign_dirs import (  # noqa: F401 (the Hugging Face files' names, here too)
    CONFIG_FILE,
    HF_GENERATOR,
    HF_PICKLE_FILE,
    HF_SPECIAL_TOKENS_FILE,
    HF_TOKENIZER_CONFIG_FILE,
    HF_TOKENIZER_FILE,
    HF_WEIGHTS_FILE,
    HF_WEIGHTS_INDEX_FILE,
    foreign_dirs,
    huggingface_dirs,
    is_keras_hub_config,
)
from electra_tf.io_utils import copy_file_atomically, read_json, write_atomically, write_json
from electra_tf.model_config import ModelConfig
from electra_tf.run_lock import RunLock

BERT_CONFIG_FILE = "bert_config.json"
VOCAB_FILE = data_layout.VOCAB_FILE
EVAL_RESULTS_FILE = "eval_results.json"
ELECTRA_MLM_RESULTS_FILE = "electra_mlm_results.json"
CONFIG_FILES = (CONFIG_FILE, BERT_CONFIG_FILE)
PRETRAINING = "pretraining"
FINETUNING = "finetuning"
MODEL = "model"  # a bare BERT JSON model config (an original release)
HUGGINGFACE = "huggingface"  # a Hugging Face config.json (it has a `model_type`)
KERAS_HUB = "keras_hub"  # a keras-hub preset's config.json (it has a `class_name`)
KINDS = (PRETRAINING, FINETUNING, MODEL, HUGGINGFACE, KERAS_HUB)
KEPT_CHECKPOINT = data_layout.CHECKPOINT_NAME  # the prefix inside a kept fine-tuned model's dir
LOCK_FILE = "run.lock"
# what a run's config.json holds beside the flat hparams
_RUN_KEYS = ("kind", "model_config", "generator_config", "num_replicas", "flops_per_step")


def worker_scratch_dir(checkpoint_dir: str, task_type: str, task_id: int) -> str:
    """A non-chief worker's copy of a fine-tuning trial's checkpoints (removed at its end)."""
    return f"{checkpoint_dir}_scratch_{task_type}_{task_id}"


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """What a config file describes, whatever its format.

    Attributes:
        path: the file read.
        kind: "pretraining", "finetuning", "model" (a bare BERT JSON), "huggingface" or
            "keras_hub".
        model_config: the discriminator's (or the fine-tuned encoder's) config.
        generator_config: the pretraining generator's config, or None.
        hparams: the flat hparams the run was started with ({} for "model"; for "huggingface",
            `do_lower_case` where its tokenizer_config.json says, for "keras_hub" its tokenizer's).
        extra: other recorded values (num_replicas, flops_per_step; for "huggingface" and
            "keras_hub", the config.json itself under its kind).
    """

    path: str
    kind: str
    model_config: ModelConfig
    generator_config: Optional[ModelConfig] = None
    hparams: Dict[str, Any] = dataclasses.field(default_factory=dict)
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def do_lower_case(self) -> bool:
        return bool(self.hparams.get("do_lower_case", True))

    @property
    def task_names(self) -> List[str]:
        return list(self.hparams.get("task_names") or [])


def kind_of(d: Dict[str, Any], path: str) -> str:
    """The kind of config a config.json's object is (one of KINDS), read off its keys."""
    kind = d.get("kind")
    if kind is not None:
        if kind not in KINDS:
            raise UserError(f"{path}: kind {kind!r} is not one of {', '.join(KINDS)}")
        return kind
    if "model_type" in d:
        return HUGGINGFACE
    if is_keras_hub_config(d):
        return KERAS_HUB
    # files written before config.json recorded its kind: the only place that tells them apart
    # by their keys
    if isinstance(d.get("model_config"), dict):
        return FINETUNING if isinstance(d.get("task_names"), list) else PRETRAINING
    return MODEL


def run_config(d: Dict[str, Any], path: str) -> RunConfig:
    """What a config.json of this project's (a run's, pretraining or fine-tuning) or a BERT JSON
    model config describes (`d`: its object, read from `path`). Other libraries' config.json are
    read by their adapters (`electra_tf.checkpoint.locate.read_run_config` reads any)."""
    kind = kind_of(d, path)
    if kind in (HUGGINGFACE, KERAS_HUB):
        raise UserError(f"{path}: a {kind} config.json, not a run's")
    if kind == MODEL:
        return RunConfig(path, MODEL, ModelConfig.from_dict(d, source=path))
    if not isinstance(d.get("model_config"), dict):
        raise UserError(f"{path}: a {kind} config.json without its model_config")
    gen = d.get("generator_config")
    return RunConfig(
        path,
        kind,
        ModelConfig.from_dict(d["model_config"], source=f"{path} model_config"),
        ModelConfig.from_dict(gen, source=f"{path} generator_config") if gen else None,
        {k: v for k, v in d.items() if k not in _RUN_KEYS},
        {k: d[k] for k in ("num_replicas", "flops_per_step") if k in d},
    )


def read_json_object(path: str) -> Dict[str, Any]:
    d = read_json(path)
    if not isinstance(d, dict):
        raise UserError(f"{path}: not a JSON object")
    return d


def write_run_config(
    path: str,
    kind: str,
    hparams: Dict[str, Any],
    model_config: ModelConfig,
    generator_config: Optional[ModelConfig] = None,
    **extra: Any,
) -> None:
    """Writes a run's config.json: its kind, flat hparams, model config(s) and `extra`."""
    if kind not in (PRETRAINING, FINETUNING):
        raise ValueError(f"kind {kind!r}")
    d = dict(hparams)
    d.update(extra)
    d["kind"] = kind
    d["model_config"] = model_config.to_dict()
    if kind == PRETRAINING or generator_config is not None:
        d["generator_config"] = generator_config.to_dict() if generator_config else None
    write_json(path, d)


def model_dir(data_dir: str, model_name: str) -> str:
    """A run's directory, as the original: DATA_DIR/models/MODEL_NAME."""
    return data_layout.model_dir(data_dir, model_name)


class RunDirectory:
    """A run's directory and the files in it (see the module docstring).

    Args:
        path: the directory (created on the first write).

    Example:
        >>> run = RunDirectory("runs/demo/models/electra_small_demo")
        >>> os.path.basename(run.config_path)
        'config.json'
    """

    def __init__(self, path: str):
        self.path = path

    @property
    def config_path(self) -> str:
        return os.path.join(self.path, CONFIG_FILE)

    @property
    def vocab_path(self) -> str:
        return os.path.join(self.path, VOCAB_FILE)

    @property
    def eval_results_path(self) -> str:
        return os.path.join(self.path, EVAL_RESULTS_FILE)

    def summaries_dir(self, name: str) -> str:  # TensorBoard event files of "train", "eval"
        return os.path.join(self.path, name)

    def worker_dir(self, task_id: int) -> str:
        """Scratch checkpoints of a non-chief MultiWorkerMirroredStrategy worker."""
        return os.path.join(self.path, f"worker_tmp_{task_id}")

    def results_dir(self, random_init: bool = False) -> str:
        return os.path.join(self.path, "results_random_init" if random_init else "results")

    def _trial(self, where: str, task_names: Sequence[str], what: str, trial: int, random_init):
        name = f"{'_'.join(task_names)}_{what}_{trial}" + ("_random_init" if random_init else "")
        return os.path.join(self.path, where, name)

    def finetuned_model_dir(self, task_names: Sequence[str], trial: int, random_init=False) -> str:
        return self._trial("finetuning_models", task_names, "model", trial, random_init)

    def kept_checkpoint_prefix(self, task_names: Sequence[str], trial: int, random_init=False):
        return os.path.join(
            self.finetuned_model_dir(task_names, trial, random_init), KEPT_CHECKPOINT
        )

    def trial_summaries_dir(self, task_names: Sequence[str], trial: int, random_init=False) -> str:
        """TensorBoard event files of a fine-tuning trial's training (loss, speed)."""
        return self._trial("finetuning_summaries", task_names, "trial", trial, random_init)

    def finetuning_state_path(self, task_names: Sequence[str], random_init: bool = False) -> str:
        return os.path.join(self.results_dir(random_init), f"{'_'.join(task_names)}_trials.json")

    @staticmethod
    def set_aside_path(state_path: str) -> str:
        """Where a fine-tuning record of another config is moved (TASKS_trials.other_run.json)."""
        return state_path[: -len(".json")] + ".other_run.json"

    def task_lock_path(self, task_name: str, random_init: bool = False) -> str:
        """The lock of one task's fine-tuning in this directory (its results and kept models)."""
        suffix = "_random_init" if random_init else ""
        return os.path.join(self.path, f"finetuning_{task_name}{suffix}.lock")

    @staticmethod
    def predictions_name(task: str, split: str, trial: int, what="predictions", ext=".tsv") -> str:
        """TASK_SPLIT_predictions.tsv of trial 1, ..._trialT.tsv of trial T (`what`: QA's null_odds)."""
        suffix = "" if trial == 1 else f"_trial{trial}"
        return f"{task}_{split}_{what}{suffix}{ext}"

    def trial_checkpoint_dir(self, task_names: Sequence[str], trial: int, random_init=False) -> str:
        return self._trial("finetuning_checkpoints", task_names, "trial", trial, random_init)

    def lock(self, log=print):
        """Holds the directory for this process (`electra_tf.run_lock`): a second writer stops."""
        return RunLock.acquire(os.path.join(self.path, LOCK_FILE), "run directory", log)

    def exists(self) -> bool:
        return os.path.isdir(self.path)

    def makedirs(self) -> None:
        os.makedirs(self.path, exist_ok=True)

    # -- config and vocab
    def has_config(self) -> bool:
        return os.path.exists(self.config_path)

    def read_config(self) -> RunConfig:
        return run_config(read_json_object(self.config_path), self.config_path)

    def write_config(self, kind: str, hparams, model_config, generator_config=None, **extra):
        write_run_config(self.config_path, kind, hparams, model_config, generator_config, **extra)

    def copy_vocab(self, vocab_file: str, overwrite: bool = False) -> None:
        """Keeps a copy of the run's vocab beside its checkpoints (once, unless `overwrite`)."""
        if overwrite or not os.path.exists(self.vocab_path):
            copy_file_atomically(vocab_file, self.vocab_path)

    # -- results
    def write_eval_results(self, metrics: Dict[str, Any]) -> None:
        write_json(self.eval_results_path, metrics)

    def read_eval_results(self) -> Dict[str, Any]:
        return read_json(self.eval_results_path)

    def write_electra_mlm_results(self, result: Dict[str, Any]) -> str:
        path = os.path.join(self.path, ELECTRA_MLM_RESULTS_FILE)
        write_json(path, result)
        return path

    def write_results(self, task_name: str, result: Dict[str, Any], random_init=False) -> str:
        path = os.path.join(self.results_dir(random_init), f"{task_name}.json")
        write_json(path, result)
        return path

    def write_qa_predictions(
        self, filename: str, obj: Dict[str, Any], random_init: bool = False
    ) -> str:
        """A QA predictions or null-odds file in the official evaluation scripts' layout
        (insertion order, non-ASCII kept, indent 1), atomically."""
        path = os.path.join(self.results_dir(random_init), filename)
        write_atomically(path, lambda f: json.dump(obj, f, ensure_ascii=False, indent=1))
        return path

    def write_predictions(
        self, filename: str, predictions: Sequence[Tuple[Any, str]], random_init: bool = False
    ) -> str:
        """`id<TAB>prediction` lines with a header, atomically."""
        path = os.path.join(self.results_dir(random_init), filename)

        def write(f):
            f.write("id\tprediction\n")
            f.writelines(f"{eid}\t{p}\n" for eid, p in predictions)

        write_atomically(path, write)
        return path
