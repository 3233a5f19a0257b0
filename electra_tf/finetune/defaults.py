"""The run defaults that fine-tuning's tasks set, read without TensorFlow (the config resolves
them when it is built): a single-task run takes its task's epochs and sequence length, a
multi-task run the plain ones, as the original's `configure_finetuning.py`; a custom task's come
from its task.json (`custom.spec`), which may also set a learning rate."""

import dataclasses
import os
from collections.abc import Sequence
from typing import Optional

from electra_tf.errors import UserError
from electra_tf.finetune.custom.spec import TaskSpec, read_spec, spec_path


@dataclasses.dataclass(frozen=True)
class TaskDefaults:
    num_train_epochs: float
    max_seq_length: int


PLAIN = TaskDefaults(3.0, 128)
_QA = TaskDefaults(2.0, 512)  # SQuAD and MRQA: long passages, few epochs
_TAGGING = TaskDefaults(3.0, 256)  # as the original: sentences of sub-tokens run long
_SMALL = TaskDefaults(10.0, 128)  # as the original: small train sets
# every built-in task (`registry.TASKS`, the same names) -> its single-task defaults
BUILT_IN: dict[str, TaskDefaults] = {
    "cola": PLAIN,
    "sst": PLAIN,
    "mrpc": PLAIN,
    "sts": _SMALL,
    "qqp": PLAIN,
    "mnli": PLAIN,
    "qnli": PLAIN,  # RTE's layout, not its epochs
    "rte": _SMALL,
    "wnli": PLAIN,
    "chunk": _TAGGING,
    "ner": _TAGGING,
    "squad": _QA,
    "squadv1": _QA,
    "newsqa": _QA,
    # the GLUE defaults, as the original (and this project until the kinds declared them): its
    # test for a QA task ("squad" or "qa" in the name) misses "naturalqs"
    "naturalqs": PLAIN,
    "triviaqa": _QA,
    "searchqa": _QA,
}


# a custom task's kind (its task.json's "type") -> the defaults it leaves to the kind
KINDS: dict[str, TaskDefaults] = {"tagging": _TAGGING}


def custom_spec(name: str, data_dir: Optional[str]) -> Optional[TaskSpec]:
    """The task.json of a custom task `name` (None for a built-in or an unknown one); a
    task.json for a built-in name is an error."""
    if data_dir is None:
        return None
    path = spec_path(data_dir, name)
    if name in BUILT_IN:
        if os.path.exists(path):
            raise UserError(
                f"{path}: {name} is a built-in task; give the custom task's directory another name"
            )
        return None
    return read_spec(path, name) if os.path.exists(path) else None


def task_defaults(task_names: Sequence[str], data_dir: Optional[str] = None) -> TaskDefaults:
    """The defaults of a run of `task_names`: a single task's are its own (10 epochs for rte
    and sts, 2 epochs and 512 tokens for QA, 256 tokens for chunk and ner, a custom task's
    task.json), a multi-task run's the plain ones (3 epochs, 128 tokens), as the original's
    `configure_finetuning.py`, which applies the task defaults to single-task runs only. An
    unknown name counts as a plain task (`registry.get_task` reports it)."""
    names = list(task_names)
    if len(names) != 1:
        return PLAIN
    name = names[0]
    spec = custom_spec(name, data_dir)
    if spec is None:
        return BUILT_IN.get(name, PLAIN)
    kind = KINDS.get(spec.type, PLAIN)  # what the task.json leaves out, its kind's
    return TaskDefaults(
        kind.num_train_epochs if spec.num_train_epochs is None else spec.num_train_epochs,
        kind.max_seq_length if spec.max_seq_length is None else spec.max_seq_length,
    )


def task_learning_rate(task_names: Sequence[str], data_dir: Optional[str]) -> Optional[float]:
    """The smallest learning rate the tasks set (custom tasks' task.json), or None."""
    specs = [custom_spec(n, data_dir) for n in task_names]
    rates = [s.learning_rate for s in specs if s is not None and s.learning_rate is not None]
    return min(rates) if rates else None
