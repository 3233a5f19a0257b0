"""What bench/train_step.py and bench/profile_step.py share: the flags that choose the model, the
batch and the precision, the `Trainer` built from them (exactly what `run_pretraining.py` runs),
the synthetic or corpus batches, our step run and timed a call at a time (`prepare`), and the
Hugging Face peer (bench/peer_hf_step.py) in its own Python (`Peer`, `peer_spec`)."""

import json
import os
import subprocess
import tempfile
import time
from types import SimpleNamespace

from absl import flags

from electra_tf import data_layout

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGS = flags.FLAGS
flags.DEFINE_string("model_size", "small", "small | base | large")
flags.DEFINE_integer("batch_size", 32, "Sequences per step (global batch).")
flags.DEFINE_integer("seq_len", 128, "Tokens per sequence.")
flags.DEFINE_enum(
    "jit_compile", "auto", ["auto", "true", "false"], "XLA (run_pretraining's default: auto)."
)
flags.DEFINE_integer("iterations_per_loop", 10, "Steps per call (run_pretraining's default: 10).")
flags.DEFINE_string(
    "hparams", None,
    "A pretraining recipe JSON (e.g. experiments/recipes/pretrain_small_budget.json): its model "
    "(model_size, model_hparam_overrides, embedding_size, vocab_file relative to the repo) "
    "replaces the preset's; --batch_size and --seq_len still set the batch.",
)  # fmt: skip
flags.DEFINE_enum(
    "precision", "float32", ["float32", "mixed_bfloat16", "mixed_float16", "auto"],
    "auto: measured, as run_pretraining's precision=auto (the peer runs what it chose)",
)  # fmt: skip
flags.DEFINE_integer("gradient_accumulation_steps", 1, "Micro-batches per step.")
flags.DEFINE_float("generator_hidden_size", 0.25, "Generator width / discriminator width.")
flags.DEFINE_integer("embedding_size", None, "None: the preset's (128 for small).")
flags.DEFINE_bool("dropout", True, "--nodropout: dropout off (what the step's dropout costs).")
flags.DEFINE_bool("fused_elementwise", False, "The hparam: each layer's element-wise work as "
                  "XLA-compiled pieces between the oneDNN matmuls.")  # fmt: skip
flags.DEFINE_integer("threads", 2, "Intra- and inter-op threads, ours and the peer's.")
flags.DEFINE_integer("inter_op_threads", None, "Ours: ops run side by side (None: --threads).")
flags.DEFINE_integer("intra_op_threads", None, "Ours: threads within an op (None: --threads).")
flags.DEFINE_float("peak_flops", None, "Peak FLOP/s for MFU (default: as run_pretraining's).")
flags.DEFINE_enum("data", "synthetic", ["synthetic", "corpus"], "Where batches come from.")
flags.DEFINE_enum("peer", "", ["", "hf"], "Also run the step in this framework.")
flags.DEFINE_string("peer_python", "/work/venv-bench/bin/python", "Python with torch+transformers.")
flags.DEFINE_string(
    "vocab_file", data_layout.vocab_file(os.path.join(REPO, "data", "vocab")), "Vocab file."
)
flags.DEFINE_string("corpus", os.path.join(REPO, "data/corpus/enwiki_sample.txt"), "--data=corpus")


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
        pretrain_tfrecords=data_layout.tfrecord_glob(os.path.join(tmp, "tfrecords")),
        distribution="one_device",
        fused_elementwise=FLAGS.fused_elementwise,
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
        return self._ask(f"run {n}")["step_times"]

    def profile(self, n):
        """n steps under torch.profiler: {"ops": [per-op records], "step_times": [...]}."""
        return self._ask(f"profile {n}")

    def _ask(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self._read()

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
    o, opt = c.task, c.optimization
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
        seed=c.general.seed,
        precision=FLAGS.precision,
    )
    path = os.path.join(tmp, "peer_spec.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(spec, f)
    return path


def prepare(tf):
    """Threads set, the runner built, the batch and its iterators made, the step function traced
    lazily: SimpleNamespace(runner, batch, iterators, train_fn, our_steps, tmp, t_build), where
    our_steps(n, steps_per_call=--iterations_per_loop) runs n steps and returns their times."""
    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.intra_op_threads or FLAGS.threads)
    tf.config.threading.set_inter_op_parallelism_threads(FLAGS.inter_op_threads or FLAGS.threads)
    tmp = tempfile.mkdtemp(prefix="bench_train_step_")
    t_build = time.perf_counter()
    runner = build_runner(tmp, tf)
    from electra_tf.train.step_path import synthetic_batch

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

    return SimpleNamespace(
        runner=runner,
        batch=batch,
        iterators=iterators,
        train_fn=train_fn,
        our_steps=our_steps,
        tmp=tmp,
        t_build=t_build,
    )
