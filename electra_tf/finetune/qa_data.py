"""Question-answering data: SQuAD / MRQA readers and BERT-style sliding-window featurisation.

Behaviour follows the original `finetune/qa/qa_tasks.py` (itself BERT's `run_squad.py`):
  * the context is split on whitespace (space, tab, CR, LF and U+202F) into "doc tokens", with a
    character -> word map used to project the answer's character offset onto words;
  * training answers whose text cannot be found in the projected words are dropped (counted);
  * the question is truncated to `max_query_length` sub-tokens, the doc tokens are WordPiece'd
    keeping tok <-> orig maps, and the answer span is tightened with `improve_answer_span`;
  * the document is cut into windows of `max_seq_length - len(query) - 3` sub-tokens, each start
    `min(length, doc_stride)` after the previous one, laid out as `[CLS] q [SEP] doc [SEP]`;
  * a window without the answer (and every window of an impossible question) targets [CLS] (0, 0);
  * `eid = 1000 * example_index + doc_span_index`.

Sub-token lookups go through a per-word cache filled with one batched `tokenize_to_ids` call, so
the fast (tensorflow-text) and reference tokenizers give the same features at very different
speeds.
"""

import dataclasses
import json
import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from absl import logging

from electra_tf.errors import UserError

SQUAD_TASKS = ("squad", "squadv1")
MRQA_TASKS = ("newsqa", "naturalqs", "triviaqa", "searchqa")


def is_whitespace(c: str) -> bool:
    """The original's context whitespace: space, \\t, \\r, \\n and U+202F (narrow no-break space)."""
    return c in (" ", "\t", "\r", "\n") or ord(c) == 0x202F


@dataclasses.dataclass
class QAExample:
    """One question over one context; positions are whitespace-word indices (train only)."""

    task_name: str
    eid: int
    qas_id: str | None
    qid: str | None
    question_text: str
    doc_tokens: list[str]
    orig_answer_text: str | None = None
    start_position: int | None = None
    end_position: int | None = None
    is_impossible: bool = False

    @property
    def example_id(self) -> str:
        """The prediction key: `qas_id` for SQuAD, `qid` for MRQA (as the original)."""
        return self.qas_id if "squad" in self.task_name else self.qid


@dataclasses.dataclass
class QAFeature:
    """One window of one example; `tokens`/maps are what decoding needs."""

    eid: int
    example_index: int
    doc_span_index: int
    tokens: list[str]
    token_to_orig_map: dict[int, int]
    token_is_max_context: dict[int, bool]
    input_ids: list[int]
    input_mask: list[int]
    segment_ids: list[int]
    start_position: int = 0
    end_position: int = 0
    is_impossible: bool = False


def split_context(text: str) -> tuple[list[str], list[int]]:
    """Whitespace-splits a context; returns (doc_tokens, char_to_word_offset)."""
    doc_tokens: list[str] = []
    char_to_word_offset: list[int] = []
    prev_is_whitespace = True
    for c in text:
        if is_whitespace(c):
            prev_is_whitespace = True
        else:
            if prev_is_whitespace:
                doc_tokens.append(c)
            else:
                doc_tokens[-1] += c
            prev_is_whitespace = False
        char_to_word_offset.append(len(doc_tokens) - 1)
    return doc_tokens, char_to_word_offset


def _require(record: dict[str, Any], key: str, where: str, kind: type | None = None) -> Any:
    if not isinstance(record, dict):
        raise UserError(f"{where}: expected a JSON object, got {type(record).__name__}")
    if key not in record:
        raise UserError(f"{where}: missing key '{key}'")
    value = record[key]
    if kind is not None and not isinstance(value, kind):
        raise UserError(
            f"{where}: '{key}' must be {kind.__name__ if isinstance(kind, type) else kind}, "
            f"got {type(value).__name__}"
        )
    return value


def add_paragraph_examples(
    examples: list[QAExample],
    failures: list[int],
    paragraph: dict[str, Any],
    split: str,
    task_name: str,
    v2: bool,
    where: str,
) -> None:
    """Appends the examples of one paragraph (SQuAD or MRQA layout) to `examples`."""
    context = _require(paragraph, "context", where, str)
    qas = _require(paragraph, "qas", where, list)
    doc_tokens, char_to_word_offset = split_context(context)
    for qi, qa in enumerate(qas):
        qwhere = f"{where}.qas[{qi}]"
        if not isinstance(qa, dict):
            raise UserError(f"{qwhere}: expected a JSON object, got {type(qa).__name__}")
        qas_id = qa.get("id")
        qid = qa.get("qid")
        if ("squad" in task_name and qas_id is None) or ("squad" not in task_name and qid is None):
            raise UserError(f"{qwhere}: missing key '{'id' if 'squad' in task_name else 'qid'}'")
        question_text = _require(qa, "question", qwhere, str)
        start_position = end_position = None
        orig_answer_text = None
        is_impossible = False
        if split == "train":
            if v2:
                is_impossible = bool(_require(qa, "is_impossible", qwhere))
            if not is_impossible:
                if "detected_answers" in qa:  # MRQA
                    answers = _require(qa, "detected_answers", qwhere, list)
                    if not answers:
                        raise UserError(f"{qwhere}: 'detected_answers' is empty")
                    answer = answers[0]
                    spans = _require(answer, "char_spans", qwhere + ".detected_answers[0]", list)
                    if not spans or not isinstance(spans[0], list) or len(spans[0]) != 2:
                        raise UserError(f"{qwhere}.detected_answers[0]: bad 'char_spans'")
                    answer_offset = spans[0][0]
                else:  # SQuAD
                    answers = _require(qa, "answers", qwhere, list)
                    if not answers:
                        raise UserError(
                            f"{qwhere}: 'answers' is empty for an answerable training question"
                        )
                    answer = answers[0]
                    answer_offset = _require(answer, "answer_start", qwhere + ".answers[0]")
                orig_answer_text = _require(answer, "text", qwhere + ".answers[0]", str)
                if not isinstance(answer_offset, int) or isinstance(answer_offset, bool):
                    raise UserError(f"{qwhere}: the answer's start offset must be an integer")
                answer_length = len(orig_answer_text)
                last = answer_offset + answer_length - 1
                if answer_offset < 0 or last >= len(char_to_word_offset) or answer_length == 0:
                    logging.warning("%s: answer is out of the document; skipped", qwhere)
                    failures[0] += 1
                    continue
                start_position = char_to_word_offset[answer_offset]
                end_position = char_to_word_offset[last]
                actual_text = " ".join(doc_tokens[start_position : end_position + 1]).lower()
                cleaned = " ".join(orig_answer_text.strip().split()).lower()
                if actual_text.find(cleaned) == -1:
                    logging.warning(
                        "%s: could not find answer %r in %r; skipped", qwhere, cleaned, actual_text
                    )
                    failures[0] += 1
                    continue
            else:
                start_position = end_position = -1
                orig_answer_text = ""
        examples.append(
            QAExample(
                task_name=task_name,
                eid=len(examples),
                qas_id=qas_id,
                qid=qid,
                question_text=question_text,
                doc_tokens=doc_tokens,
                orig_answer_text=orig_answer_text,
                start_position=start_position,
                end_position=end_position,
                is_impossible=is_impossible,
            )
        )


def load_squad_json(path: str) -> list[dict[str, Any]]:
    """Reads an official SQuAD JSON file and returns its `data` list (clear errors if malformed)."""
    if not os.path.exists(path):
        raise UserError(f"{path}: file not found")
    with open(path, "r", encoding="utf-8") as f:
        try:
            content = json.load(f)
        except json.JSONDecodeError as e:
            raise UserError(
                f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})"
            ) from None
    if not isinstance(content, dict) or not isinstance(content.get("data"), list):
        raise UserError(f"{path}: expected a SQuAD file, an object with a 'data' list")
    return content["data"]


def read_squad_examples(path: str, split: str, task_name: str, v2: bool) -> list[QAExample]:
    """Examples of an official SQuAD v1.1/v2.0 JSON file."""
    data = load_squad_json(path)
    examples: list[QAExample] = []
    failures = [0]
    for ai, article in enumerate(data):
        paragraphs = _require(article, "paragraphs", f"{path}: data[{ai}]", list)
        for pi, paragraph in enumerate(paragraphs):
            where = f"{path}: data[{ai}].paragraphs[{pi}]"
            add_paragraph_examples(examples, failures, paragraph, split, task_name, v2, where)
    logging.info("%s: %d examples, %d failures", path, len(examples), failures[0])
    return examples


def load_mrqa_jsonl(path: str) -> list[tuple[int, dict[str, Any]]]:
    """(line number, paragraph) for every non-header line of an MRQA .jsonl file."""
    if not os.path.exists(path):
        raise UserError(f"{path}: file not found")
    out = []
    with open(path, "r", encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                paragraph = json.loads(line)
            except json.JSONDecodeError as e:
                raise UserError(
                    f"{path}: line {lineno}: not valid JSON (column {e.colno}: {e.msg})"
                ) from None
            if not isinstance(paragraph, dict):
                raise UserError(f"{path}: line {lineno}: expected a JSON object")
            if "header" in paragraph:
                continue
            out.append((lineno, paragraph))
    return out


def read_mrqa_examples(path: str, split: str, task_name: str) -> list[QAExample]:
    """Examples of an MRQA 2019 .jsonl file (one paragraph per line, header lines skipped)."""
    examples: list[QAExample] = []
    failures = [0]
    for lineno, paragraph in load_mrqa_jsonl(path):
        where = f"{path}: line {lineno}"
        add_paragraph_examples(examples, failures, paragraph, split, task_name, False, where)
    logging.info("%s: %d examples, %d failures", path, len(examples), failures[0])
    return examples


class SubTokenCache:
    """Word -> WordPiece tokens, filled in batches with the tokenizer's `tokenize_to_ids`."""

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer
        self._cache: dict[str, list[str]] = {}

    def prime(self, texts: Iterable[str]) -> None:
        todo = sorted({t for t in texts if t not in self._cache})
        if not todo:
            return
        if hasattr(self.tokenizer, "tokenize_to_ids") and hasattr(
            self.tokenizer, "convert_ids_to_tokens"
        ):
            for text, ids in zip(todo, self.tokenizer.tokenize_to_ids(todo)):
                self._cache[text] = list(self.tokenizer.convert_ids_to_tokens(list(ids)))
        else:
            for text in todo:
                self._cache[text] = list(self.tokenizer.tokenize(text))

    def tokenize(self, text: str) -> list[str]:
        if text not in self._cache:
            self._cache[text] = list(self.tokenizer.tokenize(text))
        return self._cache[text]


def check_is_max_context(doc_spans: Sequence[tuple[int, int]], cur_span_index: int, position: int):
    """BERT's rule: the window where min(left, right) context + 0.01 * length is largest."""
    best_score = None
    best_span_index = None
    for span_index, (start, length) in enumerate(doc_spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score = score
            best_span_index = span_index
    return cur_span_index == best_span_index


def improve_answer_span(
    doc_tokens: Sequence[str],
    input_start: int,
    input_end: int,
    answer_tokens: Sequence[str],
) -> tuple[int, int]:
    """The tightest sub-token span inside [start, end] spelling the tokenized answer, if any."""
    tok_answer_text = " ".join(answer_tokens)
    for new_start in range(input_start, input_end + 1):
        for new_end in range(input_end, new_start - 1, -1):
            if " ".join(doc_tokens[new_start : new_end + 1]) == tok_answer_text:
                return new_start, new_end
    return input_start, input_end


def featurize_example(
    example: QAExample,
    example_index: int,
    tokens_of: SubTokenCache,
    convert_tokens_to_ids: Any,
    is_training: bool,
    max_seq_length: int = 512,
    max_query_length: int = 64,
    doc_stride: int = 128,
) -> list[QAFeature]:
    """All windows of one example (see the module docstring)."""
    query_tokens = tokens_of.tokenize(example.question_text)[:max_query_length]
    tok_to_orig_index: list[int] = []
    orig_to_tok_index: list[int] = []
    all_doc_tokens: list[str] = []
    for i, token in enumerate(example.doc_tokens):
        orig_to_tok_index.append(len(all_doc_tokens))
        for sub_token in tokens_of.tokenize(token):
            tok_to_orig_index.append(i)
            all_doc_tokens.append(sub_token)

    tok_start = tok_end = None
    if is_training and example.is_impossible:
        tok_start = tok_end = -1
    if is_training and not example.is_impossible:
        tok_start = orig_to_tok_index[example.start_position]
        if example.end_position < len(example.doc_tokens) - 1:
            tok_end = orig_to_tok_index[example.end_position + 1] - 1
        else:
            tok_end = len(all_doc_tokens) - 1
        tok_start, tok_end = improve_answer_span(
            all_doc_tokens, tok_start, tok_end, tokens_of.tokenize(example.orig_answer_text)
        )

    max_tokens_for_doc = max_seq_length - len(query_tokens) - 3
    if max_tokens_for_doc <= 0:
        raise UserError(
            f"max_seq_length {max_seq_length} leaves no room for the document after a "
            f"{len(query_tokens)}-token question; raise max_seq_length or lower max_query_length"
        )
    doc_spans: list[tuple[int, int]] = []
    start_offset = 0
    while start_offset < len(all_doc_tokens):
        length = min(len(all_doc_tokens) - start_offset, max_tokens_for_doc)
        doc_spans.append((start_offset, length))
        if start_offset + length == len(all_doc_tokens):
            break
        start_offset += min(length, doc_stride)

    features = []
    for doc_span_index, (span_start, span_length) in enumerate(doc_spans):
        tokens = ["[CLS]"] + list(query_tokens) + ["[SEP]"]
        segment_ids = [0] * len(tokens)
        token_to_orig_map: dict[int, int] = {}
        token_is_max_context: dict[int, bool] = {}
        for i in range(span_length):
            split_token_index = span_start + i
            token_to_orig_map[len(tokens)] = tok_to_orig_index[split_token_index]
            token_is_max_context[len(tokens)] = check_is_max_context(
                doc_spans, doc_span_index, split_token_index
            )
            tokens.append(all_doc_tokens[split_token_index])
            segment_ids.append(1)
        tokens.append("[SEP]")
        segment_ids.append(1)
        input_ids = list(convert_tokens_to_ids(tokens))
        input_mask = [1] * len(input_ids)
        pad = max_seq_length - len(input_ids)
        input_ids += [0] * pad
        input_mask += [0] * pad
        segment_ids += [0] * pad

        start_position = end_position = 0
        if is_training and not example.is_impossible:
            doc_end = span_start + span_length - 1
            if span_start <= tok_start and tok_end <= doc_end:
                doc_offset = len(query_tokens) + 2
                start_position = tok_start - span_start + doc_offset
                end_position = tok_end - span_start + doc_offset
        features.append(
            QAFeature(
                eid=1000 * example.eid + doc_span_index,
                example_index=example_index,
                doc_span_index=doc_span_index,
                tokens=tokens,
                token_to_orig_map=token_to_orig_map,
                token_is_max_context=token_is_max_context,
                input_ids=input_ids,
                input_mask=input_mask,
                segment_ids=segment_ids,
                start_position=start_position,
                end_position=end_position,
                is_impossible=bool(example.is_impossible) if is_training else False,
            )
        )
    return features


def featurize_examples(
    examples: Sequence[QAExample],
    tokenizer: Any,
    is_training: bool,
    max_seq_length: int = 512,
    max_query_length: int = 64,
    doc_stride: int = 128,
) -> list[QAFeature]:
    """Featurizes all examples, tokenizing every distinct word once (batched)."""
    if doc_stride <= 0:
        raise UserError(f"doc_stride must be positive, got {doc_stride}")
    cache = SubTokenCache(tokenizer)
    texts = set()
    for ex in examples:
        texts.add(ex.question_text)
        texts.update(ex.doc_tokens)
        if is_training and ex.orig_answer_text:
            texts.add(ex.orig_answer_text)
    cache.prime(texts)
    features = []
    for index, ex in enumerate(examples):
        features.extend(
            featurize_example(
                ex,
                index,
                cache,
                tokenizer.convert_tokens_to_ids,
                is_training,
                max_seq_length=max_seq_length,
                max_query_length=max_query_length,
                doc_stride=doc_stride,
            )
        )
    return features


def features_to_arrays(features: Sequence[QAFeature]) -> dict[str, np.ndarray]:
    """Stacks features into int32 arrays: input_ids, input_mask, segment_ids, start_positions,
    end_positions, is_impossible ([N, L] or [N]) and eid (int64 [N])."""
    return {
        "input_ids": np.asarray([f.input_ids for f in features], np.int32),
        "input_mask": np.asarray([f.input_mask for f in features], np.int32),
        "segment_ids": np.asarray([f.segment_ids for f in features], np.int32),
        "start_positions": np.asarray([f.start_position for f in features], np.int32),
        "end_positions": np.asarray([f.end_position for f in features], np.int32),
        "is_impossible": np.asarray([int(f.is_impossible) for f in features], np.int32),
        "eid": np.asarray([f.eid for f in features], np.int64),
    }
