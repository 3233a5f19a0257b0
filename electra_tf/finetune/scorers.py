"""Metrics and scorers for fine-tuning, as the original's `classification_metrics.py` and
`tagging_metrics.py`, in plain numpy (no scipy / sklearn dependency).

Every metric except `loss` and `mse` is reported ×100, as the original. A scorer accumulates the
head's outputs batch by batch (`update`), then gives its metrics (`get_results`) and one prediction
string per example (`predictions`, sorted by example id) for `TASK_SPLIT_predictions.tsv`.
"""

from collections.abc import Sequence
from typing import Any

import numpy as np


def accuracy(labels: Sequence[int], preds: Sequence[int]) -> float:
    labels, preds = np.asarray(labels), np.asarray(preds)
    return float(np.mean(labels == preds)) if len(labels) else 0.0


def matthews_corrcoef(labels: Sequence[int], preds: Sequence[int]) -> float:
    """Multi-class MCC (Gorodkin's R_K, as sklearn); 0 when a marginal is constant."""
    labels, preds = np.asarray(labels), np.asarray(preds)
    classes = np.union1d(labels, preds)
    index = {c: i for i, c in enumerate(classes)}
    cm = np.zeros((len(classes), len(classes)), dtype=np.float64)
    for t, p in zip(labels, preds):
        cm[index[t], index[p]] += 1
    t_sum, p_sum = cm.sum(axis=1), cm.sum(axis=0)
    n_correct, n = np.trace(cm), cm.sum()
    cov_ytyp = n_correct * n - np.dot(t_sum, p_sum)
    cov_ypyp = n * n - np.dot(p_sum, p_sum)
    cov_ytyt = n * n - np.dot(t_sum, t_sum)
    if cov_ypyp * cov_ytyt == 0:
        return 0.0
    return float(cov_ytyp / np.sqrt(cov_ytyt * cov_ypyp))


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    dx, dy = x - x.mean(), y - y.mean()
    denom = np.sqrt(np.sum(dx * dx) * np.sum(dy * dy))
    return float(np.sum(dx * dy) / denom) if denom > 0 else 0.0


def average_ranks(x: Sequence[float]) -> np.ndarray:
    """1-based ranks; tied values share the average of their ranks (scipy's `rankdata`)."""
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=np.float64)
    sorted_x = x[order]
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and sorted_x[j + 1] == sorted_x[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson correlation of the average ranks (scipy's `spearmanr`)."""
    return pearson(average_ranks(x), average_ranks(y))


def binary_f1(labels: Sequence[int], preds: Sequence[int], positive: int = 1) -> float:
    labels, preds = np.asarray(labels), np.asarray(preds)
    tp = float(np.sum((preds == positive) & (labels == positive)))
    fp = float(np.sum((preds == positive) & (labels != positive)))
    fn = float(np.sum((preds != positive) & (labels == positive)))
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def get_span_labels(tags: Sequence[str]) -> list[tuple[int, int, str]]:
    """Token tags (BIO, IOB1 or BIOES) -> spans `(start, end_inclusive, type)`.

    The original's `tagging_utils.get_span_labels`: a span starts at B-/S- or at any tag after O,
    and ends before B-/S-/O. (As the original, I-Y right after I-X continues the X span.)
    """
    spans = []
    last, start = "O", -1
    for i, tag in enumerate(tags):
        pos = None if tag == "O" else tag.split("-", 1)[0]
        if (pos in ("S", "B") or tag == "O") and last != "O":
            spans.append((start, i - 1, last.split("-", 1)[-1]))
        if pos in ("B", "S") or last == "O":
            start = i
        last = tag
    if tags and tags[-1] != "O":
        spans.append((start, len(tags) - 1, tags[-1].split("-", 1)[-1]))
    return spans


def get_tags(spans: Sequence[tuple[int, int, str]], length: int, encoding: str) -> list[str]:
    """Spans -> token tags in `encoding` ("BIOES", "BIO", ...), as the original's `get_tags`."""
    tags = ["O"] * length
    for s, e, kind in spans:
        for i in range(s, e + 1):
            tags[i] = "I-" + kind
        if "E" in encoding:
            tags[e] = "E-" + kind
        if "B" in encoding:
            tags[s] = "B-" + kind
        if "S" in encoding and s == e:
            tags[s] = "S-" + kind
    return tags


def span_prf(
    gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]
) -> tuple[float, float, float]:
    """Span-level (precision, recall, F1) in [0, 1] over sentences of tags (exact span + type)."""
    n_correct = n_pred = n_gold = 0
    for g, p in zip(gold, pred):
        g_spans, p_spans = set(get_span_labels(g)), set(get_span_labels(p))
        n_correct += len(g_spans & p_spans)
        n_pred += len(p_spans)
        n_gold += len(g_spans)
    precision = n_correct / n_pred if n_pred else 0.0
    recall = n_correct / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


class Scorer:
    """Accumulates a head's outputs (numpy, one row per feature) and scores them."""

    def __init__(self):
        self._rows: dict[str, list[np.ndarray]] = {}

    def update(self, outputs: dict[str, np.ndarray]) -> None:
        for k, v in outputs.items():
            self._rows.setdefault(k, []).append(np.asarray(v))

    def _get(self, key: str) -> np.ndarray:
        return np.concatenate(self._rows[key]) if key in self._rows else np.zeros([0])

    def _loss(self) -> float:
        return float(np.mean(self._get("loss"))) if key_count(self._rows, "loss") else 0.0

    def get_results(self) -> dict[str, float]:
        raise NotImplementedError

    def predictions(self) -> list[tuple[Any, str]]:
        raise NotImplementedError


def key_count(rows: dict[str, list[np.ndarray]], key: str) -> int:
    return sum(len(r) for r in rows.get(key, []))


class ClassificationScorer(Scorer):
    """Accuracy (+ MCC for CoLA, + F1 of label "1" for MRPC / QQP) and the mean loss."""

    def __init__(self, label_list: Sequence[str], metrics: Sequence[str] = ("accuracy",)):
        super().__init__()
        self.label_list = list(label_list)
        self.metrics = list(metrics)

    def get_results(self) -> dict[str, float]:
        labels, preds = self._get("label_ids"), self._get("predictions")
        results = {}
        for m in self.metrics:
            if m == "accuracy":
                results[m] = 100.0 * accuracy(labels, preds)
            elif m == "mcc":
                results[m] = 100.0 * matthews_corrcoef(labels, preds)
            elif m == "f1":
                results[m] = 100.0 * binary_f1(labels, preds, positive=1)
            else:
                raise ValueError(f"unknown metric {m}")
        results["loss"] = self._loss()
        return results

    def predictions(self) -> list[tuple[Any, str]]:
        eids, preds = self._get("eid"), self._get("predictions")
        return sorted((int(e), self.label_list[int(p)]) for e, p in zip(eids, preds))

    def label_counts(self) -> dict[str, dict[str, int]]:
        """How often each label is the gold one and the predicted one (not ×100, not in the
        metrics): on small dev sets, whether the model answers one class for everything."""
        out = {}
        for kind, key in (("gold", "label_ids"), ("predicted", "predictions")):
            ids = self._get(key).astype(np.int64)
            out[kind] = {name: int(np.sum(ids == i)) for i, name in enumerate(self.label_list)}
        return out


def majority_class_accuracy(gold_counts: dict[str, int]) -> tuple[str, float]:
    """(the most frequent gold label, ×100 the accuracy of always answering it)."""
    label = max(gold_counts, key=lambda k: gold_counts[k])
    total = sum(gold_counts.values())
    return label, 100.0 * gold_counts[label] / total if total else 0.0


class RegressionScorer(Scorer):
    """Pearson, Spearman (×100), mse and loss, on the normalised scale (STS label / 5)."""

    def __init__(self, scale: float = 5.0):
        super().__init__()
        self.scale = scale

    def get_results(self) -> dict[str, float]:
        targets, preds = self._get("targets"), self._get("predictions")
        return {
            "pearson": 100.0 * pearson(targets, preds),
            "spearman": 100.0 * spearman(targets, preds),
            "mse": float(np.mean((targets - preds) ** 2)) if len(preds) else 0.0,
            "loss": self._loss(),
        }

    def predictions(self) -> list[tuple[Any, str]]:
        # on the data's own scale (0..5), not the normalised one the model is trained on
        eids, preds = self._get("eid"), self._get("predictions")
        return sorted((int(e), f"{float(p) * self.scale:.6g}") for e, p in zip(eids, preds))


class SpanF1Scorer(Scorer):
    """Span-level precision / recall / F1 (×100) for tagging, scored on the words' tags.

    `gold_tags[eid]` are the sentence's gold tags (any of BIO / IOB1 / BIOES: all become spans);
    the head's per-word predictions are label ids into `label_list` (BIOES tags). Words cut off by
    `max_seq_length` are predicted "O", so they count against recall.
    """

    def __init__(self, label_list: Sequence[str], gold_tags: dict[int, list[str]]):
        super().__init__()
        self.label_list = list(label_list)
        self.gold_tags = gold_tags

    def _pred_tags(self) -> dict[int, list[str]]:
        eids, preds, mask = self._get("eid"), self._get("predictions"), self._get("labels_mask")
        out = {}
        for eid, p, m in zip(eids, preds, mask):
            n_words = len(self.gold_tags[int(eid)])
            tags = [self.label_list[int(x)] for x, keep in zip(p, m) if keep > 0]
            out[int(eid)] = (tags + ["O"] * n_words)[:n_words]
        return out

    def get_results(self) -> dict[str, float]:
        pred = self._pred_tags()
        eids = sorted(pred)
        p, r, f1 = span_prf([self.gold_tags[e] for e in eids], [pred[e] for e in eids])
        return {"precision": 100.0 * p, "recall": 100.0 * r, "f1": 100.0 * f1, "loss": self._loss()}

    def predictions(self) -> list[tuple[Any, str]]:
        # BIOES predictions -> spans -> BIO (IOB2) tags, one per word, space-separated
        return [
            (eid, " ".join(get_tags(get_span_labels(tags), len(tags), "BIO")))
            for eid, tags in sorted(self._pred_tags().items())
        ]
