"""Fine-tuning accuracy by precision: `run_finetuning.py` on the movie-sentiment task (1,000
labels drawn with a fixed seed from the bundled training sentences, scored on the 1,250 dev
sentences) from the committed 1e14-FLOP ELECTRA encoder, at float32 and the two mixed
precisions, the same seeds for each: is 16-bit fine-tuning within seed noise of float32?

    python bench/finetune_precision.py [--seeds=3] [--precisions=float32,mixed_bfloat16,mixed_float16]

Prints one JSON line, then a table: each precision's accuracy per seed, the mean, and the mean
of its per-seed differences from float32 beside float32's own seed-to-seed spread. Each run is
one trial (10 epochs, lr 3e-4 without layer-wise decay, mean pooling), graph mode (XLA ignores
the dropout seed); the seeds pair the runs (the same data order, head initialisation and
dropout masks where the precision allows).
"""

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from electra_tf import data_layout

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENCODER = os.path.join(REPO, "experiments", "checkpoints", "pt_electra_1e14")
MOVIES = os.path.join(REPO, "data", "movie_sentiment")
HPARAMS = {
    "task_names": ["sst"],
    "max_seq_length": 64,
    "train_batch_size": 32,
    "num_train_epochs": 10,
    "learning_rate": 3e-4,
    "layerwise_lr_decay": 0.0,
    "classifier_pooling": "mean",
    "jit_compile": False,
    "log_every_steps": 1000,
}


def task_dir(root: str, labels: int) -> str:
    """DATA_DIR/finetuning_data/sst: `labels` training sentences (a fixed seeded draw), the dev
    sentences as dev."""
    with open(os.path.join(MOVIES, "train.tsv"), encoding="utf-8") as f:
        header, *rows = [line for line in f.read().splitlines() if line.strip()]
    random.Random(0).shuffle(rows)
    task = data_layout.finetuning_data_dir(root, "sst")
    os.makedirs(task)
    with open(os.path.join(task, "train.tsv"), "w", encoding="utf-8") as f:
        f.write("\n".join([header, *rows[:labels]]) + "\n")
    shutil.copy(os.path.join(MOVIES, "dev.tsv"), os.path.join(task, "dev.tsv"))
    return root


def finetune(data_dir: str, precision: str, seed: int) -> float:
    hp = {**HPARAMS, "precision": precision, "seed": seed, "init_checkpoint": ENCODER}
    name = f"{precision}_s{seed}"
    t = time.time()
    p = subprocess.run(
        [sys.executable, os.path.join(REPO, "run_finetuning.py"), f"--data_dir={data_dir}",
         f"--model_name={name}", f"--hparams={json.dumps(hp)}"],
        cwd=REPO, capture_output=True, text=True,
    )  # fmt: skip
    if p.returncode:
        sys.exit(f"error: {name}: run_finetuning.py failed:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    results = os.path.join(data_layout.model_dir(data_dir, name), "results", "sst.json")
    with open(results, encoding="utf-8") as f:
        accuracy = json.load(f)["trials"][0]["dev"]["accuracy"]
    print(f"{precision} seed {seed}: {accuracy:.2f} ({time.time() - t:.0f} s)", flush=True)
    return accuracy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--labels", type=int, default=1000)
    ap.add_argument("--precisions", default="float32,mixed_bfloat16,mixed_float16")
    ap.add_argument("--json_only", action="store_true")
    a = ap.parse_args()
    precisions = a.precisions.split(",")
    if precisions[0] != "float32":
        sys.exit("error: --precisions must start with float32 (the reference)")
    root = task_dir(tempfile.mkdtemp(prefix="ft_precision_"), a.labels)
    acc = {p: [finetune(root, p, s) for s in range(1, a.seeds + 1)] for p in precisions}
    base = acc["float32"]
    out = {"labels": a.labels, "dev_size": 1250, "seeds": list(range(1, a.seeds + 1)),
           "accuracy": acc, "cpu": _cpu()}  # fmt: skip
    out["mean_diff_vs_float32"] = {
        p: statistics.mean(x - y for x, y in zip(v, base)) for p, v in acc.items()
    }
    print(json.dumps(out))
    if a.json_only:
        return
    spread = statistics.stdev(base) if len(base) > 1 else float("nan")
    print(f"\n{a.labels} labels, dev 1,250, seeds {out['seeds']} ({out['cpu']})")
    print("| precision | accuracy per seed | mean | mean paired diff vs float32 |")
    print("|---|---|---|---|")
    for p, v in acc.items():
        d = out["mean_diff_vs_float32"][p]
        print(f"| {p} | {', '.join(f'{x:.2f}' for x in v)} | {statistics.mean(v):.2f} | {d:+.2f} |")
    print(f"float32's seed-to-seed standard deviation: {spread:.2f}")
    shutil.rmtree(root, ignore_errors=True)


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            info = f.read()
    except OSError:
        return "unknown CPU"
    name = next((l.split(":", 1)[1].strip() for l in info.splitlines() if "model name" in l), "")
    flags = [f for f in ("amx_bf16", "avx512_bf16") if f in info]
    return f"{name} ({', '.join(flags) or 'no bf16 units'})"


if __name__ == "__main__":
    main()
