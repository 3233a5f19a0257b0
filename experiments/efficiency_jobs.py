"""`efficiency.py --jobs=N`: each objective (its pretraining, held-out evaluation and
fine-tuning) in its own process, `python -m experiments.efficiency` with the parent's flags, at
most N at a time, into the shared work dir."""

import os
import subprocess
import sys
import time
from typing import List

from absl import flags

from electra_tf.errors import UserError

FLAGS = flags.FLAGS  # efficiency.py defines them
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def progress(msg: str) -> None:
    print(f"[efficiency {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# The flags a child process needs to compute the same data, plan and fine-tuning as its parent.
CHILD_FLAGS = ("recipe", "finetune_recipe", "budgets", "scale", "budget_flops", "seeds",
               "bootstrap", "corpus_dir", "movie_data", "num_shards", "recipe_overrides",
               "validation_split")  # fmt: skip


def child_command(work_dir: str, objective: str, baseline: bool) -> List[str]:
    """efficiency.py for one objective (its pretraining, held-out evaluation and fine-tuning, into
    the shared work dir; with `baseline`, the random-init fine-tuning too). Its outputs go to a
    scratch folder; the parent then finds every run done and writes the real ones."""
    args = [sys.executable, "-m", "experiments.efficiency", f"--work_dir={work_dir}",
            f"--out_dir={os.path.join(work_dir, 'parts', objective)}",
            f"--objectives={objective}", "--jobs=1", f"--baseline={str(baseline).lower()}"]  # fmt: skip
    for name in CHILD_FLAGS:
        value = getattr(FLAGS, name)
        if value is not None:
            args.append(f"--{name}={','.join(value) if isinstance(value, list) else value}")
    return args


def run_children(work_dir: str) -> None:
    """Every objective in its own process, at most --jobs at a time; stops at the first failure
    (its log named). The first objective's child also fine-tunes the baseline (it needs that
    objective's final checkpoint for the shape, as the sequential path does)."""
    os.makedirs(os.path.join(work_dir, "parts"), exist_ok=True)
    queue = [(obj, i == 0 and FLAGS.baseline) for i, obj in enumerate(FLAGS.objectives)]
    running = []
    while queue or running:
        while queue and len(running) < FLAGS.jobs:
            obj, baseline = queue.pop(0)
            log_path = os.path.join(work_dir, "parts", f"{obj}.log")
            log_file = open(log_path, "a", encoding="utf-8")
            proc = subprocess.Popen(child_command(work_dir, obj, baseline), stdout=log_file,
                                    stderr=subprocess.STDOUT, cwd=REPO)  # fmt: skip
            running.append((obj, proc, log_file, log_path))
            progress(f"started {obj} in process {proc.pid} (log {log_path})")
        time.sleep(5)
        for item in list(running):
            obj, proc, log_file, log_path = item
            if proc.poll() is None:
                continue
            log_file.close()
            running.remove(item)
            if proc.returncode:
                for _, other, f, _ in running:
                    other.terminate()
                    f.close()
                raise UserError(f"{obj} failed (exit {proc.returncode}); see {log_path}")
            progress(f"{obj} done")
