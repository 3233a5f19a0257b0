"""The no-flag demo of `run_pretraining.py`: the small-budget recipe of the in-domain experiment
(`data/demo/pretrain_small_budget.json`: its model, length, batch and learning rate), cut to a few
CPU minutes (its schedule scaled to DEMO_STEPS), on TFRecords built once from the bundled
Wikipedia text with the vocab learned from that text (nothing fetched)."""

import os

from electra_tf import data_layout, pretraining_data
from electra_tf.demo import DEMO_FILES, REPO
from electra_tf.io_utils import copy_file_atomically, read_json
from electra_tf.recipes import schedule_for_steps

RECIPE = os.path.join(DEMO_FILES, "pretrain_small_budget.json")
# the vocab learned from the bundled Wikipedia text, not the recipe's in-domain one
# (experiments/prepare_corpus.py's corpus)
DEMO_VOCAB = os.path.join(REPO, "data", "vocab", "wiki_30k_uncased.txt")
DEMO_STEPS = 600
DEMO_OVERRIDES = dict(
    save_checkpoints_steps=DEMO_STEPS,
    keep_checkpoint_max=1,
    num_eval_steps=20,
    log_every_steps=50,
    do_eval=True,
)


def demo_hparams(recipe: dict) -> dict:
    """The recipe with the demo's overrides; `vocab_file` is the data dir's copy of its vocab."""
    kept = {k: v for k, v in recipe.items() if k != "vocab_file"}
    return {**kept, **schedule_for_steps(recipe, DEMO_STEPS), **DEMO_OVERRIDES}


def hparams(overrides: dict) -> dict:
    """The demo's hparams: the recipe's with the demo's overrides, then `--hparams`."""
    return {**demo_hparams(read_json(RECIPE)), **overrides}


def prepare_data(data_dir: str, max_seq_length: int) -> None:
    """Copies the demo's vocab and builds TFRecords from the bundled corpora, once."""
    os.makedirs(data_dir, exist_ok=True)
    vocab = data_layout.vocab_file(data_dir)
    if not os.path.exists(vocab):
        copy_file_atomically(DEMO_VOCAB, vocab)  # a crash mid-copy leaves no partial vocab
    out = data_layout.tfrecord_dir(data_dir)
    if not os.path.exists(os.path.join(out, data_layout.DATASET_INFO_FILE)):
        print(f"demo: building TFRecords from the bundled Wikipedia text into {out}", flush=True)
        pretraining_data.build_dataset(
            os.path.join(REPO, "data", "corpus"),
            vocab,
            out,
            max_seq_length=max_seq_length,
            num_processes=2,
            num_out_files=4,
            overwrite=True,
        )
