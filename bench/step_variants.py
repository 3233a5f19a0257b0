"""Sequences/s of the pretraining step on several paths, one subprocess per variant (each printing
bench/train_step.py's JSON), then one table.

    python bench/step_variants.py [--set=paths|precisions --steps=5 --warmup=2 --batch_size=32
        --rounds=1 --peer=hf]

--set=paths (the default): float32 without XLA, with XLA, with XLA and gradient accumulation,
mixed_bfloat16 without and with XLA. --set=precisions: the step as run_pretraining.py runs it by
default (float32, `jit_compile: auto`, which on a long run measures XLA on / off / the fused
element-wise pieces: `electra_tf.train.step_path`), the same at mixed_bfloat16, and
`precision: auto`; with --peer=hf each beside the Hugging Face step at the precision it ran.
"""

import json
import os
import subprocess
import sys

from absl import app, flags

HERE = os.path.dirname(os.path.abspath(__file__))
SETS = {
    "paths": [
        ("float32, no XLA", ["--jit_compile=false"]),
        ("float32, XLA", ["--jit_compile=true"]),
        (
            "float32, XLA, 4 accumulation steps",
            ["--jit_compile=true", "--gradient_accumulation_steps=4"],
        ),
        ("mixed_bfloat16, no XLA", ["--jit_compile=false", "--precision=mixed_bfloat16"]),
        ("mixed_bfloat16, XLA", ["--jit_compile=true", "--precision=mixed_bfloat16"]),
    ],
    "precisions": [
        ("float32 (the default)", []),
        ("mixed_bfloat16", ["--precision=mixed_bfloat16"]),
        ("precision: auto", ["--precision=auto"]),
    ],
}

flags.DEFINE_enum("set", "paths", list(SETS), "Which variants.")
flags.DEFINE_integer("steps", 5, "Measured steps per variant (per round).")
flags.DEFINE_integer("warmup", 2, "Unmeasured steps per variant (the first compiles).")
flags.DEFINE_integer("batch_size", 32, "Global batch.")
flags.DEFINE_integer("rounds", 1, "Rounds, alternating with the peer.")
flags.DEFINE_enum("peer", "", ["", "hf"], "Also run the Hugging Face step beside each variant.")
FLAGS = flags.FLAGS


def main(_):
    rows = []
    for name, args in SETS[FLAGS.set]:
        cmd = [
            sys.executable,
            os.path.join(HERE, "train_step.py"),
            "--json_only",
            f"--steps={FLAGS.steps}",
            f"--warmup={FLAGS.warmup}",
            f"--batch_size={FLAGS.batch_size}",
            f"--rounds={FLAGS.rounds}",
            *([f"--peer={FLAGS.peer}"] if FLAGS.peer else []),
            *args,
        ]
        print(f"running {name} ...", flush=True)
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        result = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
        print(json.dumps(result), flush=True)
        rows.append((name, result))
    cpu = rows[0][1]["cpu"]
    print(f"\nbatch {FLAGS.batch_size} x {rows[0][1]['seq_len']}, on {cpu}")
    peer = " HF seq/s   ratio" if FLAGS.peer else ""
    print(f"{'variant':36s} {'path taken':58s} {'seq/s':>8s} {'MFU':>6s}{peer}")
    for name, r in rows:
        path = f"{r['precision']}, XLA {'on' if r['jit_compile'] else 'off'}"
        path += ", element-wise pieces XLA-fused" if r.get("fused_elementwise") else ""
        line = f"{name:36s} {path:58s} {r['seq_per_s']:8.2f} {r['mfu']:6.1%}"
        if FLAGS.peer:
            line += f" {r['peer_seq_per_s']:8.2f} {r['ratio']:6.2f}x"
        print(line)


if __name__ == "__main__":
    app.run(main)
