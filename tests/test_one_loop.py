"""One training loop: the loop's machinery is used by one module of the package
(`electra_tf.train.loop`, or the one module below it that implements a piece), and none of it
by fine-tuning, which hands its trials to the loop as tasks. Checked on the source: every name
a module uses (imports, calls, attributes; docstrings and comments do not count)."""

import ast

from test_architecture import modules

LOOP = "electra_tf.train.loop"

# the machinery -> the one module that may use it (its defining module aside); a dotted name is
# an attribute of a module (`devices.peak_flops`) or a name imported from it
CHECKPOINT = {"electra_tf.checkpoint.manager", "electra_tf.checkpoint.files"}
MACHINERY = {
    "StopSignal": {LOOP},  # signal handling (preemption)
    "DynamicLossScale": {LOOP},  # loss scaling
    "create_file_writer": {LOOP},  # summaries
    "create_noop_writer": {LOOP},
    "CheckpointKeeper": {LOOP},  # the save schedule and resume
    "CheckpointManager": CHECKPOINT,  # inside the keeper
    "ProgressLog": {LOOP},  # progress lines, MFU
    "TrainStep": {LOOP},  # steps per call, accumulation, clipping
    "steps_in_call": {LOOP},
    "step_path.choose": {LOOP},  # the XLA / path decision
    "step_path.by_rule": {LOOP},
    "choose_path": {LOOP, "electra_tf.train.trainer"},  # pretraining asks the loop, first
    "devices.choose_jit_compile": {"electra_tf.train.step_path"},
    "devices.peak_flops": {LOOP},  # the peak-FLOPs measurement, once a process
    "machine_peak_flops": {LOOP, "electra_tf.train.trainer"},  # Trainer.peak_flops forwards it
    "replica_iterators": {LOOP, "electra_tf.train.trainer", "electra_tf.train.step_path"},
}
DEFINED_IN = {
    "StopSignal": "electra_tf.train.preemption",
    "DynamicLossScale": "electra_tf.train.loss_scale",
    "CheckpointKeeper": "electra_tf.checkpoint.manager",
    "ProgressLog": "electra_tf.train.progress",
    "TrainStep": "electra_tf.train.step",
    "steps_in_call": "electra_tf.train.step",
}


def used_names(source: str) -> set:
    """Every name a module uses: names, attributes (also as `module.attr` where the value is a
    plain name), imported names (also as `module.name`); not strings or comments."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
            if isinstance(node.value, ast.Name):
                found.add(f"{node.value.id}.{node.attr}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            parent = (getattr(node, "module", None) or "").rpartition(".")[2]
            for a in node.names:
                found.add(a.name.rpartition(".")[2])
                if parent:
                    found.add(f"{parent}.{a.name}")
                if a.asname:
                    found.add(a.asname)
    return found


def machinery_users(sources: dict) -> dict:
    """machinery name -> the modules that use it (its definition's module left out)."""
    users = {name: set() for name in MACHINERY}
    for module, source in sources.items():
        names = used_names(source)
        for name in MACHINERY:
            if name in names and DEFINED_IN.get(name) != module:
                users[name].add(module)
    return users


def violations(sources: dict) -> list:
    out = []
    for name, users in machinery_users(sources).items():
        for module in sorted(users):
            if module.startswith("electra_tf.finetune"):
                out.append(f"{module} uses the loop's {name}")
            elif module not in MACHINERY[name]:
                out.append(f"{name} is used by {module}, not only by {sorted(MACHINERY[name])}")
    return out


def _sources() -> dict:
    return {m: open(p, encoding="utf-8").read() for m, p in modules().items()}


def test_the_loop_machinery_has_one_user_and_none_in_finetune():
    sources = _sources()
    assert violations(sources) == []
    users = machinery_users(sources)
    for name in ("StopSignal", "DynamicLossScale", "CheckpointKeeper", "ProgressLog", "TrainStep"):
        assert users[name] == {LOOP}, name  # used, and by the loop alone
    assert users["devices.peak_flops"] == {LOOP} and users["step_path.choose"] == {LOOP}


def test_the_check_finds_a_second_loop():
    """A planted fine-tuning module that saves and logs on its own, and a second user of the
    summary writer, are each found."""
    sources = _sources()
    sources["electra_tf.finetune.second_loop"] = (
        "from electra_tf.checkpoint.manager import CheckpointKeeper\n"
        "def train(items, step):\n    return CheckpointKeeper(items, step, '/tmp/x')\n"
    )
    sources["electra_tf.export.writer"] = (
        "import tensorflow as tf\nw = tf.summary.create_file_writer('/tmp/x')\n"
    )
    found = violations(sources)
    assert "electra_tf.finetune.second_loop uses the loop's CheckpointKeeper" in found
    assert any(
        v.startswith("create_file_writer is used by electra_tf.export.writer") for v in found
    )
    assert len(found) == 2


def test_pretraining_and_finetuning_print_progress_through_the_same_code():
    """Both jobs' tasks hand their runs to `TrainingLoop.train`, and only the loop builds
    progress lines (so their lines have one shape: `train.progress.ProgressLog`)."""
    sources = _sources()
    for module in ("electra_tf.train.trainer", "electra_tf.finetune.trainer"):
        names = used_names(sources[module])
        assert {"TrainingLoop", "TrainingTask", "LoopSettings"} <= names, module
        assert "ProgressLog" not in names and "print" not in names, module
