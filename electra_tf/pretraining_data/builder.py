"""`build_dataset`: a corpus -> TFRecord shards, `dataset_info.json` and `token_counts.txt`, with
one job per process."""

import concurrent.futures
import multiprocessing
import os
import time
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from electra_tf import tokenization
from electra_tf.errors import UserError
from electra_tf.pretraining_data.corpus import has_nonblank_line, list_corpus_files
from electra_tf.pretraining_data.dataset_info import (
    file_sha256,
    write_dataset_info,
    write_token_counts,
)
from electra_tf.pretraining_data.job import JobSettings, write_job
from electra_tf.pretraining_data.layout import TFRECORD_PREFIX, TOKEN_COUNTS_FILE


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
    """Writes `pretrain_data.tfrecord-I-of-N`, `dataset_info.json` and `token_counts.txt` to
    output_dir.

    `corpus_files`: a directory of text files, a file, a glob, or a list of those (one sentence per
    line, blank lines between documents). Corpus file k goes to job k % num_processes; each job
    runs in its own process (when num_processes > 1), shuffles its files with a seeded rng and
    writes round-robin to the output files i with i % num_processes == job. Job j's random draws
    (file shuffle, then the builder's) come from
    `random.Random(f"electra_tf-pretraining-data-{seed}-{j}")`: the output depends only on the
    arguments. Workers are forked when this process has not started TensorFlow's runtime yet
    (fast), else spawned (each imports TensorFlow). Refuses to replace existing shards unless
    `overwrite` (which deletes them first). Returns the dataset info (the contents of
    dataset_info.json).
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
    if not has_nonblank_line(files):
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
    settings = JobSettings(
        vocab_file, output_dir, max_seq_length, num_processes, num_out_files,
        blanks_separate_docs, do_lower_case, strip_accents, seed, verbose, tokenizer_class,
    )  # fmt: skip
    if num_processes == 1:
        results = [write_job(0, files, settings)]
    else:
        results = _run_jobs(files, settings)

    num_examples = sum(r["num_examples"] for r in results)
    num_tokens = sum(r["num_tokens"] for r in results)
    if num_examples == 0:
        for path in tf.io.gfile.glob(os.path.join(output_dir, TFRECORD_PREFIX + "*")):
            tf.io.gfile.remove(path)
        raise UserError(f"corpus is empty: no tokens in {len(files)} file(s) ({files[0]}, ...)")
    counts = np.sum([r["token_counts"] for r in results], axis=0)
    write_token_counts(output_dir, counts)
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
    write_dataset_info(output_dir, info)
    if verbose:
        elapsed = max(time.time() - start, 1e-9)
        print(
            f"wrote {num_examples:,} examples ({num_tokens:,} tokens) to {num_out_files} files in "
            f"{output_dir} in {elapsed:.1f}s ({num_tokens / elapsed:,.0f} tokens/s)",
            flush=True,
        )
    return info


def _run_jobs(files: list, settings: JobSettings) -> list:
    """Every job in its own worker process; their results in job order."""
    # fork is fast (the children inherit the imported modules and the tables) but unsafe once the
    # TF runtime runs; spawn makes each worker import TensorFlow
    method = "spawn" if _tf_runtime_started() else "fork"
    if method == "fork" and settings.tokenizer_class in (None, tokenization.FullTokenizer):
        tokenization.preload_normalization_tables(settings.do_lower_case, settings.strip_accents)
    context = multiprocessing.get_context(method)
    # a worker that dies (killed, out of memory) raises BrokenProcessPool here instead of hanging
    with concurrent.futures.ProcessPoolExecutor(settings.num_jobs, mp_context=context) as pool:
        futures = [pool.submit(write_job, j, files, settings) for j in range(settings.num_jobs)]
        return [f.result() for f in futures]


def _tf_runtime_started() -> bool:
    """Whether this process has started TensorFlow's runtime (then forking it is unsafe).

    TensorFlow has no public way to ask this: the public probes (`tf.config.list_logical_devices`
    and the like) start the runtime themselves, and a thread count cannot tell either (importing
    TensorFlow already starts a native thread). Always spawning, or a forkserver, would cost each
    build a TensorFlow import (seconds). So this reads the eager context's private state, here
    only, and assumes the worst if that ever moves.
    """
    try:
        from tensorflow.python.eager import context

        return context._context is not None and bool(context._context._initialized)
    except (ImportError, AttributeError):  # private API moved: be safe
        return True
