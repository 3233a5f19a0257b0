"""The shared test harness: a tiny pretrainer and synthetic batches (in process), a tiny
pretraining dataset built from the bundled corpus, and running the repo's scripts.

`conftest.py` exposes these as fixtures; tests import the constants from here.
"""

import os
import shutil
import subprocess
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# subprocesses: quiet TensorFlow, no GPU, no cluster
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""}
ENV.pop("TF_CONFIG", None)
BERT_VOCAB = os.path.join(REPO, "data", "vocab", "vocab.txt")
CORPUS = os.path.join(REPO, "data", "corpus", "enwiki_sample.txt")

SPECIAL = {"pad": 0, "cls": 101, "sep": 102, "mask": 103}
VOCAB = 200
TINY = dict(
    model_size="small",
    embedding_size=16,
    model_hparam_overrides=dict(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64
    ),
    generator_hidden_size=0.5,
    max_seq_length=16,
)
# a tiny run of run_pretraining.py on the `tiny_dataset` (dropout off: see test_distributed)
TINY_RUN = dict(
    model_size="small",
    embedding_size=32,
    model_hparam_overrides=dict(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    ),
    generator_hidden_size=0.5,
    max_seq_length=32,
    train_batch_size=4,
    num_train_steps=6,
    num_warmup_steps=2,
    learning_rate=1e-3,
    save_checkpoints_steps=2,
    log_every_steps=1,
    shuffle_buffer_size=1,
    jit_compile=False,
    seed=3,
    deterministic=True,
)


def make_tiny_model(**overrides):
    """(config, ElectraPretrainer) for the tiny config with `overrides` (vocab of 200 ids)."""
    from electra_tf.pretraining_config import PretrainingConfig
    from electra_tf.pretraining_networks import build_pretrainer

    config = PretrainingConfig.from_flat("t", "/nonexistent", {**TINY, **overrides})
    return config, build_pretrainer(config, VOCAB, SPECIAL)


def make_synthetic_batch(seed=0, batch=4, length=16, low=110):
    """[CLS] random ids in [low, VOCAB) [SEP], then padding; lengths between length/2 and length."""
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    ids = rng.integers(low, VOCAB, (batch, length)).astype(np.int32)
    ids[:, 0] = 101
    lengths = rng.integers(length // 2, length + 1, batch)
    mask = np.zeros_like(ids)
    for b, n in enumerate(lengths):
        ids[b, n - 1] = 102
        ids[b, n:] = 0
        mask[b, :n] = 1
    return {
        "input_ids": tf.constant(ids),
        "input_mask": tf.constant(mask),
        "segment_ids": tf.zeros_like(tf.constant(ids)),
    }


def build_tiny_dataset(directory: str, lines: int = 600, max_seq_length: int = 32) -> str:
    """DATA_DIR with vocab.txt (BERT's) and pretrain_tfrecords/ (2 shards) from the first
    `lines` lines of the bundled corpus, built by build_pretraining_dataset.py."""
    os.makedirs(directory, exist_ok=True)
    corpus = os.path.join(directory, "corpus.txt")
    with open(CORPUS, encoding="utf-8") as f, open(corpus, "w", encoding="utf-8") as out:
        out.writelines(f.readlines()[:lines])
    shutil.copyfile(BERT_VOCAB, os.path.join(directory, "vocab.txt"))
    p = subprocess.run(
        [
            sys.executable,
            os.path.join(REPO, "build_pretraining_dataset.py"),
            f"--corpus_dir={corpus}",
            f"--vocab_file={os.path.join(directory, 'vocab.txt')}",
            f"--output_dir={os.path.join(directory, 'pretrain_tfrecords')}",
            f"--max_seq_length={max_seq_length}",
            "--num_out_files=2",
            "--num_processes=1",
        ],
        env=ENV,
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    return directory


def run_script(script: str, *args: str, timeout: int = 600, env=None, cwd=REPO):
    """Runs one of the repo's scripts with this interpreter; a CompletedProcess (text)."""
    return subprocess.run(
        [sys.executable, os.path.join(REPO, script), *args],
        env=env or ENV,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )


def error_line(p) -> str:
    """The one `error:` line a failed command printed (asserting that there is exactly one and
    no traceback)."""
    assert p.returncode != 0, p.stdout[-2000:]
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    lines = [line for line in p.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, p.stderr[-3000:]
    return lines[0]


def topic_counts(seed=0, topics=5, words=8):
    """Symmetric co-occurrence counts of words in topics, mostly within their topic: PPMI has a
    clear top spectrum (one direction a topic)."""
    rng = np.random.default_rng(seed)
    topic = np.repeat(np.arange(topics), words)
    counts = rng.poisson(np.where(topic[:, None] == topic[None, :], 40.0, 1.0)).astype(float)
    counts = counts + counts.T
    np.fill_diagonal(counts, 0)
    return counts


def exact_ppmi_vectors(counts, dim):
    """PPMI of dense counts by hand (context counts smoothed ^0.75), then U sqrt(S) of numpy's
    exact SVD: the reference for the randomized PPMI-SVD."""
    total = counts.sum()
    p_context = counts.sum(0) ** 0.75 / (counts.sum(0) ** 0.75).sum()
    with np.errstate(divide="ignore"):
        pmi = np.log(counts / total / (counts.sum(1)[:, None] / total) / p_context[None, :])
    ppmi = np.where(np.isfinite(pmi), np.maximum(pmi, 0), 0)
    u, s, _ = np.linalg.svd(ppmi)
    return u[:, :dim] * np.sqrt(s[:dim])
