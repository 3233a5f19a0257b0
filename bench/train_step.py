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
import os
import statistics
import subprocess
import tempfile
import time

from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGS = flags.FLAGS
flags.DEFINE_string("model_size", "small", "small | base | large")
flags.DEFINE_integer("batch_size", 32, "Sequences per step (global batch).")
flags.DEFINE_integer("seq_len", 128, "Tokens per sequence.")
flags.DEFINE_integer("steps", 10, "Measured steps (per round).")
flags.DEFINE_integer("warmup", 3, "Unmeasured steps first (the first one compiles).")
flags.DEFINE_integer("rounds", 1, "Measurement rounds (alternating with the peer).")
flags.DEFINE_enum(
    "jit_compile", "auto", ["auto", "true", "false"], "XLA (run_pretraining's default: auto)."
)
flags.DEFINE_integer("iterations_per_loop", 10, "Steps per call (run_pretraining's default: 10).")
flags.DEFINE_list(
    "compare_loops", [],
    "e.g. 1,20: measure these iterations_per_loop values instead, alternating in one process "
    "(the same compiled step function; --steps should be a multiple of the largest).",
)  # fmt: skip
flags.DEFINE_string(
    "hparams", None,
    "A pretraining recipe JSON (e.g. experiments/recipes/pretrain_small_budget.json): its model "
    "(model_size, model_hparam_overrides, embedding_size, vocab_file relative to the repo) "
    "replaces the preset's; --batch_size and --seq_len still set the batch.",
)  # fmt: skip
flags.DEFINE_enum("precision", "float32", ["float32", "mixed_bfloat16", "mixed_float16"], "")
flags.DEFINE_integer("gradient_accumulation_steps", 1, "Micro-batches per step.")
flags.DEFINE_float("generator_hidden_size", 0.25, "Generator width / discriminator width.")
flags.DEFINE_integer("embedding_size", None, "None: the preset's (128 for small).")
flags.DEFINE_bool("dropout", True, "--nodropout: dropout off (what the step's dropout costs).")
flags.DEFINE_integer("threads", 2, "Intra- and inter-op threads, ours and the peer's.")
flags.DEFINE_float("peak_flops", None, "Peak FLOP/s for MFU (default: as run_pretraining's).")
flags.DEFINE_enum("data", "synthetic", ["synthetic", "corpus"], "Where batches come from.")
flags.DEFINE_enum("peer", "", ["", "hf"], "Also run the step in this framework.")
flags.DEFINE_string("peer_python", "/work/venv-bench/bin/python", "Python with torch+transformers.")
flags.DEFINE_bool("json_only", False, "Print only the JSON line.")
flags.DEFINE_string("profile_dir", None, "Also trace 3 steps with tf.profiler into this folder.")
flags.DEFINE_string("vocab_file", os.path.join(REPO, "data/vocab/vocab.txt"), "Vocab file.")
flags.DEFINE_string("corpus", os.path.join(REPO, "data/corpus/enwiki_sample.txt"), "--data=corpus")


def synthetic_batch(batch_size, seq_len, vocab_size, special, seed=0):
    """[CLS] a [SEP] b [SEP] with random word ids (no padding), as numpy int32 arrays."""
    import numpy as np

    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, vocab_size, size=(batch_size, seq_len), dtype=np.int32)
    half = seq_len // 2
    ids[:, 0] = special["cls"]
    ids[:, half - 1] = special["sep"]
    ids[:, -1] = special["sep"]
    segment = np.zeros_like(ids)
    segment[:, half:] = 1
    return {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": segment}


def build_runner(tmp, tf):
    from electra_tf.pretraining_config import PretrainingConfig
    from electra_tf.train import Trainer

    hparams = dict(
        model_size=FLAGS.model_size,
        train_batch_size=FLAGS.batch_size,
        max_seq_length=FLAGS.seq_len,
        jit_compile={"auto": "auto", "true": True, "false": False}[FLAGS.jit_compile],
        precision=FLAGS.precision,
        gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
        generator_hidden_size=FLAGS.generator_hidden_size,
        vocab_file=FLAGS.vocab_file,
        model_dir=os.path.join(tmp, "model"),
        pretrain_tfrecords=os.path.join(tmp, "tfrecords", "pretrain_data.tfrecord*"),
        distribution="one_device",
        peak_flops=FLAGS.peak_flops,
        log_every_steps=10**9,
    )
    if FLAGS.hparams:
        from electra_tf.recipes import recipe_model_hparams

        with open(FLAGS.hparams, encoding="utf-8") as f:
            recipe = json.load(f)
        hparams.update(recipe_model_hparams(recipe, REPO))
        if "vocab_file" in recipe:
            hparams["vocab_file"] = os.path.join(REPO, recipe["vocab_file"])
    if FLAGS.embedding_size:
        hparams["embedding_size"] = FLAGS.embedding_size
    if not FLAGS.dropout:
        hparams["model_hparam_overrides"] = dict(
            hparams.get("model_hparam_overrides", {}),
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
        )
    config = PretrainingConfig.from_flat("bench", tmp, hparams)
    return Trainer(config, strategy=tf.distribute.OneDeviceStrategy("/cpu:0"))


def make_iterators(runner, batch, tmp, tf):
    if FLAGS.data == "corpus":
        from electra_tf import pretraining_data

        pretraining_data.build_dataset(
            FLAGS.corpus,
            FLAGS.vocab_file,
            os.path.join(tmp, "tfrecords"),
            max_seq_length=FLAGS.seq_len,
            num_out_files=4,
            verbose=False,
        )
        return runner.iterators(is_training=True)
    with tf.device("/cpu:0"):
        ds = tf.data.Dataset.from_tensors({k: tf.constant(v) for k, v in batch.items()}).repeat()
        return [iter(ds)]


class Peer:
    """bench/peer_hf_step.py in --serve mode in another Python."""

    def __init__(self, spec_path):
        if not os.path.exists(FLAGS.peer_python):
            raise SystemExit(
                f"error: --peer_python {FLAGS.peer_python} does not exist; create it with\n"
                f"  python -m venv /work/venv-bench && /work/venv-bench/bin/pip install "
                f"-r {os.path.join(REPO, 'bench/requirements.txt')}"
            )
        cmd = [
            FLAGS.peer_python,
            os.path.join(REPO, "bench", "peer_hf_step.py"),
            "--spec",
            spec_path,
            "--threads",
            str(FLAGS.threads),
            "--serve",
        ]
        env = dict(os.environ, OMP_NUM_THREADS=str(FLAGS.threads))
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        self.info = self._read()

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"error: the peer exited ({self.proc.wait()})")
        return json.loads(line)

    def run(self, n):
        self.proc.stdin.write(f"run {n}\n")
        self.proc.stdin.flush()
        return self._read()["step_times"]

    def close(self):
        self.proc.stdin.write("quit\n")
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def peer_spec(runner, tmp, batch):
    import numpy as np

    c = runner.config
    disc, gen = c.model_configs(len(runner.vocab))
    if gen is None:
        raise SystemExit("error: --peer=hf needs a separate generator (the default)")
    batch_file = os.path.join(tmp, "batch.npz")
    np.savez(batch_file, **batch)
    o, opt = c.objective, c.optimizer
    spec = dict(
        disc=disc.to_dict(),
        gen=gen.to_dict(),
        special_ids=runner.special_ids,
        max_predictions=c.max_predictions_per_seq,
        mask_prob=o.mask_prob,
        gen_weight=o.gen_weight,
        disc_weight=o.disc_weight,
        temperature=o.temperature,
        learning_rate=opt.learning_rate,
        weight_decay_rate=opt.weight_decay_rate,
        clip_norm=opt.clip_norm,
        gradient_accumulation_steps=c.scale.gradient_accumulation_steps,
        batch_file=batch_file,
        seed=c.scale.seed,
        precision=FLAGS.precision,
    )
    path = os.path.join(tmp, "peer_spec.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(spec, f)
    return path


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
        "precision": FLAGS.precision,
        "real_flops_per_step": runner.real_flops_per_step,
    }
    print(json.dumps(res), flush=True)
    if FLAGS.json_only:
        return
    base = res["iterations_per_loop"][str(sizes[0])]
    print(
        f"\n{FLAGS.hparams or 'ELECTRA-' + FLAGS.model_size}, batch {b} x {length}, "
        f"{FLAGS.precision}, XLA {'on' if runner.jit_compile else 'off'}, on {res['cpu']}: "
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

    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    tf.config.threading.set_inter_op_parallelism_threads(FLAGS.threads)
    from electra_tf.train import devices

    tmp = tempfile.mkdtemp(prefix="bench_train_step_")
    t_build = time.perf_counter()
    runner = build_runner(tmp, tf)
    batch = synthetic_batch(FLAGS.batch_size, FLAGS.seq_len, len(runner.vocab), runner.special_ids)
    iterators = make_iterators(runner, batch, tmp, tf)
    if FLAGS.data == "corpus":  # the peer gets the pipeline's first batch
        batch = {k: v.numpy() for k, v in next(iter(runner.iterators(True)[0])).items()}
    train_fn = runner.step_function()
    per_call = max(1, FLAGS.iterations_per_loop)

    def our_steps(n, steps_per_call=per_call):
        """Per-step times of n steps, run steps_per_call at a time (each call ends with the
        losses fetched: one host synchronisation per call, as run_pretraining.py)."""
        times = []
        while n > 0:
            k = min(steps_per_call, n)
            t0 = time.perf_counter()
            _, losses = train_fn(iterators, tf.constant(k, tf.int32))
            losses.numpy()
            times += [(time.perf_counter() - t0) / k] * k
            n -= k
        return times

    if FLAGS.compare_loops:
        return compare_loops(runner, our_steps, tf)
    peer = Peer(peer_spec(runner, tmp, batch)) if FLAGS.peer else None
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
        "precision": FLAGS.precision,
        "gradient_accumulation_steps": FLAGS.gradient_accumulation_steps,
        "generator_hidden_size": FLAGS.generator_hidden_size,
        "dropout": FLAGS.dropout,
        "threads": FLAGS.threads,
        "data": FLAGS.data,
        "tensorflow": tf.__version__,
        "setup_s": t0 - t_build,
    }
    if peer:
        pmed = statistics.median(theirs)
        res.update(
            peer=FLAGS.peer,
            peer_precision=FLAGS.precision,
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
        f"\nELECTRA-{FLAGS.model_size} step, batch {b} x {length}, {FLAGS.precision}, "
        f"{FLAGS.threads} threads, median of {FLAGS.steps * FLAGS.rounds} steps "
        f"after {FLAGS.warmup} warm-up, on {cpu}; {real / 1e9:.1f} GFLOP/step real "
        f"({paper / 1e9:.1f} paper convention); peak {peak / 1e9:.0f} GFLOP/s "
        f"({runner.peak_source}); XLA {'on' if runner.jit_compile else 'off'} "
        f"({runner.jit_reason})"
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
