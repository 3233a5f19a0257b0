"""Tasks made from a `task.json` (`spec.py`) on top of the built-in kinds: a classification or
regression task is a `GlueTask` (its reader, featuriser, heads, scorers and signatures), a
tagging task a `TaggingTask`; only where the data is (columns, labels) and what is reported
(metrics) come from the spec.

Files: `train.tsv`, `dev.tsv` (and `test.tsv`, predicted with write_test_outputs; its label
column is not read) for tsv; `train.txt`, `dev.txt` for conll. Example ids are 0-based rows
(header excluded) or sentences, as the built-in tasks'. A label that the label list lacks (the
`labels` given, else the train file's) is an error naming the file and the line, as is a missing
column. Regression targets are the label values themselves (no scaling).
"""

import os
from typing import Any, Optional

import keras

from electra_tf.errors import UserError
from electra_tf.finetune.classification.task import Columns, GlueTask
from electra_tf.finetune.custom.spec import TaskSpec, read_spec, spec_path
from electra_tf.finetune.scorers import Scorer
from electra_tf.finetune.tagging.task import TaggingTask, read_conll
from electra_tf.finetune.task import read_lines, split_path

TAG_PREFIXES = ("B", "I", "E", "S")


class MetricsSubset(Scorer):
    """A scorer's results restricted to the task's metrics (and the loss)."""

    def __init__(self, inner: Scorer, keep: tuple[str, ...]):
        super().__init__()
        self.inner, self.keep = inner, keep

    def update(self, outputs) -> None:
        self.inner.update(outputs)

    def get_results(self) -> dict[str, float]:
        return {k: v for k, v in self.inner.get_results().items() if k in self.keep + ("loss",)}

    def predictions(self):
        return self.inner.predictions()

    def label_counts(self):
        return self.inner.label_counts()


def _index(spec: TaskSpec, key: str, column, path: str, header: Optional[list[str]]):
    """A spec column as an index into the rows of `path` (names looked up in its header)."""
    if column is None or isinstance(column, int):
        return column
    if column not in header:
        raise UserError(
            f"{path}:1: no column {column!r} ({spec.path} {key}); the header has: "
            f"{', '.join(header)}"
        )
    return header.index(column)


class CustomTextTask(GlueTask):
    """A classification or regression task described by `spec` (a class attribute)."""

    spec: TaskSpec
    scale = 1.0  # regression targets as they are

    def __init__(self, config: Any, name: str, tokenizer: Any):
        super().__init__(config, name, tokenizer)
        self._label_list: Optional[tuple[str, ...]] = self.spec.labels

    @property
    def is_regression(self) -> bool:
        return self.spec.type == "regression"

    @property
    def metrics(self) -> tuple[str, ...]:
        return self.spec.metrics

    def _columns(self, path: str, lines: list[str], labelled: bool) -> Columns:
        header = lines[0].rstrip("\r").split("\t") if self.spec.header else None
        s = self.spec
        label = s.label if labelled else None  # test files need no label column
        return Columns(
            a=_index(s, "text_a", s.text_a, path, header),
            b=_index(s, "text_b", s.text_b, path, header),
            label=_index(s, "label", label, path, header),
            header=s.header,
        )

    def _read(self, split: str, labelled: bool):
        path = split_path(self.config, self.name, split + ".tsv")
        lines = read_lines(path)
        return path, lines, self._columns(path, lines, labelled)

    @property
    def label_list(self) -> tuple[str, ...]:
        """The task.json `labels`, else the sorted set of the train file's labels."""
        if self._label_list is None:
            path, lines, cols = self._read("train", labelled=True)
            found = set()
            for i, line in enumerate(lines[1:] if cols.header else lines):
                row = line.split("\t")
                if line.strip() and len(row) > max(cols.label, -cols.label - 1):
                    found.add(row[cols.label].strip())
            if not found:
                raise UserError(f"{path}: no labels in column {self.spec.label!r}")
            self._label_list = tuple(sorted(found))
        return self._label_list

    def get_examples(self, split: str) -> list:
        labelled = split != "test"
        path, lines, cols = self._read(split, labelled)
        examples = self._load(path, lines, split, cols, offset=0, swap=False)
        if not examples:
            raise UserError(f"{path}: no examples (only a header)")
        return examples

    def _label(self, row: list[str], cols: Columns, where: str) -> Any:
        if self.is_regression or cols.label is None:
            return super()._label(row, cols, where)
        value = row[cols.label].strip()
        if value not in self.label_list:
            source = f"{self.spec.path} labels" if self.spec.labels else "the train file"
            raise UserError(
                f"{where}: label {value!r} is not one of the task's labels (from {source}: "
                f"{', '.join(self.label_list)})"
            )
        return value

    def test_splits(self) -> list[str]:
        test = os.path.join(self.config.raw_data_dir(self.name), "test.tsv")
        return ["test"] if os.path.exists(test) else []

    def make_head(self) -> keras.layers.Layer:
        if "f1" in self.metrics and len(self.label_list) != 2:
            raise self.spec.error(
                "metrics",
                f"f1 is the F1 of the second label of two; this task has {len(self.label_list)} "
                "labels (use accuracy or mcc)",
            )
        return super().make_head()

    def make_scorer(self, split: str, examples: list) -> Scorer:
        scorer = super().make_scorer(split, examples)
        return MetricsSubset(scorer, self.metrics) if self.is_regression else scorer

    def check_rebuildable(self) -> None:
        train = os.path.join(self.config.raw_data_dir(self.name), "train.tsv")
        if not self.is_regression and self.spec.labels is None and not os.path.exists(train):
            raise UserError(
                f"{train}: task {self.name} takes its labels from its train file ({self.spec.path} "
                "has no labels); pass --data_dir"
            )


class CustomTaggingTask(TaggingTask):
    """A tagging task described by `spec` (a class attribute): BIOES tags of the types of the
    task.json `labels`, else of the train file's tags."""

    spec: TaskSpec

    def get_examples(self, split: str) -> list:
        if split not in self._examples:
            path = split_path(self.config, self.name, split + ".txt")
            examples = read_conll(path, self.name, self.spec.text_a, self.spec.label)
            self._examples[split] = examples
            if split != "train" or self.spec.labels is not None:
                self._check_types(path)
        return self._examples[split]

    def _types(self) -> list[str]:
        if self.spec.labels is not None:
            tags = self.spec.labels
            bad = [t for t in tags if t != "O" and t.partition("-")[0] not in TAG_PREFIXES]
            bad += [t for t in tags if t != "O" and not t.partition("-")[2]]
            if bad:
                raise self.spec.error("labels", f"{bad[0]!r} is not O or B-/I-/E-/S-<type>")
        else:
            tags = [t for e in self.get_examples("train") for t in e.tags]
        return sorted({t.split("-", 1)[1] for t in tags if t != "O" and "-" in t})

    def _check_types(self, path: str) -> None:
        types = set(self._types())
        for i, line in enumerate(read_lines(path)):
            fields = line.split()
            if not fields or fields[0] == "-DOCSTART-":
                continue
            tag = fields[self.spec.label]
            if tag != "O" and tag.split("-", 1)[1] not in types:
                source = f"{self.spec.path} labels" if self.spec.labels else "the train file"
                raise UserError(
                    f"{path}:{i + 1}: tag {tag!r} is of a type not among the task's (from "
                    f"{source}: {', '.join(sorted(types)) or 'none'})"
                )

    @property
    def label_list(self) -> list[str]:
        if not self._label_list:
            types = self._types()
            self._label_list = sorted(["O"] + [f"{p}-{t}" for t in types for p in TAG_PREFIXES])
        return self._label_list

    def check_rebuildable(self) -> None:
        if self.spec.labels is None:
            super().check_rebuildable()


_CLASSES: dict[tuple, type] = {}  # (task.json path, mtime, size) -> its task class


def custom_task_class(data_dir: str, name: str) -> Optional[type]:
    """The task class of `DATA_DIR/finetuning_data/NAME/task.json`, or None when there is none;
    its run defaults (max_seq_length, num_train_epochs, learning_rate) are the spec's
    (`finetune.defaults`)."""
    path = spec_path(data_dir, name)
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (os.path.abspath(path), st.st_mtime_ns, st.st_size)
    if key not in _CLASSES:
        spec = read_spec(path, name)
        base = CustomTaggingTask if spec.type == "tagging" else CustomTextTask
        attrs: dict[str, Any] = {"spec": spec}
        _CLASSES[key] = type(f"CustomTask_{name}", (base,), attrs)
    return _CLASSES[key]
