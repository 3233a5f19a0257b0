"""Statistics, tables and plots of experiments/transfer.py.

Every arm is fine-tuned with the same seeds, and seed s gives every arm the same label subset and
data order, so a comparison is paired twice: the difference is the mean over seeds of (arm A's
dev accuracy - arm B's) with seed s against seed s, and its 95% interval comes from a bootstrap
that resamples the seed indices and the dev sentences jointly (one draw of each per replicate,
applied to both arms).
"""

import json
import os
from typing import Any, Dict, List, Optional

import numpy as np

ARM_LABELS = {
    "random_init": "random init (no pretraining)",
    "electra": "ELECTRA, all layers loaded",
    "mlm": "masked LM, all layers loaded",
    "electra_embeddings": "ELECTRA embeddings only (diagnostic)",
}


def paired_difference(a: np.ndarray, b: np.ndarray, reps: int, seed: int = 0) -> Dict[str, Any]:
    """a, b: [seeds, sentences] 0/1 with row s of each from seed s. Mean over seeds of the
    per-seed accuracy difference (points) and its 95% interval (seeds and sentences resampled
    jointly)."""
    if a.shape != b.shape:
        raise ValueError(f"paired arms need the same seeds and sentences: {a.shape} vs {b.shape}")
    d = a - b
    s, n = d.shape
    rng = np.random.default_rng(seed)
    stats = np.empty(reps)
    for r in range(reps):
        stats[r] = d[rng.integers(0, s, s)][:, rng.integers(0, n, n)].mean()
    lo, hi = np.percentile(stats, [2.5, 97.5]) * 100.0
    return {"mean_diff": float(d.mean() * 100.0), "ci95": [float(lo), float(hi)],
            "seeds": int(s)}  # fmt: skip


def mean_interval(c: np.ndarray, reps: int, seed: int = 0) -> List[float]:
    """95% interval of the mean accuracy over seeds (seeds and sentences resampled)."""
    rng = np.random.default_rng(seed)
    s, n = c.shape
    stats = [c[rng.integers(0, s, s)][:, rng.integers(0, n, n)].mean() for _ in range(reps)]
    return [float(x) for x in np.percentile(stats, [2.5, 97.5]) * 100.0]


def cells(results: List[Dict[str, Any]]) -> Dict[tuple, Dict[int, Dict[str, Any]]]:
    """(arm, pretrained run, N) -> {seed: run}, dev runs only."""
    out: Dict[tuple, Dict[int, Dict[str, Any]]] = {}
    for r in results:
        if r["split"] == "dev":
            out.setdefault((r["arm"], r["pretrained"], r["n"]), {})[r["seed"]] = r
    return out


def matrix(cell: Dict[int, Dict[str, Any]], seeds: List[int]) -> np.ndarray:
    return np.array([[ch == "1" for ch in cell[s]["correct"]] for s in seeds], np.float64)


def summarise(results, pretraining, selection, plan, reps: int, dev_size: int) -> Dict[str, Any]:
    """The summary (transfer_summary.json's keys) plus every comparison and the budget series."""
    by = cells(results)
    largest = {}
    for name, p in plan.items():
        if p["budget"] == max(
            q["budget"] for q in plan.values() if q["objective"] == p["objective"]
        ):
            largest[p["objective"]] = name
    counts = sorted({r["n"] for r in results if r["split"] == "dev"},
                    key=lambda n: float("inf") if n == "all" else int(n))  # fmt: skip
    primary = {"random_init": largest.get("electra"), "electra": largest.get("electra"),
               "mlm": largest.get("mlm")}  # fmt: skip
    arms, paired, detail = {}, {}, {}
    for arm, pt in primary.items():
        if pt is None:
            continue
        flops = 0.0 if arm == "random_init" else plan[pt]["train_flops_real"]
        arms[arm] = {"train_flops": flops, "by_label_count": {}}
        for n in counts:
            cell = by.get((arm, pt, n))
            if cell:
                seeds = sorted(cell)
                arms[arm]["by_label_count"][n] = {
                    "dev_accuracy_per_seed": [cell[s]["accuracy"] for s in seeds],
                    "seeds": seeds,
                    "mean": float(np.mean([cell[s]["accuracy"] for s in seeds])),
                    "ci95": mean_interval(matrix(cell, seeds), reps),
                }
        if not arms[arm]["by_label_count"]:  # planned, not fine-tuned (a partial report)
            del arms[arm]
    pairs = [("electra", "random_init"), ("mlm", "random_init"), ("electra", "mlm")]
    for a, b in pairs:
        if a not in arms or b not in arms:
            continue
        key = f"{a}_vs_{b}"
        for n in counts:
            ca, cb = by.get((a, primary[a], n)), by.get((b, primary[b], n))
            if ca and cb:
                seeds = sorted(set(ca) & set(cb))
                paired.setdefault(key, {})[n] = paired_difference(matrix(ca, seeds),
                                                                  matrix(cb, seeds), reps)  # fmt: skip
    # the budget series at N = 1,000 and the embeddings-only diagnostic, against random init
    base = by.get(("random_init", primary["random_init"], "1000"))
    series = []
    for name, p in sorted(plan.items(), key=lambda kv: (kv[1]["objective"], kv[1]["budget"])):
        cell = by.get((p["objective"], name, "1000"))
        row = {"run": name, "objective": p["objective"], "train_flops_real": p["train_flops_real"],
               "train_flops_paper": p["steps"] * p["paper_flops_per_step"], "steps": p["steps"],
               "heldout": (pretraining.get(name) or {}).get("heldout"),
               "pretrain_seconds": (pretraining.get(name) or {}).get("train_seconds")}  # fmt: skip
        if cell:
            seeds = sorted(cell)
            row["dev_accuracy_per_seed"] = [cell[s]["accuracy"] for s in seeds]
            if base:
                common = sorted(set(cell) & set(base))
                row["vs_random_init"] = paired_difference(
                    matrix(cell, common), matrix(base, common), reps
                )
        series.append(row)
    emb = by.get(("electra_embeddings", primary["electra"], "1000"))
    if emb and base:
        common = sorted(set(emb) & set(base))
        detail["electra_embeddings_vs_random_init_n1000"] = paired_difference(
            matrix(emb, common), matrix(base, common), reps)  # fmt: skip
    summary = {"dev_size": dev_size, "label_counts": [int(n) if n != "all" else n for n in counts],
               "arms": {a: {"train_flops": v["train_flops"], "by_label_count": {
                   n: {"dev_accuracy_per_seed": c["dev_accuracy_per_seed"]}
                   for n, c in v["by_label_count"].items()}} for a, v in arms.items()},
               "paired": {k: v for k, v in paired.items() if k.endswith("_vs_random_init")}}  # fmt: skip
    full = {"arms": arms, "paired": paired, "budget_series": series, "diagnostics": detail,
            "selection": {k: selection[k] for k in ("grid", "chosen", "base", "label_count", "seeds")}}  # fmt: skip
    return {"summary": summary, "full": full}


def _ci(ci) -> str:
    return f"[{ci[0]:+.1f}, {ci[1]:+.1f}]"


def markdown(full: Dict[str, Any]) -> str:
    lines = ["# Transfer: pretrained vs randomly initialised encoders on movie sentiment", "",
             "Dev accuracy (%), mean over seeds with a 95% interval; differences are means of "
             "per-seed paired differences (points) with a 95% bootstrap interval over seeds and "
             "dev sentences.", "", "| arm | " + " | ".join(f"N = {n}" for n in
             next(iter(full["arms"].values()))["by_label_count"]) + " |", "|---|" + "---|" *
             len(next(iter(full["arms"].values()))["by_label_count"])]  # fmt: skip
    for arm, v in full["arms"].items():
        row = [f"{c['mean']:.1f} {_ci([x - 0 for x in c['ci95']]).replace('+', '')}"
               for c in v["by_label_count"].values()]  # fmt: skip
        lines.append(f"| {ARM_LABELS[arm]} | " + " | ".join(row) + " |")
    lines += ["", "| comparison | N | difference | 95% interval | seeds |", "|---|---|---|---|---|"]
    for key, by_n in full["paired"].items():
        for n, d in by_n.items():
            lines.append(
                f"| {key} | {n} | {d['mean_diff']:+.2f} | {_ci(d['ci95'])} | {d['seeds']} |"
            )
    lines += ["", "Budget series (N = 1,000; each budget its own completed schedule):", "",
              "| run | real FLOPs | held-out MLM acc | held-out disc AUC | vs random init |",
              "|---|---|---|---|---|"]  # fmt: skip
    for r in full["budget_series"]:
        h = r.get("heldout") or {}
        vs = r.get("vs_random_init")
        shown = f"{vs['mean_diff']:+.2f} {_ci(vs['ci95'])}" if vs else ""
        mlm_acc, auc = (
            f"{h[k]:.3f}" if k in h else "—" for k in ("masked_lm_accuracy", "disc_auc")
        )
        lines.append(f"| {r['run']} | {r['train_flops_real']:.2e} | {mlm_acc} | {auc} | {shown} |")
    for k, d in full["diagnostics"].items():
        lines.append(f"\n{k}: {d['mean_diff']:+.2f} {_ci(d['ci95'])} ({d['seeds']} seeds)")
    lines += ["", f"Chosen fine-tuning hparams (grid on the validation split, N = "
              f"{full['selection']['label_count']}, {full['selection']['seeds']} seeds): "
              + "; ".join(f"{a}: {h}" for a, h in full["selection"]["chosen"].items())]  # fmt: skip
    return "\n".join(lines) + "\n"


def plot(full: Dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(15, 4.5))
    for arm, v in full["arms"].items():
        ns = list(v["by_label_count"])
        xs = np.arange(len(ns))
        means = [v["by_label_count"][n]["mean"] for n in ns]
        lo = [means[i] - v["by_label_count"][n]["ci95"][0] for i, n in enumerate(ns)]
        hi = [v["by_label_count"][n]["ci95"][1] - means[i] for i, n in enumerate(ns)]
        ax1.errorbar(xs, means, yerr=[lo, hi], marker="o", capsize=3, label=ARM_LABELS[arm])
        ax1.set_xticks(xs, [str(n) for n in ns])
    ax1.set(xlabel="labelled training sentences", ylabel="dev accuracy (%)",
            title="Accuracy vs labels (95% intervals)")  # fmt: skip
    ax1.legend(fontsize=8)
    flops_plotted = {ax2: [], ax3: []}
    for obj in sorted({r["objective"] for r in full["budget_series"]}):
        rows = [r for r in full["budget_series"] if r["objective"] == obj and "vs_random_init" in r]
        if rows:
            x = [r["train_flops_real"] for r in rows]
            y = [r["vs_random_init"]["mean_diff"] for r in rows]
            err = [[yy - r["vs_random_init"]["ci95"][0] for yy, r in zip(y, rows)],
                   [r["vs_random_init"]["ci95"][1] - yy for yy, r in zip(y, rows)]]  # fmt: skip
            ax2.errorbar(x, y, yerr=err, marker="o", capsize=3, label=ARM_LABELS.get(obj, obj))
            flops_plotted[ax2] += x
        held = [r for r in full["budget_series"] if r["objective"] == obj and r.get("heldout")]
        if held:
            held_flops = [r["train_flops_real"] for r in held]
            flops_plotted[ax3] += held_flops
            ax3.plot(held_flops, [r["heldout"].get("masked_lm_accuracy") for r in held], marker="o",
                     label=f"{obj}: masked-LM accuracy")  # fmt: skip
            if obj == "electra":
                ax3.plot(held_flops, [r["heldout"].get("disc_auc") for r in held], marker="s",
                         label="electra: discriminator AUC")  # fmt: skip
    ax2.axhline(0, color="grey", lw=0.8)
    ax2.set(xscale="log", xlabel="pretraining FLOPs (real)", ylabel="vs random init (points)",
            title="N = 1,000: gain over random init")  # fmt: skip
    ax3.set(xscale="log", xlabel="pretraining FLOPs (real)", title="Held-out pretraining metrics")
    for ax, x in flops_plotted.items():
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
        # one budget only (FLOPs equal to a few digits): a log axis that narrow labels its
        # ticks unreadably, so show the decade around the point
        if x and max(x) / min(x) < 2:
            ax.set_xlim(min(x) / 3, max(x) * 3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_outputs(out_dir: str, results, pretraining, selection, plan, reps: int,
                  dev_size: int) -> Optional[str]:  # fmt: skip
    os.makedirs(out_dir, exist_ok=True)
    s = summarise(results, pretraining, selection, plan, reps, dev_size)
    _write(os.path.join(out_dir, "transfer.json"), {**s["full"], "runs": results,
                                                     "pretraining": pretraining, "plan": plan})  # fmt: skip
    _write(os.path.join(out_dir, "transfer_summary.json"), s["summary"])
    with open(os.path.join(out_dir, "transfer.md"), "w", encoding="utf-8") as f:
        f.write(markdown(s["full"]))
    if s["full"]["arms"]:
        plot(s["full"], os.path.join(out_dir, "transfer.png"))
    return None


def write_recipes(
    recipes_dir: str, base: Dict[str, Any], chosen: Dict[str, Dict[str, Any]]
) -> None:
    """finetune_movie.json (the pretrained arm: ELECTRA's choice) and
    finetune_movie_random_init.json, the shared settings plus each arm's grid point."""
    shared = {k: v for k, v in base.items() if k not in ("num_trials", "log_every_steps")}
    for name, arm in (
        ("finetune_movie.json", "electra"),
        ("finetune_movie_random_init.json", "random_init"),
    ):
        recipe = {**shared, **chosen[arm], "num_trials": 3, "seed": 0}
        if arm == "random_init":
            recipe["random_init"] = True
        _write(os.path.join(recipes_dir, name), recipe)


def _write(path: str, obj: Any) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")
