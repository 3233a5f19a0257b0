"""Records tests/data/pins/finetune_<commit>.json, the behaviour pin of
tests/test_finetune_scale.py: a fixed deterministic fine-tuning run (the tiny "pretrained" model
of test_finetune_run.py, sst + sts + chunk + squadv1 trained together, 66 steps), on the
checkout it runs in. It uses only what test_finetune_run.py had before the pin (so it runs on
4329364, where the pin was recorded):

    python tests/data/pins/record_finetune_pin.py OUT.json
"""

import contextlib
import glob
import io
import json
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))  # tests/

import keras  # noqa: E402
from test_finetune_run import DATA, ROOT, dummy_batch, save_name_based, tiny_config  # noqa: E402

from electra_tf.finetune.config import FinetuningConfig  # noqa: E402
from electra_tf.finetune.runner import run_finetuning  # noqa: E402
from electra_tf.modeling.encoder import TransformerEncoder  # noqa: E402

# the run (tests/test_finetune_scale.py reads it from here)
HPARAMS = dict(  # noqa: C408
    task_names=["sst", "sts", "chunk", "squadv1"],
    train_batch_size=4,
    eval_batch_size=4,
    num_train_epochs=2.0,
    max_seq_length=32,
    jit_compile=False,
    log_every_steps=1,
    seed=3,
    deterministic=True,
)


def record(out_path: str) -> None:
    d = tempfile.mkdtemp()
    model_dir = os.path.join(d, "models", "tiny")
    os.makedirs(model_dir)
    cfg = tiny_config()
    with open(os.path.join(model_dir, "config.json"), "w") as f:
        json.dump({"model_size": "small", "model_config": cfg.to_dict()}, f)
    keras.utils.set_random_seed(0)
    enc = TransformerEncoder(cfg)
    b = dummy_batch()
    enc(b["input_ids"], b["input_mask"], b["segment_ids"])
    save_name_based(enc.weights, os.path.join(model_dir, "model.ckpt-5"))
    shutil.copy(os.path.join(ROOT, "data", "vocab", "vocab.txt"), os.path.join(d, "vocab.txt"))
    shutil.copytree(DATA, os.path.join(d, "finetuning_data"))
    os.makedirs(os.path.join(d, "finetuning_data", "squadv1"))
    for split in ("train", "dev"):
        shutil.copy(os.path.join(ROOT, "tests", "data", "qa", "squad_v1_train.json"),
                    os.path.join(d, "finetuning_data", "squadv1", f"{split}.json"))  # fmt: skip
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        out = run_finetuning(FinetuningConfig("tiny", d, **HPARAMS))
    files = {}
    for path in sorted(glob.glob(os.path.join(model_dir, "results", "*_dev_predictions*"))):
        with open(path, encoding="utf-8") as f:
            files[os.path.basename(path)] = f.read()
    dev = {t: out[t]["trials"][0]["dev"] for t in out}
    losses = [float(v) for v in re.findall(r"^step \d+/\d+ +loss (\S+)", log.getvalue(), re.M)]
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(
            {"step_losses": losses, "dev": dev, "predictions": files}, f, indent=1, sort_keys=True
        )
    print(f"{len(losses)} steps; dev {dev}")


if __name__ == "__main__":
    record(sys.argv[1])
