"""Where a pretraining step's time goes: TensorFlow's profiler on our step and, with --peer=hf,
torch.profiler on the Hugging Face peer's, each op's time grouped by the categories and rules of
bench/op_categories.py, printed side by side (ms per step, % of the step's op time), then each
side's top ops.

python bench/profile_step.py [--steps=3 --warmup=2 --top=15 --precision=float32|mixed_bfloat16
    --jit_compile=false] [--peer=hf] [the model / batch flags of bench/train_step.py:
    --model_size, --hparams, --batch_size, --seq_len, --threads, --nodropout, ...]

Ours: the step train_step.py measures (a Trainer's step function on a synthetic batch), warmed
up, then `--steps` steps in one call traced with tf.profiler (the trace is kept in
--profile_dir, default a temporary folder). An op's time is its event's duration on TF's executor
threads (intra-op work inside it included), so with 2 inter-op threads two ops can overlap:
the ops' sum can exceed the wall time, which is printed beside it. `where` (the Python function
that made each op) comes from the traced step's graph. XLA is off by default (--jit_compile=false):
a compiled step shows XLA's fused kernels, not TF ops, and those are all counted as "other".

The peer: the same batch and hparams in bench/peer_hf_step.py (another Python, --peer_python),
`--steps` steps under torch.profiler (record_shapes); an op's time is its self CPU time.
"""

import collections
import glob
import os
import time

from absl import app, flags
from op_categories import CATEGORIES, classify, forward_where
from step_common import FLAGS, Peer, peer_spec, prepare

flags.DEFINE_integer("steps", 3, "Profiled steps (one call).")
flags.DEFINE_integer("warmup", 2, "Unprofiled steps first (the first one traces the function).")
flags.DEFINE_integer("top", 15, "Top ops listed per side.")
flags.DEFINE_string("profile_dir", None, "Where tf.profiler writes (default: a temporary folder).")
FLAGS.set_default("jit_compile", "false")


def graph_sources(train_fn, iterators, tf):
    """{op name: file:function} for the step's graph (the `one_step` function train_fn calls):
    the innermost frame under electra_tf/ of each op's creation traceback."""
    import electra_tf

    concrete = train_fn.get_concrete_function(iterators, tf.TensorSpec([], tf.int32))
    package = os.path.dirname(os.path.abspath(electra_tf.__file__)) + os.sep  # wherever imported
    sources = {}
    for name, fn in concrete.graph._functions.items():  # the nested functions' graphs
        if "one_step" not in name:
            continue
        for op in fn.graph.get_operations():
            frames = [f for f in op.traceback if f.filename.startswith(package)]
            if frames:
                where = f"{os.path.relpath(frames[-1].filename, package)}:{frames[-1].name}"
                sources[op.name] = where
    return sources


def tf_ops(profile_dir):
    """[(op name, op type, microseconds)] of every TF op event in the trace's executor lines."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    path = sorted(glob.glob(os.path.join(profile_dir, "plugins/profile/*/*.xplane.pb")))[-1]
    space = xplane_pb2.XSpace()
    with open(path, "rb") as f:
        space.ParseFromString(f.read())
    ops = []
    for plane in space.planes:
        if plane.name != "/host:CPU":
            continue
        for line in plane.lines:
            if not line.name.startswith("tf_Compute"):
                continue
            for e in line.events:
                label = plane.event_metadata[e.metadata_id].name  # "name:Type" for an op
                if ":" in label and "::" not in label:
                    name, op_type = label.rsplit(":", 1)
                    ops.append((name, op_type, e.duration_ps / 1e6))
    return ops


def summarise(ops, steps):
    """{category: ms per step}, [(ms per step, category, label)] per distinct op, best first.
    ops: [(category, label, microseconds)]."""
    by_cat = collections.Counter({c: 0.0 for c in CATEGORIES})
    by_op = collections.Counter()
    for category, label, us in ops:
        by_cat[category] += us / 1e3 / steps
        by_op[(category, label)] += us / 1e3 / steps
    top = sorted(((ms, c, label) for (c, label), ms in by_op.items()), reverse=True)
    return by_cat, top


def profile_ours(run, tf):
    profile_dir = FLAGS.profile_dir or os.path.join(run.tmp, "profile")
    run.our_steps(1, 1)
    run.our_steps(max(FLAGS.warmup - 1, 0))
    tf.profiler.experimental.start(profile_dir)
    t0 = time.perf_counter()
    run.our_steps(FLAGS.steps, FLAGS.steps)
    wall = (time.perf_counter() - t0) / FLAGS.steps
    tf.profiler.experimental.stop()
    sources = graph_sources(run.train_fn, run.iterators, tf)
    ops = [
        (classify("tf", name, op_type, forward_where(name, sources)), f"{name}:{op_type}", us)
        for name, op_type, us in tf_ops(profile_dir)
    ]
    return ops, wall, profile_dir


def profile_peer(peer):
    peer.run(FLAGS.warmup)
    res = peer.profile(FLAGS.steps)
    ops = []
    for o in res["ops"]:
        category = classify("torch", o["name"], o["node"], o["region"])
        shapes = "x".join(str(s) for s in o["shapes"] if s)
        label = f"{o['name']} {shapes} [{o['region'] or '-'}{' ' + o['node'] if o['node'] else ''}]"
        ops.append((category, label, o["self_us"]))
    return ops, sum(res["step_times"]) / len(res["step_times"])


def print_table(sides, cpu, amx):
    """sides: [(title, {category: ms}, top, wall_ms)]."""
    print(
        f"\nop time per step by category, {FLAGS.hparams or 'ELECTRA-' + FLAGS.model_size}, "
        f"batch {FLAGS.batch_size} x {FLAGS.seq_len}, {FLAGS.precision}, {FLAGS.threads} "
        f"threads, {FLAGS.steps} profiled steps; CPU: {cpu}, amx_bf16: {'yes' if amx else 'no'}"
    )
    head = f"{'category':30s}" + "".join(f" {t[:22]:>22s}" for t, *_ in sides)
    print(head + "\n" + f"{'':30s}" + " ".join(f"{'ms':>14s} {'%':>7s}" for _ in sides))
    for c in CATEGORIES + ("sum of ops", "wall time"):
        cells = []
        for _, by_cat, _, wall in sides:
            total = sum(by_cat.values())
            ms = {"sum of ops": total, "wall time": wall}.get(c, by_cat.get(c, 0.0))
            pct = f"{ms / total:7.1%}" if c != "wall time" and total else f"{'':7s}"
            cells.append(f"{ms:14.1f} {pct}")
        print(f"{c:30s} " + " ".join(cells))
    for title, by_cat, top, _ in sides:
        total = sum(by_cat.values())
        print(f"\ntop {FLAGS.top} ops, {title} (ms per step, % of its ops' sum, category):")
        for ms, c, label in top[: FLAGS.top]:
            print(f"  {ms:9.2f} {ms / total:6.1%}  {c:28s} {label}")


def main(_):
    import tensorflow as tf

    from electra_tf.train import devices

    run = prepare(tf)
    cpu, cpu_flags = devices.cpu_info()
    peer = Peer(peer_spec(run.runner, run.tmp, run.batch)) if FLAGS.peer else None
    ours, wall, profile_dir = profile_ours(run, tf)
    xla = "XLA" if run.runner.jit_compile else "graph path"
    sides = [(f"electra_tf, TF {tf.__version__}, {xla}", *summarise(ours, FLAGS.steps), wall * 1e3)]
    if peer:
        theirs, peer_wall = profile_peer(peer)
        peer.close()
        title = f"HF {peer.info.get('transformers')}, torch {peer.info.get('torch')}"
        sides.append((title, *summarise(theirs, FLAGS.steps), peer_wall * 1e3))
    print_table(sides, cpu, "amx_bf16" in cpu_flags)
    print(f"(our trace: {profile_dir})")


if __name__ == "__main__":
    app.run(main)
