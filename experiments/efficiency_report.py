"""Statistics, tables and plots of experiments/efficiency.py.

The comparisons are differences of median dev accuracy (over fine-tuning seeds) with a 95%
bootstrap interval that resamples both the dev examples (the same draw for both arms: they are
scored on the same sentences) and each arm's seeds.
"""

import json
import os
from typing import Any, Dict, List, Optional

import numpy as np

from electra_tf import objectives

LABELS = {**objectives.LABELS, "baseline": "no pretraining (random init)"}


def correct_matrix(rows) -> np.ndarray:
    """[seeds, examples] 0/1 from the stored form: one string of "0"/"1" per seed."""
    return np.array([[ch == "1" for ch in row] for row in rows], np.float64)


def median_accuracy(correct: np.ndarray) -> float:
    """Median over seeds (rows) of the accuracy (%) over examples (columns)."""
    return float(np.median(correct.mean(axis=1)) * 100.0)


def bootstrap_median(correct: np.ndarray, reps: int, seed: int) -> List[float]:
    """95% interval of the median accuracy, resampling examples and seeds."""
    rng = np.random.default_rng(seed)
    s, n = correct.shape
    stats = []
    for _ in range(reps):
        rows = correct[rng.integers(0, s, s)][:, rng.integers(0, n, n)]
        stats.append(np.median(rows.mean(axis=1)))
    lo, hi = np.percentile(stats, [2.5, 97.5]) * 100.0
    return [float(lo), float(hi)]


def bootstrap_difference(a: np.ndarray, b: np.ndarray, reps: int, seed: int) -> Dict[str, Any]:
    """median(a) - median(b) (accuracy points) with its 95% bootstrap interval: each replicate
    draws the dev examples once (paired) and each arm's seeds separately."""
    rng = np.random.default_rng(seed)
    n = a.shape[1]
    diffs = []
    for _ in range(reps):
        idx = rng.integers(0, n, n)
        ra = a[rng.integers(0, a.shape[0], a.shape[0])][:, idx]
        rb = b[rng.integers(0, b.shape[0], b.shape[0])][:, idx]
        diffs.append(np.median(ra.mean(axis=1)) - np.median(rb.mean(axis=1)))
    lo, hi = np.percentile(diffs, [2.5, 97.5]) * 100.0
    diff = median_accuracy(a) - median_accuracy(b)
    verdict = "higher" if lo > 0 else "lower" if hi < 0 else "not significantly different"
    return {"difference": diff, "ci95": [float(lo), float(hi)], "verdict": verdict}


def comparisons(report: Dict[str, Any], reps: int = 2000) -> List[Dict[str, Any]]:
    """Each objective vs the baseline at every budget, ELECTRA vs masked LM and ELECTRA vs
    ELECTRA 15% at every budget (where both were run)."""
    runs = {(r["objective"], r["budget"]): r for r in report["runs"] if "correct" in r}
    base = next(
        (r for r in report["runs"] if r["objective"] == "baseline" and "correct" in r), None
    )
    out = []
    budgets = sorted({b for _, b in runs})
    for (obj, budget), r in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if obj == "baseline" or base is None:
            continue
        out.append(_compare(r, base, reps))
    for budget in budgets:
        for other in ("mlm", "electra_15"):
            if ("electra", budget) in runs and (other, budget) in runs:
                out.append(_compare(runs[("electra", budget)], runs[(other, budget)], reps))
    return out


def _compare(a, b, reps):
    ca, cb = correct_matrix(a["correct"]), correct_matrix(b["correct"])
    result = bootstrap_difference(
        ca, cb, reps, seed=len(a["objective"]) * 7919 + len(b["objective"])
    )
    return {
        "a": a["objective"],
        "b": b["objective"],
        "budget": a["budget"],
        "train_flops": a.get("train_flops_real"),
        **result,
    }


def summary(report: Dict[str, Any]) -> Dict[str, Any]:
    """efficiency_summary.json: exactly dev_size, baseline, objectives (accuracy in %)."""
    out: Dict[str, Any] = {"dev_size": int(report["dev_size"]), "baseline": {}, "objectives": {}}
    for r in report["runs"]:
        if "dev_accuracy_per_seed" not in r:
            continue
        if r["objective"] == "baseline":
            out["baseline"] = {"dev_accuracy_per_seed": r["dev_accuracy_per_seed"]}
            continue
        budgets = out["objectives"].setdefault(r["objective"], {"budgets": []})["budgets"]
        budgets.append(
            {
                "train_flops": float(r["train_flops_real"]),
                "dev_accuracy_per_seed": r["dev_accuracy_per_seed"],
                "heldout": r.get("heldout", {}),
            }
        )
    for obj in out["objectives"].values():
        obj["budgets"].sort(key=lambda b: b["train_flops"])
    return out


def _fmt_ci(ci) -> str:
    return f"[{ci[0]:+.1f}, {ci[1]:+.1f}]"


def markdown(report: Dict[str, Any], comps: List[Dict[str, Any]]) -> str:
    s = report["settings"]
    about_data = [f"{report['train_size']} train / {report['dev_size']} dev sentences"]
    if s.get("validation_split"):
        about_data.append(
            f"the dev set is the last {s['validation_split']} sentences of the train file, "
            "a pilot's validation split"
        )
    if s.get("recipe_overrides"):
        about_data.append(f"recipe overrides {json.dumps(s['recipe_overrides'])}")
    lines = [
        "# Compute efficiency: ELECTRA vs masked LM at equal pretraining FLOPs",
        "",
        f"Recipe `{s['recipe']}` (pretraining) and `{s['finetune_recipe']}` (fine-tuning); "
        f"largest budget {s['budget_flops']:.3g} FLOPs of real arithmetic per objective "
        "(lookups as gathers, backward = 2x forward; the paper's convention beside it); "
        f"checkpoints at {', '.join(str(b) for b in s['budgets'])} of it. Fine-tuning: movie "
        f"sentiment ({'; '.join(about_data)}), "
        f"{s['seeds']} seeds per point; dev accuracy (%); 95% intervals by bootstrap over dev "
        "sentences and seeds.",
        "",
        "| objective | budget | steps | FLOPs (real) | FLOPs (paper) | dev acc median | 95% CI "
        "| per seed | held-out masked-LM acc | held-out disc AUC |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(
        report["runs"], key=lambda r: (r["objective"] == "baseline", r["objective"], r["budget"])
    ):
        if "dev_accuracy_per_seed" not in r:
            continue
        h = r.get("heldout", {})
        mlm = h.get("masked_lm_accuracy")
        auc = h.get("disc_auc")
        lines.append(
            f"| {LABELS.get(r['objective'], r['objective'])} | {r['budget']:g} | {r['steps']} | "
            f"{r['train_flops_real']:.3g} | {r['train_flops_paper']:.3g} | "
            f"{r['median']:.1f} | {_fmt_ci(r['ci95']).replace('+', '')} | "
            f"{', '.join(f'{a:.1f}' for a in r['dev_accuracy_per_seed'])} | "
            f"{'' if mlm is None else f'{mlm:.3f}'} | {'' if auc is None else f'{auc:.3f}'} |"
        )
    lines += [
        "",
        "| comparison | budget | difference of medians (points) | 95% CI | verdict |",
        "|---|---|---|---|---|",
    ]
    for c in comps:
        lines.append(
            f"| {LABELS[c['a']]} vs {LABELS[c['b']]} | {c['budget']:g} | {c['difference']:+.1f} | "
            f"{_fmt_ci(c['ci95'])} | {c['verdict']} |"
        )
    lines += ["", *words(comps), ""]
    return "\n".join(lines)


def words(comps: List[Dict[str, Any]]) -> List[str]:
    """What is significant, in sentences."""
    out = []
    for c in comps:
        a, b = LABELS[c["a"]], LABELS[c["b"]]
        if c["verdict"] == "not significantly different":
            out.append(
                f"- At budget {c['budget']:g}, {a} and {b} are not significantly different "
                f"({c['difference']:+.1f} points, 95% CI {_fmt_ci(c['ci95'])})."
            )
        else:
            out.append(
                f"- At budget {c['budget']:g}, {a} is significantly {c['verdict']} than {b} "
                f"({c['difference']:+.1f} points, 95% CI {_fmt_ci(c['ci95'])})."
            )
    return out


def plot(report: Dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.6))
    runs = [r for r in report["runs"] if "dev_accuracy_per_seed" in r]
    objectives = [
        o for o in report["settings"]["objectives"] if any(r["objective"] == o for r in runs)
    ]
    for k, obj in enumerate(objectives):
        rs = sorted((r for r in runs if r["objective"] == obj), key=lambda r: r["train_flops_real"])
        shift = 1.0 + 0.015 * (k - (len(objectives) - 1) / 2)  # keeps equal-FLOP bars apart
        x = [r["train_flops_real"] * shift for r in rs]
        y = [r["median"] for r in rs]
        err = [[r["median"] - r["ci95"][0] for r in rs], [r["ci95"][1] - r["median"] for r in rs]]
        color = f"C{k}"
        ax.errorbar(x, y, yerr=err, marker="o", capsize=3, color=color, label=LABELS.get(obj, obj))
        heldout = [r.get("heldout", {}) for r in rs]
        xs = [r["train_flops_real"] for r in rs]
        ax2.plot(xs, [h.get("masked_lm_accuracy", np.nan) for h in heldout], marker="o",
                 color=color, label=f"{LABELS.get(obj, obj)}: masked-LM acc")  # fmt: skip
        if any("disc_auc" in h for h in heldout):
            ax2.plot(xs, [h.get("disc_auc", np.nan) for h in heldout], marker="s", ls="--",
                     color=color, label=f"{LABELS.get(obj, obj)}: disc AUC")  # fmt: skip
    base = next((r for r in runs if r["objective"] == "baseline"), None)
    if base is not None:
        ax.axhspan(base["ci95"][0], base["ci95"][1], color="grey", alpha=0.2)
        ax.axhline(base["median"], color="grey", ls="--", label=LABELS["baseline"])
    ax.set_xscale("log")
    ax.set_xlabel("pretraining FLOPs (real arithmetic; points offset slightly)")
    split = report["settings"].get("validation_split", 0)
    scored_on = f"validation split of {split}" if split else "dev"
    ax.set_ylabel(f"movie {scored_on} accuracy (%): median, 95% CI")
    ax.set_title("fine-tuned on movie sentiment")
    ax.grid(alpha=0.3)
    _legend(ax, fontsize=7)
    ax2.set_xscale("log")
    ax2.set_xlabel("pretraining FLOPs (real arithmetic)")
    ax2.set_ylabel("held-out pretraining metric")
    ax2.set_title("held-out shard of the pretraining text")
    ax2.grid(alpha=0.3)
    _legend(ax2, fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _legend(ax, fontsize: int) -> None:
    # interim outputs (before the first fine-tuning ends) have nothing labelled yet, and an
    # empty legend makes matplotlib warn
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=fontsize)


def write_outputs(out_dir: str, report: Dict[str, Any], reps: int = 2000) -> Optional[str]:
    """efficiency.json, efficiency_summary.json, efficiency.md, efficiency.png; returns a note
    when the plot could not be drawn (matplotlib missing)."""
    os.makedirs(out_dir, exist_ok=True)
    for r in report["runs"]:
        if "correct" in r:
            c = correct_matrix(r["correct"])
            r["dev_accuracy_per_seed"] = [float(x) for x in c.mean(axis=1) * 100.0]
            r["median"] = median_accuracy(c)
            r["ci95"] = bootstrap_median(c, reps, seed=17)
    comps = comparisons(report, reps)
    _write(os.path.join(out_dir, "efficiency.json"), {**report, "comparisons": comps})
    _write(os.path.join(out_dir, "efficiency_summary.json"), summary(report))
    with open(os.path.join(out_dir, "efficiency.md"), "w", encoding="utf-8") as f:
        f.write(markdown(report, comps))
    try:
        plot(report, os.path.join(out_dir, "efficiency.png"))
    except ImportError:
        return "matplotlib is not installed: no plot (pip install -r experiments/requirements.txt)"
    return None


def _write(path: str, obj: Any) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)
