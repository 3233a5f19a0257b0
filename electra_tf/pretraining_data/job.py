"""One build job (one process): its corpus files -> its TFRecord shards, with progress lines."""

import dataclasses
import random
import time
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from electra_tf import tokenization
from electra_tf.pretraining_data.corpus import iter_file_examples
from electra_tf.pretraining_data.encoding import ExampleSerializer
from electra_tf.pretraining_data.example_builder import ExampleBuilder
from electra_tf.pretraining_data.layout import output_file_names

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
    builder = ExampleBuilder(tokenizer, s.max_seq_length, rng)
    names = [
        n
        for i, n in enumerate(output_file_names(s.output_dir, s.num_out_files))
        if i % s.num_jobs == job_id
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
        for path in job_files:
            for example in iter_file_examples(
                path, builder, tokenizer, s.blanks_separate_docs, stats=stats
            ):
                writers[num_examples % len(writers)].write(serialize(example))
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
    finally:
        for writer in writers:
            writer.close()
    if pending:
        counts += np.bincount(pending, minlength=vocab_size)
    if s.verbose:
        report(final=True)
    return {
        "num_examples": num_examples,
        "num_tokens": num_tokens,
        "num_lines": stats["lines"],
        "token_counts": counts,
        "tokenizer": type(tokenizer).__name__,
    }
