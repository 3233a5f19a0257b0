"""The fine-tuning run: read and featurize every task's splits, then for each trial build the
model, load the pretrained discriminator, train, score the dev (and test) splits; write the
results only once everything succeeded, through `electra_tf.run_dir`.

Outputs under `DATA_DIR/models/MODEL_NAME/results/` (`results_random_init/` with random_init):
  * `<task>.json`: the config, each trial's metrics per split and the median over trials;
  * `<task>_<split>_predictions.tsv`: `id<TAB>prediction`, id = 0-based row (or sentence) index in
    the split's file, header excluded; prediction = the label string, the regression value
    (0..5 for STS) or the space-separated tags. Trial 1's file has this name; with several trials,
    trial t > 1 writes `<task>_<split>_predictions_trial<t>.tsv` as well.
With keep_all_models, each trial's model is kept in `finetuning_models/<tasks>_model_<trial>/`:
`ckpt.*`, a config.json of kind "finetuning" and the vocab (`export_model.py` reads them).

A run holds its tasks' locks in the model directory (`trials.lock_tasks`). Each finished trial is
recorded in `results/<tasks>_trials.json` (`trials.TrialRecord`) and an unfinished one keeps
checkpoints in `finetuning_checkpoints/<tasks>_trial_<trial>/` (`trainer.train`): re-running the
same command after a crash skips the finished trials and resumes the unfinished one; both are
removed once the results are written.
"""

import contextlib
import dataclasses
import functools
import statistics
import time
from typing import Any, Optional

import keras
import tensorflow as tf

from electra_tf import run_dir, vocab
from electra_tf.errors import UserError
from electra_tf.finetune.config import FinetuningConfig
from electra_tf.finetune.features import (
    Features,
    complete,
    concat,
    dummy_batch,
    full_spec,
    num_train_steps,
    pad_rows,
)
from electra_tf.finetune.model import FinetuningModel, build_model
from electra_tf.finetune.pretrained import (
    find_init_checkpoint,
    load_model_config,
    resolve_vocab_file,
    restore_encoder,
)
from electra_tf.finetune.registry import get_tasks
from electra_tf.finetune.scorers import majority_class_accuracy
from electra_tf.finetune.task import Task, make_tokenizer
from electra_tf.finetune.trainer import score, train
from electra_tf.finetune.trials import TrialRecord, lock_tasks
from electra_tf.model_config import ModelConfig
from electra_tf.train.progress import log
from electra_tf.train.strategy import ReplicaLayout, build_strategy


@dataclasses.dataclass
class RunData:
    """Every task's features, read before any training (a data error stops the run first)."""

    spec: dict[str, tuple[tuple[int, ...], Any]]
    train_features: Optional[Features]
    n_train: int
    steps: int
    eval_sets: list[tuple[Task, str, Any, Features]]


def read_data(config: FinetuningConfig, tasks: list[Task]) -> RunData:
    spec = full_spec(tasks, config.max_seq_length)
    t0 = time.time()
    train_parts, n_train = [], 0
    if config.do_train:
        for task_id, task in enumerate(tasks):
            examples = task.get_examples("train")
            feats = task.featurize(examples, "train", is_training=True)
            n = len(feats["input_ids"])
            train_parts.append(complete(feats, spec, n, task_id))
            n_train += n
            log(f"{task.name} train: {len(examples)} examples, {n} features")
    eval_sets: list[tuple[Task, str, Any, Features]] = []
    for task_id, task in enumerate(tasks):
        splits = list(task.dev_splits()) if config.do_eval else []
        if config.write_test_outputs:
            splits += list(task.test_splits())
        for split in splits:
            examples = task.get_examples(split)
            feats = task.featurize(examples, split, is_training=False)
            feats = complete(feats, spec, len(feats["input_ids"]), task_id)
            eval_sets.append((task, split, examples, feats))
            log(f"{task.name} {split}: {len(examples)} examples")
    log(f"data ready in {time.time() - t0:.1f}s")
    steps, train_features = 0, None
    if config.do_train:
        n_padded, steps = num_train_steps(n_train, config)
        train_features = pad_rows(concat(train_parts), n_padded, task_id=len(tasks))
    return RunData(spec, train_features, n_train, steps, eval_sets)


def keep_model(
    config: FinetuningConfig, model: FinetuningModel, model_config: ModelConfig, trial: int
) -> str:
    """Keeps a trial's model with what is needed to rebuild and read it; returns its directory."""
    model_dir = config.run.finetuned_model_dir(config.task_names, trial, config.random_init)
    tf.train.Checkpoint(model=model).write(
        config.run.kept_checkpoint_prefix(config.task_names, trial, config.random_init)
    )
    kept = run_dir.RunDirectory(model_dir)
    kept.write_config(run_dir.FINETUNING, config.to_flat(), model_config)
    kept.copy_vocab(config.vocab_file, overwrite=True)
    return model_dir


def class_balance(counts: list[dict[str, Any]]) -> dict[str, Any]:
    """For classification tasks: each trial's gold / predicted label counts per split, and the
    accuracy of always answering the split's most frequent label (the floor a small dev set's
    accuracy should be read against)."""
    if not counts:
        return {}
    majority = {}
    for split, c in counts[0].items():
        label, acc = majority_class_accuracy(c["gold"])
        majority[split] = {"label": label, "accuracy": acc}
    return {"label_counts": counts, "majority_class": majority}


def median_results(trials: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for split in trials[0]:
        out[split] = {
            m: float(statistics.median(t[split][m] for t in trials)) for m in trials[0][split]
        }
    return out


def check_model_fits(config: FinetuningConfig, model_config: ModelConfig, vocab_size: int) -> None:
    if config.max_seq_length > model_config.max_position_embeddings:
        raise UserError(
            f"max_seq_length {config.max_seq_length} exceeds the model's max_position_embeddings "
            f"{model_config.max_position_embeddings}"
        )
    if vocab_size > model_config.vocab_size:
        raise UserError(
            f"{config.vocab_file}: {vocab_size} entries, but the model has vocab_size "
            f"{model_config.vocab_size}"
        )


def run_finetuning(config: FinetuningConfig) -> dict[str, Any]:
    """Trains and scores; returns {task: results dict}. Writes results only after success: each
    finished trial is recorded, so that re-running after a crash skips it and resumes the
    unfinished one from its checkpoint (`trials`, `trainer.train`)."""
    # first: a multi-worker strategy must exist before TensorFlow runs any op
    strategy = build_strategy(config.distribution)
    # resolved up front: the tasks, the results and a kept model's config.json record it
    config = config.with_hparams(vocab_file=resolve_vocab_file(config))
    tokenizer = make_tokenizer(config.vocab_file, config.do_lower_case)
    vocab.special_token_ids(tokenizer.vocab, config.vocab_file, ("cls", "sep"))  # every kind's
    tasks = get_tasks(config, tokenizer)

    checkpoint = find_init_checkpoint(config)
    if checkpoint is None and not (config.debug or config.random_init):
        raise UserError(
            f"{config.init_checkpoint}: no checkpoint (pretrain first, or set init_checkpoint)"
        )
    model_config = load_model_config(config, checkpoint)
    positions = model_config.max_position_embeddings
    if config.given("max_seq_length") is None and config.max_seq_length > positions:
        log(
            f"max_seq_length: the tasks' default {config.max_seq_length} exceeds the model's "
            f"max_position_embeddings; using {positions}"
        )
        config = config.with_hparams(max_seq_length=positions)
        tasks = get_tasks(config, tokenizer)
    check_model_fits(config, model_config, len(tokenizer.vocab))
    if config.deterministic:
        tf.config.experimental.enable_op_determinism()
    # one writer per task of a model directory (its results and kept models), from here on;
    # in a multi-worker run the chief (the others train in lock-step and write nothing)
    chief = ReplicaLayout.of(strategy).is_chief
    with lock_tasks(config, log) if chief else contextlib.nullcontext():
        return _train_and_score(config, tasks, checkpoint, model_config, strategy)


def _train_and_score(
    config: FinetuningConfig,
    tasks: list[Task],
    checkpoint: Optional[str],
    model_config,
    strategy: tf.distribute.Strategy,
) -> dict[str, Any]:
    """Every trial not already done (`TrialRecord`), then the results."""
    data = read_data(config, tasks)
    dummy = dummy_batch(data.spec)
    trial_results: dict[str, list[dict[str, dict[str, float]]]] = {t.name: [] for t in tasks}
    trial_info: list[dict[str, Any]] = []
    predictions: dict[str, list[tuple[str, list]]] = {}
    files: dict[str, Any] = {}
    label_counts: dict[str, list[dict[str, Any]]] = {t.name: [] for t in tasks}
    chief = ReplicaLayout.of(strategy).is_chief
    record = TrialRecord(config, checkpoint, log, writer=chief)
    for trial in range(1, config.num_trials + 1):
        done = record.done(trial)
        if done is None:
            done = run_trial(config, tasks, data, model_config, checkpoint, dummy, trial, strategy)
            done = record.record(trial, done)
        else:
            record.remove_checkpoints(trial)
        for t in tasks:
            trial_results[t.name].append(done["per_task"][t.name])
            if done["counts"][t.name]:
                label_counts[t.name].append(done["counts"][t.name])
        trial_info.append(done["info"])
        predictions.update({k: [tuple(p) for p in v] for k, v in done["predictions"].items()})
        files.update(done.get("files", {}))  # a record from before they were kept: none

    # everything succeeded: write (each file atomically; the chief)
    out = {}
    for task in tasks:
        trials = trial_results[task.name]
        result = {
            "task": task.name,
            "model_name": config.model_name,
            "trained_with": config.task_names,
            "num_trials": config.num_trials,
            "trials": [{**info, **res} for info, res in zip(trial_info, trials)],
            "median": median_results(trials) if trials and trials[0] else {},
            **class_balance(label_counts[task.name]),
            "config": config.to_flat(),
            "model_config": model_config.to_dict(),
        }
        if chief:
            config.run.write_results(task.name, result, config.random_init)
        out[task.name] = result
    if not chief:
        return out
    for filename, preds in predictions.items():
        config.run.write_predictions(filename, preds, config.random_init)
    for filename, obj in files.items():
        config.run.write_qa_predictions(filename, obj, config.random_init)
    record.finish()
    log(f"results written to {config.results_dir}")
    return out


def run_trial(
    config: FinetuningConfig,
    tasks: list[Task],
    data: RunData,
    model_config: ModelConfig,
    checkpoint: Optional[str],
    dummy: dict,
    trial: int,
    strategy: tf.distribute.Strategy,
) -> dict[str, Any]:
    """Builds, trains (resuming from the trial's checkpoints) and scores one trial; what the
    results need of it, as JSON (predictions as the strings they are written as)."""
    seed = config.trial_seed(trial)
    if seed is not None:
        keras.utils.set_random_seed(seed)
    with strategy.scope():
        heads = [t.make_head() for t in tasks]
        model, _ = build_model(model_config, heads, dummy, config.precision)
    if checkpoint is not None:
        restore_encoder(model, checkpoint, config.reinit_top_layers)
        log(f"trial {trial}: loaded the discriminator encoder from {checkpoint}")
        if config.reinit_top_layers:
            log(f"trial {trial}: the top {config.reinit_top_layers} layer(s) re-initialised")
    elif config.random_init:
        log(f"trial {trial}: random_init: the encoder starts from random weights")
    info: dict[str, Any] = {"trial": trial, "seed": seed}
    if config.do_train and data.steps > 0:
        log(
            f"trial {trial}: training {data.steps} steps on {data.n_train} examples "
            f"({', '.join(config.task_names)})"
        )
        ckpt_dir = config.run.trial_checkpoint_dir(config.task_names, trial, config.random_init)
        info.update(
            train(model, data.train_features, config, data.steps, seed, ckpt_dir, trial, strategy)
        )
    if config.keep_all_models and ReplicaLayout.of(strategy).is_chief:
        keep_model(config, model, model_config, trial)
    per_task: dict[str, dict[str, dict[str, float]]] = {t.name: {} for t in tasks}
    counts: dict[str, dict[str, Any]] = {t.name: {} for t in tasks}
    predictions: dict[str, list[list[str]]] = {}
    files: dict[str, Any] = {}  # the scorers' other files (QA's official-format predictions)
    # partials, not lambdas: TensorFlow counts traces per code object, so one lambda traced
    # once per trial would set off its "excessive retracing" warning from the fifth trial
    fns = {
        t.name: tf.function(functools.partial(model.predict_task, task_name=t.name)) for t in tasks
    }
    for task, split, examples, feats in data.eval_sets:
        results, preds, scorer = score(
            fns[task.name], task, split, examples, feats, config.eval_batch_size
        )
        if split not in task.test_splits():
            per_task[task.name][split] = results
            log(
                f"trial {trial} {task.name} {split}: "
                + ", ".join(f"{k} {v:.2f}" for k, v in results.items())
            )
            c = scorer.label_counts()
            if c is not None:
                counts[task.name][split] = c
                label, acc = majority_class_accuracy(c["gold"])
                log(
                    f"trial {trial} {task.name} {split}: predicted "
                    + ", ".join(f"{k}: {v}" for k, v in c["predicted"].items())
                    + "; gold "
                    + ", ".join(f"{k}: {v}" for k, v in c["gold"].items())
                    + f" (always answering {label} scores {acc:.2f})"
                )
        name = run_dir.RunDirectory.predictions_name(task.name, split, trial)
        predictions[name] = [[f"{eid}", f"{p}"] for eid, p in preds]
        for what, obj in scorer.prediction_files().items():
            name = run_dir.RunDirectory.predictions_name(task.name, split, trial, what, ".json")
            files[name] = obj
    return {"info": info, "per_task": per_task, "counts": counts, "predictions": predictions,
            "files": files}  # fmt: skip
