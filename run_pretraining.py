"""Pretrains ELECTRA (or a BERT-style masked LM) on TFRecords made by build_pretraining_dataset.py.

    python run_pretraining.py --data_dir=DATA_DIR --model_name=NAME [--hparams='{...}' | FILE.json]

reads DATA_DIR/pretrain_tfrecords/ and DATA_DIR/vocab.txt, writes DATA_DIR/models/NAME/ and resumes
from its latest checkpoint when re-run. With no flags it runs the demo (`electra_tf.demo`): it builds
TFRecords from the bundled Wikipedia text (once) with the vocab learned from it and pretrains the
small-budget recipe's ELECTRA (data/demo/pretrain_small_budget.json) for a few minutes on a CPU.
"""

from absl import app, flags

from electra_tf.demo import DATA_DIR as DEMO_DATA_DIR
from electra_tf.demo import MODEL_NAME as DEMO_MODEL_NAME
from electra_tf.demo import pretraining as demo_pretraining
from electra_tf.errors import UserError, run_main
from electra_tf.hparams import parse_hparams
from electra_tf.pretraining_config import PretrainingConfig

flags.DEFINE_string("data_dir", None, "Holds pretrain_tfrecords/, vocab.txt and models/.")
flags.DEFINE_string("model_name", None, "The run's name: checkpoints go to DATA_DIR/models/NAME.")
flags.DEFINE_string("hparams", None, "A JSON object string, or a path to a JSON file.")
flags.DEFINE_bool("describe", False, "Print the resolved hparams and parameter counts; exit.")
FLAGS = flags.FLAGS


def main() -> None:
    hparams = parse_hparams(FLAGS.hparams)
    demo = FLAGS.data_dir is None
    if demo:
        hparams = demo_pretraining.hparams(hparams)
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
        demo_pretraining.prepare_data(data_dir, config.model.max_seq_length)
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
