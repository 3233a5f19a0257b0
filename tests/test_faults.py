"""Faults injected, and what each ends as (issue #19; the README's "What survives what").

Checkpoints broken after the fact, a dataset build killed with -9, two writers on one run
directory, a full disk (a small tmpfs, else a file-size limit), damaged TFRecords, text that is not
UTF-8, malformed or mistyped hparams, impossible configs, Ctrl-C, and a fine-tuning run killed with
-9 in its second of three trials: nothing earlier is lost, the last complete state loads, the user
sees one line (`error: ...`, no traceback) naming the file or key, and a run that cannot go on
exits non-zero.
"""

import contextlib
import json
import os
import re
import resource
import shutil
import signal
import struct
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf
from harness import ENV, REPO, TINY_RUN, error_line, run_script
from test_finetune_run import DATA, ROOT, dummy_batch, save_name_based, tiny_config

from electra_tf import errors, hparams, pretraining_data, run_dir, vocab
from electra_tf.checkpoint import files as checkpoint_files
from electra_tf.checkpoint import locate, restore
from electra_tf.checkpoint.manager import CheckpointKeeper
from electra_tf.errors import UserError
from electra_tf.finetune import trials
from electra_tf.finetune.config import FinetuningConfig
from electra_tf.finetune.qa.reader import read_squad_examples
from electra_tf.finetune.runner import run_finetuning
from electra_tf.modeling.encoder import TransformerEncoder
from electra_tf.pretraining_config import PretrainingConfig
from electra_tf.pretraining_data.tfrecord_check import scan_shard
from electra_tf.run_lock import RunLock
from electra_tf.train.inputs import input_files

STEP_LINE = re.compile(r"^step (\d+)/\d+ loss ([0-9.naninf+-]+)", re.M)
SHARD_1 = "pretrain_data.tfrecord-1-of-2"


def read(path, mode="r"):
    with open(path, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
        return f.read()


def _losses(output):
    return {int(s): float(v) for s, v in STEP_LINE.findall(output)}


def _pretrain(data_dir, name, hparams_, **popen):
    cmd = [
        sys.executable,
        os.path.join(REPO, "run_pretraining.py"),
        f"--data_dir={data_dir}",
        f"--model_name={name}",
        f"--hparams={json.dumps(hparams_)}",
    ]
    return subprocess.Popen(
        cmd, env=ENV, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen
    )


def _finish(p, timeout=600):
    out, err = p.communicate(timeout=timeout)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def _run(data_dir, name, hparams_, **popen):
    return _finish(_pretrain(data_dir, name, hparams_, **popen))


def _ok(p):
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    return p.stdout + p.stderr


def _wait_for(p, pattern, seen=""):
    """Reads p's stdout until a line matches; returns what was read."""
    deadline = time.time() + 600
    while time.time() < deadline:
        line = p.stdout.readline()
        seen += line
        if re.search(pattern, line) or not line:
            return seen
    raise AssertionError(seen[-3000:])


def _load_all(prefix):
    """Every tensor of a checkpoint but the iterators' states (variants), read (checksums
    checked)."""
    reader = tf.train.load_checkpoint(prefix)
    dtypes = reader.get_variable_to_dtype_map()
    return {k: reader.get_tensor(k) for k in dtypes if dtypes[k] != tf.variant}


def record_offsets(path):
    """Where each record of a TFRecord file starts (its 12-byte header)."""
    data, offsets, pos = read(path, "rb"), [], 0
    while pos < len(data):
        offsets.append(pos)
        pos += 12 + struct.unpack("<Q", data[pos : pos + 8])[0] + 4
    return offsets


def flip_byte(path, record):
    b = bytearray(read(path, "rb"))
    b[record_offsets(path)[record] + 12 + 7] ^= 0x10
    with open(path, "wb") as f:
        f.write(bytes(b))


@pytest.fixture
def data_dir(tiny_dataset, tmp_path):
    """The tiny dataset (2 shards of 191 records, length 32), copied: a test may damage it."""
    d = tmp_path / "data"
    shutil.copytree(tiny_dataset, d)
    return str(d)


def config_of(data_dir, **hp):
    return PretrainingConfig.from_flat("m", data_dir, {**TINY_RUN, **hp})


# -- 1. a checkpoint broken while (or after) it was written -------------------------------------


def _three_checkpoints(directory):
    v = tf.Variable(np.zeros(1000, np.float32))
    ckpt = tf.train.Checkpoint(v=v)
    manager = tf.train.CheckpointManager(ckpt, directory, 5, checkpoint_name="ckpt")
    for step in (2, 4, 6):
        v.assign(np.full(1000, step, np.float32))
        manager.save(checkpoint_number=step)
    return v, ckpt, manager


def _damage(prefix, how):
    data, index = prefix + ".data-00000-of-00001", prefix + ".index"
    if how == "truncated data":
        os.truncate(data, os.path.getsize(data) // 2)
    elif how == "deleted data":
        os.remove(data)
    elif how == "flipped data byte":
        b = bytearray(read(data, "rb"))
        b[len(b) - 100] ^= 1
        open(data, "wb").write(bytes(b))
    elif how == "truncated index":
        os.truncate(index, os.path.getsize(index) // 2)
    else:
        os.remove(index)


@pytest.mark.parametrize(
    "how, why",
    [
        ("truncated data", "its data is truncated"),
        ("deleted data", "its data files (ckpt-6.data-*) are missing"),
        ("flipped data byte", "it does not read back (TensorBundle at"),
        ("truncated index", "its index ckpt-6.index is unreadable"),
        ("deleted index", "its index ckpt-6.index is missing"),
    ],
)
def test_a_broken_newest_checkpoint_is_skipped_for_the_newest_complete_one(tmp_path, how, why):
    directory = str(tmp_path / "run")
    v, ckpt, manager = _three_checkpoints(directory)
    _damage(os.path.join(directory, "ckpt-6"), how)
    v.assign(np.zeros(1000, np.float32))
    lines = []
    found, skipped = checkpoint_files.restore_newest(
        directory, manager.checkpoints, lambda p: ckpt.restore(p).assert_consumed(), lines.append
    )
    assert found == os.path.join(directory, "ckpt-4") and v.numpy()[0] == 4.0
    assert skipped == [os.path.join(directory, "ckpt-6")]
    (line,) = lines
    assert line.startswith(f"warning: skipping checkpoint {directory}/ckpt-6: {why}"), line
    # no longer counted among the kept ones; the older ones untouched
    checkpoint_files.untrack(directory, skipped, found)
    again = tf.train.CheckpointManager(ckpt, directory, 5, checkpoint_name="ckpt")
    assert again.checkpoints == [os.path.join(directory, f"ckpt-{s}") for s in (2, 4)]
    assert _load_all(os.path.join(directory, "ckpt-2"))["v/.ATTRIBUTES/VARIABLE_VALUE"][0] == 2
    # what export, evaluation and fine-tuning read skips it too (the cheap checks find it, except
    # a flipped byte, which only reading finds)
    if how != "flipped data byte":
        assert locate.find_checkpoint(directory) == os.path.join(directory, "ckpt-4")


def test_the_loops_checkpoint_keeper_untracks_only_its_own_broken_checkpoints(tmp_path):
    """Both training loops' `CheckpointKeeper`: resuming past a broken newest checkpoint in its
    own directory stops counting it; resuming from another directory (a non-chief worker, from
    the chief's) leaves that directory's state file as it was."""
    chief, scratch = str(tmp_path / "chief"), str(tmp_path / "scratch")
    _three_checkpoints(chief)
    _damage(os.path.join(chief, "ckpt-6"), "deleted data")
    state = os.path.join(chief, "checkpoint")
    before = read(state)
    v, step = tf.Variable(np.zeros(1000, np.float32)), tf.Variable(0, dtype=tf.int64)
    worker = CheckpointKeeper({"v": v}, step, scratch, restore_from=chief, max_to_keep=2)
    assert worker.restore_latest(lambda m: None) == os.path.join(chief, "ckpt-4")
    assert v.numpy()[0] == 4.0 and read(state) == before and worker.latest is None
    own = CheckpointKeeper({"v": v}, step, chief, max_to_keep=2)
    assert own.restore_latest(lambda m: None) == os.path.join(chief, "ckpt-4")
    assert own.manager.checkpoints == [os.path.join(chief, f"ckpt-{s}") for s in (2, 4)]
    step.assign(8)
    assert own.save() == os.path.join(chief, "ckpt-8")
    assert own.manager.checkpoints == [os.path.join(chief, f"ckpt-{s}") for s in (4, 8)]
    assert not os.path.exists(os.path.join(chief, "ckpt-2.index"))  # two kept: the oldest went


def test_all_checkpoints_broken_is_an_error_not_a_fresh_start(tmp_path):
    directory = str(tmp_path / "run")
    _, ckpt, manager = _three_checkpoints(directory)
    for step in (2, 4, 6):
        _damage(os.path.join(directory, f"ckpt-{step}"), "deleted data")
    with pytest.raises(UserError, match=r"none of its 3 checkpoints is complete"):
        checkpoint_files.restore_newest(directory, manager.checkpoints, ckpt.restore, print)
    with pytest.raises(UserError, match=r"ckpt-4: not a complete checkpoint: its data files"):
        locate.find_checkpoint(os.path.join(directory, "ckpt-4"))


@pytest.mark.slow
def test_pretraining_resumes_past_a_truncated_checkpoint_bit_for_bit(data_dir):
    hp = {**TINY_RUN, "num_train_steps": 8}
    reference = _losses(_ok(_run(data_dir, "reference", hp)))
    model_dir = os.path.join(data_dir, "models", "broken")
    shutil.copytree(os.path.join(data_dir, "models", "reference"), model_dir)
    # killed while writing ckpt-8's index after ckpt-6 was damaged: two to skip
    _damage(os.path.join(model_dir, "ckpt-8"), "deleted index")
    _damage(os.path.join(model_dir, "ckpt-6"), "truncated data")
    out = _ok(_run(data_dir, "broken", hp))
    assert (
        f"warning: skipping checkpoint {model_dir}/ckpt-8: its index ckpt-8.index is missing" in out
    )
    assert f"warning: skipping checkpoint {model_dir}/ckpt-6: its data is truncated" in out
    assert re.search(r"resumed from \S+/ckpt-4 at step 4", out), out[-2000:]
    resumed = _losses(out)
    assert sorted(resumed) == [5, 6, 7, 8]
    assert all(resumed[s] == reference[s] for s in resumed), (resumed, reference)
    a = _load_all(os.path.join(data_dir, "models", "reference", "ckpt-8"))
    b = _load_all(os.path.join(model_dir, "ckpt-8"))
    for k in a:
        if k.startswith("model/"):
            np.testing.assert_array_equal(a[k], b[k])
    for step in (2, 4):  # the older ones are still there and load
        _load_all(os.path.join(model_dir, f"ckpt-{step}"))


# -- 2. a dataset build killed, and datasets that are not what dataset_info.json lists ---------


def _corpus(directory, copies=3):
    """The bundled corpus as 6 files (both jobs of a 2-process build get work), `copies` times."""
    os.makedirs(directory)
    lines = read(os.path.join(ROOT, "data", "corpus", "enwiki_sample.txt")).splitlines(True)
    lines = lines * copies
    step = len(lines) // 6 + 1
    for i in range(6):
        with open(os.path.join(directory, f"part{i}.txt"), "w", encoding="utf-8") as f:
            f.writelines(lines[i * step : (i + 1) * step])
    return directory


def _build_args(corpus, out):
    return [
        f"--corpus_dir={corpus}",
        f"--vocab_file={os.path.join(ROOT, 'data', 'vocab', 'vocab.txt')}",
        f"--output_dir={out}",
        "--max_seq_length=32",
        "--num_out_files=4",
        "--num_processes=2",
        "--seed=5",
    ]


def _files(directory):
    return {n: read(os.path.join(directory, n), "rb") for n in sorted(os.listdir(directory))}


@pytest.mark.slow
def test_a_killed_build_is_refused_then_rebuilt_identically(tmp_path):
    corpus = _corpus(str(tmp_path / "corpus"))
    reference = str(tmp_path / "reference")
    assert (
        run_script("build_pretraining_dataset.py", *_build_args(corpus, reference)).returncode == 0
    )
    out = str(tmp_path / "data" / "pretrain_tfrecords")
    p = subprocess.Popen(
        [sys.executable, os.path.join(REPO, "build_pretraining_dataset.py")]
        + _build_args(corpus, out),
        env=ENV,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 300
    while time.time() < deadline:  # the shards are being written
        if os.path.isdir(out) and any(n.endswith(".incomplete") for n in os.listdir(out)):
            break
        time.sleep(0.005)
    time.sleep(0.3)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert p.returncode == -signal.SIGKILL
    left = sorted(os.listdir(out))
    assert ".build_incomplete" in left and "dataset_info.json" not in left, left
    assert not [n for n in left if n.startswith("pretrain_data.tfrecord")], left  # all temporary
    # the trainer refuses it, saying to rebuild
    data = str(tmp_path / "data")
    shutil.copyfile(
        os.path.join(ROOT, "data", "vocab", "vocab.txt"), os.path.join(data, "vocab.txt")
    )
    with pytest.raises(UserError, match="no pretraining TFRecords match"):
        input_files(config_of(data))
    # the same command again: the same dataset as an uninterrupted build
    p = run_script("build_pretraining_dataset.py", *_build_args(corpus, out))
    assert p.returncode == 0, p.stderr[-2000:]
    assert "an earlier build did not finish: replacing what it left" in p.stdout
    assert _files(out) == _files(reference)


def test_a_dataset_that_is_not_what_its_info_lists_is_refused(data_dir):
    tfrecords = os.path.join(data_dir, "pretrain_tfrecords")
    shard = os.path.join(tfrecords, SHARD_1)
    info_path = os.path.join(tfrecords, "dataset_info.json")
    info = read(info_path)
    assert len(input_files(config_of(data_dir))) == 2
    # a shard truncated in the middle: named, with the record where reading stops
    whole = read(shard, "rb")
    offsets = record_offsets(shard)
    os.truncate(shard, offsets[120] + 30)
    with pytest.raises(UserError) as e:
        input_files(config_of(data_dir))
    assert str(e.value).startswith(
        f"{shard}: {offsets[120] + 30} bytes, but {info_path} records {len(whole)}: the shard is "
        "truncated or was rewritten (record 120: truncated record at"
    )
    assert "rebuild it with build_pretraining_dataset.py" in str(e.value)
    assert "skip_corrupt_records=true" in str(e.value)
    # skip_corrupt_records: a warning, and the count of what is skipped
    lines = []
    assert len(input_files(config_of(data_dir, skip_corrupt_records=True), log=lines.append)) == 2
    assert (
        lines[-1]
        == "skip_corrupt_records: 1 of 2 shards damaged, 71 records skipped per pass over the data"
    )
    assert f"warning: skip_corrupt_records: {shard}: record 120 does not read" in lines[-2]
    open(shard, "wb").write(whole)
    # a shard missing, or one it does not list
    os.rename(shard, os.path.join(data_dir, "moved"))
    with pytest.raises(UserError, match=f"{re.escape(shard)}: listed in .* but missing"):
        input_files(config_of(data_dir))
    os.rename(os.path.join(data_dir, "moved"), shard)
    extra = os.path.join(tfrecords, "pretrain_data.tfrecord-2-of-2")
    shutil.copyfile(shard, extra)
    with pytest.raises(UserError, match=f"{re.escape(extra)}: not listed in"):
        input_files(config_of(data_dir))
    os.remove(extra)
    # no dataset_info.json: a build that did not finish (or another tool's data)
    os.remove(info_path)
    with pytest.raises(UserError) as e:
        input_files(config_of(data_dir))
    assert str(e.value).startswith(f"{tfrecords}: no dataset_info.json: its build did not finish")
    assert "rebuild it with build_pretraining_dataset.py" in str(e.value)
    # TFRecords made elsewhere get one written for them
    pretraining_data.index_dataset(
        tfrecords, os.path.join(data_dir, "vocab.txt"), 32, do_lower_case=True
    )
    indexed = json.loads(read(info_path))
    assert indexed["shards"] == json.loads(info)["shards"] and indexed["indexed"] is True
    assert len(input_files(config_of(data_dir))) == 2


@pytest.mark.slow
def test_cli_refuses_a_dataset_without_its_info_in_one_line(data_dir):
    os.remove(os.path.join(data_dir, "pretrain_tfrecords", "dataset_info.json"))
    line = error_line(_run(data_dir, "m", TINY_RUN))
    assert "pretrain_tfrecords: no dataset_info.json: its build did not finish" in line
    assert "rebuild it with build_pretraining_dataset.py" in line


# -- 3. one writer per run directory -----------------------------------------------------------


HOLDER = "from electra_tf.run_lock import RunLock; import sys, time; RunLock.acquire(sys.argv[1]); print('locked', flush=True); time.sleep(600)"  # noqa: E501


def _hold(lock_path):
    p = subprocess.Popen(
        [sys.executable, "-c", HOLDER, lock_path],
        env={**ENV, "PYTHONPATH": REPO},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout.readline() == "locked\n"
    return p


def test_run_lock_refuses_a_live_holder_and_takes_over_a_dead_ones(tmp_path):
    path = str(tmp_path / "run" / run_dir.LOCK_FILE)
    holder = _hold(path)
    try:
        with pytest.raises(UserError) as e:
            RunLock.acquire(path)
        assert str(e.value).startswith(
            f"{tmp_path / 'run'}: this run directory is in use by pid {holder.pid} on "
        )
        assert "-c" in str(e.value)  # the holder's command line
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    said = []
    lock = RunLock.acquire(path, log=said.append)
    assert said == [
        f"taking over the lock of {tmp_path / 'run'} left by pid {holder.pid} on "
        f"{json.loads(read(path))['host']} (since {said[0].split('(since ')[1].split(',')[0]}, "
        + said[0].split(", ", 1)[1].split(")")[0]
        + "), which is no longer running"
    ]
    assert json.loads(read(path))["pid"] == os.getpid()
    assert RunLock.acquire(path) is lock  # re-entrant within a process
    lock.release()
    assert os.path.exists(path)
    lock.release()
    assert not os.path.exists(path)  # released: removed


def test_run_lock_of_another_host_is_not_taken_over(tmp_path):
    path = tmp_path / "run" / run_dir.LOCK_FILE
    os.makedirs(path.parent)
    path.write_text(json.dumps({"pid": 1, "host": "elsewhere", "started": "then"}))
    with pytest.raises(UserError) as e:
        RunLock.acquire(str(path))
    assert str(e.value) == (
        f"{path.parent}: this run directory is locked by pid 1 on elsewhere (since then), another "
        f"host, which cannot be checked from here: if that process is gone, remove {path} and "
        "re-run"
    )


@pytest.mark.slow
def test_second_writer_of_a_run_directory_stops_at_once(data_dir, finetune_dir):
    model_dir = os.path.join(data_dir, "models", "m")
    holder = _hold(os.path.join(model_dir, run_dir.LOCK_FILE))
    try:
        t0 = time.time()
        line = error_line(_run(data_dir, "m", TINY_RUN))
        assert line.startswith(
            f"error: {model_dir}: this run directory is in use by pid {holder.pid}"
        )
        assert time.time() - t0 < 120
        assert not os.path.exists(os.path.join(model_dir, "checkpoint"))
        tiny = os.path.join(finetune_dir, "models", "tiny")
        ft_holder = _hold(os.path.join(tiny, "finetuning_sst.lock"))
        try:
            line = error_line(_finetune(finetune_dir))
            assert line.startswith(
                f"error: {tiny}: this run directory's sst fine-tuning is in use by pid "
                f"{ft_holder.pid}"
            )
        finally:
            ft_holder.send_signal(signal.SIGKILL)
            ft_holder.wait()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    out = _ok(_run(data_dir, "m", {**TINY_RUN, "num_train_steps": 2}))
    assert f"taking over the lock of {model_dir} left by pid {holder.pid}" in out
    assert not os.path.exists(os.path.join(model_dir, run_dir.LOCK_FILE))


# -- 4. a full disk -----------------------------------------------------------------------------


@contextlib.contextmanager
def small_disk(directory, size, file_size):
    """(a directory on a tmpfs of `size` bytes, None), or where mounting is not possible
    (directory, a preexec_fn limiting the size of any file a process writes to `file_size`)."""
    os.makedirs(directory)
    mounted = (
        shutil.which("mount") is not None
        and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", directory], capture_output=True
        ).returncode
        == 0
    )
    if mounted:
        try:
            yield directory, None
        finally:
            subprocess.run(["umount", "-l", directory], capture_output=True)
        return
    if not hasattr(resource, "RLIMIT_FSIZE"):
        pytest.skip("neither a tmpfs (mount) nor a file-size limit (RLIMIT_FSIZE) is available")

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes then fail with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, resource.RLIM_INFINITY))

    yield directory, limit


@pytest.mark.slow
def test_a_checkpoint_save_on_a_full_disk_is_one_line_and_keeps_the_last_one(data_dir, tmp_path):
    with small_disk(str(tmp_path / "disk"), 20 << 20, 2 << 20) as (disk, limit):
        model_dir = os.path.join(disk, "m")
        hp = {**TINY_RUN, "model_dir": model_dir, "num_train_steps": 2}
        _ok(_run(data_dir, "m", hp))  # ckpt-2 fits (12.6 MB)
        p = _run(data_dir, "m", {**hp, "num_train_steps": 6}, preexec_fn=limit)
        line = error_line(p)
        assert re.match(
            rf"error: {re.escape(model_dir)}/ckpt-4: (no space left on device|file too large) "
            rf"while writing it: free some space \(or raise the limit\) and re-run; the last "
            rf"complete checkpoint {re.escape(model_dir)}/ckpt-2 is intact$",
            line,
        ), line
        assert p.returncode == 1
        assert sorted(f for f in os.listdir(model_dir) if f.startswith("ckpt")) == [
            "ckpt-2.data-00000-of-00001",
            "ckpt-2.index",
        ]  # the failed save's partial files are gone, the last one is whole
        assert len(_load_all(os.path.join(model_dir, "ckpt-2"))) > 30
        assert locate.find_checkpoint(model_dir) == os.path.join(model_dir, "ckpt-2")


@pytest.mark.slow
def test_a_shard_write_on_a_full_disk_is_one_line_and_keeps_the_dataset(tmp_path):
    corpus = _corpus(str(tmp_path / "corpus"), copies=1)
    with small_disk(str(tmp_path / "disk"), 3 << 20, 200_000) as (disk, limit):
        out = os.path.join(disk, "tfrecords")
        args = _build_args(corpus, out)
        assert run_script("build_pretraining_dataset.py", *args).returncode == 0
        before = _files(out)  # 4 shards of 0.6 MB: a second set does not fit
        p = subprocess.run(
            [sys.executable, os.path.join(REPO, "build_pretraining_dataset.py"), *args]
            + ["--overwrite=true", "--seed=6"],
            env=ENV,
            cwd=REPO,
            capture_output=True,
            text=True,
            preexec_fn=limit,
            timeout=600,
        )
        line = error_line(p)
        assert re.match(
            rf"error: {re.escape(out)}/pretrain_data\.tfrecord-\d-of-4: (no space left on "
            r"device|file too large) while writing it: .*nothing in the output directory was "
            r"replaced$",
            line,
        ), line
        assert _files(out) == before  # the earlier dataset is intact (no temporary files left)
        cfg = PretrainingConfig.from_flat(
            "m",
            str(tmp_path),
            {**TINY_RUN, "pretrain_tfrecords": out, "vocab_file": args[1].split("=", 1)[1]},
        )
        assert len(input_files(cfg)) == 4


# -- 5. corrupted inputs ------------------------------------------------------------------------


def test_scan_finds_the_first_record_that_does_not_read(data_dir):
    shard = os.path.join(data_dir, "pretrain_tfrecords", SHARD_1)
    assert scan_shard(shard, 32) is None
    flip_byte(shard, 57)
    damage = scan_shard(shard, 32)
    assert damage.readable == 57 and damage.message.startswith("corrupted record at")
    other = os.path.join(data_dir, "pretrain_tfrecords", "pretrain_data.tfrecord-0-of-2")
    damage = scan_shard(other, 16)  # records of another length do not parse
    assert damage.readable == 0
    assert damage.message.endswith("Values size: 32 but output shape: [16]"), damage.message


@pytest.mark.slow
def test_a_flipped_byte_in_a_shard_is_one_line_or_skipped_and_counted(data_dir):
    shard = os.path.join(data_dir, "pretrain_tfrecords", SHARD_1)
    flip_byte(shard, 20)
    hp = {**TINY_RUN, "num_train_steps": 40, "log_every_steps": 10, "save_checkpoints_steps": 4}
    p = _run(data_dir, "m", hp)
    line = error_line(p)
    m = re.match(
        rf"error: {re.escape(shard)}: record 20 does not read \(corrupted record at \d+\); the "
        r"last checkpoint (\S+) is kept: rebuild the dataset \(build_pretraining_dataset.py\), or "
        r"set skip_corrupt_records=true to skip the rest of a damaged shard$",
        line,
    )
    assert m, line
    assert p.returncode == 1 and os.path.exists(m.group(1) + ".index")
    out = _ok(_run(data_dir, "skipping", {**hp, "skip_corrupt_records": True}))
    assert f"warning: skip_corrupt_records: {shard}: record 20 does not read" in out
    assert "skipping 171 of 191 records from there" in out
    assert "skip_corrupt_records: 1 of 2 shards damaged, 171 records skipped per pass" in out
    assert sorted(_losses(out)) == [10, 20, 30, 40]  # trained to the end


@pytest.mark.slow
def test_cli_truncated_shard_is_one_line_naming_it_and_the_record(data_dir):
    shard = os.path.join(data_dir, "pretrain_tfrecords", SHARD_1)
    os.truncate(shard, record_offsets(shard)[33] + 5)
    line = error_line(_run(data_dir, "m", TINY_RUN))
    assert line.startswith(f"error: {shard}: ")
    assert "(record 33: the file ends after 33 of 191 records)" in line


def test_corpus_with_invalid_utf8_and_nul_is_replaced_and_counted(tmp_path, capsys):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_bytes(b"good line one\nbad \xff\xfe byte here\n\nnul\x00 here too\n")
    (corpus / "b.txt").write_bytes(b"clean text\n\nmore \xc3 text\nand more\n")
    vocab_file = os.path.join(ROOT, "data", "vocab", "vocab.txt")
    info = pretraining_data.build_dataset(
        str(corpus), vocab_file, str(tmp_path / "out"), 16, num_out_files=1, verbose=False
    )
    assert (info["invalid_utf8_lines"], info["nul_lines"]) == (2, 1)
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"warning: {corpus / 'a.txt'}: line 2: invalid UTF-8 (replaced by U+FFFD, which the "
        "tokenizer drops); 1 such line(s) in the file",
        f"warning: {corpus / 'a.txt'}: line 4: NUL characters (dropped by the tokenizer); 1 such "
        "line(s) in the file",
        f"warning: {corpus / 'b.txt'}: line 3: invalid UTF-8 (replaced by U+FFFD, which the "
        "tokenizer drops); 1 such line(s) in the file",
    ]
    # the replacement and the tokenizer's cleaning: as if the bad bytes and the NUL were not there
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "a.txt").write_bytes(b"good line one\nbad  byte here\n\nnul here too\n")
    (clean / "b.txt").write_bytes(b"clean text\n\nmore  text\nand more\n")
    pretraining_data.build_dataset(
        str(clean), vocab_file, str(tmp_path / "clean_out"), 16, num_out_files=1, verbose=False
    )
    got = list(pretraining_data.iter_examples(str(tmp_path / "out")))
    assert got == list(pretraining_data.iter_examples(str(tmp_path / "clean_out"))) and got
    assert vocab.load_vocab(vocab_file)["[UNK]"] not in [i for e in got for i in e["input_ids"]]


def test_hparams_json_and_types_name_the_line_column_and_key(tmp_path):
    bad = tmp_path / "hp.json"
    bad.write_text('{\n  "learning_rate": 1e-3,\n  "seed": 1,,\n}\n')
    with pytest.raises(
        UserError, match=rf"^{re.escape(str(bad))}: not valid JSON \(line 3, column 13"
    ):
        hparams.parse_hparams(str(bad))
    with pytest.raises(UserError, match=r"^--hparams: not valid JSON \(line 1, column 2"):
        hparams.parse_hparams("{nope}")
    with pytest.raises(
        UserError, match=r'^hparam num_train_steps: expected int, got "ten" \(str\)$'
    ):
        PretrainingConfig.from_flat("m", "d", {"num_train_steps": "ten"})
    with pytest.raises(
        UserError, match=r"^hparam learning_rate: expected float, got \[1\] \(list\)$"
    ):
        PretrainingConfig.from_flat("m", "d", {"learning_rate": [1]})
    with pytest.raises(
        UserError, match=r'^hparam num_train_epochs: expected float or null, got "ten"'
    ):
        FinetuningConfig("m", "d", num_train_epochs="ten")
    with pytest.raises(
        UserError, match=r"^hparam learning_rate: expected float or null, got \[1\]"
    ):
        FinetuningConfig("m", "d", learning_rate=[1])
    with pytest.raises(UserError, match=r'^hparam deterministic: expected bool, got "yes"'):
        FinetuningConfig("m", "d", deterministic="yes")
    with pytest.raises(
        UserError, match=r"^hparam task_names: expected names \(strings\), got \[1\]"
    ):
        FinetuningConfig("m", "d", task_names=[1])


def test_squad_answer_not_in_its_context_is_one_line(tmp_path, capsys):
    path = tmp_path / "train.json"
    qas = [
        {"id": "q1", "question": "who?", "answers": [{"text": "alice", "answer_start": 0}]},
        {"id": "q2", "question": "what?", "answers": [{"text": "zebra", "answer_start": 6}]},
        {"id": "q3", "question": "where?", "answers": [{"text": "paris", "answer_start": 90}]},
    ]
    context = "alice met bob in paris"
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": context, "qas": qas}]}]}))
    examples = read_squad_examples(str(path), "train", "squad", v2=False)
    assert [e.qas_id for e in examples] == ["q1"]
    assert capsys.readouterr().err.splitlines() == [
        f"warning: {path}: 2 training answer(s) not found in their context, those questions "
        f"skipped (as the original): {path}: data[0].paragraphs[0].qas[1] ('zebra' is not at "
        "its answer_start) and 1 more"
    ]


def test_impossible_configs_and_vocabs_are_one_line_at_every_entry_point(data_dir, tmp_path):
    vocab_file = os.path.join(data_dir, "vocab.txt")
    no_mask = tmp_path / "no_mask.txt"
    no_mask.write_text(read(vocab_file).replace("[MASK]\n", "[MAZK]\n"))
    no_sep = tmp_path / "no_sep.txt"
    no_sep.write_text(read(vocab_file).replace("[SEP]\n", "[SEQ]\n"))
    from electra_tf.train import Trainer

    # pretraining: max_seq_length over the positions; a vocab without [MASK]
    with pytest.raises(
        UserError, match=r"^max_seq_length 1024 exceeds max_position_embeddings 512$"
    ):
        Trainer(config_of(data_dir, max_seq_length=1024))
    with pytest.raises(
        UserError, match=rf"^{re.escape(str(no_mask))}: the vocab has no \[MASK\] token$"
    ):
        Trainer(config_of(data_dir, vocab_file=str(no_mask)))
    # the dataset build: a vocab without [SEP] (or [MASK]) before anything is written
    with pytest.raises(
        UserError, match=rf"^{re.escape(str(no_sep))}: the vocab has no \[SEP\] token$"
    ):
        pretraining_data.build_dataset(
            os.path.join(data_dir, "corpus.txt"), str(no_sep), str(tmp_path / "o"), verbose=False
        )
    assert not os.path.exists(tmp_path / "o")


def test_damaged_files_read_elsewhere_are_one_line_naming_them(tmp_path):
    # a pretrained checkpoint with a flipped byte: fine-tuning's and warm start's reader
    cfg = tiny_config()
    enc = TransformerEncoder(cfg)
    b = dummy_batch()
    enc(b["input_ids"], b["input_mask"], b["segment_ids"])
    prefix = str(tmp_path / "model.ckpt-5")
    save_name_based(enc.weights, prefix)
    data = prefix + ".data-00000-of-00001"
    damaged = bytearray(read(data, "rb"))
    damaged[len(damaged) // 2] ^= 1
    open(data, "wb").write(bytes(damaged))
    with pytest.raises(UserError) as e:
        restore.restore_discriminator(enc, prefix)
    assert str(e.value).startswith(f"{prefix}: the checkpoint does not read back (")
    assert "Checksum does not match" in str(e.value) and "\n" not in str(e.value)
    # a vocab file that is not UTF-8
    bad_vocab = tmp_path / "vocab.txt"
    bad_vocab.write_bytes(b"[PAD]\n[UNK]\nca\xfef\xe9\n")
    with pytest.raises(UserError, match=rf"^{re.escape(str(bad_vocab))}: line 3: not UTF-8"):
        vocab.read_vocab(str(bad_vocab))
    # a dataset_info.json that is JSON but not the builder's
    info = tmp_path / "dataset_info.json"
    info.write_text("[1, 2]")
    with pytest.raises(UserError, match=rf"^{re.escape(str(info))}: not a JSON object; rebuild"):
        pretraining_data.check_dataset_info(str(tmp_path), str(bad_vocab), 8, True)
    # what no caller catches becomes one line at the top (TensorFlow's file errors, OSError)
    try:
        tf.io.gfile.GFile(str(tmp_path / "missing.txt")).read()
    except tf.errors.NotFoundError as e:
        assert errors.file_error_line(e) == f"{tmp_path / 'missing.txt'}; No such file or directory"
    assert errors.file_error_line(PermissionError(13, "Permission denied", "/x")) == (
        "/x: Permission denied"
    )
    assert errors.file_error_line(ValueError("a bug")) is None
    p = subprocess.run(
        [sys.executable, "-c", "from electra_tf import errors; import tensorflow as tf;"
         "errors.run_main(lambda: tf.io.gfile.GFile('/nonexistent/f').read())"],
        env={**ENV, "PYTHONPATH": REPO}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert p.stderr.splitlines()[-1] == (
        "error: /nonexistent/f; No such file or directory (set ELECTRA_TF_TRACEBACK=1 for the "
        "traceback)"
    )


@pytest.fixture(scope="module")
def finetune_base(tmp_path_factory):
    """A tiny "pretrained" model (config.json, a name-based checkpoint), the vocab, and the
    tests' fine-tuning data."""
    d = tmp_path_factory.mktemp("ft_faults")
    model_dir = d / "models" / "tiny"
    os.makedirs(model_dir)
    cfg = tiny_config()
    (model_dir / "config.json").write_text(
        json.dumps({"model_size": "small", "model_config": cfg.to_dict()})
    )
    tf.keras.utils.set_random_seed(0)
    enc = TransformerEncoder(cfg)
    b = dummy_batch()
    enc(b["input_ids"], b["input_mask"], b["segment_ids"])
    save_name_based(enc.weights, str(model_dir / "model.ckpt-5"))
    shutil.copy(os.path.join(ROOT, "data", "vocab", "vocab.txt"), d / "vocab.txt")
    shutil.copytree(DATA, d / "finetuning_data")
    return str(d)


@pytest.fixture
def finetune_dir(finetune_base, tmp_path):
    d = str(tmp_path / "ft")
    shutil.copytree(finetune_base, d)
    return d


FT = dict(
    task_names=["sst"],
    train_batch_size=4,
    eval_batch_size=4,
    max_seq_length=32,
    num_train_epochs=8.0,  # 5 examples, padded to 8: 16 steps per trial
    jit_compile=False,
    log_every_steps=1,
    save_checkpoints_steps=3,
    seed=3,
    deterministic=True,
    num_trials=3,
    write_test_outputs=True,
)


def _finetune(data, hp=None, **popen):
    return _finish(_finetune_popen(data, hp, **popen))


def _finetune_popen(data, hp=None, **popen):
    return subprocess.Popen(
        [
            sys.executable,
            os.path.join(REPO, "run_finetuning.py"),
            f"--data_dir={data}",
            "--model_name=tiny",
            f"--hparams={json.dumps(hp or FT)}",
        ],
        env=ENV,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


def _results(data):
    results = os.path.join(data, "models", "tiny", "results")
    out = {}
    for name in sorted(os.listdir(results)):
        text = read(os.path.join(results, name)).replace(data, "DATA_DIR")
        if name.endswith(".json"):
            d = json.loads(text)
            for t in d["trials"]:
                t.pop("train_seconds")
            out[name] = d
        else:
            out[name] = text
    return out


@pytest.mark.slow
def test_finetuning_killed_in_its_second_trial_resumes_to_the_same_results(finetune_base, tmp_path):
    reference, killed = str(tmp_path / "reference"), str(tmp_path / "killed")
    shutil.copytree(finetune_base, reference)
    shutil.copytree(finetune_base, killed)
    out = _ok(_finetune(reference))
    assert "resumed" not in out and out.count("step 16/16") == 3
    p = _finetune_popen(killed)
    seen = _wait_for(p, r"^trial 2: training 16 steps")
    seen = _wait_for(p, r"^step 8/16", seen)  # after trial 2's checkpoint at step 6
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert p.returncode == -signal.SIGKILL
    tiny = os.path.join(killed, "models", "tiny")
    state = json.loads(read(os.path.join(tiny, "results", "sst_trials.json")))
    assert sorted(state["trials"]) == ["1"]
    assert not os.path.exists(os.path.join(tiny, "results", "sst.json"))  # only when all are done
    out = _ok(_finetune(killed))
    assert "sst_trials.json: trial(s) 1 already done" in out
    assert re.search(r"trial 2: resumed from \S+sst_trial_2/ckpt-6 at step 6", out), out[-3000:]
    assert "trial 1: training" not in out and "trial 3: training" in out
    assert _results(killed) == _results(reference)
    assert sorted(os.listdir(os.path.join(tiny, "results"))) == sorted(
        os.listdir(os.path.join(reference, "models", "tiny", "results"))
    )  # the record of finished trials is gone
    assert not os.path.exists(os.path.join(tiny, "finetuning_checkpoints"))


def test_finetuning_non_finite_loss_stops_the_trial_naming_the_step(finetune_dir):
    hp = {**FT, "learning_rate": 1e38, "num_trials": 1, "clip_norm": 1e38}
    hp.pop("task_names")
    with pytest.raises(UserError) as e:
        run_finetuning(FinetuningConfig("tiny", finetune_dir, task_names=["sst"], **hp))
    m = re.match(
        r"trial 1: non-finite loss \((nan|inf)\) at step (\d+); the last good checkpoint is "
        r"(\S+|none) \(kept\)",
        str(e.value),
    )
    assert m, str(e.value)
    assert not os.path.exists(os.path.join(finetune_dir, "models", "tiny", "results", "sst.json"))


def test_finetuning_damaged_trial_record_is_one_line_and_kept(finetune_dir):
    hp = {**FT, "num_trials": 1}
    hp.pop("task_names")
    config = FinetuningConfig("tiny", finetune_dir, task_names=["sst"], **hp)
    record = os.path.join(finetune_dir, "models", "tiny", "results", "sst_trials.json")
    os.makedirs(os.path.dirname(record))
    with open(record, "w") as f:
        f.write('{"key": {"config": ')
    with pytest.raises(UserError) as e:
        run_finetuning(config)
    assert str(e.value).startswith(f"{record}: not valid JSON (line 1, column 20")
    assert str(e.value).endswith("the record of this run's finished trials is damaged; remove "
                                 "it to run every trial again")  # fmt: skip
    assert read(record) == '{"key": {"config": '  # left as it was


def test_finetuning_locks_its_tasks_not_the_directory(finetune_dir):
    tiny = os.path.join(finetune_dir, "models", "tiny")
    hp = {k: v for k, v in FT.items() if k != "task_names"}
    holders = [_hold(os.path.join(tiny, n)) for n in ("finetuning_sst.lock", run_dir.LOCK_FILE)]
    try:
        with pytest.raises(UserError, match=rf"in use by pid {holders[0].pid} "):
            trials.lock_tasks(FinetuningConfig("tiny", finetune_dir, task_names=["mrpc", "sst"]))
        assert not os.path.exists(os.path.join(tiny, "finetuning_mrpc.lock"))  # released
        # another task, the random_init baseline of the same task, pretraining: beside it
        for tasks, random_init in ((["mrpc"], False), (["sst"], True)):
            config = FinetuningConfig(
                "tiny", finetune_dir, task_names=tasks, random_init=random_init, **hp
            )
            with trials.lock_tasks(config):
                name = f"finetuning_{tasks[0]}{'_random_init' if random_init else ''}.lock"
                assert json.loads(read(os.path.join(tiny, name)))["pid"] == os.getpid()
            assert not os.path.exists(os.path.join(tiny, name))
    finally:
        for h in holders:
            h.send_signal(signal.SIGKILL)
            h.wait()


def test_finetuning_state_of_another_config_is_not_resumed(finetune_dir):
    hp = {k: v for k, v in FT.items() if k != "task_names"}
    config = FinetuningConfig("tiny", finetune_dir, task_names=["sst"], **hp)
    tiny = os.path.join(finetune_dir, "models", "tiny")
    path = os.path.join(tiny, "results", "sst_trials.json")
    said = []
    first = trials.TrialRecord(config, None, said.append)
    assert said == [] and json.loads(read(path))["trials"] == {}  # recorded before any trial
    ckpt_dir = config.run.trial_checkpoint_dir(["sst"], 2)
    os.makedirs(ckpt_dir)
    baseline = config.run.trial_checkpoint_dir(["sst"], 2, random_init=True)
    os.makedirs(baseline)  # another run's (the baseline's): untouched
    first.record(1, {"info": {"trial": 1}})
    # the same command again: trial 1 done, trial 2's checkpoints resumed from
    again = trials.TrialRecord(config, None, said.append)
    assert again.done(1) == {"info": {"trial": 1}} and os.path.isdir(ckpt_dir)
    assert said == [f"{path}: trial(s) 1 already done"]
    # another learning rate: nothing reused, the old record kept aside
    said.clear()
    other = config.with_hparams(learning_rate=1e-3)
    record = trials.TrialRecord(other, None, said.append)
    assert record.done(1) is None and not os.path.exists(ckpt_dir) and os.path.isdir(baseline)
    aside = os.path.join(tiny, "results", "sst_trials.other_run.json")
    assert said == [
        f"{path}: recorded by a run with another config or checkpoint: its trials are not "
        f"reused (the record is kept as {aside})",
        f"{ckpt_dir}: an unfinished trial of another run: removed, not resumed",
    ]
    assert json.loads(read(aside))["trials"]["1"] == {"info": {"trial": 1}}


@pytest.mark.slow
def test_finetuning_cli_errors_are_one_line(finetune_dir):
    line = error_line(_finetune(finetune_dir, {"task_names": ["sst"], "num_trials": "3"}))
    assert line == 'error: hparam num_trials: expected int, got "3" (str)'
    p = run_script(
        "run_finetuning.py",
        f"--data_dir={finetune_dir}",
        "--model_name=tiny",
        '--hparams={"task_names": ["sst"],\n "seed": 1,,}',
    )
    assert error_line(p) == (
        "error: --hparams: not valid JSON (line 2, column 12: Expecting property name enclosed "
        "in double quotes)"
    )
    line = error_line(_finetune(finetune_dir, {**FT, "max_seq_length": 1000}))
    assert line == "error: max_seq_length 1000 exceeds the model's max_position_embeddings 128"
    topic = os.path.join(finetune_dir, "finetuning_data", "topic")
    os.makedirs(topic)
    with open(os.path.join(topic, "train.tsv"), "w") as f:
        f.write("id\tsentence\ttopic\na\tball goal\tsport\n")
    spec = {"type": "classification", "header": True, "text_a": "text", "label": "topic"}
    with open(os.path.join(topic, "task.json"), "w") as f:
        json.dump(spec, f)
    line = error_line(_finetune(finetune_dir, {**FT, "task_names": ["topic"]}))
    assert line.startswith(f"error: {topic}/train.tsv:1: no column 'text' (")


# -- 6. Ctrl-C ------------------------------------------------------------------------------------


def test_ctrl_c_is_recorded_once_and_a_second_one_stops_at_once():
    from electra_tf.train.preemption import StopSignal

    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        with StopSignal((signal.SIGTERM, signal.SIGINT)) as stop:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)
            assert stop.received == signal.SIGINT  # recorded: the loop saves and exits
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)
    assert signal.getsignal(signal.SIGINT) is before  # the handler is put back


@pytest.mark.slow
def test_ctrl_c_saves_a_checkpoint_and_exits_non_zero(data_dir):
    hp = {**TINY_RUN, "num_train_steps": 1000, "save_checkpoints_steps": 1000}
    p = _pretrain(data_dir, "interrupted", hp)
    seen = _wait_for(p, r"^step 3/")
    p.send_signal(signal.SIGINT)
    out = _finish(p, timeout=300)
    seen += out.stdout
    m = re.search(r"received signal 2: saved a checkpoint at step (\d+)", seen)
    assert m, seen[-2000:] + out.stderr[-2000:]
    assert p.returncode == 130 and "Traceback" not in out.stderr
    model_dir = os.path.join(data_dir, "models", "interrupted")
    assert len(_load_all(os.path.join(model_dir, f"ckpt-{m.group(1)}"))) > 30
    assert not os.path.exists(os.path.join(model_dir, run_dir.LOCK_FILE))
