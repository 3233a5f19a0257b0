"""One build job (one process): its corpus files -> its TFRecord shards, with progress lines.

Shards are written under temporary names (`layout.temporary_name`); the builder renames them once
every job has succeeded. A job that fails removes its temporary files (a full disk: one line
naming the shard)."""

import dataclasses
import os
import random
import time
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from electra_tf import tokenization
from electra_tf.errors import disk_full_error, is_disk_full
from electra_tf.pretraining_data.corpus import iter_file_examples
from electra_tf.pretraining_data.encoding import ExampleSerializer
from electra_tf.pretraining_data.example_builder import ExampleBuilder
from electra_tf.pretraining_data.layout import output_file_names, temporary_name
from electra_tf.pretraining_data.segmentation import WordStartTokenizer, load_segmenter

PROGRESS_EVERY_S = 10.0
_COUNT_EVERY_IDS = 1 << 20  # ids collected before they are added to the token counts


def default_tokenizer_class() -> type:
    """`tokenization.FullTokenizer` (tensorflow-text; the same ids as the pure-Python reference)."""
    return tokenization.FullTokenizer


@dataclasses.dataclass(frozen=True)
class JobSettings:
    """What every job of one build shares (sent to each worker process)."""

    vocab_file: str
    output_dir: str
    max_seq_length: int
    num_jobs: int
    num_out_files: int
    blanks_separate_docs: bool
    do_lower_case: bool
    strip_accents: bool
    seed: int
    verbose: bool
    tokenizer_class: type | None = None
    carry_overflow: bool = False
    word_segmenter: str | None = None  # `segmentation.SEGMENTERS`: the examples get word_starts


def job_rng(seed: int, job_id: int) -> random.Random:
    """Job `job_id`'s random draws (file shuffle, then the builder's): its output depends only on
    the build's arguments."""
    return random.Random(f"electra_tf-pretraining-data-{seed}-{job_id}")


def write_job(job_id: int, files: Sequence[str], settings: JobSettings) -> dict:
    """One job: its corpus files (k % num_jobs == job_id, shuffled) -> its output files (i %
    num_jobs == job_id, round-robin). Returns its counts, token counts and tokenizer name."""
    s = settings
    rng = job_rng(s.seed, job_id)
    job_files = [f for k, f in enumerate(files) if k % s.num_jobs == job_id]
    rng.shuffle(job_files)
    tokenizer = (s.tokenizer_class or default_tokenizer_class())(
        s.vocab_file, do_lower_case=s.do_lower_case, strip_accents=s.strip_accents
    )
    vocab_size = max(tokenizer.vocab.values()) + 1
    word_tokenizer = None
    if s.word_segmenter:
        word_tokenizer = WordStartTokenizer(tokenizer, load_segmenter(s.word_segmenter))
    builder = ExampleBuilder(tokenizer, s.max_seq_length, rng, s.carry_overflow)
    names = [
        n
        for i, n in enumerate(output_file_names(s.output_dir, s.num_out_files))
        if i % s.num_jobs == job_id
    ]
    serialize = ExampleSerializer(vocab_size)
    counts = np.zeros(vocab_size, np.int64)
    pending: list = []
    stats = {"lines": 0}
    records = [0] * len(names)
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

    writers: list = []
    current = names[0]
    try:
        for n in names:
            current = n
            writers.append(tf.io.TFRecordWriter(temporary_name(n)))
        for path in job_files:
            for example in iter_file_examples(
                path, builder, tokenizer, s.blanks_separate_docs, stats=stats,
                word_tokenizer=word_tokenizer,
            ):  # fmt: skip
                k = num_examples % len(writers)
                current = names[k]
                writers[k].write(serialize(example))
                records[k] += 1
                num_examples += 1
                length = sum(example.input_mask)
                num_tokens += length
                pending.extend(example.input_ids[:length])
                if len(pending) >= _COUNT_EVERY_IDS:
                    counts += np.bincount(pending, minlength=vocab_size)
                    pending = []
                if s.verbose and time.time() - last_report >= PROGRESS_EVERY_S:
                    last_report = time.time()
                    report()
        for k, writer in enumerate(writers):
            current = names[k]
            writer.close()
    except BaseException as e:
        for writer in writers:
            try:
                writer.close()
            except tf.errors.OpError:
                pass
        for n in names:
            if tf.io.gfile.exists(temporary_name(n)):
                tf.io.gfile.remove(temporary_name(n))
        if isinstance(e, Exception) and is_disk_full(e):
            raise disk_full_error(
                current, e, "nothing in the output directory was replaced"
            ) from None
        raise
    if pending:
        counts += np.bincount(pending, minlength=vocab_size)
    if s.verbose:
        report(final=True)
    return {
        "num_examples": num_examples,
        "num_tokens": num_tokens,
        "num_lines": stats["lines"],
        "records": dict(zip((os.path.basename(n) for n in names), records)),
        "text_problems": {k: v for k, v in stats.items() if k != "lines"},
        "token_counts": counts,
        "tokenizer": type(tokenizer).__name__,
    }
