"""The fine-tuning loop: read and featurize every task's splits, then for each trial build the
model, load the pretrained discriminator, train, score the dev (and test) splits; write the
results only once everything succeeded, atomically.

Outputs under `DATA_DIR/models/MODEL_NAME/results/`:
  * `<task>.json`: the config, each trial's metrics per split and the median over trials;
  * `<task>_<split>_predictions.tsv`: `id<TAB>prediction`, id = 0-based row (or sentence) index in
    the split's file, header excluded; prediction = the label string, the regression value
    (0..5 for STS) or the space-separated tags. Trial 1's file has this name; with several trials,
    trial t > 1 writes `<task>_<split>_predictions_trial<t>.tsv` as well.
"""

import functools
import math
import os
import re
import statistics
import time
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from electra_tf import checkpoints, configs, run_dir
from electra_tf.configs import ModelConfig
from electra_tf.errors import UserError
from electra_tf.finetune.config import FinetuningConfig
from electra_tf.finetune.model import FinetuningModel, build_model
from electra_tf.finetune.scorers import ClassificationScorer, majority_class_accuracy
from electra_tf.finetune.task import Task, make_tokenizer
from electra_tf.finetune.tasks import get_tasks
from electra_tf.optimization import ElectraAdamW, ElectraSchedule, layerwise_lr_multipliers

Features = dict[str, np.ndarray]


def log(msg: str) -> None:
    print(msg, flush=True)


# -- paths, model config, checkpoint ----------------------------------------------------------------


def resolve_vocab_file(config: FinetuningConfig) -> str:
    candidates = (
        [config.vocab_file]
        if config.vocab_file
        else [
            os.path.join(config.pretrained_model_dir, "vocab.txt"),
            os.path.join(config.data_dir, "vocab.txt"),
        ]
    )
    for path in candidates:
        if os.path.exists(path):
            return path
    raise UserError(f"no vocab file: tried {', '.join(candidates)}")


def resolve_checkpoint(path: str) -> str | None:
    """A checkpoint prefix from a prefix or a directory (its latest checkpoint), else None."""
    if os.path.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if latest:
            return latest
        # no `checkpoint` state file (e.g. `Checkpoint.write`): the highest-numbered prefix
        prefixes = [f[: -len(".index")] for f in os.listdir(path) if f.endswith(".index")]
        if not prefixes:
            return None

        def number(p):
            return int(re.search(r"(\d*)$", p).group(1) or -1)

        return os.path.join(path, max(prefixes, key=lambda p: (number(p), p)))
    if tf.io.gfile.exists(path + ".index"):
        return path
    return None


def load_model_config(config: FinetuningConfig, checkpoint: str | None) -> ModelConfig:
    """The pretraining run's `config.json` beside the checkpoint, else the size preset."""
    base = config.init_checkpoint if os.path.isdir(config.init_checkpoint) else None
    # random_init reads the architecture beside the checkpoint it does not load
    ref = checkpoint or (config.init_checkpoint if config.random_init else None)
    base = base or (os.path.dirname(ref) if ref else config.pretrained_model_dir)
    for d in (base, os.path.dirname(base)):
        path = os.path.join(d, "config.json")
        if os.path.exists(path):
            return run_dir.read_run_config(path).model_config
    log(f"no config.json beside {base}: using the {config.model_size} preset")
    return configs.get_model_config(
        config.model_size,
        vocab_size=config.vocab_size,
        embedding_size=config.embedding_size,
        overrides=config.model_hparam_overrides,
    )


def restore_encoder(model: FinetuningModel, checkpoint: str) -> None:
    """Loads the pretrained discriminator into `model.encoder`: a checkpoint of this project's
    pretraining (object-based) or an original TF1 one (by variable name)."""
    checkpoints.restore_discriminator(model.encoder, checkpoint)


# -- data -------------------------------------------------------------------------------------------


def full_spec(tasks: list[Task], max_len: int) -> dict[str, tuple[tuple[int, ...], Any]]:
    spec = {
        "input_ids": ((max_len,), np.int32),
        "input_mask": ((max_len,), np.int32),
        "segment_ids": ((max_len,), np.int32),
        "task_id": ((), np.int32),
    }
    for t in tasks:
        spec.update(t.feature_spec())
    return spec


def complete(features: Features, spec, n: int, task_id: int) -> Features:
    """Adds zero arrays for the features other tasks declare, and the task id."""
    out = {}
    for name, (shape, dtype) in spec.items():
        out[name] = (
            features[name].astype(dtype) if name in features else np.zeros((n,) + shape, dtype)
        )
    out["task_id"] = np.full([n], task_id, np.int32)
    return out


def concat(parts: list[Features]) -> Features:
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def pad_rows(features: Features, n_rows: int, task_id: int | None = None) -> Features:
    """Appends all-zero rows up to n_rows (padding examples; task_id = n_tasks adds no loss)."""
    n = len(features["input_ids"])
    if n >= n_rows:
        return features
    out = {
        k: np.concatenate([v, np.zeros((n_rows - n,) + v.shape[1:], v.dtype)])
        for k, v in features.items()
    }
    if task_id is not None:
        out["task_id"][n:] = task_id
    return out


def num_train_steps(n_examples: int, config: FinetuningConfig) -> tuple[int, int]:
    """(padded example count, steps), as the original: int(n_padded // batch * epochs)."""
    b = config.train_batch_size
    n_padded = int(math.ceil(n_examples / b) * b)
    return n_padded, int(n_padded // b * config.num_train_epochs)


# -- training and prediction ------------------------------------------------------------------------


def train(
    model: FinetuningModel, train_features: Features, config: FinetuningConfig, steps: int, seed
) -> dict[str, float]:
    n_layers = model.model_config.num_hidden_layers
    variables = model.trainable_variables
    multipliers = None
    if config.layerwise_lr_decay and config.layerwise_lr_decay > 0:
        multipliers = layerwise_lr_multipliers(
            variables, n_layers, config.layerwise_lr_decay, config.layerwise_lr_decay_fixed
        )
    warmup = int(steps * config.warmup_proportion)
    schedule = ElectraSchedule(config.learning_rate, max(steps, 1), warmup)
    optimizer = ElectraAdamW(
        schedule,
        variables,
        weight_decay_rate=config.weight_decay_rate,
        clip_norm=config.clip_norm,
        lr_multipliers=multipliers,
    )
    n = len(train_features["input_ids"])
    ds = tf.data.Dataset.from_tensor_slices(train_features)
    ds = ds.shuffle(n, seed=seed, reshuffle_each_iteration=True).repeat()
    ds = ds.batch(config.train_batch_size, drop_remainder=True).prefetch(2)

    def step_fn(batch):
        with tf.GradientTape() as tape:
            loss, _ = model(batch, training=True)
        grads = tape.gradient(loss, variables)
        # embedding gathers give IndexedSlices; the optimizer updates dense tensors
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        grads, _ = optimizer.clip(grads)
        optimizer.apply_gradients(grads)
        return loss

    jit = steps >= 300 if config.jit_compile is None else bool(config.jit_compile)
    step_fn = tf.function(step_fn, jit_compile=jit)
    start = last_t = time.time()
    last_step, losses = 0, []
    every = max(1, int(config.log_every_steps))
    it = iter(ds)
    for step in range(1, steps + 1):
        losses.append(step_fn(next(it)))
        if step % every == 0 or step == steps:
            now = time.time()
            recent = [float(x) for x in losses]
            losses = []
            log(
                f"step {step}/{steps}  loss {np.mean(recent):.4f}  "
                f"{(step - last_step) / max(now - last_t, 1e-9):.2f} steps/s"
            )
            last_t, last_step = now, step
    seconds = time.time() - start
    return {"train_steps": steps, "train_seconds": seconds}


def predict(fn, features: Features, batch_size: int) -> list[dict]:
    """Runs `fn` (a traced head) over `features` in fixed-size batches; numpy output batches."""
    n = len(features["input_ids"])
    out = []
    for s in range(0, n, batch_size):
        batch = {k: v[s : s + batch_size] for k, v in features.items()}
        m = len(batch["input_ids"])
        batch = pad_rows(batch, batch_size)  # one static shape: one trace per task
        res = fn(batch)
        out.append({k: v.numpy()[:m] for k, v in res.items()})
    return out


def score(fn, task: Task, split: str, examples, features: Features, batch_size: int):
    """(metrics, one prediction per example, the scorer)."""
    scorer = task.make_scorer(split, examples)
    for batch in predict(fn, features, batch_size):
        scorer.update(batch)
    return scorer.get_results(), scorer.predictions(), scorer


# -- the whole run ----------------------------------------------------------------------------------


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


def run_finetuning(config: FinetuningConfig) -> dict[str, Any]:
    """Trains and scores; returns {task: results dict}. Writes results only after success."""
    config.vocab_file = resolve_vocab_file(config)
    tokenizer = make_tokenizer(config.vocab_file, config.do_lower_case)
    tasks = get_tasks(config, tokenizer)

    checkpoint = None if config.random_init else resolve_checkpoint(config.init_checkpoint)
    if checkpoint is None and not (config.debug or config.random_init):
        raise UserError(
            f"{config.init_checkpoint}: no checkpoint (pretrain first, or set init_checkpoint)"
        )
    model_config = load_model_config(config, checkpoint)
    if config.max_seq_length > model_config.max_position_embeddings:
        raise UserError(
            f"max_seq_length {config.max_seq_length} exceeds the model's max_position_embeddings "
            f"{model_config.max_position_embeddings}"
        )
    vocab_size = len(tokenizer.vocab)
    if vocab_size > model_config.vocab_size:
        raise UserError(
            f"{config.vocab_file}: {vocab_size} entries, but the model has vocab_size "
            f"{model_config.vocab_size}"
        )

    # read and featurize everything first: a data error stops the run before any training
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

    steps = 0
    train_features = None
    if config.do_train:
        n_padded, steps = num_train_steps(n_train, config)
        train_features = pad_rows(concat(train_parts), n_padded, task_id=len(tasks))

    dummy = {k: tf.zeros((1,) + shape, dtype) for k, (shape, dtype) in spec.items()}
    trial_results: dict[str, list[dict[str, dict[str, float]]]] = {t.name: [] for t in tasks}
    trial_info: list[dict[str, Any]] = []
    predictions: dict[str, list[tuple[str, list]]] = {}
    label_counts: dict[str, list[dict[str, Any]]] = {t.name: [] for t in tasks}
    for trial in range(1, config.num_trials + 1):
        seed = config.trial_seed(trial)
        if seed is not None:
            keras.utils.set_random_seed(seed)
        model, _ = build_model(model_config, [t.make_head() for t in tasks], dummy)
        if checkpoint is not None:
            restore_encoder(model, checkpoint)
            log(f"trial {trial}: loaded the discriminator encoder from {checkpoint}")
        elif config.random_init:
            log(f"trial {trial}: random_init: the encoder starts from random weights")
        info: dict[str, Any] = {"trial": trial, "seed": seed}
        if config.do_train and steps > 0:
            log(
                f"trial {trial}: training {steps} steps on {n_train} examples ({', '.join(config.task_names)})"
            )
            info.update(train(model, train_features, config, steps, seed))
        if config.keep_all_models:
            model_dir = os.path.join(
                config.pretrained_model_dir,
                "finetuning_models",
                f"{'_'.join(config.task_names)}_model_{trial}"
                + ("_random_init" if config.random_init else ""),
            )
            tf.train.Checkpoint(model=model).write(os.path.join(model_dir, "ckpt"))
            # every checkpoint directory carries what is needed to rebuild and read it
            configs.write_json(
                os.path.join(model_dir, "config.json"),
                {
                    **config.to_dict(),
                    "model_config": model_config.to_dict(),
                    "task_names": list(config.task_names),
                },
            )
            with open(config.vocab_file, "rb") as src:
                vocab_bytes = src.read()
            with open(os.path.join(model_dir, "vocab.txt"), "wb") as dst:
                dst.write(vocab_bytes)
        per_task: dict[str, dict[str, dict[str, float]]] = {t.name: {} for t in tasks}
        counts: dict[str, dict[str, Any]] = {t.name: {} for t in tasks}
        # partials, not lambdas: TensorFlow counts traces per code object, so one lambda traced
        # once per trial would set off its "excessive retracing" warning from the fifth trial
        fns = {
            t.name: tf.function(functools.partial(model.predict_task, task_name=t.name))
            for t in tasks
        }
        for task, split, examples, feats in eval_sets:
            results, preds, scorer = score(
                fns[task.name], task, split, examples, feats, config.eval_batch_size
            )
            is_test = split in task.test_splits()
            if not is_test:
                per_task[task.name][split] = results
                log(
                    f"trial {trial} {task.name} {split}: "
                    + ", ".join(f"{k} {v:.2f}" for k, v in results.items())
                )
                if isinstance(scorer, ClassificationScorer):
                    counts[task.name][split] = c = scorer.label_counts()
                    label, acc = majority_class_accuracy(c["gold"])
                    log(
                        f"trial {trial} {task.name} {split}: predicted "
                        + ", ".join(f"{k}: {v}" for k, v in c["predicted"].items())
                        + "; gold "
                        + ", ".join(f"{k}: {v}" for k, v in c["gold"].items())
                        + f" (always answering {label} scores {acc:.2f})"
                    )
            suffix = "" if trial == 1 else f"_trial{trial}"
            predictions[f"{task.name}_{split}_predictions{suffix}.tsv"] = preds
        for t in tasks:
            trial_results[t.name].append(per_task[t.name])
            if counts[t.name]:
                label_counts[t.name].append(counts[t.name])
        trial_info.append(info)

    # everything succeeded: write atomically
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
            "config": config.to_dict(),
            "model_config": model_config.to_dict(),
        }
        configs.write_json(os.path.join(config.results_dir, f"{task.name}.json"), result)
        out[task.name] = result
    for filename, preds in predictions.items():
        write_predictions(os.path.join(config.results_dir, filename), preds)
    log(f"results written to {config.results_dir}")
    return out


def write_predictions(path: str, preds: list[tuple[Any, str]]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("id\tprediction\n")
        f.writelines(f"{eid}\t{p}\n" for eid, p in preds)
    os.replace(tmp, path)
