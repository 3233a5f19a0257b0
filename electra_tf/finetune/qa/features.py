"""Question-answering features: BERT-style sliding windows over the WordPiece'd document.

As the original `finetune/qa/qa_tasks.py` (itself BERT's `run_squad.py`):
  * the question is truncated to `max_query_length` sub-tokens, the doc tokens are WordPiece'd
    keeping tok <-> orig maps, and the answer span is tightened with `improve_answer_span`;
  * the document is cut into windows of `max_seq_length - len(query) - 3` sub-tokens, each start
    `min(length, doc_stride)` after the previous one, packed `[CLS] q [SEP] doc [SEP]` by
    `electra_tf.packing`;
  * a window without the answer (and every window of an impossible question) targets [CLS] (0, 0);
  * `eid = 1000 * example_index + doc_span_index`.

Sub-token lookups go through a per-word cache filled with one batched `tokenize_to_ids` call, so
the fast (tensorflow-text) and reference tokenizers give the same features at very different
speeds.
"""

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from electra_tf import packing, vocab
from electra_tf.errors import UserError
from electra_tf.finetune.qa.reader import QAExample


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


def check_is_max_context(
    doc_spans: Sequence[tuple[int, int]], cur_span_index: int, position: int
) -> bool:
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
    doc_offset = len(query_tokens) + 2  # the window's first document position
    for doc_span_index, (span_start, span_length) in enumerate(doc_spans):
        span = range(span_start, span_start + span_length)
        tokens, segment_ids = packing.pack(
            [list(query_tokens), [all_doc_tokens[t] for t in span]], vocab.CLS, vocab.SEP
        )
        token_to_orig_map = {doc_offset + i: tok_to_orig_index[t] for i, t in enumerate(span)}
        token_is_max_context = {
            doc_offset + i: check_is_max_context(doc_spans, doc_span_index, t)
            for i, t in enumerate(span)
        }
        input_ids = list(convert_tokens_to_ids(tokens))
        input_mask = packing.pad([1] * len(input_ids), max_seq_length)
        input_ids = packing.pad(input_ids, max_seq_length)
        segment_ids = packing.pad(segment_ids, max_seq_length)

        start_position = end_position = 0
        if is_training and not example.is_impossible:
            doc_end = span_start + span_length - 1
            if span_start <= tok_start and tok_end <= doc_end:
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
