"""Throughput of one full ELECTRA pretraining step: seq/s, tokens/s, FLOP/s and MFU, optionally
side by side with the same step in Hugging Face transformers (PyTorch).

python bench/train_step.py [--model_size=small --batch_size=32 --seq_len=128 --steps=10
    --warmup=3 --jit_compile=auto|true|false --iterations_per_loop=10 --precision=float32
    --gradient_accumulation_steps=1 --generator_hidden_size=0.25 --[no]dropout --threads=2
    --peak_flops=F] [--peer=hf --peer_python=/work/venv-bench/bin/python --rounds=2]
    [--data=synthetic|corpus] [--json_only] [--profile_dir=DIR] [--hparams=RECIPE.json]
    [--compare_loops=1,20]

Ours is exactly what `run_pretraining.py` runs with its defaults: a `Trainer` (the default
ELECTRA-small config: embedding 128, generator 1/4, AdamW, clip 1.0) under a OneDeviceStrategy,
and the function its `train()` calls (`Trainer.step_function`: masking, generator, sampling,
discriminator, gradients, clipping and the optimizer update, XLA-compiled where `jit_compile`
says so; `--iterations_per_loop` steps per call, 10 as the default log interval makes them).
The batches come from a `tf.data` iterator: by default one synthetic batch repeated
(`--data=synthetic`, random word ids, every position a real token, so the step is measured
alone), or `--data=corpus`: TFRecords built from the bundled corpus and read by the runner's own
input pipeline.

Each call is timed to the end of its work (the losses are fetched); a step's time is its call's
over its steps; the figure is the median over `--steps` steps after `--warmup` steps (the first
includes tracing and compilation). FLOP/s and MFU use the real arithmetic of the step (lookups as
gathers, backward = 2x forward; the paper's convention is printed beside it) against the peak
`run_pretraining.py` uses (a table for accelerators, else this CPU's measured matmul peak;
`--peak_flops` overrides).

`--peer=hf` starts bench/peer_hf_step.py in a separate Python (`--peer_python`, which needs torch
and transformers: bench/requirements.txt) on the same batch, with the same thread count and
precision (`torch.autocast` for the mixed ones), and alternates: `--rounds` times, our `--steps`
steps then its `--steps` steps, so that both see the same machine load. ratio = ours / peer.

`--hparams=experiments/recipes/pretrain_small_budget.json --seq_len=64` measures the recipe's
(and the demo's) small model instead of a preset; `--compare_loops=1,20` measures those
`iterations_per_loop` values against each other (alternating rounds, no peer): what one host
synchronisation per call saves.

Prints one JSON line, then a table (unless --json_only).
"""

import json
import statistics
import time

from absl import app, flags
from step_common import FLAGS, Peer, peer_spec, prepare

flags.DEFINE_integer("steps", 10, "Measured steps (per round).")
flags.DEFINE_integer("warmup", 3, "Unmeasured steps first (the first one compiles).")
flags.DEFINE_integer("rounds", 1, "Measurement rounds (alternating with the peer).")
flags.DEFINE_list(
    "compare_loops", [],
    "e.g. 1,20: measure these iterations_per_loop values instead, alternating in one process "
    "(the same compiled step function; --steps should be a multiple of the largest).",
)  # fmt: skip
flags.DEFINE_bool("json_only", False, "Print only the JSON line.")
flags.DEFINE_string("profile_dir", None, "Also trace 3 steps with tf.profiler into this folder.")


def compare_loops(runner, our_steps, tf):
    """seq/s for each --compare_loops value, measured in alternating rounds after one warm-up
    call of each (a call's first run with a new step count pays nothing extra: the count is a
    tensor argument, so one traced function serves them all)."""
    from electra_tf.train import devices

    sizes = [int(v) for v in FLAGS.compare_loops]
    for k in sizes:
        our_steps(max(FLAGS.warmup, k), k)
    times = {k: [] for k in sizes}
    rounds = {k: [] for k in sizes}  # seq/s of each round: its steps over their total time
    b, length = FLAGS.batch_size, FLAGS.seq_len
    for _ in range(FLAGS.rounds):
        for k in sizes:
            t = our_steps(FLAGS.steps, k)
            times[k] += t
            rounds[k].append(b * len(t) / sum(t))
    # each round's ratio to the first size's round beside it: the pairs share the machine's load
    paired = {k: [r / r0 for r, r0 in zip(rounds[k], rounds[sizes[0]])] for k in sizes}
    res = {
        "iterations_per_loop": {str(k): b / statistics.median(t) for k, t in times.items()},
        "per_round_seq_per_s": {str(k): v for k, v in rounds.items()},
        "per_round_ratio": {str(k): v for k, v in paired.items()},
        "cpu": devices.cpu_info()[0],
        "batch_size": b,
        "seq_len": length,
        "hparams": FLAGS.hparams,
        "model_size": FLAGS.model_size,
        "steps": FLAGS.steps,
        "rounds": FLAGS.rounds,
        "jit_compile": runner.jit_compile,
        "precision": runner.config.scale.precision,
        "fused_elementwise": runner.config.scale.fused_elementwise,
        "real_flops_per_step": runner.real_flops_per_step,
    }
    print(json.dumps(res), flush=True)
    if FLAGS.json_only:
        return
    base = res["iterations_per_loop"][str(sizes[0])]
    print(
        f"\n{FLAGS.hparams or 'ELECTRA-' + FLAGS.model_size}, batch {b} x {length}, "
        f"{runner.path.describe()}, on {res['cpu']}: "
        f"median of {FLAGS.steps * FLAGS.rounds} steps per setting, alternating"
    )
    print(
        f"{'iterations_per_loop':>20s} {'seq/s':>8s} {'steps/s':>8s} {'vs first':>9s} "
        f"{'round ratios: median [min, max]':>32s}  rounds' seq/s"
    )
    for k in sizes:
        v = res["iterations_per_loop"][str(k)]
        p = paired[k]
        spread = f"{statistics.median(p):.3f} [{min(p):.3f}, {max(p):.3f}]"
        each = " ".join(f"{r:.1f}" for r in rounds[k])
        print(f"{k:20d} {v:8.1f} {v / b:8.2f} {v / base:9.2f} {spread:>32s}  {each}")


def main(_):
    import tensorflow as tf

    from electra_tf.train import devices

    run = prepare(tf)
    runner, our_steps = run.runner, run.our_steps
    per_call = max(1, FLAGS.iterations_per_loop)

    if FLAGS.compare_loops:
        return compare_loops(runner, our_steps, tf)
    peer = Peer(peer_spec(runner, run.tmp, run.batch)) if FLAGS.peer else None
    t0 = time.perf_counter()
    our_steps(1, 1)
    compile_s = time.perf_counter() - t0
    our_steps(max(FLAGS.warmup - 1, 0))
    if peer:
        peer.run(FLAGS.warmup)
    ours, theirs = [], []
    for _ in range(FLAGS.rounds):
        ours += our_steps(FLAGS.steps)
        if peer:
            theirs += peer.run(FLAGS.steps)
    if FLAGS.profile_dir:
        tf.profiler.experimental.start(FLAGS.profile_dir)
        our_steps(3)
        tf.profiler.experimental.stop()
    if peer:
        peer.close()

    real, paper, peak = runner.real_flops_per_step, runner.flops_per_step, runner.peak_flops
    med = statistics.median(ours)
    b, length = FLAGS.batch_size, FLAGS.seq_len
    cpu, _ = devices.cpu_info()
    res = {
        "seq_per_s": b / med,
        "tokens_per_s": b * length / med,
        "flops_per_s": real / med,
        "mfu": real / med / peak,
        "step_s_median": med,
        "step_s_min": min(ours),
        "step_s_max": max(ours),
        "first_step_s": compile_s,
        "real_flops_per_step": real,
        "paper_flops_per_step": paper,
        "peak_flops": peak,
        "peak_source": runner.peak_source,
        "cpu": cpu,
        "model_size": FLAGS.model_size,
        "batch_size": b,
        "seq_len": length,
        "steps": FLAGS.steps,
        "warmup": FLAGS.warmup,
        "rounds": FLAGS.rounds,
        "iterations_per_loop": per_call,
        "jit_compile": runner.jit_compile,
        "jit_reason": runner.jit_reason,
        "precision": runner.config.scale.precision,
        "fused_elementwise": runner.config.scale.fused_elementwise,
        "gradient_accumulation_steps": FLAGS.gradient_accumulation_steps,
        "generator_hidden_size": FLAGS.generator_hidden_size,
        "dropout": FLAGS.dropout,
        "threads": FLAGS.threads,
        "data": FLAGS.data,
        "tensorflow": tf.__version__,
        "setup_s": t0 - run.t_build,
    }
    if peer:
        pmed = statistics.median(theirs)
        res.update(
            peer=FLAGS.peer,
            peer_precision=runner.config.scale.precision,
            peer_seq_per_s=b / pmed,
            peer_tokens_per_s=b * length / pmed,
            peer_step_s_median=pmed,
            peer_flops_per_s=real / pmed,
            peer_mfu=real / pmed / peak,
            ratio=(b / med) / (b / pmed),
            peer_torch=peer.info.get("torch"),
            peer_transformers=peer.info.get("transformers"),
            peer_parameters=peer.info.get("parameters"),
        )
        # per-round medians show how much the machine's load moved during the run
        k = FLAGS.steps
        res["rounds_seq_per_s"] = [
            b / statistics.median(ours[i * k : (i + 1) * k]) for i in range(FLAGS.rounds)
        ]
        res["peer_rounds_seq_per_s"] = [
            b / statistics.median(theirs[i * k : (i + 1) * k]) for i in range(FLAGS.rounds)
        ]
    print(json.dumps(res), flush=True)
    if FLAGS.json_only:
        return
    xla = ", XLA" if runner.jit_compile else ""
    rows = [(f"electra_tf (TF {tf.__version__}{xla})", res["seq_per_s"], med, res["flops_per_s"])]
    if peer:
        rows.append(
            (
                f"HF transformers {res['peer_transformers']} / torch {res['peer_torch']}",
                res["peer_seq_per_s"],
                pmed,
                res["peer_flops_per_s"],
            )
        )
    print(
        f"\nELECTRA-{FLAGS.model_size} step, batch {b} x {length}, {runner.config.scale.precision}, "
        f"{FLAGS.threads} threads, median of {FLAGS.steps * FLAGS.rounds} steps "
        f"after {FLAGS.warmup} warm-up, on {cpu}; {real / 1e9:.1f} GFLOP/step real "
        f"({paper / 1e9:.1f} paper convention); peak {peak / 1e9:.0f} GFLOP/s "
        f"({runner.peak_source}); {runner.path.describe()} ({runner.jit_reason})"
    )
    print(f"{'':44s} {'seq/s':>8s} {'tokens/s':>9s} {'s/step':>7s} {'GFLOP/s':>8s} {'MFU':>6s}")
    for name, seq_s, step_s, fl in rows:
        print(
            f"{name:44s} {seq_s:8.2f} {seq_s * length:9.0f} {step_s:7.3f} {fl / 1e9:8.1f} "
            f"{fl / peak:6.1%}"
        )
    if peer:
        print(f"ratio ours / peer: {res['ratio']:.2f}")
    print(f"(first step incl. compile {compile_s:.1f} s)")


if __name__ == "__main__":
    app.run(main)
