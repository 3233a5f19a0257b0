"""The fifth pilot round's control (experiments/README.md): a copy of a pretraining checkpoint's
discriminator whose word-embedding rows are permuted among the learned tokens (those after the
vocab's reserved ones, from id 104 in BERT's layout, seed 0; [PAD], [UNK], [CLS], [SEP], [MASK] and
the unused ids stay), so that the table keeps its set of vectors and their scale but loses which
vector belongs to which word.

    python -m experiments.pilot.embeddings_transfer.shuffle_embedding_rows PRETRAINING_CKPT OUT_DIR

writes OUT_DIR/ckpt-shuffled (the encoder alone, under `model/encoder` as a fine-tuning
checkpoint holds it) with the run's
config.json and vocab.txt beside it, for `run_finetuning.py --hparams='{"init_checkpoint":
"OUT_DIR/ckpt-shuffled", ...}'`."""

import os
import shutil
import sys

import numpy as np
import tensorflow as tf

from build_vocab import reserved_tokens
from electra_tf import data_layout, vocab
from electra_tf.checkpoint import locate, restore
from electra_tf.modeling.encoder import TransformerEncoder

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def first_learned_id(vocab_file: str) -> int:
    """The id of the first token the vocab learner added (104 in BERT's layout)."""
    reserved = set(reserved_tokens(reserve_unused=True))
    tokens = vocab.vocab_tokens(vocab.load_vocab(vocab_file))
    return next(i for i, t in enumerate(tokens) if t not in reserved)


def main(src: str, out: str) -> None:
    os.makedirs(out, exist_ok=True)
    here = os.path.dirname(src)
    model_config = locate.read_run_config(os.path.join(here, "config.json")).model_config
    encoder = TransformerEncoder(model_config, name="electra")
    ids = tf.zeros([1, 8], tf.int32)
    encoder(ids, ids + 1, ids)  # builds the variables
    restore.restore_discriminator(encoder, src)
    table = encoder.embeddings.word_embeddings
    values = table.numpy()
    first = first_learned_id(data_layout.vocab_file(here))
    order = np.arange(values.shape[0])
    order[first:] = first + np.random.default_rng(0).permutation(values.shape[0] - first)
    table.assign(values[order])
    print(f"{table.path} {values.shape}: {int((order != np.arange(len(order))).sum())} rows moved")
    holder = tf.train.Checkpoint(encoder=encoder)
    tf.train.Checkpoint(model=holder).write(
        os.path.join(out, f"{data_layout.CHECKPOINT_NAME}-shuffled")
    )
    for name in ("config.json", data_layout.VOCAB_FILE):
        shutil.copy(os.path.join(here, name), os.path.join(out, name))


if __name__ == "__main__":
    main(*sys.argv[1:3])
