"""Which path the pretraining step takes: its precision, and what XLA compiles (the whole step,
only each layer's element-wise pieces, or nothing), chosen by measurement when `precision` or
`jit_compile` is "auto".

Why measure: the fastest path depends on the chip and the model, and the rules found so far do
not carry over (docs/PERFORMANCE.md: XLA won on AMD Zen 3 and lost on Zen 4; bfloat16 is 1.3x
faster than float32 on a Xeon with AMX and 0.7x as fast on one without). So each candidate path
runs a few steps of the configured model on a synthetic batch of the configured shape, and the
fastest wins; a path other than the baseline (the first candidate: float32 where the precision is
auto, the rule's XLA choice where `jit_compile` is auto) must be at least MIN_GAIN faster, so that
timing noise never trades the original's numerics for nothing. The choice is cached per machine,
TensorFlow version, model and batch beside the matmul peak (`cache_dir()/step_paths.json`), and
a resumed run keeps the path its config.json records.

`jit_compile: auto` alone measures only runs of at least MIN_MEASURED_STEPS steps (compiling
every candidate takes a minute or more, which a short run would not win back); shorter runs
take `devices.choose_jit_compile`'s rule. `precision: auto` always measures: it was asked for.
"""

import dataclasses
import hashlib
import json
import os
from typing import Callable, Dict, List, Optional, Tuple, Union

import tensorflow as tf

from electra_tf.errors import UserError
from electra_tf.io_utils import read_cache_table, read_json, write_cache_table
from electra_tf.train import devices

AUTO = "auto"
MIN_MEASURED_STEPS = 2000
MIN_GAIN = 0.03  # a non-baseline path must take at most (1 - MIN_GAIN) of the baseline's time
CACHE_FILE = "step_paths.json"


@dataclasses.dataclass(frozen=True)
class StepPath:
    precision: str
    jit_compile: bool
    fused_elementwise: bool

    def describe(self) -> str:
        """e.g. "mixed_bfloat16, XLA off, element-wise pieces XLA-fused"."""
        text = f"{self.precision}, XLA {'on' if self.jit_compile else 'off'}"
        return text + (", element-wise pieces XLA-fused" if self.fused_elementwise else "")

    def hparams(self) -> Dict[str, object]:
        return dataclasses.asdict(self)


def candidate_precisions(precision: str, accelerator: Optional[str]) -> List[str]:
    if precision != AUTO:
        return [precision]
    # float16 needs loss scaling and has no fast CPU kernels; GPUs get it as a third candidate
    extra = ["mixed_float16"] if accelerator and accelerator != "TPU" else []
    return ["float32", "mixed_bfloat16", *extra]


def rule_compilation(fused: bool, rule_jit: bool) -> Tuple[bool, bool]:
    """(jit_compile, fused_elementwise) of `jit_compile: auto` unmeasured: the rule's XLA choice;
    the fused pieces only on the graph path (a compiled step fuses them anyway)."""
    return rule_jit, fused and not rule_jit


def candidate_compilations(jit_compile, fused: bool, rule_jit: bool) -> List[Tuple[bool, bool]]:
    """(jit_compile, fused_elementwise) pairs, the baseline first: the rule's, the other XLA
    choice, the graph path with the fused pieces (each once)."""
    if jit_compile != AUTO:
        return [(bool(jit_compile), fused)]
    pairs = [rule_compilation(fused, rule_jit), (not rule_jit, False), (False, True)]
    return list(dict.fromkeys(pairs))


def candidates(scale, accelerator: Optional[str], rule_jit: bool) -> List[StepPath]:
    """Every path to measure, the baseline first."""
    compilations = candidate_compilations(scale.jit_compile, scale.fused_elementwise, rule_jit)
    return [
        StepPath(p, jit, fused)
        for p in candidate_precisions(scale.precision, accelerator)
        for jit, fused in compilations
    ]


def fastest(seconds: Dict[StepPath, float], baseline: StepPath) -> StepPath:
    """The fastest measured path; the baseline unless another is MIN_GAIN faster."""
    best = min(seconds, key=seconds.get)
    if seconds[best] <= (1.0 - MIN_GAIN) * seconds[baseline]:
        return best
    return baseline


def cache_key(config, num_replicas: int, accelerator: Optional[str], vocab_size=None) -> str:
    """Machine, TensorFlow, and everything about the run that shapes the step's work: the model,
    generator and objective sections, the batch and what the optimizer does per step."""
    o, s = config.optimization, config.scale
    shape = {
        "model": dataclasses.asdict(config.model),
        "generator": dataclasses.asdict(config.generator),
        "objective": dataclasses.asdict(config.task),
        "step": [vocab_size, o.train_batch_size, o.optimizer, o.clip_norm, o.two_stage_steps,
                 s.gradient_accumulation_steps, s.allreduce_dtype],
    }  # fmt: skip
    digest = hashlib.sha256(json.dumps(shape, sort_keys=True, default=str).encode()).hexdigest()
    model, _ = devices.cpu_info()
    machine = accelerator or f"{model}|{devices.intra_op_threads()} threads"
    return f"{machine}|{num_replicas} replicas|TF {tf.__version__}|{digest[:16]}"


def recorded_path(config_json: str) -> Optional[StepPath]:
    """The path a run's config.json records (what a resumed run must keep), if any."""
    if not os.path.exists(config_json):
        return None
    d = read_json(config_json)
    try:
        path = StepPath(d["precision"], d["jit_compile"], d.get("fused_elementwise", False))
    except KeyError:
        return None
    if path.precision == AUTO or not isinstance(path.jit_compile, bool):
        return None
    return path


def by_rule(
    precision: str, jit_compile, fused_elementwise: bool = False, num_steps: Optional[int] = None
) -> Tuple[StepPath, str]:
    """(the path, why) without measuring: the precision as set, XLA as set or, for "auto",
    `devices.choose_jit_compile`'s rule (for a fine-tuning run of `num_steps` steps: XLA from
    `devices.MIN_XLA_STEPS`)."""
    jit, why = devices.choose_jit_compile(jit_compile, num_steps)
    return StepPath(precision, jit, fused_elementwise), why


def choose(
    config,
    time_path: Callable[[StepPath], float],
    num_replicas: int = 1,
    resumed_config: Union[None, str, Callable[[], Optional[str]]] = None,
    log: Callable[[str], None] = print,
    vocab_size: Optional[int] = None,
    multi_worker: bool = False,
) -> Tuple[StepPath, str]:
    """(the path, why) for `config`'s `precision` / `jit_compile` / `fused_elementwise`.

    `time_path(path)` returns seconds per step of the configured step on that path;
    `resumed_config`: the config.json of the run being resumed (its path is kept), or a function
    giving it (called only when something is "auto": finding the checkpoint reads the run
    directory). Workers of
    a multi-worker run would each time their own steps and could choose differently, so there
    `precision: auto` is an error and `jit_compile: auto` takes the rule."""
    s = config.scale
    accelerator = devices.accelerator_name()
    rule_jit, rule_reason = devices.choose_jit_compile(s.jit_compile)
    if s.precision != AUTO and s.jit_compile != AUTO:
        return StepPath(s.precision, s.jit_compile, s.fused_elementwise), rule_reason
    by_rule = StepPath(s.precision, *rule_compilation(s.fused_elementwise, rule_jit))
    if multi_worker:
        if s.precision == AUTO:
            raise UserError(
                "precision: auto measures on one machine; a multi-worker run needs it set "
                "(run a single-worker run with precision auto once to see which path wins)"
            )
        return by_rule, f"{rule_reason}; not measured in a multi-worker run"
    if callable(resumed_config):
        resumed_config = resumed_config()
    if resumed_config and (kept := recorded_path(resumed_config)) is not None:
        return kept, f"auto: kept from the resumed run's {os.path.basename(resumed_config)}"
    if s.precision != AUTO and config.optimization.num_train_steps < MIN_MEASURED_STEPS:
        return by_rule, (
            f"{rule_reason}; not measured: {config.optimization.num_train_steps} steps, fewer "
            f"than the {MIN_MEASURED_STEPS} where measuring the paths pays"
        )
    paths = candidates(s, accelerator, rule_jit)
    key = (
        cache_key(config, num_replicas, accelerator, vocab_size)
        + "|"
        + ";".join(p.describe() for p in paths)
    )
    cache_file, table = read_cache_table(CACHE_FILE)
    if key in table:
        entry = table[key]
        chosen = StepPath(**entry["chosen"])
        return chosen, "auto: " + entry["why"] + " (cached)"
    seconds = {}
    for i, path in enumerate(paths):
        log(f"step path {i + 1}/{len(paths)}: measuring {path.describe()} ...")
        seconds[path] = time_path(path)
        log(f"step path {i + 1}/{len(paths)}: {path.describe()}: {seconds[path]:.3f} s/step")
    chosen = fastest(seconds, paths[0])
    times = ", ".join(f"{p.describe()} {t:.3f}" for p, t in seconds.items())
    why = (
        f"measured s/step: {times}; the fastest unless under {1 - MIN_GAIN:.0%} of the "
        f"baseline ({paths[0].describe()})"
    )
    # our own measurement (minutes) raises the load average by up to about one CPU
    if not devices.too_busy_to_cache(devices.load_average(), own_load=1.0):
        write_cache_table(cache_file, {**table, key: {"chosen": chosen.hparams(), "why": why}})
    return chosen, "auto: " + why


def synthetic_batch(batch_size: int, seq_len: int, vocab_size: int, special: Dict[str, int],
                    seed: int = 0):  # fmt: skip
    """[CLS] a [SEP] b [SEP] with random word ids (no padding), as numpy int32 arrays: every
    position a real token, so a step on it does the most work a batch of this shape can ask."""
    import numpy as np

    rng = np.random.default_rng(seed)
    low = min(1000, vocab_size - 1)  # past BERT's special and unused ids where the vocab allows
    ids = rng.integers(low, vocab_size, size=(batch_size, seq_len), dtype=np.int32)
    half = seq_len // 2
    ids[:, 0] = special["cls"]
    ids[:, half - 1] = special["sep"]
    ids[:, -1] = special["sep"]
    segment = np.zeros_like(ids)
    segment[:, half:] = 1
    return {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": segment}


def seconds_per_step(trainer, warmup_steps: int = 2, timed_calls: int = 2, steps_per_call=2):
    """The best seconds per step of `trainer`'s step function (a `Trainer`) over `timed_calls`
    calls of `steps_per_call` steps, after a first call (tracing, compiling) and `warmup_steps`
    more, on a synthetic batch of the configured shape on every local replica."""
    import time

    c, layout = trainer.config, trainer.layout
    batch = synthetic_batch(
        c.optimization.train_batch_size // layout.num_replicas,
        c.model.max_seq_length,
        len(trainer.vocab),
        trainer.special_ids,
    )
    with tf.device("/cpu:0"):
        ds = tf.data.Dataset.from_tensors({k: tf.constant(v) for k, v in batch.items()}).repeat()
    iterators = trainer.loop.replica_iterators(lambda replica, layout: ds)
    fn = trainer.step_function()

    def call(k):
        t0 = time.perf_counter()
        _, losses = fn(iterators, tf.constant(k, tf.int32))
        losses.numpy()  # waits for the steps' work
        return (time.perf_counter() - t0) / k

    call(1)
    if warmup_steps:
        call(warmup_steps)
    return min(call(steps_per_call) for _ in range(timed_calls))
