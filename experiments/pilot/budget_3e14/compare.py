"""The seventh pilot round's extra comparisons: the 3e14 checkpoints fine-tuned with every
pretrained layer loaded (`reinit_top_layers: 0`) against the random-init encoder and against the
recipe's embeddings-only fine-tuning (experiments/pilot/compare_runs.py). DATA is the pilot
machine's `efficiency.py --work_dir` data dir."""

from experiments.pilot.compare_runs import compare

DATA = "/work/s9/w3e14/data"
PAIRS = [
    ("mlm 3e14 all layers vs random init", (DATA, "s9_mlm_3e14_all"), (DATA, "ft_random_init", True)),
    ("electra 3e14 all layers vs random init",
     (DATA, "s9_electra_3e14_all"), (DATA, "ft_random_init", True)),
    ("mlm 3e14 all layers vs embeddings only", (DATA, "s9_mlm_3e14_all"), (DATA, "ft_mlm_1")),
    ("electra 3e14 all layers vs embeddings only",
     (DATA, "s9_electra_3e14_all"), (DATA, "ft_electra_1")),
]  # fmt: skip

if __name__ == "__main__":
    compare(PAIRS)
