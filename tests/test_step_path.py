"""`precision: auto` / `jit_compile: auto`: the step's path chosen by measurement (train.step_path):
the candidates, the margin the baseline keeps, the cache, a resumed run's recorded path, the rule
for short runs, and a real tiny Trainer measuring and training on its choice."""

import json
import os

import pytest
from harness import TINY_RUN

from electra_tf.errors import UserError
from electra_tf.pretraining_config import PretrainingConfig
from electra_tf.train import devices, step_path
from electra_tf.train.step_path import StepPath

F32, BF16 = "float32", "mixed_bfloat16"


@pytest.fixture
def cpu(monkeypatch, tmp_path):
    """An idle CPU with AVX512_BF16 (the rule: no XLA), a fresh cache directory."""
    monkeypatch.setattr(devices, "accelerator_name", lambda: None)
    monkeypatch.setattr(devices, "cpu_info", lambda: ("AMD EPYC 9B14", frozenset({"avx512_bf16"})))
    monkeypatch.setenv("ELECTRA_TF_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(step_path.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    return tmp_path


def config(**hparams):
    return PretrainingConfig.from_flat("m", "d", {"num_train_steps": 10_000, **hparams})


def timer(table, calls):
    def time_path(path):
        calls.append(path)
        return table[path]

    return time_path


def test_candidates_put_the_baseline_first(cpu):
    paths = step_path.candidates(config(precision="auto").scale, None, rule_jit=False)
    assert paths == [
        StepPath(F32, False, False), StepPath(F32, True, False), StepPath(F32, False, True),
        StepPath(BF16, False, False), StepPath(BF16, True, False), StepPath(BF16, False, True),
    ]  # fmt: skip
    # a set jit_compile: only the precisions; a set precision: only the compilations
    assert step_path.candidates(config(precision="auto", jit_compile=True).scale, None, False) == [
        StepPath(F32, True, False), StepPath(BF16, True, False)]  # fmt: skip
    on_gpu = step_path.candidates(config(precision="auto").scale, "NVIDIA H100", rule_jit=True)
    assert on_gpu[0] == StepPath(F32, True, False)
    assert {p.precision for p in on_gpu} == {F32, BF16, "mixed_float16"}


def test_the_baseline_stays_unless_another_path_is_clearly_faster():
    base, bf16 = StepPath(F32, False, False), StepPath(BF16, False, False)
    assert step_path.fastest({base: 1.0, bf16: 0.98}, base) == base  # within noise
    assert step_path.fastest({base: 1.0, bf16: 0.96}, base) == bf16
    assert step_path.fastest({base: 1.0, bf16: 1.5}, base) == base  # never the slower one


def test_choose_measures_once_then_reads_the_cache(cpu):
    c = config(precision="auto")
    paths = step_path.candidates(c.scale, None, rule_jit=False)
    times = dict(zip(paths, [2.0, 2.1, 1.9, 1.6, 1.8, 1.4]))
    calls, lines = [], []
    chosen, why = step_path.choose(c, timer(times, calls), log=lines.append)
    assert chosen == StepPath(BF16, False, True) and calls == paths
    assert why.startswith("auto: measured s/step: float32, XLA off 2.000") and "1.400" in why
    assert lines[0] == "step path 1/6: measuring float32, XLA off ..."
    cached = json.load(open(os.path.join(cpu, "cache", step_path.CACHE_FILE)))
    assert [v["chosen"] for v in cached.values()] == [chosen.hparams()]
    calls.clear()
    again, why = step_path.choose(c, timer(times, calls))
    assert again == chosen and calls == [] and why.endswith("(cached)")
    # another model is another key: measured again
    step_path.choose(config(precision="auto", embedding_size=64), timer(times, calls))
    assert calls == paths


def test_auto_precision_never_picks_a_path_measured_slower_than_float32(cpu):
    c = config(precision="auto", jit_compile=False)
    slow_bf16 = {StepPath(F32, False, False): 1.0, StepPath(BF16, False, False): 1.3}
    assert step_path.choose(c, timer(slow_bf16, []))[0].precision == F32


def test_a_busy_machine_does_not_cache(cpu, monkeypatch):
    monkeypatch.setattr(step_path.os, "getloadavg", lambda: (9.0, 9.0, 9.0))
    c = config(precision="auto", jit_compile=False)
    times = {StepPath(F32, False, False): 1.0, StepPath(BF16, False, False): 0.5}
    step_path.choose(c, timer(times, []))
    assert not os.path.exists(os.path.join(cpu, "cache", step_path.CACHE_FILE))


def test_set_values_short_runs_and_resumed_runs_are_not_measured(cpu):
    def never(path):
        raise AssertionError("measured")

    assert step_path.choose(config(jit_compile=True), never) == (
        StepPath(F32, True, False), "jit_compile=true was set")  # fmt: skip
    # jit_compile auto (the default) on a short run: the rule, and why
    chosen, why = step_path.choose(config(num_train_steps=100), never)
    assert chosen == StepPath(F32, False, False)
    assert "avx512_bf16" in why and "100 steps, fewer than the 2000" in why
    # a resumed run keeps what its config.json records, even when the cache would say otherwise
    recorded = os.path.join(cpu, "config.json")
    with open(recorded, "w") as f:
        json.dump({"precision": BF16, "jit_compile": False, "fused_elementwise": True}, f)
    chosen, why = step_path.choose(config(precision="auto"), never, resumed_config=recorded)
    assert chosen == StepPath(BF16, False, True) and "resumed" in why
    # workers would each measure their own steps: the rule, and precision auto is an error
    chosen, why = step_path.choose(config(), never, multi_worker=True)
    assert chosen == StepPath(F32, False, False) and "multi-worker" in why
    with pytest.raises(UserError, match="multi-worker run needs it set"):
        step_path.choose(config(precision="auto"), never, multi_worker=True)


def test_a_trainer_with_precision_auto_measures_trains_and_records_its_choice(
    tiny_dataset, tmp_path, monkeypatch, capsys
):
    import shutil

    from electra_tf.train import Trainer

    monkeypatch.setenv("ELECTRA_TF_CACHE_DIR", str(tmp_path / "cache"))
    data_dir = str(tmp_path / "data")
    shutil.copytree(tiny_dataset, data_dir)
    hp = {**TINY_RUN, "precision": "auto", "num_train_steps": 3, "deterministic": False}
    trainer = Trainer(PretrainingConfig.from_flat("auto", data_dir, hp))
    out = capsys.readouterr().out
    assert "step path 1/2: measuring float32, XLA off ..." in out
    assert "step path 2/2: mixed_bfloat16, XLA off: " in out
    chosen = trainer.config.scale.precision
    assert chosen in (F32, BF16) and trainer.path.precision == chosen
    assert trainer.path_reason.startswith("auto: measured s/step: float32, XLA off ")
    trainer.train()
    assert f"{chosen}, XLA off (auto: measured" in capsys.readouterr().out
    with open(os.path.join(data_dir, "models", "auto", "config.json")) as f:
        assert json.load(f)["precision"] == chosen  # what a resumed run keeps
    # the measurements left no run directory behind and the run's own model is of its precision
    assert os.listdir(os.path.join(data_dir, "models")) == ["auto"]
    compute = {F32: "float32", BF16: "bfloat16"}[chosen]
    assert trainer.model.discriminator.dtype_policy.compute_dtype == compute
