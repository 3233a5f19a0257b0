"""Does mixed_bfloat16 train to the same loss as float32? The same run (model, data order, seed)
in each precision, the training loss side by side.

    python bench/precision_curves.py [--steps=400 --window=25 --precisions=float32,mixed_bfloat16
        --hparams=experiments/recipes/pretrain_small_budget.json --out=FILE.json]

Each precision runs in its own process (a Keras dtype policy is process-wide) on TFRecords built
from the bundled corpora with the recipe's vocab and length: the recipe's model, batch, learning
rate and warm-up, the step function `run_pretraining.py` runs (one step per call, so that every
step's loss is kept). Prints a table of the loss averaged over windows of `--window` steps, the
difference from the first precision, and the wall time of each run; `--out` also writes them as
JSON. On a CPU without bfloat16 units mixed_bfloat16 still runs (emulated, slowly).
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGS = flags.FLAGS
flags.DEFINE_integer("steps", 400, "Training steps per precision.")
flags.DEFINE_integer("window", 25, "Steps per averaged row of the table.")
flags.DEFINE_list("precisions", ["float32", "mixed_bfloat16"], "The first is the reference.")
flags.DEFINE_string(
    "hparams",
    os.path.join(REPO, "experiments", "recipes", "pretrain_small_budget.json"),
    "Pretraining recipe (vocab_file relative to the repo root).",
)
flags.DEFINE_integer("threads", 2, "Intra- and inter-op threads.")
flags.DEFINE_string("out", None, "Also write the curves here (JSON).")
flags.DEFINE_string("worker", None, "Internal: run one precision, print its per-step losses.")
flags.DEFINE_string("data_dir", None, "Internal: the worker's data dir.")


def build_data(tmp: str, recipe: dict) -> str:
    from electra_tf import data_layout, pretraining_data

    data_dir = os.path.join(tmp, "data")
    pretraining_data.build_dataset(
        os.path.join(REPO, "data", "corpus"),
        os.path.join(REPO, recipe["vocab_file"]),
        data_layout.tfrecord_dir(data_dir),
        max_seq_length=recipe["max_seq_length"],
        num_processes=2,
        num_out_files=4,
        verbose=False,
    )
    return data_dir


def run_worker(recipe: dict) -> None:
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    tf.config.threading.set_inter_op_parallelism_threads(FLAGS.threads)
    from electra_tf.pretraining_config import PretrainingConfig
    from electra_tf.recipes import schedule_for_steps
    from electra_tf.train import Trainer

    hparams = {
        **recipe,
        **schedule_for_steps(recipe, FLAGS.steps),
        "vocab_file": os.path.join(REPO, recipe["vocab_file"]),
        "precision": FLAGS.worker,
        "do_eval": False,
        "log_every_steps": 10**9,
    }
    config = PretrainingConfig.from_flat(f"precision_{FLAGS.worker}", FLAGS.data_dir, hparams)
    trainer = Trainer(config)
    iterators = trainer.iterators(is_training=True)
    step_fn = trainer.step_function()
    losses, t0 = [], time.perf_counter()
    for _ in range(FLAGS.steps):
        _, loss = step_fn(iterators, tf.constant(1, tf.int32))
        losses += [float(v) for v in loss.numpy()]
    print(json.dumps({"losses": losses, "seconds": time.perf_counter() - t0}), flush=True)


def main(_):
    with open(FLAGS.hparams, encoding="utf-8") as f:
        recipe = json.load(f)
    if FLAGS.worker:
        return run_worker(recipe)
    tmp = tempfile.mkdtemp(prefix="bench_precision_")
    data_dir = build_data(tmp, recipe)
    runs = {}
    for precision in FLAGS.precisions:
        print(f"training {FLAGS.steps} steps in {precision} ...", flush=True)
        cmd = [sys.executable, os.path.abspath(__file__), f"--worker={precision}",
               f"--data_dir={data_dir}", f"--steps={FLAGS.steps}", f"--hparams={FLAGS.hparams}",
               f"--threads={FLAGS.threads}"]  # fmt: skip
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            raise SystemExit(f"error: the {precision} run failed:\n{p.stderr[-3000:]}")
        runs[precision] = json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("{")][-1])
    from electra_tf.train import devices

    w, ref = FLAGS.window, FLAGS.precisions[0]
    rows = []
    for start in range(0, FLAGS.steps, w):
        means = {k: statistics.fmean(r["losses"][start : start + w]) for k, r in runs.items()}
        rows.append({"steps": f"{start + 1}-{min(start + w, FLAGS.steps)}", **means})
    result = {
        "cpu": devices.cpu_info()[0],
        "hparams": os.path.relpath(FLAGS.hparams, REPO),
        "steps": FLAGS.steps,
        "window": w,
        "seconds": {k: r["seconds"] for k, r in runs.items()},
        "rows": rows,
    }
    print(json.dumps(result))
    others = FLAGS.precisions[1:]
    print(f"\n{result['hparams']}, {FLAGS.steps} steps, on {result['cpu']}: mean training loss")
    print(f"{'steps':>10s} " + " ".join(f"{k:>15s}" for k in FLAGS.precisions)
          + "".join(f" {'minus ' + ref:>15s}" for _ in others))  # fmt: skip
    for row in rows:
        print(f"{row['steps']:>10s} " + " ".join(f"{row[k]:15.4f}" for k in FLAGS.precisions)
              + "".join(f" {row[k] - row[ref]:+15.4f}" for k in others))  # fmt: skip
    print("wall s: " + ", ".join(f"{k} {s:.0f}" for k, s in result["seconds"].items()))
    if FLAGS.out:
        with open(FLAGS.out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    app.run(main)
