"""Pretraining data: corpus text -> ExampleBuilder -> TFRecord shards -> tf.data input.

The builder reproduces `build_pretraining_dataset.py` of google-research/electra exactly (one line = one
sentence, a blank line ends a document, 10% single-segment examples, the segment-assignment rule with its
quirk, trimming by max_length, a 5% chance that the next example has a short random target length), with
two differences that do not change the algorithm:
  * every random draw comes from an injected `random.Random`, so a build is reproducible given a seed;
  * lines are tokenized in batches (`tokenizer.tokenize_to_ids`), which gives the same ids as one by one.

Each TFRecord holds `tf.train.Example`s with exactly three int64 features of length max_seq_length:
`input_ids` (`[CLS] A [SEP] (B [SEP])` then 0-padding), `input_mask` (1 for real tokens) and `segment_ids`
(0 for [CLS] + A + first [SEP], 1 for B + final [SEP], 0 for padding). A build also writes
`dataset_info.json` (counts, the vocab's sha256, the tokenizer settings) and `token_counts.txt` (how often each
vocab id occurs in the written `input_ids`, padding excluded; one integer per line, line i = id i).
"""

import concurrent.futures
import glob
import hashlib
import json
import multiprocessing
import os
import random
import struct
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

import numpy as np
import tensorflow as tf
from google.protobuf.message import DecodeError

from electra_tf import tokenization
from electra_tf.errors import UserError

FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids")
TFRECORD_PREFIX = "pretrain_data.tfrecord"
DATASET_INFO_FILE = "dataset_info.json"
TOKEN_COUNTS_FILE = "token_counts.txt"
TOKENIZE_CHUNK_LINES = 4096
PROGRESS_EVERY_S = 10.0


def default_tokenizer_class() -> type:
    """`tokenization.FullTokenizer` (tensorflow-text; the same ids as the pure-Python reference)."""
    return tokenization.FullTokenizer


class PretrainingExample(NamedTuple):
    """One example as three int lists of length max_length."""

    input_ids: list
    input_mask: list
    segment_ids: list


class ExampleBuilder:
    """Turns a stream of lines (one sentence each) into pretraining examples, as the original.

    Args:
        tokenizer: has `.vocab` (with `[CLS]`, `[SEP]`) and `.tokenize_to_ids(list[str])`; only `add_line` uses
            the latter.
        max_length: the example length (max_seq_length).
        rng: every random draw (single-segment choice, segment split, short target) comes from it, in the
            original's order.

    Example:
        >>> builder = ExampleBuilder(tokenizer, 128, random.Random(0))
        >>> examples = [e for e in map(builder.add_line, lines + [""]) if e is not None]
    """

    def __init__(self, tokenizer, max_length: int, rng: random.Random):
        self._tokenizer = tokenizer
        self._max_length = max_length
        self._rng = rng
        for token in ("[CLS]", "[SEP]"):
            if token not in tokenizer.vocab:
                raise UserError(f"the vocab has no {token} token")
        self._cls_id = tokenizer.vocab["[CLS]"]
        self._sep_id = tokenizer.vocab["[SEP]"]
        self._current_sentences: list = []
        self._current_length = 0
        self._target_length = max_length

    @property
    def target_length(self) -> int:
        return self._target_length

    def add_line(self, line: str) -> PretrainingExample | None:
        """Adds a line of text; returns an example when one is complete, else None."""
        line = line.strip().replace("\n", " ")
        if not line:
            return self.end_document()
        return self.add_tokenized_line(self._tokenizer.tokenize_to_ids([line])[0])

    def end_document(self) -> PretrainingExample | None:
        """A blank line: emits the pending example if there is one (== `add_line("")`)."""
        # The original appends the empty sentence when nothing is pending; an empty sentence changes
        # neither the segments nor the random draws, so it is dropped here.
        if self._current_length != 0:
            return self._create_example()
        return None

    def add_tokenized_line(self, token_ids: Sequence[int]) -> PretrainingExample | None:
        """Adds the ids of one non-blank line (a sentence); returns an example when one is complete."""
        if not token_ids:
            return None  # no tokens: no effect on the example or on the random draws
        self._current_sentences.append(token_ids)
        self._current_length += len(token_ids)
        if self._current_length >= self._target_length:
            return self._create_example()
        return None

    def _create_example(self) -> PretrainingExample:
        rng = self._rng
        # small chance to only have one segment as in classification tasks
        if rng.random() < 0.1:
            first_segment_target_length = 100000
        else:
            # -3 due to not yet having [CLS]/[SEP] tokens in the input text
            first_segment_target_length = (self._target_length - 3) // 2

        first_segment: list = []
        second_segment: list = []
        for sentence in self._current_sentences:
            # The sentence goes to the first segment if (1) it is empty, (2) the sentence does not put it
            # over length or (3) 50% of the time when it does put it over length. As in the original, (2)
            # does not check that the second segment is empty: a later short sentence can go to A after B.
            if (
                len(first_segment) == 0
                or len(first_segment) + len(sentence) < first_segment_target_length
                or (
                    len(second_segment) == 0
                    and len(first_segment) < first_segment_target_length
                    and rng.random() < 0.5
                )
            ):
                first_segment += sentence
            else:
                second_segment += sentence

        # trim to max_length while accounting for the not-yet-added [CLS]/[SEP] tokens
        first_segment = first_segment[: self._max_length - 2]
        second_segment = second_segment[: max(0, self._max_length - len(first_segment) - 3)]

        # prepare to start building the next example
        self._current_sentences = []
        self._current_length = 0
        # small chance for a random-length instead of a max_length-length example
        if rng.random() < 0.05:
            self._target_length = rng.randint(5, self._max_length)
        else:
            self._target_length = self._max_length
        return self._make_example(first_segment, second_segment)

    def _make_example(self, first_segment: list, second_segment: list) -> PretrainingExample:
        input_ids = [self._cls_id] + first_segment + [self._sep_id]
        segment_ids = [0] * len(input_ids)
        if second_segment:
            input_ids += second_segment + [self._sep_id]
            segment_ids += [1] * (len(second_segment) + 1)
        input_mask = [1] * len(input_ids)
        padding = [0] * (self._max_length - len(input_ids))
        return PretrainingExample(input_ids + padding, input_mask + padding, segment_ids + padding)


def make_tf_example(example: PretrainingExample) -> tf.train.Example:
    """The `tf.train.Example` with the three int64 features."""
    feature = {
        name: tf.train.Feature(int64_list=tf.train.Int64List(value=values))
        for name, values in zip(FEATURE_NAMES, example)
    }
    return tf.train.Example(features=tf.train.Features(feature=feature))


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _length_delimited(tag: bytes, payload: bytes) -> bytes:
    return tag + _varint(len(payload)) + payload


class ExampleSerializer:
    """`make_tf_example(example).SerializeToString()`, encoded directly (several times faster).

    The protobuf wire format of Example{features{feature{key: Feature{int64_list{packed values}}}}}; ids are
    looked up in a table of varint encodings (ids below `vocab_size`; mask and segment ids are 0/1).
    """

    def __init__(self, vocab_size: int):
        self._varints = [_varint(i) for i in range(vocab_size)]
        self._keys = [_length_delimited(b"\x0a", name.encode()) for name in FEATURE_NAMES]

    def __call__(self, example: PretrainingExample) -> bytes:
        payloads = (
            b"".join([self._varints[i] for i in example.input_ids]),
            bytes(example.input_mask),
            bytes(example.segment_ids),
        )
        features = b"".join(
            _length_delimited(
                b"\x0a",  # Features.feature (map entry)
                key  # entry key
                + _length_delimited(  # entry value: Feature
                    b"\x12", _length_delimited(b"\x1a", _length_delimited(b"\x0a", payload))
                ),
            )
            for key, payload in zip(self._keys, payloads)
        )
        return _length_delimited(b"\x0a", features)  # Example.features


def _open_text(path: str):
    if "://" in path:
        return tf.io.gfile.GFile(path, "r")
    # newline="\n": lines end at "\n" only, as tf.io.gfile.GFile in the original
    return open(path, "r", encoding="utf-8", errors="replace", newline="\n")


def iter_file_examples(
    path: str,
    builder: ExampleBuilder,
    tokenizer,
    blanks_separate_docs: bool = True,
    chunk_lines: int = TOKENIZE_CHUNK_LINES,
    stats: dict | None = None,
) -> Iterator[PretrainingExample]:
    """Feeds one text file to `builder` (tokenizing `chunk_lines` lines at a time), yields its examples.

    As the original `ExampleWriter.write_examples`: each line is stripped; blank lines are document
    boundaries when `blanks_separate_docs` (else skipped); the end of the file flushes the pending example,
    so examples never span files. `stats["lines"]` counts the lines read.
    """

    def flush(chunk: list) -> Iterator[PretrainingExample]:
        ids = iter(tokenizer.tokenize_to_ids([line for line in chunk if line]))
        for line in chunk:
            example = builder.add_tokenized_line(next(ids)) if line else builder.end_document()
            if example is not None:
                yield example

    chunk: list = []
    with _open_text(path) as f:
        for line in f:
            if stats is not None:
                stats["lines"] = stats.get("lines", 0) + 1
            line = line.strip()
            if line or blanks_separate_docs:
                chunk.append(line)
                if len(chunk) >= chunk_lines:
                    yield from flush(chunk)
                    chunk = []
    yield from flush(chunk)
    example = builder.end_document()
    if example is not None:
        yield example


# ------------------------------------------------------------------------------------------------------
# Building a dataset


def list_corpus_files(corpus: str | Sequence[str]) -> list:
    """A directory (its files, sorted), a file, a glob, or a list of those -> sorted list of files."""
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


def _has_nonblank_line(files: Sequence[str]) -> bool:
    for path in files:
        with _open_text(path) as f:
            if any(line.strip() for line in f):
                return True
    return False


def output_file_names(output_dir: str, num_out_files: int) -> list:
    return [
        os.path.join(output_dir, f"{TFRECORD_PREFIX}-{i}-of-{num_out_files}")
        for i in range(num_out_files)
    ]


def _job_rng(seed: int, job_id: int) -> random.Random:
    return random.Random(f"electra_tf-pretraining-data-{seed}-{job_id}")


def _write_job(
    job_id: int,
    files: Sequence[str],
    vocab_file: str,
    output_dir: str,
    max_seq_length: int,
    num_jobs: int,
    num_out_files: int,
    blanks_separate_docs: bool,
    do_lower_case: bool,
    strip_accents: bool,
    seed: int,
    verbose: bool,
    tokenizer_class: type | None = None,
) -> dict:
    """One job (process): its corpus files (k % num_jobs == job_id, shuffled) -> its output files."""
    rng = _job_rng(seed, job_id)
    job_files = [f for k, f in enumerate(files) if k % num_jobs == job_id]
    rng.shuffle(job_files)
    tokenizer = (tokenizer_class or default_tokenizer_class())(
        vocab_file, do_lower_case=do_lower_case, strip_accents=strip_accents
    )
    vocab_size = max(tokenizer.vocab.values()) + 1
    builder = ExampleBuilder(tokenizer, max_seq_length, rng)
    names = [
        n
        for i, n in enumerate(output_file_names(output_dir, num_out_files))
        if i % num_jobs == job_id
    ]
    writers = [tf.io.TFRecordWriter(n) for n in names]
    serialize = ExampleSerializer(vocab_size)
    counts = np.zeros(vocab_size, np.int64)
    pending: list = []
    stats = {"lines": 0}
    num_examples = num_tokens = 0
    start = last_report = time.time()

    def report(final: bool = False) -> None:
        elapsed = max(time.time() - start, 1e-9)
        print(
            f"job {job_id}: {'done, ' if final else ''}{stats['lines']:,} lines, "
            f"{num_examples:,} examples, {num_tokens:,} tokens in {elapsed:.1f}s "
            f"({stats['lines'] / elapsed:,.0f} lines/s, {num_examples / elapsed:,.0f} examples/s, "
            f"{num_tokens / elapsed:,.0f} tokens/s)",
            flush=True,
        )

    try:
        for file_no, path in enumerate(job_files):
            for example in iter_file_examples(
                path, builder, tokenizer, blanks_separate_docs, stats=stats
            ):
                writers[num_examples % len(writers)].write(serialize(example))
                num_examples += 1
                length = sum(example.input_mask)
                num_tokens += length
                pending.extend(example.input_ids[:length])
                if len(pending) >= 1 << 20:
                    counts += np.bincount(pending, minlength=vocab_size)
                    pending = []
                if verbose and time.time() - last_report >= PROGRESS_EVERY_S:
                    last_report = time.time()
                    report()
    finally:
        for writer in writers:
            writer.close()
    if pending:
        counts += np.bincount(pending, minlength=vocab_size)
    if verbose:
        report(final=True)
    return {
        "num_examples": num_examples,
        "num_tokens": num_tokens,
        "num_lines": stats["lines"],
        "token_counts": counts,
        "tokenizer": type(tokenizer).__name__,
    }


def _tf_runtime_started() -> bool:
    """Whether this process has started TensorFlow's runtime (then forking it is unsafe)."""
    try:
        from tensorflow.python.eager import context

        return context._context is not None and bool(context._context._initialized)
    except (ImportError, AttributeError):  # private API moved: be safe
        return True


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with tf.io.gfile.GFile(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def build_dataset(
    corpus_files: str | Sequence[str],
    vocab_file: str,
    output_dir: str,
    max_seq_length: int = 128,
    num_processes: int = 1,
    num_out_files: int = 1000,
    blanks_separate_docs: bool = True,
    do_lower_case: bool = True,
    strip_accents: bool = True,
    seed: int = 0,
    overwrite: bool = False,
    verbose: bool = True,
    tokenizer_class: type | None = None,
) -> dict:
    """Writes `pretrain_data.tfrecord-I-of-N`, `dataset_info.json` and `token_counts.txt` to output_dir.

    `corpus_files`: a directory of text files, a file, a glob, or a list of those (one sentence per line,
    blank lines between documents). Corpus file k goes to job k % num_processes; each job runs in its own
    process (when num_processes > 1), shuffles its files with a seeded rng and writes round-robin to the
    output files i with i % num_processes == job. Job j's random draws (file shuffle, then the builder's)
    come from `random.Random(f"electra_tf-pretraining-data-{seed}-{j}")`: the output depends only on the
    arguments. Workers are forked when this process has not started TensorFlow's runtime yet (fast), else
    spawned (each imports TensorFlow). Refuses to replace existing shards unless `overwrite` (which deletes
    them first). Returns the dataset info (the contents of dataset_info.json).
    """
    if not tf.io.gfile.exists(vocab_file):
        raise UserError(f"vocab file not found: {vocab_file}")
    if max_seq_length < 5:
        raise UserError(f"max_seq_length must be at least 5, got {max_seq_length}")
    if num_processes < 1:
        raise UserError(f"num_processes must be at least 1, got {num_processes}")
    if num_out_files < num_processes:
        raise UserError(
            f"num_out_files ({num_out_files}) must be at least num_processes ({num_processes})"
        )
    files = list_corpus_files(corpus_files)
    if not _has_nonblank_line(files):
        raise UserError(
            f"corpus is empty: no non-blank lines in {len(files)} file(s) ({files[0]}, ...)"
        )

    existing = tf.io.gfile.glob(os.path.join(output_dir, TFRECORD_PREFIX + "*"))
    if existing and not overwrite:
        raise UserError(
            f"output_dir {output_dir} already holds {len(existing)} {TFRECORD_PREFIX}* files; "
            "pass --overwrite=true to replace them"
        )
    for path in existing:
        tf.io.gfile.remove(path)
    tf.io.gfile.makedirs(output_dir)

    start = time.time()
    args = [
        (j, files, vocab_file, output_dir, max_seq_length, num_processes, num_out_files)
        + (blanks_separate_docs, do_lower_case, strip_accents, seed, verbose, tokenizer_class)
        for j in range(num_processes)
    ]
    if num_processes == 1:
        results = [_write_job(*args[0])]
    else:
        # fork is fast (the children inherit the imported modules) but unsafe once the TF runtime runs
        method = "spawn" if _tf_runtime_started() else "fork"
        if method == "fork" and tokenizer_class in (None, tokenization.FullTokenizer):
            tokenization.preload_normalization_tables(do_lower_case, strip_accents)
        context = multiprocessing.get_context(method)
        # a worker that dies (killed, out of memory) raises BrokenProcessPool here instead of hanging
        with concurrent.futures.ProcessPoolExecutor(num_processes, mp_context=context) as pool:
            results = [f.result() for f in [pool.submit(_write_job, *a) for a in args]]

    num_examples = sum(r["num_examples"] for r in results)
    num_tokens = sum(r["num_tokens"] for r in results)
    if num_examples == 0:
        for path in tf.io.gfile.glob(os.path.join(output_dir, TFRECORD_PREFIX + "*")):
            tf.io.gfile.remove(path)
        raise UserError(f"corpus is empty: no tokens in {len(files)} file(s) ({files[0]}, ...)")
    counts = np.sum([r["token_counts"] for r in results], axis=0)
    with tf.io.gfile.GFile(os.path.join(output_dir, TOKEN_COUNTS_FILE), "w") as f:
        f.write("".join(f"{c}\n" for c in counts.tolist()))
    info = {
        "num_examples": num_examples,
        "num_tokens": num_tokens,
        "max_seq_length": max_seq_length,
        "vocab_size": len(counts),
        "vocab_sha256": file_sha256(vocab_file),
        "do_lower_case": bool(do_lower_case),
        "strip_accents": bool(strip_accents),
        "seed": seed,
        "num_out_files": num_out_files,
        "num_processes": num_processes,
        "blanks_separate_docs": bool(blanks_separate_docs),
        "num_corpus_files": len(files),
        "num_lines": sum(r["num_lines"] for r in results),
        "tokenizer": results[0]["tokenizer"],
        "token_counts_file": TOKEN_COUNTS_FILE,
    }
    with tf.io.gfile.GFile(os.path.join(output_dir, DATASET_INFO_FILE), "w") as f:
        f.write(json.dumps(info, indent=2) + "\n")
    if verbose:
        elapsed = max(time.time() - start, 1e-9)
        print(
            f"wrote {num_examples:,} examples ({num_tokens:,} tokens) to {num_out_files} files in "
            f"{output_dir} in {elapsed:.1f}s ({num_tokens / elapsed:,.0f} tokens/s)",
            flush=True,
        )
    return info


def read_token_counts(path: str) -> np.ndarray:
    """token_counts.txt (or the directory holding it) -> int64 [vocab_size]."""
    if tf.io.gfile.isdir(path):
        path = os.path.join(path, TOKEN_COUNTS_FILE)
    if not tf.io.gfile.exists(path):
        raise UserError(f"token counts file not found: {path}")
    with tf.io.gfile.GFile(path, "r") as f:
        return np.array([int(line) for line in f if line.strip()], np.int64)


# ------------------------------------------------------------------------------------------------------
# Checking a dataset


def expand_file_patterns(file_patterns: str | Sequence[str]) -> list:
    """Comma-separated globs (or a list; a directory means its pretrain_data.tfrecord*) -> sorted files."""
    patterns = file_patterns.split(",") if isinstance(file_patterns, str) else list(file_patterns)
    files: list = []
    for pattern in (p.strip() for p in patterns):
        if not pattern:
            continue
        if tf.io.gfile.isdir(pattern):
            pattern = os.path.join(pattern, TFRECORD_PREFIX + "*")
        matches = tf.io.gfile.glob(pattern)
        if not matches:
            raise UserError(f"no pretraining TFRecords match {pattern}")
        files.extend(matches)
    if not files:
        raise UserError(f"no pretraining TFRecords match {file_patterns!r}")
    return sorted(set(files))


def _read_first_record(path: str) -> bytes | None:
    with tf.io.gfile.GFile(path, "rb") as f:
        header = f.read(12)
        if not header:
            return None
        if len(header) < 12:
            raise UserError(f"{path} is not a TFRecord file (truncated header)")
        (length,) = struct.unpack("<Q", header[:8])
        data = f.read(length)
        if len(data) != length:
            raise UserError(f"{path} is not an uncompressed TFRecord file (bad record length)")
        return data


def check_tfrecords(files: str | Sequence[str], max_seq_length: int) -> list:
    """Checks the first record of each file against the schema; returns the sorted file list.

    Raises `UserError` (naming the file) when nothing matches, a feature is missing or extra, or a feature is
    not int64 of length max_seq_length. Empty files are allowed (a small corpus leaves some shards empty), but
    not all of them.
    """
    paths = expand_file_patterns(files)
    num_records = 0
    for path in paths:
        data = _read_first_record(path)
        if data is None:
            continue
        num_records += 1
        try:
            example = tf.train.Example.FromString(data)
        except DecodeError as e:
            raise UserError(f"{path}: first record is not a tf.train.Example ({e})") from None
        feature = example.features.feature
        names = set(feature.keys())
        if names != set(FEATURE_NAMES):
            missing = sorted(set(FEATURE_NAMES) - names)
            extra = sorted(names - set(FEATURE_NAMES))
            raise UserError(
                f"{path}: expected features {list(FEATURE_NAMES)}, "
                f"missing {missing}, unexpected {extra}"
            )
        for name in FEATURE_NAMES:
            kind = feature[name].WhichOneof("kind")
            if kind != "int64_list":
                raise UserError(f"{path}: feature {name} is {kind}, expected int64_list")
            length = len(feature[name].int64_list.value)
            if length != max_seq_length:
                raise UserError(
                    f"{path}: feature {name} has length {length}, expected max_seq_length "
                    f"{max_seq_length}"
                )
    if num_records == 0:
        raise UserError(f"all {len(paths)} pretraining TFRecord files are empty ({paths[0]}, ...)")
    return paths


def find_dataset_info(data_dir_or_tfrecord_dir: str) -> str | None:
    """The dataset_info.json in the directory or in its pretrain_tfrecords/ subdirectory, if any."""
    for path in (
        os.path.join(data_dir_or_tfrecord_dir, DATASET_INFO_FILE),
        os.path.join(data_dir_or_tfrecord_dir, "pretrain_tfrecords", DATASET_INFO_FILE),
    ):
        if tf.io.gfile.exists(path):
            return path
    return None


def check_dataset_info(
    data_dir_or_tfrecord_dir: str,
    vocab_file: str,
    max_seq_length: int,
    do_lower_case: bool,
) -> dict | None:
    """Compares dataset_info.json with the trainer's settings; returns it (None for datasets without one).

    Raises `UserError` when the dataset was built with another vocab (sha256), another max_seq_length or
    another lower-casing. Datasets built by the original code have no dataset_info.json: nothing to check.
    """
    path = find_dataset_info(data_dir_or_tfrecord_dir)
    if path is None:
        return None
    try:
        with tf.io.gfile.GFile(path, "r") as f:
            info = json.load(f)
    except ValueError as e:
        raise UserError(f"{path} is not valid JSON ({e})") from None
    dataset = os.path.dirname(path)
    if not tf.io.gfile.exists(vocab_file):
        raise UserError(f"vocab file not found: {vocab_file}")
    sha = file_sha256(vocab_file)
    if info.get("vocab_sha256") not in (None, sha):
        raise UserError(
            f"dataset {dataset} was built with another vocab (sha256 {info['vocab_sha256']}) than "
            f"vocab_file {vocab_file} (sha256 {sha})"
        )
    if info.get("max_seq_length") not in (None, max_seq_length):
        raise UserError(
            f"dataset {dataset} was built with max_seq_length {info['max_seq_length']}, "
            f"but max_seq_length is {max_seq_length}"
        )
    if info.get("do_lower_case") not in (None, bool(do_lower_case)):
        raise UserError(
            f"dataset {dataset} was built with do_lower_case={info['do_lower_case']}, "
            f"but do_lower_case is {bool(do_lower_case)}"
        )
    return info


# ------------------------------------------------------------------------------------------------------
# Reading a dataset


def pretraining_dataset(
    file_patterns: str | Sequence[str],
    max_seq_length: int,
    batch_size: int,
    is_training: bool,
    input_context: tf.distribute.InputContext | None = None,
    seed: int | None = None,
    num_cpu_threads: int = 4,
    shuffle_buffer_size: int = 100,
) -> tf.data.Dataset:
    """The pretraining input pipeline of the original, as a tf.data.Dataset.

    Files (comma-separated globs, a list, or a directory) are sharded over `input_context`'s input
    pipelines (by file; by record when there are fewer files than pipelines). For training: repeat, shuffle
    the files, interleave `cycle_length=min(num_cpu_threads, n_files)` files (deterministic when `seed` is
    given), shuffle records (`shuffle_buffer_size`). For evaluation: one pass in file order, no shuffling.
    Then parse, batch `batch_size` (per input pipeline, drop_remainder) and prefetch.

    Returns:
        A dataset of dicts {input_ids, input_mask, segment_ids}, int32 [batch_size, max_seq_length].
    """
    files = expand_file_patterns(file_patterns)
    num_pipelines = input_context.num_input_pipelines if input_context is not None else 1
    pipeline_id = input_context.input_pipeline_id if input_context is not None else 0
    shard_files = num_pipelines > 1 and len(files) >= num_pipelines
    if shard_files:
        files = files[pipeline_id::num_pipelines]

    d = tf.data.Dataset.from_tensor_slices(tf.constant(files))
    if is_training:
        d = d.repeat()
        d = d.shuffle(buffer_size=len(files), seed=seed)
    d = d.interleave(
        tf.data.TFRecordDataset,
        cycle_length=min(num_cpu_threads, len(files)),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=(not is_training) or seed is not None,
    )
    if num_pipelines > 1 and not shard_files:
        d = d.shard(num_pipelines, pipeline_id)
    if is_training:
        d = d.shuffle(buffer_size=shuffle_buffer_size, seed=seed)

    name_to_features = {
        name: tf.io.FixedLenFeature([max_seq_length], tf.int64) for name in FEATURE_NAMES
    }

    def parse(records: tf.Tensor) -> dict:
        parsed = tf.io.parse_example(records, name_to_features)
        return {name: tf.cast(parsed[name], tf.int32) for name in FEATURE_NAMES}

    d = d.batch(batch_size, drop_remainder=True)
    d = d.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    return d.prefetch(tf.data.AUTOTUNE)


def iter_examples(files: str | Sequence[str]) -> Iterable[dict]:
    """Every record of the files in order, as dicts of int lists (for tests and inspection)."""
    for path in expand_file_patterns(files):
        for record in tf.data.TFRecordDataset(path).as_numpy_iterator():
            feature = tf.train.Example.FromString(record).features.feature
            yield {name: list(feature[name].int64_list.value) for name in feature}
