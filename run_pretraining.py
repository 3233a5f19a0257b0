"""Pretrains ELECTRA (or a BERT-style masked LM) on TFRecords made by build_pretraining_dataset.py.

    python run_pretraining.py --data_dir=DATA_DIR --model_name=NAME [--hparams='{...}' | FILE.json]

reads DATA_DIR/pretrain_tfrecords/ and DATA_DIR/vocab.txt, writes DATA_DIR/models/NAME/ and resumes
from its latest checkpoint when re-run. With no flags it runs the demo: it builds TFRecords from the
bundled Wikipedia text (once) with the vocab learned from it and pretrains the small-budget recipe's ELECTRA
(experiments/recipes/pretrain_small_budget.json) for a few minutes on a CPU.
"""

import os

from absl import app, flags

from electra_tf import data_layout
from electra_tf.errors import UserError, run_main
from electra_tf.hparams import parse_hparams
from electra_tf.io_utils import copy_file_atomically, read_json
from electra_tf.pretraining_config import PretrainingConfig
from electra_tf.recipes import schedule_for_steps

REPO = os.path.dirname(os.path.abspath(__file__))
DEMO_DATA_DIR = os.path.join("runs", "demo")
DEMO_MODEL_NAME = "electra_small_demo"
# The demo is the small-budget recipe (its model, vocab, length, batch and learning rate), cut to a
# few CPU minutes: the recipe's schedule scaled to DEMO_STEPS.
RECIPE = os.path.join(REPO, "experiments", "recipes", "pretrain_small_budget.json")
# The demo pretrains on the bundled Wikipedia text alone (nothing fetched), so it uses the vocab
# learned from that text, not the recipe's in-domain one (experiments/prepare_corpus.py's corpus)
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


flags.DEFINE_string("data_dir", None, "Holds pretrain_tfrecords/, vocab.txt and models/.")
flags.DEFINE_string("model_name", None, "The run's name: checkpoints go to DATA_DIR/models/NAME.")
flags.DEFINE_string("hparams", None, "A JSON object string, or a path to a JSON file.")
flags.DEFINE_bool("describe", False, "Print the resolved hparams and parameter counts; exit.")
FLAGS = flags.FLAGS


def prepare_demo_data(data_dir: str, recipe_vocab: str, max_seq_length: int) -> None:
    """Copies the demo's vocab and builds TFRecords from the bundled corpora, once."""
    from electra_tf import pretraining_data

    os.makedirs(data_dir, exist_ok=True)
    vocab = data_layout.vocab_file(data_dir)
    if not os.path.exists(vocab):
        copy_file_atomically(recipe_vocab, vocab)  # a crash mid-copy leaves no partial vocab
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


def main() -> None:
    hparams = parse_hparams(FLAGS.hparams)
    demo = FLAGS.data_dir is None
    recipe = read_json(RECIPE) if demo else None
    if demo:
        hparams = {**demo_hparams(recipe), **hparams}
    data_dir = FLAGS.data_dir or DEMO_DATA_DIR
    model_name = FLAGS.model_name or (DEMO_MODEL_NAME if demo else None)
    if model_name is None:
        raise UserError("--model_name is required with --data_dir")
    config = PretrainingConfig.from_flat(model_name, data_dir, hparams)

    from electra_tf import train

    if FLAGS.describe:
        print(train.describe_json(config))
        return
    if demo:
        prepare_demo_data(data_dir, DEMO_VOCAB, config.model.max_seq_length)
    trainer = train.Trainer(config)
    if config.general.do_train:
        trainer.train()
    model_dir = config.paths.model_dir
    if config.general.do_eval:
        metrics = trainer.evaluate()
        print("eval results:")
        for k in sorted(metrics):
            print(f"  {k} = {metrics[k]}")
        print(f"checkpoints and config.json: {model_dir}")
        print(f"metrics: {trainer.run.eval_results_path}")
    else:
        print(f"checkpoints and config.json: {model_dir}")


if __name__ == "__main__":
    app.run(lambda argv: run_main(main))
