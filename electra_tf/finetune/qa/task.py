"""Question-answering tasks: SQuAD 2.0 (`squad`), SQuAD 1.1 (`squadv1`) and the MRQA 2019 sets
(`newsqa`, `naturalqs`, `triviaqa`, `searchqa`), as the original's `finetune/qa/qa_tasks.py`.

Data: `DATA_DIR/finetuning_data/<task>/{train,dev}.json` (official SQuAD JSON; `-debug` suffix
in debug mode) or `{train,dev}.jsonl` (MRQA), read by `reader.py`. Features are the windows
of `features.py`; the head is `head.QAHead`; the dev scorer (`scorer.py`) decodes answers and
scores them officially (`metrics.py`); the SavedModel signatures are in `serving.py`.
"""

from typing import Any

import keras
import numpy as np

from electra_tf.errors import UserError
from electra_tf.finetune.qa import features as qa_features
from electra_tf.finetune.qa import reader as qa_reader
from electra_tf.finetune.qa import serving
from electra_tf.finetune.qa.head import QAHead
from electra_tf.finetune.qa.scorer import QAScorer
from electra_tf.finetune.scorers import Scorer
from electra_tf.finetune.serving import ServingContext, ServingFunction
from electra_tf.finetune.task import FeatureSpec, Task, split_path


class QATask(Task):
    """A span-extraction QA task (SQuAD or MRQA layout); alone in a run, its defaults are 2
    epochs and windows of 512 tokens (`finetune.defaults`)."""

    export_kind = "qa"

    def __init__(
        self,
        config: Any,
        name: str,
        tokenizer: Any,
        v2: bool = False,
        mrqa: bool = False,
    ):
        super().__init__(config, name, tokenizer)
        self.v2 = v2
        self.mrqa = mrqa
        self._examples: dict[str, list[qa_reader.QAExample]] = {}
        self._features: dict[tuple[str, bool], list[qa_features.QAFeature]] = {}
        if config.beam_size > config.max_seq_length:
            raise UserError(
                f"beam_size {config.beam_size} exceeds max_seq_length {config.max_seq_length}"
            )

    def split_file(self, split: str) -> str:
        if self.mrqa:
            return split + ".jsonl"
        return split + ("-debug" if self.config.debug else "") + ".json"

    def get_examples(self, split: str) -> list[qa_reader.QAExample]:
        if split not in self._examples:
            path = split_path(self.config, self.name, self.split_file(split))
            if self.mrqa:
                examples = qa_reader.read_mrqa_examples(path, split, self.name)
            else:
                examples = qa_reader.read_squad_examples(path, split, self.name, self.v2)
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
        self, examples: list[qa_reader.QAExample], split: str, is_training: bool
    ) -> list[qa_features.QAFeature]:
        key = (split, is_training)
        if key not in self._features:
            self._features[key] = qa_features.featurize_examples(
                examples,
                self.tokenizer,
                is_training,
                max_seq_length=self.config.max_seq_length,
                max_query_length=self.config.max_query_length,
                doc_stride=self.config.doc_stride,
            )
        return self._features[key]

    def featurize(
        self, examples: list[qa_reader.QAExample], split: str, is_training: bool
    ) -> dict[str, np.ndarray]:
        arrays = qa_features.features_to_arrays(self.get_features(examples, split, is_training))
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

    def serving_functions(
        self, head: keras.layers.Layer, context: ServingContext
    ) -> list[ServingFunction]:
        c = self.config
        return serving.serving_functions(
            head,
            context.tokenizer(bool(c.do_lower_case)),
            context,
            max_query=int(c.max_query_length),
            max_answer=int(c.max_answer_length),
            threshold=float(c.qa_na_threshold),
            v2=self.v2,
        )


class SQuAD(QATask):
    def __init__(self, config: Any, name: str = "squad", tokenizer: Any = None):
        super().__init__(config, name, tokenizer, v2=True)


class SQuADv1(QATask):
    def __init__(self, config: Any, name: str = "squadv1", tokenizer: Any = None):
        super().__init__(config, name, tokenizer)


class NewsQA(QATask):
    def __init__(self, config: Any, name: str = "newsqa", tokenizer: Any = None):
        super().__init__(config, name, tokenizer, mrqa=True)


class NaturalQuestions(QATask):
    # its run defaults are the GLUE ones, as the original's (`finetune.defaults`)
    def __init__(self, config: Any, name: str = "naturalqs", tokenizer: Any = None):
        super().__init__(config, name, tokenizer, mrqa=True)


class TriviaQA(QATask):
    def __init__(self, config: Any, name: str = "triviaqa", tokenizer: Any = None):
        super().__init__(config, name, tokenizer, mrqa=True)


class SearchQA(QATask):
    def __init__(self, config: Any, name: str = "searchqa", tokenizer: Any = None):
        super().__init__(config, name, tokenizer, mrqa=True)


# name -> task class, merged into `electra_tf.finetune.registry.TASKS`
TASKS = {
    "squad": SQuAD,
    "squadv1": SQuADv1,
    "newsqa": NewsQA,
    "naturalqs": NaturalQuestions,
    "triviaqa": TriviaQA,
    "searchqa": SearchQA,
}
