"""run_pretraining.py as a user meets it: --describe, and one clear error line for bad input."""

import json
import os
import shutil

import pytest
from harness import error_line, run_script

SMALL = dict(max_seq_length=32, train_batch_size=4, num_train_steps=1, jit_compile=False)


@pytest.mark.slow
def test_describe_prints_parameter_counts_of_the_original(tmp_path):
    p = run_script("run_pretraining.py", f"--data_dir={tmp_path}", "--model_name=m", "--describe")
    assert p.returncode == 0, p.stderr[-2000:]
    d = json.loads(p.stdout)
    assert d["parameters"]["discriminator_backbone"] == 13_483_008
    assert d["parameters"]["total"] == 14_196_219
    assert d["max_predictions_per_seq"] == 19
    assert d["model_config"]["embedding_size"] == 128
    assert d["generator_config"]["hidden_size"] == 64
    assert d["flops_per_step"] > 0
    from electra_tf.pretraining_config import PretrainingConfig
    from electra_tf.train import describe

    base = describe(PretrainingConfig.from_flat("m", str(tmp_path), {"model_size": "base"}))
    assert base["parameters"]["discriminator_backbone"] == 108_891_648


@pytest.mark.slow
def test_hparam_errors_are_one_line_naming_the_key(tmp_path):
    def err(hparams):
        return error_line(
            run_script(
                "run_pretraining.py",
                f"--data_dir={tmp_path}",
                "--model_name=m",
                "--describe",
                f"--hparams={hparams}",
            )
        )

    line = err('{"lerning_rate": 1}')
    assert "lerning_rate" in line and "valid keys" in line and "learning_rate" in line
    line = err('{"num_train_steps": "ten"}')
    assert "num_train_steps" in line and "expected int" in line and '"ten"' in line
    assert "expected float" in err('{"learning_rate": [1]}')
    assert "embedding_lr_multiplier must be >= 0, got -1" in err('{"embedding_lr_multiplier": -1}')
    line = err('{"precision": "float8"}')
    assert "precision 'float8' is not one of float32, mixed_bfloat16, mixed_float16" in line
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "learning_rate": 1e-3,\n  "seed": 1,,\n}\n')
    line = err(str(bad))
    assert str(bad) in line and "line 3, column 13" in line


def _user_error(data_dir, **hparams):
    from electra_tf.errors import UserError
    from electra_tf.pretraining_config import PretrainingConfig
    from electra_tf.train import Trainer

    with pytest.raises(UserError) as e:
        Trainer(PretrainingConfig.from_flat("m", str(data_dir), {**SMALL, **hparams})).train()
    return str(e.value)


@pytest.mark.slow
def test_bad_inputs_are_user_errors_naming_what_is_wrong(tiny_dataset, tmp_path):
    dataset = tmp_path / "data"
    shutil.copytree(tiny_dataset, dataset)
    empty = tmp_path / "empty"
    empty.mkdir()
    err = _user_error(empty)
    assert "vocab" in err and str(empty) in err
    shutil.copyfile(dataset / "vocab.txt", empty / "vocab.txt")
    err = _user_error(empty)
    assert "pretrain_tfrecords" in err
    # TFRecords of another length than max_seq_length
    err = _user_error(dataset, max_seq_length=64)
    assert "pretrain_data.tfrecord" in err and "64" in err
    # a dataset built with another vocab than the config's
    other = tmp_path / "other_vocab.txt"
    other.write_text((dataset / "vocab.txt").read_text(encoding="utf-8") + "extra\n", "utf-8")
    err = _user_error(dataset, vocab_file=str(other))
    assert "another vocab" in err
    assert not os.path.exists(dataset / "models" / "m" / "checkpoint")
    # as a user meets it: one `error:` line, exit status 1, no traceback
    line = error_line(
        run_script(
            "run_pretraining.py",
            f"--data_dir={dataset}",
            "--model_name=m",
            f"--hparams={json.dumps({**SMALL, 'max_seq_length': 64})}",
        )
    )
    assert "pretrain_data.tfrecord" in line
