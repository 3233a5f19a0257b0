"""GLUE classification and regression tasks, as the original's
`finetune/classification/classification_tasks.py`.

Files are `DATA_DIR/finetuning_data/<task>/<split>.tsv`, tab-separated with no quoting. The
example id (`eid`) is the 0-based row index in its file with the header excluded; with
`double_unordered`, the swapped copies of MRPC / STS train pairs follow with ids offset by the
number of rows. Test splits carry no labels: a dummy one is used (the first label, or 0.0).

Pairs are packed `[CLS] a [SEP] b [SEP]` by `electra_tf.packing` (BERT's truncation); an
empty second sentence makes a single-sentence example `[CLS] a [SEP]`, as the original. Heads:
`head.py`; scorers: `scorer.py`; SavedModel signatures: `serving.py`.
"""

import dataclasses
import os
from typing import Any, Optional

import keras
import numpy as np

from electra_tf import packing, vocab
from electra_tf.errors import UserError
from electra_tf.finetune.classification import serving
from electra_tf.finetune.classification.head import ClassificationHead, RegressionHead
from electra_tf.finetune.classification.scorer import ClassificationScorer, RegressionScorer
from electra_tf.finetune.scorers import Scorer
from electra_tf.finetune.serving import ServingContext, ServingFunction
from electra_tf.finetune.task import FeatureSpec, Task, read_lines, split_path


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
    scale = 5.0  # regression targets are label / scale, as the original's STS (0..5)

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
        ids = vocab.special_token_ids(
            self.tokenizer.vocab, str(self.config.vocab_file), ("cls", "sep")
        )
        ids_a = self.tokenizer.tokenize_to_ids([e.text_a for e in examples])
        # an empty second sentence makes a single-sentence example, as the original's `if text_b`
        b_texts = [e.text_b for e in examples if e.text_b]
        ids_b_iter = iter(self.tokenizer.tokenize_to_ids(b_texts) if b_texts else [])
        n = len(examples)
        input_ids = np.zeros([n, max_len], np.int32)
        input_mask = np.zeros([n, max_len], np.int32)
        segment_ids = np.zeros([n, max_len], np.int32)
        for k, (e, a) in enumerate(zip(examples, ids_a)):
            b = next(ids_b_iter) if e.text_b else None
            packed = packing.pack_and_pad(a, b, max_len, ids["cls"], ids["sep"])
            input_ids[k], input_mask[k], segment_ids[k] = packed
        features = {
            "input_ids": input_ids,
            "input_mask": input_mask,
            "segment_ids": segment_ids,
            f"{self.name}_eid": np.array([e.eid for e in examples], np.int32),
        }
        if self.is_regression:
            # the original normalises STS to [0, 1]: (label - 0) / 5
            targets = [float(e.label) / self.scale for e in examples]
            features[f"{self.name}_targets"] = np.array(targets, np.float32)
        else:
            labels = [self.label_list.index(e.label) for e in examples]
            features[f"{self.name}_label_ids"] = np.array(labels, np.int32)
        return features

    def make_head(self) -> keras.layers.Layer:
        pooling = self.config.classifier_pooling
        if self.is_regression:
            return RegressionHead(self.name, pooling=pooling, name=self.name)
        return ClassificationHead(self.name, len(self.label_list), pooling=pooling, name=self.name)

    def make_scorer(self, split: str, examples: list[Any]) -> Scorer:
        if self.is_regression:
            return RegressionScorer(scale=self.scale)
        return ClassificationScorer(self.label_list, self.metrics)

    @property
    def export_kind(self) -> str:
        return "regression" if self.is_regression else "classification"

    def export_labels(self) -> Optional[list[str]]:
        return None if self.is_regression else list(self.label_list)

    def serving_functions(
        self, head: keras.layers.Layer, context: ServingContext
    ) -> list[ServingFunction]:
        labels = None if self.is_regression else self.label_list
        tokenizer = context.tokenizer(bool(self.config.do_lower_case))
        return serving.serving_functions(head, tokenizer, context, labels, self.scale)


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
    """RTE's layout; its run defaults are GLUE's, not RTE's (`finetune.defaults`)."""


class WNLI(GlueTask):
    train_dev = Columns(a=1, b=2, label=3)
    test = Columns(a=1, b=2, label=None)


class STS(GlueTask):
    is_regression = True
    train_dev = Columns(a=-3, b=-2, label=-1)
    test = Columns(a=-2, b=-1, label=None)
    double = True


# name -> task class, merged into `electra_tf.finetune.registry.TASKS`
TASKS = {
    "cola": CoLA,
    "sst": SST,
    "mrpc": MRPC,
    "sts": STS,
    "qqp": QQP,
    "mnli": MNLI,
    "qnli": QNLI,
    "rte": RTE,
    "wnli": WNLI,
}
