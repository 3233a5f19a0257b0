"""The task registry: task name -> its `Task` class, and the run defaults of a list of tasks.

Each kind of task (`classification/`, `tagging/`, `qa/`) lists its tasks in its `task.py`'s
`TASKS`; a new task is one entry there, a new kind one more line here. The runner and the
export need nothing else.
"""

import dataclasses
from collections.abc import Sequence
from typing import Any

from electra_tf.errors import UserError
from electra_tf.finetune.classification import task as classification
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


def task_defaults(task_names: Sequence[str]) -> TaskDefaults:
    """The defaults of a run of `task_names`: those its tasks' classes declare, the highest
    `defaults_precedence` first, then the largest (so: 2 epochs and 512 tokens with any QA task,
    else 10 epochs with rte or sts and 256 tokens with chunk or ner, else 3 and 128). An
    unknown name counts as a plain `Task` (`get_task` reports it)."""
    classes = [TASKS.get(name, Task) for name in task_names] or [Task]

    def pick(attribute: str):
        return max((c.defaults_precedence, getattr(c, attribute)) for c in classes)[1]

    return TaskDefaults(pick("default_num_train_epochs"), pick("default_max_seq_length"))


def get_task(config: Any, name: str, tokenizer: Any) -> Task:
    if name not in TASKS:
        raise UserError(f"unknown task {name!r}; known tasks: {', '.join(sorted(TASKS))}")
    return TASKS[name](config, name, tokenizer)


def get_tasks(config: Any, tokenizer: Any) -> list[Task]:
    return [get_task(config, name, tokenizer) for name in config.task_names]
