"""The typed fine-tuning config: defaults (by model size and by the tasks' kinds), the debug
preset, type and choice errors naming the key, compatibility-only keys, immutability."""

import dataclasses
import itertools
import os

import pytest

from electra_tf import hparams
from electra_tf.errors import UserError
from electra_tf.finetune.config import SECTIONS, FinetuningConfig
from electra_tf.finetune.registry import TASKS, get_task, task_defaults


def test_config_defaults_and_unknown_keys():
    small = FinetuningConfig("m", "d", task_names=["sst"])
    assert (small.learning_rate, small.layerwise_lr_decay, small.num_train_epochs) == (
        3e-4,
        0.8,
        3.0,
    )
    assert (small.max_seq_length, small.train_batch_size, small.warmup_proportion) == (128, 32, 0.1)
    base = FinetuningConfig("m", "d", task_names=["rte"], model_size="base")
    assert (base.learning_rate, base.num_train_epochs) == (1e-4, 10.0)
    large = FinetuningConfig("m", "d", task_names=["sts"], model_size="large", learning_rate=1e-5)
    assert (large.learning_rate, large.layerwise_lr_decay, large.num_train_epochs) == (
        1e-5,
        0.9,
        10.0,
    )
    assert FinetuningConfig("m", "d", task_names=["chunk"]).max_seq_length == 256
    assert FinetuningConfig("m", "d").init_checkpoint == os.path.join("d", "models", "m")
    with pytest.raises(
        UserError, match="unknown hparam.*learning_rat.*valid keys: .*layerwise_lr_decay"
    ):
        FinetuningConfig("m", "d", learning_rat=1e-4)
    with pytest.raises(UserError, match="unknown task 'glue'"):
        get_task(FinetuningConfig("m", "d", task_names=["glue"]), "glue", None)
    assert {
        "cola",
        "sst",
        "mrpc",
        "sts",
        "qqp",
        "mnli",
        "qnli",
        "rte",
        "wnli",
        "chunk",
        "ner",
    } <= set(TASKS)


def test_types_are_checked_and_name_the_key():
    with pytest.raises(
        UserError, match=r'hparam learning_rate: expected float or null, got "fast"'
    ):
        FinetuningConfig("m", "d", learning_rate="fast")
    with pytest.raises(
        UserError, match=r"hparam num_train_epochs: expected float or null, got true"
    ):
        FinetuningConfig("m", "d", num_train_epochs=True)  # a bool is no number
    with pytest.raises(UserError, match=r"hparam train_batch_size: expected int, got 1.5"):
        FinetuningConfig("m", "d", train_batch_size=1.5)
    with pytest.raises(UserError, match=r"hparam task_names: expected list or str, got 3"):
        FinetuningConfig("m", "d", task_names=3)
    with pytest.raises(UserError, match=r"hparam do_lower_case: expected bool, got \"yes\""):
        FinetuningConfig("m", "d", do_lower_case="yes")
    with pytest.raises(UserError, match="model_size 'huge' is not one of small, base, large"):
        FinetuningConfig("m", "d", model_size="huge")
    # lossless readings of JSON numbers are accepted: 16.0 is the int 16, 2 the float 2
    config = FinetuningConfig("m", "d", train_batch_size=16.0, num_train_epochs=2)
    assert config.train_batch_size == 16 and isinstance(config.train_batch_size, int)
    assert config.num_train_epochs == 2
    with pytest.raises(UserError, match="task_names is empty"):
        FinetuningConfig("m", "d", task_names="")
    with pytest.raises(UserError, match="max_seq_length must be positive, got 0"):
        FinetuningConfig("m", "d", max_seq_length=0)


COMPAT = (
    "predict_batch_size",
    "log_examples",
    "n_writes_test",
    "use_tfrecords_if_existing",
    "use_tpu",
    "num_tpu_cores",
    "tpu_job_name",
    "tpu_name",
    "tpu_zone",
    "gcp_project",
)


def test_compat_keys_warn_once_and_only_when_set(monkeypatch, capsys):
    monkeypatch.setattr(hparams, "_WARNED", set())
    compat = {f.name for f in dataclasses.fields(SECTIONS["compat"])}
    assert compat == set(COMPAT)
    assert all(f.metadata["compat"] for f in dataclasses.fields(SECTIONS["compat"]))
    FinetuningConfig("m", "d", use_tpu=True, tpu_name="my-tpu")
    FinetuningConfig("m", "d", use_tpu=True)
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "warning: hparam use_tpu is accepted for compatibility with the original and has no "
        "effect here",
        "warning: hparam tpu_name is accepted for compatibility with the original and has no "
        "effect here",
    ]
    # the debug preset sets log_examples; a config read back from a run's config.json (every
    # key recorded) is not the user's doing: neither warns
    recorded = FinetuningConfig("m", "d", debug=True).to_flat()
    assert recorded["log_examples"] is True
    recorded = {k: v for k, v in recorded.items() if k not in ("model_name", "data_dir")}
    again = FinetuningConfig.from_flat("m", "d", recorded, explicit=())
    assert again.to_flat() == FinetuningConfig("m", "d", debug=True).to_flat()
    assert capsys.readouterr().err == ""
    assert FinetuningConfig("m", "d", predict_batch_size=8).predict_batch_size == 8


def current_rule(names):
    """The original's resolution (configure_finetuning.py, by name, which misses naturalqs),
    which the kinds now declare: a single task's defaults; a multi-task run's are the plain
    ones (3 epochs, 128 tokens), whatever its tasks."""
    if len(names) != 1:
        return 3.0, 128
    qa = any("squad" in n or "qa" in n for n in names)
    epochs = 2.0 if qa else 10.0 if any(n in ("rte", "sts") for n in names) else 3.0
    length = 512 if qa else 256 if any(n in ("chunk", "ner") for n in names) else 128
    return epochs, length


def test_defaults_come_from_the_task_kinds():
    for name in TASKS:
        config = FinetuningConfig("m", "d", task_names=[name])
        assert (config.num_train_epochs, config.max_seq_length) == current_rule([name]), name
        assert isinstance(config.num_train_epochs, float)
    # by hand, single tasks and multi-task lists
    expect = {
        ("sst",): (3.0, 128),
        ("rte",): (10.0, 128),
        ("qnli",): (3.0, 128),  # RTE's layout, not its epochs
        ("sts",): (10.0, 128),
        ("chunk",): (3.0, 256),
        ("squad",): (2.0, 512),
        # multi-task runs: the plain defaults, as the original (task defaults are single-task)
        ("sst", "rte"): (3.0, 128),
        ("chunk", "rte"): (3.0, 128),
        ("ner", "sst"): (3.0, 128),
        ("mrpc", "sts"): (3.0, 128),
        ("sts", "chunk", "squadv1"): (3.0, 128),
        ("triviaqa", "mnli"): (3.0, 128),
        ("naturalqs",): (3.0, 128),
        ("naturalqs", "newsqa"): (3.0, 128),
    }
    for names, want in expect.items():
        config = FinetuningConfig("m", "d", task_names=list(names))
        assert (config.num_train_epochs, config.max_seq_length) == want, names
        assert tuple(dataclasses.astuple(task_defaults(names))) == want
    for names in itertools.permutations(TASKS, 2):
        assert dataclasses.astuple(task_defaults(names)) == current_rule(names), names
    # set values win; an unknown task counts as a plain one (get_task reports it)
    config = FinetuningConfig("m", "d", task_names=["squad"], num_train_epochs=1, max_seq_length=64)
    assert (config.num_train_epochs, config.max_seq_length) == (1, 64)
    assert dataclasses.astuple(task_defaults(["glue"])) == (3.0, 128)
    assert FinetuningConfig("m", "d", task_names="sst,chunk").task_names == ["sst", "chunk"]


def test_debug_preset_and_size_defaults():
    debug = FinetuningConfig("m", "d", task_names=["rte"], debug=True, train_batch_size=8)
    assert (debug.num_trials, debug.num_train_epochs, debug.log_examples) == (1, 3.0, True)
    assert debug.train_batch_size == 8  # the user's value wins over the preset
    assert FinetuningConfig("m", "d", debug=True, num_trials=4).num_trials == 4
    assert FinetuningConfig("m", "d").embedding_size == 128  # small, as the original
    assert FinetuningConfig("m", "d", model_size="base").embedding_size is None
    base = FinetuningConfig("m", "d", model_size="base", layerwise_lr_decay=0.0)
    assert (base.learning_rate, base.layerwise_lr_decay) == (1e-4, 0.0)
    assert FinetuningConfig("m", "d", model_size="large").learning_rate == 5e-5


def test_frozen_and_every_key_recorded():
    config = FinetuningConfig("m", "d", task_names=["sst"], seed=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.vocab_file = "v.txt"
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.general.seed = 4
    other = config.with_hparams(vocab_file="v.txt")
    assert (other.vocab_file, config.vocab_file, other.seed) == ("v.txt", None, 3)
    assert config.sections_flat()["num_train_epochs"] is None  # derived, not written back
    d = config.to_flat()
    # the keys of the original's configure_finetuning.py and this project's additions
    # (optimizer: #17; deterministic: #19; reinit_top_layers, embedding_lr_multiplier: #15;
    # classifier_pooling; distribution, precision, allreduce_dtype, gradient_accumulation_steps:
    # #31, as pretraining's; adam_bias_correction: #34, as pretraining's)
    keys = {f.name for s in SECTIONS.values() for f in dataclasses.fields(s)}
    assert set(d) == keys | {"model_name", "data_dir"} and len(keys) == 61
    assert d["reinit_top_layers"] == 0  # the original: every layer pretrained
    assert d["embedding_lr_multiplier"] == 1.0  # the original: no extra factor
    assert (d["num_train_epochs"], d["learning_rate"], d["init_checkpoint"]) == (
        3.0,
        3e-4,
        os.path.join("d", "models", "m"),
    )
    assert config.results_dir == os.path.join("d", "models", "m", "results")
    assert config.with_hparams(random_init=True).results_dir.endswith("results_random_init")
    with pytest.raises(AttributeError):
        config.no_such_key
