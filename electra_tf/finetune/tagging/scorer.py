"""Span-level scoring of tagging, as the original's `tagging_metrics.py` and `tagging_utils.py`:
tags -> spans (BIO, IOB1 or BIOES), spans -> tags, and precision / recall / F1 over exact spans."""

from collections.abc import Sequence
from typing import Any

from electra_tf.finetune.scorers import Scorer


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
