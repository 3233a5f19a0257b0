#!/usr/bin/env bash
# GPU readiness: pretraining, fine-tuning and inference throughput with MFU, next to NVIDIA's
# published A100 figures (see bench/gpu_check.py). `--tiny` runs tiny models on the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-$(command -v python3)}"
[ -x .venv/bin/python ] && PYTHON="${PYTHON_OVERRIDE:-.venv/bin/python}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # the package, installed or not
TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}" exec "$PYTHON" bench/gpu_check.py "$@"
