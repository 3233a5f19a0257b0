"""Question-answering examples: SQuAD (official JSON) and MRQA 2019 (.jsonl) readers.

Behaviour follows the original `finetune/qa/qa_tasks.py` (itself BERT's `run_squad.py`): the
context is split on whitespace (space, tab, CR, LF and U+202F) into "doc tokens", with a
character -> word map used to project the answer's character offset onto words; training answers
whose text cannot be found in the projected words are dropped, with one warning line per file
naming the first and counting them. Malformed files are a `UserError` naming the file and the place
in it.
"""

import dataclasses
import os
import sys
from typing import Any

from absl import logging

from electra_tf.errors import UserError
from electra_tf.io_utils import parse_json, read_json


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
    failures: list[str],
    paragraph: dict[str, Any],
    split: str,
    task_name: str,
    v2: bool,
    where: str,
) -> None:
    """Appends the examples of one paragraph (SQuAD or MRQA layout) to `examples`; a training
    answer that is not in its context is skipped (as the original) and its place appended to
    `failures`."""
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
                    failures.append(f"{qwhere} (the answer is out of the context)")
                    continue
                start_position = char_to_word_offset[answer_offset]
                end_position = char_to_word_offset[last]
                actual_text = " ".join(doc_tokens[start_position : end_position + 1]).lower()
                cleaned = " ".join(orig_answer_text.strip().split()).lower()
                if actual_text.find(cleaned) == -1:
                    failures.append(f"{qwhere} ({cleaned!r} is not at its answer_start)")
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


def _report_skipped(path: str, failures: list[str], kept: int) -> None:
    """One line for a file's training answers that are not in their context."""
    logging.info("%s: %d examples, %d skipped", path, kept, len(failures))
    if failures:
        print(
            f"warning: {path}: {len(failures)} training answer(s) not found in their context, "
            f"those questions skipped (as the original): {failures[0]}"
            + (f" and {len(failures) - 1} more" if len(failures) > 1 else ""),
            file=sys.stderr,
            flush=True,
        )


def load_squad_json(path: str) -> list[dict[str, Any]]:
    """Reads an official SQuAD JSON file and returns its `data` list (clear errors if malformed)."""
    if not os.path.exists(path):
        raise UserError(f"{path}: file not found")
    content = read_json(path)
    if not isinstance(content, dict) or not isinstance(content.get("data"), list):
        raise UserError(f"{path}: expected a SQuAD file, an object with a 'data' list")
    return content["data"]


def read_squad_examples(path: str, split: str, task_name: str, v2: bool) -> list[QAExample]:
    """Examples of an official SQuAD v1.1/v2.0 JSON file."""
    data = load_squad_json(path)
    examples: list[QAExample] = []
    failures: list[str] = []
    for ai, article in enumerate(data):
        paragraphs = _require(article, "paragraphs", f"{path}: data[{ai}]", list)
        for pi, paragraph in enumerate(paragraphs):
            where = f"{path}: data[{ai}].paragraphs[{pi}]"
            add_paragraph_examples(examples, failures, paragraph, split, task_name, v2, where)
    _report_skipped(path, failures, len(examples))
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
            paragraph = parse_json(line, f"{path}: line {lineno}")
            if not isinstance(paragraph, dict):
                raise UserError(f"{path}: line {lineno}: expected a JSON object")
            if "header" in paragraph:
                continue
            out.append((lineno, paragraph))
    return out


def read_mrqa_examples(path: str, split: str, task_name: str) -> list[QAExample]:
    """Examples of an MRQA 2019 .jsonl file (one paragraph per line, header lines skipped)."""
    examples: list[QAExample] = []
    failures: list[str] = []
    for lineno, paragraph in load_mrqa_jsonl(path):
        where = f"{path}: line {lineno}"
        add_paragraph_examples(examples, failures, paragraph, split, task_name, False, where)
    _report_skipped(path, failures, len(examples))
    return examples
