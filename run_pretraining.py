"""Pretrains ELECTRA (or a BERT-style masked LM) on TFRecords made by build_pretraining_dataset.py.

    python run_pretraining.py --data_dir=DATA_DIR --model_name=NAME [--hparams='{...}' | FILE.json]

reads DATA_DIR/pretrain_tfrecords/ and DATA_DIR/vocab.txt, writes DATA_DIR/models/NAME/ and resumes
from its latest checkpoint when re-run. With no flags it runs the demo: it builds TFRecords from the
bundled Wikipedia sample (once) and pretrains a small ELECTRA for a few minutes on a CPU.
"""

import os
import shutil

from absl import app, flags

from electra_tf.errors import UserError, run_main
from electra_tf.hparams import parse_hparams
from electra_tf.pretraining_config import PretrainingConfig

REPO = os.path.dirname(os.path.abspath(__file__))
DEMO_DATA_DIR = os.path.join("runs", "demo")
DEMO_MODEL_NAME = "electra_small_demo"
# A tiny ELECTRA (hidden 64, 2 layers, generator 1/4 width) that runs in a few CPU minutes.
DEMO_HPARAMS = dict(
    model_size="small",
    model_hparam_overrides=dict(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=1, intermediate_size=256
    ),
    embedding_size=64,
    train_batch_size=32,
    eval_batch_size=32,
    max_seq_length=128,
    num_train_steps=100,
    num_warmup_steps=10,
    learning_rate=5e-4,
    save_checkpoints_steps=100,
    num_eval_steps=10,
    log_every_steps=20,
    do_eval=True,
)

flags.DEFINE_string("data_dir", None, "Holds pretrain_tfrecords/, vocab.txt and models/.")
flags.DEFINE_string("model_name", None, "The run's name: checkpoints go to DATA_DIR/models/NAME.")
flags.DEFINE_string("hparams", None, "A JSON object string, or a path to a JSON file.")
flags.DEFINE_bool("describe", False, "Print the resolved hparams and parameter counts; exit.")
FLAGS = flags.FLAGS


def prepare_demo_data(data_dir: str) -> None:
    """Copies the bundled vocab and builds TFRecords from the bundled corpus, once."""
    from electra_tf import pretraining_data

    os.makedirs(data_dir, exist_ok=True)
    vocab = os.path.join(data_dir, "vocab.txt")
    if not os.path.exists(vocab):
        shutil.copyfile(os.path.join(REPO, "data", "vocab", "vocab.txt"), vocab)
    out = os.path.join(data_dir, "pretrain_tfrecords")
    if not os.path.exists(os.path.join(out, "dataset_info.json")):
        print(f"demo: building TFRecords from the bundled Wikipedia sample into {out}", flush=True)
        pretraining_data.build_dataset(
            os.path.join(REPO, "data", "corpus"),
            vocab,
            out,
            max_seq_length=DEMO_HPARAMS["max_seq_length"],
            num_processes=2,
            num_out_files=4,
            overwrite=True,
        )


def main() -> None:
    hparams = parse_hparams(FLAGS.hparams)
    demo = FLAGS.data_dir is None
    if demo:
        hparams = {**DEMO_HPARAMS, **hparams}
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
        prepare_demo_data(data_dir)
    trainer = train.Trainer(config)
    if config.run.do_train:
        trainer.train()
    model_dir = config.paths.model_dir
    if config.run.do_eval:
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
