"""One way to build and read a config (issue #31, item 4): pretraining's and fine-tuning's
configs are built by `from_flat`, read by flat key or section, recorded by `to_flat`, copied by
`with_hparams`, and point `run` at their run directory; a key both have means the same in both."""

import dataclasses
import os
import subprocess
import sys
import typing

import pytest
from harness import REPO

from electra_tf import run_dir
from electra_tf.finetune import pretrained
from electra_tf.finetune.config import SECTIONS as FINETUNING_SECTIONS
from electra_tf.finetune.config import FinetuningConfig
from electra_tf.hparams import hparam
from electra_tf.pretraining_config import SECTIONS as PRETRAINING_SECTIONS
from electra_tf.pretraining_config import PretrainingConfig
from electra_tf.sectioned_config import (
    SectionedConfig,
    SharedGeneral,
    SharedOptimization,
    SharedScale,
)

# keys both jobs have whose accepted values differ, and why; every other shared key has the
# same type and choices in both (the defaults may differ where the original's do)
DIFFERENT_VALUES = {
    # fine-tuning may leave trials unseeded; pretraining's masking, sampling and dropout are
    # stateless random ops keyed by (seed, step) and need an integer
    "seed",
    # pretraining alone measures its step's paths (electra_tf.train.step_path)
    "precision",
    # fine-tuning also takes null, "derive it" as the original: from the model size, from the
    # tasks' kinds; set, both mean the same
    "learning_rate",
    "max_seq_length",
}


def _fields(sections):
    """flat key -> (annotation, choices), `Dict[str, Any]` and `dict` read alike."""
    out = {}
    for section in sections.values():
        hints = typing.get_type_hints(section)
        for f in dataclasses.fields(section):
            annotation = hints[f.name]
            if typing.get_origin(annotation) is dict:
                annotation = dict
            out[f.name] = (annotation, f.metadata.get("choices"))
    return out


def test_shared_keys_live_in_the_same_sections():
    pre, fine = PretrainingConfig.section_of(), FinetuningConfig.section_of()
    assert [k for k in sorted(set(pre) & set(fine)) if pre[k] != fine[k]] == []
    # and the sections both have are named alike
    assert {"general", "model", "optimization", "scale", "paths"} <= set(PRETRAINING_SECTIONS)
    assert {"general", "model", "optimization", "scale", "paths"} <= set(FINETUNING_SECTIONS)


def test_shared_keys_accept_the_same_values():
    pre, fine = _fields(PRETRAINING_SECTIONS), _fields(FINETUNING_SECTIONS)
    shared = sorted(set(pre) & set(fine))
    # the scale-out keys, the run's bookkeeping, the model and optimisation keys of both
    assert {"seed", "deterministic", "jit_compile", "vocab_size", "clip_norm", "precision"} <= set(
        shared
    )
    differ = [k for k in shared if pre[k] != fine[k]]
    assert sorted(differ) == sorted(DIFFERENT_VALUES), [(k, pre[k], fine[k]) for k in differ]
    for key in ("seed", "learning_rate", "max_seq_length"):  # the same type, plus null
        assert fine[key][0] == typing.Optional[pre[key][0]], key
    assert set(pre["precision"][1]) == set(fine["precision"][1]) | {"auto"}


def test_shared_defaults_that_used_to_differ_now_agree():
    pre = PretrainingConfig.from_flat("m", "d", {})
    fine = FinetuningConfig.from_flat("m", "d", {})
    assert (pre.seed, fine.seed) == (0, 0)  # fine-tuning's default was None (unseeded)
    assert (pre.vocab_size, fine.vocab_size) == (None, None)  # fine-tuning's was 30522
    assert (pre.jit_compile, fine.jit_compile) == ("auto", "auto")
    assert (pre.clip_norm, fine.clip_norm) == (1.0, 1.0)
    # a null jit_compile (configs written before "auto") reads as "auto" in both
    assert PretrainingConfig.from_flat("m", "d", {"jit_compile": None}).jit_compile == "auto"
    assert FinetuningConfig.from_flat("m", "d", {"jit_compile": None}).jit_compile == "auto"
    # and a null clip_norm turns clipping off in both
    assert PretrainingConfig.from_flat("m", "d", {"clip_norm": None}).clip_norm is None
    assert FinetuningConfig.from_flat("m", "d", {"clip_norm": None}).clip_norm is None


@pytest.mark.parametrize("cls", [PretrainingConfig, FinetuningConfig])
def test_one_way_to_build_and_read(cls, tmp_path):
    data = str(tmp_path)
    hparams = {"learning_rate": 2e-4, "log_every_steps": 7, "seed": 5, "max_seq_length": 64}
    config = cls.from_flat("m", data, hparams)
    # a flat key reads the same through the config and through its section
    assert config.learning_rate == config.optimization.learning_rate == 2e-4
    assert config.log_every_steps == config.general.log_every_steps == 7
    assert config.seed == config.general.seed == 5
    assert config.train_batch_size == config.optimization.train_batch_size
    assert config.max_seq_length == config.model.max_seq_length == 64
    assert config.jit_compile == config.scale.jit_compile == "auto"
    # every flat key is recorded, with the model name and data directory
    recorded = config.to_flat()
    assert set(cls.flat_keys()) | {"model_name", "data_dir"} <= set(recorded)
    assert (recorded["model_name"], recorded["data_dir"], recorded["seed"]) == ("m", data, 5)
    # a recorded config reads back to the same config
    again = cls.from_flat("m", data, {k: v for k, v in recorded.items() if k in cls.flat_keys()})
    assert again.to_flat() == recorded
    # a changed copy, the original untouched
    other = config.with_hparams(log_every_steps=3)
    assert (other.log_every_steps, config.log_every_steps, other.learning_rate) == (3, 7, 2e-4)
    # the run directory: DATA_DIR/models/MODEL_NAME in both (pretraining writes its run there,
    # fine-tuning its results and kept models)
    assert isinstance(config.run, run_dir.RunDirectory)
    assert config.run.path == os.path.join(data, "models", "m")
    with pytest.raises(AttributeError, match="no attribute 'no_such_key'"):
        config.no_such_key


def test_a_key_named_like_a_section_is_refused():
    @dataclasses.dataclass(frozen=True)
    class Optimization:
        optimization: str = hparam("adamw")

    class Clashing(SectionedConfig):
        SECTIONS = {"optimization": Optimization}

    with pytest.raises(TypeError, match=r"flat keys named like sections: \['optimization'\]"):
        Clashing.section_of()
    # the real configs have none (a clash would read the section instead of the key)
    assert PretrainingConfig.section_of()["optimizer"] == "optimization"
    assert FinetuningConfig.section_of()["optimizer"] == "optimization"
    assert PretrainingConfig.from_flat("m", "d", {"objective": "mlm"}).objective == "mlm"


def test_finetuning_vocab_size_defaults_to_the_vocab_files_lines(tmp_path, capsys):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(f"t{i}\n" for i in range(37)), encoding="utf-8")
    config = FinetuningConfig.from_flat("m", str(tmp_path), {"vocab_file": str(vocab)})
    # no config.json beside the (absent) model: the size preset, with the vocab file's size
    assert pretrained.load_model_config(config, None).vocab_size == 37
    assert "no config.json" in capsys.readouterr().out
    # a vocab_size set is used as given, as in pretraining
    sized = config.with_hparams(vocab_size=30522)
    assert pretrained.load_model_config(sized, None).vocab_size == 30522


def test_building_a_config_imports_no_tensorflow(tmp_path):
    """Both configs build from flat hparams (a custom task's task.json read too) without
    TensorFlow or Keras: what validation needs of the objectives and the tasks is TF-free."""
    task = tmp_path / "finetuning_data" / "topic"
    task.mkdir(parents=True)
    (task / "task.json").write_text(
        '{"type": "classification", "labels": ["a", "b"], "text_a": 0, "label": 1, '
        '"num_train_epochs": 7}'
    )
    code = f"""
import sys
from electra_tf.pretraining_config import PretrainingConfig
from electra_tf.finetune.config import FinetuningConfig
p = PretrainingConfig.from_flat("m", {str(tmp_path)!r}, {{"objective": "electric", "debug": True}})
f = FinetuningConfig.from_flat("m", {str(tmp_path)!r}, {{"task_names": ["topic"]}})
print(p.two_tower_generator, f.num_train_epochs, "tensorflow" in sys.modules, "keras" in sys.modules)
"""
    env = {**os.environ, "PYTHONPATH": REPO}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "7.0", "False", "False"]


@pytest.mark.parametrize("cls", [PretrainingConfig, FinetuningConfig])
def test_every_key_reads_the_same_by_key_and_by_section(cls):
    config = cls.from_flat("m", "d", {"log_every_steps": 3})
    for key, section in cls.section_of().items():
        assert getattr(config, key) == getattr(getattr(config, section), key), key
    # the derived values included: resolved in the section, given as null
    if cls is FinetuningConfig:
        assert config.optimization.num_train_epochs == 3.0
        assert config.given("num_train_epochs") is None
    assert config.model.embedding_size == 128 and config.given("embedding_size") is None


def test_shared_keys_are_defined_once():
    for job in (PRETRAINING_SECTIONS, FINETUNING_SECTIONS):
        for shared, name in ((SharedGeneral, "general"), (SharedOptimization, "optimization"),
                             (SharedScale, "scale")):  # fmt: skip
            assert issubclass(job[name], shared)
    fine = {f.name: f for s in FINETUNING_SECTIONS.values() for f in dataclasses.fields(s)}
    pre = {f.name: f for s in PRETRAINING_SECTIONS.values() for f in dataclasses.fields(s)}
    for key in ("train_batch_size", "iterations_per_loop", "eval_batch_size"):
        # another default, the same help, where the original's defaults differ
        assert fine[key].metadata == pre[key].metadata and fine[key].default != pre[key].default
