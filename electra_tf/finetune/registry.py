"""The task registry: task name -> its `Task` class (the run defaults of a list of tasks are
`defaults`', re-exported here).

Each kind of task (`classification/`, `tagging/`, `qa/`) lists its tasks in its `task.py`'s
`TASKS`; a new task is one entry there and one in `defaults.BUILT_IN`, a new kind one more
line here. The runner and the
export need nothing else. A name that is not built in is a custom task when
`DATA_DIR/finetuning_data/NAME/task.json` exists (`custom/`).
"""

import os
from typing import Any, Optional

from electra_tf.errors import UserError
from electra_tf.finetune.classification import task as classification
from electra_tf.finetune.custom.spec import spec_path
from electra_tf.finetune.custom.task import custom_task_class
from electra_tf.finetune.defaults import (  # noqa: F401 (the run defaults, here too)
    BUILT_IN,
    TaskDefaults,
    custom_spec,
    task_defaults,
    task_learning_rate,
)
from electra_tf.finetune.qa import task as qa
from electra_tf.finetune.tagging import task as tagging
from electra_tf.finetune.task import Task

TASKS: dict[str, type[Task]] = {
    **classification.TASKS,  # GLUE
    **tagging.TASKS,  # chunk, ner
    **qa.TASKS,  # squad (v2.0), squadv1, newsqa, naturalqs, triviaqa, searchqa
}


def task_class(name: str, data_dir: Optional[str] = None) -> Optional[type[Task]]:
    """The built-in task `name`, else the custom task of DATA_DIR's task.json, else None."""
    if name in TASKS:
        custom_spec(name, data_dir)  # a task.json under a built-in name is an error
        return TASKS[name]
    return custom_task_class(data_dir, name) if data_dir is not None else None


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
