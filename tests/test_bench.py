"""bench/gpu_check.sh --tiny: the GPU readiness script runs end to end on a CPU."""

import json
import os
import subprocess

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
