"""Compute efficiency at small scale: ELECTRA against masked-LM pretraining for equal FLOPs.

The paper's central claim (Figure 1, Table 5): for the same pretraining compute, replaced-token
detection gives a better encoder than BERT's masked LM, and most of the gain comes from learning
on every token (ELECTRA vs "ELECTRA 15%", whose discriminator loss covers the masked 15% only).

This script pretrains a tiny encoder with each objective (`electra`, `mlm`, `electra_15`,
`replace_mlm`; `all_tokens_mlm` on request) on the bundled Wikipedia sample for the SAME number of
pretraining FLOPs (this project's analytic counter, `electra_tf.objectives.pretraining_flops_per_step`:
num_train_steps = budget / FLOPs per step), keeps checkpoints at 1/3, 2/3 and all of the budget,
fine-tunes each on the bundled sentence-polarity data (`data/sst_polarity`, 150 train / 50 dev)
with several seeds, and writes:

  OUT_DIR/efficiency.json  every point: objective, steps, FLOPs, per-seed dev accuracy, spread
  OUT_DIR/efficiency.md    the table
  OUT_DIR/efficiency.png   dev accuracy against pretraining FLOPs, one curve per objective

    python experiments/efficiency.py  # defaults: 35-75 min on 2 CPU cores (idle-busy)
    python experiments/efficiency.py --scale 10 --hidden_size 128 --num_layers 4  # bigger machine

FLOPs use the paper's conventions (backward = forward) except that, by default, embedding
lookups are counted as gathers (`--flops_convention sparse`), as the graph runs them: with a 30k
vocabulary and a 64-wide model the paper's dense one-hot lookup would dominate the count and
charge ELECTRA for a generator lookup that costs nothing in practice (giving masked LM ~2x the
steps). `--flops_convention paper` uses the dense count; both are recorded for every run.

Progress goes to stdout; the JSON, table and plot are rewritten after every fine-tuning point,
so a run cut short still leaves its results. Re-running with the same --work_dir resumes
(finished pretraining and fine-tuning points are reused).
"""

import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from electra_tf import objectives  # noqa: E402
from electra_tf.errors import UserError, run_main  # noqa: E402
from electra_tf.io_utils import read_json, write_json  # noqa: E402
from electra_tf.pretraining_config import PretrainingConfig  # noqa: E402

OBJECTIVES = objectives.NAMES
LABELS = {**objectives.LABELS, "baseline": "no pretraining (1 step)"}

flags.DEFINE_float("scale", 1.0, "Multiplies the pretraining FLOP budget (bigger hardware).")
flags.DEFINE_list(
    "objectives", ["electra", "mlm", "electra_15", "replace_mlm"], "Objectives to compare."
)
flags.DEFINE_integer(
    "budget_electra_steps",
    360,
    "The budget (before --scale) is the FLOPs of this many steps of the 'electra' objective.",
)
flags.DEFINE_float("budget_flops", None, "An explicit FLOP budget (overrides the two above).")
flags.DEFINE_integer("num_checkpoints", 3, "Points along the budget (1/n, 2/n, ..., 1).")
flags.DEFINE_enum("flops_convention", "sparse", ["sparse", "paper"], "See the module doc.")
flags.DEFINE_integer("hidden_size", 64, "Discriminator hidden size.")
flags.DEFINE_integer("num_layers", 2, "Discriminator layers.")
flags.DEFINE_integer("seq_len", 64, "Pretraining and fine-tuning sequence length.")
flags.DEFINE_integer("batch_size", 16, "Pretraining batch size.")
flags.DEFINE_float("learning_rate", 1e-3, "Pretraining peak learning rate.")
flags.DEFINE_float("warmup_fraction", 0.1, "Pretraining warm-up, as a fraction of the steps.")
flags.DEFINE_float("generator_hidden_size", 0.25, "Generator width / discriminator width.")
flags.DEFINE_integer("seed", 0, "Pretraining seed (initial weights, masking).")
flags.DEFINE_bool("jit_compile", False, "XLA for pretraining (compiling costs minutes on a CPU).")
flags.DEFINE_integer("ft_trials", 3, "Fine-tuning seeds per point.")
flags.DEFINE_integer("ft_seed", 1, "Trial t uses ft_seed + t.")
flags.DEFINE_float("ft_learning_rate", 1e-3, "Fine-tuning learning rate.")
flags.DEFINE_float("ft_epochs", 10.0, "Fine-tuning epochs over the 150 training sentences.")
flags.DEFINE_integer("ft_batch_size", 16, "Fine-tuning batch size.")
flags.DEFINE_bool("baseline", True, "Also fine-tune from a 1-step checkpoint (no pretraining).")
flags.DEFINE_string(
    "pretraining_corpus",
    os.path.join(REPO, "data", "corpus"),
    "Pretraining text (default: the bundled sample).",
)
flags.DEFINE_string("out_dir", os.path.join(REPO, "experiments", "results"), "Results.")
flags.DEFINE_string("work_dir", None, "Scratch (data, checkpoints); default: a new temp dir.")
flags.DEFINE_bool("keep_work_dir", True, "Keep the work dir (checkpoints) at the end.")
flags.DEFINE_bool("plot_only", False, "Rewrite the table and plot from OUT_DIR/efficiency.json.")
flags.DEFINE_integer("log_every_steps", 50, "Pretraining log interval.")
FLAGS = flags.FLAGS

T0 = time.time()


def progress(msg: str) -> None:
    elapsed = time.time() - T0
    print(f"[efficiency +{elapsed / 60:5.1f} min] {msg}", flush=True)


# -- FLOPs ------------------------------------------------------------------------------------------


def steps_for_budget(budget: float, fps: float, num_checkpoints: int) -> int:
    """The most steps (a multiple of num_checkpoints, at least that) within `budget` FLOPs."""
    return max(num_checkpoints, int(budget // fps) // num_checkpoints * num_checkpoints)


# -- data -------------------------------------------------------------------------------------------


def prepare_data(work_dir: str, seq_len: int) -> str:
    """vocab.txt, pretrain_tfrecords/ (10 shards: shard 0 held out for the pretraining eval),
    finetuning_data/sst/ under work_dir/data_L; built once."""
    from electra_tf import pretraining_data

    data_dir = os.path.join(work_dir, f"data_{seq_len}")
    os.makedirs(data_dir, exist_ok=True)
    vocab = os.path.join(data_dir, "vocab.txt")
    if not os.path.exists(vocab):
        shutil.copyfile(os.path.join(REPO, "data", "vocab", "vocab.txt"), vocab)
    out = os.path.join(data_dir, "pretrain_tfrecords")
    if not os.path.exists(os.path.join(out, "dataset_info.json")):
        progress(f"building TFRecords (seq {seq_len}) from the bundled Wikipedia sample")
        pretraining_data.build_dataset(
            FLAGS.pretraining_corpus,
            vocab,
            out,
            max_seq_length=seq_len,
            num_processes=1,
            num_out_files=10,
            overwrite=True,
            verbose=False,
        )
    sst = os.path.join(data_dir, "finetuning_data", "sst")
    if not os.path.exists(sst):
        shutil.copytree(os.path.join(REPO, "data", "sst_polarity"), sst)
    return data_dir


def shard_files(data_dir: str) -> tuple[list[str], list[str]]:
    d = os.path.join(data_dir, "pretrain_tfrecords")
    files = sorted(f for f in os.listdir(d) if f.startswith("pretrain_data.tfrecord"))
    paths = [os.path.join(d, f) for f in files]
    return paths[1:], paths[:1]  # train, held-out eval


# -- pretraining ------------------------------------------------------------------------------------


def pretrain_hparams(objective: str, steps: int, every: int) -> dict[str, Any]:
    h = FLAGS.hidden_size
    return dict(
        objective=objective,
        model_size="small",
        model_hparam_overrides=dict(
            hidden_size=h,
            num_hidden_layers=FLAGS.num_layers,
            num_attention_heads=max(1, h // 64),
            intermediate_size=4 * h,
        ),
        embedding_size=h,
        generator_hidden_size=FLAGS.generator_hidden_size,
        max_seq_length=FLAGS.seq_len,
        train_batch_size=FLAGS.batch_size,
        eval_batch_size=FLAGS.batch_size,
        num_eval_steps=20,
        learning_rate=FLAGS.learning_rate,
        num_train_steps=steps,
        num_warmup_steps=max(1, int(FLAGS.warmup_fraction * steps)),
        save_checkpoints_steps=every,
        keep_checkpoint_max=FLAGS.num_checkpoints + 3,
        log_every_steps=FLAGS.log_every_steps,
        jit_compile=FLAGS.jit_compile,
        seed=FLAGS.seed,
    )


def make_config(data_dir: str, objective: str, steps: int = 1, every: int = 1):
    train_files, _ = shard_files(data_dir)
    return PretrainingConfig.from_flat(
        f"pt_{objective}",
        data_dir,
        dict(pretrain_tfrecords=train_files, **pretrain_hparams(objective, steps, every)),
    )


def checkpoint_steps(model_dir: str) -> dict[int, str]:
    import tensorflow as tf

    state = tf.train.get_checkpoint_state(model_dir)
    out = {}
    for p in list(state.all_model_checkpoint_paths) if state else []:
        out[int(p.rsplit("-", 1)[1])] = p
    return out


def pretrain(data_dir: str, objective: str, steps: int, every: int) -> dict[str, Any]:
    """Trains (or resumes) one objective; returns its summary, with the checkpoints kept."""
    from electra_tf.train import Trainer

    config = make_config(data_dir, objective, steps, every)
    model_dir = config.paths.model_dir
    summary_path = os.path.join(model_dir, "efficiency_pretraining.json")
    if os.path.exists(summary_path):
        done = read_json(summary_path)
        if done.get("steps") == steps:
            progress(f"pretraining {objective}: reusing {model_dir}")
            return done
    t = time.time()
    trainer = Trainer(config)
    trainer.train()
    seconds = time.time() - t
    _, eval_files = shard_files(data_dir)
    metrics = trainer.evaluate(tfrecords=eval_files)
    summary = {
        "objective": objective,
        "steps": steps,
        "model_dir": model_dir,
        "runner_flops_per_step": float(trainer.flops_per_step),
        "pretrain_seconds": seconds,
        "eval_heldout": {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float))},
        "checkpoints": {str(k): v for k, v in checkpoint_steps(model_dir).items()},
    }
    write_json(summary_path, summary)
    return summary


# -- fine-tuning ------------------------------------------------------------------------------------


def finetune(data_dir: str, name: str, checkpoint: str) -> dict[str, Any]:
    from electra_tf.finetune.config import FinetuningConfig
    from electra_tf.finetune.runner import run_finetuning

    config = FinetuningConfig(
        name,
        data_dir,
        task_names=["sst"],
        init_checkpoint=checkpoint,
        num_trials=FLAGS.ft_trials,
        seed=FLAGS.ft_seed,
        learning_rate=FLAGS.ft_learning_rate,
        num_train_epochs=FLAGS.ft_epochs,
        train_batch_size=FLAGS.ft_batch_size,
        max_seq_length=FLAGS.seq_len,
        model_size="small",
        log_every_steps=1000,
    )
    path = os.path.join(config.results_dir, "sst.json")
    if os.path.exists(path):
        done = read_json(path)
        c = done.get("config", {})
        same = {
            k: getattr(config, k)
            for k in (
                "init_checkpoint", "num_trials", "seed", "learning_rate", "num_train_epochs",
                "train_batch_size", "max_seq_length",
            )
        }  # fmt: skip
        if all(c.get(k) == v for k, v in same.items()):
            return done
    return run_finetuning(config)["sst"]


def spread(values: list[float]) -> dict[str, float]:
    return {
        "median": float(statistics.median(values)),
        "mean": float(statistics.fmean(values)),
        "std": float(statistics.stdev(values)) if len(values) > 1 else 0.0,
        "min": float(min(values)),
        "max": float(max(values)),
    }


# -- outputs ----------------------------------------------------------------------------------------


def write_outputs(out_dir: str, report: dict[str, Any]) -> None:
    os.makedirs(out_dir, exist_ok=True)
    write_json(os.path.join(out_dir, "efficiency.json"), report)
    with open(os.path.join(out_dir, "efficiency.md"), "w", encoding="utf-8") as f:
        f.write(markdown(report))
    try:
        plot(report, os.path.join(out_dir, "efficiency.png"))
    except ImportError:
        progress(
            "matplotlib is not installed: no plot (pip install -r experiments/requirements.txt)"
        )


def markdown(report: dict[str, Any]) -> str:
    s = report["settings"]
    lines = [
        "# Compute efficiency: ELECTRA vs masked LM at equal pretraining FLOPs",
        "",
        f"Discriminator hidden {s['hidden_size']}, {s['num_layers']} layers, seq {s['seq_len']}, "
        f"batch {s['batch_size']}; generator {s['generator_hidden_size']}x width. Budget "
        f"{s['budget_flops']:.3g} FLOPs ({s['flops_convention']} convention). Fine-tuning: "
        f"sentence polarity (150 train / 50 dev), {s['ft_trials']} seeds per point, "
        f"dev accuracy (%). Held-out pretraining metrics are for the final checkpoint.",
        "",
        "| objective | budget | steps | pretraining FLOPs | dev acc median | min-max | std | "
        "per seed | held-out pretraining metric |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["runs"]:
        pm = r.get("pretraining_metric")
        pm_s = f"{pm[0]} {pm[1]:.3f}" if pm else ""
        lines.append(
            f"| {LABELS.get(r['objective'], r['objective'])} | {r['budget_fraction']:.2f} | "
            f"{r['step']} | {r['pretrain_flops']:.3g} | {r['median']:.1f} | "
            f"{r['min']:.0f}-{r['max']:.0f} | {r['std']:.1f} | "
            f"{', '.join(f'{a:.0f}' for a in r['dev_accuracy'])} | {pm_s} |"
        )
    lines += ["", f"Total wall time so far: {report['timing']['total_seconds'] / 60:.1f} min.", ""]
    return "\n".join(lines)


def plot(report: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    by_obj: dict[str, list] = {}
    for r in report["runs"]:
        if r["objective"] != "baseline":
            by_obj.setdefault(r["objective"], []).append(r)
    for k, (obj, rs) in enumerate(by_obj.items()):
        rs = sorted(rs, key=lambda r: r["pretrain_flops"])
        # a small horizontal offset per objective keeps equal-FLOP error bars apart
        shift = 1.0 + 0.012 * (k - (len(by_obj) - 1) / 2)
        x = [r["pretrain_flops"] * shift for r in rs]
        y = [r["median"] for r in rs]
        lo = [r["median"] - r["min"] for r in rs]
        hi = [r["max"] - r["median"] for r in rs]
        ax.errorbar(x, y, yerr=[lo, hi], marker="o", capsize=3, label=LABELS.get(obj, obj))
    for r in report["runs"]:
        if r["objective"] == "baseline":
            ax.axhspan(r["min"], r["max"], color="grey", alpha=0.15)
            ax.axhline(r["median"], color="grey", ls="--", label=LABELS["baseline"])
    s = report["settings"]
    ax.set_xlabel(f"pretraining FLOPs ({s['flops_convention']} convention; points offset slightly)")
    ax.set_ylabel("polarity dev accuracy (%), median and min-max of seeds")
    ax.set_title(
        f"h={s['hidden_size']}, {s['num_layers']} layers, seq {s['seq_len']}, "
        f"{s['ft_trials']} fine-tuning seeds"
    )
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- main -------------------------------------------------------------------------------------------


def main() -> None:
    if FLAGS.plot_only:
        path = os.path.join(FLAGS.out_dir, "efficiency.json")
        write_outputs(FLAGS.out_dir, read_json(path))
        progress(f"rewrote the table and plot from {path}")
        return
    for obj in FLAGS.objectives:
        if obj not in OBJECTIVES:
            raise UserError(f"--objectives: {obj!r} is not one of {', '.join(OBJECTIVES)}")
    n_ckpt = FLAGS.num_checkpoints
    if n_ckpt < 1 or FLAGS.ft_trials < 1:
        raise UserError("--num_checkpoints and --ft_trials must be at least 1")
    work_dir = FLAGS.work_dir or tempfile.mkdtemp(prefix="electra_efficiency_")
    os.makedirs(work_dir, exist_ok=True)
    progress(f"work dir {work_dir}, results to {FLAGS.out_dir}")
    data_dir = prepare_data(work_dir, FLAGS.seq_len)
    vocab_size = sum(1 for _ in open(os.path.join(data_dir, "vocab.txt"), encoding="utf-8"))

    from electra_tf.modeling.builders import flops_per_step

    # FLOPs per step of each objective, and the steps that spend the budget
    sparse = FLAGS.flops_convention == "sparse"
    plan = {}
    for obj in dict.fromkeys(["electra", *FLAGS.objectives]):
        config = make_config(data_dir, obj)
        plan[obj] = {
            "flops_per_step_sparse": flops_per_step(config, vocab_size, sparse_embed_lookup=True),
            "flops_per_step_paper": flops_per_step(config, vocab_size),
        }
    key = "flops_per_step_sparse" if sparse else "flops_per_step_paper"
    budget = FLAGS.budget_flops or (FLAGS.scale * FLAGS.budget_electra_steps * plan["electra"][key])
    for obj in FLAGS.objectives:
        fps = plan[obj][key]
        steps = steps_for_budget(budget, fps, n_ckpt)
        plan[obj].update(steps=steps, flops_per_step=fps, every=steps // n_ckpt)
        progress(
            f"plan {obj}: {steps} steps x {fps:.3e} FLOPs/step = {steps * fps:.3e} "
            f"(budget {budget:.3e})"
        )

    settings = {
        k: FLAGS[k].value
        for k in (
            "scale", "objectives", "budget_electra_steps", "num_checkpoints", "flops_convention",
            "hidden_size", "num_layers", "seq_len", "batch_size", "learning_rate",
            "warmup_fraction", "generator_hidden_size", "seed", "ft_trials", "ft_seed",
            "ft_learning_rate", "ft_epochs", "ft_batch_size",
        )
    }  # fmt: skip
    settings.update(budget_flops=budget, work_dir=work_dir, plan=plan)
    report: dict[str, Any] = {
        "settings": settings,
        "pretraining": {},
        "runs": [],
        "timing": {"total_seconds": 0.0, "pretraining_seconds": {}, "finetuning_seconds": {}},
        "notes": __doc__.split("\n\n")[1].replace("\n", " "),
    }

    # 1. pretrain every objective
    for obj in FLAGS.objectives:
        p = plan[obj]
        progress(f"pretraining {obj}: {p['steps']} steps, checkpoints every {p['every']}")
        summary = pretrain(data_dir, obj, p["steps"], p["every"])
        report["pretraining"][obj] = summary
        report["timing"]["pretraining_seconds"][obj] = summary["pretrain_seconds"]
        progress(
            f"pretrained {obj} in {summary['pretrain_seconds'] / 60:.1f} min; held-out "
            + ", ".join(
                f"{k} {summary['eval_heldout'][k]:.3f}"
                for k in ("masked_lm_accuracy", "disc_accuracy", "disc_auc")
                if k in summary["eval_heldout"]
            )
        )

    # 2. fine-tune: the full budget of every objective first (the central comparison), then the
    #    earlier checkpoints, then the no-pretraining baseline
    points = []
    for i in range(n_ckpt, 0, -1):
        for obj in FLAGS.objectives:
            points.append((obj, i))
    if FLAGS.baseline:
        points.append(("baseline", 0))
    for obj, i in points:
        src = FLAGS.objectives[0] if obj == "baseline" else obj
        ckpts = {int(k): v for k, v in report["pretraining"][src]["checkpoints"].items()}
        p = plan[src]
        target = 1 if obj == "baseline" else i * p["every"]
        step = min(ckpts, key=lambda s: (abs(s - target), s))
        progress(f"fine-tuning {obj} step {step} ({FLAGS.ft_trials} seeds)")
        t = time.time()
        result = finetune(data_dir, f"ft_{obj}_step{step}", ckpts[step])
        seconds = time.time() - t
        report["timing"]["finetuning_seconds"][f"{obj}_{step}"] = seconds
        accs = [float(tr["dev"]["accuracy"]) for tr in result["trials"]]
        ev = report["pretraining"][src]["eval_heldout"]
        metric = None
        if obj != "baseline" and i == n_ckpt:
            for k in ("disc_accuracy", "masked_lm_accuracy"):
                if k in ev:
                    metric = (k, ev[k])
                    break
        run = {
            "objective": obj,
            "budget_fraction": 0.0 if obj == "baseline" else round(step / p["steps"], 3),
            "nominal_fraction": 0.0 if obj == "baseline" else i / n_ckpt,
            "step": step,
            "total_steps": p["steps"],
            "pretrain_flops": step * p["flops_per_step"],
            "pretrain_flops_sparse": step * p["flops_per_step_sparse"],
            "pretrain_flops_paper": step * p["flops_per_step_paper"],
            "checkpoint": ckpts[step],
            "seeds": [tr.get("seed") for tr in result["trials"]],
            "dev_accuracy": accs,
            **spread(accs),
            "pretraining_metric": metric,
            "final_heldout_pretraining_metrics": ev if metric else None,
        }
        report["runs"] = [
            r for r in report["runs"] if (r["objective"], r["step"]) != (obj, step)
        ] + [run]
        report["timing"]["total_seconds"] = time.time() - T0
        write_outputs(FLAGS.out_dir, report)
        progress(
            f"{obj} step {step}: dev accuracy median {run['median']:.1f} "
            f"(min {run['min']:.0f}, max {run['max']:.0f}) in {seconds:.0f}s"
        )
    report["timing"]["total_seconds"] = time.time() - T0
    write_outputs(FLAGS.out_dir, report)
    progress(f"done: {os.path.join(FLAGS.out_dir, 'efficiency.json')}")
    if not FLAGS.keep_work_dir and not FLAGS.work_dir:
        shutil.rmtree(work_dir, ignore_errors=True)


if __name__ == "__main__":
    app.run(lambda argv: run_main(main))
