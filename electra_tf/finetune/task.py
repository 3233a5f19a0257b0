"""The `Task` interface every fine-tuning task implements, and shared reader helpers.

A task reads its split files into examples, featurizes them into numpy arrays, builds its head
(a Keras layer under `task_specific/<name>`), a scorer, and the serving functions a SavedModel
exports for it. The runner and the export only talk to this interface: a new kind of task is a
subpackage of `electra_tf.finetune` with a `Task` subclass, plus its names in
`electra_tf.finetune.registry`.

Feature arrays (leading dimension = number of features, which may exceed the number of examples,
e.g. QA windows): the shared `input_ids`, `input_mask`, `segment_ids` (int32 [N, L]) plus the task's
own, prefixed by its name (`<name>_eid`, `<name>_label_ids`, ...) and declared in `feature_spec`
so that multi-task batches can zero-fill the other tasks' features. The runner adds `task_id`.

A head is called as `head(sequence_output, features, training=...)` and returns a dict of
tensors with one row per feature: `loss` (float32 [B], the per-example loss; the runner sums it
over the batch as the original) and whatever its scorer reads (`eid`, `predictions`, ...).
"""

import os
from typing import Any, Optional

import keras
import numpy as np
import tensorflow as tf

from electra_tf import tokenization
from electra_tf.errors import UserError
from electra_tf.finetune.scorers import Scorer
from electra_tf.finetune.serving import ServingContext, ServingFunction

FeatureSpec = dict[str, tuple[tuple[int, ...], Any]]  # name -> (shape without batch, numpy dtype)


class Task:
    """Base class of a fine-tuning task.

    The run defaults of each task (epochs, sequence length; a custom task's learning rate)
    are `electra_tf.finetune.defaults`', read without TensorFlow when the config is built.

    Args:
        config: the run's `FinetuningConfig`.
        name: the task's name (its data is under `DATA_DIR/finetuning_data/<name>/`).
        tokenizer: a tokenizer with `.vocab` and `.tokenize_to_ids(list[str])`.
    """

    # what the SavedModel's export_config.json calls this kind ("classification", ...)
    export_kind: Optional[str] = None

    def __init__(self, config: Any, name: str, tokenizer: Any):
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

    def check_rebuildable(self) -> None:
        """Raises `UserError` when the head cannot be rebuilt from the config alone (what a
        kept model's export needs besides its checkpoint)."""

    def export_labels(self) -> Optional[list[str]]:
        """The label strings the exported outputs index (recorded in export_config.json)."""
        return None

    def serving_functions(
        self, head: keras.layers.Layer, context: ServingContext
    ) -> list[ServingFunction]:
        """The SavedModel signature functions of this task, in the order they are exported."""
        raise UserError(f"task {self.name}: export does not support its kind of task")


def make_tokenizer(vocab_file: str, do_lower_case: bool) -> tokenization.FullTokenizer:
    """The fast tokenizer (the reference tokenizer's ids); accents are stripped when lower-casing,
    as BERT's."""
    if not os.path.exists(vocab_file):
        raise UserError(f"{vocab_file}: no such vocab file")
    return tokenization.FullTokenizer(
        vocab_file, do_lower_case=do_lower_case, strip_accents=do_lower_case
    )


def split_path(config: Any, task_name: str, filename: str) -> str:
    path = os.path.join(config.raw_data_dir(task_name), filename)
    if not os.path.exists(path):
        raise UserError(f"{path}: no such file (task {task_name} needs it)")
    return path


def read_lines(path: str) -> list[str]:
    """The file's lines without line ends (\n, or \r\n), split at \n only, as the original's
    readers: a sentence holding another line break character (\x85, \u2028, \x0b, \x1c ...,
    which `str.splitlines` splits at) stays in its row. An empty file is an error."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: not UTF-8 text ({e})") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if not any(line.strip() for line in lines):
        raise UserError(f"{path}: empty file")
    return lines


def softmax_cross_entropy(logits: tf.Tensor, labels: tf.Tensor, num_labels: int):
    """(-log softmax(logits)[label] over the last axis, the argmax predictions), float32 logits;
    the loss of the classification and tagging heads."""
    loss = -tf.reduce_sum(tf.one_hot(labels, num_labels) * tf.nn.log_softmax(logits, axis=-1), -1)
    return loss, tf.argmax(logits, axis=-1, output_type=tf.int32)
