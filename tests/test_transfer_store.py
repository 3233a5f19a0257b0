"""What the transfer experiment keeps in the repository (experiments/transfer_store.py): encoders
made once and restored on a fresh machine, fine-tuning records matched by their hparams."""

import json
import os
import sys

import pytest

from electra_tf.errors import UserError
from experiments import transfer_store


def _fake_export(calls):
    def export(checkpoint, out_dir):
        calls.append(checkpoint)
        os.makedirs(out_dir)
        with open(os.path.join(out_dir, "config.json"), "w") as f:
            json.dump({"from": checkpoint}, f)

    return export


def test_an_encoder_is_exported_once_kept_and_restored_on_a_fresh_machine(tmp_path):
    model_dir, kept = tmp_path / "work" / "pt_a", tmp_path / "repo" / "checkpoints" / "pt_a"
    model_dir.mkdir(parents=True)
    ckpt = str(model_dir / "ckpt-10")
    open(ckpt + ".index", "w").close()
    (model_dir / transfer_store.HELDOUT_FILE).write_text('{"heldout": {"disc_auc": 0.7}}')
    calls = []
    local = transfer_store.encoder_dir(str(model_dir), ckpt, str(kept), _fake_export(calls))
    assert calls == [ckpt]
    assert json.loads((kept / "config.json").read_text()) == {"from": ckpt}
    assert (
        json.loads((kept / transfer_store.HELDOUT_FILE).read_text())["heldout"]["disc_auc"] == 0.7
    )
    # a second call finds it made: nothing exported again
    assert transfer_store.encoder_dir(str(model_dir), ckpt, str(kept), _fake_export(calls)) == local
    assert calls == [ckpt]
    # a fresh machine: no run directory, the kept copy is restored (metrics read from it)
    fresh = tmp_path / "fresh" / "pt_a"
    local2 = transfer_store.encoder_dir(
        str(fresh), str(fresh / "ckpt-10"), str(kept), _fake_export(calls)
    )
    assert calls == [ckpt]
    assert json.loads(open(os.path.join(local2, "config.json")).read()) == {"from": ckpt}
    assert not os.path.exists(os.path.join(local2, transfer_store.HELDOUT_FILE))
    metrics = transfer_store.heldout_metrics(str(fresh), str(kept))
    assert metrics["heldout"]["disc_auc"] == 0.7
    assert transfer_store.heldout_metrics(str(fresh), str(tmp_path / "none")) is None
    with pytest.raises(UserError, match="pretrain first"):
        transfer_store.encoder_dir(str(tmp_path / "x"), "ckpt-1", str(tmp_path / "y"), calls.append)


def test_a_record_is_found_only_for_the_same_hparams_and_pretrained_run(tmp_path):
    h = {"learning_rate": 1e-4, "num_train_epochs": 10 / 3, "task_names": ["sst"], "seed": 2}
    acc = transfer_store.keep_record(
        str(tmp_path), "dev/n300_s2/electra/x", "pt_e_1", h, "110", 3.0
    )
    assert acc == pytest.approx(200 / 3)
    found = transfer_store.kept_record(str(tmp_path), "dev/n300_s2/electra/x", "pt_e_1", dict(h))
    assert found == (pytest.approx(200 / 3), "110")
    assert transfer_store.kept_record(str(tmp_path), "dev/n300_s2/electra/x", "pt_e_0.5", h) is None
    other = {**h, "learning_rate": 3e-4}
    assert (
        transfer_store.kept_record(str(tmp_path), "dev/n300_s2/electra/x", "pt_e_1", other) is None
    )
    assert transfer_store.kept_record(str(tmp_path), "dev/n300_s3/electra/x", "pt_e_1", h) is None


def test_runs_are_named_so_that_budgets_and_arms_never_share_a_record():
    # in a subprocess: transfer.py defines absl flags that efficiency.py (imported by other tests
    # of this process) defines too
    import subprocess

    code = """
from experiments import transfer
assert transfer.run_name("electra", 99996668273856.0) == "pt_electra_1e14"
assert transfer.run_name("mlm", 4e14) == "pt_mlm_4e14"
assert transfer.run_name("electra", 2.5e14) == "pt_electra_2.5e14"
h = {"learning_rate": 3e-4, "layerwise_lr_decay": 1.0}
small = transfer.make_run("dev", "1000", 2, "electra", "pt_electra_1e14", h)
large = transfer.make_run("dev", "1000", 2, "electra", "pt_electra_4e14", h)
assert small["key"] == "dev/n1000_s2/electra/pt_electra_1e14/layerwise_lr_decay1_learning_rate0.0003", small
assert small["key"] != large["key"]
rand = [transfer.make_run("dev", "300", 0, "random_init", pt, h) for pt in ("a", "b")]
assert rand[0]["key"] == rand[1]["key"] == "dev/n300_s0/random_init/layerwise_lr_decay1_learning_rate0.0003"
assert [transfer.record_source(r) for r in (small, rand[0])] == ["pt_electra_1e14", None]
# the frozen-embeddings points: the bias-corrected six with the embedding layer frozen, keyed apart
frozen = transfer.FROZEN_EMBEDDINGS_GRID
assert [(h["learning_rate"], h["layerwise_lr_decay"]) for h in frozen] == [
    (3e-4, 0.8), (3e-4, 1.0), (1e-3, 0.8), (1e-3, 1.0), (3e-3, 0.8), (3e-3, 1.0)]
assert all(h["embedding_lr_multiplier"] == 0.0 and h["adam_bias_correction"] for h in frozen)
key = transfer.make_run("validation", "1000", 0, "electra", "pt_electra_1e14", frozen[3])["key"]
assert key == ("validation/n1000_s0/electra/pt_electra_1e14/"
               "adam_bias_correction_embedding_lr_multiplier0_layerwise_lr_decay1_learning_rate0.001"), key
"""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
