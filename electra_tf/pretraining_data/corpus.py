"""Reading a corpus: which files, and one file's lines fed to an `ExampleBuilder`.

The corpus is one sentence per line with blank lines between documents; lines are tokenized in
batches (`tokenizer.tokenize_to_ids`), which gives the same ids as one by one.

Text that is not clean UTF-8 has one policy, replace and count: an invalid byte sequence becomes
U+FFFD (Python's "replace"), and both U+FFFD and NUL are then dropped by the tokenizer's text
cleaning (as BERT's `_clean_text`); the lines with either are counted (`stats`), and the build
reports each file's count and first line, and the totals in dataset_info.json.
"""

import glob
import os
from collections.abc import Iterator, Sequence
from typing import IO

import tensorflow as tf

from electra_tf.errors import UserError
from electra_tf.pretraining_data.example_builder import ExampleBuilder, PretrainingExample

TOKENIZE_CHUNK_LINES = 4096


def open_text(path: str) -> IO[str]:
    """A corpus file for reading lines (a remote path through tf.io.gfile)."""
    if "://" in path:
        return tf.io.gfile.GFile(path, "r")
    # newline="\n": lines end at "\n" only, as tf.io.gfile.GFile in the original
    return open(path, "r", encoding="utf-8", errors="replace", newline="\n")


def read_documents(path: str) -> list[list[str]]:
    """A corpus file's documents: lists of its stripped non-blank lines, split at blank lines."""
    documents, current = [], []
    with open_text(path) as f:
        for line in f:
            line = line.strip()
            if line:
                current.append(line)
            elif current:
                documents.append(current)
                current = []
    if current:
        documents.append(current)
    return documents


def list_corpus_files(corpus: str | Sequence[str]) -> list:
    """A directory (its files, sorted), a file, a glob, or a list of those -> a list of files."""
    patterns = [corpus] if isinstance(corpus, str) else list(corpus)
    files: list = []
    for pattern in patterns:
        if os.path.isdir(pattern):
            names = sorted(n for n in os.listdir(pattern) if not n.startswith("."))
            files.extend(p for p in (os.path.join(pattern, n) for n in names) if os.path.isfile(p))
        elif os.path.isfile(pattern) or "://" in pattern:
            files.append(pattern)
        else:
            matches = sorted(p for p in glob.glob(pattern) if os.path.isfile(p))
            if not matches:
                raise UserError(f"corpus not found: {pattern} (no file, directory or glob match)")
            files.extend(matches)
    if not files:
        raise UserError(f"corpus is empty: no text files in {', '.join(patterns)}")
    return files


def _open_binary(path: str) -> IO[bytes]:
    return tf.io.gfile.GFile(path, "rb") if "://" in path else open(path, "rb")


def _decode(raw: bytes, path: str, lineno: int, stats: dict) -> str:
    """One line as text (lines end at b"\n" only, which no UTF-8 sequence holds); invalid UTF-8
    and NUL are counted in `stats` ("invalid_utf8_lines", "nul_lines", and per file the count
    and first line under "files")."""
    try:
        line = raw.decode("utf-8")
        bad = False
    except UnicodeDecodeError:
        line = raw.decode("utf-8", errors="replace")
        bad = True
    for key, hit in (("invalid_utf8_lines", bad), ("nul_lines", "\x00" in line)):
        if hit:
            stats[key] = stats.get(key, 0) + 1
            per_file = stats.setdefault("files", {}).setdefault(path, {})
            first = per_file.setdefault(key, [0, lineno])
            first[0] += 1
    return line


def has_nonblank_line(files: Sequence[str]) -> bool:
    for path in files:
        with open_text(path) as f:
            if any(line.strip() for line in f):
                return True
    return False


def iter_file_examples(
    path: str,
    builder: ExampleBuilder,
    tokenizer,
    blanks_separate_docs: bool = True,
    chunk_lines: int = TOKENIZE_CHUNK_LINES,
    stats: dict | None = None,
    word_tokenizer=None,
) -> Iterator[PretrainingExample]:
    """Feeds one text file to `builder` (tokenizing `chunk_lines` lines at a time), yields its
    examples.

    As the original `ExampleWriter.write_examples`: each line is stripped; blank lines are document
    boundaries when `blanks_separate_docs` (else skipped); the end of the file flushes the pending
    example, so examples never span files. `stats["lines"]` counts the lines read.
    `word_tokenizer` (a `segmentation.WordStartTokenizer` on `tokenizer`): the lines' ids come
    with their word starts, which the examples carry.
    """

    def flush(chunk: list) -> Iterator[PretrainingExample]:
        text = [line for line in chunk if line]
        if word_tokenizer is None:
            tokenized = iter([(ids,) for ids in tokenizer.tokenize_to_ids(text)])
        else:
            tokenized = iter(word_tokenizer.tokenize(text))
        for line in chunk:
            example = (
                builder.add_tokenized_line(*next(tokenized)) if line else builder.end_document()
            )
            if example is not None:
                yield example
                yield from builder.ready_examples()

    chunk: list = []
    stats = {} if stats is None else stats
    with _open_binary(path) as f:
        for lineno, raw in enumerate(f, start=1):
            stats["lines"] = stats.get("lines", 0) + 1
            line = _decode(raw, path, lineno, stats).strip()
            if line or blanks_separate_docs:
                chunk.append(line)
                if len(chunk) >= chunk_lines:
                    yield from flush(chunk)
                    chunk = []
    yield from flush(chunk)
    example = builder.end_document()
    if example is not None:
        yield example
        yield from builder.ready_examples()
