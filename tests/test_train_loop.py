"""The training loop's machine-dependent choices: steps per call, the XLA rule, the peak FLOP/s."""

import pytest

from electra_tf.train import devices
from electra_tf.train.step import steps_in_call


def test_steps_in_call_stop_at_log_save_and_last_steps():
    # iterations 4, log every 3, save every 4, 10 steps, after a first 1-step call
    step, calls = 1, []
    while step < 10:
        n = steps_in_call(step, 10, 4, 3, 4)
        calls.append(n)
        step += n
    # 1 -> 3 (log), 3 -> 4 (save), 4 -> 6 (log), 6 -> 8 (save), 8 -> 9 (log), 9 -> 10 (last)
    assert calls == [2, 1, 2, 2, 1, 1]
    assert steps_in_call(0, 1000, 200, 10, 1000) == 10  # the default log interval bounds a call
    assert steps_in_call(995, 1000, 200, 1000, 1000) == 5
    assert steps_in_call(7, 100, 1, 10, 10) == 1  # iterations_per_loop=1: one step per call


def test_jit_rule(monkeypatch):
    assert devices.choose_jit_compile(False) == (False, "jit_compile=false was set")
    assert devices.choose_jit_compile(True)[0] is True
    monkeypatch.setattr(devices, "accelerator_name", lambda: None)
    zen4 = frozenset({"avx2", "avx512f", "avx512_bf16"})
    monkeypatch.setattr(devices, "cpu_info", lambda: ("AMD EPYC 9B14", zen4))
    use, why = devices.choose_jit_compile("auto")
    assert not use and "avx512_bf16" in why and "AMD EPYC 9B14" in why
    icelake = frozenset({"avx2", "avx512f", "avx512_vnni"})
    monkeypatch.setattr(devices, "cpu_info", lambda: ("Intel Xeon", icelake))
    assert devices.choose_jit_compile("auto")[0] is True
    monkeypatch.setattr(devices, "accelerator_name", lambda: "NVIDIA H200")
    assert devices.choose_jit_compile("auto") == (True, "auto: XLA on NVIDIA H200")
    # fine-tuning's trials (their steps given): XLA from 300 steps, on a CPU too
    monkeypatch.setattr(devices, "cpu_info", lambda: ("AMD EPYC 9B14", zen4))
    monkeypatch.setattr(devices, "accelerator_name", lambda: None)
    assert devices.choose_jit_compile("auto", 300) == (
        True, "auto: 300 steps, at least the 300 where XLA pays")  # fmt: skip
    assert devices.choose_jit_compile(None, 300)[0] is True  # None: configs from before "auto"
    assert devices.choose_jit_compile("auto", 299) == (
        False, "auto: 299 steps, fewer than the 300 where XLA pays")  # fmt: skip
    assert devices.choose_jit_compile(True, 10) == (True, "jit_compile=true was set")


def test_peak_flops_from_override_table_and_cache(monkeypatch, tmp_path):
    assert devices.peak_flops("float32", 1e12) == (1e12, "peak_flops hparam")
    monkeypatch.setattr(devices, "accelerator_name", lambda: "NVIDIA A100-SXM4-40GB")
    assert devices.peak_flops("mixed_bfloat16")[0] == 312e12
    assert devices.peak_flops("float32")[0] == 19.5e12
    # a CPU: measured once, then read from the cache
    monkeypatch.setattr(devices, "accelerator_name", lambda: None)
    monkeypatch.setenv("ELECTRA_TF_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(devices.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    calls, share = [], [1.0]

    def fake_measure(dtype):
        calls.append(dtype)
        return 123e9, "measured 2048^3 float32 matmul", share[0]

    monkeypatch.setattr(devices, "measure_matmul_peak", fake_measure)
    first = devices.peak_flops("float32")
    second = devices.peak_flops("float32")
    assert first[0] == second[0] == 123e9 and calls == ["float32"]
    assert "cached" in second[1]
    # under load a measurement is used but not cached
    monkeypatch.setattr(devices.os, "getloadavg", lambda: (50.0, 50.0, 50.0))
    assert "not cached" in devices.peak_flops("mixed_bfloat16")[1]
    assert calls == ["float32", "bfloat16"]
    # a quiet load average but another process taking part of the CPU while measuring: not cached
    monkeypatch.setattr(devices.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    share[0] = 0.6
    assert "CPU share 60%), not cached" in devices.peak_flops("mixed_bfloat16")[1]
    assert "not cached" in devices.peak_flops("mixed_bfloat16")[1]
    assert calls == ["float32", "bfloat16", "bfloat16", "bfloat16"]


def test_matmul_peak_is_measured():
    peak, source, share = devices.measure_matmul_peak("float32", n=256, seconds=0.2)
    # 256^3 matmuls: more than 0.1 GFLOP/s and far below any CPU's 10 TFLOP/s
    assert 1e8 < peak < 1e13 and "256^3" in source and 0.0 < share <= 1.0


@pytest.mark.parametrize(
    "precision,dtype", [("float32", "float32"), ("mixed_bfloat16", "bfloat16")]
)
def test_compute_dtype(precision, dtype):
    assert devices.compute_dtype(precision) == dtype
