"""The no-flag `run_finetuning.py` demo (`electra_tf.demo.finetuning`) replays the in-domain
transfer experiment's kept runs of seed 0 at 300 labels: the same 300 sentences and the same
hparams as those runs' records (`experiments/results/ppmi_init/`), of which `data/demo/` keeps
copies."""

import hashlib
import os

import pytest

from electra_tf.demo import movie_task
from electra_tf.io_utils import read_json

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(REPO, "experiments", "results", "ppmi_init")

# sha256 of the train.tsv files that transfer.py at 4329364 (before movie_task.py existed) wrote
# for the experiment's dev runs; every kept record of those cells trained on exactly these files
TRAIN_SHA256 = {
    ("300", 0): "342f6323dc4a8a27e983eed103d6edc87e403328994ec8d14c5a661aae2a47e1",
    ("1000", 3): "54db589b734920d09636c9756f6ffa168c87b68d3c0a79936531d4c68534fe69",
}
MOVIE = os.path.join(REPO, "data", "movie_sentiment")


@pytest.fixture(scope="module")
def demo():
    """electra_tf.demo.finetuning (no flags of its own, unlike run_finetuning.py)."""
    from electra_tf.demo import finetuning

    return finetuning


@pytest.mark.parametrize("cell", sorted(TRAIN_SHA256))
def test_label_subsets_are_the_experiments(cell, tmp_path):
    n, seed = cell
    task = movie_task.write_sst_task(str(tmp_path), MOVIE, "dev", n, seed)
    with open(os.path.join(task, "train.tsv"), "rb") as f:
        train = f.read()
    assert hashlib.sha256(train).hexdigest() == TRAIN_SHA256[cell]
    assert train.count(b"\n") == int(n) + 1  # the header and n sentences
    header, pool, validation, dev = movie_task.task_rows(MOVIE)
    assert (len(pool), len(validation), len(dev)) == (7066, 1000, 1250)
    rows = train.decode().splitlines()[1:]
    assert set(rows) <= set(pool) and not set(rows) & set(validation)
    with open(os.path.join(task, "dev.tsv"), encoding="utf-8") as f:
        assert f.read().splitlines()[1:] == dev


def test_label_subsets_nest_and_scale_epochs():
    pool = [f"row{i}" for i in range(50)]
    small, large = (movie_task.label_subset(pool, n, seed=2) for n in (5, 20))
    assert large[:5] == small and len(set(large)) == 20
    assert movie_task.label_subset(pool, 5, seed=3) != small
    assert sorted(movie_task.label_subset(pool, None, seed=2)) == sorted(pool)
    # 10 epochs at 1,000 labels: the same updates at 300 (33.3 epochs), at least 2 epochs
    assert movie_task.epochs_for("300", 7066, 10.0) == 10.0 * 1000.0 / 300
    assert movie_task.epochs_for("all", 7066, 10.0) == 2.0
    with pytest.raises(ValueError, match="7066"):
        movie_task.write_sst_task("unused", MOVIE, "dev", "8000", 0)


def test_demo_replays_the_kept_runs(demo):
    runs = demo.demo_runs({}, "runs/demo", "electra_small_demo")
    assert [name for _, name, _ in runs] == [demo.KEPT_MODEL_NAME] * 2 + ["electra_small_demo"]
    for (_, _, hparams), arm in zip(runs[:2], ("electra", "random_init")):
        record = read_json(
            os.path.join(
                RESULTS,
                "transfer_runs",
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
        # the experiment's pt_electra_1e14, moved to data/demo/ (its held-out metrics stay)
        assert os.path.samefile(paths["init_checkpoint"], os.path.join(REPO, "data", "demo",
                                                                       "electra_1e14"))  # fmt: skip
        assert record["pretrained"] in (None, "pt_electra_1e14")
        # the demo's copy of the record is the experiment's, less the per-sentence correctness
        copy = read_json(demo.EXPERIMENT)["kept_runs"][arm]
        assert copy == {k: record[k] for k in ("key", "pretrained", "hparams", "accuracy")}
        # the record's hparams, less the experiment's log interval (it logs nothing per step)
        expected = {k: v for k, v in record["hparams"].items() if k != "log_every_steps"}
        assert {"random_init": False, **hparams} == expected  # False: the config's default
    # overrides reach every run
    assert all(
        h["learning_rate"] == 5e-5
        for _, _, h in demo.demo_runs({"learning_rate": 5e-5}, "runs/demo", "electra_small_demo")
    )


def test_demo_ends_with_the_experiments_declared_test(demo):
    line = demo.experiment_line()
    # the declared test of the encoder the demo loads (per-seed differences +5.92 ... +9.04:
    # 82.08 / 10); the earlier encoders' tests are history (experiments/README.md)
    assert line == (
        "demo: the experiment at N = 300, ELECTRA from count vectors, its declared test, "
        "seeds 25-34: ELECTRA - random_init +8.21 points [95% interval +6.22, +10.34] "
        "(experiments/results/ppmi_init/transfer_summary.json)"
    )
    summary = read_json(os.path.join(RESULTS, "transfer_summary.json"))
    paired = summary["paired"]["electra_vs_random_init"]["300"]
    copy = read_json(demo.EXPERIMENT)["declared_test"]
    assert {k: copy[k] for k in paired} == paired


@pytest.mark.parametrize(
    "demo_file, experiment_file",
    [
        ("pretrain_small_budget.json", "pretrain_small_budget.json"),
        ("finetune_movie.json", "finetune_movie.json"),
        ("finetune_movie_random_init.json", "finetune_movie_random_init.json"),
    ],
)
def test_the_demos_recipes_are_the_experiments(demo_file, experiment_file):
    demo_recipe = read_json(os.path.join(REPO, "data", "demo", demo_file))
    assert demo_recipe == read_json(os.path.join(REPO, "experiments", "recipes", experiment_file))
