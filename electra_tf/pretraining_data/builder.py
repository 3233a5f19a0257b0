"""`build_dataset`: a corpus -> TFRecord shards, `dataset_info.json` and `token_counts.txt`, with
one job per process."""

import concurrent.futures
import json
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from electra_tf import tokenization
from electra_tf import vocab as vocab_lib
from electra_tf.errors import UserError
from electra_tf.pretraining_data.corpus import has_nonblank_line, list_corpus_files
from electra_tf.pretraining_data.dataset_info import (
    file_sha256,
    find_dataset_info,
    remove_dataset_info,
    write_dataset_info,
    write_text,
    write_token_counts,
)
from electra_tf.pretraining_data.job import JobSettings, write_job
from electra_tf.pretraining_data.layout import (
    BUILD_MARKER,
    DATASET_INFO_FILE,
    LOCK_FILE,
    TFRECORD_PREFIX,
    TOKEN_COUNTS_FILE,
    is_temporary,
    output_file_names,
    temporary_name,
)
from electra_tf.pretraining_data.segmentation import load_segmenter, segmenter_version
from electra_tf.pretraining_data.tfrecord_check import check_tfrecords, scan_shards
from electra_tf.run_lock import RunLock


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
    carry_overflow: bool = False,
    word_segmenter: str | None = None,
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
    `overwrite`, or they are what a build that did not finish left (`layout.BUILD_MARKER`). The
    existing dataset is untouched until the new shards are all written (`_build`). Returns the
    dataset info (the contents of dataset_info.json). `carry_overflow`: the tokens an example
    trims start the next one instead of being dropped (`ExampleBuilder`; default: the original's).
    `word_segmenter` ("jieba"): the examples carry `word_starts`, the words of that segmenter
    (`segmentation`), for whole-word masking; the ids are the same as without it.
    """
    if word_segmenter is not None:
        load_segmenter(word_segmenter)  # installed? (one line naming the extra)
    if not tf.io.gfile.exists(vocab_file):
        raise UserError(f"vocab file not found: {vocab_file}")
    if "://" not in vocab_file:  # what pretraining needs of it, before anything is built
        vocab_lib.special_token_ids(vocab_lib.read_vocab(vocab_file), vocab_file)
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
    marker = os.path.join(output_dir, BUILD_MARKER)
    interrupted = tf.io.gfile.exists(marker) and find_dataset_info(output_dir, False) is None
    if existing and not overwrite and not interrupted:
        raise UserError(
            f"output_dir {output_dir} already holds {len(existing)} {TFRECORD_PREFIX}* files; "
            "pass --overwrite=true to replace them"
        )
    tf.io.gfile.makedirs(output_dir)
    lock = None
    if "://" not in output_dir:  # one build per directory
        lock = RunLock.acquire(os.path.join(output_dir, LOCK_FILE), "dataset directory")
    try:
        if interrupted and verbose:
            print(f"{output_dir}: an earlier build did not finish: replacing what it left")
        return _build(files, output_dir, existing, marker, interrupted, start=time.time(),
            settings=JobSettings(
                vocab_file, output_dir, max_seq_length, num_processes, num_out_files,
                blanks_separate_docs, do_lower_case, strip_accents, seed, verbose,
                tokenizer_class, carry_overflow, word_segmenter,
            ),
        )  # fmt: skip
    finally:
        if lock is not None:
            lock.release()


def _build(files, output_dir, existing, marker, interrupted, start, settings) -> dict:
    """The jobs into temporary shards, then the swap: the old dataset_info.json goes first, the
    shards are renamed into place (old ones not replaced are removed), token_counts.txt and
    dataset_info.json come last; `BUILD_MARKER` says a build is under way until then."""
    s = settings
    for f in tf.io.gfile.listdir(output_dir):  # what a killed build left
        if is_temporary(f):
            tf.io.gfile.remove(os.path.join(output_dir, f))
    write_text(marker, json.dumps({"started": time.strftime("%Y-%m-%dT%H:%M:%S")}) + "\n")
    swapping = False
    try:
        results = [write_job(0, files, s)] if s.num_jobs == 1 else _run_jobs(files, s)
        num_examples = sum(r["num_examples"] for r in results)
        num_tokens = sum(r["num_tokens"] for r in results)
        names = output_file_names(output_dir, s.num_out_files)
        if num_examples == 0:
            for path in names:
                if tf.io.gfile.exists(temporary_name(path)):
                    tf.io.gfile.remove(temporary_name(path))
            raise UserError(f"corpus is empty: no tokens in {len(files)} file(s) ({files[0]}, ...)")
        swapping = True
        remove_dataset_info(output_dir)
        for path in names:
            tf.io.gfile.rename(temporary_name(path), path, overwrite=True)
        for path in set(existing) - set(names):
            tf.io.gfile.remove(path)
        counts = np.sum([r["token_counts"] for r in results], axis=0)
        write_token_counts(output_dir, counts)
        info = _info(files, s, results, num_examples, num_tokens, counts, names)
        write_dataset_info(output_dir, info)
    except BaseException:
        if not (swapping or interrupted) and tf.io.gfile.exists(marker):
            tf.io.gfile.remove(marker)  # the directory is as it was before the build
        raise
    tf.io.gfile.remove(marker)
    _report_text_problems(results, s.verbose)
    if s.verbose:
        elapsed = max(time.time() - start, 1e-9)
        print(
            f"wrote {num_examples:,} examples ({num_tokens:,} tokens) to {s.num_out_files} files "
            f"in {output_dir} in {elapsed:.1f}s ({num_tokens / elapsed:,.0f} tokens/s)",
            flush=True,
        )
    return info


def _info(files, s, results, num_examples, num_tokens, counts, names) -> dict:
    records = {}
    for r in results:
        records.update(r["records"])
    problems = [r["text_problems"] for r in results]
    return {
        "num_examples": num_examples,
        "num_tokens": num_tokens,
        "max_seq_length": s.max_seq_length,
        "vocab_size": len(counts),
        "vocab_sha256": file_sha256(s.vocab_file),
        "do_lower_case": bool(s.do_lower_case),
        "strip_accents": bool(s.strip_accents),
        "seed": s.seed,
        "num_out_files": s.num_out_files,
        "num_processes": s.num_jobs,
        "blanks_separate_docs": bool(s.blanks_separate_docs),
        "carry_overflow": bool(s.carry_overflow),
        **_segmenter_info(s.word_segmenter),
        "num_corpus_files": len(files),
        "num_lines": sum(r["num_lines"] for r in results),
        "tokenizer": results[0]["tokenizer"],
        "token_counts_file": TOKEN_COUNTS_FILE,
        "invalid_utf8_lines": sum(p.get("invalid_utf8_lines", 0) for p in problems),
        "nul_lines": sum(p.get("nul_lines", 0) for p in problems),
        "shards": [
            {
                "file": os.path.basename(n),
                "records": records[os.path.basename(n)],
                "bytes": tf.io.gfile.stat(n).length,
            }
            for n in names
        ],
    }


def _segmenter_info(name: str | None) -> dict:
    """What dataset_info.json records of a segmenter (nothing without one: a build without one
    writes the same info as before segmenters existed)."""
    if name is None:
        return {}
    return {"word_segmenter": name, "word_segmenter_version": segmenter_version(name)}


def _report_text_problems(results: list, verbose: bool) -> None:
    """One warning line per corpus file with invalid UTF-8 or NUL characters (the policy:
    replaced and dropped, counted; see `corpus`)."""
    what = {
        "invalid_utf8_lines": "invalid UTF-8 (replaced by U+FFFD, which the tokenizer drops)",
        "nul_lines": "NUL characters (dropped by the tokenizer)",
    }
    for r in results:
        for path, found in sorted(r["text_problems"].get("files", {}).items()):
            for key, (count, first) in sorted(found.items()):
                print(
                    f"warning: {path}: line {first}: {what[key]}; {count} such line(s) in the file",
                    file=sys.stderr,
                    flush=True,
                )


def _run_jobs(files: list, settings: JobSettings) -> list:
    """Every job in its own worker process; their results in job order."""
    # fork is fast (the children inherit the imported modules and the tables) but unsafe once the
    # TF runtime runs; spawn makes each worker import TensorFlow
    method = "spawn" if _tf_runtime_started() else "fork"
    if method == "fork" and settings.tokenizer_class in (None, tokenization.FullTokenizer):
        tokenization.preload_normalization_tables(settings.do_lower_case, settings.strip_accents)
    context = multiprocessing.get_context(method)
    # a worker that dies (killed, out of memory) raises BrokenProcessPool here instead of hanging;
    # a worker dies with this process (killed: it would go on writing into the directory)
    with concurrent.futures.ProcessPoolExecutor(
        settings.num_jobs, mp_context=context, initializer=_die_with_parent
    ) as pool:
        futures = [pool.submit(write_job, j, files, settings) for j in range(settings.num_jobs)]
        return [f.result() for f in futures]


def _die_with_parent() -> None:
    """Linux: SIGKILL this worker when the build process dies (prctl PR_SET_PDEATHSIG)."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):  # not Linux
        pass


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


def index_dataset(
    output_dir: str,
    vocab_file: str,
    max_seq_length: int,
    do_lower_case: bool = True,
    overwrite: bool = False,
) -> dict:
    """Writes a dataset_info.json for TFRecords made elsewhere (the original's builder writes
    none, and the trainer requires one): their schema is checked and every shard read, its
    records counted; the info says `"indexed": true` (no corpus counts, no token_counts.txt)."""
    existing = find_dataset_info(output_dir, False)
    if existing is not None and not overwrite:
        raise UserError(f"{existing} exists; pass --overwrite=true to replace it")
    files = check_tfrecords(output_dir, max_seq_length)
    damaged = scan_shards(files, max_seq_length)
    if damaged:
        d = damaged[0]
        raise UserError(f"{d.path}: record {d.readable} does not read ({d.message})")
    records = [
        int(tf.data.TFRecordDataset(f).reduce(np.int64(0), lambda n, _: n + 1).numpy())
        for f in files
    ]
    info = {
        "num_examples": sum(records),
        "max_seq_length": max_seq_length,
        "vocab_size": len(vocab_lib.read_vocab(vocab_file)),
        "vocab_sha256": file_sha256(vocab_file),
        "do_lower_case": bool(do_lower_case),
        "num_out_files": len(files),
        "indexed": True,
        "shards": [
            {"file": os.path.basename(f), "records": n, "bytes": tf.io.gfile.stat(f).length}
            for f, n in zip(files, records)
        ],
    }
    write_dataset_info(output_dir, info)
    print(
        f"wrote {os.path.join(output_dir, DATASET_INFO_FILE)}: {len(files)} shards, "
        f"{sum(records):,} records",
        flush=True,
    )
    return info
