"""Fine-tuning quality by precision: `run_finetuning.py` from the committed 1e14-FLOP ELECTRA
encoder (data/demo/electra_1e14) at float32 and the two mixed precisions, the same seeds for
each: is 16-bit fine-tuning within seed noise of float32? One task kind per run (`--task`):

  * `movie` (classification, accuracy): 1,000 labels drawn with a fixed seed from the bundled
    movie training sentences, scored on the 1,250 dev sentences; 10 epochs, lr 3e-4 without
    layer-wise decay, mean pooling, length 64;
  * `tagging` (span F1): a CoNLL-format custom task made here from the bundled Wikipedia sample:
    every number is a NUM span, every run of capitalised words past a sentence's first word an
    ENT span; the tokenizer lower-cases, so the model must find them from the words and their
    context; articles split between train (2,000 sentences) and dev (500), 3 epochs, length 128;
  * `qa` (SQuAD 1.1 F1): `scripts/make_demo_squad.py --version=v1.1 --sentences_per_context=2`
    (2,000 training questions, 300 dev, dev articles unseen), 10 epochs at lr 1e-3, length 128.

    python bench/finetune_precision.py [--task=movie] [--seeds=3] [--epochs=E]
        [--precisions=float32,mixed_bfloat16,mixed_float16]

Prints one JSON line, then a table: each precision's score per seed, the mean, and the mean of its
per-seed differences from float32 beside float32's own seed-to-seed spread. Each run is one trial
in graph mode (XLA ignores the dropout seed); the seeds pair the runs (the same data order, head
initialisation and dropout masks where the precision allows).
"""

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from electra_tf import data_layout

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the demo's encoder (the in-domain experiment's, from count vectors); the figures in
# docs/FINETUNING.md came from the earlier experiments/checkpoints/pt_electra_1e14, whose weights
# are in git history (experiments/README.md, "Model weights")
ENCODER = os.path.join(REPO, "data", "demo", "electra_1e14")
MOVIES = os.path.join(REPO, "data", "movie_sentiment")
CORPUS = os.path.join(REPO, "data", "corpus", "enwiki_sample.txt")
COMMON = {
    "train_batch_size": 32,
    "learning_rate": 3e-4,
    "layerwise_lr_decay": 0.0,
    "jit_compile": False,
    "log_every_steps": 1000,
}
# task -> (its name in task_names, the dev metric, its hparams)
TASKS = {
    "movie": ("sst", "accuracy", {"max_seq_length": 64, "num_train_epochs": 10,
                                  "classifier_pooling": "mean"}),
    "tagging": ("wiki_entities", "f1", {"max_seq_length": 128, "num_train_epochs": 3}),
    "qa": ("squadv1", "f1", {"max_seq_length": 128, "num_train_epochs": 10,
                             "learning_rate": 1e-3}),
}  # fmt: skip
_TOKEN = re.compile(r"\w+(?:[-'.]\w+)*|[^\w\s]")
_CAPITALISED = re.compile(r"^[A-Z][a-zA-Z-]*$")
_NUMBER = re.compile(r"^\d[\d,.]*$")


def entity_tags(sentence: str) -> list:
    """(word, BIO tag) for one sentence: NUM for a number, ENT for a run of capitalised words
    that does not start the sentence (its first word is capitalised whatever it is)."""
    words = _TOKEN.findall(sentence)
    tags = []
    for i, w in enumerate(words):
        if _NUMBER.match(w):
            tags.append("B-NUM")
        elif i > 0 and _CAPITALISED.match(w):
            tags.append("I-ENT" if tags and tags[-1].endswith("ENT") else "B-ENT")
        else:
            tags.append("O")
    return list(zip(words, tags))


def tagging_dir(root: str, train_sentences: int = 2000, dev_sentences: int = 500) -> None:
    """DATA_DIR/finetuning_data/wiki_entities: task.json, train.txt and dev.txt (CoNLL), from
    whole articles of the Wikipedia sample (a seeded split: dev articles are unseen)."""
    from electra_tf.pretraining_data.corpus import read_documents

    articles = read_documents(CORPUS)
    order = list(range(len(articles)))
    random.Random(0).shuffle(order)
    task = data_layout.finetuning_data_dir(root, TASKS["tagging"][0])
    os.makedirs(task)
    with open(os.path.join(task, "task.json"), "w", encoding="utf-8") as f:
        json.dump({"type": "tagging", "format": "conll", "metrics": ["span_f1"]}, f)
    budget = {"dev.txt": dev_sentences, "train.txt": train_sentences}
    files = {name: open(os.path.join(task, name), "w", encoding="utf-8") for name in budget}
    name = "dev.txt"
    for i in order:
        if budget[name] <= 0:
            if name == "train.txt":
                break
            name = "train.txt"
        for sentence in articles[i][: budget[name]]:
            pairs = entity_tags(sentence)
            if len(pairs) > 2:
                files[name].write("".join(f"{w} {t}\n" for w, t in pairs) + "\n")
                budget[name] -= 1
    for f in files.values():
        f.close()


def qa_dir(root: str) -> None:
    """DATA_DIR/finetuning_data/squadv1 from the bundled Wikipedia sample."""
    out = data_layout.finetuning_data_dir(root, TASKS["qa"][0])
    p = subprocess.run(
        [sys.executable, os.path.join(REPO, "scripts", "make_demo_squad.py"), f"--corpus={CORPUS}",
         f"--output_dir={out}", "--version=v1.1", "--max_train=2000", "--max_dev=300",
         "--sentences_per_context=2"],
        cwd=REPO, capture_output=True, text=True,
    )  # fmt: skip
    if p.returncode:
        sys.exit(f"error: make_demo_squad.py failed:\n{p.stderr[-2000:]}")


def movie_dir(root: str, labels: int) -> None:
    """DATA_DIR/finetuning_data/sst: `labels` training sentences (a fixed seeded draw), the dev
    sentences as dev."""
    with open(os.path.join(MOVIES, "train.tsv"), encoding="utf-8") as f:
        header, *rows = [line for line in f.read().splitlines() if line.strip()]
    random.Random(0).shuffle(rows)
    task = data_layout.finetuning_data_dir(root, "sst")
    os.makedirs(task)
    with open(os.path.join(task, "train.tsv"), "w", encoding="utf-8") as f:
        f.write("\n".join([header, *rows[:labels]]) + "\n")
    shutil.copy(os.path.join(MOVIES, "dev.tsv"), os.path.join(task, "dev.tsv"))


def finetune(data_dir: str, task: str, precision: str, seed: int, epochs=None) -> float:
    name_in_run, metric, hparams = TASKS[task]
    hp = {**COMMON, **hparams, "task_names": [name_in_run], "precision": precision, "seed": seed,
          "init_checkpoint": ENCODER}  # fmt: skip
    if epochs is not None:
        hp["num_train_epochs"] = epochs
    name = f"{precision}_s{seed}"
    t = time.time()
    p = subprocess.run(
        [sys.executable, os.path.join(REPO, "run_finetuning.py"), f"--data_dir={data_dir}",
         f"--model_name={name}", f"--hparams={json.dumps(hp)}"],
        cwd=REPO, capture_output=True, text=True,
    )  # fmt: skip
    if p.returncode:
        sys.exit(f"error: {name}: run_finetuning.py failed:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    results = os.path.join(data_layout.model_dir(data_dir, name), "results", f"{name_in_run}.json")
    with open(results, encoding="utf-8") as f:
        score = json.load(f)["trials"][0]["dev"][metric]
    print(f"{task} {precision} seed {seed}: {metric} {score:.2f} ({time.time() - t:.0f} s)",
          flush=True)  # fmt: skip
    return score


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", choices=sorted(TASKS), default="movie")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--labels", type=int, default=1000, help="movie: training sentences")
    ap.add_argument("--epochs", type=float, default=None, help="default: the task's (above)")
    ap.add_argument("--precisions", default="float32,mixed_bfloat16,mixed_float16")
    ap.add_argument("--json_only", action="store_true")
    a = ap.parse_args()
    precisions = a.precisions.split(",")
    if precisions[0] != "float32":
        sys.exit("error: --precisions must start with float32 (the reference)")
    root = tempfile.mkdtemp(prefix="ft_precision_")
    if a.task == "movie":
        movie_dir(root, a.labels)
    else:
        (tagging_dir if a.task == "tagging" else qa_dir)(root)
    seeds = range(1, a.seeds + 1)
    acc = {p: [finetune(root, a.task, p, s, a.epochs) for s in seeds] for p in precisions}
    base = acc["float32"]
    metric = TASKS[a.task][1]
    epochs = a.epochs or TASKS[a.task][2]["num_train_epochs"]
    out = {"task": a.task, "metric": metric, "epochs": epochs, "seeds": list(seeds),
           "scores": acc, "cpu": _cpu()}  # fmt: skip
    if a.task == "movie":
        out.update(labels=a.labels, dev_size=1250)
    out["mean_diff_vs_float32"] = {
        p: statistics.mean(x - y for x, y in zip(v, base)) for p, v in acc.items()
    }
    print(json.dumps(out))
    if a.json_only:
        return
    spread = statistics.stdev(base) if len(base) > 1 else float("nan")
    print(f"\n{a.task} ({metric}, {epochs:g} epochs), seeds {out['seeds']} ({out['cpu']})")
    print(f"| precision | {metric} per seed | mean | mean paired diff vs float32 |")
    print("|---|---|---|---|")
    for p, v in acc.items():
        d = out["mean_diff_vs_float32"][p]
        print(f"| {p} | {', '.join(f'{x:.2f}' for x in v)} | {statistics.mean(v):.2f} | {d:+.2f} |")
    print(f"float32's seed-to-seed standard deviation: {spread:.2f}")
    shutil.rmtree(root, ignore_errors=True)


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            info = f.read()
    except OSError:
        return "unknown CPU"
    name = next((l.split(":", 1)[1].strip() for l in info.splitlines() if "model name" in l), "")
    flags = [f for f in ("amx_bf16", "avx512_bf16") if f in info]
    return f"{name} ({', '.join(flags) or 'no bf16 units'})"


if __name__ == "__main__":
    main()
