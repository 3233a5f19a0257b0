"""The `Task` interface every fine-tuning task implements, and shared reader helpers.

A task reads its split files into examples, featurizes them into numpy arrays, builds its head
(a Keras layer under `task_specific/<name>`) and a scorer. The runner only talks to this
interface, so a new kind of task (e.g. QA) plugs in by subclassing `Task` and adding one entry to
`electra_tf.finetune.tasks.TASKS`.

Feature arrays (leading dimension = number of features, which may exceed the number of examples,
e.g. QA windows): the shared `input_ids`, `input_mask`, `segment_ids` (int32 [N, L]) plus the task's
own, prefixed by its name (`<name>_eid`, `<name>_label_ids`, ...) and declared in `feature_spec`
so that multi-task batches can zero-fill the other tasks' features. The runner adds `task_id`.

A head is called as `head(sequence_output, features, training=...)` and returns a dict of
tensors with one row per feature: `loss` (float32 [B], the per-example loss; the runner sums it
over the batch as the original) and whatever its scorer reads (`eid`, `predictions`, ...).
"""

import os
from typing import Any

import keras
import numpy as np

from electra_tf import tokenization
from electra_tf.errors import UserError
from electra_tf.finetune.config import FinetuningConfig
from electra_tf.finetune.scorers import Scorer

FeatureSpec = dict[str, tuple[tuple[int, ...], Any]]  # name -> (shape without batch, numpy dtype)


class Task:
    """Base class of a fine-tuning task.

    Args:
        config: the run's `FinetuningConfig`.
        name: the task's name (its data is under `DATA_DIR/finetuning_data/<name>/`).
        tokenizer: a tokenizer with `.vocab` and `.tokenize_to_ids(list[str])`.
    """

    def __init__(self, config: FinetuningConfig, name: str, tokenizer: Any):
        self.config = config
        self.name = name
        self.tokenizer = tokenizer

    def get_examples(self, split: str) -> list[Any]:
        """The split's examples; a missing or malformed file raises `UserError` (file:line)."""
        raise NotImplementedError

    def dev_splits(self) -> list[str]:
        """The splits scored after training (the first is the task's main dev set)."""
        return ["dev"]

    def test_splits(self) -> list[str]:
        """The splits predicted with `write_test_outputs`."""
        return ["test"]

    def featurize(
        self, examples: list[Any], split: str, is_training: bool
    ) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def feature_spec(self) -> FeatureSpec:
        """This task's own features (not input_ids/input_mask/segment_ids/task_id)."""
        raise NotImplementedError

    def make_head(self) -> keras.layers.Layer:
        raise NotImplementedError

    def make_scorer(self, split: str, examples: list[Any]) -> Scorer:
        raise NotImplementedError


def make_tokenizer(vocab_file: str, do_lower_case: bool) -> Any:
    """The fast tokenizer when available (same ids as the reference), else the reference one."""
    if not os.path.exists(vocab_file):
        raise UserError(f"{vocab_file}: no such vocab file")
    cls = getattr(tokenization, "FullTokenizer", None) or tokenization.ReferenceTokenizer
    return cls(vocab_file, do_lower_case=do_lower_case, strip_accents=do_lower_case)


def split_path(config: FinetuningConfig, task_name: str, filename: str) -> str:
    path = os.path.join(config.raw_data_dir(task_name), filename)
    if not os.path.exists(path):
        raise UserError(f"{path}: no such file (task {task_name} needs it)")
    return path


def read_lines(path: str) -> list[str]:
    """The file's lines without line ends; an empty file is an error."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: not UTF-8 text ({e})") from None
    if not any(line.strip() for line in lines):
        raise UserError(f"{path}: empty file")
    return lines


def pad_to(ids: list[int], length: int) -> list[int]:
    return ids + [0] * (length - len(ids))
