"""A behaviour pin: fixed deterministic runs of the command lines, recorded and compared.

    python scripts/check_behaviour.py --record OUT.json
    python scripts/check_behaviour.py --compare scripts/behaviour/a897e3a.json

It runs only the top-level scripts (build_pretraining_dataset.py, run_pretraining.py,
run_finetuning.py), each with this interpreter in a fresh scratch directory, and reads only the
files they write, so it works unchanged whatever the package's internals become (it imports
nothing from electra_tf, tests/ or experiments/). The runs, all on the CPU with op determinism
(`deterministic: true`, a fixed `seed`, `jit_compile: false`, two TensorFlow threads):

  1. dataset: build_pretraining_dataset.py on the first 2,000 lines of
     data/corpus/enwiki_sample.txt with data/vocab/vocab.txt (64 tokens, 2 shards, seed 5);
  2. pretrain: a tiny ELECTRA (hidden 32, 2 layers, dropout on) for 30 steps, a checkpoint every
     10 steps, then its evaluation;
  3. pretrain_resume: the same run re-run to 40 steps (resumes from step 30) and evaluated;
  4. fine-tuning from that model (1 epoch; the model size's default learning rate, warmup and
     layer-wise decay), one run per task kind: sst (classification, data/sst_polarity, 2
     trials), sts (regression, tests/data/finetune/sts, with test predictions), chunk (tagging,
     tests/data/finetune/chunk), squadv1 (QA, tests/data/qa/squad_v1_train.json as train and
     dev, sliding windows), and `score`, a custom task.json regression task written here,
     trained from random weights (`random_init`).

Recorded: the dataset's dataset_info.json and the sha256 of every file it wrote; eval_results.json;
the checkpoints kept; each results/TASK.json (every metric, as its exact float); every
predictions file (sha256, and its lines when under 4 kB); the hparams echoed in config.json /
results' "config" (only keys documented in docs/HPARAMS.md); the sha256 of the task data used.
Excluded as wall-clock or machine-measured (not behaviour): any key containing `seconds`,
`per_second`, `mfu`, `peak_flops` (pretraining's eval_results.json: train_flops_per_second,
train_mfu, peak_flops; fine-tuning's trials: train_seconds), `steps_per`, `examples_per`, `time`
or `elapsed`. Scratch paths are written as <work>. Floats only repeat on the same CPU model (the
record names it; a comparison on another prints a warning and still compares).
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {
    **os.environ,
    "PYTHONPATH": REPO,
    "TF_CPP_MIN_LOG_LEVEL": "3",
    "CUDA_VISIBLE_DEVICES": "",
    "TF_NUM_INTRAOP_THREADS": "2",
    "TF_NUM_INTEROP_THREADS": "2",
    "PYTHONHASHSEED": "0",
}
ENV.pop("TF_CONFIG", None)
VOLATILE = re.compile(r"seconds|per_second|mfu|peak_flops|steps_per|examples_per|time|elapsed")
PRETRAIN_KEYS = """debug do_train do_eval eval_batch_size shuffle_buffer_size skip_corrupt_records
num_eval_steps save_checkpoints_steps keep_checkpoint_max log_every_steps seed deterministic
electra_objective objective gen_weight disc_weight mask_prob temperature disallow_correct
adversarial_generator electric_objective whole_word_masking untied_generator_embeddings
untied_generator generator_layers generator_hidden_size uniform_generator generator_config
token_counts_file two_tower_generator model_size model_hparam_overrides embedding_size vocab_size
do_lower_case max_seq_length tied_output_embeddings word_embedding_init ppmi_window learning_rate
lr_decay_power weight_decay_rate num_warmup_steps num_train_steps train_batch_size clip_norm
optimizer adam_bias_correction embedding_lr_multiplier two_stage_steps pretrain_tfrecords
vocab_file model_dir init_checkpoint distribution precision jit_compile fused_elementwise
iterations_per_loop allreduce_dtype gradient_accumulation_steps peak_flops""".split()
FINETUNE_KEYS = """debug num_trials do_train do_eval keep_all_models seed deterministic
save_checkpoints_steps log_every_steps eval_batch_size model_size task_names model_hparam_overrides
embedding_size vocab_size do_lower_case max_seq_length reinit_top_layers classifier_pooling
learning_rate weight_decay_rate layerwise_lr_decay layerwise_lr_decay_fixed embedding_lr_multiplier
num_train_epochs warmup_proportion clip_norm optimizer adam_bias_correction train_batch_size
distribution precision allreduce_dtype gradient_accumulation_steps jit_compile iterations_per_loop
double_unordered write_test_outputs max_query_length doc_stride n_best_size max_answer_length
answerable_classifier answerable_uses_start_logits answerable_weight joint_prediction beam_size
qa_na_threshold init_checkpoint random_init vocab_file""".split()

PRETRAIN = dict(
    model_size="small",
    model_hparam_overrides=dict(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64
    ),
    embedding_size=32,
    generator_hidden_size=0.5,
    max_seq_length=64,
    train_batch_size=8,
    eval_batch_size=8,
    num_train_steps=30,
    num_warmup_steps=5,
    learning_rate=1e-3,
    save_checkpoints_steps=10,
    keep_checkpoint_max=0,
    num_eval_steps=4,
    log_every_steps=10,
    iterations_per_loop=10,
    shuffle_buffer_size=50,
    do_eval=True,
    jit_compile=False,
    seed=3,
    deterministic=True,
)
FINETUNE = dict(
    train_batch_size=8,
    eval_batch_size=8,
    num_train_epochs=1.0,
    max_seq_length=64,
    save_checkpoints_steps=5,
    log_every_steps=5,
    jit_compile=False,
    seed=3,
    deterministic=True,
)
TASKS = {  # run name: (the run's own hparams)
    "sst": dict(task_names=["sst"], num_trials=2),
    "sts": dict(task_names=["sts"], num_train_epochs=2.0, write_test_outputs=True),
    "chunk": dict(task_names=["chunk"], num_train_epochs=2.0),
    "squadv1": dict(task_names=["squadv1"], max_query_length=24, doc_stride=24, n_best_size=5),
    "score": dict(task_names=["score"], random_init=True, num_train_epochs=3.0),
}
SCORE_TASK = {"type": "regression", "text_a": 1, "text_b": 2, "label": 0, "metrics": ["pearson"]}


def sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def cpu_model() -> str:
    """/proc/cpuinfo's model name, family and model, and the widest vector ISA (AVX-512, AVX2)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            info = dict(
                (k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in f) if v
            )
    except OSError:
        import platform

        return platform.processor() or "unknown"
    flags = info.get("flags", "").split()
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    name = info.get("model name", "unknown")
    return f"{name} (family {info.get('cpu family')}, model {info.get('model')}, {isa})"


def run(script: str, *args: str) -> None:
    p = subprocess.run(
        [sys.executable, os.path.join(REPO, script), *args],
        env=ENV,
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    if p.returncode:
        sys.stderr.write(p.stdout[-3000:] + p.stderr[-5000:])
        raise SystemExit(f"behaviour: {script} {' '.join(args)} exited {p.returncode}")


def strip_volatile(x):
    if isinstance(x, dict):
        return {k: strip_volatile(v) for k, v in x.items() if not VOLATILE.search(k)}
    if isinstance(x, list):
        return [strip_volatile(v) for v in x]
    return x


def hparams_of(config: dict, keys: list) -> dict:
    """The documented hparams in a written config (top level, else in a section)."""
    out = {}
    for key in keys:
        if key in config:
            out[key] = config[key]
            continue
        for section in sorted(k for k, v in config.items() if isinstance(v, dict)):
            if key in config[section]:
                out[key] = config[section][key]
                break
        else:
            out[key] = "<absent>"
    return out


def file_record(path: str) -> dict:
    rec = {"sha256": sha256(path)}
    if os.path.getsize(path) < 4096:
        with open(path, encoding="utf-8") as f:
            rec["lines"] = f.read().splitlines()
    return rec


def build_dataset(work: str) -> dict:
    corpus = os.path.join(work, "corpus.txt")
    with open(os.path.join(REPO, "data", "corpus", "enwiki_sample.txt"), encoding="utf-8") as f:
        lines = f.readlines()[:2000]
    with open(corpus, "w", encoding="utf-8") as f:
        f.writelines(lines)
    shutil.copyfile(os.path.join(REPO, "data", "vocab", "vocab.txt"), f"{work}/vocab.txt")
    out = os.path.join(work, "pretrain_tfrecords")
    run(
        "build_pretraining_dataset.py",
        f"--corpus_dir={corpus}",
        f"--vocab_file={work}/vocab.txt",
        f"--output_dir={out}",
        "--max_seq_length=64",
        "--num_out_files=2",
        "--num_processes=1",
        "--seed=5",
    )
    with open(os.path.join(out, "dataset_info.json"), encoding="utf-8") as f:
        info = json.load(f)
    files = {n: sha256(os.path.join(out, n)) for n in sorted(os.listdir(out))}
    files.pop("dataset_info.json")
    return {"dataset_info": strip_volatile(info), "files": files, "corpus": sha256(corpus)}


def pretrain(work: str, **overrides) -> dict:
    hparams = {**PRETRAIN, **overrides}
    run(
        "run_pretraining.py",
        f"--data_dir={work}",
        "--model_name=electra",
        f"--hparams={json.dumps(hparams)}",
    )
    model_dir = os.path.join(work, "models", "electra")
    with open(os.path.join(model_dir, "eval_results.json"), encoding="utf-8") as f:
        evals = json.load(f)
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    kept = sorted(n[: -len(".index")] for n in os.listdir(model_dir) if n.endswith(".index"))
    return {
        "hparams": hparams,
        "eval_results": strip_volatile(evals),
        "checkpoints": kept,
        "config": hparams_of(config, PRETRAIN_KEYS),
    }


def write_task_data(work: str) -> dict:
    """DATA_DIR/finetuning_data/ for every task; the sha256 of each file."""
    data = os.path.join(work, "finetuning_data")
    shutil.copytree(os.path.join(REPO, "data", "sst_polarity"), os.path.join(data, "sst"))
    for task in ("sts", "chunk"):
        shutil.copytree(
            os.path.join(REPO, "tests", "data", "finetune", task), os.path.join(data, task)
        )
    os.makedirs(os.path.join(data, "squadv1"))
    for split in ("train", "dev"):
        shutil.copyfile(
            os.path.join(REPO, "tests", "data", "qa", "squad_v1_train.json"),
            os.path.join(data, "squadv1", f"{split}.json"),
        )
    # `score`: a custom regression task, sentence pairs scored by their labels' sum
    with open(os.path.join(REPO, "data", "sst_polarity", "train.tsv"), encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:25]
    os.makedirs(os.path.join(data, "score"))
    pairs = [(a[0], b[0], float(a[1]) + float(b[1])) for a, b in zip(rows, rows[1:] + rows[:1])]
    for split, part in (("train", pairs[:16]), ("dev", pairs[16:])):
        with open(os.path.join(data, "score", f"{split}.tsv"), "w", encoding="utf-8") as f:
            f.writelines(f"{s}\t{a}\t{b}\n" for a, b, s in part)
    with open(os.path.join(data, "score", "task.json"), "w", encoding="utf-8") as f:
        json.dump(SCORE_TASK, f)
    return {
        os.path.relpath(os.path.join(d, n), data): sha256(os.path.join(d, n))
        for d, _, names in sorted(os.walk(data))
        for n in sorted(names)
    }


def finetune(work: str, name: str) -> dict:
    hparams = {**FINETUNE, **TASKS[name]}
    run(
        "run_finetuning.py",
        f"--data_dir={work}",
        "--model_name=electra",
        f"--hparams={json.dumps(hparams)}",
    )
    results = "results_random_init" if hparams.get("random_init") else "results"
    results_dir = os.path.join(work, "models", "electra", results)
    with open(os.path.join(results_dir, f"{name}.json"), encoding="utf-8") as f:
        results = json.load(f)
    config = results.pop("config", {})
    files = {
        n: file_record(os.path.join(results_dir, n))
        for n in sorted(os.listdir(results_dir))
        if n.startswith(f"{name}_")
    }
    return {
        "hparams": hparams,
        "results": strip_volatile(results),
        "config": hparams_of(config, FINETUNE_KEYS),
        "files": files,
    }


def record() -> dict:
    work = tempfile.mkdtemp(prefix="behaviour_")
    steps = [
        ("dataset", build_dataset),
        ("pretrain", pretrain),
        ("pretrain_resume", lambda w: pretrain(w, num_train_steps=40)),
        *((f"finetune_{t}", lambda w, t=t: finetune(w, t)) for t in TASKS),
    ]
    runs, start = {}, time.time()
    task_data = write_task_data(work)
    for i, (name, step) in enumerate(steps, 1):
        t0 = time.time()
        runs[name] = step(work)
        print(f"[{i}/{len(steps)}] {name}: {time.time() - t0:.1f}s", flush=True)
    runs = json.loads(json.dumps(runs).replace(work, "<work>"))
    shutil.rmtree(work)
    print(f"all runs: {time.time() - start:.0f}s", flush=True)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    return {"commit": commit, "cpu": cpu_model(), "task_data": task_data, "runs": runs}


def differences(old, new, where: str = "") -> list:
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for k in sorted(set(old) | set(new)):
            if k not in new:
                out.append(f"{where}/{k}: only in the record")
            elif k not in old:
                out.append(f"{where}/{k}: new (not in the record): {json.dumps(new[k])[:200]}")
            else:
                out += differences(old[k], new[k], f"{where}/{k}")
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [
            d for i, (a, b) in enumerate(zip(old, new)) for d in differences(a, b, f"{where}[{i}]")
        ]
    if type(old) is not type(new) or old != new:
        return [f"{where}: {json.dumps(old)[:200]} -> {json.dumps(new)[:200]}"]
    return []


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--record", metavar="OUT.json", help="write this checkout's record")
    p.add_argument("--compare", metavar="RECORD.json", help="compare this checkout with a record")
    a = p.parse_args()
    if not (a.record or a.compare):
        p.error("give --record OUT.json and/or --compare RECORD.json")
    old = None
    if a.compare:
        with open(a.compare, encoding="utf-8") as f:
            old = json.load(f)
    new = record()
    if a.record:
        with open(a.record, "w", encoding="utf-8") as f:
            json.dump(new, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"behaviour: recorded {len(new['runs'])} runs to {a.record} ({new['cpu']})")
    if old is None:
        return 0
    if old["cpu"] != new["cpu"]:
        print(f"warning: recorded on {old['cpu']!r}, this CPU is {new['cpu']!r}: floats may differ")
    diffs = differences(
        {k: old[k] for k in ("task_data", "runs")}, {k: new[k] for k in ("task_data", "runs")}
    )
    if diffs:
        print(f"behaviour: {len(diffs)} difference(s) from {old['commit']}:")
        for d in diffs:
            print("  " + d)
        return 1
    print(f"behaviour: {len(new['runs'])} runs identical to {old['commit']} ({new['cpu']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
