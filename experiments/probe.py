"""A cheap frozen probe of a pretrained encoder: pooled features + logistic regression on the movie
task's validation split (the last --validation_split training sentences; the dev set is not read).

Fine-tuning decides what transfers; this is a fast guide for a recipe search (seconds per
checkpoint): the encoder is frozen, each sentence becomes the mean of its real tokens' vectors at
the word embeddings and at the last layer (and the last layer's [CLS]), and an L2-regularised
logistic regression (Newton's method; the regularisation strength picked on the validation
split) is fitted on the first N of a seeded shuffle of the remaining training sentences.

    python -m experiments.probe --checkpoint=RUN/ckpt-2640 [--checkpoint=HF_DIR ...] [--random_init]

prints one line per checkpoint and feature, and with --out a JSON of every figure.
"""

import json
import os
from typing import Dict, List, Sequence, Tuple

import numpy as np
from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from electra_tf.checkpoint import locate  # noqa: E402
from electra_tf.errors import UserError, run_main  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_multi_string("checkpoint", None, "Pretraining checkpoint prefix(es) or run dirs.")
flags.DEFINE_bool("random_init", False, "Also probe a randomly initialised encoder of that shape.")
flags.DEFINE_string("movie_data", os.path.join(REPO, "data", "movie_sentiment"), "Task data.")
flags.DEFINE_integer("validation_split", 1000, "Score on the train file's last N sentences.")
flags.DEFINE_list("label_counts", ["300", "1000", "all"], "Training sentences per fit.")
flags.DEFINE_integer("max_seq_length", 64, "Tokens per sentence ([CLS] and [SEP] included).")
flags.DEFINE_string("out", None, "Optional JSON output.")

L2_GRID = (1e-3, 1e-2, 1e-1, 1.0, 10.0)


def read_task(path: str) -> Tuple[List[str], np.ndarray]:
    with open(path, encoding="utf-8") as f:
        rows = [line.rsplit("\t", 1) for line in f.read().splitlines()[1:] if line.strip()]
    return [r[0] for r in rows], np.array([int(r[1]) for r in rows])


def logistic_regression(x: np.ndarray, y: np.ndarray, l2: float, iterations: int = 30):
    """Weights (bias last) minimising mean log-loss + l2/2 |w|^2 by Newton's method."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(xb.shape[1])
    reg = np.full(xb.shape[1], l2)
    reg[-1] = 0.0  # the bias is not shrunk
    for _ in range(iterations):
        p = 1 / (1 + np.exp(-xb @ w))
        grad = xb.T @ (p - y) / len(y) + reg * w
        hess = (xb * (p * (1 - p))[:, None]).T @ xb / len(y) + np.diag(reg) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def accuracy(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    return float((((np.hstack([x, np.ones((len(x), 1))]) @ w) > 0) == y).mean())


def probe_features(
    feats: np.ndarray, labels: np.ndarray, val: int, counts: Sequence[str], seed: int = 0
) -> Dict[str, float]:
    """Validation accuracy (%) at each label count, the best L2 of the grid."""
    train_x, train_y, val_x, val_y = feats[:-val], labels[:-val], feats[-val:], labels[-val:]
    order = np.random.default_rng(seed).permutation(len(train_x))
    out = {}
    for c in counts:
        n = len(order) if c == "all" else int(c)
        idx = order[:n]
        mean, std = train_x[idx].mean(0), train_x[idx].std(0) + 1e-6
        xs, vs = (train_x[idx] - mean) / std, (val_x - mean) / std
        out[c] = max(100 * accuracy(logistic_regression(xs, train_y[idx], l2), vs, val_y)
                     for l2 in L2_GRID)  # fmt: skip
    return out


def encode(encoder, tokenizer, sentences: List[str], max_len: int) -> Dict[str, np.ndarray]:
    import tensorflow as tf

    from electra_tf import packing, vocab

    ids = vocab.special_token_ids(tokenizer.vocab, tokenizer.vocab_file, ("cls", "sep"))
    packed = [packing.pack_and_pad(a, None, max_len, ids["cls"], ids["sep"])
              for a in tokenizer.tokenize_to_ids(sentences)]  # fmt: skip
    input_ids, input_mask, segment_ids = (np.array(x, np.int32) for x in zip(*packed))

    @tf.function
    def features(i, m, s):
        emb = encoder.embeddings(i, s)
        seq = encoder(i, m, s, training=False)
        w = tf.cast(m, tf.float32)[:, :, None]
        n = tf.reduce_sum(w, 1)
        return tf.reduce_sum(emb * w, 1) / n, tf.reduce_sum(seq * w, 1) / n, seq[:, 0]

    parts = [features(input_ids[k : k + 256], input_mask[k : k + 256], segment_ids[k : k + 256])
             for k in range(0, len(input_ids), 256)]  # fmt: skip
    names = ("embeddings_mean", "last_layer_mean", "last_layer_cls")
    return {n: np.concatenate([p[j].numpy() for p in parts]) for j, n in enumerate(names)}


def load_encoder(checkpoint: str, random_init: bool):
    import tensorflow as tf

    from electra_tf import run_dir
    from electra_tf.checkpoint import restore
    from electra_tf.modeling.encoder import TransformerEncoder
    from electra_tf.tokenization import FullTokenizer

    # the same look-up as fine-tuning's init_checkpoint: a run dir or prefix of this project, a
    # Hugging Face directory or a keras-hub preset, with the config.json and vocab beside it
    prefix = locate.resolve_checkpoint(checkpoint)
    found = locate.find_beside(prefix, (run_dir.CONFIG_FILE,))
    if found is None:
        raise UserError(f"{checkpoint}: no {run_dir.CONFIG_FILE} beside the checkpoint")
    config = locate.read_run_config(found)
    encoder = TransformerEncoder(config.model_config, name="electra")
    ids = tf.zeros([1, 8], tf.int32)
    encoder(ids, ids + 1, ids)
    if not random_init:
        restore.restore_discriminator(encoder, prefix)
    vocab_file = locate.vocab_beside(prefix) or config.hparams.get("vocab_file")
    if not vocab_file:
        raise UserError(f"{checkpoint}: no vocab beside the checkpoint, none in its config")
    return encoder, FullTokenizer(vocab_file), prefix


def main() -> None:
    if not FLAGS.checkpoint:
        raise UserError("--checkpoint is required")
    sentences, labels = read_task(os.path.join(FLAGS.movie_data, "train.tsv"))
    runs = [(c, False) for c in FLAGS.checkpoint]
    if FLAGS.random_init:
        runs.append((FLAGS.checkpoint[0], True))
    report = {}
    for checkpoint, random_init in runs:
        encoder, tokenizer, prefix = load_encoder(checkpoint, random_init)
        name = "random_init" if random_init else prefix
        feats = encode(encoder, tokenizer, sentences, FLAGS.max_seq_length)
        report[name] = {}
        for feature, x in feats.items():
            accs = probe_features(x, labels, FLAGS.validation_split, FLAGS.label_counts)
            report[name][feature] = accs
            shown = "  ".join(f"N={c}: {a:.1f}" for c, a in accs.items())
            print(f"{name}  {feature:16s} {shown}", flush=True)
    if FLAGS.out:
        with open(FLAGS.out, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    app.run(lambda argv: run_main(main))
