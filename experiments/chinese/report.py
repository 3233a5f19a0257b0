"""Scores, statistics, tables and the plot of the Chinese transfer experiment (`transfer.py`).

A fine-tuning's per-example result is "1"/"0" per review for sentiment (accuracy) and
"correct/predicted/gold" span counts per sentence for tagging (span F1 over the summed counts).
Comparisons are paired by seed (seed s gives every arm the same labelled subset and data order):
the difference is the mean over seeds of the per-seed score difference, its 95% interval a
bootstrap that resamples seeds and dev examples jointly, applied to both arms; for span F1 each
replicate recomputes each seed's F1 from the resampled sentences' summed counts (for accuracy it
is `transfer_report.paired_difference`).
"""

import json
import os
from typing import Any, Dict, List

import numpy as np

from electra_tf import data_layout
from electra_tf.finetune.tagging.scorer import get_span_labels
from experiments import transfer_report
from experiments.chinese import tasks
from experiments.finetune_results import correct_per_seed, dev_labels

ARM_LABELS = {
    "random_init": "random init (no pretraining)",
    "electra": "ELECTRA, whole-word masking, all layers",
    "electra_embeddings": "ELECTRA's embeddings under fresh layers",
    "mlm": "masked LM, whole-word masking, all layers",
    "electra_char": "ELECTRA, character masking, all layers",
}
# (a, b): the comparisons reported, a - b; the claims are the first two on tagging at 300, 1,000
PAIRS = [("electra", "random_init"), ("electra", "electra_embeddings"), ("electra", "mlm"),
         ("mlm", "random_init"), ("electra_embeddings", "random_init"),
         ("electra", "electra_char")]  # fmt: skip
CLAIMS = [(tasks.TAGGING, n, pair) for n in ("300", "1000") for pair in PAIRS[:2]]


def discriminator_baseline(metrics: Dict[str, float]) -> Dict[str, float] | None:
    """The share of replaced tokens in a pretraining eval and the loss of the best constant
    guess (that share's binary entropy, nats), from the eval's discriminator accuracy A,
    precision P and recall R (one token set): with replaced share p, true positives R * p and
    predicted positives R * p / P, so 1 - A = p * (1 + R / P - 2 R). A discriminator loss near
    the constant guess's has learned little beyond the share. None when R = 0 (p is then not
    determined by the three)."""
    if "disc_accuracy" not in metrics or not metrics.get("disc_recall"):
        return None
    a, p_, r = metrics["disc_accuracy"], metrics["disc_precision"], metrics["disc_recall"]
    share = (1.0 - a) / (1.0 + r / p_ - 2.0 * r)
    entropy = -(share * np.log(share) + (1.0 - share) * np.log(1.0 - share))
    return {"replaced_share": float(share), "constant_guess_loss": float(entropy)}


def per_example(task: str, data_dir: str, predictions: str) -> str:
    """A fine-tuning's per-example result from its dev predictions file."""
    if task == tasks.SENTIMENT:
        return correct_per_seed(os.path.dirname(predictions), dev_labels(data_dir, task), 1, task)[
            0
        ]
    gold_file = os.path.join(data_layout.finetuning_data_dir(data_dir, task), "dev.txt")
    with open(gold_file, encoding="utf-8") as f:
        gold = [[line.split("\t")[1] for line in block.splitlines()]
                for block in f.read().split("\n\n") if block.strip()]  # fmt: skip
    with open(predictions, encoding="utf-8") as f:
        pred = [line.rstrip("\n").split("\t")[1].split(" ") for line in f.readlines()[1:]]
    if len(pred) != len(gold):
        raise ValueError(f"{predictions}: {len(pred)} sentences predicted, {len(gold)} gold")
    out = []
    for g, p in zip(gold, pred):
        if len(g) != len(p):
            raise ValueError(f"{predictions}: {len(p)} tags for a sentence of {len(g)}")
        gs, ps = set(get_span_labels(g)), set(get_span_labels(p))
        out.append(f"{len(gs & ps)}/{len(ps)}/{len(gs)}")
    return " ".join(out)


def span_counts(result: str) -> np.ndarray:
    """[sentences, 3] correct, predicted, gold."""
    return np.array([[int(x) for x in s.split("/")] for s in result.split(" ")], np.int64)


def f1(counts: np.ndarray) -> np.ndarray:
    """Span F1 (points) from summed counts [..., 3]."""
    c, p, g = counts[..., 0], counts[..., 1], counts[..., 2]
    precision = np.where(p > 0, c / np.maximum(p, 1), 0.0)
    recall = np.where(g > 0, c / np.maximum(g, 1), 0.0)
    total = precision + recall
    return 100.0 * np.where(total > 0, 2 * precision * recall / np.where(total > 0, total, 1), 0.0)


def score(task: str, result: str) -> float:
    if task == tasks.SENTIMENT:
        return 100.0 * result.count("1") / len(result)
    return float(f1(span_counts(result).sum(0)))


def paired_f1_difference(a: np.ndarray, b: np.ndarray, reps: int, seed: int = 0) -> Dict[str, Any]:
    """a, b: [seeds, sentences, 3] span counts, row s of each from seed s: the mean over seeds of
    the per-seed F1 difference (points) and its 95% interval (seeds and sentences resampled
    jointly, F1 recomputed from each replicate's summed counts)."""
    if a.shape != b.shape:
        raise ValueError(f"paired arms need the same seeds and sentences: {a.shape} vs {b.shape}")
    s, n, _ = a.shape
    rng = np.random.default_rng(seed)
    stats = np.empty(reps)
    for r in range(reps):
        seeds = rng.integers(0, s, s)
        weights = np.bincount(rng.integers(0, n, n), minlength=n)  # sentences drawn, with counts
        sa = np.einsum("snk,n->sk", a[seeds], weights)
        sb = np.einsum("snk,n->sk", b[seeds], weights)
        stats[r] = (f1(sa) - f1(sb)).mean()
    lo, hi = np.percentile(stats, [2.5, 97.5])
    mean = float((f1(a.sum(1)) - f1(b.sum(1))).mean())
    return {"mean_diff": mean, "ci95": [float(lo), float(hi)], "seeds": int(s)}


def matrix(task: str, cell: Dict[int, Dict[str, Any]], seeds: List[int]) -> np.ndarray:
    if task == tasks.SENTIMENT:
        return np.array([[ch == "1" for ch in cell[s]["per_example"]] for s in seeds], np.float64)
    return np.stack([span_counts(cell[s]["per_example"]) for s in seeds])


def summarise(results, reps: int) -> Dict[str, Any]:
    cells: Dict[tuple, Dict[int, Dict[str, Any]]] = {}
    for r in results:
        cells.setdefault((r["task"], r["n"], r["arm"]), {})[r["seed"]] = r
    out: Dict[str, Any] = {"scores": {}, "paired": {}}
    for (task, n, arm), cell in sorted(cells.items()):
        seeds = sorted(cell)
        per_seed = [cell[s]["score"] for s in seeds]
        out["scores"].setdefault(task, {}).setdefault(n, {})[arm] = {
            "seeds": seeds,
            "per_seed": per_seed,
            "mean": float(np.mean(per_seed)),
        }
    for (task, n, a), cell_a in sorted(cells.items()):
        for pa, pb in PAIRS:
            cell_b = cells.get((task, n, pb))
            if pa != a or not cell_b:
                continue
            seeds = sorted(set(cell_a) & set(cell_b))
            ma, mb = matrix(task, cell_a, seeds), matrix(task, cell_b, seeds)
            if task == tasks.SENTIMENT:
                d = transfer_report.paired_difference(ma, mb, reps)
            else:
                d = paired_f1_difference(ma, mb, reps)
            d["positive_seeds"] = int(sum(cell_a[s]["score"] > cell_b[s]["score"] for s in seeds))
            out["paired"].setdefault(task, {}).setdefault(n, {})[f"{pa}_vs_{pb}"] = d
    out["claims"] = []
    for task, n, (pa, pb) in CLAIMS:
        d = out["paired"].get(task, {}).get(n, {}).get(f"{pa}_vs_{pb}")
        out["claims"].append({"task": task, "n": n, "comparison": f"{pa} - {pb}",
                              "holds": None if d is None else d["ci95"][0] > 0,
                              **(d or {})})  # fmt: skip
    return out


def _n_key(n: str) -> float:
    return float("inf") if n == "all" else int(n)


def markdown(summary, selection, pretraining) -> str:
    lines = [
        "# Chinese transfer: results (`python -m experiments.chinese.transfer --stage=report`)",
        "",
    ]
    lines += ["Tagging: span F1 (word + POS); sentiment: accuracy; dev split, mean over seeds.", ""]
    for task, by_n in summary["scores"].items():
        arms = [a for a in ARM_LABELS if any(a in v for v in by_n.values())]
        lines += [f"## {task}", "", "| N | " + " | ".join(arms) + " |",
                  "|---" * (len(arms) + 1) + "|"]  # fmt: skip
        for n in sorted(by_n, key=_n_key):
            row = [f"{by_n[n][a]['mean']:.2f} ({len(by_n[n][a]['seeds'])})" if a in by_n[n]
                   else "-" for a in arms]  # fmt: skip
            lines.append(f"| {n} | " + " | ".join(row) + " |")
        lines += ["", "| N | comparison | mean difference [95% interval] | seeds with a > b |",
                  "|---|---|---|---|"]  # fmt: skip
        for n in sorted(summary["paired"].get(task, {}), key=_n_key):
            for key, d in summary["paired"][task][n].items():
                lines.append(f"| {n} | {key.replace('_vs_', ' - ')} | {d['mean_diff']:+.2f} "
                             f"[{d['ci95'][0]:+.2f}, {d['ci95'][1]:+.2f}] | "
                             f"{d['positive_seeds']} of {d['seeds']} |")  # fmt: skip
        lines.append("")
    lines += ["## Claims (each holds when its interval lies above zero)", ""]
    for c in summary["claims"]:
        state = {None: "not run", True: "holds", False: "does not hold"}[c["holds"]]
        ci = (
            f": {c['mean_diff']:+.2f} [{c['ci95'][0]:+.2f}, {c['ci95'][1]:+.2f}]"
            if c["holds"] is not None
            else ""
        )
        lines.append(f"- {c['task']} N = {c['n']}: {c['comparison']}{ci}: **{state}**")
    lines += ["", "## Selection (validation split)", ""]
    for arm, c in selection["chosen"].items():
        lines.append(f"- {arm}: chose `{json.dumps(c['hparams'])}`")
    lines += ["", "## Pretraining", ""]
    for name, p in pretraining.items():
        secs = p.get("train_seconds")
        lines.append(f"- {name}: {p['objective']}, whole-word masking {p['whole_word_masking']}, "
                     f"{p['steps']} steps, {p['train_flops_real']:.3g} real FLOPs"
                     + (f", {secs / 60:.1f} min" if secs else "") + f" on {p.get('cpu')}")  # fmt: skip
        evals = p.get("eval_on_training_data") or {}
        base = discriminator_baseline(evals)
        if base:
            lines.append(f"  - discriminator loss {evals['disc_loss']:.3f} against "
                         f"{base['constant_guess_loss']:.3f} for a constant guess "
                         f"({100 * base['replaced_share']:.1f}% of tokens replaced); "
                         f"AUC {evals['disc_auc']:.3f}")  # fmt: skip
    return "\n".join(lines) + "\n"


def plot(summary, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(summary["scores"])
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 3.6), squeeze=False)
    for ax, task in zip(axes[0], names):
        by_n = summary["scores"][task]
        ns = sorted(by_n, key=_n_key)
        for arm in ARM_LABELS:
            pts = [(i, by_n[n][arm]["mean"]) for i, n in enumerate(ns) if arm in by_n[n]]
            if len(pts) > 1 or (pts and arm == "electra_char"):
                ax.plot(*zip(*pts), marker="o", label=ARM_LABELS[arm])
        ax.set_xticks(range(len(ns)), ns)
        ax.set_xlabel("labelled examples (N)")
        ax.set_ylabel("span F1" if task == tasks.TAGGING else "accuracy")
        ax.set_title(task)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def write(out_dir: str, results, selection, pretraining, reps: int) -> None:
    os.makedirs(out_dir, exist_ok=True)
    summary = summarise(results, reps)
    with open(os.path.join(out_dir, "summary.json"), "w", encoding="utf-8") as f:
        json.dump({**summary, "selection": selection, "pretraining": pretraining}, f, indent=1)
        f.write("\n")
    with open(os.path.join(out_dir, "README.md"), "w", encoding="utf-8") as f:
        f.write(markdown(summary, selection, pretraining))
    if summary["scores"]:
        try:
            plot(summary, os.path.join(out_dir, "chinese_transfer.png"))
        except ImportError:
            print("report: matplotlib is not installed: no plot")
