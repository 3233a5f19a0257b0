"""Throughput of building pretraining TFRecords: tensorflow-text tokenizer (1 and 2 processes) vs
pure Python.

python bench/build_dataset.py [--corpus=data/corpus/enwiki_sample.txt] [--max_seq_length=128]

All runs do the same work (`electra_tf.pretraining_data.build_dataset`: tokenize, ExampleBuilder,
serialize, write TFRecords) on the corpus split at document boundaries into 2 files (so that 2
processes both have work); the baseline uses the pure-Python `ReferenceTokenizer`. tokens/s counts
the corpus's WordPiece tokens per second of wall time, including the tokenizer's set-up in each
process but not the Python/TensorFlow import. The *_steady runs time one process's pipeline after
its tokenizer is set up (what matters on a large corpus). CPU seconds (this process and its
children) are printed too: on a shared machine they vary less than wall time. Prints one JSON
line, then a table.
"""

import json
import os
import random
import resource
import tempfile
import time

import tensorflow as tf
from absl import app, flags

from electra_tf import data_layout, pretraining_data, tokenization

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGS = flags.FLAGS
flags.DEFINE_string("corpus", os.path.join(REPO, "data/corpus/enwiki_sample.txt"), "Corpus file.")
flags.DEFINE_string(
    "vocab_file", data_layout.vocab_file(os.path.join(REPO, "data", "vocab")), "Vocab file."
)
flags.DEFINE_integer("max_seq_length", 128, "Example length.")
flags.DEFINE_integer("num_out_files", 8, "Output shards.")


def split_corpus(path: str, out_dir: str) -> list:
    """Splits the corpus at the blank line nearest its middle into 2 files."""
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    blanks = [i for i, line in enumerate(lines) if not line.strip()] or [len(lines) // 2]
    cut = min(blanks, key=lambda i: abs(i - len(lines) // 2))
    paths = []
    for k, part in enumerate((lines[:cut], lines[cut:])):
        paths.append(os.path.join(out_dir, f"part{k}.txt"))
        with open(paths[-1], "w", encoding="utf-8") as f:
            f.writelines(part)
    return paths


def read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def cpu_seconds() -> float:
    return sum(
        r.ru_utime + r.ru_stime
        for r in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    )


def timed_build(corpus_dir: str, out_dir: str, num_processes: int, tokenizer_class=None) -> tuple:
    start, cpu_start = time.perf_counter(), cpu_seconds()
    info = pretraining_data.build_dataset(
        corpus_dir,
        FLAGS.vocab_file,
        out_dir,
        max_seq_length=FLAGS.max_seq_length,
        num_processes=num_processes,
        num_out_files=FLAGS.num_out_files,
        verbose=False,
        tokenizer_class=tokenizer_class,
        overwrite=True,
    )
    return time.perf_counter() - start, cpu_seconds() - cpu_start, info


def steady_state(tokenizer_class, files: list, out_path: str) -> tuple:
    """One process's pipeline after its set-up: (set-up s, wall s, cpu s, examples)."""
    start = time.perf_counter()
    tokenizer = tokenizer_class(FLAGS.vocab_file)
    tokenizer.tokenize_to_ids(["warm up"])  # construction + first call (tracing)
    setup = time.perf_counter() - start
    builder = pretraining_data.ExampleBuilder(tokenizer, FLAGS.max_seq_length, random.Random(0))
    serialize = pretraining_data.ExampleSerializer(len(tokenizer.vocab))
    num_examples = 0
    start, cpu_start = time.perf_counter(), cpu_seconds()
    with tf.io.TFRecordWriter(out_path) as writer:
        for path in files:
            for example in pretraining_data.iter_file_examples(path, builder, tokenizer):
                writer.write(serialize(example))
                num_examples += 1
    return setup, time.perf_counter() - start, cpu_seconds() - cpu_start, num_examples


def main(argv) -> None:
    del argv
    fast_class = pretraining_data.default_tokenizer_class()
    python_class = tokenization.ReferenceTokenizer
    with tempfile.TemporaryDirectory() as tmp:
        corpus_dir = os.path.join(tmp, "corpus")
        os.makedirs(corpus_dir)
        files = split_corpus(FLAGS.corpus, corpus_dir)
        runs = {}
        # 2 processes first: they fork, which needs this process's TF runtime not started yet
        runs["fast_2proc"] = timed_build(corpus_dir, os.path.join(tmp, "f2"), 2)
        runs["fast_1proc"] = timed_build(corpus_dir, os.path.join(tmp, "f1"), 1)
        runs["python_1proc"] = timed_build(corpus_dir, os.path.join(tmp, "p1"), 1, python_class)
        same = all(
            read_bytes(os.path.join(tmp, "f1", n)) == read_bytes(os.path.join(tmp, "p1", n))
            for n in os.listdir(os.path.join(tmp, "p1"))
            if n.startswith("pretrain_data")
        )
        steady = {
            "fast_steady": steady_state(fast_class, files, os.path.join(tmp, "s1")),
            "python_steady": steady_state(python_class, files, os.path.join(tmp, "s2")),
        }
    with open(FLAGS.corpus, encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    corpus_tokens = sum(map(len, python_class(FLAGS.vocab_file).tokenize_to_ids(lines)))

    result = {
        "corpus_tokens": corpus_tokens,
        "max_seq_length": FLAGS.max_seq_length,
        "fast_tokenizer": fast_class.__name__,
        "fast_tokenizer_setup_s": round(steady["fast_steady"][0], 2),
        "fast_equals_python_output": same,
        "load_average_1min": round(os.getloadavg()[0], 2),
    }
    rows = {
        name: (seconds, cpu, info["num_examples"]) for name, (seconds, cpu, info) in runs.items()
    }
    rows.update({name: (wall, cpu, n) for name, (_, wall, cpu, n) in steady.items()})
    base = {"": rows["python_1proc"], "_steady": rows["python_steady"]}
    for name, (seconds, cpu, num_examples) in rows.items():
        ref = base["_steady" if name.endswith("_steady") else ""]
        result[name] = {
            "seconds": round(seconds, 2),
            "cpu_seconds": round(cpu, 2),
            "tokens_per_s": round(corpus_tokens / seconds),
            "tokens_per_cpu_s": round(corpus_tokens / cpu),
            "speedup": round(ref[0] / seconds, 2),
            "cpu_speedup": round(ref[1] / cpu, 2),
            "num_examples": num_examples,
        }
    print(json.dumps(result))
    print(
        f"{'run':<14} {'seconds':>8} {'cpu s':>7} {'tokens/s':>10} {'tokens/cpu-s':>13} "
        f"{'speedup':>8} {'cpu speedup':>12} {'examples':>9}"
    )
    for name in rows:
        r = result[name]
        print(
            f"{name:<14} {r['seconds']:>8.2f} {r['cpu_seconds']:>7.2f} {r['tokens_per_s']:>10,} "
            f"{r['tokens_per_cpu_s']:>13,} {r['speedup']:>7.2f}x {r['cpu_speedup']:>11.2f}x "
            f"{r['num_examples']:>9,}"
        )
    print(
        f"{corpus_tokens:,} corpus tokens; *_1proc/*_2proc: build_dataset end to end (tokenizer set-up "
        f"in each process included: {fast_class.__name__} {result['fast_tokenizer_setup_s']:.2f}s); "
        f"*_steady: one process after set-up (speedups vs python_steady). "
        f"Identical TFRecords fast vs pure Python: {same}. Load average {result['load_average_1min']}."
    )


if __name__ == "__main__":
    app.run(main)
