"""What the transfer experiment keeps in the repository, so that it resumes on another machine:
each pretrained discriminator as a Hugging Face directory (float32 safetensors, ~12 MB for the
small recipe) with its held-out metrics, and each finished fine-tuning as one small JSON record
(its hparams, accuracy and right/wrong string over the scored sentences).

A run directory of this machine's work dir is preferred where it exists; the kept copy is read
where it does not (a fresh machine) and written where it is missing.
"""

import os
import shutil
from typing import Any, Callable, Dict, Optional

from electra_tf.errors import UserError
from electra_tf.io_utils import read_json, write_json

HELDOUT_FILE = "heldout_eval.json"  # a pretraining run's held-out metrics
ENCODER_DIR = "discriminator_hf"  # inside a pretraining run's directory


def heldout_metrics(model_dir: str, kept_dir: str) -> Optional[Dict[str, Any]]:
    """A pretraining run's held-out metrics: its run directory's, else the kept copy's."""
    for d in (model_dir, kept_dir):
        if os.path.exists(os.path.join(d, HELDOUT_FILE)):
            return read_json(os.path.join(d, HELDOUT_FILE))
    return None


def encoder_dir(
    model_dir: str, checkpoint: str, kept_dir: str, export: Callable[[str, str], None]
) -> str:
    """The directory fine-tunings start from: MODEL_DIR/discriminator_hf, made by
    `export(checkpoint, out_dir)` from the final checkpoint or copied from `kept_dir`; then
    kept in `kept_dir` (with the held-out metrics) if it is not there yet."""
    local = os.path.join(model_dir, ENCODER_DIR)
    if not os.path.exists(os.path.join(local, "config.json")):
        tmp = local + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        if os.path.exists(checkpoint + ".index"):
            export(checkpoint, tmp)
        elif os.path.exists(os.path.join(kept_dir, "config.json")):
            shutil.copytree(kept_dir, tmp, ignore=shutil.ignore_patterns(HELDOUT_FILE))
        else:
            raise UserError(
                f"no checkpoint {checkpoint} and no encoder kept in {kept_dir}: pretrain first, "
                "or check the kept encoders out of git history (experiments/README.md, "
                "'Model weights')"
            )
        os.replace(tmp, local)
    if not os.path.exists(os.path.join(kept_dir, "config.json")):
        tmp = kept_dir.rstrip("/") + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(local, tmp)
        os.makedirs(os.path.dirname(os.path.abspath(kept_dir)), exist_ok=True)
        os.replace(tmp, kept_dir)
    metrics = os.path.join(model_dir, HELDOUT_FILE)
    if os.path.exists(metrics) and not os.path.exists(os.path.join(kept_dir, HELDOUT_FILE)):
        shutil.copyfile(metrics, os.path.join(kept_dir, HELDOUT_FILE))
    return local


def record_path(runs_dir: str, key: str) -> str:
    return os.path.join(runs_dir, key.replace("/", "__") + ".json")


def kept_record(runs_dir: str, key: str, pretrained: str, hparams: Dict[str, Any]):
    """(accuracy, correctness string) of a finished fine-tuning whose record matches `hparams`
    (without the machine's paths) and the pretrained run; None if there is none."""
    path = record_path(runs_dir, key)
    if not os.path.exists(path):
        return None
    record = read_json(path)
    if record.get("hparams") != hparams or record.get("pretrained") != pretrained:
        return None
    return record["accuracy"], record["correct"]


def keep_record(runs_dir: str, key: str, pretrained: str, hparams: Dict[str, Any],
                correct: str, seconds: float, score: Optional[float] = None) -> float:  # fmt: skip
    """Writes a finished fine-tuning's record; returns its score: `score` where given (another
    metric over `correct`, e.g. the Chinese tagging task's span F1 from per-sentence counts),
    else the accuracy (%) of the "0"/"1" string `correct`."""
    accuracy = 100.0 * correct.count("1") / len(correct) if score is None else score
    write_json(record_path(runs_dir, key), {"key": key, "pretrained": pretrained,
                                            "hparams": hparams, "accuracy": accuracy,
                                            "seconds": round(seconds, 1), "correct": correct})  # fmt: skip
    return accuracy
