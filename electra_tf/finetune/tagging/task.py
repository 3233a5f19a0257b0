"""Sequence tagging: `chunk` (CoNLL-2000) and `ner` (CoNLL-2003), as the original's
`finetune/tagging/tagging_tasks.py`.

Files are `DATA_DIR/finetuning_data/<task>/{train,dev,test}.txt`: one word per line, the word in
the first whitespace-separated column and its tag in the last; a blank line ends a sentence and
`-DOCSTART-` lines are skipped. The example id is the 0-based sentence index in its file.

Tags may be BIO (IOB2), IOB1 or BIOES: they are converted to spans and re-encoded as BIOES for
training; the label set is every BIOES tag of the task's files, sorted. Each word is labelled on
its first sub-token. Scoring is span-level precision / recall / F1 (exact start, end and type).

Kept from the original: `segment_ids` are 1 for every real token; `chunk` is always lower-cased
(with accents stripped) whatever `do_lower_case` says. `ner` respects `do_lower_case` instead:
capitalisation is the strongest cue for named entities, and forcing lower case would throw away
the information a cased vocabulary was trained to use (the original had no NER task).
Head: `head.py`; span scoring: `scorer.py`; SavedModel signatures: `serving.py`.
Changed: a word is kept only if all its sub-tokens fit (the original's truncation test counts
words, not sub-tokens, and can overflow `max_seq_length`); a word with no sub-tokens (e.g. only
control characters) becomes [UNK] so that it keeps a position of its own.
"""

import dataclasses
import os
from typing import Any, Optional

import keras
import numpy as np

from electra_tf import packing, vocab
from electra_tf.errors import UserError
from electra_tf.finetune.scorers import Scorer
from electra_tf.finetune.serving import ServingContext, ServingFunction
from electra_tf.finetune.tagging import serving
from electra_tf.finetune.tagging.head import TaggingHead
from electra_tf.finetune.tagging.scorer import SpanF1Scorer, get_span_labels, get_tags
from electra_tf.finetune.task import FeatureSpec, Task, make_tokenizer, read_lines, split_path

TAG_PREFIXES = ("B", "I", "E", "S")


@dataclasses.dataclass
class TaggingExample:
    eid: int
    task_name: str
    words: list[str]
    tags: list[str]  # as in the file


def read_conll(
    path: str, task_name: str, word_column: int = 0, tag_column: int = -1
) -> list[TaggingExample]:
    """CoNLL columns -> sentences (the word and the tag in the given whitespace-separated
    columns: the first and the last by default); errors name the file and line."""
    need = max(2, *(c + 1 if c >= 0 else -c for c in (word_column, tag_column)))
    examples: list[TaggingExample] = []
    words: list[str] = []
    tags: list[str] = []
    for i, line in enumerate(read_lines(path) + [""]):
        fields = line.split()
        if not fields:
            if words:
                examples.append(TaggingExample(len(examples), task_name, words, tags))
                words, tags = [], []
            continue
        if fields[0] == "-DOCSTART-":
            continue
        if len(fields) < need:
            raise UserError(
                f"{path}:{i + 1}: expected a word and a tag (whitespace-separated"
                + (f", {need} columns" if need > 2 else "")
                + f"), found {len(fields)} column"
            )
        tag = fields[tag_column]
        if tag != "O" and (tag.split("-", 1)[0] not in TAG_PREFIXES or "-" not in tag):
            raise UserError(
                f"{path}:{i + 1}: unknown tag {tag!r} (expected O or B-/I-/E-/S-<type>)"
            )
        words.append(fields[word_column])
        tags.append(tag)
    if not examples:
        raise UserError(f"{path}: no sentences")
    return examples


def to_bioes(tags: list[str]) -> list[str]:
    return get_tags(get_span_labels(tags), len(tags), "BIOES")


class TaggingTask(Task):
    """A span-level tagging task (chunk, ner)."""

    export_kind = "tagging"
    force_lower_case = False

    def __init__(self, config: Any, name: str, tokenizer: Any):
        super().__init__(config, name, tokenizer)
        if self.force_lower_case and not config.do_lower_case:
            # the original's quirk: chunk words are always lower-cased and accent-stripped
            self.tokenizer = make_tokenizer(config.vocab_file, do_lower_case=True)
        self._examples: dict[str, list[TaggingExample]] = {}
        self._label_list: list[str] = []

    def get_examples(self, split: str) -> list[TaggingExample]:
        if split not in self._examples:
            path = split_path(self.config, self.name, split + ".txt")
            self._examples[split] = read_conll(path, self.name)
        return self._examples[split]

    def test_splits(self) -> list[str]:
        return []  # as the original: test outputs are written for GLUE (and SQuAD) only

    @property
    def label_list(self) -> list[str]:
        """Every BIOES tag in the task's train / dev / test files, sorted (as the original)."""
        if not self._label_list:
            tags = set()
            for split in ("train", "dev", "test"):
                path = os.path.join(self.config.raw_data_dir(self.name), split + ".txt")
                if split in self._examples or os.path.exists(path):
                    for e in self.get_examples(split):
                        tags.update(to_bioes(e.tags))
            self._label_list = sorted(tags) or ["O"]
        return self._label_list

    def feature_spec(self) -> FeatureSpec:
        n = self.config.max_seq_length
        return {
            f"{self.name}_eid": ((), np.int32),
            f"{self.name}_labels": ((n,), np.int32),
            f"{self.name}_labels_mask": ((n,), np.float32),
            f"{self.name}_labeled_positions": ((n,), np.int32),
        }

    def featurize(
        self, examples: list[TaggingExample], split: str, is_training: bool
    ) -> dict[str, np.ndarray]:
        max_len = self.config.max_seq_length
        keys = ("cls", "sep", "unk")
        ids = vocab.special_token_ids(self.tokenizer.vocab, str(self.config.vocab_file), keys)
        label_index = {t: i for i, t in enumerate(self.label_list)}
        flat = [w for e in examples for w in e.words]
        flat_ids = self.tokenizer.tokenize_to_ids(flat) if flat else []
        n = len(examples)
        out = {
            "input_ids": np.zeros([n, max_len], np.int32),
            "input_mask": np.zeros([n, max_len], np.int32),
            "segment_ids": np.zeros([n, max_len], np.int32),
            f"{self.name}_eid": np.array([e.eid for e in examples], np.int32),
            f"{self.name}_labels": np.zeros([n, max_len], np.int32),
            f"{self.name}_labels_mask": np.zeros([n, max_len], np.float32),
            f"{self.name}_labeled_positions": np.zeros([n, max_len], np.int32),
        }
        k = 0
        for row, e in enumerate(examples):
            word_ids = [list(w) or [ids["unk"]] for w in flat_ids[k : k + len(e.words)]]
            k += len(e.words)
            labels = [label_index[t] for t in to_bioes(e.tags)]
            kept, positions = [], []
            for toks in word_ids:
                if len(kept) + len(toks) + 2 > max_len:  # only whole words, with [CLS] and [SEP]
                    break
                positions.append(len(kept) + 1)
                kept.extend(toks)
            packed, _ = packing.pack([kept], ids["cls"], ids["sep"])
            m = len(positions)
            out["input_ids"][row, : len(packed)] = packed
            out["input_mask"][row, : len(packed)] = 1
            out["segment_ids"][row, : len(packed)] = 1  # the original's quirk: all 1
            out[f"{self.name}_labels"][row, :m] = labels[:m]
            out[f"{self.name}_labels_mask"][row, :m] = 1.0
            out[f"{self.name}_labeled_positions"][row, :m] = positions
        return out

    def make_head(self) -> keras.layers.Layer:
        return TaggingHead(self.name, len(self.label_list), name=self.name)

    def make_scorer(self, split: str, examples: list[Any]) -> Scorer:
        return SpanF1Scorer(self.label_list, {e.eid: e.tags for e in examples})

    def check_rebuildable(self) -> None:
        train = os.path.join(self.config.raw_data_dir(self.name), "train.txt")
        if not os.path.exists(train):
            raise UserError(
                f"{train}: tagging task {self.name} reads its tag list from its data "
                "files (the checkpoint does not store it); pass --data_dir"
            )

    def export_labels(self) -> Optional[list[str]]:
        return list(self.label_list)

    def serving_functions(
        self, head: keras.layers.Layer, context: ServingContext
    ) -> list[ServingFunction]:
        lower = bool(self.config.do_lower_case) or self.force_lower_case
        return serving.serving_functions(head, context.tokenizer(lower), context, self.label_list)


class Chunking(TaggingTask):
    force_lower_case = True


class NER(TaggingTask):
    force_lower_case = False


# name -> task class, merged into `electra_tf.finetune.registry.TASKS`
TASKS = {"chunk": Chunking, "ner": NER}
