"""Question-answering tasks: SQuAD 2.0 (`squad`), SQuAD 1.1 (`squadv1`) and the MRQA 2019 sets
(`newsqa`, `naturalqs`, `triviaqa`, `searchqa`), as the original's `finetune/qa/qa_tasks.py`.

Data: `DATA_DIR/finetuning_data/<task>/{train,dev}.json` (official SQuAD JSON; `-debug` suffix
in debug mode) or `{train,dev}.jsonl` (MRQA). Features are the windows of `qa_data`; the head is
`qa_head.QAHead`; the dev scorer decodes answers (`qa_metrics.decode_predictions`), writes
`<results>/<task>_<split>_predictions.json` (question id -> answer text) and, for SQuAD 2.0,
`<task>_<split>_null_odds.json`, and scores with the official script's reimplementation:
`exact_match, f1` (v1.1 / MRQA) or `exact, f1, total, HasAns_*, NoAns_*, best_*` (v2.0, with
`na_prob_thresh = qa_na_threshold`).
"""

import json
import os
from typing import Any

import keras
import numpy as np

from electra_tf.errors import UserError
from electra_tf.finetune import qa_data, qa_metrics
from electra_tf.finetune.config import FinetuningConfig
from electra_tf.finetune.qa_head import QAHead
from electra_tf.finetune.scorers import Scorer
from electra_tf.finetune.task import FeatureSpec, Task, split_path


class QATask(Task):
    """A span-extraction QA task (SQuAD or MRQA layout)."""

    def __init__(
        self, config: FinetuningConfig, name: str, tokenizer: Any, v2: bool = False, mrqa=False
    ):
        super().__init__(config, name, tokenizer)
        self.v2 = v2
        self.mrqa = mrqa
        self._examples: dict[str, list[qa_data.QAExample]] = {}
        self._features: dict[tuple[str, bool], list[qa_data.QAFeature]] = {}
        if config.beam_size > config.max_seq_length:
            raise UserError(
                f"beam_size {config.beam_size} exceeds max_seq_length {config.max_seq_length}"
            )

    def split_file(self, split: str) -> str:
        if self.mrqa:
            return split + ".jsonl"
        return split + ("-debug" if self.config.debug else "") + ".json"

    def get_examples(self, split: str) -> list[qa_data.QAExample]:
        if split not in self._examples:
            path = split_path(self.config, self.name, self.split_file(split))
            if self.mrqa:
                examples = qa_data.read_mrqa_examples(path, split, self.name)
            else:
                examples = qa_data.read_squad_examples(path, split, self.name, self.v2)
            if not examples:
                raise UserError(f"{path}: no usable questions")
            self._examples[split] = examples
        return self._examples[split]

    def dev_splits(self) -> list[str]:
        return ["dev"]

    def test_splits(self) -> list[str]:
        return ["test"] if self.name == "squad" else []

    def feature_spec(self) -> FeatureSpec:
        return {
            f"{self.name}_eid": ((), np.int32),
            f"{self.name}_start_positions": ((), np.int32),
            f"{self.name}_end_positions": ((), np.int32),
            f"{self.name}_is_impossible": ((), np.int32),
        }

    def get_features(
        self, examples: list[qa_data.QAExample], split: str, is_training: bool
    ) -> list[qa_data.QAFeature]:
        key = (split, is_training)
        if key not in self._features:
            self._features[key] = qa_data.featurize_examples(
                examples,
                self.tokenizer,
                is_training,
                max_seq_length=self.config.max_seq_length,
                max_query_length=self.config.max_query_length,
                doc_stride=self.config.doc_stride,
            )
        return self._features[key]

    def featurize(
        self, examples: list[qa_data.QAExample], split: str, is_training: bool
    ) -> dict[str, np.ndarray]:
        arrays = qa_data.features_to_arrays(self.get_features(examples, split, is_training))
        out = {k: arrays[k] for k in ("input_ids", "input_mask", "segment_ids")}
        out[f"{self.name}_eid"] = arrays["eid"].astype(np.int32)
        for k in ("start_positions", "end_positions", "is_impossible"):
            out[f"{self.name}_{k}"] = arrays[k]
        return out

    def make_head(self) -> keras.layers.Layer:
        return QAHead(
            self.name,
            beam_size=self.config.beam_size,
            joint_prediction=self.config.joint_prediction,
            answerable_classifier=self.config.answerable_classifier,
            answerable_uses_start_logits=self.config.answerable_uses_start_logits,
            answerable_weight=self.config.answerable_weight,
            name=self.name,
        )

    def make_scorer(self, split: str, examples: list[Any]) -> Scorer:
        return QAScorer(self, split, examples)


class QAScorer(Scorer):
    """Decodes the head's outputs to answers, writes the prediction files, scores officially."""

    def __init__(self, task: QATask, split: str, examples: list[qa_data.QAExample]):
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

    def write_predictions(self) -> tuple[dict[str, str], dict[str, float]]:
        preds, null_odds = self.decode()
        out_dir = self.task.config.results_dir
        os.makedirs(out_dir, exist_ok=True)
        prefix = os.path.join(out_dir, f"{self.task.name}_{self.split}")
        _write_json(preds, prefix + "_predictions.json")
        if self.task.v2:
            _write_json(null_odds, prefix + "_null_odds.json")
        return preds, null_odds

    def get_results(self) -> dict[str, float]:
        preds, null_odds = self.write_predictions()
        name, cfg = self.task.name, self.task.config
        path = split_path(cfg, name, self.task.split_file(self.split))
        if self.task.mrqa:
            answers = {}
            for _, paragraph in qa_data.load_mrqa_jsonl(path):
                for qa in paragraph["qas"]:
                    answers[qa["qid"]] = qa.get("answers", [])
            results = qa_metrics.mrqa_evaluate(answers, preds, skip_no_answer=True)
        elif self.task.v2:
            results = qa_metrics.squad_v2_evaluate(
                qa_data.load_squad_json(path), preds, null_odds, cfg.qa_na_threshold
            )
        else:
            results = qa_metrics.squad_v1_evaluate(qa_data.load_squad_json(path), preds)
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


def _write_json(obj: dict[str, Any], path: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=1)
    os.replace(tmp, path)


class SQuAD(QATask):
    def __init__(self, config: FinetuningConfig, name: str = "squad", tokenizer: Any = None):
        super().__init__(config, name, tokenizer, v2=True)


class SQuADv1(QATask):
    def __init__(self, config: FinetuningConfig, name: str = "squadv1", tokenizer: Any = None):
        super().__init__(config, name, tokenizer)


class NewsQA(QATask):
    def __init__(self, config: FinetuningConfig, name: str = "newsqa", tokenizer: Any = None):
        super().__init__(config, name, tokenizer, mrqa=True)


class NaturalQuestions(QATask):
    def __init__(self, config: FinetuningConfig, name: str = "naturalqs", tokenizer: Any = None):
        super().__init__(config, name, tokenizer, mrqa=True)


class TriviaQA(QATask):
    def __init__(self, config: FinetuningConfig, name: str = "triviaqa", tokenizer: Any = None):
        super().__init__(config, name, tokenizer, mrqa=True)


class SearchQA(QATask):
    def __init__(self, config: FinetuningConfig, name: str = "searchqa", tokenizer: Any = None):
        super().__init__(config, name, tokenizer, mrqa=True)


# name -> factory `(config, name, tokenizer)`, merged into `electra_tf.finetune.tasks.TASKS`
QA_TASKS = {
    "squad": SQuAD,
    "squadv1": SQuADv1,
    "newsqa": NewsQA,
    "naturalqs": NaturalQuestions,
    "triviaqa": TriviaQA,
    "searchqa": SearchQA,
}
