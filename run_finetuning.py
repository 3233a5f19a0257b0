"""Fine-tunes a pretrained ELECTRA discriminator on GLUE, tagging (and QA) tasks.

    python run_finetuning.py --data_dir DATA_DIR --model_name MODEL_NAME \\
        --hparams '{"task_names": ["mnli"], "model_size": "base"}'

Reads the pretrained checkpoint and its config.json from DATA_DIR/models/MODEL_NAME/ (or the
`init_checkpoint` hparam), the task data from DATA_DIR/finetuning_data/TASK/, and writes
DATA_DIR/models/MODEL_NAME/results/TASK.json (each trial's metrics and their median) and
TASK_SPLIT_predictions.tsv. `--hparams` is a JSON object or a JSON file; the keys (the
original's), their types and defaults are in electra_tf/finetune/config.py. `model_size` defaults
to the pretraining run's (its config.json).

With the default flags it runs the demo (`electra_tf.demo.finetuning`): 300 labelled movie
sentences (seed 0's subset, drawn as the in-domain transfer experiment draws it, written to
runs/demo/finetuning_data/sst/), scored on the 1,250 dev sentences, one seeded trial per encoder:
the experiment's kept ELECTRA encoder (data/demo/electra_1e14, 1e14 FLOPs of its recipe, the word
table started from count vectors) with data/demo/finetune_movie.json, the same shape from random
weights (`random_init`) with finetune_movie_random_init.json, and the demo's own pretrained model
(run_pretraining.py's 600 steps) with finetune_movie.json; `--hparams` overrides all three. This
replays the experiment's seed-0 runs at N = 300, so it prints their kept accuracies beside its
own, then the experiment's result at N = 300 (that encoder's declared test on 10 seeds).
"""

import os

from absl import app, flags

from electra_tf.demo import DATA_DIR as DEMO_DATA_DIR
from electra_tf.demo import MODEL_NAME as DEMO_MODEL_NAME
from electra_tf.errors import UserError, run_main
from electra_tf.hparams import parse_hparams

FLAGS = flags.FLAGS
flags.DEFINE_string("data_dir", DEMO_DATA_DIR, "Where the data, models and results live.")
flags.DEFINE_string("model_name", DEMO_MODEL_NAME, "The pretrained model (DATA_DIR/models/NAME).")
flags.DEFINE_string("hparams", "{}", "A JSON object, or a JSON file, of fine-tuning hparams.")


def report(results, label: str = "") -> None:
    for task, r in results.items():
        for split, metrics in r["median"].items():
            shown = ", ".join(f"{k} {v:.2f}" for k, v in metrics.items())
            print(f"{label}{task} {split} (median of {r['num_trials']}): {shown}", flush=True)
            majority = r.get("majority_class", {}).get(split)
            if majority:
                print(
                    f"{label}{task} {split}: always answering {majority['label']} would score "
                    f"accuracy {majority['accuracy']:.2f}",
                    flush=True,
                )


def main() -> None:
    from electra_tf.finetune.config import FinetuningConfig
    from electra_tf.finetune.pretrained import with_pretrained_size
    from electra_tf.finetune.runner import run_finetuning

    hparams = parse_hparams(FLAGS.hparams)
    if FLAGS.data_dir == DEMO_DATA_DIR and FLAGS.model_name == DEMO_MODEL_NAME:
        # the transfer experiment's kept encoder next to random weights and the demo's own
        # model, on 300 of the movie sentences
        from electra_tf.demo import finetuning as demo_finetuning

        demo_finetuning.run(hparams, DEMO_DATA_DIR, DEMO_MODEL_NAME)
        return
    hparams = with_pretrained_size(FLAGS.data_dir, FLAGS.model_name, hparams)
    config = FinetuningConfig(FLAGS.model_name, FLAGS.data_dir, **hparams)
    if not os.path.isdir(FLAGS.data_dir):
        raise UserError(f"--data_dir {FLAGS.data_dir}: no such directory")
    report(run_finetuning(config))


if __name__ == "__main__":
    app.run(lambda argv: run_main(main))
