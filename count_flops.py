"""Prints pretraining compute: the ELECTRA paper's FLOP figures for its named configurations.

python count_flops.py                       # human table (backward = 1x forward, as the paper)
python count_flops.py --json                # one JSON object keyed by configuration name
python count_flops.py --backward_factor=2   # the same runs with backward = 2x forward
python count_flops.py --hparams=experiments/recipes/pretrain_small_budget.json [--json]
    # that recipe's FLOPs per training step, in the paper's and the real convention (the
    # count the training log, MFU, --describe and the experiments use)
python count_flops.py --profile --model_size=small [--json]
    # this project's model counted by TensorFlow's profiler vs the analytic count; slow on a
    # CPU (tracing the small model's training step takes a few minutes). See docs/FLOPS.md.
python count_flops.py --profile --profile_hparams=experiments/recipes/pretrain_small_budget.json \
    --profile_seq_len=64    # the recipe's (and the demo's) model
"""

import json
import os

from absl import app, flags

from electra_tf import flops
from electra_tf.errors import UserError, run_main

FLAGS = flags.FLAGS
flags.DEFINE_bool("json", False, "Print one JSON object instead of a table.")
flags.DEFINE_float(
    "backward_factor",
    1.0,
    "Backward-pass cost as a multiple of the forward pass. 1.0 is the paper's convention; "
    "2.0 is the common 3x-forward one.",
)
flags.DEFINE_string(
    "hparams", None,
    "Print this pretraining recipe's FLOPs per step in both conventions (a hparams JSON file; "
    "its vocab_file's entries give the vocab size, relative paths from the working directory).",
)  # fmt: skip
flags.DEFINE_bool(
    "profile", False, "Count this project's model with TensorFlow's profiler (see --model_size)."
)
flags.DEFINE_enum("model_size", "small", ["small", "base", "large"], "Model size for --profile.")
flags.DEFINE_integer("profile_batch_size", 2, "Batch size of the profiled graphs.")
flags.DEFINE_integer("profile_seq_len", 128, "Sequence length of the profiled graphs.")
flags.DEFINE_string(
    "profile_hparams", None,
    "--profile this recipe's model instead of a preset (a pretraining hparams JSON file, e.g. "
    "experiments/recipes/pretrain_small_budget.json: its model keys and its vocab's size).",
)  # fmt: skip


def paper_table(backward_factor: float = 1.0) -> dict:
    """The named configurations as plain dicts, rescaled to `backward_factor`."""
    # Every paper figure is (1 + 1) x forward; rescale all of them to (1 + backward_factor).
    scale = (1.0 + backward_factor) / 2.0
    table = {}
    for name, model in flops.PAPER_MODELS.items():
        row = model.to_dict()
        if scale != 1.0:
            row["total_flops"] *= scale
            row["flops_per_step"] *= scale
        table[name] = row
    return table


def format_table(table: dict, backward_factor: float) -> str:
    lines = [
        f"Pretraining FLOPs (backward = {backward_factor:g}x forward)",
        (
            f"{'model':<14} {'batch':>6} {'seq_len':>7} {'train_steps':>13} "
            f"{'FLOPs/step':>12} {'total FLOPs':>12}"
        ),
    ]
    for name, row in table.items():
        lines.append(
            f"{name:<14} {row['batch_size']:>6d} {row['seq_len']:>7d} "
            f"{row['train_steps']:>13,.0f} {row['flops_per_step']:>12.4e} "
            f"{row['total_flops']:>12.4e}"
        )
    return "\n".join(lines)


def recipe_step_flops(path: str) -> dict:
    """One training step's FLOPs of the pretraining recipe at `path`, in both conventions."""
    from electra_tf.io_utils import read_json
    from electra_tf.pretraining_config import PretrainingConfig
    from electra_tf.pretraining_networks import step_flops
    from electra_tf.recipes import recipe_model_hparams

    recipe = read_json(path)
    values = {**recipe, **recipe_model_hparams(recipe, os.getcwd())}
    config = PretrainingConfig.from_flat("count_flops", "count_flops", values)
    flops = step_flops(config)
    return {
        "hparams": path,
        "vocab_size": config.vocab_size_for(),
        "paper_flops_per_step": flops.paper,
        "real_flops_per_step": flops.real,
    }


def format_recipe(r: dict) -> str:
    return "\n".join(
        [
            f"{r['hparams']} (vocab {r['vocab_size']}): FLOPs per training step",
            f"  paper (dense lookups, backward = 1x forward): {r['paper_flops_per_step']:,.0f}",
            f"  real (gathers, backward = 2x forward):        {r['real_flops_per_step']:,.0f}",
        ]
    )


def format_profile(r: dict) -> str:
    def row(label, profiler, analytic, ratio):
        return f"{label:<34} {profiler:>12.4e} {analytic:>12.4e} {ratio:>7.4f}"

    title = (
        f"{r.get('name') or 'ELECTRA-' + r['model_size']} pretraining, batch {r['batch_size']} x {r['seq_len']} "
        f"tokens ({r['max_predictions_per_seq']} masked positions per sequence)"
    )
    step = r["profiler_train_step_flops"]
    return "\n".join(
        [
            title,
            f"{'':<34} {'profiler':>12} {'analytic':>12} {'ratio':>7}",
            row(
                "forward",
                r["profiler_forward_flops"],
                r["analytic_forward_flops"],
                r["forward_ratio"],
            ),
            row(
                "train step (analytic bwd = 1x fwd)",
                step,
                r["analytic_train_step_flops"],
                r["train_step_ratio"],
            ),
            row(
                "train step (analytic bwd = 2x fwd)",
                step,
                r["analytic_train_step_flops_backward_2x"],
                r["train_step_ratio_backward_2x"],
            ),
            "(analytic figures count embedding lookups as gathers: sparse_embed_lookup=True)",
        ]
    )


def main(argv) -> None:
    if len(argv) > 1:
        raise UserError(f"unexpected arguments: {' '.join(argv[1:])}")
    if FLAGS.backward_factor < 0:
        raise UserError(f"--backward_factor must be >= 0, got {FLAGS.backward_factor}")
    if FLAGS.hparams:
        if FLAGS.profile:
            raise UserError("--hparams counts a recipe; to profile one, use --profile_hparams")
        report = recipe_step_flops(FLAGS.hparams)
        print(json.dumps(report) if FLAGS.json else format_recipe(report))
        return
    if FLAGS.profile:
        if FLAGS.profile_batch_size < 1 or FLAGS.profile_seq_len < 2:
            raise UserError("--profile_batch_size must be >= 1 and --profile_seq_len >= 2")
        from electra_tf.train.profiling import profile_pretraining_flops

        hparams = None
        if FLAGS.profile_hparams:
            from electra_tf.io_utils import read_json
            from electra_tf.recipes import recipe_model_hparams

            hparams = recipe_model_hparams(read_json(FLAGS.profile_hparams), os.getcwd())
        report = profile_pretraining_flops(
            FLAGS.model_size, FLAGS.profile_batch_size, FLAGS.profile_seq_len, hparams
        )
        if FLAGS.profile_hparams:
            report["name"] = FLAGS.profile_hparams
        print(json.dumps(report) if FLAGS.json else format_profile(report))
        return
    table = paper_table(FLAGS.backward_factor)
    if FLAGS.json:
        print(json.dumps(table))
    else:
        print(format_table(table, FLAGS.backward_factor))


if __name__ == "__main__":
    app.run(lambda argv: run_main(lambda: main(argv)))
