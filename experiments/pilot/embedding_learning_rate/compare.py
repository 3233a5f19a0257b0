"""The sixth pilot round's comparisons: difference of median validation accuracy with a 95%
bootstrap interval (experiments/pilot/compare_runs.py). The paths are the pilot machine's work
dirs (run_finetuning.py model dirs under DATA_DIR/models/)."""

from experiments.pilot.compare_runs import compare

WIKI, MIX = "/work/pilot/v30/data", "/work/s5/mix/data"
PAIRS = [
    ("wiki mlm x0 vs wiki mlm x1", (WIKI, "s8_v30_mlm_emb0"), (WIKI, "s6_v30_mlm_r4")),
    ("wiki electra x0 vs wiki electra x1",
     (WIKI, "s8_v30_electra_emb0"), (WIKI, "s6_v30_electra_r4")),
    ("wiki mlm x4 vs random x4", (WIKI, "s8_v30_mlm_emb4"), (WIKI, "s8_v30_random_emb4", True)),
    ("wiki electra x4 vs random x4",
     (WIKI, "s8_v30_electra_emb4"), (WIKI, "s8_v30_random_emb4", True)),
    ("mix electra x4 vs random x4",
     (MIX, "s8_mix_electra_emb4"), (MIX, "s8_mix_random_emb4", True)),
]  # fmt: skip

if __name__ == "__main__":
    compare(PAIRS)
