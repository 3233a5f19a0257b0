"""The no-flag demo of `run_finetuning.py`: it replays the in-domain transfer experiment's runs of
seed 0 at 300 labels (`transfer.py`): the kept 1e14 ELECTRA encoder pretrained from count vectors
(`results/ppmi_init/`) with `recipes/finetune_movie.json`, the same shape from random weights with
`recipes/finetune_movie_random_init.json`, and the demo's own pretrained model (run_pretraining.py's
600 steps) with `finetune_movie.json`, each one seeded trial on the same 300 sentences, scored on
the 1,250 dev sentences; then it prints the experiment's paired results there (the declared test
of that encoder on 10 seeds, then the three tests of the earlier encoder, whose word table started
at random): one seed is an example, not the evidence.

No absl flags here (the script owns them), so that tests can import it.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import transfer_data  # noqa: E402
import transfer_store  # noqa: E402

from electra_tf import data_layout  # noqa: E402
from electra_tf.io_utils import read_json  # noqa: E402

# The demo replays the transfer experiment's runs of seed 0 at 300 labels (the default seed), and
# prints the experiment's paired results there: one seed is an example, not the evidence.
DEMO_LABELS = "300"
DEMO_SEED = 0
KEPT_RUN = "pt_electra_1e14"  # the experiment's pretraining run whose encoder the demo loads
RESULTS = os.path.join(HERE, "results")
KEPT_ENCODER = os.path.join(RESULTS, "ppmi_init", "checkpoints", KEPT_RUN)
RECIPES = {
    "pretrained": os.path.join(HERE, "recipes", "finetune_movie.json"),
    "random_init": os.path.join(HERE, "recipes", "finetune_movie_random_init.json"),
}
KEPT_MODEL_NAME = "movie_electra_1e14"
BUNDLED_SST = os.path.join(REPO, "data", "movie_sentiment")
# (summary, which runs): the kept encoder's declared test first, then the earlier encoder's
SUMMARIES = (
    (os.path.join(RESULTS, "ppmi_init", "transfer_summary.json"),
     "ELECTRA from count vectors, its declared test, seeds 25-34"),
    (os.path.join(RESULTS, "transfer_summary.json"), "the earlier ELECTRA, seeds 0-4"),
    (os.path.join(RESULTS, "confirmation", "transfer_summary.json"),
     "the earlier ELECTRA, its confirmation, seeds 5-14"),
    (os.path.join(RESULTS, "bias_correction", "transfer_summary.json"),
     "the earlier ELECTRA, bias-corrected fine-tuning, seeds 15-24"),
)  # fmt: skip
RUNS = os.path.join(RESULTS, "ppmi_init", "transfer_runs")
PATH_KEYS = ("init_checkpoint", "vocab_file")  # the machine's paths: records keep none


def demo_runs(overrides: dict, data_dir: str, model_name: str) -> list:
    """[(what, model_name, hparams)] of the demo's fine-tunings, in the order they run: the
    experiment's hparams for seed DEMO_SEED at DEMO_LABELS labels (the recipe's epochs scaled to
    the same number of updates), then `--hparams` (`overrides`)."""
    from electra_tf.finetune.pretrained import with_pretrained_size

    pool_size = len(transfer_data.task_rows(BUNDLED_SST)[1])

    def recipe(arm: str, **paths) -> dict:
        h = {**read_json(RECIPES[arm]), "num_trials": 1, "seed": DEMO_SEED}
        h["num_train_epochs"] = transfer_data.epochs_for(
            DEMO_LABELS, pool_size, h["num_train_epochs"]
        )
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


def kept_accuracy(config, hparams: dict) -> "float | None":
    """The experiment's kept accuracy for the run the demo replays: None for the demo's own
    model (the experiment never fine-tuned it), or when the record's hparams are not the run's
    (`--hparams` changed them; the experiment's log interval aside)."""
    if config.model_name != KEPT_MODEL_NAME:
        return None
    arm = "random_init" if config.random_init else "electra"
    grid = {"learning_rate": config.learning_rate, "layerwise_lr_decay": config.layerwise_lr_decay,
            "adam_bias_correction": config.adam_bias_correction,
            "embedding_lr_multiplier": config.embedding_lr_multiplier}  # fmt: skip
    key = transfer_data.run_key("dev", DEMO_LABELS, DEMO_SEED, arm, KEPT_RUN, grid)
    path = transfer_store.record_path(RUNS, key)
    if not os.path.exists(path):
        return None
    record = read_json(path)
    ran = {"random_init": False, **{k: v for k, v in hparams.items() if k not in PATH_KEYS}}
    kept = {k: v for k, v in record["hparams"].items() if k != "log_every_steps"}
    return record["accuracy"] if ran == kept else None


def run(overrides: dict, data_dir: str, model_name: str) -> None:
    """Runs the demo in DATA_DIR (its sst task: the 300 sentences) next to MODEL_NAME."""
    from electra_tf.finetune.config import FinetuningConfig
    from electra_tf.finetune.runner import run_finetuning

    task = transfer_data.write_sst_task(data_dir, BUNDLED_SST, "dev", DEMO_LABELS, DEMO_SEED)
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
    for line in experiment_lines():
        print(line, flush=True)


def experiment_lines() -> list:
    """The experiment's paired results at DEMO_LABELS (SUMMARIES, in that order)."""
    lines = []
    for summary, which in SUMMARIES:
        paired = read_json(summary)["paired"]["electra_vs_random_init"].get(DEMO_LABELS)
        if paired:
            lo, hi = paired["ci95"]
            lines.append(f"demo: the experiment at N = {DEMO_LABELS}, {which}: ELECTRA - random_init "
                         f"{paired['mean_diff']:+.2f} points [95% interval {lo:+.2f}, {hi:+.2f}] "
                         f"({os.path.relpath(summary, REPO)})")  # fmt: skip
    return lines
