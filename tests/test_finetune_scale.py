"""Fine-tuning on pretraining's step (`train.step.TrainStep`): the behaviour pin of a fixed
deterministic run recorded before the change, and the scale-out keys (`distribution`,
`precision`, `gradient_accumulation_steps`, `iterations_per_loop`) for a classification, a
regression, a tagging and a QA task trained together."""

import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from harness import ENV, REPO
from test_finetune_run import make_run_dir, tiny_config

from electra_tf.finetune.config import FinetuningConfig
from electra_tf.finetune.runner import run_finetuning

HERE = os.path.dirname(os.path.abspath(__file__))


def _pin_script():
    """tests/data/pins/record_finetune_pin.py as a module: the pinned run's hparams."""
    import importlib.util

    path = os.path.join(HERE, "data", "pins", "record_finetune_pin.py")
    spec = importlib.util.spec_from_file_location("record_finetune_pin", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# recorded with tests/data/pins/record_finetune_pin.py's run on 4329364, the last commit with
# fine-tuning's own step (2-core AMD EPYC Zen 4)
PIN = os.path.join(HERE, "data", "pins", "finetune_4329364.json")
TASKS = ["sst", "sts", "chunk", "squadv1"]
HPARAMS = _pin_script().HPARAMS
STEP = re.compile(r"^step (\d+)/(\d+) loss (\S+)", re.M)


def _outputs(data_dir, out):
    """(dev metrics by task, the dev prediction files' text by name)."""
    results = os.path.join(data_dir, "models", "tiny", "results")
    files = {}
    for name in sorted(os.listdir(results)):
        if "_dev_predictions" in name:
            with open(os.path.join(results, name), encoding="utf-8") as f:
                files[name] = f.read()
    return {t: out[t]["trials"][0]["dev"] for t in out}, files


def _step_losses(log):
    return [float(v) for _, _, v in STEP.findall(log)]


def test_fixed_deterministic_run_matches_the_recorded_one(tmp_path, capsys):
    """The run of 4329364 again: every step's logged loss, every discrete prediction (labels,
    tags, answer strings) equal; the regression outputs and dev metrics to float32 rounding
    (the step now runs as a separate graph function under a OneDeviceStrategy: the weights
    move by ~1e-8, not bit for bit)."""
    with open(PIN, encoding="utf-8") as f:
        pin = json.load(f)
    make_run_dir(tmp_path, squad=True)
    out = run_finetuning(FinetuningConfig("tiny", str(tmp_path), **HPARAMS))
    losses = _step_losses(capsys.readouterr().out)
    dev, files = _outputs(tmp_path, out)
    assert losses == pin["step_losses"] and len(losses) == 66
    assert sorted(files) == sorted(pin["predictions"])
    for name, text in pin["predictions"].items():
        if name.startswith("sts"):  # STS scores, printed with 6 significant digits
            got = [l.split("\t") for l in files[name].splitlines()[1:]]
            want = [l.split("\t") for l in text.splitlines()[1:]]
            assert [g[0] for g in got] == [w[0] for w in want]
            np.testing.assert_allclose(
                [float(g[1]) for g in got], [float(w[1]) for w in want], atol=2e-5
            )
        else:
            assert files[name] == text, name
    for task, metrics in pin["dev"].items():
        for k, v in metrics.items():
            assert dev[task][k] == pytest.approx(v, rel=1e-4, abs=1e-6), (task, k)


def _run_in_process(data_dir, capsys, **extra):
    out = run_finetuning(FinetuningConfig("tiny", str(data_dir), **{**HPARAMS, **extra}))
    return _step_losses(capsys.readouterr().out), _outputs(data_dir, out)[0]


NO_DROPOUT = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


@pytest.fixture
def no_dropout_dir(tmp_path, monkeypatch):
    """The tiny model without dropout anywhere (the heads' Keras Dropout layers off too), so
    that runs which split a batch differently compute the same function."""
    import keras

    monkeypatch.setattr(keras.layers.Dropout, "call", lambda self, x, training=False: x)
    cfg = tiny_config()
    cfg = type(cfg)(**{**cfg.to_dict(), **NO_DROPOUT})
    make_run_dir(tmp_path, cfg, squad=True)
    return tmp_path


def test_accumulation_and_calls_of_many_steps_keep_the_global_batch(no_dropout_dir, capsys):
    """The same 66 global batches of 4 as one micro-batch per step and one step per call, as
    2 micro-batches of 2 (the loss is the batch's SUM: the accumulated gradient is the
    batch's), and as calls of up to 8 steps: the same losses and dev metrics."""
    d = no_dropout_dir
    base, base_dev = _run_in_process(d, capsys, log_every_steps=1, iterations_per_loop=1)
    for extra in (dict(gradient_accumulation_steps=2), dict(iterations_per_loop=8)):
        losses, dev = _run_in_process(d, capsys, **extra)
        assert len(losses) == len(base) == 66, extra
        np.testing.assert_allclose(losses, base, rtol=2e-3, atol=2e-4, err_msg=str(extra))
        for task in base_dev:
            for k, v in base_dev[task].items():
                assert dev[task][k] == pytest.approx(v, rel=2e-3, abs=1e-3), (extra, task, k)


SUBPROCESS = textwrap.dedent(
    """
    import json, sys
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import keras
    keras.layers.Dropout.call = lambda self, x, training=False: x  # as no_dropout_dir
    from electra_tf.finetune.config import FinetuningConfig
    from electra_tf.finetune.runner import run_finetuning
    out = run_finetuning(FinetuningConfig("tiny", sys.argv[1], **json.loads(sys.argv[2])))
    print("DEV", json.dumps({t: out[t]["trials"][0]["dev"] for t in out}))
    """
)


def _run_in_subprocess(d, extra, steps=66):
    hp = {**HPARAMS, "iterations_per_loop": 1, **extra}
    p = subprocess.run(
        [sys.executable, "-c", SUBPROCESS, str(d), json.dumps(hp)],
        env=ENV,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    losses = _step_losses(p.stdout)
    assert len(losses) == steps and np.all(np.isfinite(losses))
    return p.stdout, losses, json.loads(p.stdout.split("DEV ", 1)[1].splitlines()[0])


@pytest.mark.slow
def test_mirrored_two_devices_matches_one_device(no_dropout_dir, capsys):
    """MirroredStrategy over two logical CPUs, 2 rows of each global batch of 4 per replica:
    the same 66 steps as the single-device run, every loss and dev metric equal to float32
    summation-order noise."""
    base, base_dev = _run_in_process(no_dropout_dir, capsys, iterations_per_loop=1)
    out, losses, dev = _run_in_subprocess(no_dropout_dir, dict(distribution="mirrored"))
    assert "global batch 4 on 2 replica(s)" in out
    np.testing.assert_allclose(losses, base, rtol=2e-3, atol=2e-4)
    for task in base_dev:
        for k, v in base_dev[task].items():
            assert dev[task][k] == pytest.approx(v, rel=2e-3, abs=2e-2), (task, k)


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_trains_all_four_task_kinds(no_dropout_dir, capsys, precision):
    """The encoder in 16 bits (float16 with dynamic loss scaling): the first step's loss (the
    forward pass of the same weights and batch) differs from float32's by rounding only, every
    loss is finite and the loss falls as float32's does. (This tiny summed-loss run is chaotic:
    16-bit rounding sends the trajectories apart after a few steps, so later steps and the five
    dev examples' metrics are not compared; bench/finetune_precision.py compares accuracies on the
    movie task.)"""
    base, _ = _run_in_process(no_dropout_dir, capsys, iterations_per_loop=1)
    out, losses, _ = _run_in_subprocess(no_dropout_dir, dict(precision=precision))
    assert f"x 1 micro-batch(es), {precision}" in out
    assert losses[0] != base[0] and losses[0] == pytest.approx(base[0], rel=1e-2)
    assert np.mean(losses[-10:]) < 0.5 * np.mean(losses[:10])
    assert np.mean(base[-10:]) < 0.5 * np.mean(base[:10])


@pytest.mark.slow
def _two_workers(d, hp):
    """Runs SUBPROCESS (one CPU replica each) as two localhost workers of a multi-worker run of
    `hp`; (the processes, their outputs)."""
    from test_distributed_training import _free_ports

    code = SUBPROCESS.replace("tf.config.set_logical_device_configuration", "(lambda *a: a)")
    cluster = {"worker": [f"127.0.0.1:{p}" for p in _free_ports(2)]}
    procs = []
    for i in range(2):
        env = dict(
            ENV, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}})
        )
        procs.append(subprocess.Popen([sys.executable, "-c", code, str(d), json.dumps(hp)], env=env,
                                      cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True))  # fmt: skip
    return procs, [p.communicate(timeout=600)[0] for p in procs]


def test_multi_worker_matches_one_device(no_dropout_dir, capsys):
    """Two worker processes (MultiWorkerMirroredStrategy from TF_CONFIG on localhost, one CPU
    replica each, 2 rows of each global batch of 4): both log the single-device run's losses;
    the chief writes the results and the other worker nothing (no results, no checkpoint
    left)."""
    d = no_dropout_dir
    base, base_dev = _run_in_process(d, capsys, iterations_per_loop=1, save_checkpoints_steps=20)
    results = d / "models" / "tiny" / "results"
    for name in os.listdir(results):
        os.remove(results / name)
    hp = {**HPARAMS, "iterations_per_loop": 1, "save_checkpoints_steps": 20,
          "distribution": "multi_worker"}  # fmt: skip
    procs, outs = _two_workers(d, hp)
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out[-3000:]
    w0, w1 = _step_losses(outs[0]), _step_losses(outs[1])
    assert "global batch 4 on 2 replica(s)" in outs[0]
    assert w0 == w1 and len(w0) == 66
    np.testing.assert_allclose(w0, base, rtol=2e-3, atol=2e-4)
    assert "results written" in outs[0] and "results written" not in outs[1]
    dev = json.loads(outs[0].split("DEV ", 1)[1].splitlines()[0])
    for task in base_dev:
        for k, v in base_dev[task].items():
            assert dev[task][k] == pytest.approx(v, rel=2e-3, abs=2e-2), (task, k)
    written = [f"{t}{s}" for t in TASKS for s in (".json", "_dev_predictions.tsv")]
    assert sorted(os.listdir(results)) == sorted([*written, "squadv1_dev_predictions.json"])
    model_dir = d / "models" / "tiny"
    assert not list(model_dir.rglob("*scratch*"))  # the other worker's checkpoints, removed
    ckpts = model_dir / "finetuning_checkpoints"
    assert not ckpts.exists() or not any(ckpts.iterdir())  # the finished trial's, removed


def test_multi_worker_trial_shorter_than_a_save_interval_exits_0_on_both(no_dropout_dir):
    """Two localhost workers, a trial that ends before its first checkpoint: the non-chief
    never wrote its scratch copy, and removing it must not fail (at a897e3a the second worker
    exited 1: "..._scratch_worker_1 not found")."""
    d = no_dropout_dir
    hp = {**HPARAMS, "task_names": ["sst"], "num_train_epochs": 1.0, "iterations_per_loop": 1,
          "save_checkpoints_steps": 1000, "distribution": "multi_worker"}  # fmt: skip
    procs, outs = _two_workers(d, hp)
    assert [p.returncode for p in procs] == [0, 0], outs[1][-3000:]
    w0, w1 = _step_losses(outs[0]), _step_losses(outs[1])
    assert w0 == w1 and 0 < len(w0) < 1000  # every step ran, on both, before any save
    assert "results written" in outs[0] and "results written" not in outs[1]
    model_dir = d / "models" / "tiny"
    assert not list(model_dir.rglob("*scratch*"))
    assert not list(model_dir.rglob("ckpt-*"))  # no checkpoint was ever written


@pytest.mark.slow
def test_kill_9_under_mirrored_resumes_and_finishes(no_dropout_dir):
    """A mirrored (2 logical CPUs) deterministic trial killed with SIGKILL after step 25 resumes
    from its step-20 checkpoint when the command is run again, and finishes with the losses of
    an uninterrupted mirrored run."""
    import signal

    d = no_dropout_dir
    hp = {**HPARAMS, "iterations_per_loop": 1, "save_checkpoints_steps": 10,
          "distribution": "mirrored"}  # fmt: skip
    _, uninterrupted, _ = _run_in_subprocess(d, hp)
    cmd = [sys.executable, "-c", SUBPROCESS, str(d), json.dumps({**HPARAMS, **hp})]
    p = subprocess.Popen(cmd, env=ENV, cwd=REPO, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)  # fmt: skip
    seen = []
    for line in p.stdout:
        seen.append(line)
        if line.startswith("step 25/66"):
            os.kill(p.pid, signal.SIGKILL)
            break
    p.wait(timeout=60)
    assert p.returncode == -signal.SIGKILL, "".join(seen)[-3000:]
    out, resumed, _ = _run_in_subprocess(d, hp, steps=46)  # steps 21..66
    assert "resumed from" in out and "at step 20" in out
    np.testing.assert_allclose(resumed, uninterrupted[20:], rtol=1e-4, atol=1e-4)
