"""The count vectors alone as the word table, with no pretraining of the network (experiments/README.md,
"ELECTRA from count vectors", "What led here"): fine-tuned on the validation split at N = 1,000.

    python -m experiments.pilot.counts_only.counts_only WORK_DIR [EMBEDDING_LR_MULTIPLIER] [SEEDS]

WORK_DIR is a `transfer.py` work dir (its data/ holds the training TFRecords and vocab). The encoder
is a copy of experiments/checkpoints/pt_electra_1e14 whose word table is replaced by the count
vectors (`count_vectors.ppmi_svd_table`, 128-d, window 5; rows of words the data lacks kept); the
fine-tunings re-initialise all 4 layers (`reinit_top_layers: 4`), so only the position and type
tables and the embedding LayerNorm are ELECTRA's. Hparams: the bias-corrected lr 1e-3 without
layer-wise decay, the embedding layer's rate times EMBEDDING_LR_MULTIPLIER (1 or 0: frozen).
Prints one line per seed.
"""

import os
import shutil
import sys
import time

import numpy as np

from electra_tf import data_layout, vocab
from electra_tf.pretraining_data.count_vectors import ppmi_svd_table
from experiments import transfer
from experiments.finetune_results import correct_per_seed, dev_labels
from experiments.transfer_data import epochs_for, task_rows, write_sst_task

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def counts_encoder(work_dir: str) -> str:
    from safetensors.numpy import load_file, save_file

    out = os.path.join(work_dir, "counts_only_encoder")
    if os.path.isdir(out):
        return out
    vocab_file = data_layout.vocab_file(os.path.join(work_dir, "data"))
    voc = vocab.load_vocab(vocab_file)
    # the pilot also left [UNK] out of the counts (the trainer counts it)
    special = vocab.special_token_ids(voc, vocab_file, tuple(vocab.SPECIAL_TOKENS)).values()
    files = data_layout.tfrecord_glob(os.path.join(work_dir, "data", "tfrecords_train"))
    table, seen = ppmi_svd_table(files, 64, len(voc), 128, 5, special, 0.02, log=print)
    shutil.copytree(os.path.join(REPO, "experiments", "checkpoints", "pt_electra_1e14"), out)
    weights = load_file(os.path.join(out, "model.safetensors"))
    old = weights["embeddings.word_embeddings.weight"]
    weights["embeddings.word_embeddings.weight"] = np.where(seen[:, None], table, old).astype(
        old.dtype
    )
    save_file(weights, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    return out


def main(work_dir: str, multiplier: float, seeds) -> None:
    import keras

    from electra_tf.finetune.config import FinetuningConfig
    from electra_tf.finetune.runner import run_finetuning

    encoder = counts_encoder(work_dir)
    movie = os.path.join(REPO, "data", "movie_sentiment")
    for seed in seeds:
        ddir = os.path.join(work_dir, "counts_only", f"n1000_s{seed}")
        write_sst_task(ddir, movie, "validation", "1000", seed, 1000)
        h = {**transfer.FINETUNE_BASE, "learning_rate": 1e-3, "layerwise_lr_decay": 1.0,
             "adam_bias_correction": True, "seed": seed, "reinit_top_layers": 4,
             "embedding_lr_multiplier": multiplier,
             "num_train_epochs": epochs_for("1000", len(task_rows(movie, 1000)[1]), 10),
             "init_checkpoint": encoder, "vocab_file": data_layout.vocab_file(os.path.join(work_dir, "data"))}  # fmt: skip
        config = FinetuningConfig.from_flat(f"ft_elr{multiplier:g}", ddir, h, explicit=())
        keras.backend.clear_session()
        start = time.time()
        run_finetuning(config)
        correct = correct_per_seed(config.results_dir, dev_labels(ddir), 1)[0]
        accuracy = 100 * sum(int(c) for c in correct) / len(correct)
        print(f"counts only, embedding_lr_multiplier {multiplier:g}, seed {seed}: "
              f"{accuracy:.2f} ({time.time() - start:.0f} s)", flush=True)  # fmt: skip


if __name__ == "__main__":
    argv = sys.argv[1:]
    if not argv:
        raise SystemExit(__doc__)
    mult = float(argv[1]) if len(argv) > 1 else 1.0
    seeds = [int(s) for s in argv[2].split(",")] if len(argv) > 2 else [0, 1, 2]
    main(argv[0], mult, seeds)
