"""Fine-tunes a pretrained ELECTRA discriminator on GLUE, tagging (and QA) tasks.

    python run_finetuning.py --data_dir DATA_DIR --model_name MODEL_NAME \\
        --hparams '{"task_names": ["mnli"], "model_size": "base"}'

Reads the pretrained checkpoint and its config.json from DATA_DIR/models/MODEL_NAME/ (or the
`init_checkpoint` hparam), the task data from DATA_DIR/finetuning_data/TASK/, and writes
DATA_DIR/models/MODEL_NAME/results/TASK.json (each trial's metrics and their median) and
TASK_SPLIT_predictions.tsv. `--hparams` is a JSON object or a JSON file; the keys (the
original's), their types and defaults are in electra_tf/finetune/config.py. `model_size` defaults
to the pretraining run's (its config.json).

With the default flags it runs the demo: 300 labelled movie sentences (seed 0's subset, drawn as
experiments/transfer.py draws it, written to runs/demo/finetuning_data/sst/), scored on the 1,250
dev sentences, one seeded trial per encoder: the in-domain transfer experiment's kept ELECTRA
encoder (experiments/checkpoints/pt_electra_1e14, 1e14 FLOPs of its recipe) with
experiments/recipes/finetune_movie.json, the same shape from random weights (`random_init`) with
finetune_movie_random_init.json, and the demo's own pretrained model (run_pretraining.py's
600 steps) with finetune_movie.json; `--hparams` overrides all three. This replays the
experiment's seed-0 runs at N = 300, so it prints their kept accuracies beside its own, then the
experiment's paired results at N = 300 (its first 5 seeds, and its confirmation on 10 more).
"""

import os
import sys

from absl import app, flags

from electra_tf import data_layout
from electra_tf.errors import UserError, run_main
from electra_tf.hparams import parse_hparams
from electra_tf.io_utils import read_json

REPO = os.path.dirname(os.path.abspath(__file__))
DEMO_DATA_DIR = "runs/demo"
DEMO_MODEL_NAME = "electra_small_demo"
EXPERIMENTS = os.path.join(REPO, "experiments")
# The demo replays the transfer experiment's runs of seed 0 at 300 labels (the default seed), and
# prints the experiment's paired results there: one seed is an example, not the evidence.
DEMO_LABELS = "300"
DEMO_SEED = 0
KEPT_ENCODER = os.path.join(EXPERIMENTS, "checkpoints", "pt_electra_1e14")
RECIPES = {
    "pretrained": os.path.join(EXPERIMENTS, "recipes", "finetune_movie.json"),
    "random_init": os.path.join(EXPERIMENTS, "recipes", "finetune_movie_random_init.json"),
}
KEPT_MODEL_NAME = "movie_electra_1e14"
BUNDLED_SST = os.path.join(REPO, "data", "movie_sentiment")
SUMMARY = os.path.join(EXPERIMENTS, "results", "transfer_summary.json")
CONFIRMATION = os.path.join(EXPERIMENTS, "results", "confirmation", "transfer_summary.json")
RUNS = os.path.join(EXPERIMENTS, "results", "transfer_runs")


def _experiments():
    """experiments/transfer_data.py: the experiment's label subsets, shared with transfer.py."""
    if EXPERIMENTS not in sys.path:
        sys.path.insert(0, EXPERIMENTS)
    import transfer_data

    return transfer_data


def demo_runs(overrides: dict) -> list:
    """[(what, model_name, hparams)] of the demo's fine-tunings, in the order they run: the
    experiment's hparams for seed DEMO_SEED at DEMO_LABELS labels (the recipe's epochs scaled to
    the same number of updates), then `--hparams`."""
    td = _experiments()
    pool_size = len(td.task_rows(BUNDLED_SST)[1])

    def recipe(arm: str, **paths) -> dict:
        h = {**read_json(RECIPES[arm]), "num_trials": 1, "seed": DEMO_SEED}
        h["num_train_epochs"] = td.epochs_for(DEMO_LABELS, pool_size, h["num_train_epochs"])
        return {**h, **paths, **overrides}

    kept = dict(init_checkpoint=KEPT_ENCODER, vocab_file=data_layout.vocab_file(KEPT_ENCODER))
    return [
        ("ELECTRA, 1e14 FLOPs (experiments/checkpoints/pt_electra_1e14)", KEPT_MODEL_NAME,
         recipe("pretrained", **kept)),
        ("random_init (the same shape and vocab)", KEPT_MODEL_NAME, recipe("random_init", **kept)),
        ("this demo's pretraining (600 steps, Wikipedia only)", DEMO_MODEL_NAME,
         with_demo_size(recipe("pretrained"))),
    ]  # fmt: skip


def with_demo_size(hparams: dict) -> dict:
    from electra_tf.finetune.pretrained import with_pretrained_size

    return with_pretrained_size(DEMO_DATA_DIR, DEMO_MODEL_NAME, hparams)


def kept_accuracy(config) -> "float | None":
    """The experiment's kept accuracy for the run the demo replays (None: no such record, or the
    demo's own model, which the experiment never fine-tuned)."""
    arm = "random_init" if config.random_init else "electra"
    if config.model_name != KEPT_MODEL_NAME:
        return None
    source = "" if config.random_init else "pt_electra_1e14__"
    grid = f"layerwise_lr_decay{config.layerwise_lr_decay:g}_learning_rate{config.learning_rate:g}"
    path = os.path.join(RUNS, f"dev__n{DEMO_LABELS}_s{DEMO_SEED}__{arm}__{source}{grid}.json")
    return read_json(path)["accuracy"] if os.path.exists(path) else None


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


def run_demo(overrides: dict) -> None:
    from electra_tf.finetune.config import FinetuningConfig
    from electra_tf.finetune.runner import run_finetuning

    task = _experiments().write_sst_task(DEMO_DATA_DIR, BUNDLED_SST, "dev", DEMO_LABELS, DEMO_SEED)
    print(f"demo: {DEMO_LABELS} labelled movie sentences (seed {DEMO_SEED}'s subset, as "
          f"experiments/transfer.py draws it) in {task}; scored on the dev sentences", flush=True)  # fmt: skip
    runs = demo_runs(overrides)
    if not os.path.isdir(data_layout.model_dir(DEMO_DATA_DIR, DEMO_MODEL_NAME)):
        print(f"demo: no {data_layout.model_dir(DEMO_DATA_DIR, DEMO_MODEL_NAME)} (python "
              "run_pretraining.py makes it): fine-tuning the kept encoder and random_init only",
              flush=True)  # fmt: skip
        runs = [r for r in runs if r[1] != DEMO_MODEL_NAME]
    scores = []
    for what, name, hparams in runs:
        print(f"demo: fine-tuning {what}", flush=True)
        config = FinetuningConfig.from_hparams(name, DEMO_DATA_DIR, hparams, explicit=overrides)
        results = run_finetuning(config)
        scores.append((what, results["sst"]["median"]["dev"]["accuracy"], kept_accuracy(config)))
    for what, accuracy, kept in scores:
        replay = "" if kept is None else f" (the experiment's kept run: {kept:.2f})"
        print(f"demo: sst dev accuracy {accuracy:.2f}: {what}{replay}", flush=True)
    majority = results["sst"].get("majority_class", {}).get("dev")
    if majority:
        print(f"demo: always answering {majority['label']} would score {majority['accuracy']:.2f}",
              flush=True)  # fmt: skip
    for line in experiment_lines():
        print(line, flush=True)


def experiment_lines() -> list:
    """The experiment's paired results at DEMO_LABELS: its first 5 seeds, its confirmation."""
    lines = []
    for summary, which in ((SUMMARY, "seeds 0-4"), (CONFIRMATION, "its confirmation, seeds 5-14")):
        paired = read_json(summary)["paired"]["electra_vs_random_init"].get(DEMO_LABELS)
        if paired:
            lo, hi = paired["ci95"]
            lines.append(f"demo: the experiment at N = {DEMO_LABELS}, {which}: ELECTRA - random_init "
                         f"{paired['mean_diff']:+.2f} points [95% interval {lo:+.2f}, {hi:+.2f}] "
                         f"({os.path.relpath(summary, REPO)})")  # fmt: skip
    return lines


def main() -> None:
    from electra_tf.finetune.config import FinetuningConfig
    from electra_tf.finetune.pretrained import with_pretrained_size
    from electra_tf.finetune.runner import run_finetuning

    hparams = parse_hparams(FLAGS.hparams)
    if FLAGS.data_dir == DEMO_DATA_DIR and FLAGS.model_name == DEMO_MODEL_NAME:
        run_demo(hparams)
        return
    hparams = with_pretrained_size(FLAGS.data_dir, FLAGS.model_name, hparams)
    config = FinetuningConfig(FLAGS.model_name, FLAGS.data_dir, **hparams)
    if not os.path.isdir(FLAGS.data_dir):
        raise UserError(f"--data_dir {FLAGS.data_dir}: no such directory")
    report(run_finetuning(config))


if __name__ == "__main__":
    app.run(lambda argv: run_main(main))
