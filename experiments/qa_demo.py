"""End-to-end SQuAD demo on the bundled Wikipedia sample: build a small SQuAD 2.0 set
(`scripts/make_demo_squad.py`), fine-tune a tiny encoder with the fine-tuning runner, print
EM/F1. Without `--init_checkpoint` the run is in debug mode: the encoder starts from random
weights (a pipeline check, not a quality figure) and, as the original's debug mode, the task
reads `train-debug.json` / `dev-debug.json` (copies of the generated files). Pass a pretrained
run's checkpoint for a real figure.

    python -m experiments.qa_demo --data_dir runs/qa_demo
"""

import json
import os
import shutil
import subprocess
import sys

from absl import app, flags

from electra_tf import data_layout
from electra_tf.errors import run_main
from electra_tf.finetune.config import FinetuningConfig
from electra_tf.finetune.runner import run_finetuning
from electra_tf.model_config import ModelConfig

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGS = flags.FLAGS
flags.DEFINE_string("data_dir", "runs/qa_demo", "Scratch DATA_DIR (data, model, results).")
flags.DEFINE_string("task", "squad", "squad (v2.0) or squadv1.")
flags.DEFINE_string("init_checkpoint", None, "A pretrained discriminator; None: random tiny one.")
flags.DEFINE_string("hparams", "{}", "Extra fine-tuning hparams (JSON).")

TINY = {
    "vocab_size": 30522,
    "embedding_size": 128,
    "hidden_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 512,
    "max_position_embeddings": 128,
}


def main() -> None:
    data_dir = FLAGS.data_dir
    task_dir = data_layout.finetuning_data_dir(data_dir, FLAGS.task)
    version = "v2.0" if FLAGS.task == "squad" else "v1.1"
    subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "scripts", "make_demo_squad.py"),
            f"--corpus={os.path.join(ROOT, 'data', 'corpus', 'enwiki_sample.txt')}",
            f"--output_dir={task_dir}",
            f"--version={version}",
        ],
        check=True,
    )
    model_dir = data_layout.model_dir(data_dir, "tiny")
    os.makedirs(model_dir, exist_ok=True)
    shutil.copy(os.path.join(ROOT, "data", "vocab", data_layout.VOCAB_FILE), model_dir)
    init = FLAGS.init_checkpoint
    extra = {}
    if init is None:
        ModelConfig.from_dict(TINY).to_json_file(os.path.join(model_dir, "config.json"))
        for split in ("train", "dev"):
            shutil.copy(
                os.path.join(task_dir, f"{split}.json"),
                os.path.join(task_dir, f"{split}-debug.json"),
            )
        extra = {"debug": True, "model_hparam_overrides": TINY, "embedding_size": 128}
    else:
        extra = {"init_checkpoint": init}
    hparams = {
        "task_names": [FLAGS.task],
        "max_seq_length": 128,
        "doc_stride": 64,
        "learning_rate": 1e-3,
        "num_train_epochs": 3.0,
        "seed": 0,
        "log_every_steps": 25,
    }
    hparams.update(extra)
    hparams.update(json.loads(FLAGS.hparams))
    config = FinetuningConfig("tiny", data_dir, **hparams)
    results = run_finetuning(config)
    print(json.dumps(results[FLAGS.task]["median"], indent=1))


if __name__ == "__main__":
    app.run(lambda argv: run_main(main))
