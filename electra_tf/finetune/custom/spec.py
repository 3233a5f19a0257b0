"""`task.json`: a fine-tuning task described by its data directory, read and checked.

    {"type": "classification" | "regression" | "tagging",
     "format": "tsv" | "conll",          default: tsv, conll for tagging
     "header": true | false,             tsv: the first line names the columns (default false)
     "text_a": column, "text_b": column or null, "label": column,
                                         tsv: a name (with a header) or a 0-based index
                                         (negative: from the end); conll: the word's and the
                                         tag's index (default 0 and -1), text_b null
     "labels": [...],                    classification: the label strings (default: the sorted
                                         set of train labels); tagging: tags (O, B-/I-/E-/S-X)
                                         whose types X are the task's (default: the train tags')
     "metrics": [...],                   classification: accuracy, f1 (two labels), mcc;
                                         regression: pearson, spearman; tagging: span_f1
     "max_seq_length": int, "num_train_epochs": number, "learning_rate": number}
                                         this task's defaults of those hparams

Every error is one line naming task.json and the key.
"""

import dataclasses
import os
import re
from typing import Optional, Union

from electra_tf import data_layout
from electra_tf.errors import UserError
from electra_tf.io_utils import read_json

TASK_FILE = "task.json"
TYPES = ("classification", "regression", "tagging")
FORMATS = {"classification": "tsv", "regression": "tsv", "tagging": "conll"}
METRICS = {
    "classification": ("accuracy", "f1", "mcc"),
    "regression": ("pearson", "spearman"),
    "tagging": ("span_f1",),
}
DEFAULT_METRICS = {
    "classification": ("accuracy",),
    "regression": ("pearson", "spearman"),
    "tagging": ("span_f1",),
}
KEYS = (
    "type",
    "format",
    "header",
    "text_a",
    "text_b",
    "label",
    "labels",
    "metrics",
    "max_seq_length",
    "num_train_epochs",
    "learning_rate",
)
NAME = re.compile(r"^[A-Za-z0-9_]+$")  # a task name is part of feature and signature names
Column = Union[int, str]


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """A checked task.json (see the module docstring); `path` is the file."""

    path: str
    type: str
    format: str
    header: bool
    text_a: Column
    text_b: Optional[Column]
    label: Column
    labels: Optional[tuple[str, ...]]
    metrics: tuple[str, ...]
    max_seq_length: Optional[int]
    num_train_epochs: Optional[float]
    learning_rate: Optional[float]

    def error(self, key: str, message: str) -> UserError:
        return UserError(f"{self.path}: {key}: {message}")


def _number(path: str, d: dict, key: str, kind: type, positive: bool = True):
    value = d.get(key)
    if value is None:
        return None
    ok = isinstance(value, (int, float) if kind is float else int) and not isinstance(value, bool)
    if not ok or (positive and value <= 0):
        what = "a positive integer" if kind is int else "a positive number"
        raise UserError(f"{path}: {key}: expected {what}, got {value!r}")
    return kind(value)


def _column(path: str, d: dict, key: str, header: bool, default=None) -> Optional[Column]:
    value = d.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)) or value == "":
        raise UserError(f"{path}: {key}: expected a column name or index, got {value!r}")
    if isinstance(value, str) and not header:
        raise UserError(f'{path}: {key}: column name {value!r} needs "header": true')
    return value


def read_spec(path: str, name: str) -> TaskSpec:
    """Reads and checks `path` (DATA_DIR/finetuning_data/NAME/task.json)."""
    d = read_json(path)
    if not isinstance(d, dict):
        raise UserError(f"{path}: not a JSON object")
    if not NAME.match(name):
        raise UserError(f"{path}: task name {name!r}: only letters, digits and _ (its directory)")
    unknown = sorted(set(d) - set(KEYS))
    if unknown:
        raise UserError(f"{path}: unknown key(s) {', '.join(unknown)}; valid: {', '.join(KEYS)}")
    kind = d.get("type")
    if kind not in TYPES:
        raise UserError(f"{path}: type: expected one of {', '.join(TYPES)}, got {kind!r}")
    fmt = d.get("format", FORMATS[kind])
    if fmt != FORMATS[kind]:
        raise UserError(f"{path}: format: a {kind} task reads {FORMATS[kind]!r}, got {fmt!r}")
    header = d.get("header", False)
    if not isinstance(header, bool) or (header and fmt == "conll"):
        raise UserError(f"{path}: header: expected true or false (tsv only), got {header!r}")
    if fmt == "conll":
        text_a, label = _column(path, d, "text_a", False, 0), _column(path, d, "label", False, -1)
        if d.get("text_b") is not None:
            raise UserError(f"{path}: text_b: a conll task has one text column")
        text_b = None
    else:
        for key in ("text_a", "label"):
            if d.get(key) is None:
                raise UserError(f"{path}: {key}: required for a {kind} task")
        text_a, label = _column(path, d, "text_a", header), _column(path, d, "label", header)
        text_b = _column(path, d, "text_b", header)
    labels = d.get("labels")
    if labels is not None:
        if kind == "regression":
            raise UserError(f"{path}: labels: a regression task has no label list")
        ok = isinstance(labels, list) and labels
        ok = ok and all(isinstance(x, (str, int)) and not isinstance(x, bool) for x in labels)
        if not ok or len({str(x) for x in labels}) != len(labels):
            raise UserError(f"{path}: labels: expected a list of distinct strings, got {labels!r}")
        labels = tuple(str(x) for x in labels)
    metrics = d.get("metrics", list(DEFAULT_METRICS[kind]))
    if not isinstance(metrics, list) or not metrics:
        raise UserError(f"{path}: metrics: expected a non-empty list, got {metrics!r}")
    for m in metrics:
        if m not in METRICS[kind]:
            known = {x for ms in METRICS.values() for x in ms}
            why = "unknown metric" if m not in known else f"not a metric of {kind} tasks"
            raise UserError(
                f"{path}: metrics: {why} {m!r} (a {kind} task has {', '.join(METRICS[kind])})"
            )
    return TaskSpec(
        path=path,
        type=kind,
        format=fmt,
        header=header,
        text_a=text_a,
        text_b=text_b,
        label=label,
        labels=labels,
        metrics=tuple(dict.fromkeys(metrics)),
        max_seq_length=_number(path, d, "max_seq_length", int),
        num_train_epochs=_number(path, d, "num_train_epochs", float),
        learning_rate=_number(path, d, "learning_rate", float),
    )


def spec_path(data_dir: str, name: str) -> str:
    return os.path.join(data_layout.finetuning_data_dir(data_dir, name), TASK_FILE)
