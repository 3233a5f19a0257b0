"""The SavedModel of a fine-tuned model (`run_finetuning.py` with keep_all_models): the model is
rebuilt from the kept directory's config.json and checkpoint (`load_finetuned`), then each task
gives its signature functions (`Task.serving_functions`, in its kind's `serving.py`); this module
only assembles them (see `export_model.py` for the signatures and their outputs).
"""

import dataclasses
import os
from typing import Optional

import tensorflow as tf

from electra_tf import run_dir, vocab
from electra_tf.checkpoint import locate
from electra_tf.errors import UserError
from electra_tf.export.common import check_export_dir, check_vocab, write_extra
from electra_tf.export.inference import (
    InferenceEncoder,
    resolve_precision,
    serving_choices,
    serving_variables,
)
from electra_tf.finetune.config import FinetuningConfig
from electra_tf.finetune.features import dummy_batch, full_spec
from electra_tf.finetune.model import FinetuningModel, build_model
from electra_tf.finetune.registry import get_tasks
from electra_tf.finetune.serving import ServingContext
from electra_tf.finetune.task import Task
from electra_tf.model_config import ModelConfig
from electra_tf.tokenization import GraphTokenizer


def is_finetuning_config(path: Optional[str]) -> bool:
    """True for the config.json that fine-tuning writes beside a kept model."""
    if path is None or not os.path.exists(path):
        return False
    return locate.read_run_config(path).kind == run_dir.FINETUNING


@dataclasses.dataclass
class LoadedFinetuned:
    model: FinetuningModel
    tasks: list[Task]  # in the model's task order
    config: FinetuningConfig
    model_config: ModelConfig
    prefix: str
    vocab_file: str


def load_finetuned(
    checkpoint: str,
    vocab_file: str,
    model_config: Optional[str] = None,
    data_dir: Optional[str] = None,
) -> LoadedFinetuned:
    """Rebuilds a fine-tuned model as `run_finetuning.py` does (encoder + one head per task from
    the run's config.json) and restores it from a kept checkpoint. Tagging tasks read their label
    list from their data files (under `data_dir`, default the run's)."""
    prefix = locate.resolve_checkpoint(checkpoint)
    config_path = model_config or locate.find_beside(prefix, (run_dir.CONFIG_FILE,))
    if not is_finetuning_config(config_path):
        raise UserError(f"{config_path or prefix}: not a fine-tuning config.json (no task_names)")
    recorded = locate.read_run_config(config_path)
    hparams = {k: v for k, v in recorded.hparams.items() if k not in ("model_name", "data_dir")}
    hparams["vocab_file"] = vocab_file
    try:  # every key is recorded: none counts as the user's (no compat warnings)
        config = FinetuningConfig.from_flat(
            recorded.hparams.get("model_name", "model"),
            data_dir or recorded.hparams.get("data_dir", "."),
            hparams,
            explicit=(),
        )
    except UserError as e:
        raise UserError(f"{config_path}: {e}") from None
    check_vocab(vocab_file, recorded.model_config)
    tasks = get_tasks(config, None)
    for task in tasks:
        task.check_rebuildable()
    dummy = dummy_batch(full_spec(tasks, int(config.max_seq_length)))
    try:
        model, _ = build_model(recorded.model_config, [t.make_head() for t in tasks], dummy)
    except (ValueError, tf.errors.InvalidArgumentError) as e:
        raise UserError(f"{config_path}: cannot build the model ({e})") from None
    status = tf.train.Checkpoint(model=model).read(prefix)
    try:
        status.assert_existing_objects_matched()
    except AssertionError as e:
        raise UserError(
            f"{prefix}: the checkpoint does not hold every weight of the model {config_path} "
            f"describes (tasks {', '.join(config.task_names)}; a checkpoint written before task "
            f"heads were saved?): {str(e)[:300]}"
        ) from None
    status.expect_partial()
    return LoadedFinetuned(model, tasks, config, recorded.model_config, prefix, vocab_file)


class FinetunedServingModule(tf.Module):
    """The SavedModel's root for a fine-tuned model: the encoder, the task heads, the in-graph
    tokenizers and each task's signature functions, as attributes `<kind>_<task>`.

    Args:
        loaded: `load_finetuned`'s result.
        max_seq_length: the text signatures' padding length (tagging, classification) and the QA
            window length.
        precision: the encoder's dense matmuls (`inference.PRECISIONS`).
    """

    def __init__(self, loaded: LoadedFinetuned, max_seq_length: int, precision: str = "float32"):
        super().__init__(name="electra_finetuned_serving")
        model = loaded.model
        self.encoder = model.encoder
        self.max_seq_length = int(max_seq_length)
        self.max_positions = model.model_config.max_position_embeddings
        tokens = vocab.read_vocab(loaded.vocab_file)
        self.special_ids = dict(check_vocab(loaded.vocab_file, loaded.model_config))
        self.vocab_tokens = tf.constant(vocab.vocab_tokens(tokens))
        self.tokenizers = {}
        self.kinds: dict[str, str] = {}
        self.function_names: list[str] = []  # `<kind>_<task>`, in task order
        self.function_kinds: list[str] = []
        self.heads = {}

        def tokenizer(lower: bool) -> GraphTokenizer:  # one per setting: each saves its vocab
            key = "lower" if lower else "cased"
            if key not in self.tokenizers:
                self.tokenizers[key] = GraphTokenizer(loaded.vocab_file, lower, lower, vocab=tokens)
            return self.tokenizers[key]

        context = ServingContext(
            max_seq_length=self.max_seq_length,
            special_ids=self.special_ids,
            unk_id=vocab.unk_id(tokens),
            vocab_tokens=self.vocab_tokens,
            encode=self._encode,
            tokenizer=tokenizer,
        )
        self.inference = InferenceEncoder(self.encoder, precision)
        weights = list(self.encoder.weights)
        for task in loaded.tasks:
            head = getattr(model.task_heads, f"head_{task.name}")
            self.heads[task.name] = head
            weights += [w for w in head.weights if all(w is not o for o in weights)]
            for function in task.serving_functions(head, context):
                self._register(task.name, function.kind, function.fn, function.input_signature)
            self.kinds[task.name] = task.export_kind
        # the underlying tf.Variables the serving graph reads, tracked for the SavedModel
        self.model_variables = serving_variables(self.encoder, weights)

    def _encode(self, input_ids, input_mask, segment_ids) -> tf.Tensor:
        tf.debugging.assert_less_equal(
            tf.shape(input_ids)[1],
            self.max_positions,
            message=f"sequence length exceeds max_position_embeddings {self.max_positions}",
        )
        return self.inference(input_ids, input_mask, segment_ids)

    def _register(self, task_name: str, kind: str, fn, spec) -> None:
        name = f"{kind}_{task_name}"
        setattr(self, name, tf.function(fn, input_signature=list(spec), autograph=False))
        self.function_names.append(name)
        self.function_kinds.append(kind)


def finetuned_signature_names(module: FinetunedServingModule) -> dict[str, str]:
    """Signature key -> function name: every `<kind>_<task>`, and each kind also without the
    suffix for the first task that has it (the first task's `serve_<task>` as `serving_default`)."""
    names = {name: name for name in module.function_names}
    for name, kind in zip(module.function_names, module.function_kinds):  # in task order
        names.setdefault("serving_default" if kind == "serve" else kind, name)
    return names


def export_finetuned_saved_model(
    loaded: LoadedFinetuned,
    export_dir: str,
    max_seq_length: Optional[int] = None,
    precision: str = "float32",
) -> FinetunedServingModule:
    """Writes the SavedModel of a fine-tuned model (see `export_model.py` for the signatures);
    `precision`: the encoder's dense matmuls (`inference.PRECISIONS`, or "auto": measured)."""
    check_export_dir(export_dir)
    n = int(max_seq_length or loaded.config.max_seq_length)
    limit = loaded.model_config.max_position_embeddings
    if n < 3 or n > limit:
        raise UserError(f"max_seq_length {n} is not in [3, max_position_embeddings {limit}]")
    precision, measured = resolve_precision(precision, loaded.model.encoder, n)
    module = FinetunedServingModule(loaded, n, precision)
    names = finetuned_signature_names(module)
    signatures = {key: getattr(module, fn) for key, fn in names.items()}
    tf.saved_model.save(module, export_dir, signatures=signatures)
    info = {
        "tasks": {t.name: module.kinds[t.name] for t in loaded.tasks},
        "label_lists": {
            t.name: t.export_labels() for t in loaded.tasks if t.export_labels() is not None
        },
        "signatures": sorted(signatures),
        "max_seq_length": n,
        "do_lower_case": bool(loaded.config.do_lower_case),
        "serving": serving_choices(
            "classification: computed on the batch's longest sequence", precision, measured
        ),
    }
    write_extra(export_dir, info, loaded.model_config)
    return module
