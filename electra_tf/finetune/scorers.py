"""The metrics the task kinds share, as the original's `classification_metrics.py`, in plain
numpy (no scipy / sklearn dependency), and the `Scorer` base class.

Every metric except `loss` and `mse` is reported ×100, as the original. A scorer accumulates the
head's outputs batch by batch (`update`), then gives its metrics (`get_results`) and one prediction
string per example (`predictions`, sorted by example id) for `TASK_SPLIT_predictions.tsv`. The
kinds' scorers: `classification/scorer.py`, `tagging/scorer.py`, `qa/scorer.py`.
"""

from collections.abc import Sequence
from typing import Any, Optional

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
        n = sum(len(r) for r in self._rows.get("loss", []))
        return float(np.mean(self._get("loss"))) if n else 0.0

    def get_results(self) -> dict[str, float]:
        raise NotImplementedError

    def predictions(self) -> list[tuple[Any, str]]:
        raise NotImplementedError

    def prediction_files(self) -> dict[str, Any]:
        """JSON files beside the `id<TAB>prediction` TSV, by kind (`RunDirectory.predictions_name`
        names them), written into the results directory with the results; none by default."""
        return {}

    def label_counts(self) -> Optional[dict[str, dict[str, int]]]:
        """Gold and predicted label counts, for the kinds that predict labels (else None)."""
        return None


def majority_class_accuracy(gold_counts: dict[str, int]) -> tuple[str, float]:
    """(the most frequent gold label, ×100 the accuracy of always answering it)."""
    label = max(gold_counts, key=lambda k: gold_counts[k])
    total = sum(gold_counts.values())
    return label, 100.0 * gold_counts[label] / total if total else 0.0
