"""What the machine is: which compilation path is fastest on it, and its peak FLOP/s (MFU's
denominator).

`jit_compile="auto"` follows a rule derived from measurements of the full ELECTRA-Small step
(batch 32 x 128) on the CPUs this project has met (docs/PERFORMANCE.md has the figures): XLA
was faster on AMD Zen 3 (AVX2), equal within noise on Intel Ice Lake (AVX-512, no bfloat16),
slower on AMD Zen 4 (AVX-512 with AVX512_BF16), where oneDNN's kernels beat XLA-CPU's code; on
GPUs and TPUs XLA is the fast path. So: accelerators and CPUs without AVX512_BF16/AMX use XLA,
the others do not. Fine-tuning's trials (another workload: measured separately) use XLA from
MIN_XLA_STEPS steps on every device.

The peak comes from a table for known accelerators (dense tensor-core / MXU figures of the
vendors' data sheets) or, on a CPU, from a matmul benchmark measured once and cached per CPU
model, thread count and dtype.
"""

import os
import time
from typing import Optional, Tuple

import tensorflow as tf

from electra_tf.io_utils import read_cache_table, write_cache_table

# (device-name substring, {compute dtype: dense peak FLOP/s}); the first match wins
ACCELERATOR_PEAKS = (
    ("H200", {"float32": 67e12, "bfloat16": 989e12, "float16": 989e12}),
    ("H100", {"float32": 67e12, "bfloat16": 989e12, "float16": 989e12}),
    ("A100", {"float32": 19.5e12, "bfloat16": 312e12, "float16": 312e12}),
    ("L4", {"float32": 30.3e12, "bfloat16": 121e12, "float16": 121e12}),
    ("A10", {"float32": 31.2e12, "bfloat16": 125e12, "float16": 125e12}),
    ("V100", {"float32": 15.7e12, "float16": 125e12}),
    ("T4", {"float32": 8.1e12, "float16": 65e12}),
)
# CPU flags of the CPUs where oneDNN's bfloat16/AVX-512 kernels beat XLA-CPU (see above)
GRAPH_PATH_CPU_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_info() -> Tuple[str, frozenset]:
    """(CPU model name, its feature flags) from /proc/cpuinfo ("unknown", {} elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return "unknown", frozenset()
    model, flags = "unknown", frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and model == "unknown":
            model = value.strip()
        elif key == "flags" and not flags:
            flags = frozenset(value.split())
    return model, flags


def accelerator_name() -> Optional[str]:
    """The first GPU's device name (e.g. "NVIDIA H200"), "TPU" for a TPU, else None."""
    if tf.config.list_logical_devices("TPU"):
        return "TPU"
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return None
    details = tf.config.experimental.get_device_details(gpus[0])
    return details.get("device_name", "GPU")


# fine-tuning's "auto": XLA from this many training steps in a trial, on every device (its
# compile, tens of seconds, pays back from there; measured not slower on the Zen 4 where
# pretraining's step is: docs/PERFORMANCE.md)
MIN_XLA_STEPS = 300


def choose_jit_compile(setting, steps: Optional[int] = None) -> Tuple[bool, str]:
    """(use XLA, why) for the `jit_compile` hparam: True/False as set, or "auto" (None too):
    for pretraining (no `steps`) the rule of this module's docstring, for a fine-tuning trial
    of `steps` steps XLA from MIN_XLA_STEPS."""
    if isinstance(setting, bool):
        return setting, f"jit_compile={str(setting).lower()} was set"
    if steps is not None:
        if steps < MIN_XLA_STEPS:
            return False, f"auto: {steps} steps, fewer than the {MIN_XLA_STEPS} where XLA pays"
        return True, f"auto: {steps} steps, at least the {MIN_XLA_STEPS} where XLA pays"
    device = accelerator_name()
    if device is not None:
        return True, f"auto: XLA on {device}"
    model, flags = cpu_info()
    found = sorted(set(GRAPH_PATH_CPU_FLAGS) & flags)
    if found:
        return False, (
            f"auto: no XLA on this CPU ({model}: {', '.join(found)}), where oneDNN's kernels "
            "are faster than XLA's"
        )
    return True, f"auto: XLA on this CPU ({model}: no AVX512_BF16/AMX, XLA is faster)"


def compute_dtype(precision: str) -> str:
    return {"mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}.get(precision, "float32")


def peak_flops(precision: str = "float32", override: Optional[float] = None) -> Tuple[float, str]:
    """(peak FLOP/s of this machine's matmuls in the run's compute dtype, where it comes from)."""
    if override:
        return float(override), "peak_flops hparam"
    dtype = compute_dtype(precision)
    device = accelerator_name()
    if device is not None:
        for name, peaks in ACCELERATOR_PEAKS:
            if name in device and dtype in peaks:
                return peaks[dtype], f"data sheet of {name} ({dtype})"
        peak, source, _ = measure_matmul_peak(dtype, device="/gpu:0" if device != "TPU" else None)
        return peak, source
    return cached_cpu_peak(dtype)


def intra_op_threads() -> int:
    """The threads TensorFlow's ops run on (the setting, else one per CPU)."""
    return tf.config.threading.get_intra_op_parallelism_threads() or os.cpu_count() or 1


MIN_CPU_SHARE = 0.8  # below: another process took part of the CPU while measuring


def load_average() -> float:
    """The 1-minute load average (0 where the OS has none)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0


def too_busy_to_cache(load: float, own_load: float = 0.0) -> bool:
    """Whether a timing taken at 1-minute load average `load` is too disturbed to cache: other
    processes held more than three quarters of the CPUs (`own_load`: the measuring process's own
    part of that average, for measurements long enough to raise it)."""
    return load > 0.75 * (os.cpu_count() or 1) + own_load


def cached_cpu_peak(dtype: str) -> Tuple[float, str]:
    """The CPU's matmul peak, measured once per (CPU model, threads, dtype, TF version)."""
    model, _ = cpu_info()
    threads = intra_op_threads()
    key = f"{model}|{threads}|{dtype}|{tf.__version__}|v2"  # v2: CPU share checked
    path, table = read_cache_table("peak_flops.json")
    if key in table:
        return float(table[key]), f"measured matmul peak of {model} ({dtype}, cached)"
    peak, source, cpu_share = measure_matmul_peak(dtype)
    load = load_average()
    # A busy machine measures low, and a low peak cached would report MFU above 100% ever after.
    # The load average lags by a minute, so the measurement's own share of the CPU it asked for
    # is checked too (another process running beside it takes part of that).
    if too_busy_to_cache(load) or cpu_share < MIN_CPU_SHARE:
        return peak, (
            f"{source} of {model}, under load {load:.1f} (CPU share {cpu_share:.0%}), not cached"
        )
    write_cache_table(path, {**table, key: peak})
    return peak, f"{source} of {model}"


def measure_matmul_peak(dtype: str = "float32", n: int = 2048, seconds: float = 1.0, device=None):
    """The best FLOP/s of an n x n x n matmul in `dtype` over about `seconds`, its description,
    and the share of the intra-op threads' CPU time the process got while timing (about 1 on an
    idle CPU, less when other processes compete)."""
    threads = intra_op_threads()
    with tf.device(device or "/cpu:0"):
        a = tf.random.normal([n, n], dtype=tf.float32)
        a = tf.cast(a, dtype)
        b = tf.cast(tf.random.normal([n, n], dtype=tf.float32), dtype)
        matmul = tf.function(lambda x, y: tf.reduce_sum(tf.cast(tf.matmul(x, y), "float32")))
        matmul(a, b).numpy()
        best, end = float("inf"), time.perf_counter() + seconds
        wall0, cpu0 = time.perf_counter(), time.process_time()
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            matmul(a, b).numpy()
            best = min(best, time.perf_counter() - t0)
        share = (time.process_time() - cpu0) / max(time.perf_counter() - wall0, 1e-9) / threads
    return 2.0 * n**3 / best, f"measured {n}^3 {dtype} matmul", min(share, 1.0)
