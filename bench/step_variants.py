"""Sequences/s of the pretraining step: float32 without XLA, with XLA, with gradient accumulation,
and with mixed precision (one subprocess per variant, each printing bench/train_step.py's JSON).

    python bench/step_variants.py [--steps=5 --warmup=2 --batch_size=32]
"""

import json
import os
import subprocess
import sys

from absl import app, flags

HERE = os.path.dirname(os.path.abspath(__file__))
VARIANTS = [
    ("float32, no XLA", ["--jit_compile=false"]),
    ("float32, XLA", ["--jit_compile=true"]),
    (
        "float32, XLA, 4 accumulation steps",
        ["--jit_compile=true", "--gradient_accumulation_steps=4"],
    ),
    ("mixed_bfloat16, no XLA", ["--jit_compile=false", "--precision=mixed_bfloat16"]),
    ("mixed_bfloat16, XLA", ["--jit_compile=true", "--precision=mixed_bfloat16"]),
]

flags.DEFINE_integer("steps", 5, "Measured steps per variant.")
flags.DEFINE_integer("warmup", 2, "Unmeasured steps per variant (the first compiles).")
flags.DEFINE_integer("batch_size", 32, "Global batch.")
FLAGS = flags.FLAGS


def main(_):
    rows = []
    for name, args in VARIANTS:
        cmd = [
            sys.executable,
            os.path.join(HERE, "train_step.py"),
            "--json_only",
            f"--steps={FLAGS.steps}",
            f"--warmup={FLAGS.warmup}",
            f"--batch_size={FLAGS.batch_size}",
            *args,
        ]
        print(f"running {name} ...", flush=True)
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        result = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
        rows.append((name, result))
    print(json.dumps({name: r["seq_per_s"] for name, r in rows}))
    print(f"{'variant':40s} {'seq/s':>8s} {'MFU':>7s}")
    for name, r in rows:
        print(f"{name:40s} {r['seq_per_s']:8.2f} {r['mfu']:7.1%}")


if __name__ == "__main__":
    app.run(main)
