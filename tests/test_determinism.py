"""One rule for both scripts: `deterministic` needs a `seed` set, else a one-line error before
anything runs (op determinism refuses every unseeded random op, e.g. dropout's)."""

import json

import pytest
from harness import error_line, run_script

from electra_tf.errors import UserError
from electra_tf.finetune.config import FinetuningConfig
from electra_tf.pretraining_config import PretrainingConfig

MESSAGE = 'hparam deterministic: true needs a seed: set "seed" (an integer) too'


def test_pretraining_deterministic_needs_a_seed():
    c = PretrainingConfig.from_flat("m", "d", {"deterministic": True, "seed": 7})
    assert (c.general.deterministic, c.general.seed) == (True, 7)
    # seed 0 set explicitly is a seed (the default's value, but the user's choice)
    assert (
        PretrainingConfig.from_flat("m", "d", {"deterministic": True, "seed": 0}).general.seed == 0
    )
    # without determinism the default seed still serves (initial weights, masking)
    assert PretrainingConfig.from_flat("m", "d", {}).general.seed == 0
    with pytest.raises(UserError) as e:
        PretrainingConfig.from_flat("m", "d", {"deterministic": True})
    assert str(e.value) == MESSAGE
    # the debug preset does not bring a seed either
    with pytest.raises(UserError, match="deterministic"):
        PretrainingConfig.from_flat("m", "d", {"deterministic": True, "debug": True})


def test_finetuning_deterministic_needs_a_seed():
    c = FinetuningConfig("m", "d", deterministic=True, seed=3)
    assert (c.deterministic, c.trial_seed(1)) == (True, 4)
    assert FinetuningConfig("m", "d", seed=None).deterministic is False
    for hparams in ({"deterministic": True}, {"deterministic": True, "seed": None}):
        with pytest.raises(UserError) as e:
            FinetuningConfig("m", "d", **hparams)
        assert str(e.value) == MESSAGE
    # a copy made by the program keeps the rule
    with pytest.raises(UserError, match="deterministic"):
        c.with_hparams(seed=None)


@pytest.mark.slow
@pytest.mark.parametrize("script", ["run_finetuning.py", "run_pretraining.py"])
def test_scripts_stop_with_one_line_before_running(script, tmp_path):
    data = tmp_path / "data"
    data.mkdir()

    def run(hparams, *args):
        return run_script(
            script,
            f"--data_dir={data}",
            "--model_name=m",
            f"--hparams={json.dumps(hparams)}",
            *args,
        )

    p = run({"deterministic": True})
    assert p.returncode != 0
    assert error_line(p) == f"error: {MESSAGE}"
    assert list(data.iterdir()) == []  # nothing ran: no model directory, no lock, no data
    if script == "run_pretraining.py":  # with a seed the config is fine
        p = run({"deterministic": True, "seed": 1}, "--describe")
        assert p.returncode == 0, p.stderr[-2000:]
        assert json.loads(p.stdout)["seed"] == 1
    else:  # with a seed it gets as far as looking for the model's vocab
        line = error_line(run({"deterministic": True, "seed": 1}))
        assert line.startswith("error: no vocab file: tried "), line
