"""The GLUE scorers: accuracy (+ MCC, F1) for classification, correlations for regression."""

from collections.abc import Sequence
from typing import Any

import numpy as np

from electra_tf.finetune.scorers import (
    Scorer,
    accuracy,
    binary_f1,
    matthews_corrcoef,
    pearson,
    spearman,
)


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
