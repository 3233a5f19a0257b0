"""The task registry: task name -> a factory `(config, name, tokenizer) -> Task`.

A new task (or a new kind of task) plugs in by adding one entry here; the runner needs nothing
else. Task classes implement `electra_tf.finetune.task.Task`.
"""

from collections.abc import Callable
from typing import Any

from electra_tf.errors import UserError
from electra_tf.finetune import classification, qa, tagging
from electra_tf.finetune.config import FinetuningConfig
from electra_tf.finetune.task import Task

TaskFactory = Callable[[FinetuningConfig, str, Any], Task]

TASKS: dict[str, TaskFactory] = {
    # GLUE
    "cola": classification.CoLA,
    "sst": classification.SST,
    "mrpc": classification.MRPC,
    "sts": classification.STS,
    "qqp": classification.QQP,
    "mnli": classification.MNLI,
    "qnli": classification.QNLI,
    "rte": classification.RTE,
    "wnli": classification.WNLI,
    # tagging
    "chunk": tagging.Chunking,
    "ner": tagging.NER,
    # question answering: squad (v2.0), squadv1, newsqa, naturalqs, triviaqa, searchqa
    **qa.QA_TASKS,
}


def get_task(config: FinetuningConfig, name: str, tokenizer: Any) -> Task:
    if name not in TASKS:
        raise UserError(f"unknown task {name!r}; known tasks: {', '.join(sorted(TASKS))}")
    return TASKS[name](config, name, tokenizer)


def get_tasks(config: FinetuningConfig, tokenizer: Any) -> list[Task]:
    return [get_task(config, name, tokenizer) for name in config.task_names]
