"""GLUE classification and regression tasks, as the original's
`finetune/classification/classification_tasks.py`.

Files are `DATA_DIR/finetuning_data/<task>/<split>.tsv`, tab-separated with no quoting. The
example id (`eid`) is the 0-based row index in its file with the header excluded; with
`double_unordered`, the swapped copies of MRPC / STS train pairs follow with ids offset by the
number of rows. Test splits carry no labels: a dummy one is used (the first label, or 0.0).

Head: the [CLS] vector -> dropout(0.1) (on top of the encoder's) -> dense (glorot, no pooler).
Classification loss is cross-entropy, regression (STS, target = label / 5) the squared error;
both per example, summed over the batch by the runner (the original's quirk).
"""

import dataclasses
import os
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from electra_tf.errors import UserError
from electra_tf.finetune import scorers
from electra_tf.finetune.task import FeatureSpec, Task, pad_to, read_lines, split_path


@dataclasses.dataclass
class InputExample:
    eid: int
    task_name: str
    text_a: str
    text_b: str | None
    label: Any  # a label string, or a float for regression


@dataclasses.dataclass(frozen=True)
class Columns:
    """Where a split's fields are: column indices (negative from the end) and the header."""

    a: int
    b: int | None
    label: int | None  # None: no labels (test)
    header: bool = True


class GlueTask(Task):
    """A GLUE task. Subclasses set the label list and the column layouts."""

    label_list: tuple[str, ...] = ("0", "1")
    is_regression = False
    metrics = ("accuracy",)
    train_dev: Columns
    test: Columns
    double: bool = False  # double_unordered applies (MRPC, STS)

    def split_file(self, split: str) -> str:
        return split + ".tsv"

    def columns(self, split: str) -> Columns:
        return self.test if ("test" in split or "diagnostic" in split) else self.train_dev

    def get_examples(self, split: str) -> list[InputExample]:
        path = split_path(self.config, self.name, self.split_file(split))
        lines = read_lines(path)
        cols = self.columns(split)
        examples = self._load(path, lines, split, cols, offset=0, swap=False)
        if not examples:
            raise UserError(f"{path}: no examples (only a header)")
        if self.double and self.config.double_unordered and split == "train":
            examples += self._load(
                path, lines, split, cols, offset=len(lines) - cols.header, swap=True
            )
        return examples

    def _load(
        self, path: str, lines: list[str], split: str, cols: Columns, offset: int, swap: bool
    ) -> list[InputExample]:
        wanted = [c for c in (cols.a, cols.b, cols.label) if c is not None]
        need = max(max(c + 1 if c >= 0 else -c for c in wanted), 1)
        examples = []
        for i, line in enumerate(lines):
            if cols.header and i == 0:
                continue
            if not line.strip():
                continue
            row = line.split("\t")
            where = f"{path}:{i + 1}"
            if len(row) < need:
                raise UserError(
                    f"{where}: expected at least {need} tab-separated columns for task "
                    f"{self.name}, found {len(row)}"
                )
            text_a = row[cols.a]
            text_b = row[cols.b] if cols.b is not None else None
            if swap:
                text_a, text_b = text_b, text_a
            label = self._label(row, cols, where)
            eid = i - (1 if cols.header else 0) + offset
            examples.append(InputExample(eid, self.name, text_a, text_b, label))
        return examples

    def _label(self, row: list[str], cols: Columns, where: str) -> Any:
        if cols.label is None:
            return 0.0 if self.is_regression else self.label_list[0]
        value = row[cols.label].strip()
        if self.is_regression:
            try:
                return float(value)
            except ValueError:
                raise UserError(f"{where}: label {value!r} is not a number") from None
        if value not in self.label_list:
            raise UserError(
                f"{where}: unknown label {value!r} for task {self.name} "
                f"(expected one of {', '.join(self.label_list)})"
            )
        return value

    # -- features ---------------------------------------------------------------------------------

    def feature_spec(self) -> FeatureSpec:
        spec: FeatureSpec = {f"{self.name}_eid": ((), np.int32)}
        if self.is_regression:
            spec[f"{self.name}_targets"] = ((), np.float32)
        else:
            spec[f"{self.name}_label_ids"] = ((), np.int32)
        return spec

    def featurize(
        self, examples: list[InputExample], split: str, is_training: bool
    ) -> dict[str, np.ndarray]:
        max_len = self.config.max_seq_length
        vocab = self.tokenizer.vocab
        cls_id, sep_id = vocab["[CLS]"], vocab["[SEP]"]
        ids_a = self.tokenizer.tokenize_to_ids([e.text_a for e in examples])
        b_texts = [e.text_b for e in examples if e.text_b is not None]
        ids_b_iter = iter(self.tokenizer.tokenize_to_ids(b_texts) if b_texts else [])
        n = len(examples)
        input_ids = np.zeros([n, max_len], np.int32)
        input_mask = np.zeros([n, max_len], np.int32)
        segment_ids = np.zeros([n, max_len], np.int32)
        for k, (e, a) in enumerate(zip(examples, ids_a)):
            a = list(a)
            b = list(next(ids_b_iter)) if e.text_b is not None else None
            if b is not None:
                truncate_seq_pair(a, b, max_len - 3)
            else:
                a = a[: max_len - 2]
            ids = [cls_id] + a + [sep_id]
            segs = [0] * len(ids)
            if b is not None:
                ids += b + [sep_id]
                segs += [1] * (len(b) + 1)
            input_ids[k] = pad_to(ids, max_len)
            input_mask[k] = pad_to([1] * len(ids), max_len)
            segment_ids[k] = pad_to(segs, max_len)
        features = {
            "input_ids": input_ids,
            "input_mask": input_mask,
            "segment_ids": segment_ids,
            f"{self.name}_eid": np.array([e.eid for e in examples], np.int32),
        }
        if self.is_regression:
            # the original normalises STS to [0, 1]: (label - 0) / 5
            targets = [float(e.label) / 5.0 for e in examples]
            features[f"{self.name}_targets"] = np.array(targets, np.float32)
        else:
            labels = [self.label_list.index(e.label) for e in examples]
            features[f"{self.name}_label_ids"] = np.array(labels, np.int32)
        return features

    def make_head(self) -> keras.layers.Layer:
        if self.is_regression:
            return RegressionHead(self.name, name=self.name)
        return ClassificationHead(self.name, len(self.label_list), name=self.name)

    def make_scorer(self, split: str, examples: list[Any]) -> scorers.Scorer:
        if self.is_regression:
            return scorers.RegressionScorer(scale=5.0)
        return scorers.ClassificationScorer(self.label_list, self.metrics)


def truncate_seq_pair(a: list[int], b: list[int], max_length: int) -> None:
    """BERT's rule: pop from the longer sequence (b on ties) until they fit, in place."""
    while len(a) + len(b) > max_length:
        (a if len(a) > len(b) else b).pop()


class ClassificationHead(keras.layers.Layer):
    """[CLS] -> dropout -> dense(num_labels) -> softmax cross-entropy (per example).

    Args:
        task_name: the feature-name prefix (`<task>_label_ids`, `<task>_eid`).
        num_labels: number of classes.
        dropout_rate: dropout on the [CLS] vector when training (the original: 0.1).

    Example:
        head = ClassificationHead("sst", 2, name="sst")
        out = head(tf.zeros([2, 8, 16]), {"sst_label_ids": tf.constant([0, 1]),
                                           "sst_eid": tf.constant([0, 1])})
    """

    def __init__(self, task_name: str, num_labels: int, dropout_rate: float = 0.1, **kwargs):
        super().__init__(**kwargs)
        self.task_name = task_name
        self.num_labels = num_labels
        self.dropout_rate = dropout_rate
        self.dropout = keras.layers.Dropout(dropout_rate)
        self.dense = keras.layers.Dense(
            num_labels, kernel_initializer="glorot_uniform", name="dense"
        )

    def build(self, input_shape):
        self.dense.build((input_shape[0], input_shape[-1]))
        self.built = True

    def call(self, sequence_output, features, training=False):
        reprs = self.dropout(sequence_output[:, 0], training=training)
        logits = tf.cast(self.dense(reprs), tf.float32)
        label_ids = features[f"{self.task_name}_label_ids"]
        log_probs = tf.nn.log_softmax(logits, axis=-1)
        loss = -tf.reduce_sum(tf.one_hot(label_ids, self.num_labels) * log_probs, axis=-1)
        return {
            "loss": loss,
            "logits": logits,
            "predictions": tf.argmax(logits, axis=-1, output_type=tf.int32),
            "label_ids": label_ids,
            "eid": features[f"{self.task_name}_eid"],
        }

    def get_config(self):
        config = super().get_config()
        config.update(
            task_name=self.task_name, num_labels=self.num_labels, dropout_rate=self.dropout_rate
        )
        return config


class RegressionHead(keras.layers.Layer):
    """[CLS] -> dropout -> dense(1) -> squared error against `<task>_targets` (per example).

    Args:
        task_name: the feature-name prefix (`<task>_targets`, `<task>_eid`).
        dropout_rate: dropout on the [CLS] vector when training (the original: 0.1).

    Example:
        head = RegressionHead("sts", name="sts")
        out = head(tf.zeros([2, 8, 16]), {"sts_targets": tf.constant([0.2, 0.8]),
                                           "sts_eid": tf.constant([0, 1])})
    """

    def __init__(self, task_name: str, dropout_rate: float = 0.1, **kwargs):
        super().__init__(**kwargs)
        self.task_name = task_name
        self.dropout_rate = dropout_rate
        self.dropout = keras.layers.Dropout(dropout_rate)
        self.dense = keras.layers.Dense(1, kernel_initializer="glorot_uniform", name="dense")

    def build(self, input_shape):
        self.dense.build((input_shape[0], input_shape[-1]))
        self.built = True

    def call(self, sequence_output, features, training=False):
        reprs = self.dropout(sequence_output[:, 0], training=training)
        predictions = tf.squeeze(tf.cast(self.dense(reprs), tf.float32), -1)
        targets = tf.cast(features[f"{self.task_name}_targets"], tf.float32)
        return {
            "loss": tf.square(predictions - targets),
            "predictions": predictions,
            "targets": targets,
            "eid": features[f"{self.task_name}_eid"],
        }

    def get_config(self):
        config = super().get_config()
        config.update(task_name=self.task_name, dropout_rate=self.dropout_rate)
        return config


# -- the GLUE tasks (column layouts from the original) ----------------------------------------------


class CoLA(GlueTask):
    metrics = ("mcc",)
    train_dev = Columns(a=3, b=None, label=1, header=False)
    test = Columns(a=1, b=None, label=None, header=True)


class SST(GlueTask):
    train_dev = Columns(a=0, b=None, label=1)
    test = Columns(a=1, b=None, label=None)


class MRPC(GlueTask):
    metrics = ("accuracy", "f1")
    train_dev = Columns(a=3, b=4, label=0)
    test = Columns(a=3, b=4, label=None)
    double = True


class QQP(GlueTask):
    metrics = ("accuracy", "f1")
    train_dev = Columns(a=3, b=4, label=5)
    test = Columns(a=1, b=2, label=None)


class MNLI(GlueTask):
    label_list = ("contradiction", "entailment", "neutral")
    train_dev = Columns(a=8, b=9, label=-1)
    test = Columns(a=8, b=9, label=None)
    diagnostic = Columns(a=1, b=2, label=None)

    def split_file(self, split: str) -> str:
        return "dev_matched.tsv" if split == "dev" else split + ".tsv"

    def columns(self, split: str) -> Columns:
        return self.diagnostic if split == "diagnostic" else super().columns(split)

    def dev_splits(self) -> list[str]:
        # dev = dev_matched.tsv as the original; dev_mismatched.tsv is scored too when present
        mismatched = os.path.join(self.config.raw_data_dir(self.name), "dev_mismatched.tsv")
        return ["dev", "dev_mismatched"] if os.path.exists(mismatched) else ["dev"]

    def test_splits(self) -> list[str]:
        diag = os.path.join(self.config.raw_data_dir(self.name), "diagnostic.tsv")
        extra = ["diagnostic"] if os.path.exists(diag) else []
        return ["test_matched", "test_mismatched"] + extra


class RTE(GlueTask):
    label_list = ("entailment", "not_entailment")
    train_dev = Columns(a=1, b=2, label=3)
    test = Columns(a=1, b=2, label=None)


class QNLI(RTE):
    pass


class WNLI(GlueTask):
    train_dev = Columns(a=1, b=2, label=3)
    test = Columns(a=1, b=2, label=None)


class STS(GlueTask):
    is_regression = True
    train_dev = Columns(a=-3, b=-2, label=-1)
    test = Columns(a=-2, b=-1, label=None)
    double = True
