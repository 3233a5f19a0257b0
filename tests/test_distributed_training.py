"""Scale-out and faults: MirroredStrategy, MultiWorkerMirroredStrategy, kill -9 resume, SIGTERM,
non-finite losses, mixed precision.

Training runs happen in subprocesses (logical devices and TF_CONFIG must be set before TensorFlow
starts); they use a tiny model without dropout so that runs are comparable bit for bit where the
maths allows.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from harness import ENV, REPO, TINY_RUN

TINY = TINY_RUN
TWO_STAGE = dict(  # the generator the discriminator's size, the stage switch at step 4
    two_stage_steps=4,
    generator_hidden_size=1.0,
    generator_config={"intermediate_size": 64, "num_attention_heads": 2},
)
STEP_LINE = re.compile(r"^step (\d+)/\d+ loss ([0-9.naninf+-]+)", re.M)
pytestmark = pytest.mark.slow  # every test here trains in subprocesses


@pytest.fixture(scope="module")
def data_dir(tiny_dataset, tmp_path_factory):
    """The tiny dataset (length 32, 2 shards), copied: the runs write models/ into it."""
    d = tmp_path_factory.mktemp("distributed") / "data"
    shutil.copytree(tiny_dataset, d)
    return str(d)


def _pretrain(data_dir, name, hparams, env=None, **popen):
    cmd = [
        sys.executable,
        os.path.join(REPO, "run_pretraining.py"),
        f"--data_dir={data_dir}",
        f"--model_name={name}",
        f"--hparams={json.dumps(hparams)}",
    ]
    return subprocess.Popen(
        cmd,
        env=env or ENV,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **popen,
    )


def _losses(output):
    return {int(s): float(v) for s, v in STEP_LINE.findall(output)}


def _weights(data_dir, name):
    """Checkpoint key -> value of the model variables in a run's latest checkpoint."""
    import tensorflow as tf

    prefix = tf.train.latest_checkpoint(os.path.join(data_dir, "models", name))
    reader = tf.train.load_checkpoint(prefix)
    keys = [k for k in reader.get_variable_to_shape_map() if k.startswith("model/")]
    assert len(keys) > 30
    return {k: reader.get_tensor(k) for k in keys}


def _run(data_dir, name, hparams, env=None, timeout=600):
    p = _pretrain(data_dir, name, hparams, env=env)
    out, _ = p.communicate(timeout=timeout)
    assert p.returncode == 0, out[-3000:]
    return out


def test_mirrored_two_devices_equals_one_device(data_dir):
    """Same global batch on one device and on MirroredStrategy over 2 logical CPUs: the loss
    trajectory and final weights agree to float32 summation-order noise (rtol 1e-4); with each
    replica's gradients XLA-compiled and all-reduced in bfloat16, to bfloat16 rounding."""
    code = textwrap.dedent(
        f"""
        import json, sys
        import numpy as np, tensorflow as tf
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        from electra_tf.pretraining_config import PretrainingConfig
        from electra_tf.train import Trainer
        results = {{}}
        # one MirroredStrategy for both runs on two devices: collective-op keys are counted per
        # strategy, and a second strategy would reuse the first one's with another dtype
        mirrored = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        for name, strategy, extra in [
            ("one", tf.distribute.OneDeviceStrategy("/cpu:0"), {{}}),
            ("two", mirrored, {{}}),
            ("two_xla_bf16", mirrored, dict(jit_compile=True, allreduce_dtype="bfloat16")),
        ]:
            hp = dict(json.loads(sys.argv[1]), deterministic=False, **extra)
            cfg = PretrainingConfig.from_flat("mirror_" + name, {data_dir!r}, hp)
            trainer = Trainer(cfg, strategy=strategy)
            assert trainer.layout.num_replicas == (1 if name == "one" else 2)
            trainer.train()
            results[name] = {{v.path: v.numpy() for v in trainer.model.weights}}
        for other in ("two", "two_xla_bf16"):
            diff = max(
                float(np.max(np.abs(results["one"][k] - results[other][k])))
                for k in results["one"]
            )
            print("MAX_WEIGHT_DIFF", other, diff)
        """
    )
    p = subprocess.run(
        [sys.executable, "-c", code, json.dumps(TINY)],
        env=ENV,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    runs = p.stdout.split("training mirror_")
    one, two, bf16 = _losses(runs[1]), _losses(runs[2]), _losses(runs[3])
    assert sorted(one) == sorted(two) == sorted(bf16) == list(range(1, 7))
    assert "XLA on" in runs[3]
    for step in one:
        assert one[step] == pytest.approx(two[step], rel=1e-4), step
        assert one[step] == pytest.approx(bf16[step], rel=1e-2), step
    diffs = dict(re.findall(r"MAX_WEIGHT_DIFF (\S+) (\S+)", p.stdout))
    assert float(diffs["two"]) < 1e-4, diffs
    # bfloat16 keeps 8 bits of each gradient: the weights move apart, but not far
    assert 0 < float(diffs["two_xla_bf16"]) < 2e-2, diffs


def _free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def test_multi_worker_lock_step_matches_single_worker(data_dir):
    """Two worker processes (MultiWorkerMirroredStrategy via TF_CONFIG on localhost) log the same
    loss at every step, equal to a single-worker run with the same global batch."""
    single = _losses(_run(data_dir, "single", TINY))
    ports = _free_ports(2)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    procs = []
    for i in range(2):
        env = dict(ENV)
        env["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}})
        procs.append(_pretrain(data_dir, "multi", {**TINY, "distribution": "multi_worker"}, env))
    outs = []
    for p in procs:
        out, _ = p.communicate(timeout=600)
        assert p.returncode == 0, out[-3000:]
        outs.append(out)
    w0, w1 = _losses(outs[0]), _losses(outs[1])
    assert "on 2 replica(s)" in outs[0]
    assert w0 == w1  # lock-step: both workers see the same all-reduced loss at every step
    assert sorted(w0) == sorted(single) == list(range(1, 7))
    for step in single:
        assert w0[step] == pytest.approx(single[step], rel=1e-4), step
    a, b = _weights(data_dir, "single"), _weights(data_dir, "multi")
    assert max(float(np.max(np.abs(a[k] - b[k]))) for k in a) < 1e-4


@pytest.mark.parametrize(
    "name,extra,kill_after",
    [
        ("one_step_per_call", dict(iterations_per_loop=1), 5),
        # 4 steps per call, cut at the log (every 3) and save (every 4) boundaries: the kill
        # lands after the checkpoint at 4, the resumed run replays 5.. in calls of other lengths
        ("loops", dict(iterations_per_loop=4, log_every_steps=3, save_checkpoints_steps=4), 6),
        # two-stage training with the boundary at the checkpoint: the resumed run initialises
        # the discriminator from the generator at step 4, as the uninterrupted one did
        ("two_stage", dict(TWO_STAGE, iterations_per_loop=4, save_checkpoints_steps=4), 6),
    ],
)
def test_kill_9_then_resume_matches_uninterrupted_run(data_dir, name, extra, kill_after):
    hp = {**TINY, "num_train_steps": 10, **extra}
    reference = _losses(_run(data_dir, f"uninterrupted_{name}", hp))
    p = _pretrain(data_dir, f"killed_{name}", hp)
    seen = ""
    deadline = time.time() + 600
    while time.time() < deadline:  # wait for a step past the checkpoint at step 4
        line = p.stdout.readline()
        seen += line
        if line.startswith(f"step {kill_after}/") or not line:
            break
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert p.returncode == -signal.SIGKILL, seen[-3000:]
    resumed_out = _run(data_dir, f"killed_{name}", hp)
    assert re.search(r"resumed from \S+ckpt-4 at step 4", resumed_out), resumed_out[-2000:]
    first, resumed = _losses(seen), _losses(resumed_out)
    assert sorted(resumed) == [s for s in sorted(reference) if s > 4]
    for step, loss in {**first, **resumed}.items():
        assert loss == reference[step], (step, loss, reference[step])
    a, b = _weights(data_dir, f"uninterrupted_{name}"), _weights(data_dir, f"killed_{name}")
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


def test_sigterm_saves_a_checkpoint_and_non_finite_loss_stops(data_dir):
    hp = {**TINY, "num_train_steps": 1000, "save_checkpoints_steps": 1000}
    p = _pretrain(data_dir, "preempted", hp)
    seen = ""
    while True:
        line = p.stdout.readline()
        seen += line
        if line.startswith("step 3/") or not line:
            break
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=300)
    seen += out
    m = re.search(r"received signal 15: saved a checkpoint at step (\d+)", seen)
    assert m, seen[-2000:]
    assert p.returncode != 0
    model_dir = os.path.join(data_dir, "models", "preempted")
    assert os.path.exists(os.path.join(model_dir, f"ckpt-{m.group(1)}.index"))

    bad = {**TINY, "learning_rate": 1e30, "num_train_steps": 20, "clip_norm": None}
    p = _pretrain(data_dir, "diverged", bad)
    out, _ = p.communicate(timeout=300)
    assert p.returncode == 1
    err = out.strip().splitlines()[-1]
    assert re.match(
        r"error: non-finite loss \(\S+\) at step \d+; the last good checkpoint is ", err
    )


def test_mixed_precision_runs_a_few_steps_with_finite_losses(data_dir, capsys):
    from electra_tf.pretraining_config import PretrainingConfig
    from electra_tf.train import Trainer

    steps = 8
    for precision in ("mixed_bfloat16", "mixed_float16"):
        hp = {**TINY, "precision": precision, "deterministic": False, "num_train_steps": steps}
        trainer = Trainer(PretrainingConfig.from_flat("mp_" + precision, data_dir, hp))
        before = [w.numpy().copy() for w in trainer.model.trainable_weights]
        trainer.train()
        losses = _losses(capsys.readouterr().out)
        assert sorted(losses) == list(range(1, steps + 1))
        assert all(np.isfinite(v) for v in losses.values())
        scale = float(trainer.loss_scale.scale.numpy())
        good = int(trainer.loss_scale.good_steps.numpy())
        changed = any(
            not np.array_equal(b, w.numpy())
            for b, w in zip(before, trainer.model.trainable_weights)
        )
        if precision == "mixed_float16":
            # float16 gradients overflow at the initial scale 2^15: the first steps are skipped,
            # each halving the scale, until it fits; the later ones are applied (and counted)
            skipped = steps - good
            assert 0 < good < steps and scale * 2**skipped == 2.0**15, (scale, good)
        else:
            assert (scale, good) == (1.0, 0)
        assert changed
