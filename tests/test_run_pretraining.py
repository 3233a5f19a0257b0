"""run_pretraining.py as a user meets it: --describe, and one clear error line for bad input."""

import json
import os
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""}
SMALL = dict(max_seq_length=32, train_batch_size=4, num_train_steps=1, jit_compile=False)


def _run(*args, cwd=REPO):
    p = subprocess.run(
        [sys.executable, os.path.join(REPO, "run_pretraining.py"), *args],
        env=ENV,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return p


def _error_line(p):
    assert p.returncode == 1, p.stdout[-2000:] + p.stderr[-2000:]
    errors = [line for line in p.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, p.stderr[-3000:]
    assert "Traceback" not in p.stderr
    return errors[0]


def test_describe_prints_parameter_counts_of_the_original(tmp_path):
    p = _run(f"--data_dir={tmp_path}", "--model_name=m", "--describe")
    assert p.returncode == 0, p.stderr[-2000:]
    d = json.loads(p.stdout)
    assert d["parameters"]["discriminator_backbone"] == 13_483_008
    assert d["max_predictions_per_seq"] == 19
    assert d["model_config"]["embedding_size"] == 128
    assert d["generator_config"]["hidden_size"] == 64
    assert d["flops_per_step"] > 0
    from electra_tf.configs import PretrainingConfig
    from electra_tf.training import describe_json

    base = json.loads(describe_json(PretrainingConfig("m", str(tmp_path), model_size="base")))
    assert base["parameters"]["discriminator_backbone"] == 108_891_648


def test_unknown_hparam_is_an_error_listing_valid_keys(tmp_path):
    err = _error_line(
        _run(f"--data_dir={tmp_path}", "--model_name=m", '--hparams={"lerning_rate": 1}')
    )
    assert "lerning_rate" in err and "valid keys" in err and "learning_rate" in err


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("ds")
    corpus = d / "corpus.txt"
    with open(os.path.join(REPO, "data", "corpus", "enwiki_sample.txt"), encoding="utf-8") as f:
        corpus.write_text("".join(f.readlines()[:80]), encoding="utf-8")
    shutil.copyfile(os.path.join(REPO, "data", "vocab", "vocab.txt"), d / "vocab.txt")
    p = subprocess.run(
        [
            sys.executable,
            os.path.join(REPO, "build_pretraining_dataset.py"),
            f"--corpus_dir={corpus}",
            f"--vocab_file={d / 'vocab.txt'}",
            f"--output_dir={d / 'pretrain_tfrecords'}",
            "--max_seq_length=32",
            "--num_out_files=1",
        ],
        env=ENV,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    return d


def _user_error(data_dir, **hparams):
    from electra_tf.configs import PretrainingConfig
    from electra_tf.errors import UserError
    from electra_tf.training import PretrainingRunner

    with pytest.raises(UserError) as e:
        PretrainingRunner(PretrainingConfig("m", str(data_dir), **{**SMALL, **hparams})).train()
    return str(e.value)


def test_bad_inputs_are_user_errors_naming_what_is_wrong(dataset, tmp_path):
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
    line = _error_line(
        _run(
            f"--data_dir={dataset}",
            "--model_name=m",
            f"--hparams={json.dumps({**SMALL, 'max_seq_length': 64})}",
        )
    )
    assert "pretrain_data.tfrecord" in line
