"""The no-flag `run_finetuning.py` demo (`experiments/finetune_demo.py`) replays the in-domain transfer experiment's kept runs of
seed 0 at 300 labels: the same 300 sentences and the same hparams as those runs' records."""

import hashlib
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "experiments"))

import transfer_data  # noqa: E402

from electra_tf.io_utils import read_json  # noqa: E402

# sha256 of the train.tsv files that transfer.py at 4329364 (before transfer_data.py existed) wrote
# for the experiment's dev runs; every kept record of those cells trained on exactly these files
TRAIN_SHA256 = {
    ("300", 0): "342f6323dc4a8a27e983eed103d6edc87e403328994ec8d14c5a661aae2a47e1",
    ("1000", 3): "54db589b734920d09636c9756f6ffa168c87b68d3c0a79936531d4c68534fe69",
}
MOVIE = os.path.join(REPO, "data", "movie_sentiment")


@pytest.fixture(scope="module")
def demo():
    """experiments/finetune_demo.py (no flags of its own, unlike run_finetuning.py)."""
    import finetune_demo

    return finetune_demo


@pytest.mark.parametrize("cell", sorted(TRAIN_SHA256))
def test_label_subsets_are_the_experiments(cell, tmp_path):
    n, seed = cell
    task = transfer_data.write_sst_task(str(tmp_path), MOVIE, "dev", n, seed)
    with open(os.path.join(task, "train.tsv"), "rb") as f:
        train = f.read()
    assert hashlib.sha256(train).hexdigest() == TRAIN_SHA256[cell]
    assert train.count(b"\n") == int(n) + 1  # the header and n sentences
    header, pool, validation, dev = transfer_data.task_rows(MOVIE)
    assert (len(pool), len(validation), len(dev)) == (7066, 1000, 1250)
    rows = train.decode().splitlines()[1:]
    assert set(rows) <= set(pool) and not set(rows) & set(validation)
    with open(os.path.join(task, "dev.tsv"), encoding="utf-8") as f:
        assert f.read().splitlines()[1:] == dev


def test_label_subsets_nest_and_scale_epochs():
    pool = [f"row{i}" for i in range(50)]
    small, large = (transfer_data.label_subset(pool, n, seed=2) for n in (5, 20))
    assert large[:5] == small and len(set(large)) == 20
    assert transfer_data.label_subset(pool, 5, seed=3) != small
    assert sorted(transfer_data.label_subset(pool, None, seed=2)) == sorted(pool)
    # 10 epochs at 1,000 labels: the same updates at 300 (33.3 epochs), at least 2 epochs
    assert transfer_data.epochs_for("300", 7066, 10.0) == 10.0 * 1000.0 / 300
    assert transfer_data.epochs_for("all", 7066, 10.0) == 2.0
    with pytest.raises(ValueError, match="7066"):
        transfer_data.write_sst_task("unused", MOVIE, "dev", "8000", 0)


def test_demo_replays_the_kept_runs(demo):
    runs = demo.demo_runs({}, "runs/demo", "electra_small_demo")
    assert [name for _, name, _ in runs] == [demo.KEPT_MODEL_NAME] * 2 + ["electra_small_demo"]
    for (_, _, hparams), arm in zip(runs[:2], ("electra", "random_init")):
        record = read_json(
            os.path.join(
                demo.RUNS,
                f"dev__n300_s0__{arm}__"
                + ("pt_electra_1e14__" if arm == "electra" else "")
                + ("adam_bias_correction_" if hparams.get("adam_bias_correction") else "")
                + (
                    f"embedding_lr_multiplier{hparams['embedding_lr_multiplier']:g}_"
                    if hparams.get("embedding_lr_multiplier", 1.0) != 1.0
                    else ""
                )  # fmt: skip
                + "layerwise_lr_decay{layerwise_lr_decay:g}_learning_rate{learning_rate:g}.json".format(
                    **hparams
                ),
            )
        )
        paths = {k: hparams.pop(k) for k in ("init_checkpoint", "vocab_file")}
        assert os.path.samefile(paths["init_checkpoint"], os.path.join(REPO, "experiments",
                                "results", "ppmi_init", "checkpoints",
                                record["pretrained"] or "pt_electra_1e14"))  # fmt: skip
        # the record's hparams, less the experiment's log interval (it logs nothing per step)
        expected = {k: v for k, v in record["hparams"].items() if k != "log_every_steps"}
        assert {"random_init": False, **hparams} == expected  # False: the config's default
    # overrides reach every run
    assert all(
        h["learning_rate"] == 5e-5
        for _, _, h in demo.demo_runs({"learning_rate": 5e-5}, "runs/demo", "electra_small_demo")
    )


def test_demo_ends_with_the_experiments_paired_results(demo):
    count_vectors, first, confirmation, bias_corrected = demo.experiment_lines()
    # the declared test of the encoder the demo loads (per-seed differences +5.92 ... +9.04:
    # 82.08 / 10), then the three tests of the earlier encoder
    assert count_vectors.startswith(
        "demo: the experiment at N = 300, ELECTRA from count vectors, its declared test, "
        "seeds 25-34: ELECTRA - random_init +8.21"
    )
    assert count_vectors.endswith("(experiments/results/ppmi_init/transfer_summary.json)")
    assert "the earlier ELECTRA, seeds 0-4: ELECTRA - random_init +2.48" in first
    assert "[95% interval +0.43, +4.59]" in first
    assert "its confirmation, seeds 5-14: ELECTRA - random_init +1.62" in confirmation
    assert confirmation.endswith("(experiments/results/confirmation/transfer_summary.json)")
    assert "bias-corrected fine-tuning, seeds 15-24: ELECTRA - random_init +1.78" in bias_corrected
    assert "[95% interval -0.02, +3.59]" in bias_corrected
