"""The QA dev scorer: decodes the head's beams into answers (`metrics.decode_predictions`),
gives `<task>_<split>_predictions.json` (question id -> answer text) and, for SQuAD 2.0,
`<task>_<split>_null_odds.json` (written with the results, once every trial has finished), and
scores with the official scripts' reimplementation:
`exact_match, f1` (v1.1 / MRQA) or `exact, f1, total, HasAns_*, NoAns_*, best_*` (v2.0, with
`na_prob_thresh = qa_na_threshold`).
"""

from typing import Any

import numpy as np

from electra_tf.finetune.qa import metrics as qa_metrics
from electra_tf.finetune.qa import reader as qa_reader
from electra_tf.finetune.scorers import Scorer
from electra_tf.finetune.task import split_path


class QAScorer(Scorer):
    """Decodes the head's outputs to answers, gives the prediction files, scores officially."""

    def __init__(self, task: Any, split: str, examples: list[qa_reader.QAExample]):
        super().__init__()
        self.task = task
        self.split = split
        self.examples = examples
        self._decoded: tuple[dict[str, str], dict[str, float]] | None = None

    def _results(self) -> dict[int, dict[str, np.ndarray]]:
        keys = ["start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index"]
        keys += ["answerable_logit", "start_logits", "end_logits"]
        eids = self._get("eid").astype(np.int64)
        cols = {k: self._get(k) for k in keys if k in self._rows}
        return {int(e): {k: v[i] for k, v in cols.items()} for i, e in enumerate(eids)}

    def update(self, outputs: dict[str, np.ndarray]) -> None:
        super().update(outputs)
        self._decoded = None

    def decode(self) -> tuple[dict[str, str], dict[str, float]]:
        """(question id -> best non-empty answer, question id -> null odds (v2 only))."""
        if self._decoded is None:
            self._decoded = self._decode()
        return self._decoded

    def _decode(self) -> tuple[dict[str, str], dict[str, float]]:
        cfg = self.task.config
        features = self.task.get_features(self.examples, self.split, False)
        results = self._results()
        missing = [f.eid for f in features if f.eid not in results]
        if missing:
            raise ValueError(f"{self.task.name}: no head outputs for {len(missing)} windows")
        preds, null_odds, _ = qa_metrics.decode_predictions(
            self.examples,
            features,
            results,
            v2=self.task.v2,
            n_best_size=cfg.n_best_size,
            max_answer_length=cfg.max_answer_length,
            do_lower_case=cfg.do_lower_case,
            answerable_classifier=cfg.answerable_classifier,
        )
        return preds, null_odds

    def prediction_files(self) -> dict[str, Any]:
        """The official scripts' files, by kind: `predictions` (question id -> answer) and, for
        SQuAD 2.0, `null_odds` (`<task>_<split>_<kind>.json`: `RunDirectory.predictions_name`)."""
        preds, null_odds = self.decode()
        files: dict[str, Any] = {"predictions": preds}
        if self.task.v2:
            files["null_odds"] = null_odds
        return files

    def get_results(self) -> dict[str, float]:
        preds, null_odds = self.decode()
        name, cfg = self.task.name, self.task.config
        path = split_path(cfg, name, self.task.split_file(self.split))
        if self.task.mrqa:
            answers = {}
            for _, paragraph in qa_reader.load_mrqa_jsonl(path):
                for qa in paragraph["qas"]:
                    answers[qa["qid"]] = qa.get("answers", [])
            results = qa_metrics.mrqa_evaluate(answers, preds, skip_no_answer=True)
        elif self.task.v2:
            results = qa_metrics.squad_v2_evaluate(
                qa_reader.load_squad_json(path), preds, null_odds, cfg.qa_na_threshold
            )
        else:
            results = qa_metrics.squad_v1_evaluate(qa_reader.load_squad_json(path), preds)
        results["loss"] = self._loss()
        return results

    def predictions(self) -> list[tuple[Any, str]]:
        """(question id, answer) pairs; SQuAD 2.0 answers "" where null odds > qa_na_threshold."""
        preds, null_odds = self.decode()
        thresh = self.task.config.qa_na_threshold
        return [
            (qid, "" if self.task.v2 and null_odds[qid] > thresh else text)
            for qid, text in preds.items()
        ]
