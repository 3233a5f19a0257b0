"""The README's demo, what `run_pretraining.py` and `run_finetuning.py` run with no flags: a small
ELECTRA pretrained for 600 steps on the bundled Wikipedia text (`pretraining`), then three encoders
fine-tuned on 300 labelled movie sentences (`finetuning`): the in-domain experiment's kept
ELECTRA (`data/demo/electra_1e14`), the same shape from random weights, and the demo's own model.

The package's top unit: it may import any other unit, and none imports it. Its files (the recipes,
the encoder, the experiment's records it replays) are under `data/demo/` of the repository.
"""

import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO_FILES = os.path.join(REPO, "data", "demo")
DATA_DIR = os.path.join("runs", "demo")  # relative: where the commands are run
MODEL_NAME = "electra_small_demo"
