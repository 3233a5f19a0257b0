"""bench/gpu_check.sh --tiny: the GPU readiness script runs end to end on a CPU."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from harness import ENV, REPO


@pytest.mark.slow
def test_gpu_check_tiny_runs_every_case():
    p = subprocess.run(
        ["bash", os.path.join(REPO, "bench", "gpu_check.sh"), "--tiny"],
        env=ENV,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    cases = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    names = [c["case"] for c in cases]
    assert [n.split(" L=")[0] for n in names] == [
        "pretrain ELECTRA-small",
        "fine-tune classification",
        "fine-tune SQuAD head",
        "SavedModel inference",
        "SavedModel inference",
    ]
    for c in cases:
        assert c["seq_per_s"] > 0
        # MFU below 100% on a correct FLOP count (inference rows report latency only)
        assert "mfu" not in c or 0 < c["mfu"] < 1, c
    assert "NVIDIA A100-40GB" in p.stdout and "955 seq/s" not in p.stdout  # no Base in --tiny


@pytest.mark.slow
def test_serving_bench_tiny_compares_every_side_and_checks_logits():
    p = subprocess.run(
        [
            sys.executable,
            os.path.join(REPO, "bench", "serving.py"),
            "--tiny",
            "--iters=2",
            "--sentences=40",
            "--matmul_floor",
        ],
        env=ENV,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-3000:] + p.stdout[-2000:]
    rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    cases = {(r["case"], r["side"]) for r in rows}
    for shape in ("1x16", "1x128", "32x128"):
        assert (shape, "SavedModel serving_default") in cases
    for case in ("movie dev, single", "movie dev, batches of 32"):
        assert (case, "SavedModel serve_text") in cases
        assert all(r["sentences"] == 40 for r in rows if r["case"] == case)
    assert ("32 pairs (movie dev)", "SavedModel serve_text_pair") in cases
    if importlib.util.find_spec("onnxruntime"):
        onnx_rows = [r for r in rows if r["side"] == "ONNX Runtime"]
        assert len(onnx_rows) == 5 and all(r["max_logit_diff"] < 1e-3 for r in onnx_rows)
    # LiteRT (XNNPACK) on the LiteRT export: every case, the logits checked like the others'
    litert_rows = [r for r in rows if r["side"] == "LiteRT"]
    assert len(litert_rows) == 5 and all(r["max_logit_diff"] < 1e-3 for r in litert_rows)
    # the bfloat16 SavedModel where the CPU has bfloat16 instructions (its difference reported)
    bf16_rows = [r for r in rows if r["side"] == "SavedModel bfloat16 serving_default"]
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        has_bf16 = bool({"avx512_bf16", "amx_bf16"} & set(f.read().split()))
    assert len(bf16_rows) == (5 if has_bf16 else 0)
    assert all(0 < r["max_logit_diff"] < 0.1 for r in bf16_rows)
    # the matmul floor: each variant at the fixed shapes only, with no logits to check
    floor = [r for r in rows if r["side"].startswith("TensorFlow dense matmuls alone")]
    assert len(floor) == 3 * (4 if has_bf16 else 2), floor
    assert {r["case"] for r in floor} == {"1x16", "1x128", "32x128"}
    assert all("max_logit_diff" not in r for r in floor)
    assert p.stdout.count("uptime before:") == 1 and p.stdout.count("uptime after:") == 1
    assert "CPU: " in p.stdout and "threads per side" in p.stdout
    assert "logits match the SavedModel's" in p.stdout
