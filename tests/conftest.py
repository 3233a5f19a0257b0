"""Shared test fixtures (built on `harness.py`): a tiny pretrainer and synthetic batches, a tiny
pretraining dataset built once per session, and running the repo's scripts.

Tests that start TensorFlow in a subprocess or compile with XLA are marked `slow`
(`pytest -m "not slow"` skips them).
"""

import pytest
from harness import build_tiny_dataset, make_synthetic_batch, make_tiny_model, run_script


@pytest.fixture
def tiny_model():
    """A factory: tiny_model(**hparam_overrides) -> (PretrainingConfig, ElectraPretrainer)."""
    return make_tiny_model


@pytest.fixture
def synthetic_batch():
    """A factory: synthetic_batch(seed=0, batch=4, length=16) -> a dict of int32 tensors."""
    return make_synthetic_batch


@pytest.fixture(scope="session")
def tiny_dataset(tmp_path_factory) -> str:
    """A DATA_DIR with a small pretraining dataset (length 32, 2 shards, BERT vocab), shared by
    the tests that run run_pretraining.py; copy it before writing into it."""
    return build_tiny_dataset(str(tmp_path_factory.mktemp("tiny_dataset")))


@pytest.fixture
def script():
    """A fixture form of `harness.run_script`: script("run_pretraining.py", "--flag=...")."""
    return run_script
