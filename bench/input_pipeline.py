"""Does the input pipeline keep up with the training step? examples/s delivered vs consumed.

python bench/input_pipeline.py [--batch_size=32 --seq_len=128 --seconds=10]
    [--step_seq_per_s=7.5 | (measured: a few steps of bench/train_step.py's step)]

Builds TFRecords from the bundled corpus (`electra_tf.pretraining_data.build_dataset`, 8 shards)
in a scratch folder, then reads them with the training input pipeline
(`pretraining_data.pretraining_dataset(..., is_training=True)`: repeat, file shuffle, interleave,
record shuffle, batch, parse, prefetch) as `run_pretraining.py` does, and counts the examples it
delivers per second of wall time over `--seconds` (after a 1 s warm-up), with nothing else running
in the process. The step's consumption is `--step_seq_per_s` if given, else measured here: the
median of `--step_steps` steps of the real training step (see bench/train_step.py), run after the
pipeline measurement. Requirement: ratio = pipeline / step >= 10 (so that the pipeline, which
shares the CPU with the step, costs the step under ~10%).

Prints one JSON line {pipeline_examples_per_s, step_examples_per_s, ratio, ...}, then a table.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

from absl import app, flags

from electra_tf import data_layout

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGS = flags.FLAGS
flags.DEFINE_string("corpus", os.path.join(REPO, "data/corpus/enwiki_sample.txt"), "Corpus.")
flags.DEFINE_string(
    "vocab_file", data_layout.vocab_file(os.path.join(REPO, "data", "vocab")), "Vocab file."
)
flags.DEFINE_integer("batch_size", 32, "Examples per batch.")
flags.DEFINE_integer("seq_len", 128, "max_seq_length.")
flags.DEFINE_float("seconds", 10.0, "How long to pull batches.")
flags.DEFINE_integer("threads", 2, "TensorFlow intra/inter-op threads.")
flags.DEFINE_float("step_seq_per_s", None, "The step's seq/s; None: measure it here.")
flags.DEFINE_integer("step_steps", 5, "Steps to measure when --step_seq_per_s is not given.")
flags.DEFINE_float("required_ratio", 10.0, "Exit 1 if the ratio is below this.")
flags.DEFINE_bool("json_only", False, "Print only the JSON line.")


def measure_pipeline(files, pretraining_data):
    ds = pretraining_data.pretraining_dataset(
        files, FLAGS.seq_len, FLAGS.batch_size, is_training=True, seed=0
    )
    it = iter(ds)
    t_end = time.perf_counter() + 1.0
    while time.perf_counter() < t_end:  # warm-up: open files, fill shuffle and prefetch buffers
        next(it)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < FLAGS.seconds:
        batch = next(it)
        n += int(batch["input_ids"].shape[0])
    return n / (time.perf_counter() - t0)


def measure_step():
    """The real step's seq/s, measured by bench/train_step.py in a child process."""
    cmd = [
        sys.executable,
        os.path.join(REPO, "bench", "train_step.py"),
        f"--batch_size={FLAGS.batch_size}",
        f"--seq_len={FLAGS.seq_len}",
        f"--steps={FLAGS.step_steps}",
        "--warmup=2",
        f"--threads={FLAGS.threads}",
        "--json_only",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["seq_per_s"]


def main(_):
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    tf.config.threading.set_inter_op_parallelism_threads(FLAGS.threads)
    from electra_tf import pretraining_data

    tmp = tempfile.mkdtemp(prefix="bench_input_pipeline_")
    out_dir = os.path.join(tmp, "tfrecords")
    info = pretraining_data.build_dataset(
        FLAGS.corpus,
        FLAGS.vocab_file,
        out_dir,
        max_seq_length=FLAGS.seq_len,
        num_out_files=8,
        verbose=False,
    )
    files = pretraining_data.check_tfrecords(
        os.path.join(out_dir, pretraining_data.TFRECORD_PREFIX + "*"), FLAGS.seq_len
    )
    pipe = measure_pipeline(files, pretraining_data)
    step = FLAGS.step_seq_per_s if FLAGS.step_seq_per_s else measure_step()
    ratio = pipe / step
    res = {
        "pipeline_examples_per_s": pipe,
        "step_examples_per_s": step,
        "ratio": ratio,
        "required_ratio": FLAGS.required_ratio,
        "ok": ratio >= FLAGS.required_ratio,
        "step_measured": not FLAGS.step_seq_per_s,
        "batch_size": FLAGS.batch_size,
        "seq_len": FLAGS.seq_len,
        "num_files": len(files),
        "num_examples": info.get("num_examples"),
        "threads": FLAGS.threads,
    }
    print(json.dumps(res), flush=True)
    if not FLAGS.json_only:
        src = "measured" if res["step_measured"] else "--step_seq_per_s"
        print(f"\ninput pipeline vs training step (batch {FLAGS.batch_size} x {FLAGS.seq_len})")
        print(f"{'tf.data pipeline delivers':32s} {pipe:10.1f} examples/s")
        print(f"{'training step consumes':32s} {step:10.1f} examples/s ({src})")
        print(
            f"{'ratio':32s} {ratio:10.1f}x (required >= {FLAGS.required_ratio:g}x): "
            f"{'OK' if res['ok'] else 'TOO SLOW'}"
        )
    if not res["ok"]:
        sys.exit(1)


if __name__ == "__main__":
    app.run(main)
