"""Compute efficiency: ELECTRA against masked-LM pretraining for equal FLOPs (paper Figure 1 /
Table 5), at a scale where pretraining learns.

The paper's central claim: for the same pretraining compute, replaced-token detection gives a
better encoder than BERT's masked LM, and most of the gain comes from learning on every token
(ELECTRA vs "ELECTRA 15%", whose discriminator loss covers the masked 15% only). This script
pretrains the small-budget recipe (`experiments/recipes/pretrain_small_budget.json`) with each
objective for the SAME training FLOPs of real arithmetic (lookups as gathers, backward = 2x
forward: `electra_tf.pretraining_networks.step_flops(...).real`; the paper's convention is
recorded beside it), evaluates the checkpoints at
each budget point on a held-out shard of the pretraining data, fine-tunes each on the movie
sentiment task (`experiments/recipes/finetune_movie_demo.json`, several seeds), fine-tunes a randomly
initialised encoder of the same shape with the same seeds (the no-pretraining baseline), and
writes to `--out_dir`:

  efficiency.json          every run: objective, budget, steps, FLOPs (both conventions), seeds,
                           held-out pretraining metrics, per-seed dev accuracy, per-example
                           correctness, the comparisons
  efficiency_summary.json  {"dev_size", "baseline": {"dev_accuracy_per_seed"},
                           "objectives": {NAME: {"budgets": [{"train_flops",
                           "dev_accuracy_per_seed", "heldout"}]}}} (accuracy in %)
  efficiency.md            the tables and what is significant, in words
  efficiency.png           dev accuracy vs FLOPs (95% intervals, baseline band); held-out metrics

    python -m experiments.efficiency --work_dir=/work/efficiency   # ~3 h on 2 CPU cores
    python -m experiments.efficiency --scale=10 --work_dir=...      # 10x the budget (bigger hardware)

Re-running with the same --work_dir resumes: pretraining continues from its checkpoints and every
finished evaluation and fine-tuning is reused. `--jobs=2` runs the objectives two at a time, each in
its own process (the same runs, in less wall time where one small run leaves cores idle). `--plot_only` rewrites the outputs from
efficiency.json.
"""

import json
import os
import shutil
import tempfile
import time
from typing import Any, Dict, List

from absl import app, flags

from electra_tf import data_layout, objectives
from electra_tf.errors import UserError, run_main
from electra_tf.io_utils import (
    copy_file_atomically,
    read_json,
    write_atomically,
    write_json,
)
from experiments import efficiency_report
from experiments.efficiency_jobs import CHILD_FLAGS, child_command, progress, run_children  # noqa: F401
from experiments.finetune_results import correct_per_seed, dev_labels

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGS = flags.FLAGS
flags.DEFINE_string("work_dir", None, "Data, checkpoints and fine-tuning runs (resumable).")
flags.DEFINE_string("out_dir", os.path.join(REPO, "experiments", "results"), "Outputs.")
flags.DEFINE_string(
    "recipe", os.path.join(REPO, "experiments", "recipes", "pretrain_small_budget.json"),
    "Pretraining hparams (run_pretraining.py --hparams); its num_train_steps of `electra` set "
    "the largest budget.",
)  # fmt: skip
flags.DEFINE_string(
    "finetune_recipe", os.path.join(REPO, "experiments", "recipes", "finetune_movie_demo.json"),
    "Fine-tuning hparams (run_finetuning.py --hparams) for the movie task.",
)  # fmt: skip
flags.DEFINE_list(
    "objectives", ["electra", "mlm", "electra_15", "replace_mlm"], "Objectives to compare."
)
flags.DEFINE_list("budgets", ["0.25", "0.5", "1"], "Budget points, fractions of the largest.")
flags.DEFINE_float("scale", 1.0, "Multiplies the largest budget (bigger hardware).")
flags.DEFINE_float("budget_flops", None, "The largest budget in real FLOPs (default: recipe).")
flags.DEFINE_integer("seeds", 5, "Fine-tuning seeds per point (0..seeds-1).")
flags.DEFINE_bool("baseline", True, "Also fine-tune a randomly initialised encoder.")
flags.DEFINE_integer("bootstrap", 2000, "Bootstrap replicates of each interval.")
flags.DEFINE_string(
    "corpus_dir",
    os.path.join(REPO, "data", "corpus"),
    "Pretraining text (as build_pretraining_dataset.py --corpus_dir).",
)
flags.DEFINE_string("movie_data", os.path.join(REPO, "data", "movie_sentiment"), "Task data.")
flags.DEFINE_integer("num_shards", 10, "TFRecord shards; shard 0 is held out for evaluation.")
flags.DEFINE_bool("plot_only", False, "Rewrite the outputs from OUT_DIR/efficiency.json.")
flags.DEFINE_string(
    "recipe_overrides", None, "JSON object of pretraining hparams laid over the recipe (a pilot)."
)
flags.DEFINE_integer(
    "jobs", 1,
    "Objectives run (pretrained and fine-tuned) in this many processes at once; a small model "
    "does not keep 2 cores busy, and two such runs side by side gave ~1.5x the steps/s of one.",
)  # fmt: skip
flags.DEFINE_integer(
    "validation_split", 0,
    "N > 0: fine-tune on the movie train file less its last N sentences and score on those N "
    "(the pilot's validation split; the dev set is not read).",
)  # fmt: skip


def repo_path(path: str) -> str:
    return path if os.path.isabs(path) else os.path.join(REPO, path)


# -- data -----------------------------------------------------------------------------------------


def prepare_data(work_dir: str, recipe: Dict[str, Any]) -> str:
    """DATA_DIR with vocab.txt, pretrain_tfrecords/ and finetuning_data/sst/, built once."""
    from electra_tf import pretraining_data

    data_dir = os.path.join(work_dir, "data")
    os.makedirs(data_dir, exist_ok=True)
    vocab = data_layout.vocab_file(data_dir)
    if not os.path.exists(vocab):
        shutil.copyfile(repo_path(recipe["vocab_file"]), vocab)
    out = data_layout.tfrecord_dir(data_dir)
    if not os.path.exists(os.path.join(out, data_layout.DATASET_INFO_FILE)):
        progress(f"building TFRecords (length {recipe['max_seq_length']}) from {FLAGS.corpus_dir}")
        pretraining_data.build_dataset(
            FLAGS.corpus_dir,
            vocab,
            out,
            max_seq_length=recipe["max_seq_length"],
            num_processes=2,
            num_out_files=FLAGS.num_shards,
            overwrite=True,
        )
    write_task_data(
        data_layout.finetuning_data_dir(data_dir, "sst"), FLAGS.movie_data, FLAGS.validation_split
    )
    return data_dir


def write_task_data(task: str, movie_data: str, validation_split: int = 0) -> None:
    """The movie task's train.tsv and dev.tsv in `task`: the files of `movie_data`, or with
    `validation_split` N > 0 its train file less the last N sentences and those N (rewritten
    every run, so that a work dir cannot keep another split's; atomically, as --jobs children
    rewrite them while others read them)."""
    os.makedirs(task, exist_ok=True)
    n = validation_split
    if n <= 0:
        for split in ("train", "dev"):
            copy_file_atomically(os.path.join(movie_data, f"{split}.tsv"), f"{task}/{split}.tsv")
        return
    with open(os.path.join(movie_data, "train.tsv"), encoding="utf-8") as f:
        header, *rows = [line for line in f.read().splitlines() if line.strip()]
    if n >= len(rows):
        raise UserError(f"--validation_split={n}: the train file has {len(rows)} sentences")
    for split, part in (("train", rows[:-n]), ("dev", rows[-n:])):
        text = "\n".join([header, *part]) + "\n"
        write_atomically(f"{task}/{split}.tsv", lambda f, text=text: f.write(text))


def shards(data_dir: str):
    """(training shards, the held-out shard) as comma-separated paths."""
    out = data_layout.tfrecord_dir(data_dir)
    files = sorted(f for f in os.listdir(out) if f.startswith(data_layout.TFRECORD_PREFIX))
    paths = [os.path.join(out, f) for f in files]
    return ",".join(paths[1:]), paths[0]


# -- pretraining ----------------------------------------------------------------------------------


def pretraining_config(
    data_dir: str, recipe: Dict[str, Any], objective: str, steps: int, every: int
):
    from electra_tf.pretraining_config import PretrainingConfig
    from electra_tf.recipes import schedule_for_steps

    train_files, _ = shards(data_dir)
    hparams = {
        **recipe,
        **schedule_for_steps(recipe, steps),
        "vocab_file": data_layout.vocab_file(data_dir),
        "objective": objective,
        "save_checkpoints_steps": every,
        "keep_checkpoint_max": 0,  # keep every budget point
        "pretrain_tfrecords": train_files,
        "do_eval": False,
        "do_train": True,
    }
    return PretrainingConfig.from_flat(f"pt_{objective}", data_dir, hparams)


def plan(data_dir: str, recipe: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Steps of each objective for the largest budget (real FLOPs) and its budget points."""
    from electra_tf.pretraining_networks import step_flops
    from electra_tf.vocab import load_vocab

    budgets = sorted(float(b) for b in FLAGS.budgets)
    quantum = _quantum(budgets)
    vocab = len(load_vocab(data_layout.vocab_file(data_dir)))  # as the trainer counts it

    def fps(objective):
        f = step_flops(pretraining_config(data_dir, recipe, objective, 1, 1), vocab)
        return f.real, f.paper

    budget = FLAGS.budget_flops or FLAGS.scale * recipe["num_train_steps"] * fps("electra")[0]
    out = {}
    for obj in FLAGS.objectives:
        real, paper = fps(obj)
        steps = max(quantum, int(budget // real) // quantum * quantum)
        out[obj] = {
            "real_flops_per_step": real,
            "paper_flops_per_step": paper,
            "steps": steps,
            "every": int(steps * budgets[0] + 0.5) if len(budgets) == 1 else steps // quantum,
            "points": {b: int(round(steps * b)) for b in budgets},
            "budget_flops": budget,
        }
    return out


def _quantum(budgets: List[float]) -> int:
    """The smallest step count whose budget fractions are whole numbers of checkpoints."""
    for q in range(1, 1001):
        if all(abs(b * q - round(b * q)) < 1e-9 for b in budgets):
            return q
    raise UserError(f"--budgets {budgets}: use simple fractions (e.g. 0.25,0.5,1)")


def pretrain(data_dir: str, recipe, objective: str, p: Dict[str, Any]) -> Dict[str, Any]:
    """Trains (or resumes) one objective; evaluates each budget point on the held-out shard."""
    from electra_tf.train import Trainer

    config = pretraining_config(data_dir, recipe, objective, p["steps"], p["every"])
    model_dir = config.paths.model_dir
    trainer = Trainer(config)
    t = time.time()
    trainer.train()
    seconds = time.time() - t
    _, heldout_shard = shards(data_dir)
    points = {}
    for budget, step in p["points"].items():
        cache = os.path.join(model_dir, f"heldout_eval_{step}.json")
        if os.path.exists(cache):
            metrics = read_json(cache)
        else:
            prefix = data_layout.step_checkpoint(model_dir, step)
            metrics = trainer.evaluate(tfrecords=heldout_shard, checkpoint=prefix)
            metrics = {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float))}
            write_json(cache, metrics)
        points[budget] = {"step": step, "checkpoint": data_layout.step_checkpoint(model_dir, step),
                          "heldout": metrics}  # fmt: skip
    return {"seconds": seconds, "points": points}


HELDOUT_KEYS = ("masked_lm_accuracy", "masked_lm_loss", "disc_auc", "disc_accuracy", "loss",
                "disc_mlm_accuracy", "all_tokens_mlm_accuracy")  # fmt: skip


# -- fine-tuning ----------------------------------------------------------------------------------


def finetune(data_dir: str, name: str, checkpoint: str, random_init: bool = False) -> Dict:
    """Fine-tunes `checkpoint` (or a random encoder of its shape) with every seed; returns the
    per-seed dev accuracy and per-example correctness (reused when already done)."""
    from electra_tf.finetune.config import FinetuningConfig
    from electra_tf.finetune.runner import run_finetuning

    hparams = {
        **read_json(repo_path(FLAGS.finetune_recipe)),
        "task_names": ["sst"],
        "init_checkpoint": checkpoint,
        "num_trials": FLAGS.seeds,
        "seed": 0,
        "random_init": random_init,
        "log_every_steps": 100000,
    }
    config = FinetuningConfig.from_flat(name, data_dir, hparams, explicit=())
    results_dir = config.results_dir
    path = os.path.join(results_dir, "sst.json")
    done = read_json(path) if os.path.exists(path) else None
    # reused only when every hparam given here (the fine-tuning recipe's included) is the one
    # recorded: an edited recipe re-runs the fine-tuning
    recorded = (done or {}).get("config", {})
    if not done or any(recorded.get(k) != v for k, v in hparams.items()):
        t = time.time()
        run_finetuning(config)
        progress(f"fine-tuned {name} ({FLAGS.seeds} seeds) in {time.time() - t:.0f}s")
        done = read_json(path)
    correct = correct_per_seed(results_dir, dev_labels(data_dir), FLAGS.seeds)
    return {"correct": correct, "reported": [t["dev"]["accuracy"] for t in done["trials"]]}


# -- main -----------------------------------------------------------------------------------------


def main() -> None:
    if FLAGS.plot_only:
        path = os.path.join(FLAGS.out_dir, "efficiency.json")
        note = efficiency_report.write_outputs(FLAGS.out_dir, read_json(path), FLAGS.bootstrap)
        progress(note or f"rewrote the outputs from {path}")
        return
    for obj in FLAGS.objectives:
        if obj not in objectives.NAMES:
            raise UserError(f"--objectives: {obj!r} is not one of {', '.join(objectives.NAMES)}")
    if FLAGS.seeds < 2:
        raise UserError("--seeds must be at least 2 (medians and intervals over seeds)")
    overrides = json.loads(FLAGS.recipe_overrides or "{}")
    if not isinstance(overrides, dict):
        raise UserError("--recipe_overrides must be a JSON object")
    recipe = {**read_json(repo_path(FLAGS.recipe)), **overrides}
    work_dir = FLAGS.work_dir or tempfile.mkdtemp(prefix="electra_efficiency_")
    os.makedirs(work_dir, exist_ok=True)
    progress(f"work dir {work_dir}, results to {FLAGS.out_dir}")
    t_start = time.time()
    data_dir = prepare_data(work_dir, recipe)
    the_plan = plan(data_dir, recipe)
    for obj, p in the_plan.items():
        progress(
            f"plan {obj}: {p['steps']} steps x {p['real_flops_per_step']:.3e} real FLOPs/step = "
            f"{p['steps'] * p['real_flops_per_step']:.3e} (budget {p['budget_flops']:.3e})"
        )
    labels = dev_labels(data_dir)
    task_train = os.path.join(data_layout.finetuning_data_dir(data_dir, "sst"), "train.tsv")
    with open(task_train, encoding="utf-8") as f:
        train_size = sum(1 for line in f.readlines()[1:] if line.strip())
    report: Dict[str, Any] = {
        "settings": {
            "recipe": os.path.relpath(repo_path(FLAGS.recipe), REPO),
            "finetune_recipe": os.path.relpath(repo_path(FLAGS.finetune_recipe), REPO),
            "objectives": list(FLAGS.objectives),
            "budgets": sorted(float(b) for b in FLAGS.budgets),
            "scale": FLAGS.scale,
            "seeds": FLAGS.seeds,
            "recipe_overrides": overrides,
            "validation_split": FLAGS.validation_split,
            "jobs": FLAGS.jobs,
            "budget_flops": next(iter(the_plan.values()))["budget_flops"],
            "plan": {
                k: {**v, "points": {str(b): s for b, s in v["points"].items()}}
                for k, v in the_plan.items()
            },  # fmt: skip
        },
        "dev_size": len(labels),
        "train_size": train_size,
        "runs": [],
        "timing": {},
    }

    def save():
        report["timing"]["total_seconds"] = time.time() - t_start
        note = efficiency_report.write_outputs(FLAGS.out_dir, report, FLAGS.bootstrap)
        if note:
            progress(note)

    child_timing = {}
    if FLAGS.jobs > 1 and len(FLAGS.objectives) > 1:
        run_children(work_dir)  # then everything below is found done
        for obj in FLAGS.objectives:
            part = os.path.join(work_dir, "parts", obj, "efficiency.json")
            child_timing.update(read_json(part)["timing"] if os.path.exists(part) else {})
    pretrained = {}
    for obj in FLAGS.objectives:
        progress(f"pretraining {obj}")
        pretrained[obj] = pretrain(data_dir, recipe, obj, the_plan[obj])
        key = f"pretrain_{obj}_seconds"
        report["timing"][key] = child_timing.get(key, pretrained[obj]["seconds"])
    if FLAGS.baseline:
        final = pretrained[FLAGS.objectives[0]]["points"][
            max(the_plan[FLAGS.objectives[0]]["points"])
        ]
        result = finetune(data_dir, "ft_random_init", final["checkpoint"], random_init=True)
        report["runs"].append({"objective": "baseline", "budget": 0.0, "steps": 0,
                               "train_flops_real": 0.0, "train_flops_paper": 0.0, **result})  # fmt: skip
        save()
    for budget in sorted(float(b) for b in FLAGS.budgets):
        for obj in FLAGS.objectives:
            point = pretrained[obj]["points"][budget]
            p = the_plan[obj]
            result = finetune(data_dir, f"ft_{obj}_{budget:g}", point["checkpoint"])
            heldout = {k: v for k, v in point["heldout"].items() if k in HELDOUT_KEYS}
            report["runs"].append(
                {
                    "objective": obj,
                    "budget": budget,
                    "steps": point["step"],
                    "train_flops_real": point["step"] * p["real_flops_per_step"],
                    "train_flops_paper": point["step"] * p["paper_flops_per_step"],
                    "heldout": heldout,
                    **result,
                }
            )
            save()
    progress(f"done in {(time.time() - t_start) / 60:.1f} min; outputs in {FLAGS.out_dir}")


if __name__ == "__main__":
    app.run(lambda argv: run_main(main))
