"""The task registry: task name -> its `Task` class, and the run defaults of a list of tasks.

Each kind of task (`classification/`, `tagging/`, `qa/`) lists its tasks in its `task.py`'s
`TASKS`; a new task is one entry there, a new kind one more line here. The runner and the
export need nothing else. A name that is not built in is a custom task when
`DATA_DIR/finetuning_data/NAME/task.json` exists (`custom/`).
"""

import dataclasses
import os
from collections.abc import Sequence
from typing import Any, Optional

from electra_tf.errors import UserError
from electra_tf.finetune.classification import task as classification
from electra_tf.finetune.custom.spec import spec_path
from electra_tf.finetune.custom.task import custom_task_class
from electra_tf.finetune.qa import task as qa
from electra_tf.finetune.tagging import task as tagging
from electra_tf.finetune.task import Task

TASKS: dict[str, type[Task]] = {
    **classification.TASKS,  # GLUE
    **tagging.TASKS,  # chunk, ner
    **qa.TASKS,  # squad (v2.0), squadv1, newsqa, naturalqs, triviaqa, searchqa
}


@dataclasses.dataclass(frozen=True)
class TaskDefaults:
    num_train_epochs: float
    max_seq_length: int


def task_class(name: str, data_dir: Optional[str] = None) -> Optional[type[Task]]:
    """The built-in task `name`, else the custom task of DATA_DIR's task.json, else None."""
    if name in TASKS:
        if data_dir is not None and os.path.exists(spec_path(data_dir, name)):
            raise UserError(
                f"{spec_path(data_dir, name)}: {name} is a built-in task; give the custom task's "
                "directory another name"
            )
        return TASKS[name]
    return custom_task_class(data_dir, name) if data_dir is not None else None


def task_defaults(task_names: Sequence[str], data_dir: Optional[str] = None) -> TaskDefaults:
    """The defaults of a run of `task_names`: a single task's are those its class declares (10
    epochs for rte and sts, 2 epochs and 512 tokens for QA, 256 tokens for chunk and ner, a
    custom task's task.json), a multi-task run's the plain ones (3 epochs, 128 tokens), as the
    original's `configure_finetuning.py`, which applies the task defaults to single-task runs
    only. An unknown name counts as a plain `Task` (`get_task` reports it)."""
    names = list(task_names)
    cls = (task_class(names[0], data_dir) or Task) if len(names) == 1 else Task
    return TaskDefaults(cls.default_num_train_epochs, cls.default_max_seq_length)


def task_learning_rate(task_names: Sequence[str], data_dir: Optional[str]) -> Optional[float]:
    """The smallest `default_learning_rate` the tasks set (custom tasks' task.json), or None."""
    rates = [getattr(task_class(n, data_dir), "default_learning_rate", None) for n in task_names]
    rates = [r for r in rates if r is not None]
    return min(rates) if rates else None


def get_task(config: Any, name: str, tokenizer: Any) -> Task:
    cls = task_class(name, config.data_dir)
    if cls is None:
        raise UserError(
            f"unknown task {name!r}; known tasks: {', '.join(sorted(TASKS))}, or a directory "
            f"{os.path.dirname(spec_path(config.data_dir, name))}/ holding a task.json"
        )
    return cls(config, name, tokenizer)


def get_tasks(config: Any, tokenizer: Any) -> list[Task]:
    return [get_task(config, name, tokenizer) for name in config.task_names]
