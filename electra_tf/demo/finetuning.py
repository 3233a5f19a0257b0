"""The no-flag demo of `run_finetuning.py`: it replays the in-domain transfer experiment's runs of
seed 0 at 300 labels: the kept 1e14 ELECTRA encoder pretrained from count vectors
(`data/demo/electra_1e14`) with `data/demo/finetune_movie.json`, the same shape from random weights
with `finetune_movie_random_init.json`, and the demo's own pretrained model (run_pretraining.py's
600 steps) with `finetune_movie.json`, each one seeded trial on the same 300 sentences, scored on
the 1,250 dev sentences; then it prints the experiment's declared test there (10 seeds): one seed
is an example, not the evidence. The experiment's records it reads: `data/demo/experiment.json`.
"""

import os
from typing import Optional

from electra_tf import data_layout
from electra_tf.demo import DEMO_FILES, REPO, movie_task
from electra_tf.finetune.config import FinetuningConfig
from electra_tf.finetune.pretrained import with_pretrained_size
from electra_tf.finetune.runner import run_finetuning
from electra_tf.io_utils import read_json

DEMO_LABELS = "300"
DEMO_SEED = 0
KEPT_ENCODER = os.path.join(DEMO_FILES, "electra_1e14")  # the experiment's pt_electra_1e14
RECIPES = {
    "pretrained": os.path.join(DEMO_FILES, "finetune_movie.json"),
    "random_init": os.path.join(DEMO_FILES, "finetune_movie_random_init.json"),
}
EXPERIMENT = os.path.join(DEMO_FILES, "experiment.json")
KEPT_MODEL_NAME = "movie_electra_1e14"
BUNDLED_SST = os.path.join(REPO, "data", "movie_sentiment")
PATH_KEYS = ("init_checkpoint", "vocab_file")  # the machine's paths: records keep none


def demo_runs(overrides: dict, data_dir: str, model_name: str) -> list:
    """[(what, model_name, hparams)] of the demo's fine-tunings, in the order they run: the
    experiment's hparams for seed DEMO_SEED at DEMO_LABELS labels (the recipe's epochs scaled to
    the same number of updates), then `--hparams` (`overrides`)."""
    pool_size = len(movie_task.task_rows(BUNDLED_SST)[1])

    def recipe(arm: str, **paths) -> dict:
        h = {**read_json(RECIPES[arm]), "num_trials": 1, "seed": DEMO_SEED}
        h["num_train_epochs"] = movie_task.epochs_for(DEMO_LABELS, pool_size, h["num_train_epochs"])
        return {**h, **paths, **overrides}

    kept = dict(init_checkpoint=KEPT_ENCODER, vocab_file=data_layout.vocab_file(KEPT_ENCODER))
    return [
        (f"ELECTRA from count vectors, 1e14 FLOPs ({os.path.relpath(KEPT_ENCODER, REPO)})",
         KEPT_MODEL_NAME,
         recipe("pretrained", **kept)),
        ("random_init (the same shape and vocab)", KEPT_MODEL_NAME, recipe("random_init", **kept)),
        ("this demo's pretraining (600 steps, Wikipedia only)", model_name,
         with_pretrained_size(data_dir, model_name, recipe("pretrained"))),
    ]  # fmt: skip


def kept_accuracy(config, hparams: dict) -> Optional[float]:
    """The experiment's kept accuracy for the run the demo replays: None for the demo's own
    model (the experiment never fine-tuned it), or when the record's hparams are not the run's
    (`--hparams` changed them; the experiment's log interval aside)."""
    if config.model_name != KEPT_MODEL_NAME:
        return None
    arm = "random_init" if config.random_init else "electra"
    record = read_json(EXPERIMENT)["kept_runs"].get(arm)
    if record is None:
        return None
    ran = {"random_init": False, **{k: v for k, v in hparams.items() if k not in PATH_KEYS}}
    kept = {k: v for k, v in record["hparams"].items() if k != "log_every_steps"}
    return record["accuracy"] if ran == kept else None


def run(overrides: dict, data_dir: str, model_name: str) -> None:
    """Runs the demo in DATA_DIR (its sst task: the 300 sentences) next to MODEL_NAME."""
    task = movie_task.write_sst_task(data_dir, BUNDLED_SST, "dev", DEMO_LABELS, DEMO_SEED)
    print(f"demo: {DEMO_LABELS} labelled movie sentences (seed {DEMO_SEED}'s subset, as "
          f"experiments/transfer.py draws it) in {task}; scored on the dev sentences", flush=True)  # fmt: skip
    runs = demo_runs(overrides, data_dir, model_name)
    if not os.path.isdir(data_layout.model_dir(data_dir, model_name)):
        print(f"demo: no {data_layout.model_dir(data_dir, model_name)} (python "
              "run_pretraining.py makes it): fine-tuning the kept encoder and random_init only",
              flush=True)  # fmt: skip
        runs = [r for r in runs if r[1] != model_name]
    scores = []
    for what, name, hparams in runs:
        print(f"demo: fine-tuning {what}", flush=True)
        config = FinetuningConfig.from_flat(name, data_dir, hparams, explicit=overrides)
        results = run_finetuning(config)
        accuracy = results["sst"]["median"]["dev"]["accuracy"]
        scores.append((what, accuracy, kept_accuracy(config, hparams)))
    for what, accuracy, kept in scores:
        replay = "" if kept is None else f" (the experiment's kept run: {kept:.2f})"
        print(f"demo: sst dev accuracy {accuracy:.2f}: {what}{replay}", flush=True)
    majority = results["sst"].get("majority_class", {}).get("dev")
    if majority:
        print(f"demo: always answering {majority['label']} would score {majority['accuracy']:.2f}",
              flush=True)  # fmt: skip
    print(experiment_line(), flush=True)


def experiment_line() -> str:
    """The experiment's result at DEMO_LABELS: the kept encoder's declared test (10 seeds)."""
    test = read_json(EXPERIMENT)["declared_test"]
    lo, hi = test["ci95"]
    return (f"demo: the experiment at N = {test['labels']}, {test['what']}: ELECTRA - random_init "
            f"{test['mean_diff']:+.2f} points [95% interval {lo:+.2f}, {hi:+.2f}] "
            f"({test['source']})")  # fmt: skip
