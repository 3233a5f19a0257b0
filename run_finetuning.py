"""Fine-tunes a pretrained ELECTRA discriminator on GLUE, tagging (and QA) tasks.

    python run_finetuning.py --data_dir DATA_DIR --model_name MODEL_NAME \\
        --hparams '{"task_names": ["mnli"], "model_size": "base"}'

Reads the pretrained checkpoint and its config.json from DATA_DIR/models/MODEL_NAME/ (or the
`init_checkpoint` hparam), the task data from DATA_DIR/finetuning_data/TASK/, and writes
DATA_DIR/models/MODEL_NAME/results/TASK.json (each trial's metrics and their median) and
TASK_SPLIT_predictions.tsv. `--hparams` is a JSON object or a JSON file; the keys (the
original's), their types and defaults are in electra_tf/finetune/config.py. `model_size` defaults
to the pretraining run's (its config.json).

With the default flags it runs the demo: fine-tunes the demo's pretrained model on the bundled
movie-sentiment data (SST-2 layout; copied to runs/demo/finetuning_data/sst/ if absent) with the
recipe experiments/recipes/finetune_movie_demo.json (one seeded trial; `--hparams` overrides), then the
same from random weights (`random_init`), and prints both.
"""

import os
import shutil

from absl import app, flags

from electra_tf import data_layout
from electra_tf.errors import UserError, run_main
from electra_tf.hparams import parse_hparams
from electra_tf.io_utils import read_json

REPO = os.path.dirname(os.path.abspath(__file__))
DEMO_DATA_DIR = "runs/demo"
DEMO_MODEL_NAME = "electra_small_demo"
# The demo is the movie-sentiment recipe with fewer trials, run twice: from the demo's pretrained
# discriminator and from random weights (the floor that pretraining has to beat).
RECIPE = os.path.join(REPO, "experiments", "recipes", "finetune_movie_demo.json")
DEMO_OVERRIDES = dict(seed=0, num_trials=1)
BUNDLED_SST = os.path.join(REPO, "data", "movie_sentiment")


def demo_hparams() -> dict:
    return {**read_json(RECIPE), **DEMO_OVERRIDES}


FLAGS = flags.FLAGS
flags.DEFINE_string("data_dir", DEMO_DATA_DIR, "Where the data, models and results live.")
flags.DEFINE_string("model_name", DEMO_MODEL_NAME, "The pretrained model (DATA_DIR/models/NAME).")
flags.DEFINE_string("hparams", "{}", "A JSON object, or a JSON file, of fine-tuning hparams.")


def prepare_demo_data(data_dir: str, task_names) -> None:
    """For the demo data dir only: copies the bundled movie-sentiment data in as the sst task."""
    target = data_layout.finetuning_data_dir(data_dir, "sst")
    if (
        os.path.normpath(data_dir) != os.path.normpath(DEMO_DATA_DIR)
        or "sst" not in task_names
        or os.path.exists(target)
    ):
        return
    os.makedirs(target)
    for split in ("train", "dev"):
        shutil.copyfile(
            os.path.join(BUNDLED_SST, f"{split}.tsv"), os.path.join(target, f"{split}.tsv")
        )
    print(f"demo: copied {BUNDLED_SST} to {target}", flush=True)


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
    demo = FLAGS.data_dir == DEMO_DATA_DIR and FLAGS.model_name == DEMO_MODEL_NAME
    if demo:
        hparams = {**demo_hparams(), **hparams}
    hparams = with_pretrained_size(FLAGS.data_dir, FLAGS.model_name, hparams)
    config = FinetuningConfig(FLAGS.model_name, FLAGS.data_dir, **hparams)
    prepare_demo_data(FLAGS.data_dir, config.task_names)
    if not os.path.isdir(FLAGS.data_dir):
        raise UserError(f"--data_dir {FLAGS.data_dir}: no such directory")
    results = run_finetuning(config)
    if not (demo and not config.random_init):
        report(results)
        return
    print("demo: the same fine-tuning from random weights (random_init), the floor", flush=True)
    floor = run_finetuning(
        FinetuningConfig(FLAGS.model_name, FLAGS.data_dir, **{**hparams, "random_init": True})
    )
    report(results, "pretrained: ")
    report(floor, "random_init: ")


if __name__ == "__main__":
    app.run(lambda argv: run_main(main))
