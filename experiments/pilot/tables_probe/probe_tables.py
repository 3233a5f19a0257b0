"""Probe a pretraining checkpoint's word tables as bag-of-words vectors: each movie sentence the
mean of its WordPiece ids' rows of the discriminator's input table and of the generator's output
table (untied recipes), scored with experiments/probe.py's probe (validation split, seed 0).

    python -m experiments.pilot.tables_probe.probe_tables VOCAB CKPT [CKPT ...]

CKPT: a pretraining run's checkpoint prefix (WORK/data/models/pt_electra_1e14/ckpt-STEP).
"""

import os
import sys

import numpy as np
import tensorflow as tf
from absl import flags

from electra_tf.tokenization import FullTokenizer
from experiments.probe import probe_features, read_task

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

TABLES = {
    "discriminator input table": "model/discriminator/embeddings/word_embeddings",
    "generator output table": "model/generator_predictions/output_weights",
}

if __name__ == "__main__":
    flags.FLAGS(sys.argv[:1])
    vocab, checkpoints = sys.argv[1], sys.argv[2:]
    tokenizer = FullTokenizer(vocab, do_lower_case=True)
    sentences, labels = read_task(os.path.join(REPO, "data", "movie_sentiment", "train.tsv"))
    ids = [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(s)) for s in sentences]
    for checkpoint in checkpoints:
        reader = tf.train.load_checkpoint(checkpoint)
        for name, key in TABLES.items():
            table = reader.get_tensor(key + "/.ATTRIBUTES/VARIABLE_VALUE")
            feats = np.stack([table[i].mean(0) if i else np.zeros(table.shape[1]) for i in ids])
            accs = probe_features(feats, labels, 1000, ["300", "1000", "all"])
            shown = "  ".join(f"N={c}: {a:.1f}" for c, a in accs.items())
            print(f"{checkpoint}  {name:26s} {shown}", flush=True)
